"""Launching a SIMT kernel: checks the launch against the GPU's limits, splits the grid into chunks of
consecutive CTAs, runs each chunk in lockstep (``runtime.Chunk``) and assembles the ``KernelTrace``.

Chunks execute one after another (a legal schedule: CTAs are independent, and a later chunk sees the global
memory writes of earlier ones).  A kernel that uses a grid group (``cuda.cg.this_grid()``) is launched
cooperatively, as numba does: its grid must be resident on the chip at once (the occupancy calculator,
``gpusim.occupancy.max_coresident_ctas``; else ``CooperativeLaunchTooLarge``, CUDA's
``cudaErrorCooperativeLaunchTooLarge``) and it runs as one chunk, so that every ``grid.sync()`` is reached by all
threads of the grid before any goes on.  A chunk holds up to ``CHUNK_THREADS`` padded threads, fewer when its shared
and local memory or (when recording) its table of active lanes would grow too big.

The register estimate (``KernelTrace.regs_per_thread``) stands in for ptxas' count: ``costs.REGISTERS_BASE`` +
a weighted sum (``costs.REGISTERS_WEIGHTS``) of the peak over the kernel's statements of its live runtime
variables' 32-bit words (a 64-bit value counts 2; array and scalar parameters and compile-time constants 0: they
live in the constant bank or fold into immediates), the state of numba's range iterators in the deepest loop
nest, the load results an unrolled loop holds in flight (``unroll.unroll_pressure``), libdevice scratch, local
arrays only ever indexed with constants (kept in registers) and the peak of the inlined device functions;
clamped to [16, 255] (Nsight reports at least 16).  Its stated error, against ``launch__registers_per_thread``
of the H100 records: within 4 registers for every in-sample SIMT kernel, 1.7 on average (``costs.REGISTERS_ERROR``;
tests/test_cuda_calibration.py holds it there).  ``meta["registers"]`` records each term.
"""
from __future__ import annotations

import enum
import os

import numpy as np

from .. import trace as trace_mod
from .._host import gc_paused
from ..config import GPUConfig, load_gpu
from ..errors import CompileError, GpusimError, KernelError, LaunchError
from ..trace import KernelTrace
from . import costs as C_
from . import realcc
from .realcc import varargs_packed
from . import runtime as R
from . import types as nbtypes
from .compiler import _DT_CACHE, NeedsArgDtypes, compile_kernel, unwrap
from ..occupancy import max_coresident_ctas
from ..errors import CooperativeLaunchTooLarge
from .memory import ADDRESS_SPACE, as_device_storage
from .random import xoroshiro128p_dtype as _RNG_DTYPE
from .records import RecordRef, record_dtype_ok

#: padded threads per chunk (tunable): bigger chunks mean fewer, larger numpy operations
CHUNK_THREADS = 1 << 20

#: threads of the first chunk of a recorded launch (it measures the ops per CTA)
PROBE_THREADS = 1 << 18

#: most bytes of one table's active-lane matrix (``OpTable.active``: ops x warps) when recording
ACTIVE_BYTES_PER_TABLE = 64 << 20

#: GPU used for limits (threads per block, shared memory, banks) by plain ``kernel[grid, block](...)`` launches
DEFAULT_GPU = "h100"


def _dim3(x, what) -> tuple[int, int, int]:
    if isinstance(x, (int, np.integer)):
        t = (int(x),)
    elif isinstance(x, (tuple, list)) and 1 <= len(x) <= 3 and all(isinstance(v, (int, np.integer)) for v in x):
        t = tuple(int(v) for v in x)
    else:
        raise LaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, not {x!r}")
    return t + (1,) * (3 - len(t))


