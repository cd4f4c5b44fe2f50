"""``gpusim.triton.language`` (``tl``): the subset of ``triton.language`` gpusim executes and lowers.

Kernels written against it are real Triton kernels; the functions run all programs of a launch (or a chunk of
them) at once on numpy arrays.  An attribute of ``triton.language`` that gpusim does not implement raises
``UnsupportedConstruct`` naming it and the kernel line that used it.
"""
from __future__ import annotations

import builtins as _b
import string as _string
import types as _types

from ..errors import CompileError, UnsupportedConstruct
from . import _control
from ._state import IGNORED_CALLS as _IGNORED_CALLS
from . import _core as _C
from . import _ops_descriptor
from . import _ops_dot
from . import _ops_dot_scaled
from . import _ops_math
from . import _ops_memory
from . import _ops_reduce
from . import _ops_sort
from . import _ops_asm
from . import _ops_tile
from ._core import tensor
from ._dtypes import (bfloat16, block_type, constexpr, dtype, float16, float32, float64, int1, int8, int16, int32,
                      int64, pointer_type, uint8, uint16, uint32, uint64)
from ._dtypes import float8e4b8, float8e4b15, float8e4nv, float8e5, float8e5b16  # noqa: F401  (e4b15, e4b8, e5b16 refused where used)
void = None
from ._ops_tile import TRITON_MAX_TENSOR_NUMEL  # noqa: E402


class PropagateNan:
    NONE = "NONE"
    ALL = "ALL"


# ---- programs, creation, shapes --------------------------------------------------------------------------
program_id = _ops_tile.program_id
num_programs = _ops_tile.num_programs
arange = _ops_tile.arange


def zeros(shape, dtype):
    return _ops_tile.zeros(shape, dtype)


def full(shape, value, dtype):
    return _ops_tile.full(shape, value, dtype)


zeros_like = _ops_tile.zeros_like
reshape = _C.reshape
view = _C.reshape
trans = _C.trans
permute = _C.permute
broadcast_to = _C.broadcast_to
expand_dims = _C.expand_dims
ravel = _ops_tile.ravel
join = _ops_tile.join
split = _ops_tile.split
cat = _ops_tile.cat
interleave = _ops_tile.interleave
flip = _ops_tile.flip
gather = _ops_tile.gather_op
histogram = _ops_tile.histogram
map_elementwise = _ops_tile.map_elementwise


def broadcast(input, other):
    a, b = _C.to_tensor(_C.unwrap(input)), _C.to_tensor(_C.unwrap(other))
    shape = _C.broadcast_shapes(a.shape, b.shape)
    return _C.broadcast_to(a, shape), _C.broadcast_to(b, shape)


def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    return _C.cast(input, dtype, bitcast=bitcast, fp_downcast_rounding=fp_downcast_rounding)


# ---- memory -------------------------------------------------------------------------------------------------
load = _ops_memory.load
store = _ops_memory.store
make_block_ptr = _ops_memory.make_block_ptr
advance = _ops_memory.advance
make_tensor_descriptor = _ops_descriptor.make_tensor_descriptor
load_tensor_descriptor = _ops_descriptor.load_tensor_descriptor
store_tensor_descriptor = _ops_descriptor.store_tensor_descriptor
tensor_descriptor = _ops_descriptor.tensor_descriptor
tensor_descriptor_base = _ops_descriptor.tensor_descriptor_base


def atomic_add(pointer, val, mask=None, sem=None, scope=None):
    return _ops_memory.atomic("add", pointer, val, mask, sem, scope)


def atomic_max(pointer, val, mask=None, sem=None, scope=None):
    return _ops_memory.atomic("max", pointer, val, mask, sem, scope)


def atomic_min(pointer, val, mask=None, sem=None, scope=None):
    return _ops_memory.atomic("min", pointer, val, mask, sem, scope)


def atomic_and(pointer, val, mask=None, sem=None, scope=None):
    return _ops_memory.atomic("and", pointer, val, mask, sem, scope)


def atomic_or(pointer, val, mask=None, sem=None, scope=None):
    return _ops_memory.atomic("or", pointer, val, mask, sem, scope)


def atomic_xor(pointer, val, mask=None, sem=None, scope=None):
    return _ops_memory.atomic("xor", pointer, val, mask, sem, scope)


def atomic_xchg(pointer, val, mask=None, sem=None, scope=None):
    return _ops_memory.atomic("xchg", pointer, val, mask, sem, scope)


def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    return _ops_memory.atomic("cas", pointer, val, None, sem, scope, cmp=cmp)


