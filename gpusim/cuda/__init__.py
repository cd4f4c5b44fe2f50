"""gpusim.cuda: a numba.cuda-compatible SIMT front end, drop-in for ``from numba import cuda``.

    from gpusim import cuda           # or: from numba import cuda  (the same kernels run on gpusim)

    @cuda.jit
    def add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    add[(n + 255) // 256, 256](a, b, out)                          # runs functionally, writes ``out``
    tr = cuda.trace_launch(add, (n + 255) // 256, 256, [a, b, out])   # ... and returns the KernelTrace

A kernel runs warp-vectorized: all threads of a chunk of CTAs execute in lockstep as numpy vectors, with
active masks for divergent control flow (``runtime.py``, composed of one module per room of the machine:
``arith``, ``control``, ``indexing``, ``memaccess``, ``atomics``, ``warp``; ``unroll.py`` is LLVM's runtime
unrolling); the rewriting of the kernel's source is in ``compiler.py`` and its passes (``resolve``,
``analysis``, ``rewrite_stmts``, ``rewrite_exprs``); per-construct instruction costs in ``costs.py``.  A plain
launch records and publishes a trace only when ``gpusim.trace.launch_observers`` is non-empty (inside
``gpusim.session()``).

What runs in kernels: ``cuda.grid/gridsize/threadIdx/blockIdx/blockDim/gridDim/laneid/warpsize``,
``cuda.shared.array`` (shape 0 = the launch's dynamic shared memory), ``cuda.local.array``,
``cuda.const.array_like``, ``cuda.syncthreads`` (+ ``_count/_and/_or``), ``cuda.syncwarp``, ``threadfence``,
``cuda.atomic.add/sub/max/min/exch/cas/compare_and_swap/and_/or_/xor/inc/dec/nanmax/nanmin``, warp
shuffles, votes and matches (``eq_sync``, ``match_any_sync``, ``match_all_sync``, ``lanemask_lt``), ``selp``,
``popc/brev/clz/ffs/fma/cbrt``, ``cuda.fp16.h*``, complex numbers and ``cmath.*``, ``math.*`` (``frexp``/``modf`` return their pairs), numpy scalar types and math ufuncs,
``min/max/abs/int/float/bool/len/round/pow``, ``range`` loops, ``while``, ``if/elif/else``, ``break``,
``continue``, ``return``, ternaries, ``and/or/not``, tuples, device functions (``@cuda.jit(device=True)``,
inlined).  ``print`` is accepted and prints nothing.  ``raise`` and a failing ``assert`` in a kernel end the
thread; with ``cuda.jit(debug=True, opt=False)`` the launch then raises the first raising thread's exception on
the host as numba-cuda does (``In function 'k', file F, line N, tid=[z, y, x] ctaid=[z, y, x]: msg``).

numba-cuda's libraries and names (``devlib.py`` runs them in kernels): ``cuda.random`` (xoroshiro128+ streams
bit-identical to numba's: ``create_xoroshiro128p_states`` on the host, ``xoroshiro128p_uniform_float32`` ... in
kernels), ``cuda.cg.this_grid().sync()`` (the kernel is launched cooperatively: the whole grid resident and
run in lockstep; a grid that cannot be resident raises ``CooperativeLaunchTooLarge`` as CUDA refuses it),
numpy ufuncs on scalars and with an output array (``np.sin(x, out)``), ``cuda.reduce`` (numba's reduction
kernel and launches), ``kernel.overloads``, numba's type names (``gpusim.cuda.types``; ``float32[:]`` array
types in ``cuda.jit`` signatures).
"""
from __future__ import annotations

import contextlib
import sys
import types as _types

import numpy as np

from ..errors import GpusimError
from . import cg, libdevice, random, types
from .launch import DEFAULT_GPU, Kernel, jit, trace_launch
from .memory import DeviceNDArray, as_device_storage
from .device import (Device, close, current_context, defer_cleanup, event, event_elapsed_time, get_current_device,
                     gpus, profile_start, profile_stop, select_device)
