"""``tl.rand`` / ``tl.randint`` / ``tl.randint4x`` / ``tl.randn`` / ``tl.rand4x`` / ``tl.randn4x`` / ``tl.philox``:
Triton's counter-based generator (``triton/language/random.py``), bit for bit.

Philox 4x32 (or 4x64 for 64-bit counters), ``n_rounds`` rounds (10 by default), key = the seed's low and high 32
bits; each round ``c0' = umulhi(B, c2) ^ c1 ^ k0``, ``c2' = umulhi(A, c0) ^ c3 ^ k1``, ``c1' = B * c2``,
``c3' = A * c0`` (wrapping), then the keys advance by the Weyl constants.  ``randint4x(seed, offset)`` runs it on
counters (offset low 32 bits, offset high 32 bits or 0, 0, 0).  The Philox rounds are computed here in numpy, as
uint32 (uint64) arrays over all programs at once, and lowered as one op (``costs.PHILOX_*``, counted from the
SASS of Triton 3.6 for sm_90); the float conversions (``uint_to_uniform_float``: bitcast to int32, ``x < 0 ?
-x - 1 : x``, times 4.6566127342e-10 in fp32) and Box-Muller (``randn``: ``sqrt(-2 log max(1e-7, u1)) *
cos(2 pi u2)``) are the same ``tl`` operations Triton's library writes, so their values and costs are the ops'.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from . import _core as C
from ._core import binary, cast, fail, tensor, to_tensor, unwrap, vshape
from ._ops_math import cos, log, maximum, sin, sqrt, where

N_ROUNDS_DEFAULT = 10
_K32 = (0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57)                     # key A, key B, round A, round B
_K64 = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157)


def _mulhi64(a: np.ndarray, b: int) -> np.ndarray:
    """High 64 bits of the 128-bit products of uint64 ``a`` and the constant ``b``."""
    m = np.uint64(0xFFFFFFFF)
    s = np.uint64(32)
    a0, a1 = a & m, a >> s
    b0, b1 = np.uint64(b & 0xFFFFFFFF), np.uint64(b >> 32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s) + (p01 & m) + (p10 & m)
    return p11 + (p01 >> s) + (p10 >> s) + (mid >> s)


def philox_np(c0, c1, c2, c3, k0, k1, n_rounds: int, bits: int):
    """Philox on uint32 (``bits`` 32) or uint64 arrays (broadcast together); returns the four counters."""
    with np.errstate(over="ignore"):
        if bits == 32:
            KA, KB, RA, RB = (np.uint32(x) for x in _K32)
            A64, B64 = np.uint64(_K32[2]), np.uint64(_K32[3])
            s = np.uint64(32)
            for _ in range(n_rounds):
                p0 = A64 * c0.astype(np.uint64)
                p2 = B64 * c2.astype(np.uint64)
                n0 = (p2 >> s).astype(np.uint32) ^ c1 ^ k0
                n2 = (p0 >> s).astype(np.uint32) ^ c3 ^ k1
                c1, c3 = p2.astype(np.uint32), p0.astype(np.uint32)
                c0, c2 = n0, n2
                k0 = k0 + KA
                k1 = k1 + KB
        else:
            KA, KB, RA, RB = (np.uint64(x) for x in _K64)
            for _ in range(n_rounds):
                n0 = _mulhi64(c2, _K64[3]) ^ c1 ^ k0
                n2 = _mulhi64(c0, _K64[2]) ^ c3 ^ k1
                c1, c3 = RB * c2, RA * c0
                c0, c2 = n0, n2
                k0 = k0 + KA
                k1 = k1 + KB
    return c0, c1, c2, c3


def _bitcast_uint(t: tensor, udt) -> tensor:
    if t.dtype == udt:
        return t
    return cast(t, udt, bitcast=t.dtype.primitive_bitwidth == udt.primitive_bitwidth)


def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    n_rounds = int(unwrap(n_rounds))
    seed = to_tensor(unwrap(seed))
    if not seed.dtype.is_int():
        fail(CompileError, "tl.philox: the seed must be an integer")
    cs = [to_tensor(unwrap(c)) for c in (c0, c1, c2, c3)]
    bits = cs[0].dtype.primitive_bitwidth
    if bits not in (32, 64):
        fail(CompileError, f"tl.philox: counters of {bits} bits are not supported (32 or 64)")
    udt = C.uint32 if bits == 32 else C.uint64
    cs = [_bitcast_uint(c, udt) for c in cs]
    shape = cs[0].shape
    for c in cs[1:]:
        shape = C.broadcast_shapes(shape, c.shape)
    sv = seed.v.astype(np.int64).astype(np.uint64)
    if bits == 32:
        k0 = (sv & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        k1 = ((sv >> np.uint64(32)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    else:
        k0, k1 = sv, np.zeros_like(sv)
    kshape = (k0.shape[0],) + (1,) * len(shape)
    vs = [np.broadcast_to(vshape(c, shape), (max(c.v.shape[0] for c in cs),) + shape) for c in cs]
    outs_v = philox_np(*vs, k0.reshape(kshape), k1.reshape(kshape), n_rounds, bits)
    outs = [tensor(np.ascontiguousarray(v), udt, shape) for v in outs_v]
    C.note_numel(shape)
    st = C.ST
    if st is not None and st.rec is not None:
        st.rec.philox(outs, cs + [seed], n_rounds)
    return tuple(outs)


def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    offset = to_tensor(unwrap(offset))
    lo = cast(offset, C.uint32)
    zero = binary("mul", lo, 0)
    hi = cast(binary("shr", offset, 32), C.uint32) if offset.dtype.primitive_bitwidth > 32 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    return randint4x(seed, offset, n_rounds)[0]


def uint_to_uniform_float(x):
    x = to_tensor(unwrap(x))
    if x.dtype in (C.uint32, C.int32):
        x = cast(x, C.int32, bitcast=True)
        scale = 4.6566127342e-10
    elif x.dtype in (C.uint64, C.int64):
        x = cast(x, C.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    else:
        fail(CompileError, f"uint_to_uniform_float expects 32- or 64-bit integers, not {x.dtype}")
    x = where(binary("lt", x, 0), binary("sub", -x, 1), x)
    return binary("mul", x, scale)


def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT):
    return tuple(uint_to_uniform_float(i) for i in randint4x(seed, offsets, n_rounds))


def pair_uniform_to_normal(u1, u2):
    u1 = maximum(1.0e-7, u1)
    th = binary("mul", 6.283185307179586, u2)
    r = sqrt(binary("mul", -2.0, log(u1)))
    return binary("mul", r, cos(th)), binary("mul", r, sin(th))


def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1, u2 = uint_to_uniform_float(i1), uint_to_uniform_float(i2)
    # Triton's randn uses only the cosine half of Box-Muller (the sine is dead code the compiler removes)
    u1 = maximum(1.0e-7, u1)
    th = binary("mul", 6.283185307179586, u2)
    r = sqrt(binary("mul", -2.0, log(u1)))
    return binary("mul", r, cos(th))


def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
