"""``tl.dot_scaled``: the product of two blocks in microscaling formats, as Triton 3.6 builds it for a GPU without
native microscaled MMAs (the H100): each operand upcast to bf16 (fp4 ``e2m1`` unpacked from its uint8 pairs, the
first element in the low nibble; fp8 ``e4m3`` / ``e5m2``; ``bf16``; ``fp16`` rounded to bf16), multiplied by its
scale (``e8m0`` uint8 per 32 elements along K, or an ``e4m3`` scale per 16), and handed to a bf16 ``tl.dot`` with
fp32 accumulation.  The upcasts are traced as the element-wise integer and float ops they are, so the cost follows.
"""
from __future__ import annotations

from ..errors import CompileError, UnsupportedConstruct
from . import _core as C
from ._core import bfloat16, fail, float32, to_tensor, unwrap
from ._dtypes import float8e4nv, float8e5, float16, int32, uint8, uint16, uint32
from ._ops_dot import dot
from ._ops_math import where
from ._ops_tile import join

_FP_TYPES = {"e5m2": float8e5, "e4m3": float8e4nv, "bf16": bfloat16, "fp16": float16}
_ALLOWED = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")


def _check(cond, msg):
    if not cond:
        fail(CompileError, msg)


def _as_format(x, fmt):
    """Triton's ``_bitcast_to_fp_type``: fp4 stays packed uint8, others become their float type."""
    ty = _FP_TYPES.get(fmt)
    if ty is None:
        _check(x.dtype is uint8, f"e2m1 format must be packed as uint8. Got {x.dtype}")
        return x
    if x.dtype is ty:
        return x
    unsigned = {"e5m2": uint8, "e4m3": uint8, "bf16": uint16, "fp16": uint16}[fmt]
    _check(x.dtype is unsigned, f"Unexpected dtype for {fmt}. Got {x.dtype}")
    return x.to(ty, bitcast=True)


def _fp4_values(n):
    """fp32 values of e2m1 nibbles (uint32 0..15): sign bit 3, exponent bits 1-2 (bias 1), mantissa bit 0."""
    s = (n >> 3) & 1
    e = (n >> 1) & 3
    m = n & 1
    normal = ((e + 126) << 23) | (m << 22)
    bits = where(e == 0, m * (126 << 23), normal) | (s << 31)
    return bits.to(float32, bitcast=True)


def _unpack_fp4(x, k_pack, is_lhs):
    """The [M, K] (lhs) or [K, N] (rhs) fp32 values of a uint8 block packed two per byte along K (``k_pack``) or
    along M / N."""
    n = x.to(uint32)
    lo, hi = _fp4_values(n & 15), _fp4_values(n >> 4)
    pair = join(lo, hi)                          # [a, b, 2]: the low nibble first
    a, b = x.shape
    if is_lhs == k_pack:                         # lhs along K, rhs along N: pairs run along the last dimension
        return pair.reshape(a, 2 * b)
    return pair.permute(0, 2, 1).reshape(2 * a, b)


def _scale_values(s):
    """fp32 factors of a scale block: e8m0 (uint8: 2^(s-127), 0xFF NaN) or e4m3."""
    if s.dtype is float8e4nv:
        return s.to(float32)
    _check(s.dtype is uint8, f"dot_scaled: scales must be e8m0 (uint8) or e4m3, got {s.dtype}")
    si = s.to(int32)
    bits = where(si == 0, 1 << 22, si << 23)
    bits = where(si == 255, 0x7FC00000, bits)
    return bits.to(float32, bitcast=True)


def _scaled(v, scale, is_lhs):
    """``v`` (fp32 [M, K] or [K, N]) times its scale block ([M or N, K // group]) repeated along K, in bf16."""
    if scale is None:
        return v.to(bfloat16)
    f = _scale_values(scale)
    rows, groups = scale.shape
    k = v.shape[1] if is_lhs else v.shape[0]
    group = k // groups
    f = f.reshape(rows, groups, 1).broadcast_to(rows, groups, group).reshape(rows, k)
    if not is_lhs:
        f = f.permute(1, 0)
    return (v * f).to(bfloat16)