from . import reduction as _reduction
from .reduction import Reduce
from .types import (b1, boolean, bool_, complex64, complex128, double, f2, f4, f8, float16, float32, float64,
                    float_, i1, i2, i4, i8, int8, int16, int32, int64, int_, intp, none, u1, u2, u4, u8, uint8,
                    uint16, uint32, uint64, uintp, void)

reduce = Reduce
from .vectors import STUBS as _VECTOR_STUBS        # noqa: E402 - cuda.float32x4, cuda.float4 ... (numba-cuda's)
globals().update(_VECTOR_STUBS)
_reduction.register_package(sys.modules[__name__])

__all__ = ["jit", "trace_launch", "Kernel", "DeviceNDArray", "to_device", "device_array", "device_array_like",
           "pinned_array", "mapped_array", "pinned_array_like", "mapped_array_like", "pinned", "as_cuda_array", "is_cuda_array", "libdevice", "synchronize", "is_available", "grid", "gridsize", "threadIdx",
           "blockIdx", "blockDim", "gridDim", "laneid", "warpsize", "shared", "local", "const", "atomic",
           "syncthreads", "syncwarp", "ldca", "ldcg", "ldcs", "ldlu", "ldcv", "stcg", "stcs", "stwb", "stwt",
           "stream", "detect", "reference_run", "cg", "random", "types", "reduce", "managed_array", "event",
           "event_elapsed_time", "get_current_device", "current_context", "gpus", "select_device", "close",
           "profile_start", "profile_stop", "defer_cleanup",
           "Reduce", "declare_device", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "boolean", "void", "complex64", "complex128", "b1", "bool_", "double", "f2",
           "f4", "f8", "float_", "i1", "i2", "i4", "i8", "int_", "intp", "none", "u1", "u2", "u4", "u8", "uintp"]


# ---- host API ---------------------------------------------------------------------------------------------------

def to_device(obj, stream=0, copy=True, to=None):
    """Copy a host array to (simulated) device memory."""
    if to is not None:
        to.copy_to_device(obj)
        return to
    if isinstance(obj, DeviceNDArray):
        return obj
    a = np.array(obj, copy=True) if copy else np.asarray(obj)
    return DeviceNDArray(np.ascontiguousarray(a) if not (a.flags.c_contiguous or a.flags.f_contiguous) else a)


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    """Uninitialized device array (zero-filled here)."""
    return DeviceNDArray(np.zeros(shape, dtype=dtype, order=order))


def device_array_like(ary, stream=0):
    a = ary._ary if isinstance(ary, DeviceNDArray) else np.asarray(ary)
    return DeviceNDArray(np.zeros_like(a))


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    return np.zeros(shape, dtype=dtype, order=order)


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0, portable=False, wc=False):
    return np.zeros(shape, dtype=dtype, order=order)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0, attach_global=True):
    return np.zeros(shape, dtype=dtype, order=order)


def _host_like(ary):
    a = ary._ary if isinstance(ary, DeviceNDArray) else np.asarray(ary)
    return np.zeros_like(a)


def pinned_array_like(ary):
    """numba's ``cuda.pinned_array_like``: a page-locked host array of ``ary``'s shape, dtype and layout."""
    return _host_like(ary)


def mapped_array_like(ary, stream=0, portable=False, wc=False):
    """numba's ``cuda.mapped_array_like``: a host array mapped into the device's address space, like ``ary``."""
    return _host_like(ary)


def as_cuda_array(obj, sync=True):
    """numba's ``cuda.as_cuda_array``: a device array viewing ``obj``'s memory without a copy (a gpusim device
    array, a torch tensor on the simulated GPU, any object with the CUDA or numpy array interface)."""
    if isinstance(obj, DeviceNDArray):
        return obj
    st = as_device_storage(obj)
    if st is None:
        raise TypeError(f"as_cuda_array: {type(obj).__name__} is not an array (it has no __cuda_array_interface__)")
    return DeviceNDArray(st)