def _check_launch(name, grid, block, dyn_shared, ck, cfg: GPUConfig):
    where = f"launch of kernel {name!r}: "
    if any(g <= 0 for g in grid):
        raise LaunchError(f"{where}grid {grid} has a zero or negative dimension (a zero-size grid launches nothing; "
                          "CUDA reports 'invalid configuration argument')")
    if any(b <= 0 for b in block):
        raise LaunchError(f"{where}block {block} has a zero or negative dimension")
    tpc = block[0] * block[1] * block[2]
    if tpc > cfg.sm.max_threads_per_cta:
        raise LaunchError(f"{where}{tpc} threads per block {block} exceeds the {cfg.sm.max_threads_per_cta} "
                          f"allowed on {cfg.name}")
    if block[0] > 1024 or block[1] > 1024 or block[2] > 64:
        raise LaunchError(f"{where}block {block} exceeds the per-dimension limits (1024, 1024, 64)")
    if grid[0] > 2 ** 31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise LaunchError(f"{where}grid {grid} exceeds the per-dimension limits (2^31-1, 65535, 65535)")
    if dyn_shared < 0:
        raise LaunchError(f"{where}dynamic shared memory must be >= 0 bytes, not {dyn_shared}")
    total = ck.shared_static_bytes + dyn_shared
    if total > cfg.sm.max_shared_per_cta_bytes:
        raise LaunchError(f"{where}{total} bytes of shared memory per block ({ck.shared_static_bytes} static + "
                          f"{dyn_shared} dynamic) exceeds the {cfg.sm.max_shared_per_cta_bytes} bytes per block of "
                          f"{cfg.name}")


def _wrap_args(ck, args, argtypes=()):
    params = ck.params
    args = varargs_packed(ck, args)
    if len(args) != len(params):
        raise LaunchError(f"kernel {ck.name!r} takes {len(params)} arguments ({', '.join(params)}), "
                          f"{len(args)} given")
    out = []
    for k, (name, a) in enumerate(zip(params, args)):
        t = argtypes[k] if k < len(argtypes) else None
        if isinstance(t, nbtypes.CPointer):
            out.append(_wrap_pointer(ck, name, a, t))
        elif isinstance(t, nbtypes.Scalar) and isinstance(a, (int, float, np.integer, np.floating, np.bool_)) \
                and t.dtype.kind in "iufb":
            # a scalar of an eager signature (``cuda.jit("void(int32[:], uint32)")``) takes the declared type, as
            # numba's dispatcher converts it (C conversion: an int wraps to the width)
            with np.errstate(all="ignore"):
                out.append(_wrap_arg(ck, name, np.array(a).astype(t.dtype)[()]))
        else:
            out.append(_wrap_arg(ck, name, a))
    return out


def _wrap_pointer(ck, name, a, t):
    """A ``CPointer`` argument: the device address of (a place in) a gpusim device array, reached as a 1-d array
    of the pointer's type from there to the end of the allocation."""
    if not isinstance(a, (int, np.integer)):
        raise LaunchError(f"argument {name!r} of kernel {ck.name!r} is a {t}: pass a device address (an int), not "
                          f"{type(a).__name__}")
    hit = ADDRESS_SPACE.resolve(int(a))
    if hit is None:
        raise LaunchError(f"argument {name!r} of kernel {ck.name!r} ({t}): {int(a):#x} is not an address in gpusim's "
                          "simulated device memory; pass x.__cuda_array_interface__['data'][0] of an array made by "
                          "cuda.to_device / cuda.device_array (a host pointer, such as a numpy array's "
                          "__array_interface__ address, does not point into device memory)")
    root, off = hit
    dt = np.dtype(t.dtype.dtype) if isinstance(t.dtype, nbtypes.Scalar) else np.dtype(np.uint8)
    raw = root.reshape(-1).view(np.uint8) if root.flags.c_contiguous else None
    if raw is None or off % dt.itemsize:
        raise LaunchError(f"argument {name!r} of kernel {ck.name!r} ({t}): address {int(a):#x} is misaligned for "
                          f"{dt} or lies in a non-contiguous allocation")
    n = (raw.size - off) // dt.itemsize
    view = raw[off:off + n * dt.itemsize].view(dt)
    return R.GlobalArray(name, view, int(a))


