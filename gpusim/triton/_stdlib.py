"""Module-level names of ``triton.language.standard`` / ``triton.language.core`` that kernels import directly
(``from triton.language.standard import _log2``; ``tl.core.get_int_dtype``; a combine function such as
``_sum_combine`` handed to ``tl.reduce``), and ``triton.constexpr_function``.

The JIT helpers here are Triton 3.6's own (the same statements), run by gpusim's front end as any helper is;
``core`` is bound to ``gpusim.triton.language`` once that module is loaded (it imports this one).
"""
from __future__ import annotations

from ._dtypes import constexpr, int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, unwrap

core = None             # gpusim.triton.language (set by it)


class ConstexprFunction:
    """``triton.constexpr_function``: a plain Python function a kernel calls on constexpr values at compile time
    (its arguments unwrapped, its result a compile-time value)."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "constexpr_function")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __get__(self, obj, objclass):
        if obj is None:
            return self
        return lambda *a, **k: self(obj, *a, **k)

    def __call__(self, *args, _semantic=None, **kwargs):
        return self.fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})

    def __repr__(self):
        return f"ConstexprFunction({self.__name__})"


def constexpr_function(fn):
    return ConstexprFunction(fn)


class _StdJit:
    """A JIT helper of Triton's standard library, called from a kernel as any ``@triton.jit`` helper."""

    _gpusim_frontend = "triton"

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__

    def __call__(self, *args, **kwargs):
        return HELPER(self.fn)(*args, **kwargs)


HELPER = None           # _kernels._Helper (handed over by the package: _kernels imports language, which imports this)


def get_int_dtype(bitwidth: int, signed: bool):
    bitwidth, signed = unwrap(bitwidth), unwrap(signed)
    if bitwidth == 1:
        return int1
    for bits, s, u in ((8, int8, uint8), (16, int16, uint16), (32, int32, uint32), (64, int64, uint64)):
        if bitwidth == bits:
            return s if signed else u
    raise ValueError(f'Unsupported bitwidth {bitwidth} and signedness {signed}')


def _unwrap_if_constexpr(o):
    if isinstance(o, list):
        return [_unwrap_if_constexpr(x) for x in o]
    if isinstance(o, tuple) and not hasattr(o, "_fields"):
        return tuple(_unwrap_if_constexpr(x) for x in o)
    return unwrap(o)


CONSTEXPR_0 = constexpr(0)
TRITON_BUILTIN = "__triton_builtin__"


def builtin(fn):
    """``tl.core.builtin``: marks a function a kernel may call (gpusim calls it as it is)."""
    setattr(fn, TRITON_BUILTIN, True)
    return fn


def is_builtin(fn) -> bool:
    return getattr(fn, TRITON_BUILTIN, False)


def must_use_result(x, s=True):
    return x if callable(x) else (lambda fn: fn)


@constexpr_function
def _log2(i):
    log2 = 0
    n = i
    while n > 1:
        n >>= 1
        log2 += 1
    return log2


@constexpr_function
def _is_power_of_two(i):
    return (i & (i - 1)) == 0 and i != 0


_get_int_dtype = constexpr_function(get_int_dtype)


@constexpr_function
def _pick_sum_dtype(in_dtype, dtype):
    if dtype is not None:
        return dtype
    out_dtype = None
    if in_dtype.is_int_signed():
        out_dtype = int32 if in_dtype.int_bitwidth < 32 else None
    elif in_dtype.is_int_unsigned():
        out_dtype = uint32 if in_dtype.int_bitwidth < 32 else None
    return out_dtype


@constexpr_function
def _get_flip_dim(dim, shape):
    if dim is None:
        dim = len(shape) - 1
    if dim < 0:
        dim += len(shape)
    return dim


# ---- Triton 3.6's standard-library JIT helpers ----------------------------------------------------------------------

def _argmax_combine(value1, index1, value2, index2, tie_break_left):
    if tie_break_left:
        tie = value1 == value2 and index1 < index2
    else:
        tie = False
    gt = value1 > value2 or tie
    v_ret = core.where(gt, value1, value2)
    i_ret = core.where(gt, index1, index2)
    return v_ret, i_ret