def is_cuda_array(obj) -> bool:
    """numba's ``cuda.is_cuda_array``: can ``as_cuda_array`` view it."""
    return isinstance(obj, DeviceNDArray) or as_device_storage(obj) is not None and not isinstance(obj, np.ndarray)


@contextlib.contextmanager
def pinned(*arylist):
    """numba's ``with cuda.pinned(a, b):`` (page-locks host arrays for the block): nothing to do here."""
    yield


def synchronize():
    """Launches complete before they return: nothing to wait for."""


def is_available() -> bool:
    return True


def detect() -> bool:
    print(f"gpusim simulated CUDA device ({DEFAULT_GPU})")
    return True


class _Stream:
    """A CUDA stream: launches and copies complete before they return, so its work is always done.  ``handle``:
    the stream's handle (0, or the pointer an external stream was made from)."""

    def __init__(self, handle=0):
        self.handle = _StreamHandle(int(handle))

    def __int__(self):
        return int(self.handle)

    def __repr__(self):
        return "<gpusim CUDA stream (its work done as issued)>"

    def synchronize(self):
        pass

    def auto_synchronize(self):
        import contextlib
        return contextlib.nullcontext(self)

    def add_callback(self, callback, arg=None):
        """numba's ``Stream.add_callback``: ``callback(stream, status, arg)`` once the stream's work is done (now)."""
        callback(self, 0, arg)

    def async_done(self):
        """numba's ``Stream.async_done``: an awaitable resolving to the stream once its work is done (already)."""
        import asyncio
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(self)
        return fut


class _StreamHandle(int):
    """A stream's handle (numba's: ``int(stream.handle)``, ``stream.handle.value``)."""

    @property
    def value(self):
        return int(self)


def stream():
    return _Stream()


def default_stream():
    return _Stream()


def legacy_default_stream():
    return _Stream()


def per_thread_default_stream():
    return _Stream()


def external_stream(ptr):
    """numba's ``cuda.external_stream(ptr)``: a stream another library made (its work is done as issued here)."""
    return _Stream(ptr)


def reference_run(kernel, grid, block, args, shared_bytes=0):
    """Run a kernel one thread at a time (the semantic reference; see ``reference.py``)."""
    from .reference import run_reference
    return run_reference(kernel, grid, block, args, shared_bytes=shared_bytes)


class ExternFunction:
    """A foreign function declared with ``cuda.declare_device`` (CUDA C/C++ or PTX linked into the kernel).
    gpusim cannot run it: a kernel calling it raises ``UnsupportedConstruct`` naming it and what to write instead
    (the function in Python, as a ``@cuda.jit(device=True)`` function)."""

    def __init__(self, name, sig, link):
        self.name, self.sig, self.link = name, sig, link
        self._gpusim_extern = (name, sig, link)

    def __call__(self, *a, **k):
        raise RuntimeError(f"the foreign function {self.name!r} can only be called from a kernel")

    def __repr__(self):
        return f"<gpusim.cuda foreign function {self.name} {self.sig}>"


def _no_ptx(what):
    def f(pyfunc, sig=None, *args, **kwargs):
        name = getattr(pyfunc, "__name__", "?")
        raise GpusimError(f"cuda.{what}({name!r}, ...): gpusim simulates the kernel's Python source and generates no "
                          "PTX or cubin; the per-line instruction counts of the simulated SASS are in the trace "
                          "(gpusim.cuda.trace_launch(kernel, grid, block, args) and its report)")
    f.__name__ = what
    f.__doc__ = f"numba-cuda's ``cuda.{what}``: importable; calling it is refused (gpusim generates no PTX)."
    return f


compile = _no_ptx("compile")
compile_ptx = _no_ptx("compile_ptx")
compile_for_current_device = _no_ptx("compile_for_current_device")
compile_ptx_for_current_device = _no_ptx("compile_ptx_for_current_device")
compile_all = _no_ptx("compile_all")