def _values(x, fmt, k_pack, is_lhs):
    if fmt == "e2m1":
        return _unpack_fp4(x, k_pack, is_lhs)
    return x.to(float32)


def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=float32):
    out_dtype = unwrap(out_dtype)
    acc = unwrap(acc)
    _check(out_dtype is float32, "Only float32 is supported for out_dtype at the moment")
    lhs, rhs = to_tensor(unwrap(lhs)), to_tensor(unwrap(rhs))
    lhs_scale, rhs_scale = unwrap(lhs_scale), unwrap(rhs_scale)
    lhs_format, rhs_format = str(unwrap(lhs_format)), str(unwrap(rhs_format))
    lhs_k_pack, rhs_k_pack = bool(unwrap(lhs_k_pack)), bool(unwrap(rhs_k_pack))
    _check(lhs.shape and rhs.shape, "dot_scaled: both operands must be blocks")
    rl, rr = len(lhs.shape), len(rhs.shape)
    _check(rl == rr == 2 or rl == rr == 3,
           f"Both inputs must be either 2D or 3D; (lhs: {list(lhs.shape)} vs rhs: {list(rhs.shape)})")
    _check(lhs_format in _ALLOWED, f"NYI: lhs_format {lhs_format}")
    _check(rhs_format in _ALLOWED, f"NYI: rhs_format {rhs_format}")
    lhs, rhs = _as_format(lhs, lhs_format), _as_format(rhs, rhs_format)
    _check(lhs_k_pack or lhs_format == "e2m1", "only mxfp4 inputs can be packed along a dimension different than K")
    _check(rhs_k_pack or rhs_format == "e2m1", "only mxfp4 inputs can be packed along a dimension different than K")
    if rl == 3:
        file, line = C.user_line()
        raise UnsupportedConstruct("tl.dot_scaled of 3D (batched) blocks is not supported by gpusim's Triton front "
                                   "end", file=file, line=line, kernel=C.ST.kernel_name if C.ST is not None else "")
    M, k_lhs = lhs.shape
    k_rhs, N = rhs.shape
    pa = 2 if lhs_format == "e2m1" else 1
    pb = 2 if rhs_format == "e2m1" else 1
    _check((pa * k_lhs if lhs_k_pack else k_lhs) == (pb * k_rhs if rhs_k_pack else k_rhs),
           f"Reduction dimension should pack the same number of elements; (lhs: {list(lhs.shape)} vs rhs: "
           f"{list(rhs.shape)})")
    K = pa * k_lhs if lhs_k_pack else k_lhs
    if not lhs_k_pack:
        M *= pa
    if not rhs_k_pack:
        N *= pb
    if acc is not None:
        acc = to_tensor(acc)
        _check(tuple(acc.shape) == (M, N) and acc.dtype is float32,
               f"dot_scaled: accumulator of shape {list(acc.shape)} and type {acc.dtype} does not match [{M}, {N}]")
    for s, rows, side in ((lhs_scale, M, "lhs"), (rhs_scale, N, "rhs")):
        if s is not None:
            s = to_tensor(s)
            f = 16 if s.dtype is float8e4nv else 32
            _check(tuple(s.shape) == (rows, K // f),
                   f"{side}_scale must be a tensor of shape [{rows}, {K // f}]. Got {list(s.shape)}")
    lhs_scale = None if lhs_scale is None else to_tensor(lhs_scale)
    rhs_scale = None if rhs_scale is None else to_tensor(rhs_scale)
    a = _scaled(_values(lhs, lhs_format, lhs_k_pack, True), lhs_scale, True)
    b = _scaled(_values(rhs, rhs_format, rhs_k_pack, False), rhs_scale, False)
    return dot(a, b, acc, out_dtype=float32)
