"""``triton.language.extra.libdevice`` (= ``extra.cuda.libdevice``): CUDA's libdevice math functions.

Values: numpy in the input's precision (fp32 -> ``__nv_<name>f``, fp64 -> ``__nv_<name>``; other dtypes are
rejected as Triton's dispatch rejects them), so results agree with the GPU to a few ulps, not bit for bit (the
``fast_*`` approximations are computed exactly).  Cost: per element, the instruction mix ptxas emits for the
function (``costs.LIBDEVICE``, counted from the SASS of one-call kernels compiled by Triton 3.6 for sm_90).
Functions ``tl`` itself provides keep its lowering (``exp``, ``log``, ``sin``, ``cos``, ``sqrt``, ``rsqrt``,
``erf``, ``floor``, ``ceil``, ``fma``, ``div_rn``, ``sqrt_rn``, ``abs``, ``fabs``).
"""
from __future__ import annotations

import math
import types

import numpy as np

from ..errors import CompileError
from . import _core as C
from . import _ops_math as M
from ._core import fail, tensor, to_tensor, unwrap, vshape


def _lgamma(v):
    return np.vectorize(math.lgamma, otypes=[v.dtype])(v) if v.size else v


def _tgamma(v):
    def g(x):
        try:
            return math.gamma(x)
        except (ValueError, OverflowError):
            return math.inf if x >= 0 or x == int(x) else math.nan
    return np.vectorize(g, otypes=[v.dtype])(v) if v.size else v


def _erfinv(v):
    """Inverse error function: Giles' single-precision approximation, then two Newton steps in float64."""
    x = v.astype(np.float64)
    w = -np.log((1.0 - x) * (1.0 + x))
    small = w < 5.0
    ws = w - 2.5
    p1 = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p1 = c + p1 * ws
    wl = np.sqrt(np.maximum(w, 0)) - 3.0
    p2 = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p2 = c + p2 * wl
    y = np.where(small, p1, p2) * x
    erf = np.vectorize(math.erf, otypes=[np.float64])
    for _ in range(2):
        err = erf(y) - x
        y = y - err / (2.0 / math.sqrt(math.pi) * np.exp(-y * y))
    y = np.where(np.abs(x) == 1, np.sign(x) * np.inf, y)
    return y.astype(v.dtype)


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


_UNARY = {
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "fast_tanhf": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "exp10": lambda v: np.power(v.dtype.type(10), v),
    "expm1": np.expm1, "log10": np.log10, "log1p": np.log1p, "cbrt": np.cbrt, "tan": np.tan,
    "erfc": lambda v: (1.0 - M.erf_np(v.astype(np.float64))).astype(v.dtype), "erfinv": _erfinv,
    "trunc": np.trunc, "round": _round_half_away, "rint": np.rint, "nearbyint": np.rint,
    "sinpi": lambda v: np.sin(np.pi * v.astype(np.float64)).astype(v.dtype),
    "cospi": lambda v: np.cos(np.pi * v.astype(np.float64)).astype(v.dtype),
    "lgamma": _lgamma, "tgamma": _tgamma, "rcbrt": lambda v: 1 / np.cbrt(v),
    "fast_expf": np.exp, "fast_logf": np.log, "fast_log2f": np.log2, "fast_log10f": np.log10,
    "fast_exp10f": lambda v: np.power(v.dtype.type(10), v), "fast_tanf": np.tan, "fast_sinf": np.sin,
    "fast_cosf": np.cos, "saturatef": lambda v: np.clip(v, 0, 1),
}
_BINARY = {"atan2": np.arctan2, "pow": np.power, "fmod": np.fmod, "hypot": np.hypot, "fast_powf": np.power,
           "fast_dividef": np.divide, "copysign": np.copysign, "fdim": lambda a, b: np.maximum(a - b, 0),
           "remainder": np.remainder, "nextafter": np.nextafter, "fmin": np.fmin, "fmax": np.fmax}
_PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "signbit": np.signbit, "finitef": np.isfinite,
               "isfinited": np.isfinite}


def _check(name, xs):
    for x in xs:
        if x.dtype.name not in ("fp32", "fp64"):
            fail(CompileError, f"libdevice.{name}: no libdevice function for {x.dtype.name} arguments (fp32 or fp64; "
                               f"cast with .to(tl.float32))")


def _unary(name, f):
    def fn(arg0, _semantic=None):
        x = to_tensor(unwrap(arg0))
        _check(name, [x])
        return C.unary_np(x, f, "libdevice:" + name)
    fn.__name__ = name
    return fn


