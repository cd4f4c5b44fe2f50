"""Python builtins inside a kernel, as Triton's code generator resolves them.

Triton's ``CodeGenerator.builtin_namespace`` holds ``len, list, range, float, int, isinstance, getattr, hasattr``,
``print`` (-> ``tl.device_print``) and ``min`` / ``max`` (-> ``tl.core.builtin_min`` / ``builtin_max``): on
constexprs they are Python's ``min`` / ``max``; with a tensor among the arguments (a per-program scalar such as
``num_pid_m - first_pid_m``, or a tile) they fold ``tl.minimum`` / ``tl.maximum`` over the arguments (left to
right, ``propagate_nan=NONE``; a tile result is accepted with a deprecation warning).  Every other builtin name
is undefined in a kernel: ``abs(x)`` / ``round(x)`` / ``pow`` / ``sum`` ... fail to compile with
``NameError('abs is not defined')``; gpusim raises the same error at the call, naming what to write instead.
"""
from __future__ import annotations

import builtins
import math

from ..errors import CompileError
from ._core import fail, tensor, unwrap
from ._ops_math import maximum, minimum


def _fold(args, propagate_nan, is_max: bool):
    name = "max" if is_max else "min"
    args = tuple(unwrap(a) for a in args)
    if not any(isinstance(a, tensor) for a in args):
        if propagate_nan is not None:
            fail(CompileError, f"propagate_nan is not supported on builtin {name}")
        flat = args[0] if len(args) == 1 else args
        if any(isinstance(a, float) and (math.isnan(a) or (a == 0.0 and math.copysign(1.0, a) < 0))
               for a in (flat if isinstance(flat, (tuple, list)) else ())):
            fail(CompileError, f"builtin {name} of constexprs: NaN and -0.0 are not allowed")
        return (builtins.max if is_max else builtins.min)(*args)
    if len(args) < 2:
        fail(CompileError, f"{name} requires at least 2 values")
    f = maximum if is_max else minimum
    acc = args[0]
    for a in args[1:]:
        acc = f(acc, a, propagate_nan)
    return acc


def builtin_min(*args, propagate_nan=None):
    """``min(...)`` in a kernel (``triton.language.core.builtin_min``)."""
    return _fold(args, propagate_nan, False)


def builtin_max(*args, propagate_nan=None):
    """``max(...)`` in a kernel (``triton.language.core.builtin_max``)."""
    return _fold(args, propagate_nan, True)


#: builtins a kernel might reach for that Triton does not define, and what to write instead
_UNDEFINED = {
    "abs": "tl.abs(x)",
    "round": "tl.extra.libdevice.rint(x) (round half to even) or libdevice.round(x) (half away from zero)",
    "pow": "tl.extra.libdevice.pow(x, y)",
    "sum": "tl.sum(x, axis)",
    "any": "tl.reduce_or / tl.max(x != 0, axis)",
    "all": "tl.min(x != 0, axis)",
    "divmod": "x // y and x % y",
    "sorted": "tl.sort(x)",
}


class _Undefined:
    """A builtin Triton does not define in kernels: calling it is the compile error Triton reports."""

    def __init__(self, name: str, instead: str):
        self.name = name
        self.instead = instead

    def __call__(self, *args, **kwargs):
        fail(CompileError, f"NameError: {self.name} is not defined (Triton kernels can only call the builtins "
                           f"len, list, range, float, int, isinstance, getattr, hasattr, print, min and max); "
                           f"write {self.instead}")


def install(g: dict) -> None:
    """Put the kernel-side builtins into a rewritten kernel's globals (unless the module defines the name)."""
    if "min" not in g:
        g["min"] = builtin_min
    if "max" not in g:
        g["max"] = builtin_max
    for name, instead in _UNDEFINED.items():
        if name not in g:
            g[name] = _Undefined(name, instead)


__all__ = ["builtin_min", "builtin_max", "install"]
