"""Functional semantics of ``tl``'s math: transcendental and rounding functions, fma, umulhi, min/max/clamp,
``where``, and the composites Triton's standard library defines (sigmoid, softmax, cdiv, swizzle2d).
Computed in the value's compute type (fp16/bf16 rounded after, see ``_dtypes``); each op reports itself to the
recorder as an elementwise op (``_lower_elementwise``).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from . import _axisinfo as AI
from . import _core as C
from ._core import bfloat16, binary, cast, fail, float32, int1, tensor, to_tensor, unwrap, vshape
from ._ops_reduce import reduce_max, reduce_sum


# ---------------------------------------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------------------------------------

def _math1(name, f, x, dtypes=("fp32", "fp64"), kind=None):
    x = to_tensor(unwrap(x))
    if dtypes is not None and x.dtype.name not in dtypes:
        fail(CompileError, f"tl.{name}: Expected dtype {list(dtypes)} but got {x.dtype.name}")
    return C.unary_np(x, f, kind or name)


def exp(x):
    return _math1("exp", np.exp, x)


def exp2(x):
    return _math1("exp2", np.exp2, x)


def log(x):
    return _math1("log", np.log, x)


def log2(x):
    return _math1("log2", np.log2, x)


def sin(x):
    return _math1("sin", np.sin, x)


def cos(x):
    return _math1("cos", np.cos, x)


def sqrt(x):
    return _math1("sqrt", np.sqrt, x)


def sqrt_rn(x):
    return _math1("sqrt_rn", np.sqrt, x, ("fp32",), "sqrt")


def rsqrt(x):
    return _math1("rsqrt", lambda v: 1.0 / np.sqrt(v), x)


def erf(x):
    return _math1("erf", erf_np, x)


def floor(x):
    return _math1("floor", np.floor, x, kind="frnd")


def ceil(x):
    return _math1("ceil", np.ceil, x, kind="frnd")


def abs_(x):
    x = to_tensor(unwrap(x))
    if x.dtype.is_int_unsigned():
        return x
    return C.unary_np(x, np.abs, "abs")


def fdiv(x, y, ieee_rounding=False):
    x, y = to_tensor(unwrap(x)), to_tensor(unwrap(y))
    if not x.dtype.is_floating() or not y.dtype.is_floating():
        fail(CompileError, "both operands of fdiv must have floating scalar type")
    return binary("truediv", x, y)


def div_rn(x, y):
    return fdiv(x, y)


def fma(x, y, z):
    x, y, z = (to_tensor(unwrap(t)) for t in (x, y, z))     # Triton makes numbers tensors first: not weakly typed
    st = C.ST
    rec, st.rec = st.rec, None
    try:
        prod = binary("mul", x, y)
        r = binary("add", prod, z)
    finally:
        st.rec = rec
    if not r.dtype.is_floating():
        return binary("add", binary("mul", x, y), z)
    xs = [to_tensor(t) for t in (x, y, z)]
    shape = r.shape
    with np.errstate(all="ignore"):
        v = (vshape(xs[0], shape).astype(np.float64) * vshape(xs[1], shape) + vshape(xs[2], shape))
    v = v.astype(r.dtype.np)
    if r.dtype in C.ROUNDED:
        v = C.round_to(r.dtype, v)
    out = tensor(v, r.dtype, shape)
    if rec is not None:
        rec.alu(out, tuple(xs), "fma")
    return out


def umulhi(x, y):
    x, y = to_tensor(unwrap(x)), to_tensor(unwrap(y))
    shape = C.broadcast_shapes(x.shape, y.shape)
    # the high half of the unsigned product, for signed operands too (Triton lowers it to __nv_umulhi /
    # __nv_umul64hi: the bits are taken as unsigned)
    bits = x.dtype.primitive_bitwidth
    udt = np.dtype(f"u{bits // 8}")
    a = vshape(x, shape).astype(x.dtype.np).view(udt)
    b = vshape(y, shape).astype(x.dtype.np).view(udt)
    if bits == 64:
        v = ((a.astype(object) * b.astype(object)) >> 64).astype(np.uint64)
    else:
        v = ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(bits)).astype(udt)
    v = v.view(x.dtype.np)
    out = tensor(v, x.dtype, shape)
    st = C.ST
    if st.rec is not None:
        st.rec.alu(out, (x, y), "mul")
    return out


def minimum(x, y, propagate_nan=None):
    return _minmax2(x, y, propagate_nan, False)


def maximum(x, y, propagate_nan=None):
    return _minmax2(x, y, propagate_nan, True)


def _minmax2(x, y, propagate_nan, is_max):
    # Triton's tl.minimum/maximum make a Python number a tensor first (an fp32 or int32 constant), so it is not
    # weakly typed as in ``x + 0.0``: fp16 with 0.0 computes in fp32; bf16 is promoted to fp32 as well.
    tx, ty = (_promote_bf16(to_tensor(unwrap(t))) for t in (x, y))
    ct = C.computation_type(tx.dtype, False, ty.dtype, False, False)
    if ct.is_floating() and getattr(C.ST, "rec", None) is not None:
        tx, ty = C.promote_operand(tx, False, ct), C.promote_operand(ty, False, ct)
    shape = C.broadcast_shapes(tx.shape, ty.shape)
    a = vshape(tx, shape).astype(ct.np, copy=False)
    b = vshape(ty, shape).astype(ct.np, copy=False)
    pn = str(unwrap(propagate_nan) or "").upper()
    if ct.is_floating():
        if "ALL" in pn:
            f = np.maximum if is_max else np.minimum
        else:
            f = np.fmax if is_max else np.fmin
    else:
        f = np.maximum if is_max else np.minimum
    v = f(a, b)
    out = tensor(v, ct, shape)
    st = C.ST
    if st.rec is not None:
        if ct.is_int() and (tx.ax is not None or ty.ax is not None):
            aa = C.broadcast_ax(tx, shape) or AI.pessimistic(len(shape))
            bb = C.broadcast_ax(ty, shape) or AI.pessimistic(len(shape))
            out.ax = AI.binary("max" if is_max else "min", aa, bb, shape)
        C._prov2(out, tx, ty)
        st.rec.alu(out, (tx, ty), "fmnmx" if ct.is_floating() else "imnmx")
    return out


def _promote_bf16(t):
    return cast(t, float32) if t.dtype is bfloat16 else t


def clamp(x, min, max, propagate_nan=None):
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


def _rebase(p: tensor, buf) -> tensor:
    """Pointer ``p`` as element offsets from ``buf``'s memory: lanes that point into ``p``'s own argument are out of
    ``buf``'s range, and loads and stores reach that argument as they reach any other argument's address."""
    eb = buf.elem_bytes
    d = p.buf.base_addr - buf.base_addr
    if p.buf.elem_bytes != eb or d % eb:
        fail(UnsupportedConstruct, "tl.where between pointers to elements of different sizes is not supported")
    out = tensor(p.v.astype(np.int64) + d // eb, p.dtype, p.shape, p.ax)
    for k in ("lay", "src", "lsrc", "dsrc", "aff", "bk"):
        setattr(out, k, getattr(p, k))
    out.buf = buf
    return out


def where(condition, x, y):
    c = to_tensor(unwrap(condition))
    if c.dtype is not int1:
        c = cast(c, int1)
    x, y = unwrap(x), unwrap(y)
    tx = x if isinstance(x, tensor) else to_tensor(x)
    ty = y if isinstance(y, tensor) else to_tensor(y)
    shape = C.broadcast_shapes(C.broadcast_shapes(c.shape, tx.shape), ty.shape)
    if tx.dtype.is_ptr() or ty.dtype.is_ptr():
        if not (tx.dtype.is_ptr() and ty.dtype.is_ptr()):
            fail(CompileError, f"tl.where between a pointer and a non-pointer ({tx.dtype!r}, {ty.dtype!r})")
        if tx.buf.flat is not ty.buf.flat:
            ty = _rebase(ty, tx.buf)       # xformers' rope: ``tl.where(is_q, xq, xk)``, two arguments' pointers
        ct = tx.dtype
        a, b = vshape(tx, shape), vshape(ty, shape)
    else:
        ct = C.computation_type(tx.dtype, C._is_scalar_py(x), ty.dtype, C._is_scalar_py(y), False)
        if ct.is_floating() and getattr(C.ST, "rec", None) is not None:
            tx, ty = C.promote_operand(tx, C._is_scalar_py(x), ct), C.promote_operand(ty, C._is_scalar_py(y), ct)
        a = vshape(tx, shape).astype(ct.np, copy=False)
        b = vshape(ty, shape).astype(ct.np, copy=False)
    v = np.where(vshape(c, shape), a, b)
    out = tensor(v, ct, shape)
    out.buf = tx.buf
    C.note_numel(shape)
    st = C.ST
    if st.rec is not None:
        if (ct.is_int() or ct.is_ptr()) and tx.ax is not None and ty.ax is not None:
            out.ax = AI.select(C.broadcast_ax(c, shape) if c.ax is not None else None, C.broadcast_ax(tx, shape),
                               C.broadcast_ax(ty, shape), not c.shape)
        C._prov2(out, tx, ty)
        st.rec.alu(out, (c, tx, ty), "sel")
    return out


def erf_np(x: np.ndarray) -> np.ndarray:
    """erf: math.erf per element for small arrays, else Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7)."""
    if x.size <= 4096:
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    s = np.sign(x)
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-a * a)
    return (s * y).astype(x.dtype)


# ---------------------------------------------------------------------------------------------------------
# composite ops defined by Triton's standard library
# ---------------------------------------------------------------------------------------------------------

def sigmoid(x):
    return binary("truediv", 1, binary("add", 1, exp(binary("sub", 0, x) if not isinstance(unwrap(x), tensor)
                                                              else -to_tensor(unwrap(x)))))


def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    d = 0 if unwrap(dim) is None else unwrap(dim)
    z = binary("sub", x, reduce_max(x, d, keep_dims=True))
    num = exp(z)
    den = reduce_sum(num, d, keep_dims=True)
    return fdiv(num, den)


def cdiv(x, div):
    return binary("floordiv", binary("sub", binary("add", x, div), 1), div)


def swizzle2d(i, j, size_i, size_j, size_g):
    ij = binary("add", binary("mul", i, size_j), j)
    size_gj = binary("mul", size_g, size_j)
    group_id = binary("floordiv", ij, size_gj)
    off_i = binary("mul", group_id, size_g)
    size_g = minimum(binary("sub", size_i, off_i), size_g)
    ij = binary("mod", ij, size_gj)
    new_i = binary("add", off_i, binary("mod", ij, size_g))
    new_j = binary("floordiv", ij, size_g)
    return new_i, new_j