def _binary(name, f):
    def fn(arg0, arg1, _semantic=None):
        a, b = unwrap(arg0), unwrap(arg1)
        ta = a if isinstance(a, tensor) else to_tensor(a)
        tb = b if isinstance(b, tensor) else to_tensor(b)
        ct = C.computation_type(ta.dtype, C._is_scalar_py(a), tb.dtype, C._is_scalar_py(b), False)
        _check(name, [tensor(ta.v, ct, ta.shape)])
        shape = C.broadcast_shapes(ta.shape, tb.shape)
        with np.errstate(all="ignore"):
            v = f(vshape(ta, shape).astype(ct.np, copy=False), vshape(tb, shape).astype(ct.np, copy=False))
        out = tensor(np.asarray(v, ct.np), ct, shape)
        st = C.ST
        if st is not None and st.rec is not None:
            C._prov2(out, ta, tb)
            st.rec.alu(out, (ta, tb), "libdevice:" + name)
        return out
    fn.__name__ = name
    return fn


def _predicate(name, f):
    def fn(arg0, _semantic=None):
        x = to_tensor(unwrap(arg0))
        _check(name, [x])
        return C.unary_np(x, f, "fcmp", out_dt=C.int32)
    fn.__name__ = name
    return fn


# ---- the rest of libdevice: directed rounding, conversions, bit casts, integer intrinsics, special functions ------

_F32_NEXT = {"rd": -np.inf, "ru": np.inf}


def _to_f32(r64: np.ndarray, mode: str) -> np.ndarray:
    """A float64 value rounded to float32 in ``mode`` (rn nearest even, rz toward zero, rd down, ru up)."""
    n = r64.astype(np.float32)
    if mode == "rn":
        return n
    back = n.astype(np.float64)
    if mode == "rz":
        away = np.abs(back) > np.abs(r64)
        return np.where(away, np.nextafter(n, np.float32(0)), n)
    wrong = back > r64 if mode == "rd" else back < r64
    return np.where(wrong, np.nextafter(n, np.float32(_F32_NEXT[mode])), n)


def _rounded(mode: str, f):
    """fp32 arithmetic in a rounding mode: computed in float64 (exact for add/sub/mul, within far less than an fp32
    ulp for div/sqrt/rcp/fma), then rounded to float32 in the mode; fp64 arguments round to nearest."""
    def g(*vs):
        if vs[0].dtype == np.float32:
            return _to_f32(f(*[v.astype(np.float64) for v in vs]), mode)
        return f(*vs)
    return g


_RND = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
_INT_RANGE = {np.dtype(t): (np.iinfo(t).min, np.iinfo(t).max) for t in (np.int32, np.uint32, np.int64, np.uint64)}


def _to_int(mode: str, t):
    """float -> integer in a rounding mode, saturated to the type's range, NaN -> 0 (cvt.rni/rzi/rmi/rpi.sat)."""
    t = np.dtype(t)

    def g(v):
        lo, hi = _INT_RANGE[t]
        x = _RND[mode](v.astype(np.float64))
        x = np.where(np.isnan(x), 0, np.clip(x, float(lo), float(hi)))
        big = x >= float(hi)                     # float(hi) rounds up past the range for 64-bit types
        return np.where(big, hi, x.astype(t) if t.kind == "i" else np.maximum(x, 0).astype(t)).astype(t)
    return g


def _int_to_f32(mode: str):
    def g(v):
        r = v.astype(np.float64)
        if v.dtype.itemsize == 8:                # 64-bit integers: float64 is not exact past 2^53; one correction
            err = v - r.astype(v.dtype)
            r = r + err.astype(np.float64)
        return _to_f32(r, mode)
    return g


def _bits(v, t):
    return np.ascontiguousarray(v).view(t)


def _bessel(order_fn):
    return lambda v: order_fn(v.astype(np.float64)).astype(v.dtype)


def _jn_int(n: int, x: np.ndarray) -> np.ndarray:
    """Bessel J_n by its integral (1/pi) int_0^pi cos(n t - x sin t) dt: the trapezoid rule on a periodic
    integrand converges geometrically (256 points: float64 accuracy for |x| + n below ~150)."""
    t = np.linspace(0.0, np.pi, 257)
    w = np.full(257, np.pi / 256)
    w[[0, -1]] /= 2
    return np.tensordot(np.cos(n * t - x[..., None] * np.sin(t)), w, axes=([-1], [0])) / np.pi