def _wrap_arg(ck, name, a):
    if isinstance(a, enum.Enum):                  # numba passes an enum member as its value (IntEnum: int64)
        a = np.int64(int(a)) if isinstance(a, int) else a.value
    if isinstance(a, (bool, np.bool_)):
        return R.V(np.bool_(a), (), False)
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        return R.V(np.int64(a) if isinstance(a, int) else a, (), False)
    if isinstance(a, (float, np.floating)):
        return R.V(np.float64(a) if isinstance(a, float) else a, (), False)
    if isinstance(a, (complex, np.complexfloating)):
        return R.V(np.complex128(a) if isinstance(a, complex) else a, (), False)
    if isinstance(a, tuple):
        items = tuple(_wrap_arg(ck, f"{name}[{i}]", x) for i, x in enumerate(a))
        if isinstance(getattr(type(a), "_fields", None), tuple):
            return tuple.__new__(type(a), items)     # a namedtuple: its fields by name (numba's NamedTuple)
        return items
    if isinstance(a, np.void) and a.dtype.names is not None:
        # a record (``arr[0]`` of a structured array): numba-cuda copies it to the device and back, so the kernel
        # reads and writes its bytes; here a 1-element record array over them
        if not record_dtype_ok(a.dtype):
            raise LaunchError(f"argument {name!r} of kernel {ck.name!r}: record dtype {a.dtype} has fields numba "
                              "cannot type")
        st = np.asarray(a).reshape(1)
        return RecordRef(R.GlobalArray(name, st, ADDRESS_SPACE.address_of(st)), (R.V(np.int64(0), (), True),))
    st = as_device_storage(a)
    if st is None:
        raise LaunchError(f"argument {name!r} of kernel {ck.name!r}: unsupported type {type(a).__name__}")
    if st.dtype.kind not in "biufc" and st.dtype != _RNG_DTYPE and not (st.dtype.names and record_dtype_ok(st.dtype)):
        raise LaunchError(f"argument {name!r} of kernel {ck.name!r}: dtype {st.dtype} is not supported")
    return R.GlobalArray(name, st, ADDRESS_SPACE.address_of(st))


def _scalar_param_bytes(args) -> int:
    """Bytes of the scalar (non-array) kernel arguments."""
    n = 0
    for a in args:
        if isinstance(a, R.V):
            n += a.v.dtype.itemsize
        elif isinstance(a, tuple):
            n += _scalar_param_bytes(a)
    return n


