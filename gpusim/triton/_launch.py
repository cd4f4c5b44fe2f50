"""Launching a tile kernel: binding arguments like Triton, running all programs in chunks, building the trace.

A launch binds arguments to the kernel's signature (constexprs from keywords or defaults; a missing constexpr
is a compile error), specializes them as Triton does (pointers and ints divisible by 16 get divisibility 16,
an int equal to 1 becomes the constant 1), then executes the grid in chunks of programs, each chunk in masked
lockstep over numpy arrays.  When a trace is wanted, one *probe* program runs first with writes disabled: it
fixes, per static op, the joined AxisInfo facts (vector widths), which loads feed dots (pipelining) and which
dots chain (FlashAttention's warp layout), so every chunk lowers identically; each chunk then records one
OpTable and equal tables are joined.
"""
from __future__ import annotations

import inspect
import linecache
import types

import numpy as np

from .._host import gc_paused
from ..config import GPUConfig, load_gpu
from ..errors import CompileError, GpusimError, KernelError, LaunchError, UnsupportedConstruct
from ..trace import KernelTrace, OpKind, Space, WARP
from . import _axisinfo as AI
from ._resources import check_shared
from . import _core as C
from . import _lower as L
from . import _ops_descriptor as D
from . import _ops_memory as M
from . import _realcc
from . import _rewrite
from . import language as tl
from ._buffers import ADDRESSES, Buffer, device_type, numpy_root
from ._kernels import Spec, _real_triton_kind, _rebind, compiled, resolve
from ._state import _CODE_INFO, IGNORED_CALLS

CHUNK_ELEMENTS = 1 << 21           # target elements of the largest tile over a chunk of programs
_META_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug", "launch_cooperative_grid",
              "launch_pdl", "warmup", "grid", "stream", "device", "extern_libs")


# ---------------------------------------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------------------------------------

def make_pointer_arg(flat: np.ndarray, offset: int, dt: C.dtype, name: str, owner=None) -> C.tensor:
    """A pointer kernel argument to element ``offset`` of the 1-D allocation ``flat`` holding ``dt`` values."""
    base = ADDRESSES.address(flat.__array_interface__["data"][0], flat.nbytes, owner)
    buf = Buffer(flat, dt, base, name)
    t = C.tensor(np.array([offset], np.int64), C.pointer_type(dt), ())
    t.buf = buf
    t.ax = AI.arg_pointer(base + offset * dt.itemsize)
    return t


def _pointer_arg(x, name):
    mod = type(x).__module__ or ""
    if type(x).__name__ == "TensorWrapper" and hasattr(x, "base") and hasattr(x, "dtype"):
        return _reinterpreted_arg(x, name)
    if isinstance(x, np.ndarray):
        arr = x
        if arr.dtype.name == "bfloat16":
            arr = arr.view(np.uint16)
            dt = C.bfloat16
        else:
            dt = C.dtype_of_numpy(arr.dtype)
        flat, off, owner = numpy_root(arr)
        return make_pointer_arg(flat, off, dt, name, owner)
    if mod.startswith("torch"):
        import torch
        if device_type(x) != "cpu":
            raise UnsupportedConstruct(f"argument {name!r}: only CPU torch tensors can be simulated "
                                       f"(got device {x.device})")
        fp8 = {"torch.float8_e5m2": tl.float8e5, "torch.float8_e4m3fn": tl.float8e4nv}.get(str(x.dtype))
        if fp8 is None and "float8" in str(x.dtype):
            raise LaunchError(f"argument {name!r} is a {x.dtype} tensor: the H100's fp8 formats are float8_e5m2 "
                              "(tl.float8e5) and float8_e4m3fn (tl.float8e4nv)")
        elem = x.element_size()
        storage = x.untyped_storage()
        n = storage.nbytes() // elem
        view_dt = torch.int16 if x.dtype == torch.bfloat16 else torch.uint8 if fp8 is not None else x.dtype
        base = torch.empty(0, dtype=view_dt).set_(storage, 0, (n,), (1,))
        flat = base.numpy()
        dt = C.bfloat16 if x.dtype == torch.bfloat16 else fp8 if fp8 is not None else C.dtype_of_numpy(flat.dtype)
        return make_pointer_arg(flat, int(x.storage_offset()), dt, name, None)
    raise UnsupportedConstruct(f"argument {name!r} of type {type(x).__name__} cannot be passed to a kernel")