def declare_device(name, sig, link=None, use_cooperative=False, abi="numba"):
    """numba's ``cuda.declare_device``: accepted so that files declaring foreign functions import; calling the
    function from a kernel is an ``UnsupportedConstruct`` (gpusim runs Python kernels only)."""
    if link is None:
        link = ()
    elif not isinstance(link, (list, tuple, set)):
        link = (link,)
    return ExternFunction(name, sig, tuple(link))


# ---- kernel-side names (resolved by the compiler; they do nothing on the host) -----------------------------------

class _KernelOnly:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _KernelOnly(f"{self._name}.{attr}")

    def __call__(self, *a, **k):
        raise RuntimeError(f"cuda.{self._name} can only be used inside a kernel")

    def __repr__(self):
        return f"<gpusim.cuda kernel intrinsic cuda.{self._name}>"


threadIdx = _KernelOnly("threadIdx")
blockIdx = _KernelOnly("blockIdx")
blockDim = _KernelOnly("blockDim")
gridDim = _KernelOnly("gridDim")
laneid = _KernelOnly("laneid")
warpsize = 32
shared = _KernelOnly("shared")
local = _KernelOnly("local")
const = _KernelOnly("const")
atomic = _KernelOnly("atomic")
grid = _KernelOnly("grid")
gridsize = _KernelOnly("gridsize")
syncthreads = _KernelOnly("syncthreads")
syncthreads_count = _KernelOnly("syncthreads_count")
syncthreads_and = _KernelOnly("syncthreads_and")
syncthreads_or = _KernelOnly("syncthreads_or")
syncwarp = _KernelOnly("syncwarp")
threadfence = _KernelOnly("threadfence")
ldca = _KernelOnly("ldca")
ldcg = _KernelOnly("ldcg")
ldcs = _KernelOnly("ldcs")
ldlu = _KernelOnly("ldlu")
ldcv = _KernelOnly("ldcv")
stcg = _KernelOnly("stcg")
stcs = _KernelOnly("stcs")
stwb = _KernelOnly("stwb")
stwt = _KernelOnly("stwt")
threadfence_block = _KernelOnly("threadfence_block")
threadfence_system = _KernelOnly("threadfence_system")
shfl_sync = _KernelOnly("shfl_sync")
shfl_up_sync = _KernelOnly("shfl_up_sync")
shfl_down_sync = _KernelOnly("shfl_down_sync")
shfl_xor_sync = _KernelOnly("shfl_xor_sync")
ballot_sync = _KernelOnly("ballot_sync")
all_sync = _KernelOnly("all_sync")
any_sync = _KernelOnly("any_sync")
activemask = _KernelOnly("activemask")
eq_sync = _KernelOnly("eq_sync")
lanemask_lt = _KernelOnly("lanemask_lt")
match_any_sync = _KernelOnly("match_any_sync")
match_all_sync = _KernelOnly("match_all_sync")
selp = _KernelOnly("selp")
# cuda.fp16: half-precision intrinsics (kernel-only, like numba-cuda's)
fp16 = _types.SimpleNamespace(**{_n: _KernelOnly(f"fp16.{_n}") for _n in (
    "hadd", "hsub", "hmul", "hdiv", "hfma", "hneg", "habs", "hmax", "hmin", "heq", "hne", "hge", "hgt", "hle", "hlt",
    "hsin", "hcos", "hlog", "hlog2", "hlog10", "hexp", "hexp2", "hexp10", "hsqrt", "hrsqrt", "hrcp", "hceil",
    "hfloor", "htrunc", "hrint")})
popc = _KernelOnly("popc")
brev = _KernelOnly("brev")
clz = _KernelOnly("clz")
ffs = _KernelOnly("ffs")
fma = _KernelOnly("fma")
cbrt = _KernelOnly("cbrt")