# ---- compute --------------------------------------------------------------------------------------------------
dot = _ops_dot.dot
dot_scaled = _ops_dot_scaled.dot_scaled
where = _ops_math.where
maximum = _ops_math.maximum
minimum = _ops_math.minimum
clamp = _ops_math.clamp
exp = _ops_math.exp
exp2 = _ops_math.exp2
log = _ops_math.log
log2 = _ops_math.log2
sin = _ops_math.sin
cos = _ops_math.cos
sqrt = _ops_math.sqrt
sqrt_rn = _ops_math.sqrt_rn
rsqrt = _ops_math.rsqrt
erf = _ops_math.erf
floor = _ops_math.floor
ceil = _ops_math.ceil
abs = _ops_math.abs_
fma = _ops_math.fma
fdiv = _ops_math.fdiv
div_rn = _ops_math.div_rn
umulhi = _ops_math.umulhi
sigmoid = _ops_math.sigmoid
softmax = _ops_math.softmax
cdiv = _ops_math.cdiv
swizzle2d = _ops_math.swizzle2d

# ---- reductions and scans ---------------------------------------------------------------------------------------
sum = _ops_reduce.reduce_sum
max = _ops_reduce.reduce_max
min = _ops_reduce.reduce_min
argmax = _ops_reduce.argmax
argmin = _ops_reduce.argmin
xor_sum = _ops_reduce.xor_sum
reduce_or = _ops_reduce.reduce_or
reduce = _ops_reduce.reduce
cumsum = _ops_reduce.cumsum
cumprod = _ops_reduce.cumprod
associative_scan = _ops_reduce.associative_scan
inline_asm_elementwise = _ops_asm.inline_asm_elementwise
sort = _ops_sort.sort
topk = _ops_sort.topk
bitonic_merge = _ops_sort.bitonic_merge


def add(x, y, sanitize_overflow=True):
    return _C.to_tensor(_C.unwrap(x)) + _C.unwrap(y)


def sub(x, y, sanitize_overflow=True):
    return _C.to_tensor(_C.unwrap(x)) - _C.unwrap(y)


def mul(x, y, sanitize_overflow=True):
    return _C.to_tensor(_C.unwrap(x)) * _C.unwrap(y)

# ---- hints, loops, debugging ------------------------------------------------------------------------------------
multiple_of = _ops_tile.multiple_of
max_contiguous = _ops_tile.max_contiguous
max_constancy = _ops_tile.max_constancy
debug_barrier = _ops_tile.debug_barrier
static_range = _control.static_range
range = _control.tl_range


def assume(cond):
    return None


def static_assert(cond, msg=""):
    cond = _C.unwrap(cond)
    if isinstance(cond, tensor):
        _C.fail(CompileError, "static_assert needs a constexpr condition")
    if not cond:
        _C.fail(CompileError, f"Static assert failed: {_C.unwrap(msg)}")


def static_print(*args, sep=" ", end="\n", file=None, flush=False):
    st = _C.ST
    if st is None or st.probe or st.rec is None:
        _b.print(*[_C.unwrap(a) for a in args], sep=sep, end=end, file=file, flush=flush)


def device_print(prefix, *args, hex=False):
    # Triton's checks of the prefix (``print(B0, N0)`` in a kernel is ``device_print(B0, N0)``: refused)
    prefix = _C.unwrap(prefix)
    if not isinstance(prefix, str):
        shown = (f"{prefix.dtype.name}[{', '.join(str(int(d)) for d in prefix.shape)}]" if isinstance(prefix, tensor)
                 else prefix)                                   # a tensor as Triton names it: ``int32[8]``
        _C.fail(CompileError, f"{shown} is not string")
    if not all(ch in _string.printable for ch in prefix):
        _C.fail(CompileError, f"{prefix} is not an ascii string")
    _IGNORED_CALLS.add("tl.device_print (print) prints nothing and costs no instructions in gpusim")
    return None


def device_assert(cond, msg="", mask=None):
    _IGNORED_CALLS.add("tl.device_assert is not checked (Triton checks it only in debug mode) and costs nothing")
    return None


# ---- tl.math / tl.extra -------------------------------------------------------------------------------------------
math = _types.ModuleType(__name__ + ".math")        # ``triton.language.math`` (``from ... import exp2``)
math.__dict__.update(exp=exp, exp2=exp2, log=log, log2=log2, sin=sin, cos=cos, sqrt=sqrt, sqrt_rn=sqrt_rn,
                     rsqrt=rsqrt, erf=erf, floor=floor, ceil=ceil, abs=abs, fma=fma, fdiv=fdiv, div_rn=div_rn,
                     umulhi=umulhi, sigmoid=sigmoid, softmax=softmax, cdiv=cdiv, max=max, min=min,
                     maximum=maximum, minimum=minimum)


def _pow(x, y):
    return exp2(_C.binary("mul", _C.to_tensor(y) if not isinstance(_C.unwrap(y), tensor) else y, log2(x)))


