"""Functional semantics of ``tl.dot``: float32 products (tf32-rounded inputs for fp32 unless
``input_precision="ieee"``, three passes for tf32x3; fp8 values are exact in float32) with fp32 accumulation (the
H100's fp8 wgmma accumulates with fewer bits than fp32: not modelled), int8 in int32, batched over the
programs of a chunk with ``np.matmul`` on one BLAS thread.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from . import _core as C
from ._core import bfloat16, fail, float16, float32, float64, int32, tensor, to_tensor, unwrap


# ---------------------------------------------------------------------------------------------------------
# dot
# ---------------------------------------------------------------------------------------------------------

_DOT_TYPES = ("int8", "uint8", "fp16", "bf16", "fp32", "fp64", "fp8e5", "fp8e4nv")


class _OneBlasThread:
    """Run numpy's BLAS on one thread for the duration of a call (OpenBLAS' thread-local setting).

    The batched products here are many small GEMMs; on a small, shared machine OpenBLAS's worker threads
    spin-wait against other processes (and against torch's OpenMP pool when torch is loaded), which can make
    them 10-50x slower than one thread.  The previous setting is restored after each call."""

    fn = None
    probed = False

    @classmethod
    def setter(cls):
        if not cls.probed:
            cls.probed = True
            try:
                import ctypes
                with open("/proc/self/maps") as f:
                    paths = {ln.split()[-1] for ln in f if "openblas" in ln.lower() and ".so" in ln}
                for p in paths:
                    lib = ctypes.CDLL(p)
                    f = getattr(lib, "openblas_set_num_threads_local", None)
                    if f is not None:
                        f.argtypes = [ctypes.c_int]
                        f.restype = ctypes.c_int
                        cls.fn = f
                        break
            except Exception:
                cls.fn = None
        return cls.fn


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched matmul over programs (numpy BLAS, one thread)."""
    f = _OneBlasThread.setter()
    if f is None:
        return np.matmul(a, b)
    prev = f(1)
    try:
        return np.matmul(a, b)
    finally:
        f(prev if prev > 0 else 0)


def dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, out_dtype=float32):
    a, b = unwrap(a), unwrap(b)
    acc = unwrap(acc)
    out_dtype = unwrap(out_dtype) or float32
    if not isinstance(a, tensor) or not isinstance(b, tensor) or not a.shape or not b.shape:
        fail(CompileError, "tl.dot: both operands must be tensors (blocks)")
    if allow_tf32 is not None and input_precision is not None:
        fail(CompileError, "tl.dot: only one of input_precision and allow_tf32 can be specified")
    if input_precision is None:
        input_precision = "tf32" if allow_tf32 is None or unwrap(allow_tf32) else "ieee"
    input_precision = str(unwrap(input_precision)).lower()
    if input_precision not in ("tf32", "tf32x3", "ieee"):
        fail(CompileError, f"tl.dot: unknown input_precision {input_precision!r}")
    for t, n in ((a, "lhs"), (b, "rhs")):
        if t.dtype.name not in _DOT_TYPES:
            fail(CompileError, f"tl.dot: unsupported {n} dtype {t.dtype!r}")
    if a.dtype != b.dtype and not (a.dtype.is_fp8() and b.dtype.is_fp8()):     # (any fp8 x fp8 pair is allowed)
        fail(CompileError, f"tl.dot: both operands must be same dtype. Got {a.dtype} and {b.dtype}")
    ra, rb = len(a.shape), len(b.shape)
    if not (ra == rb == 2 or ra == rb == 3):
        fail(CompileError, f"tl.dot: both inputs must be either 2D or 3D; (lhs: {list(a.shape)} vs rhs: "
                           f"{list(b.shape)})")
    if a.shape[-1] != b.shape[-2]:
        fail(CompileError, f"tl.dot: first input shape ({list(a.shape)}) and second input shape ({list(b.shape)}) "
                           f"are not compatible for matmul (second index of first shape ({a.shape[-1]}) must be "
                           f"equal to first index of second shape ({b.shape[-2]}))")
    if ra == 3 and a.shape[0] != b.shape[0]:
        fail(CompileError, f"tl.dot: batch dimensions differ: {a.shape[0]} and {b.shape[0]}")
    K = a.shape[-1]
    min_k = 32 if a.dtype.primitive_bitwidth == 8 else 16
    if K < min_k:
        fail(CompileError, f"tl.dot: input shapes should have M >= 1, N >= 1 and K >= {min_k} (got K = {K})")
    N = b.shape[-1]
    oshape = a.shape[:-1] + (N,)
    if a.dtype.is_int():
        ret = int32
    elif a.dtype in (float32, bfloat16):
        ret = float32
    elif a.dtype is float64:
        ret = float64
    else:
        ret = out_dtype
        if ret is bfloat16:
            fail(CompileError, "tl.dot: out_dtype=bfloat16 is unsupported; use float32 and cast with .to()")
    if acc is not None:
        acc = to_tensor(acc)
        if tuple(acc.shape) != oshape or acc.dtype != ret:
            fail(CompileError, f"tl.dot: accumulator of shape {list(acc.shape)} and type {acc.dtype} does not match "
                               f"the result {list(oshape)} of type {ret}")
    st = C.state()
    av, bv = a.v, b.v
    if a.dtype.is_int():
        prod = np.matmul(av.astype(np.int64), bv.astype(np.int64)).astype(np.int32)
        v = prod if acc is None else (acc.v.astype(np.int64) + prod).astype(np.int32)
    else:
        cdt = np.float64 if a.dtype is float64 else np.float32
        if a.dtype is float32 and input_precision == "tf32":
            av, bv = C.round_tf32(av), C.round_tf32(bv)
        elif a.dtype is float32 and input_precision == "tf32x3":
            ah = C.round_tf32(av)
            bh = C.round_tf32(bv)
            al = C.round_tf32(av - ah)
            bl = C.round_tf32(bv - bh)
            prod = _matmul(ah, bh) + (_matmul(al, bh) + _matmul(ah, bl))
            av = bv = None
        if av is not None:
            prod = _matmul(av.astype(cdt, copy=False), bv.astype(cdt, copy=False))
        if acc is not None:
            accv = acc.v.astype(cdt, copy=False)
            if prod.shape == np.broadcast_shapes(prod.shape, accv.shape):
                prod += accv
                v = prod
            else:
                v = accv + prod
        else:
            v = prod
        if ret in (float16,):
            v = C.round_to(ret, v.astype(np.float32))
    out = tensor(v, ret, oshape)
    C.note_numel(oshape)
    if st.rec is not None:
        st.rec.dot(out, a, b, acc, input_precision)
    return out
