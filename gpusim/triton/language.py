"""``gpusim.triton.language`` (``tl``): the subset of ``triton.language`` gpusim executes and lowers.

Kernels written against it are real Triton kernels; the functions run all programs of a launch (or a chunk of
them) at once on numpy arrays.  An attribute of ``triton.language`` that gpusim does not implement raises
``UnsupportedConstruct`` naming it and the kernel line that used it.
"""
from __future__ import annotations

import builtins as _b
import types as _types

from ..errors import CompileError, UnsupportedConstruct
from . import _control
from . import _core as _C
from . import _ops
from ._core import (bfloat16, block_type, constexpr, dtype, float16, float32, float64, int1, int8, int16, int32,
                    int64, pointer_type, tensor, uint8, uint16, uint32, uint64)

float8e5 = float8e4nv = float8e4b15 = float8e4b8 = float8e5b16 = None   # fp8: not supported
void = None
TRITON_MAX_TENSOR_NUMEL = 1048576


class PropagateNan:
    NONE = "NONE"
    ALL = "ALL"


# ---- programs, creation, shapes --------------------------------------------------------------------------
program_id = _ops.program_id
num_programs = _ops.num_programs
arange = _C.arange


def zeros(shape, dtype):
    return _C.zeros(shape, dtype)


def full(shape, value, dtype):
    return _C.full(shape, value, dtype)


zeros_like = _ops.zeros_like
reshape = _C.reshape
view = _C.reshape
trans = _C.trans
permute = _C.permute
broadcast_to = _C.broadcast_to
expand_dims = _C.expand_dims
ravel = _ops.ravel
join = _ops.join
split = _ops.split
cat = _ops.cat
interleave = _ops.interleave
flip = _ops.flip
gather = _ops.gather_op
histogram = _ops.histogram


def broadcast(input, other):
    a, b = _C.to_tensor(_C.unwrap(input)), _C.to_tensor(_C.unwrap(other))
    shape = _C.broadcast_shapes(a.shape, b.shape)
    return _C.broadcast_to(a, shape), _C.broadcast_to(b, shape)


def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    return _C.cast(input, dtype, bitcast=bitcast, fp_downcast_rounding=fp_downcast_rounding)


# ---- memory -------------------------------------------------------------------------------------------------
load = _ops.load
store = _ops.store
make_block_ptr = _ops.make_block_ptr
advance = _ops.advance


def atomic_add(pointer, val, mask=None, sem=None, scope=None):
    return _ops.atomic("add", pointer, val, mask, sem, scope)


def atomic_max(pointer, val, mask=None, sem=None, scope=None):
    return _ops.atomic("max", pointer, val, mask, sem, scope)


def atomic_min(pointer, val, mask=None, sem=None, scope=None):
    return _ops.atomic("min", pointer, val, mask, sem, scope)


def atomic_and(pointer, val, mask=None, sem=None, scope=None):
    return _ops.atomic("and", pointer, val, mask, sem, scope)


def atomic_or(pointer, val, mask=None, sem=None, scope=None):
    return _ops.atomic("or", pointer, val, mask, sem, scope)


def atomic_xor(pointer, val, mask=None, sem=None, scope=None):
    return _ops.atomic("xor", pointer, val, mask, sem, scope)


def atomic_xchg(pointer, val, mask=None, sem=None, scope=None):
    return _ops.atomic("xchg", pointer, val, mask, sem, scope)


def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    return _ops.atomic("cas", pointer, val, None, sem, scope, cmp=cmp)


# ---- compute --------------------------------------------------------------------------------------------------
dot = _ops.dot
where = _ops.where
maximum = _ops.maximum
minimum = _ops.minimum
clamp = _ops.clamp
exp = _ops.exp
exp2 = _ops.exp2
log = _ops.log
log2 = _ops.log2
sin = _ops.sin
cos = _ops.cos
sqrt = _ops.sqrt
sqrt_rn = _ops.sqrt_rn
rsqrt = _ops.rsqrt
erf = _ops.erf
floor = _ops.floor
ceil = _ops.ceil
abs = _ops.abs_
fma = _ops.fma
fdiv = _ops.fdiv
div_rn = _ops.div_rn
umulhi = _ops.umulhi
sigmoid = _ops.sigmoid
softmax = _ops.softmax
cdiv = _ops.cdiv
swizzle2d = _ops.swizzle2d

# ---- reductions and scans ---------------------------------------------------------------------------------------
sum = _ops.reduce_sum
max = _ops.reduce_max
min = _ops.reduce_min
argmax = _ops.argmax
argmin = _ops.argmin
xor_sum = _ops.xor_sum
reduce_or = _ops.reduce_or
reduce = _ops.reduce
cumsum = _ops.cumsum
cumprod = _ops.cumprod

# ---- hints, loops, debugging ------------------------------------------------------------------------------------
multiple_of = _ops.multiple_of
max_contiguous = _ops.max_contiguous
max_constancy = _ops.max_constancy
debug_barrier = _ops.debug_barrier
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
    return None


def device_assert(cond, msg="", mask=None):
    return None


# ---- tl.math / tl.extra -------------------------------------------------------------------------------------------
math = _types.SimpleNamespace(exp=exp, exp2=exp2, log=log, log2=log2, sin=sin, cos=cos, sqrt=sqrt, sqrt_rn=sqrt_rn,
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
extra = _types.SimpleNamespace(libdevice=_libdevice, cuda=_types.SimpleNamespace(libdevice=_libdevice))

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations",)]


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    file, line = _C.user_line()
    raise UnsupportedConstruct(f"tl.{name} is not supported by gpusim's Triton front end", file=file, line=line,
                               kernel=_C.ST.kernel_name if _C.ST is not None else "")