_libdevice = _types.SimpleNamespace(exp=exp, exp2=exp2, log=log, log2=log2, sin=sin, cos=cos, sqrt=sqrt, rsqrt=rsqrt,
                                    erf=erf, floor=floor, ceil=ceil, abs=abs, fabs=abs, fma=fma, pow=_pow,
                                    fast_expf=exp, fast_logf=log, fast_dividef=fdiv, div_rn=div_rn, sqrt_rn=sqrt_rn,
                                    tanh=lambda x: _C.binary("sub", _C.binary("mul", 2.0, sigmoid(
                                        _C.binary("mul", 2.0, x))), 1.0))


def _gdc(name):
    def call():
        _IGNORED_CALLS.add(f"tl.extra.cuda.{name} (programmatic dependent launch): a no-op for one kernel; the overlap "
                           "with the kernel before or after (launch_pdl=True) is not modelled, and it costs nothing")
    call.__name__ = name
    return call


def _launch_warps(per_warp):
    """``tl.extra.cuda.num_warps()`` / ``num_threads()``: the launch's warps (threads) per program, a constexpr."""
    def call():
        return constexpr(_C.ST.num_warps * per_warp)
    call.__name__ = call.__qualname__ = "num_warps" if per_warp == 1 else "num_threads"
    call.__module__ = __name__ + ".extra.cuda"          # the real compiler's triton.language.extra.cuda.num_warps
    return call


class const:
    """``tl.const``: the annotation of a pointer argument to constant data (a store through it is refused)."""


def condition(arg, disable_licm=False):
    """``while tl.condition(c, disable_licm)``: the loop's condition ``c`` (the hint is for the compiler)."""
    return arg


extra = _types.SimpleNamespace(libdevice=_libdevice, cuda=_types.SimpleNamespace(libdevice=_libdevice))

# ---- random numbers (Triton's Philox) ------------------------------------------------------------------------------
from . import _ops_random  # noqa: E402
philox = _ops_random.philox
randint = _ops_random.randint
randint4x = _ops_random.randint4x
rand = _ops_random.rand
rand4x = _ops_random.rand4x
randn = _ops_random.randn
randn4x = _ops_random.randn4x
uint_to_uniform_float = _ops_random.uint_to_uniform_float
pair_uniform_to_normal = _ops_random.pair_uniform_to_normal
random = _types.ModuleType(__name__ + ".random")      # ``tl.random.uint_to_uniform_float`` (triton.language.random)
random.__dict__.update(philox=philox, philox_impl=philox, randint=randint, randint4x=randint4x, rand=rand,
                       rand4x=rand4x, randn=randn, randn4x=randn4x, uint_to_uniform_float=uint_to_uniform_float,
                       pair_uniform_to_normal=pair_uniform_to_normal, N_ROUNDS_DEFAULT=_ops_random.N_ROUNDS_DEFAULT)

# ---- libdevice: ``from triton.language.extra import libdevice`` / ``extra.cuda.libdevice`` -----------------------------
from . import _libdevice  # noqa: E402


def _extra_modules():
    import sys
    ld = _types.ModuleType(__name__ + ".extra.libdevice")
    ld.__dict__.update(vars(_libdevice.namespace()))
    cuda = _types.ModuleType(__name__ + ".extra.cuda")
    cuda.libdevice = ld
    cuda.gdc_wait, cuda.gdc_launch_dependents = _gdc("gdc_wait"), _gdc("gdc_launch_dependents")
    cuda.num_warps, cuda.num_threads = _launch_warps(1), _launch_warps(32)
    ex = _types.ModuleType(__name__ + ".extra")
    ex.libdevice, ex.cuda = ld, cuda
    for m in (ex, cuda, ld):
        sys.modules[m.__name__] = m
    sys.modules[__name__ + ".extra.cuda.libdevice"] = ld
    return ex, ld


extra, _libdevice_ns = _extra_modules()

# ``tl.core.constexpr`` / ``tl.core.tensor`` / ``tl.core.dtype`` (``triton.language.core``, where Triton defines the
# language's types and builtins) and ``tl.standard`` name this same namespace
import sys as _sys  # noqa: E402
core = standard = _sys.modules[__name__]
_sys.modules[math.__name__] = math
_sys.modules[random.__name__] = random

# ``triton.language.standard``'s helpers (``_log2``, ``_sum_combine`` ...) and ``core``'s (``get_int_dtype`` ...)
from . import _stdlib  # noqa: E402
_stdlib.install(core)
for _m in (math, random, extra, extra.cuda, extra.libdevice):
    _stdlib.give_spec(_m)
for _n in _stdlib.JIT_HELPERS + _stdlib.CONSTEXPR_FUNCTIONS + _stdlib.CORE_NAMES:
    globals()[_n] = getattr(_stdlib, _n)

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "core", "standard")]
_C.register_methods(globals())          # tl functions are also tensor methods: x.sum(0), x.exp() ...


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    file, line = _C.user_line()
    raise UnsupportedConstruct(f"tl.{name} is not supported by gpusim's Triton front end", file=file, line=line,
                               kernel=_C.ST.kernel_name if _C.ST is not None else "")