def _ilogb(v):
    m, e = np.frexp(v.astype(np.float64))
    out = (e - 1).astype(np.int32)
    return np.where(v == 0, np.int32(-2147483648), np.where(np.isinf(v), np.int32(2147483647),
                    np.where(np.isnan(v), np.int32(-2147483648), out)))


_MORE_UNARY = {                                      # float -> float, same precision
    "rcp_rn": _rounded("rn", lambda x: 1.0 / x), "rcp_rz": _rounded("rz", lambda x: 1.0 / x),
    "rcp_rd": _rounded("rd", lambda x: 1.0 / x), "rcp_ru": _rounded("ru", lambda x: 1.0 / x),
    "sqrt_rz": _rounded("rz", np.sqrt), "sqrt_rd": _rounded("rd", np.sqrt), "sqrt_ru": _rounded("ru", np.sqrt),
    "rsqrt_rn": _rounded("rn", lambda x: 1.0 / np.sqrt(x)),
    "logb": lambda v: np.where(v == 0, -np.inf, np.floor(np.log2(np.abs(v)))).astype(v.dtype),
    "normcdf": lambda v: (0.5 * (1.0 - M.erf_np(-v.astype(np.float64) / np.sqrt(2.0)))).astype(v.dtype),
    "normcdfinv": lambda v: (np.sqrt(2.0) * _erfinv(2.0 * v.astype(np.float64) - 1.0)).astype(v.dtype),
    "erfcinv": lambda v: _erfinv((1.0 - v.astype(np.float64))).astype(v.dtype),
    "erfcx": lambda v: (np.exp(v.astype(np.float64) ** 2) * (1.0 - M.erf_np(v.astype(np.float64)))).astype(v.dtype),
    "cyl_bessel_i0": lambda v: np.i0(v.astype(np.float64)).astype(v.dtype),
    "cyl_bessel_i1": lambda v: (np.tensordot(np.exp(v.astype(np.float64)[..., None] * np.cos(
        np.linspace(0, np.pi, 257))) * np.cos(np.linspace(0, np.pi, 257)),
        np.r_[0.5, np.ones(255), 0.5] * np.pi / 256, axes=([-1], [0])) / np.pi).astype(v.dtype),
    "j0": _bessel(lambda x: _jn_int(0, x)), "j1": _bessel(lambda x: _jn_int(1, x)),
    "rcp64h": lambda v: (1.0 / v.astype(np.float64)).astype(v.dtype),
}
_MORE_BINARY = {
    **{f"{op}_{m}": _rounded(m, f) for op, f in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                                  ("div", np.true_divide)) for m in ("rn", "rz", "rd", "ru")
       if f"{op}_{m}" != "div_rn"},
    "rhypot": lambda a, b: 1.0 / np.hypot(a, b),
}
_MORE_TERNARY = {f"fma_{m}": _rounded(m, lambda a, b, c: a * b + c) for m in ("rz", "rd", "ru")}
_NORMS = {"norm3d": (3, False), "norm4d": (4, False), "rnorm3d": (3, True), "rnorm4d": (4, True)}


def _typed(name, f, kinds, out=None, nargs=1):
    """A libdevice function with its own argument types (``kinds``: accepted Triton dtype names) and result type
    (``out``: a dtype, or None for the argument's)."""
    def fn(*args, _semantic=None):
        if len(args) != nargs:
            fail(CompileError, f"libdevice.{name} takes {nargs} argument(s), got {len(args)}")
        xs = [to_tensor(unwrap(a)) for a in args]
        for x in xs:
            if x.dtype.name not in kinds:
                fail(CompileError, f"libdevice.{name}: no libdevice function for {x.dtype.name} arguments "
                                   f"({' or '.join(kinds)})")
        shape = C.broadcast_many(x.shape for x in xs)
        dt = out or xs[0].dtype
        with np.errstate(all="ignore"):
            v = f(*[vshape(x, shape) for x in xs])
        res = tensor(np.asarray(v).astype(dt.np, copy=False), dt, shape)
        st = C.ST
        if st is not None and st.rec is not None:
            st.rec.alu(res, tuple(xs), "libdevice:" + name)
        return res
    fn.__name__ = name
    return fn


