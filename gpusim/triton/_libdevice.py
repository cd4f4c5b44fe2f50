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
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "exp10": lambda v: np.power(v.dtype.type(10), v),
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


def namespace() -> types.SimpleNamespace:
    ns = {n: _unary(n, f) for n, f in _UNARY.items()}
    ns.update({n: _binary(n, f) for n, f in _BINARY.items()})
    ns.update({n: _predicate(n, f) for n, f in _PREDICATES.items()})
    ns.update(exp=M.exp, exp2=M.exp2, log=M.log, log2=M.log2, sin=M.sin, cos=M.cos, sqrt=M.sqrt, rsqrt=M.rsqrt,
              erf=M.erf, floor=M.floor, ceil=M.ceil, abs=M.abs_, fabs=M.abs_, fma=M.fma, div_rn=M.div_rn,
              sqrt_rn=M.sqrt_rn, fast_dividef=M.fdiv, fma_rn=M.fma, mulhi=M.umulhi)
    return types.SimpleNamespace(**ns)


__all__ = ["namespace"]