def _argmax_combine_tie_break_left(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, True)


def _argmax_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, False)


def _argmin_combine(value1, index1, value2, index2, tie_break_left):
    if tie_break_left:
        tie = value1 == value2 and index1 < index2
    else:
        tie = False
    lt = value1 < value2 or tie
    value_ret = core.where(lt, value1, value2)
    index_ret = core.where(lt, index1, index2)
    return value_ret, index_ret


def _argmin_combine_tie_break_left(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, True)


def _argmin_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, False)


def _elementwise_max(a, b):
    return core.maximum(a, b)


def _elementwise_min(a, b):
    return core.minimum(a, b)


def _sum_combine(a, b):
    return a + b


def _xor_combine(a, b):
    return a ^ b


def _or_combine(x, y):
    return x | y


def _prod_combine(a, b):
    return a * b


def _indicator(n_dims: core.constexpr, j: core.constexpr):
    ar = core.arange(0, 2)
    ar = core.reshape(ar, [1] * (n_dims - j - 1) + [2] + [1] * j)
    return ar


def _compare_and_swap(x, flip, i: core.constexpr):
    n_dims: core.constexpr = _log2(x.numel)
    idtype = _get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    ix = x.to(idtype, bitcast=True)
    iy = ix ^ core.xor_sum(ix, n_dims - 1 - i, True)
    y = iy.to(x.dtype, bitcast=True)
    is_right = _indicator(n_dims, i)
    ret = core.where((x > y) != (flip ^ is_right), y, x)
    return ret


def _bitonic_merge_hypercube(x, stage: core.constexpr, order: core.constexpr):
    if order == 2:
        flip = _indicator(_log2(x.numel), stage)
    else:
        flip = order
    for i in core.static_range(stage):
        x = _compare_and_swap(x, flip, stage - 1 - i)
    return x


def _bitonic_merge(x, stage: core.constexpr, order: core.constexpr, n_dims: core.constexpr):
    h = core.reshape(x, [2] * _log2(x.numel))
    h = _bitonic_merge_hypercube(h, stage, order)
    x = core.reshape(h, x.shape)
    return x


JIT_HELPERS = ("_argmax_combine", "_argmax_combine_tie_break_left", "_argmax_combine_tie_break_fast",
               "_argmin_combine", "_argmin_combine_tie_break_left", "_argmin_combine_tie_break_fast",
               "_elementwise_max", "_elementwise_min", "_sum_combine", "_xor_combine", "_or_combine", "_prod_combine",
               "_indicator", "_compare_and_swap", "_bitonic_merge_hypercube", "_bitonic_merge")
CONSTEXPR_FUNCTIONS = ("_log2", "_is_power_of_two", "_get_int_dtype", "_pick_sum_dtype", "_get_flip_dim")
CORE_NAMES = ("get_int_dtype", "_unwrap_if_constexpr", "CONSTEXPR_0", "TRITON_BUILTIN", "builtin", "is_builtin",
              "must_use_result", "constexpr_function")


def install(language) -> None:
    """Bind ``core`` and wrap the helpers (after their annotations, which name ``core.constexpr``, were read)."""
    global core
    core = language
    g = globals()
    for n in JIT_HELPERS:
        if not isinstance(g[n], _StdJit):
            g[n] = _StdJit(g[n])


class _SameLoader:
    """The loader of a module gpusim builds in memory (``triton.language.extra.libdevice``, ``triton.language.math``):
    ``importlib.util.find_spec(name)`` then ``module_from_spec`` / ``exec_module`` (xformers' ``libdevice_find``)
    give a module with the same names."""

    def __init__(self, mod):
        self.mod = mod

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__dict__.update({k: v for k, v in vars(self.mod).items()
                                if k not in ("__name__", "__spec__", "__loader__")})


def give_spec(mod) -> None:
    """A ModuleSpec for a module built in memory (its ``__spec__`` is None otherwise: find_spec raises)."""
    import importlib.machinery
    loader = _SameLoader(mod)
    mod.__spec__ = importlib.machinery.ModuleSpec(mod.__name__, loader)
    mod.__loader__ = loader