def _more() -> dict:
    F, F32, F64 = ("fp32", "fp64"), ("fp32",), ("fp64",)
    I32, U32, I64, U64 = ("int32",), ("uint32",), ("int64",), ("uint64",)
    INTS32, INTS64 = ("int32", "uint32"), ("int64", "uint64")
    ns = {n: _unary(n, f) for n, f in _MORE_UNARY.items()}
    ns.update({n: _binary(n, f) for n, f in _MORE_BINARY.items()})
    ns.update({n: _typed(n, f, F, nargs=3) for n, f in _MORE_TERNARY.items()})
    for n, (k, inv) in _NORMS.items():
        ns[n] = _typed(n, (lambda inv_: lambda *v: (1.0 / np.sqrt(sum(x.astype(np.float64) ** 2 for x in v)) if inv_
                                                    else np.sqrt(sum(x.astype(np.float64) ** 2 for x in v))))(inv),
                       F, nargs=k)
    for m in ("rn", "rz", "rd", "ru"):
        for src, kinds in (("float", F32), ("double", F64)):
            ns[f"{src}2int_{m}"] = _typed(f"{src}2int_{m}", _to_int(m, np.int32), kinds, C.int32)
            ns[f"{src}2uint_{m}"] = _typed(f"{src}2uint_{m}", _to_int(m, np.uint32), kinds, C.uint32)
            ns[f"{src}2ll_{m}"] = _typed(f"{src}2ll_{m}", _to_int(m, np.int64), kinds, C.int64)
            ns[f"{src}2ull_{m}"] = _typed(f"{src}2ull_{m}", _to_int(m, np.uint64), kinds, C.uint64)
        ns[f"double2float_{m}"] = _typed(f"double2float_{m}", lambda v, m_=m: _to_f32(v, m_), F64, C.float32)
        for src, kinds in (("int", I32), ("uint", U32), ("ll", I64), ("ull", U64)):
            ns[f"{src}2float_{m}"] = _typed(f"{src}2float_{m}", _int_to_f32(m), kinds, C.float32)
        for src, kinds in (("ll", I64), ("ull", U64)):
            ns[f"{src}2double_{m}"] = _typed(f"{src}2double_{m}", lambda v: v.astype(np.float64), kinds, C.float64)
    for src, kinds in (("int", I32), ("uint", U32)):
        ns[f"{src}2double_rn"] = _typed(f"{src}2double_rn", lambda v: v.astype(np.float64), kinds, C.float64)
    ns.update(
        float_as_int=_typed("float_as_int", lambda v: _bits(v.astype(np.float32), np.int32), F32, C.int32),
        float_as_uint=_typed("float_as_uint", lambda v: _bits(v.astype(np.float32), np.uint32), F32, C.uint32),
        int_as_float=_typed("int_as_float", lambda v: _bits(v.astype(np.int32), np.float32), I32, C.float32),
        uint_as_float=_typed("uint_as_float", lambda v: _bits(v.astype(np.uint32), np.float32), U32, C.float32),
        double_as_longlong=_typed("double_as_longlong", lambda v: _bits(v, np.int64), F64, C.int64),
        longlong_as_double=_typed("longlong_as_double", lambda v: _bits(v.astype(np.int64), np.float64), I64,
                                  C.float64),
        double2hiint=_typed("double2hiint", lambda v: (_bits(v, np.int64) >> 32).astype(np.int32), F64, C.int32),
        double2loint=_typed("double2loint", lambda v: (_bits(v, np.int64) & 0xFFFFFFFF).astype(np.uint32)
                            .view(np.int32), F64, C.int32),
        hiloint2double=_typed("hiloint2double", lambda h, lo: _bits((h.astype(np.int64) << 32)
                                                                     | (lo.astype(np.int64) & 0xFFFFFFFF), np.float64),
                              I32, C.float64, nargs=2),
        llrint=_typed("llrint", _to_int("rn", np.int64), F, C.int64),
        llround=_typed("llround", lambda v: _to_int("rz", np.int64)(_round_half_away(v)), F, C.int64),
        ilogb=_typed("ilogb", _ilogb, F, C.int32),
        ldexp=_typed("ldexp", lambda x, e: x * np.exp2(e.astype(np.float64)).astype(x.dtype), F + I32, nargs=2),
        scalbn=_typed("scalbn", lambda x, e: x * np.exp2(e.astype(np.float64)).astype(x.dtype), F + I32, nargs=2),
        jn=_typed("jn", lambda n, x: np.stack([_jn_int(int(k), np.asarray(xx, np.float64))
                                               for k, xx in zip(np.ravel(np.broadcast_to(n, x.shape)), np.ravel(x))]
                                              ).reshape(x.shape).astype(x.dtype) if x.size else x,
                  I32 + F, nargs=2),
        popc=_typed("popc", lambda v: np.bitwise_count(v.view(np.uint32 if v.itemsize == 4 else np.uint64))
                    .astype(np.int32), INTS32 + INTS64, C.int32),
        clz=_typed("clz", _clz, INTS32 + INTS64, C.int32),
        brev=_typed("brev", _brev, INTS32 + INTS64),
        ffs=_typed("ffs", _ffs, INTS32 + INTS64, C.int32),
        mul24=_typed("mul24", lambda a, b: (_sext24(a) * _sext24(b)).astype(a.dtype), INTS32, nargs=2),
        sad=_typed("sad", lambda a, b, c: (np.abs(a.astype(np.int64) - b.astype(np.int64)) + c).astype(c.dtype),
                   INTS32, nargs=3),
        hadd=_typed("hadd", lambda a, b: ((a.astype(np.int64) + b.astype(np.int64)) >> 1).astype(a.dtype), INTS32,
                    nargs=2),
        rhadd=_typed("rhadd", lambda a, b: ((a.astype(np.int64) + b.astype(np.int64) + 1) >> 1).astype(a.dtype),
                     INTS32, nargs=2),
        byte_perm=_typed("byte_perm", _byte_perm, INTS32, nargs=3),
    )
    return ns