def _registers(ck, L, args) -> tuple[int, dict]:
    """The register estimate and its terms (see the module docstring and ``costs.REGISTERS_*``)."""
    widths = {}
    for name, a in zip(ck.params, args):
        if isinstance(a, R.GlobalArray):
            widths[name] = 0                 # data pointer and shape live in the constant bank
        else:
            widths[name] = 0                 # scalar parameters too: instructions read c[0x0][...] operands
    for name, isz in L.var_dtypes.items():
        if name in widths:
            continue
        # a variable only ever assigned compile-time constants folds into immediates
        widths[name] = (2 if isz == 8 else 1) if name in L.var_runtime else 0

    def peak(live):
        n = live["n_pos"] + 2
        acc = np.zeros(n + 1, np.int64)
        for name, (lo, hi) in live["ranges"].items():
            w = widths.get(name, 0)          # globals (modules, constants) and dead loop variables: none
            acc[lo] += w
            acc[hi + 1] -= w
        return int(np.cumsum(acc).max()) if n else 0

    fns = ck.functions
    kernel_fn = fns[-1]        # the kernel is compiled last (after the device functions it calls)
    main = peak(kernel_fn.live)
    dev = max((peak(f.live) for f in fns if f.kind == "device"), default=0)
    temps = max(f.live["temps"] for f in fns)
    local_regs = 0
    for s in ck.local_slots:
        if s.index not in L.local_runtime_slots:
            local_regs += int(np.prod(s.shape)) * max(1, s.dtype.itemsize // 4)
    terms = {"live_variables": main, "device_functions": dev, "expression_temporaries": temps,
             "local_arrays_in_registers": local_regs, "range_iterators": L.iter_words,
             "unrolled_loads_in_flight": L.unroll_words, "math_scratch": L.math_regs}
    w = C_.REGISTERS_WEIGHTS
    est = C_.REGISTERS_BASE + sum(w.get(k, 1.0) * v for k, v in terms.items())
    est = int(min(max(round(est), 16), 255))
    info = {"estimate": est, "base": C_.REGISTERS_BASE, **terms,
            "method": "base + weighted terms (costs.REGISTERS_WEIGHTS): peak live-variable registers over the "
                      "kernel's statements (64-bit values 2, array parameters and compile-time constants 0), "
                      "deepest expression (Sethi-Ullman), numba's range iterators (count + value), load results "
                      "in flight in runtime-unrolled loops, libdevice scratch, constant-indexed local arrays, "
                      "inlined device functions' peak; clamped to [16, 255]",
            "error": C_.REGISTERS_ERROR}
    return est, info


@gc_paused()
def run(kernel, grid, block, args, *, shared_bytes=0, gpu=None, record=True, max_registers=None):
    """Execute a launch functionally; return its KernelTrace when ``record`` (else None)."""
    cfg = load_gpu(gpu if gpu is not None else DEFAULT_GPU)
    ck = compile_kernel(kernel, list(args))
    g3 = _dim3(grid, "grid")
    b3 = _dim3(block, "block")
    dyn = int(shared_bytes or 0)
    _check_launch(ck.name, g3, b3, dyn, ck, cfg)
    sigs = getattr(kernel, "signatures", None)
    wrapped = _wrap_args(ck, list(args), sigs[0].args if sigs and len(sigs) == 1 else ())
    L = R.Launch(ck, g3, b3, dyn, cfg, record, CHUNK_THREADS)
    L.param_words = -(-_scalar_param_bytes(wrapped) // 8)
    tables = []
    flops = 0
    fn = ck.fn
    # recording: a first (probe) chunk measures the ops a chunk issues; later chunks are sized so that each
    # table's active-lane matrix (ops x warps bytes) stays within ACTIVE_BYTES_PER_TABLE
    C = min(L.C, max(1, PROBE_THREADS // L.P)) if record else L.C
    snapshot = None
    if ck.cooperative:
        # a grid sync: the whole grid must be resident (checked as the driver does) and runs as one chunk, so
        # that every thread reaches each grid.sync() before any goes on
        snapshot = _check_cooperative(ck, g3, b3, dyn, cfg, wrapped, max_registers)
        C = L.C = L.n_ctas
    debug = _debug_of(kernel)
    host = [(a, a.copy()) for a in args if type(a) is np.ndarray] if debug else ()
    first = 0
    with np.errstate(all="ignore"):
        while first < L.n_ctas:
            c = min(C, L.n_ctas - first)
            ch = R.Chunk(L, first, c)
            fn(ch, *wrapped)
            first += c
            if record:
                tables.append(ch.table())
                flops += ch.flops
                per_cta = max(1, len(ch.ops)) * L.wpc
                C = max(1, min(L.C, ACTIVE_BYTES_PER_TABLE // per_cta))
    if L.raised is not None and debug:
        for a, old in host:
            np.copyto(a, old)       # numba copies a host array back only after a launch that did not raise
        raise _host_exception(ck, L.raised)
    if not record and not ck.cooperative:
        return None
    regs, info = _registers(ck, L, wrapped)
    if max_registers is not None:
        if not 1 <= int(max_registers) <= cfg.sm.max_registers_per_thread:
            raise LaunchError(f"max_registers={max_registers} is outside 1..{cfg.sm.max_registers_per_thread}")
    cc = realcc.outcome(kernel, ck, list(args), cfg, max_registers)
    shared_static = ck.shared_static_bytes
    if cc.result is not None:
        # the real compiler's allocation replaces the estimate (which stays in meta for comparison)
        # at least 16 per thread are allocated (Nsight reports 16 for kernels ptxas gives 12 or 15, as for the
        # estimate's floor; records/ncu_*.json)
        info["compiled"] = cc.result.registers
        regs = max(16, cc.result.registers)
        shared_static = cc.result.shared_bytes
    elif max_registers is not None:
        info["override"] = int(max_registers)
        regs = int(max_registers)
    ck.last_registers = regs
    if snapshot is not None:
        # the register estimate is known only now: a grid that does not fit with it is refused after all, and
        # the launch leaves memory as it found it (as a refused launch does)
        limit = max_coresident_ctas(cfg, L.tpc, regs, shared_static + dyn, ck.name)
        if L.n_ctas > limit:
            for st, old in snapshot:
                np.copyto(st, old)
            raise _too_large(ck, g3, b3, dyn, cfg, regs, limit)
    if not record:
        return None
    local_bytes = 0
    for s in ck.local_slots:
        if s.index in L.local_runtime_slots:
            local_bytes += int(np.prod(s.shape)) * s.dtype.itemsize
    if cc.result is not None:
        local_bytes = cc.result.stack_bytes
    tr = KernelTrace(
        name=ck.name, frontend="cuda", grid=g3, block=b3, regs_per_thread=regs,
        shared_bytes_per_cta=shared_static + dyn, tables=tables, source_file=ck.file,
        source_lines=dict(ck.source_lines), local_bytes_per_thread=local_bytes, flops=float(flops),
        meta={"registers": info, "chunk_ctas": L.C, "shared_static_bytes": shared_static,
              "shared_dynamic_bytes": dyn, "costs": "gpusim/cuda/costs.py (calibrated against the H100 records)",
              "compiler": cc.meta()})
    if cc.result is not None and shared_static != ck.shared_static_bytes:
        tr.meta["shared_static_bytes_estimate"] = ck.shared_static_bytes
    if ck.cooperative:
        tr.meta["cooperative"] = True
    realcc.notes(tr, cc)
    return tr


def _kind_of_type(t):
    """A signature's argument type as ``retkinds`` reads a value (None: not read)."""
    if isinstance(t, nbtypes.Scalar):
        return ("num", t.dtype)
    if isinstance(t, nbtypes.Array):
        return ("array", t.ndim, t.dtype.dtype if isinstance(t.dtype, nbtypes.Scalar) else None)
    return None


def _debug_of(kernel) -> bool:
    """Was the kernel compiled with debug=True (``cuda.jit(debug=True, opt=False)``; numba's default:
    ``NUMBA_CUDA_DEBUGINFO``)?  Only then does numba-cuda report a thread's exception on the host."""
    opts = getattr(kernel, "options", None)
    if not isinstance(opts, dict):
        opts = getattr(kernel, "targetoptions", None)       # a numba CUDADispatcher
    d = opts.get("debug") if isinstance(opts, dict) else None
    if d is None:
        d = os.environ.get("NUMBA_CUDA_DEBUGINFO", "0").strip() not in ("", "0")
    return bool(d)


def _host_exception(ck, raised) -> BaseException:
    """The exception numba-cuda's dispatcher raises after a debug kernel in which a thread raised: the thread's
    class, its message prefixed with the kernel, file, line and the thread's ``tid=[z, y, x] ctaid=[z, y, x]``.
    ``gpusim_kernel_raise`` holds the same as a ``KernelError`` (file:line, block, thread) for ``gpusim run``."""
    cls, args, line, block, thread = raised
    prefix = (f"In function {ck.name!r}, file {os.path.abspath(ck.file)}, line {line}, "
              f"tid={list(thread[::-1])} ctaid={list(block[::-1])}")
    exc = cls(f"{prefix}: {args[0]}", *args[1:]) if args else cls(prefix)
    what = f"{cls.__name__}: {args[0]}" if args else cls.__name__
    exc.gpusim_kernel_raise = KernelError(f"{what} (raised by the kernel; reported as numba-cuda does with "
                                          "debug=True)", file=ck.file, line=line, kernel=ck.name, block=block,
                                          thread=thread)
    return exc


def _too_large(ck, g3, b3, dyn, cfg, regs, limit) -> CooperativeLaunchTooLarge:
    n = g3[0] * g3[1] * g3[2]
    tpc = b3[0] * b3[1] * b3[2]
    per_sm = limit // cfg.chip.sm_count
    return CooperativeLaunchTooLarge(
        f"launch of kernel {ck.name!r}: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (cudaErrorCooperativeLaunchTooLarge, "
        f"[720] in cuLaunchCooperativeKernel): the kernel uses a grid group (cuda.cg.this_grid()), so numba "
        f"launches it cooperatively and all its blocks must be resident at once; grid {g3} has {n} blocks, but "
        f"only {limit} blocks of {tpc} threads ({regs} registers per thread, {ck.shared_static_bytes + dyn} bytes "
        f"of shared memory) fit on {cfg.name} ({per_sm} per SM x {cfg.chip.sm_count} SMs).  Launch at most "
        f"kernel.overloads[sig].max_cooperative_grid_blocks(blockdim) = {limit} blocks and cover the data with a "
        "grid-stride loop (for i in range(cuda.grid(1), n, cuda.gridsize(1)))")


def _check_cooperative(ck, g3, b3, dyn, cfg, wrapped, max_registers):
    """Refuse a cooperative grid that cannot be resident at once.  Registers are estimated after execution, so
    this checks with the fewest registers the estimate gives (or the override) and returns a snapshot of the
    writable arrays when the estimate could still refuse the grid (``run`` checks again), else None."""
    n = g3[0] * g3[1] * g3[2]
    tpc = b3[0] * b3[1] * b3[2]
    shared = ck.shared_static_bytes + dyn
    lo = int(max_registers) if max_registers is not None else 16
    limit = max_coresident_ctas(cfg, tpc, lo, shared, ck.name)
    if n > limit:
        raise _too_large(ck, g3, b3, dyn, cfg, lo, limit)
    if max_registers is not None or n <= max_coresident_ctas(cfg, tpc, cfg.sm.max_registers_per_thread, shared,
                                                              ck.name):
        return None
    seen = {}
    for a in _flat_args(wrapped):
        if isinstance(a, R.GlobalArray):
            seen.setdefault(id(a.ary), a.ary)
    return [(st, st.copy()) for st in seen.values()]


def _flat_args(args):
    for a in args:
        if isinstance(a, tuple):
            yield from _flat_args(a)
        else:
            yield a


def trace_launch(kernel, grid, block, args, *, shared_bytes: int = 0, gpu: "GPUConfig | str" = "h100",
                 max_registers: int | None = None, **ignored) -> KernelTrace:
    """Execute ``kernel[grid, block](*args)`` on the simulated GPU and return its trace.

    ``kernel`` is a gpusim.cuda kernel, a numba ``CUDADispatcher`` / ``FakeCUDAKernel`` or a plain Python
    function.  Arrays in ``args`` are written in place, as device memory would be.
    """
    for k in ignored:
        if k not in ("stream",):
            raise GpusimError(f"trace_launch: unknown option {k!r}")
    return run(kernel, grid, block, args, shared_bytes=shared_bytes, gpu=gpu, record=True,
               max_registers=max_registers)


def _observer_gpu():
    """The GPU of a listening ``gpusim.session`` (an observer bound to an object with a ``gpu`` config)."""
    for f in trace_mod.launch_observers:
        g = getattr(getattr(f, "__self__", None), "gpu", None)
        if isinstance(g, GPUConfig):
            return g
    return None


def launch(kernel, grid, block, args, shared_bytes=0):
    """A plain ``kernel[grid, block](...)``: execute; record and publish the trace only if someone listens."""
    if isinstance(kernel, Kernel):
        kernel._note_overload(args)
    record = bool(trace_mod.launch_observers)
    tr = run(kernel, grid, block, args, shared_bytes=shared_bytes, record=record,
             gpu=_observer_gpu() if record else None)
    if record:
        trace_mod.publish_launch(tr)


class Kernel:
    """A ``@cuda.jit`` function: launch with ``kernel[grid, block](*args)`` (or call inlined from a kernel
    when ``device=True``)."""

    _gpusim_frontend = "cuda"

    def __init__(self, py_func, device=False, signatures=(), **options):
        self.py_func = py_func
        self.device = bool(device)
        self.options = options
        self.__name__ = py_func.__name__
        self.__qualname__ = getattr(py_func, "__qualname__", py_func.__name__)
        self.__doc__ = py_func.__doc__
        self.__module__ = py_func.__module__
        self.__wrapped__ = py_func
        #: numba's ``overloads``: argument types -> compiled kernel, one per signature given to ``cuda.jit``
        #: (compiled eagerly, as numba does) or per distinct argument types launched with
        self.overloads: dict = {}
        self.signatures = [nbtypes.parse_signature(sg) for sg in signatures]
        for sg in self.signatures:
            self.overloads[sg.args] = _Overload(self, sg)
        if self.signatures and not self.device:
            try:
                ck = compile_kernel(self)    # an eager signature compiles now: source errors surface here
            except NeedsArgDtypes:           # compiled per argument dtypes: at the launch
                ck = None
            check = ck.functions[0].check if ck is not None else None
            for sg in self.signatures if check is not None else ():
                # numba types the kernel for the signature now: its calls read with the declared types
                check._verify_calls_kinds(tuple(_kind_of_type(t) for t in sg.args),
                                          lambda msg, ln: CompileError(msg, file=ck.file, line=ln, kernel=ck.name), 0)

    @property
    def specialized(self) -> bool:
        return len(self.signatures) == 1

    def _note_overload(self, args) -> None:
        if self.signatures:
            return
        try:
            key = tuple(nbtypes.typeof(a) for a in args)
        except TypeError:
            return
        if key not in self.overloads:
            self.overloads[key] = _Overload(self, nbtypes.Signature(nbtypes.void, key))

    def specialize(self, *args) -> "Kernel":
        """numba's ``specialize``: the kernel compiled for the types of ``args`` alone (``specialized`` is True)."""
        sig = nbtypes.Signature(nbtypes.void, tuple(nbtypes.typeof(a) for a in args))
        k = Kernel(self.py_func, device=self.device, **self.options)
        k.signatures = [sig]
        k.overloads = {sig.args: _Overload(k, sig)}
        return k

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize=0) -> int:
        """The most blocks of ``blockdim`` threads a cooperative launch of this kernel may have (see
        ``_Overload.max_cooperative_grid_blocks``)."""
        return _Overload(self, None).max_cooperative_grid_blocks(blockdim, dynsmemsize)

    def _no_binary(self, what):
        raise GpusimError(f"kernel {self.__name__!r}: gpusim simulates the kernel's Python source and generates no "
                          f"{what}; the per-line instruction counts of the simulated SASS are in the trace "
                          "(gpusim.cuda.trace_launch(kernel, grid, block, args) and its report)")

    def inspect_asm(self, signature=None):
        self._no_binary("PTX")

    def inspect_sass(self, signature=None):
        self._no_binary("SASS")

    def inspect_llvm(self, signature=None):
        self._no_binary("LLVM IR")

    def __getitem__(self, config):
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchError("launch configuration must be [grid, block] or [grid, block, stream, shared_bytes]")
        if self.device:
            raise _DeviceAsKernel(f"{self.__name__!r} is a device function (cuda.jit(device=True)): Cannot compile a "
                                  "device function as a kernel (launch a @cuda.jit kernel that calls it)")
        grid, block = config[0], config[1]
        shared = config[3] if len(config) == 4 else 0
        return _Launcher(self, grid, block, shared)

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        """numba's ``kernel.forall(n)(*args)``: enough blocks to cover ``n`` threads.  numba asks the driver for
        the block size of highest occupancy; this uses ``FORALL_BLOCK`` threads unless ``tpb`` is given."""
        if int(ntasks) < 0:
            raise ValueError(f"Can't create ForAll with negative task count: {ntasks}")
        if int(ntasks) == 0:                 # numba launches nothing
            return lambda *args: None
        tpb = tpb or FORALL_BLOCK
        return _Launcher(self, -(-int(ntasks) // tpb), tpb, sharedmem)

    def __call__(self, *args, **kw):
        if self.device:
            return self.py_func(*args, **kw)
        raise LaunchError(f"kernel {self.__name__!r} needs a launch configuration: {self.__name__}[blocks, threads]"
                          "(...)")

    def __repr__(self):
        return f"<gpusim.cuda kernel {self.__name__}{' (device)' if self.device else ''}>"


#: block size of ``kernel.forall(n)`` when none is given
FORALL_BLOCK = 128


class _Overload:
    """One entry of ``kernel.overloads``: the kernel compiled for one signature (numba's ``_Kernel``)."""

    def __init__(self, kernel: Kernel, signature):
        self.kernel = kernel
        self.signature = signature
        self.argument_types = signature.args if signature is not None else ()
        self.py_func = kernel.py_func
        self.name = kernel.__name__

    @property
    def cooperative(self) -> bool:
        """numba's ``_Kernel.cooperative``: the kernel synchronizes its grid (``cuda.cg.this_grid()``), so it is
        launched cooperatively."""
        try:
            return compile_kernel(self.kernel).cooperative
        except NeedsArgDtypes:             # compiled per argument dtypes: cooperative if any compilation is
            return any(ck.cooperative for ck in _DT_CACHE.get(self.py_func, {}).values())

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize=0) -> int:
        """Blocks of ``blockdim`` threads that fit on the chip at once (occupancy x SMs): the largest grid a
        cooperative launch accepts.  Registers: the estimate of the kernel's last launch, else 16 (the
        estimate's floor)."""
        if isinstance(blockdim, (tuple, list)):
            tpc = int(np.prod([int(b) for b in blockdim]))
        else:
            tpc = int(blockdim)
        ck = compile_kernel(self.kernel)
        regs = ck.last_registers or 16
        return max_coresident_ctas(load_gpu(_observer_gpu() or DEFAULT_GPU), tpc, regs,
                                   ck.shared_static_bytes + int(dynsmemsize), ck.name)

    def inspect_asm(self):
        self.kernel._no_binary("PTX")

    def inspect_sass(self):
        self.kernel._no_binary("SASS")

    def __repr__(self):
        return f"<gpusim.cuda overload {self.name}{self.signature}>"


class _Launcher:
    def __init__(self, kernel, grid, block, shared):
        self.kernel, self.grid, self.block, self.shared = kernel, grid, block, shared

    def __call__(self, *args):
        launch(self.kernel, self.grid, self.block, args, self.shared)


class DeprecationError(LaunchError):
    """numba's ``numba.core.errors.DeprecationError``: a deprecated ``cuda.jit`` keyword (argtypes, restype,
    bind), refused at the decorator's line."""


class _NotImplementedOption(LaunchError, NotImplementedError):
    """numba-cuda's NotImplementedError for a ``cuda.jit`` option it refuses (``boundscheck=True``)."""


class _DeviceAsKernel(LaunchError, RuntimeError):
    """numba-cuda's RuntimeError for a device function launched as a kernel (``f[1, 1]()``)."""


def jit(func_or_sig=None, device=False, **options):
    """``@cuda.jit``, ``@cuda.jit(...)``, ``@cuda.jit("void(float32[:])")``, ``@cuda.jit(device=True)``.

    numba options (fastmath, cache, lineinfo, opt, inline, max_registers ...) are accepted and ignored; with
    ``debug=True`` a thread's ``raise`` / failing ``assert`` makes the launch raise it on the host, as numba-cuda's.
    A signature (a string ``"void(float32[:], int32)"``, ``void(float32[:])``, a tuple of argument types
    ``(int32[:, ::1],)`` or a list of them) compiles the kernel eagerly and keys ``kernel.overloads``.
    """
    for kw in ("argtypes", "restype", "bind"):
        if options.get(kw) is not None:
            # numba-cuda refuses the pre-0.50 keyword signatures at the decorator, with this message
            raise DeprecationError(f"Deprecated keyword argument `{kw}`. Signatures should be passed as the first "
                                   "positional argument.")
    if options.get("boundscheck"):
        raise _NotImplementedOption("bounds checking is not supported for CUDA")
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)) \
            and not isinstance(func_or_sig, (nbtypes.Type, nbtypes.Signature)):
        return Kernel(func_or_sig, device=device, **options)
    sigs = ()
    if func_or_sig is not None:
        sigs = func_or_sig if isinstance(func_or_sig, list) else [func_or_sig]

    def deco(f):
        return Kernel(f, device=device, signatures=sigs, **options)
    return deco


__all__ = ["jit", "Kernel", "trace_launch", "run", "launch", "unwrap", "CHUNK_THREADS", "DEFAULT_GPU"]
