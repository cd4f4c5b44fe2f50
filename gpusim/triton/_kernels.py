"""The kernel a launch runs: a ``Spec`` of any kernel object, its rewritten function, its globals rebound to gpusim.

``resolve`` unwraps a gpusim or real Triton JITFunction, Autotuner or Heuristics wrapper (or a plain Python function)
into a ``Spec`` (signature, constexpr parameters, heuristics, the autotune config launched, ``@triton.jit`` options).
``compiled`` rewrites a kernel once (``_rewrite``), with ``build_globals``: its globals with real Triton's modules,
dtypes and JIT functions rebound to gpusim's (``_rebind``), JIT helpers called through ``_Helper``.
"""
from __future__ import annotations

import inspect
import types

from ..errors import GpusimError
from . import _builtins
from . import _control
from . import _core as C
from . import _ops_tile as _tile
from . import _rewrite
from ._autotune import wrapper_kind
from ._strict import kernel_builtins
from . import language as tl


def _is_constexpr_annotation(ann) -> bool:
    if ann is inspect.Parameter.empty or ann is None:
        return False
    if ann is C.constexpr:
        return True
    if isinstance(ann, str):
        return "constexpr" in ann
    return "constexpr" in getattr(ann, "__name__", "") or "constexpr" in repr(ann)


class Spec:
    """What a launch needs to know about a kernel function (from any front end)."""

    def __init__(self, fn, heuristics=None, config=None):
        self.fn = fn
        self.heuristics = heuristics or []       # list of {name: fn(args_dict)}
        self.config = config                     # (kwargs, num_warps, num_stages) of the chosen autotune config
        self.sig = inspect.signature(fn)
        self.params = list(self.sig.parameters.values())
        self.constexprs = {p.name for p in self.params if _is_constexpr_annotation(p.annotation)}
        self.name = fn.__name__


_COMPILED: dict = {}


def compiled(fn):
    """The rewritten kernel function (cached per source function)."""
    c = _COMPILED.get(fn)
    if c is None:
        c = _rewrite.compile_function(fn, True, build_globals)
        _COMPILED[fn] = c
    return c


class _Helper:
    """A JIT helper called from a kernel: compiled lazily with the same rewrite, then called."""

    def __init__(self, fn):
        self.fn = fn
        self._c = None
        self.__name__ = getattr(fn, "__name__", "helper")

    def __call__(self, *args, **kw):
        if self._c is None:
            c = _COMPILED.get(("helper", self.fn))
            if c is None:
                c = _rewrite.compile_function(self.fn, False, build_globals)
                _COMPILED[("helper", self.fn)] = c
            self._c = c
        return self._c(*args, **kw)


def _real_triton_kind(v):
    t = type(v)
    mod = t.__module__ or ""
    if not mod.startswith("triton"):
        kind = wrapper_kind(v)          # a library's subclass of Triton's Autotuner / JITFunction
        if kind in ("Autotuner", "Heuristics", "JITFunction", "InterpretedFunction") and \
                getattr(v, "_gpusim_frontend", None) is None:
            return kind
        return None
    return t.__name__


# the ``gpusim.triton`` package, which a kernel's ``triton`` is rebound to: the package hands itself over when it is
# imported (it imports this module, so this module cannot import it)
_PACKAGE: types.ModuleType | None = None


def register_package(package: types.ModuleType):
    global _PACKAGE
    _PACKAGE = package