def _sext24(v):
    x = v.astype(np.int64) & 0xFFFFFF
    return np.where(x & 0x800000, x - 0x1000000, x) if v.dtype.kind == "i" else x


def _clz(v):
    bits = v.dtype.itemsize * 8
    u = v.view(np.uint32 if bits == 32 else np.uint64).astype(np.uint64)
    for sh in (1, 2, 4, 8, 16, 32):
        u = u | (u >> np.uint64(sh))
    return (bits - np.bitwise_count(u).astype(np.int64)).astype(np.int32)


def _brev(v):
    bits = v.dtype.itemsize * 8
    u = v.view(np.uint32 if bits == 32 else np.uint64).astype(np.uint64)
    r = np.zeros_like(u)
    for i in range(bits):
        r |= ((u >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
    return r.astype(np.uint32 if bits == 32 else np.uint64).view(v.dtype)


def _ffs(v):
    u = v.view(np.uint32 if v.dtype.itemsize == 4 else np.uint64).astype(np.uint64)
    low = u & (~u + np.uint64(1))
    return np.where(u == 0, 0, np.bitwise_count(low - np.uint64(1)).astype(np.int64) + 1).astype(np.int32)


def _byte_perm(x, y, s):
    """__byte_perm(x, y, s): result byte i is byte s[4i..4i+2] of the 8-byte value y:x."""
    src = (y.astype(np.uint64).view(np.uint64) & 0xFFFFFFFF) << np.uint64(32) | (x.astype(np.uint64) & 0xFFFFFFFF)
    out = np.zeros(np.broadcast(x, y, s).shape, np.uint64)
    for i in range(4):
        sel = (s.astype(np.uint64) >> np.uint64(4 * i)) & np.uint64(7)
        out |= ((src >> (sel * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * i)
    return out.astype(np.uint32).view(x.dtype) if x.dtype.itemsize == 4 else out.astype(x.dtype)


#: libdevice functions gpusim does not execute (Bessel functions of the second kind): refused by name
_UNSUPPORTED = ("y0", "y1", "yn")


def namespace() -> types.SimpleNamespace:
    ns = {n: _unary(n, f) for n, f in _UNARY.items()}
    ns.update({n: _binary(n, f) for n, f in _BINARY.items()})
    ns.update({n: _predicate(n, f) for n, f in _PREDICATES.items()})
    ns.update(exp=M.exp, exp2=M.exp2, log=M.log, log2=M.log2, sin=M.sin, cos=M.cos, sqrt=M.sqrt, rsqrt=M.rsqrt,
              erf=M.erf, floor=M.floor, ceil=M.ceil, abs=M.abs_, fabs=M.abs_, fma=M.fma, div_rn=M.div_rn,
              sqrt_rn=M.sqrt_rn, fast_dividef=M.fdiv, fma_rn=M.fma, mulhi=M.umulhi)
    ns.update(_more())
    for n in _UNSUPPORTED:
        ns[n] = _refused(n)
    for n, f in ns.items():
        if getattr(f, "__module__", "") == __name__:
            f._gpusim_libdevice = n          # the real compiler's rebinding finds Triton's libdevice.<n> by it
    return types.SimpleNamespace(**ns)


def _refused(name):
    def fn(*args, _semantic=None):
        fail(CompileError, f"libdevice.{name} (a Bessel function of the second kind) is not executed by gpusim")
    fn.__name__ = name
    return fn


__all__ = ["namespace"]