def _is_pointer_like(v) -> bool:
    """Triton passes any object with ``data_ptr()`` and ``dtype`` as a pointer (FlagGems' ``StridedBuffer``)."""
    return callable(getattr(v, "data_ptr", None)) and hasattr(v, "dtype") and not isinstance(v, (int, float))


def _pointer_like_arg(x, name):
    """A pointer-like object: its address inside the memory of an array or tensor it holds (``x._base``)."""
    from ._buffers import _root_bytes
    addr = int(x.data_ptr())
    dt = x.dtype
    if (type(dt).__module__ or "").startswith("torch"):
        import torch
        dt = C.bfloat16 if dt == torch.bfloat16 else C.dtype_of_numpy(torch.empty(0, dtype=dt).numpy().dtype)
    elif isinstance(dt, np.dtype):
        dt = C.dtype_of_numpy(dt)
    else:
        dt = _rebind(dt)
    for v in vars(x).values() if hasattr(x, "__dict__") else ():
        if not (isinstance(v, np.ndarray) or (type(v).__module__ or "").startswith("torch")) or not hasattr(v, "shape"):
            continue
        raw, host, _, owner = _root_bytes(v)
        if host <= addr < host + raw.nbytes and isinstance(dt, C.dtype) and dt.np_storage is not None:
            e = dt.itemsize
            if (addr - host) % e:
                break
            view = raw[:raw.nbytes // e * e].view(dt.np_storage if dt is not C.bfloat16 else np.uint16)
            return make_pointer_arg(view, (addr - host) // e, dt, name, owner)
    raise UnsupportedConstruct(f"argument {name!r} of type {type(x).__name__}: its data_ptr() is not inside an array "
                               "or tensor it holds, so gpusim cannot find its memory")


def _reinterpreted_arg(x, name):
    """``triton.reinterpret(t, dtype)``: ``t``'s memory as a pointer to ``dtype``."""
    dt = _rebind(x.dtype)
    if isinstance(dt, C.unsupported_dtype):
        raise LaunchError(f"argument {name!r} is reinterpreted as {dt.long_name}: {dt.why()}")
    if not isinstance(dt, C.dtype) or dt.np_storage is None:
        raise UnsupportedConstruct(f"argument {name!r}: triton.reinterpret to {x.dtype!r} is not a Triton dtype")
    p = _pointer_arg(x.base, name)
    buf = p.buf
    e_old, e_new = buf.elem_bytes, dt.itemsize
    byte = int(p.v[0]) * e_old
    if byte % e_new:
        raise UnsupportedConstruct(f"argument {name!r}: triton.reinterpret to {dt.name} at an offset of {byte} "
                                   f"bytes, not a multiple of its {e_new}-byte elements")
    raw = buf.flat.view(np.uint8)
    view = raw[:raw.nbytes // e_new * e_new].view(dt.np_storage if dt is not C.bfloat16 else np.uint16)
    return make_pointer_arg(view, byte // e_new, dt, name, None)


def _scalar_arg(x, name):
    if isinstance(x, (bool, np.bool_)):
        t = C.tensor(np.array([bool(x)]), C.int1, ())
        t.ax = AI.pessimistic(1)
        return t
    if isinstance(x, (int, np.integer)):
        x = int(x)
        if x == 1:
            return 1                          # Triton specializes 1 as a constant
        dt = C.int32 if -2 ** 31 <= x < 2 ** 31 else (C.int64 if -2 ** 63 <= x < 2 ** 63 else C.uint64)
        t = C.tensor(np.array([x], dt.np), dt, ())
        t.ax = AI.arg_scalar(x)
        return t
    if isinstance(x, (float, np.floating)):
        return C.tensor(np.array([x], np.float32), C.float32, ())
    raise UnsupportedConstruct(f"argument {name!r} of type {type(x).__name__} cannot be passed to a kernel")


def bind(spec: Spec, args, kwargs):
    """(values by parameter name as Python objects, constexpr values, num_warps, num_stages)."""
    kwargs = dict(kwargs)
    pnames = {p.name for p in spec.params}
    # launch options; one that is also a parameter (tutorial 02's ``num_stages: tl.constexpr``) is both
    meta = {k: (kwargs[k] if k in pnames else kwargs.pop(k)) for k in list(kwargs) if k in _META_KEYS}
    if meta.get("extern_libs"):
        IGNORED_CALLS.add("extern_libs: gpusim's libdevice is built in (Triton's function names); the library "
                          "path given is not read")
    if spec.config is not None:
        ckw, cw, cs = spec.config
        for k2, v2 in ckw.items():
            kwargs.setdefault(k2, v2)
        if cw is not None:
            meta.setdefault("num_warps", cw)
        if cs is not None:
            meta.setdefault("num_stages", cs)
    _, first, file = _rewrite.source_of(spec.fn)
    try:
        ba = spec.sig.bind_partial(*args, **kwargs)
    except TypeError as e:
        raise CompileError(f"launch of {spec.name!r}: {e}", file=file, line=first, kernel=spec.name) from None
    vals = dict(ba.arguments)
    for h in spec.heuristics:
        for k2, f in h.items():
            if k2 not in vals:
                vals[k2] = f({**vals, **meta})
    for p in spec.params:
        if p.name not in vals:
            if p.default is not inspect.Parameter.empty:
                vals[p.name] = p.default
            elif p.name in spec.constexprs:
                raise CompileError(f"constexpr parameter {p.name!r} of kernel {spec.name!r} was not given at launch "
                                   f"(pass it as a keyword: {p.name}=...)", file=file, line=first, kernel=spec.name)
            else:
                raise CompileError(f"missing argument {p.name!r} of kernel {spec.name!r}", file=file, line=first,
                                   kernel=spec.name)
    num_warps = int(meta.get("num_warps", 4) or 4)
    num_stages = int(meta.get("num_stages", 3) or 3)
    if num_warps <= 0 or num_warps & (num_warps - 1):
        raise LaunchError(f"num_warps must be a power of 2 (got {num_warps})")
    return vals, num_warps, num_stages


def _grid_of(grid, vals, num_warps, num_stages):
    if callable(grid):
        grid = grid({**vals, "num_warps": num_warps, "num_stages": num_stages})
    if isinstance(grid, (int, np.integer)):
        grid = (int(grid),)
    grid = tuple(int(C.unwrap(g)) for g in grid)
    if not 1 <= len(grid) <= 3:
        raise LaunchError(f"grid must have 1 to 3 dimensions (got {grid})")
    grid = grid + (1,) * (3 - len(grid))
    if any(g < 0 for g in grid):
        raise LaunchError(f"grid dimensions must be non-negative (got {grid})")
    if grid[0] > 2 ** 31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise LaunchError(f"grid {grid} exceeds the CUDA limits (2^31-1, 65535, 65535)")
    return grid


def _kernel_values(spec: Spec, vals: dict):
    """Python values to call the rewritten kernel with (pointers, scalars as tensors; constexprs raw)."""
    out = {}
    buffers = []
    for p in spec.params:
        v = vals[p.name]
        if p.name in spec.constexprs:
            out[p.name] = C.unwrap(v) if not _real_triton_kind(v) == "constexpr" else v.value
        else:
            t = _arg_value(v, p.name, buffers)
            const = str(getattr(p.annotation, "__name__", p.annotation)).rpartition(".")[2] == "const"   # tl.const
            out[p.name] = M.const_pointer(t) if const else t
    return out, buffers


def _arg_value(v, name, buffers):
    """One argument's value (a tuple's element by element, as Triton passes ``x.shape`` / ``x.stride()``)."""
    if v is None or isinstance(v, (str, C.dtype)) or _real_triton_kind(v) in ("constexpr", "dtype"):
        return _rebind(v)
    if isinstance(v, C.constexpr):
        return v.value
    if isinstance(v, np.ndarray) or (type(v).__module__ or "").startswith("torch") and not isinstance(v, tuple) \
            or (type(v).__name__ == "TensorWrapper" and hasattr(v, "base")):            # (torch.Size: a tuple)
        t = _pointer_arg(v, name)
    elif isinstance(v, tuple):
        return tuple(_arg_value(x, name, buffers) for x in v)
    elif _is_pointer_like(v):
        t = _pointer_like_arg(v, name)
    elif D.is_host_descriptor(v):
        t = _descriptor_arg(v, name)
        buffers.append(t.base.buf)
        return t
    else:
        return _scalar_arg(v, name)
    buffers.append(t.buf)
    return t


def _descriptor_arg(v, name) -> D.tensor_descriptor:
    """A host TensorDescriptor argument: its base as a pointer argument, shape and strides as scalar arguments
    (Triton passes them next to the 128-byte CUtensorMap), its block shape part of the kernel's type."""
    base = _pointer_arg(v.base, name)
    shape = [_scalar_arg(int(s), name) for s in v.shape]
    strides = [_scalar_arg(int(s), name) for s in v.strides]
    if int(v.strides[-1]) != 1:
        raise LaunchError(f"argument {name!r}: a TensorDescriptor's last dimension must be contiguous (stride 1)")
    return D.tensor_descriptor(base, shape, strides, list(v.block_shape), getattr(v, "padding", "zero"), host=True)


def _with_base(d: D.tensor_descriptor, base: C.tensor) -> D.tensor_descriptor:
    return D.tensor_descriptor(base, d.shape, d.strides, d.block_shape, d.padding, host=d.host)


# ---------------------------------------------------------------------------------------------------------
# execution
# ---------------------------------------------------------------------------------------------------------

def _fresh(values: dict) -> dict:
    """New tensor objects (sharing arrays and buffers) for the arguments of one execution."""
    out = {}
    for k, v in values.items():
        if isinstance(v, C.tensor):
            t = C.tensor(v.v, v.dtype, v.shape, v.ax)
            t.buf = v.buf
            v = t
        elif isinstance(v, D.tensor_descriptor):
            v = _with_base(v, _fresh({"b": v.base})["b"])
        out[k] = v
    return out


def _probe_copies(values: dict):
    """Arguments for the probe run: pointers into private copies of the argument memory (aliases stay aliased),
    so the probe's stores and atomics (a work counter, a lock) behave as in a real run without touching the
    user's arrays."""
    copies: dict = {}
    out = {}
    buffers = []

    def private(v):
        b = v.buf
        key = (b.flat.__array_interface__["data"][0], b.flat.dtype.str, b.flat.shape)
        nb = copies.get(key)
        if nb is None:
            nb = copies[key] = Buffer(b.flat.copy(), b.dtype, b.base_addr, b.name)
            buffers.append(nb)
        t = C.tensor(v.v, v.dtype, v.shape, v.ax)
        t.buf = nb
        return t

    for k, v in values.items():
        if isinstance(v, D.tensor_descriptor):
            v = _with_base(v, private(v.base))
        elif isinstance(v, C.tensor) and v.buf is not None:
            v = private(v)
        out[k] = v
    return out, buffers


def _pids(first: int, n: int, grid) -> np.ndarray:
    lin = np.arange(first, first + n, dtype=np.int64)
    g0, g1 = grid[0], grid[1]
    return np.stack([lin % g0, (lin // g0) % g1, lin // (g0 * g1)], axis=1).astype(np.int32)


_MAY_SPIN: dict = {}


def _may_spin(fn) -> bool:
    """Does the kernel (or a JIT helper it names) hold a ``while`` loop, where programs may wait on each other?
    Then its atomics' results are logged for the rounds that follow a wait (``State.next_round``)."""
    hit = _MAY_SPIN.get(fn)
    if hit is None:
        srcs = [_rewrite.source_of(fn)[0]]
        for v in list(fn.__globals__.values()):
            if isinstance(v, (types.ModuleType, type)):
                continue
            try:
                inner = getattr(v, "fn", None)
            except Exception:           # noqa: BLE001 - an object whose attributes raise: not a JIT helper
                continue
            if isinstance(inner, types.FunctionType) and inner is not fn:
                try:
                    srcs.append(inspect.getsource(inner))
                except (OSError, TypeError):
                    pass
        hit = _MAY_SPIN[fn] = any("while" in s for s in srcs)
    return hit


def _run_rounds(kfn, values, st: C.State, spec: Spec):
    """Run the kernel over a chunk; programs deferred because they wait on others (a spin lock, see
    ``_control.While``) run again in further rounds until every program finished."""
    if _may_spin(spec.fn):
        st.atomic_log = []
    _run(kfn, values, st, spec)
    last = None
    rounds = 0
    while st.deferred is not None and st.deferred.any():
        d = st.deferred
        if last is not None and np.array_equal(last[0], d) and last[1] == st.write_epoch:
            file, line = st.spin_site
            progs = [tuple(int(x) for x in st.pids[p]) for p in np.nonzero(d)[0][:4]]
            raise KernelError(f"the `while` loop never ends for {int(d.sum())} program(s) (e.g. program ids "
                              f"{progs}): they wait for a change of memory that no other program of this launch "
                              f"makes (programs run in chunks of {st.P}: one waiting for a program of a later "
                              f"chunk waits forever here, as it might on the GPU); make the loop's exit not depend "
                              f"on programs that have not started", file=file, line=line, kernel=spec.name)
        last = (d.copy(), st.write_epoch)
        if st.rec is not None and not st.probe:
            file, line = st.spin_site
            w = st.rec.stats.waits.setdefault(f"{file.rsplit('/', 1)[-1]}:{line}", [0, 0])
            w[0] += int(d.sum())
            rounds += 1
            w[1] = max(w[1], rounds)
        st.next_round()
        _run(kfn, _fresh(values), st, spec)


def _run(kfn, values, st: C.State, spec: Spec):
    prev = C.ST
    C.ST = st
    try:
        with np.errstate(all="ignore"):
            kfn(**values)
    except KernelError:
        raise
    except GpusimError:
        raise
    except RecursionError:
        raise
    except (TypeError, NameError, AttributeError, ValueError, IndexError, KeyError, AssertionError,
            ZeroDivisionError) as e:
        file, line = _error_location(e)
        raise CompileError(f"{type(e).__name__}: {e}", file=file, line=line, kernel=spec.name) from e
    finally:
        C.ST = prev


def _error_location(e):
    tb = e.__traceback__
    loc = ("", 0)
    while tb is not None:
        info = _CODE_INFO.get(tb.tb_frame.f_code)
        if info is not None:
            loc = (info[0], tb.tb_lineno)
        tb = tb.tb_next
    return loc


@gc_paused()
def execute(kernel, grid, args, kwargs, *, record: bool, gpu: "GPUConfig | str" = "h100"):
    """Run a launch: outputs are written in place.  Returns a KernelTrace when ``record``, else None.
    An autotuned kernel first times each of its configs (``_autotune``)."""
    if not isinstance(kernel, Spec):
        from . import _autotune
        tuner = _autotune.tuner_of(kernel)
        if tuner is not None:
            return _autotune.execute(kernel, tuner, grid, list(args), dict(kwargs), record=record, gpu=gpu,
                                     execute_spec=execute, resolve=resolve)
    spec = kernel if isinstance(kernel, Spec) else resolve(kernel)
    kfn = compiled(spec.fn)
    IGNORED_CALLS.clear()
    launch_options = {k: kwargs[k] for k in _realcc._OPTION_KEYS if k in kwargs}
    vals, W, S = bind(spec, args, kwargs)
    grid3 = _grid_of(grid, vals, W, S)
    n = grid3[0] * grid3[1] * grid3[2]
    cfg = load_gpu(gpu) if record else None
    facts = L.Facts()
    stats = L.Stats()
    chunk = None
    values0, buffers = _kernel_values(spec, vals)
    n_ptr = sum(1 for v in values0.values() if isinstance(v, C.tensor) and v.buf is not None)
    n_scalar = sum(1 for v in values0.values() if isinstance(v, C.tensor) and v.buf is None)
    if record and n:
        # the probe: a few programs spread over the grid, run together with writes disabled
        probe_ids = sorted({0, n - 1, n // 2, n // 4, (3 * n) // 4})
        pids = _pids(0, n, grid3)[probe_ids] if n <= 1 << 20 else np.concatenate(
            [_pids(i, 1, grid3) for i in probe_ids])
        # twice: the first pass learns what only later ops reveal (a dot feeding another dot, a load reaching a
        # dot), the second records layouts and uses with those decisions in place from the start
        for probe_pass in range(2):
            if probe_pass:
                facts.reset_uses()
            rec = L.Recorder(cfg, W, S, len(probe_ids), facts, stats, probe=True, n_ptr_args=n_ptr,
                             n_scalar_args=n_scalar)
            pvals, pbufs = _probe_copies(values0)
            st = C.State(pids=pids, grid=grid3, num_warps=W, num_stages=S, kernel_name=spec.name, rec=rec,
                         probe=True, buffers=pbufs)
            _run_rounds(kfn, pvals, st, spec)
            del pvals, pbufs, rec
        facts.freeze()
        stats = L.Stats()
        chunk = max(1, min(n, CHUNK_ELEMENTS // max(1, st.max_numel)))
    # the real compiler (when in use) after the probe, so that its register spills enter the chunks' traces
    cc = _realcc.outcome(spec, vals, values0, W, S, launch_options, cfg) if record else None
    if cc is not None and cc.result is not None:       # the real compiler's shared memory: refused before running
        check_shared(spec, cc.result.shared_bytes, cfg.sm.max_shared_per_cta_bytes)
    spill_plan = L.SpillPlan.of(cc.result, cfg, W) if cc is not None else None
    tables = []
    start = 0
    while start < n:
        size = chunk if chunk is not None else min(n, 64)
        size = min(size, n - start)
        values = _fresh(values0)
        rec = L.Recorder(cfg, W, S, size, facts, stats, n_ptr_args=n_ptr, n_scalar_args=n_scalar, spill=spill_plan,
                         first=start) if record else None
        st = C.State(pids=_pids(start, size, grid3), grid=grid3, num_warps=W, num_stages=S, kernel_name=spec.name,
                     rec=rec, buffers=buffers, first_program=start)
        _run_rounds(kfn, values, st, spec)
        if chunk is None:
            chunk = max(1, min(n, CHUNK_ELEMENTS // max(1, st.max_numel)))
        if record:
            rec.spill_outside()
            tables.append(_checked(rec.table(start), spec))
        start += size
    if not record:
        return None
    return _build_trace(spec, grid3, W, S, cfg, tables, stats, chunk, n, cc, values0, spill_plan)


def _checked(t, spec):
    """A chunk's table, checked as the engine checks a trace: a mishandled construct is reported at its line."""
    nw = t.n_warps
    for i, op in enumerate(t.ops):
        m = op.mem
        bad = None
        if op.kind in (OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC, OpKind.ASYNC_COPY) and m is None:
            bad = "a memory op without its accesses"
        elif m is not None and m.space != Space.SHARED and m.ptr is not None and len(m.ptr) != nw + 1:
            bad = f"accesses for {len(m.ptr) - 1} warps where the CTAs have {nw}"
        if bad is not None:
            file = _rewrite.source_of(spec.fn)[2]
            text = linecache.getline(file, op.line).strip()
            raise UnsupportedConstruct(f"gpusim cannot lower `{text}` ({op.label}: {bad}); this use of the construct "
                                       f"is not supported by the lowering: please report it, and rewrite the line "
                                       f"with tile-shaped loads/stores meanwhile", file=file, line=op.line,
                                       kernel=spec.name)
    return t


def _build_trace(spec, grid3, W, S, cfg, tables, stats, chunk, n, cc=None, values0=None,
                 spill_plan=None) -> KernelTrace:
    tables = L.merge_tables(tables)
    regs_est, reg_basis = L.register_estimate(stats, W)
    # ptxas gets `.maxntid num_warps * 32` from Triton: it caps the registers so that one CTA fits the register file
    # (64 for 32 warps on a 64K-register SM, in whole 8-register steps) and spills the rest
    cap = min(cfg.sm.max_registers_per_thread, cfg.sm.registers // (32 * W) // 8 * 8)
    regs = min(cap, max(16, regs_est))
    spill = max(0, regs_est - cap)
    smem_est, smem_basis = L.shared_estimate(stats)
    smem = smem_est
    real = cc.result if cc is not None else None
    local_bytes = spill * 4
    if real is not None:
        # the real compiler's allocation replaces the estimate (which stays in meta for comparison)
        # (at least 16 per thread are allocated, as for the estimate: Nsight reports 16 for kernels ptxas gives
        # fewer, records/ncu_*.json)
        regs, smem, local_bytes = max(16, real.registers), real.shared_bytes, real.stack_bytes
        spill = real.stack_bytes // 4                  # Triton's n_spills: the local memory size / 4
    check_shared(spec, smem, cfg.sm.max_shared_per_cta_bytes)     # Triton's OutOfResources
    src_file = _rewrite.source_of(spec.fn)[2]
    lines = sorted({o.line for t in tables for o in t.ops if o.line})
    source_lines = {ln: linecache.getline(src_file, ln).rstrip("\n") for ln in lines}
    meta = {
        "num_warps": W, "num_stages": S,
        "memory_ops": stats.mem_sites,
        "vector_widths": {k: v.get("vec") for k, v in stats.mem_sites.items()},
        "dots": stats.dots,
        "registers": {"estimate": regs_est, "basis": reg_basis, "spilled_registers": spill,
                      "formula": "REG_BASE + weighted sum (costs.REG_WEIGHTS) of the register tiles live in the "
                                 "loop that needs the most: dot accumulators and results, operand fragments, "
                                 "loaded tiles, 64-bit addresses advanced in the loop, the largest elementwise "
                                 "tile; + REG_PER_EXTRA_LIBDEVICE_FN per extra sin/cos/log; capped at 255 (the "
                                 "excess spills to local memory)"},
        "shared_memory": smem_basis,
        "programs_per_chunk": chunk,
        "compiler": cc.meta() if cc is not None else {"label": "built-in estimate", "used": "builtin"},
    }
    if real is not None:
        meta["registers"]["compiled"] = real.registers
        meta["shared_memory"]["estimate"] = smem_est
        meta["shared_memory"]["compiled"] = real.shared_bytes
    tr = KernelTrace(name=spec.name, frontend="triton", grid=grid3, block=(WARP * W, 1, 1), regs_per_thread=regs,
                     shared_bytes_per_cta=smem, tables=tables, source_file=src_file, source_lines=source_lines,
                     local_bytes_per_thread=local_bytes, flops=float(stats.flops), meta=meta)
    for text in sorted(IGNORED_CALLS):
        tr.note(text)
    if spill_plan is not None:
        meta["spills"] = spill_plan.describe()
    _realcc.notes(tr, spec, values0 or {}, cc, spill_plan)
    for where, (waits, rounds) in stats.waits.items():
        meta.setdefault("spin_waits", {})[where] = {"waits": waits, "most_rounds": rounds}
        tr.notes.append(
            f"spin wait at {where}: programs contending for a lock took it one after another, in program order, "
            f"to compute the outputs ({waits} waits; up to {rounds} programs ahead of one). The timing engine "
            f"replays the lock as the GPU runs it: a CTA whose compare-and-swap finds the lock taken spins (an "
            f"atomic round trip and the loop's fence per attempt) until the holder's exchange gives it back, "
            f"so holders follow one another in the order their attempts reach the lock")
    return tr


def trace_launch(kernel, grid, args, meta: dict | None = None, *, gpu: "GPUConfig | str" = "h100") -> KernelTrace:
    """Execute a tile-kernel launch functionally (outputs written in place) and return its trace.

    ``meta`` holds constexprs and ``num_warps`` / ``num_stages``; ``kernel`` may be a gpusim ``@triton.jit``
    function, a real Triton ``JITFunction`` / ``InterpretedFunction`` / autotuner (first config), or a plain
    Triton-style Python function.
    """
    return execute(kernel, grid, list(args), dict(meta or {}), record=True, gpu=gpu)


def run_launch(kernel, grid, args, meta: dict | None = None) -> None:
    """Execute a launch functionally only (no trace; outputs in place), of the kernels ``trace_launch`` takes."""
    execute(kernel, grid, list(args), dict(meta or {}), record=False)