def _rebind(v):
    gtriton = _PACKAGE
    if isinstance(v, types.ModuleType):
        name = v.__name__
        if name == "triton":
            return gtriton
        if name in ("triton.language", "triton.language.core", "triton.language.standard"):
            return tl
        if name == "triton.language.math":
            return tl.math
        if name.startswith("triton.language.extra"):
            return tl.extra.libdevice if "libdevice" in name else tl.extra
        return v
    kind = _real_triton_kind(v)
    if kind is not None:
        if kind in ("JITFunction", "InterpretedFunction"):
            fmod = getattr(getattr(v, "fn", None), "__module__", "") or ""
            if fmod.startswith("triton.language"):
                return tl.__dict__.get(v.fn.__name__, v)
            return _Helper(v.fn)
        if kind == "constexpr":
            return v.value
        if kind in ("dtype", "pointer_type"):
            name = getattr(v, "name", "")
            for d in C.ALL_DTYPES:
                if d.name == name:
                    return d
            return v
        return v
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
        mod = getattr(v, "__module__", "") or ""
        if mod.startswith("triton.language") and "libdevice" in mod:
            return getattr(tl.extra.libdevice, v.__name__, v)
        if mod.startswith("triton.language"):
            return tl.__dict__.get(v.__name__, v)
        return v
    if getattr(v, "_gpusim_frontend", None) == "triton" and hasattr(v, "fn"):
        inner = v
        while hasattr(inner, "fn") and not isinstance(inner, types.FunctionType):
            inner = inner.fn
        return _Helper(inner)
    if isinstance(v, C.constexpr):
        return v.value
    return v


# tl.map_elementwise calls helpers as the launcher does
_tile.LAUNCHER.update(Helper=_Helper, rebind=_rebind)


def build_globals(fn) -> dict:
    g = dict(fn.__globals__)
    code = fn.__code__
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                g[name] = cell.cell_contents
            except ValueError:
                pass
    for k in list(g.keys()):
        if k.startswith("__") and k.endswith("__"):
            continue
        g[k] = _rebind(g[k])
    g["range"] = _control.k_range
    g["__g_rt"] = _control
    g["__builtins__"] = kernel_builtins()         # Triton's builtin namespace only (see _strict)
    g["__g_locals"] = locals                      # the rewriter's snapshots of a region's variables
    if "print" not in fn.__globals__:
        g["print"] = tl.device_print
    _builtins.install(g)
    return g


def _config_tuple(c):
    return (dict(getattr(c, "kwargs", {}) or {}), getattr(c, "num_warps", None), getattr(c, "num_stages", None))


def resolve(kernel, config=None) -> Spec:
    """A Spec for a gpusim JITFunction, a real Triton JITFunction / InterpretedFunction, Autotuner or
    Heuristics wrapper, or a plain Python function written in Triton style.  Under an autotuner the Spec
    launches ``config`` (a ``triton.Config``), by default the first."""
    heur = []
    config = _config_tuple(config) if config is not None else None
    k = kernel
    jit_options: dict = {}
    for _ in range(8):
        if not jit_options and isinstance(getattr(k, "fn", None), types.FunctionType):
            jit_options = _jit_options(k)
        kind = wrapper_kind(k)
        if hasattr(k, "configs") and hasattr(k, "fn") and kind in ("Autotuner",):
            cfgs = list(k.configs)
            if cfgs and config is None:
                config = _config_tuple(cfgs[0])
            k = k.fn
            continue
        if hasattr(k, "values") and hasattr(k, "fn") and kind == "Heuristics":
            heur.insert(0, dict(k.values))
            k = k.fn
            continue
        if isinstance(k, types.FunctionType):
            spec = Spec(k, heur, config)
            spec.jit_options = jit_options
            return spec
        if hasattr(k, "fn"):
            k = k.fn
            continue
        break
    raise GpusimError(f"cannot simulate {kernel!r}: not a Triton kernel (@triton.jit function) or a Python function")


_JIT_OPTION_KEYS = ("do_not_specialize", "do_not_specialize_on_alignment", "noinline", "debug")


def _jit_options(k) -> dict:
    """The ``@triton.jit(...)`` options of a JIT function (real or gpusim's) that change how it is compiled."""
    src = getattr(k, "options", None)
    if not isinstance(src, dict):
        src = {a: getattr(k, a, None) for a in _JIT_OPTION_KEYS}
    out = {}
    for a in _JIT_OPTION_KEYS:
        v = src.get(a)
        if v:
            out[a] = list(v) if isinstance(v, (list, tuple)) else v
    return out
