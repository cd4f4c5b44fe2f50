"""``numba.cuda.libdevice`` (``from numba.cuda import libdevice``): CUDA's libdevice functions called by name in a
kernel.  Each name is bound to the Python ``math`` function (or builtin) the kernel compiler already runs and
costs -- ``sin``/``sinf`` and the ``fast_`` variants to ``math.sin``, ``fmaxf`` to ``max`` -- so a kernel using
them executes with numba's types (``sinf`` of a float32 is a float32).  The cost is that of the ``math``
function (the approximate ``fast_`` paths are not costed apart).  A name not listed here is a compile error at
its line (``module 'gpusim.cuda.libdevice' has no attribute ...``)."""
from __future__ import annotations

import math as _math

_MATH = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "copysign", "cos", "cosh", "erf",
         "erfc", "exp", "exp2", "expm1", "fabs", "floor", "fmod", "hypot", "lgamma", "log", "log10", "log1p",
         "log2", "pow", "sin", "sinh", "sqrt", "tan", "tanh", "tgamma", "trunc")
_ALIAS = {"exp2": "exp2", "tgamma": "gamma", "log2": "log2"}

for _n in _MATH:
    _f = getattr(_math, _ALIAS.get(_n, _n), None)
    if _f is None:
        continue
    globals()[_n] = _f                       # double precision: __nv_sin
    globals()[_n + "f"] = _f                 # single precision: __nv_sinf
    globals()["fast_" + _n + "f"] = _f       # __nv_fast_sinf (approximate on the GPU)

abs = fabs = fabsf = _math.fabs              # noqa: A001
fmax = fmaxf = max
fmin = fminf = min
llabs = _math.fabs

__all__ = sorted(k for k in globals() if not k.startswith("_") and k not in ("annotations",))
