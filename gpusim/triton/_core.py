"""Tile values of many program instances at once, and the state of one lockstep execution.

Every ``tl`` tensor a kernel builds is a ``tensor`` whose ``v`` is a numpy array with a leading *program* axis:
``v.shape == (Pn, *shape)`` where ``Pn`` is 1 for values all programs share (``tl.arange``, constexpr
arithmetic, scalar arguments) and ``P`` (the programs of the chunk being executed) otherwise.  numpy
broadcasting then runs every program of the chunk in one array operation.

Value representation (what Triton computes, to within rounding): fp16/bf16 values are float32 arrays rounded
to the storage type wherever Triton rounds (arithmetic results of that type, loads, stores, ``.to``); fp32,
fp64 and the integer types use their numpy types (int32 wraps like the GPU); int1 is bool.  Pointer tensors
hold int64 *element offsets* into a ``Buffer`` (one kernel argument's memory), with a fake device address for
the lowering.

``State`` is the execution of one chunk of programs: their ids, the stack of active-program masks that
program-varying control flow pushes (masked lockstep), the programs that returned, and the recorder that
lowers each op into the trace (None for purely functional runs).
"""
from __future__ import annotations

import math
import sys
import weakref
from typing import Any

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from . import _axisinfo as AI

# ---------------------------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------------------------


class dtype:
    """A Triton scalar type (``tl.float16`` ...).  ``name`` follows Triton ('fp16', 'int32', 'int1')."""

    KIND_BOOL, KIND_INT, KIND_FLOAT = 0, 1, 2

    def __init__(self, name: str, bits: int, kind: str, np_compute, np_storage, signed: bool = True):
        self.name = name
        self.primitive_bitwidth = bits
        self._kind = kind          # 'b', 'i', 'u', 'f', 'p'
        self.np = np.dtype(np_compute) if np_compute is not None else None
        self.np_storage = np.dtype(np_storage) if np_storage is not None else None
        self.signed = signed

    # Triton's predicates
    def is_floating(self):
        return self._kind == "f"

    def is_int(self):
        return self._kind in ("i", "u", "b")

    def is_int_signed(self):
        return self._kind == "i"

    def is_int_unsigned(self):
        return self._kind in ("u", "b")

    def is_bool(self):
        return self._kind == "b"

    def is_int1(self):
        return self._kind == "b"

    def is_ptr(self):
        return False

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    def is_block(self):
        return False

    @property
    def int_bitwidth(self):
        return self.primitive_bitwidth

    @property
    def fp_mantissa_width(self):
        return {"fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52}.get(self.name, 0)

    @property
    def scalar(self):
        return self

    @property
    def itemsize(self) -> int:
        return max(1, self.primitive_bitwidth // 8)

    def kind(self) -> int:
        return {"b": 0, "i": 1, "u": 1, "f": 2}.get(self._kind, 1)

    def __eq__(self, o):
        return isinstance(o, dtype) and o.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"triton.language.{_LONG.get(self.name, self.name)}"

    def __call__(self, x):      # tl.float32(1.0) style constants
        return x


class pointer_type(dtype):
    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        super().__init__(f"pointer<{element_ty.name}>", 64, "p", np.int64, None)
        self.element_ty = element_ty

    def is_ptr(self):
        return True

    def is_int(self):
        return False

    def __repr__(self):
        return f"pointer<{self.element_ty!r}>"


int1 = dtype("int1", 1, "b", np.bool_, np.bool_, False)
int8 = dtype("int8", 8, "i", np.int8, np.int8)
int16 = dtype("int16", 16, "i", np.int16, np.int16)
int32 = dtype("int32", 32, "i", np.int32, np.int32)
int64 = dtype("int64", 64, "i", np.int64, np.int64)
uint8 = dtype("uint8", 8, "u", np.uint8, np.uint8, False)
uint16 = dtype("uint16", 16, "u", np.uint16, np.uint16, False)
uint32 = dtype("uint32", 32, "u", np.uint32, np.uint32, False)
uint64 = dtype("uint64", 64, "u", np.uint64, np.uint64, False)
float16 = dtype("fp16", 16, "f", np.float32, np.float16)
bfloat16 = dtype("bf16", 16, "f", np.float32, np.uint16)
float32 = dtype("fp32", 32, "f", np.float32, np.float32)
float64 = dtype("fp64", 64, "f", np.float64, np.float64)

_LONG = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}
ALL_DTYPES = [int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64]
_BY_NP = {np.dtype(np.bool_): int1, np.dtype(np.int8): int8, np.dtype(np.int16): int16, np.dtype(np.int32): int32,
          np.dtype(np.int64): int64, np.dtype(np.uint8): uint8, np.dtype(np.uint16): uint16,
          np.dtype(np.uint32): uint32, np.dtype(np.uint64): uint64, np.dtype(np.float16): float16,
          np.dtype(np.float32): float32, np.dtype(np.float64): float64}


def dtype_of_numpy(d) -> dtype:
    d = np.dtype(d)
    if d not in _BY_NP:
        raise UnsupportedConstruct(f"arrays of numpy dtype {d} cannot be kernel arguments")
    return _BY_NP[d]


class constexpr:
    """``tl.constexpr``: a compile-time value (annotation on kernel parameters; wraps values)."""

    def __init__(self, value=None):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return int(self.value)

    def __int__(self):
        return int(self.value)

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, o):
        return self.value == unwrap(o)

    def __hash__(self):
        return hash(self.value)

    def __getattr__(self, name):
        return getattr(self.value, name)

    def __call__(self, *args, **kw):
        return self.value(*args, **kw)

    for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and", "or",
                "xor", "lt", "le", "gt", "ge", "ne"):
        exec(f"def __{_op}__(self, o): return _dispatch_binop('{_op}', self.value, unwrap(o))")
        if _op not in ("lt", "le", "gt", "ge", "ne"):
            exec(f"def __r{_op}__(self, o): return _dispatch_binop('{_op}', unwrap(o), self.value)")
    del _op

    def __neg__(self):
        return -self.value

    def __invert__(self):
        return ~self.value


def _dispatch_binop(op, a, b):
    import operator
    f = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
         "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "lshift": operator.lshift,
         "rshift": operator.rshift, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
         "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "ne": operator.ne}[op]
    return f(a, b)


def unwrap(x):
    return x.value if isinstance(x, constexpr) else x


# ---------------------------------------------------------------------------------------------------------
# rounding helpers
# ---------------------------------------------------------------------------------------------------------

def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (round to nearest even on the bit pattern), kept as float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000))
    nan = np.isnan(x)
    if nan.any():
        r = np.where(nan, np.uint32(0x7FC00000), r)
    return r.view(np.float32)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    return (round_bf16(x).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bf16_from_bits(b: np.ndarray) -> np.ndarray:
    return (np.asarray(b).astype(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: keep 10 mantissa bits, round to nearest, ties away from zero."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    r = (u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    special = (u & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    if special.any():
        r = np.where(special, u, r)
    return r.view(np.float32)


def round_f16(v: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest fp16 value (ties to even), kept as float32.

    Bit arithmetic on the float32 pattern for the fp16 normal range (3x faster than a numpy round trip through
    float16); zeros, fp16 subnormals, overflow, inf and NaN take numpy's conversion."""
    v = np.ascontiguousarray(v, np.float32)
    u = v.view(np.uint32)
    r = (u + (np.uint32(0xFFF) + ((u >> np.uint32(13)) & np.uint32(1)))) & np.uint32(0xFFFFE000)
    a = u & np.uint32(0x7FFFFFFF)
    special = (a < np.uint32(0x38800000)) | (a >= np.uint32(0x477FF000))
    if special.any():
        r[special] = v[special].astype(np.float16).astype(np.float32).view(np.uint32)
    return r.view(np.float32)


def round_to(dt: dtype, v: np.ndarray) -> np.ndarray:
    if dt is float16:
        return round_f16(v)
    if dt is bfloat16:
        return round_bf16(v)
    return v


def to_compute(dt: dtype, raw: np.ndarray) -> np.ndarray:
    """Storage array -> compute array."""
    if dt is bfloat16:
        return bf16_from_bits(raw.view(np.uint16) if raw.dtype.itemsize == 2 else raw)
    if dt is float16:
        return raw.astype(np.float32)
    return raw


def to_storage(dt: dtype, v: np.ndarray) -> np.ndarray:
    if dt is bfloat16:
        return bf16_bits(v)
    if dt is float16:
        return np.asarray(v, np.float32).astype(np.float16)
    return np.asarray(v).astype(dt.np_storage, copy=False)


# ---------------------------------------------------------------------------------------------------------
# buffers: kernel argument memory with fake device addresses
# ---------------------------------------------------------------------------------------------------------

class _AddressSpace:
    """Fake device addresses for host memory, stable while the memory lives (4 KB aligned, like cudaMalloc).

    Keyed by the host address of an allocation's first byte, so the same array (or torch storage) gets the
    same device address in every launch of a process (multi-kernel sequences share cache lines)."""

    def __init__(self):
        self.next = 1 << 36
        self.by_ptr: dict[int, int] = {}

    def address(self, host_ptr: int, nbytes: int, owner=None) -> int:
        a = self.by_ptr.get(host_ptr)
        if a is None:
            a = self.next
            self.next += (nbytes + 4095) // 4096 * 4096 + 4096
            self.by_ptr[host_ptr] = a
            if owner is not None:
                try:
                    weakref.finalize(owner, self.by_ptr.pop, host_ptr, None)
                except TypeError:
                    pass
        return a


ADDRESSES = _AddressSpace()


class Buffer:
    """One argument's memory: ``flat`` is a 1-D view of the whole underlying allocation (storage dtype)."""

    __slots__ = ("flat", "dtype", "base_addr", "n", "name", "elem_bytes", "shadow", "reads", "__weakref__")

    def __init__(self, flat: np.ndarray, dt: dtype, base_addr: int, name: str):
        self.flat = flat
        self.dtype = dt
        self.base_addr = base_addr
        self.n = flat.shape[0]
        self.name = name
        self.elem_bytes = dt.itemsize
        self.shadow = None      # fp16/bf16: the whole buffer in float32 once it is re-read (saves conversions)
        self.reads = 0

    def take(self, idx: np.ndarray) -> np.ndarray:
        """Values at element indices ``idx`` (all in bounds), in the compute dtype."""
        dt = self.dtype
        if dt is float16 or dt is bfloat16:
            if self.shadow is None:
                self.reads += idx.size
                if self.reads > self.n + self.n // 2:          # re-read: convert the whole buffer once
                    self.shadow = to_compute(dt, self.flat)
                else:
                    return to_compute(dt, self.flat.take(idx))
            return self.shadow.take(idx)
        return self.flat.take(idx)

    def put(self, idx: np.ndarray, raw: np.ndarray):
        self.flat[idx] = raw
        if self.shadow is not None:
            self.shadow[idx] = to_compute(self.dtype, raw)


def numpy_root(arr: np.ndarray):
    """(1-D view of the whole allocation holding ``arr``, element offset of ``arr[0...]``, owner)."""
    if arr.flags.c_contiguous and not isinstance(arr.base, np.ndarray):
        return arr.reshape(-1), 0, arr
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    itemsize = arr.dtype.itemsize
    if not root.flags.c_contiguous:
        if arr.flags.c_contiguous:
            return arr.reshape(-1), 0, arr
        raise UnsupportedConstruct("a non-contiguous array whose underlying memory is not contiguous")
    raw = root.reshape(-1).view(np.uint8)
    byte_off = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if byte_off % itemsize:
        if arr.flags.c_contiguous:
            return arr.reshape(-1), 0, arr
        raise UnsupportedConstruct("a strided view not aligned to its element size")
    flat = raw[:raw.shape[0] // itemsize * itemsize].view(arr.dtype)
    return flat, byte_off // itemsize, root


def make_pointer_arg(flat: np.ndarray, offset: int, dt: dtype, name: str, owner=None) -> "tensor":
    """A pointer kernel argument to element ``offset`` of the 1-D allocation ``flat`` holding ``dt`` values."""
    base = ADDRESSES.address(flat.__array_interface__["data"][0], flat.nbytes, owner)
    buf = Buffer(flat, dt, base, name)
    t = tensor(np.array([offset], np.int64), pointer_type(dt), ())
    t.buf = buf
    t.ax = AI.arg_pointer(base + offset * dt.itemsize)
    return t


# ---------------------------------------------------------------------------------------------------------
# execution state
# ---------------------------------------------------------------------------------------------------------

_CODE_INFO: dict = {}            # code object -> (filename, function name) of transformed kernel code


class State:
    """One lockstep execution of a chunk of programs."""

    def __init__(self, *, pids: np.ndarray, grid, num_warps: int, num_stages: int, kernel_name: str,
                 rec=None, probe: bool = False, buffers=(), first_program: int = 0):
        self.P = int(pids.shape[0])
        self.pids = pids                       # int32 (P, 3)
        self.grid = tuple(grid)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.kernel_name = kernel_name
        self.rec = rec
        self.probe = probe
        self.buffers = list(buffers)
        self.first_program = first_program
        self.masks: list[np.ndarray] = []
        self.retired: np.ndarray | None = None
        self._active: np.ndarray | None = None
        self.max_numel = 1

    # ---- active programs ---------------------------------------------------------------------------
    def active(self) -> np.ndarray | None:
        """bool (P,) of programs executing the current op; None = all of them."""
        return self._active

    def _update(self):
        a = self.masks[-1] if self.masks else None
        if self.retired is not None:
            a = ~self.retired if a is None else (a & ~self.retired)
        if a is not None and a.all():
            a = None
        self._active = a

    def push(self, mask: np.ndarray | None):
        base = self._active
        if mask is None:
            m = base if base is not None else np.ones(self.P, bool)
        else:
            m = mask if base is None else (mask & base)
        self.masks.append(m)
        self._update()
        return m

    def pop(self):
        self.masks.pop()
        self._update()

    def any_active(self) -> bool:
        return self._active is None or bool(self._active.any())

    def retire(self) -> bool:
        """``return`` under a program-varying condition: the active programs stop.  True if none remain."""
        a = self._active
        if a is None:
            self.retired = np.ones(self.P, bool)
        else:
            self.retired = a.copy() if self.retired is None else (self.retired | a)
        self._update()
        return bool(self.retired.all())


ST: State | None = None


def state() -> State:
    if ST is None:
        raise UnsupportedConstruct("triton.language functions can only be called inside a kernel launch")
    return ST


# ---- locating the user's source line ------------------------------------------------------------------

def user_site():
    """(filename, line, site key) of the innermost kernel-source frame calling into tl.

    The site key identifies a static operation: the chain of (code, instruction offset) of all kernel-source
    frames, so a helper inlined at two call sites gives two sites (as Triton inlines it twice).
    """
    f = sys._getframe(1)
    first = None
    key = []
    while f is not None:
        info = _CODE_INFO.get(f.f_code)
        if info is not None:
            if first is None:
                first = (info[0], f.f_lineno)
            key.append((id(f.f_code), f.f_lasti))
        f = f.f_back
    if first is None:
        return "", 0, ()
    return first[0], first[1], tuple(key)


def user_line() -> tuple[str, int]:
    f = sys._getframe(1)
    while f is not None:
        info = _CODE_INFO.get(f.f_code)
        if info is not None:
            return info[0], f.f_lineno
        f = f.f_back
    return "", 0


def fail(cls, msg: str, program=None):
    file, line = user_line()
    kname = ST.kernel_name if ST is not None else ""
    raise cls(msg, file=file, line=line, kernel=kname, program=program)


# ---------------------------------------------------------------------------------------------------------
# the tensor
# ---------------------------------------------------------------------------------------------------------

class block_type:
    def __init__(self, element_ty, shape):
        self.element_ty = element_ty
        self.shape = list(shape)
        self.scalar = element_ty

    def is_block(self):
        return True

    def __repr__(self):
        return f"<{self.shape}, {self.element_ty!r}>"


class tensor:
    """A tile value (or a per-program scalar) of every program of the chunk."""

    __slots__ = ("v", "dtype", "shape", "ax", "lay", "src", "buf", "lsrc", "dsrc", "aff", "bk", "shift",
                 "__weakref__")

    def __init__(self, v: np.ndarray, dt: dtype, shape=(), ax=None):
        self.v = v
        self.dtype = dt
        self.shape = tuple(shape)
        self.ax = ax
        self.lay = None          # lowering: layout
        self.src = None          # lowering: producing op (for dependencies)
        self.buf = None          # pointers: the Buffer
        self.lsrc = None         # provenance: load site this value is (a cast/view of)
        self.dsrc = None         # provenance: dot sites this value derives from
        self.aff = None          # lowering: per dim, is the value affine with a compile-time step there
        self.bk = None           # lowering, probe only: (kind, site, inputs, extra) of the producing tile op
        self.shift = None        # pointers: (v of the pointer tile this one is, plus a scalar, elements)

    # ---- Triton's tensor surface -------------------------------------------------------------------
    @property
    def type(self):
        return block_type(self.dtype, self.shape) if self.shape else self.dtype

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def T(self):
        return trans(self)

    def __repr__(self):
        return f"tensor(shape={list(self.shape)}, dtype={self.dtype!r}, programs={self.v.shape[0]})"

    def __bool__(self):
        b = cond_value(self)
        if isinstance(b, bool):
            return b
        fail(UnsupportedConstruct, "a value that differs between programs is used as a Python bool (in `and`/`or`"
             " or a comparison chain); use & | or tl.where")

    def __index__(self):
        if self.shape == () and self.dtype.is_int() and self.v.shape[0] == 1:
            return int(self.v[0])
        fail(CompileError, "a tensor cannot be used where a constexpr integer is expected")

    __int__ = __index__

    def __float__(self):
        if self.shape == () and self.v.shape[0] == 1:
            return float(self.v[0])
        fail(CompileError, "a tensor cannot be used where a constexpr is expected")

    def __iter__(self):
        fail(UnsupportedConstruct, "iterating over a tensor is not supported")

    def __hash__(self):
        return id(self)

    # arithmetic
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("truediv", self, o)
    def __rtruediv__(self, o): return binary("truediv", o, self)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("mod", self, o)
    def __rmod__(self, o): return binary("mod", o, self)
    def __and__(self, o): return binary("and", self, o)
    def __rand__(self, o): return binary("and", o, self)
    def __or__(self, o): return binary("or", self, o)
    def __ror__(self, o): return binary("or", o, self)
    def __xor__(self, o): return binary("xor", self, o)
    def __rxor__(self, o): return binary("xor", o, self)
    def __lshift__(self, o): return binary("shl", self, o)
    def __rlshift__(self, o): return binary("shl", o, self)
    def __rshift__(self, o): return binary("shr", self, o)
    def __rrshift__(self, o): return binary("shr", o, self)
    def __lt__(self, o): return binary("lt", self, o)
    def __le__(self, o): return binary("le", self, o)
    def __gt__(self, o): return binary("gt", self, o)
    def __ge__(self, o): return binary("ge", self, o)
    def __eq__(self, o): return binary("eq", self, o)
    def __ne__(self, o): return binary("ne", self, o)
    def __pow__(self, o): fail(UnsupportedConstruct, "`**` on tensors is not supported by Triton")

    def __neg__(self):
        if self.dtype.is_ptr():
            fail(CompileError, "wrong type argument to unary minus (pointer)")
        return binary("sub", _zero_like_scalar(self.dtype), self)

    def __pos__(self):
        return self

    def __invert__(self):
        if self.dtype.is_floating() or self.dtype.is_ptr():
            fail(CompileError, f"wrong type argument to unary invert ({self.dtype})")
        return unary_np(self, np.invert, "LOP3")

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        out = self
        d = 0
        for it in idx:
            it = unwrap(it)
            if it is None:
                out = expand_dims(out, d)
                d += 1
            elif isinstance(it, slice) and it == slice(None, None, None):
                d += 1
            else:
                fail(UnsupportedConstruct, f"unsupported tensor index {it!r}: only None and ':' are allowed")
        return out

    # methods Triton attaches to tensors
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype, bitcast=bitcast, fp_downcast_rounding=fp_downcast_rounding)

    def reshape(self, *shape, can_reorder=False):
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (list, tuple)):
            shape = unwrap(shape[0])
        return reshape(self, shape)

    def view(self, *shape):
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (list, tuple)):
            shape = unwrap(shape[0])
        return reshape(self, shape)

    def trans(self, *dims):
        return trans(self, *dims)

    def permute(self, *dims):
        return permute(self, *dims)

    def broadcast_to(self, *shape):
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (list, tuple)):
            shape = unwrap(shape[0])
        return broadcast_to(self, shape)

    def expand_dims(self, axis):
        return expand_dims(self, axis)

    def __getattr__(self, name):
        # tl functions usable as methods: x.sum(0), x.exp(), x.max(axis=1) ...
        from . import language as _tl
        f = _tl.__dict__.get(name)
        if f is None or not callable(f) or name.startswith("_") or isinstance(f, type):
            raise AttributeError(name)
        return lambda *a, **k: f(self, *a, **k)


def _zero_like_scalar(dt):
    return tensor(np.zeros(1, dt.np), dt, ())


# ---------------------------------------------------------------------------------------------------------
# conversion of operands
# ---------------------------------------------------------------------------------------------------------

def scalar_dtype(x) -> dtype:
    if isinstance(x, bool) or isinstance(x, np.bool_):
        return int1
    if isinstance(x, (int, np.integer)):
        x = int(x)
        if -2 ** 31 <= x < 2 ** 31:
            return int32
        if 2 ** 31 <= x < 2 ** 32:
            return uint32
        if -2 ** 63 <= x < 2 ** 63:
            return int64
        return uint64
    if isinstance(x, (float, np.floating)):
        ax = abs(float(x))
        if ax == float("inf") or ax == 0.0 or x != x or 2 ** -126 <= ax <= (2 - 2 ** -23) * 2 ** 127:
            return float32
        return float64
    fail(CompileError, f"cannot convert {x!r} of type {type(x).__name__} to tensor")


def to_tensor(x, dt: dtype | None = None) -> tensor:
    x = unwrap(x)
    if isinstance(x, tensor):
        return x
    d = dt or scalar_dtype(x)
    t = tensor(np.array([x], dtype=d.np) if not d.is_ptr() else np.array([x], np.int64), d, ())
    if ST is not None and ST.rec is not None and d.is_int() and not isinstance(x, float):
        t.ax = AI.constant(int(x))
    return t


def _is_scalar_py(x) -> bool:
    return isinstance(unwrap(x), (bool, int, float, np.integer, np.floating, np.bool_))


def computation_type(a: dtype, a_scalar: bool, b: dtype, b_scalar: bool, div_or_mod: bool) -> dtype:
    if a_scalar != b_scalar:
        s, t = (a, b) if a_scalar else (b, a)
        if s.kind() <= t.kind():
            if div_or_mod and t in (float16, bfloat16):
                return float32
            return t
    if a is float64 or b is float64:
        return float64
    if a is float32 or b is float32:
        return float32
    if a is float16 or b is float16:
        return float32 if div_or_mod else float16
    if a is bfloat16 and b is bfloat16:
        return float32 if div_or_mod else bfloat16
    if a is bfloat16 or b is bfloat16:
        return float32
    if not a.is_int() or not b.is_int():
        fail(CompileError, f"unexpected type {a} and {b}")
    if div_or_mod and a.is_int_signed() != b.is_int_signed():
        fail(CompileError, f"Cannot use /, //, or % with {a!r} and {b!r} because they have different signedness")
    return integer_promote(a, b)


def integer_promote(a: dtype, b: dtype) -> dtype:
    sa, sb = a.is_int_signed(), b.is_int_signed()
    if sa == sb:
        return a if a.primitive_bitwidth > b.primitive_bitwidth else b
    if not sa:
        return a if a.primitive_bitwidth >= b.primitive_bitwidth else b
    return b if b.primitive_bitwidth >= a.primitive_bitwidth else a


def broadcast_shapes(sa, sb):
    ra, rb = len(sa), len(sb)
    if ra == 0:
        return tuple(sb)
    if rb == 0:
        return tuple(sa)
    if ra != rb:
        # Triton left-pads the lower rank with ones
        if ra < rb:
            sa = (1,) * (rb - ra) + tuple(sa)
        else:
            sb = (1,) * (ra - rb) + tuple(sb)
    out = []
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            fail(CompileError, f"Cannot make_shape_compatible: incompatible dimensions at index {i}: {x} and {y}")
    return tuple(out)


def vshape(t: tensor, shape) -> np.ndarray:
    """``t.v`` reshaped so numpy broadcasting against tile shape ``shape`` follows Triton's rules."""
    v = t.v
    r = len(shape) - len(t.shape)
    if r > 0:
        v = v.reshape((v.shape[0],) + (1,) * r + t.shape)
    return v


def broadcast_ax(t: tensor, shape):
    if t.ax is None:
        return None
    if t.shape == tuple(shape):
        return t.ax
    if not t.shape:
        return AI.splat(t.ax, shape)
    s = (1,) * (len(shape) - len(t.shape)) + t.shape
    ax = t.ax
    if len(s) != len(t.shape):
        r = len(shape) - len(t.shape)
        ax = AI.AxisInfo((1,) * r + ax.contig, (AI.MAXDIV,) * r + ax.div, tuple(shape[:r]) + ax.const, ax.value)
    return AI.broadcast(ax, s, shape)


def note_numel(shape):
    n = 1
    for s in shape:
        n *= s
    if ST is not None and n > ST.max_numel:
        ST.max_numel = n


# ---------------------------------------------------------------------------------------------------------
# binary ops
# ---------------------------------------------------------------------------------------------------------

_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
        "ne": np.not_equal}


def _trunc_div(x, y):
    with np.errstate(all="ignore"):
        if np.all(x >= 0) and np.all(y > 0):
            return x // y
        q = np.floor_divide(x, y)
        r = x - q * y
        fix = (r != 0) & ((x < 0) ^ (y < 0))
        return (q + fix.astype(q.dtype)).astype(np.result_type(x, y), copy=False)


def _trunc_rem(x, y):
    with np.errstate(all="ignore"):
        if np.all(x >= 0) and np.all(y > 0):
            return x % y
        return (x - _trunc_div(x, y) * y).astype(np.result_type(x, y), copy=False)


def binary(op: str, a, b) -> tensor | Any:
    a = unwrap(a)
    b = unwrap(b)
    if not isinstance(a, tensor) and not isinstance(b, tensor):
        return _dispatch_binop({"shl": "lshift", "shr": "rshift", "eq": "eq"}.get(op, op), a, b) \
            if op != "eq" else a == b
    st = ST
    a_s, b_s = _is_scalar_py(a), _is_scalar_py(b)
    ta = a if isinstance(a, tensor) else to_tensor(a)
    tb = b if isinstance(b, tensor) else to_tensor(b)
    da, db = ta.dtype, tb.dtype
    shape = broadcast_shapes(ta.shape, tb.shape) if ta.shape != tb.shape else ta.shape
    # ---- pointer arithmetic ----------------------------------------------------------------------
    if da.is_ptr() or db.is_ptr():
        if op == "add" or (op == "sub" and da.is_ptr() and not db.is_ptr()):
            p, o = (ta, tb) if da.is_ptr() else (tb, ta)
            if o.dtype.is_ptr() or o.dtype.is_floating():
                fail(CompileError, f"invalid operands of type {da!r} and {db!r}")
            ov = vshape(o, shape)
            pv = vshape(p, shape)
            if op == "add" and not p.shape and pv.shape[0] == 1 and pv[0] == 0 and ov.dtype.kind == "i":
                v = ov                      # a base pointer plus offsets: the offsets themselves (no copy)
            else:
                ov = ov.astype(np.int64, copy=False)
                v = pv + (ov if op == "add" else -ov)
            out = tensor(v, p.dtype, shape)
            out.buf = p.buf
            if p.shape == shape and ov.size == 1 and ov.dtype.kind in "iu":
                out.shift = (p.v, int(ov.reshape(-1)[0]) * (1 if op == "add" else -1))
            if st is not None and st.rec is not None:
                eb = p.dtype.element_ty.itemsize
                pa, oa = broadcast_ax(p, shape), broadcast_ax(o, shape)
                if pa is not None and oa is not None:
                    if op == "sub":
                        oa = AI.binary("sub", AI.constant(0, shape) if shape else AI.constant(0), oa, shape)
                    out.ax = AI.binary("addptr", pa, oa, shape, eb)
                st.rec.alu(out, (p, o), "addptr")
            note_numel(shape)
            return out
        if op in _CMP and da.is_ptr() and db.is_ptr():
            out = tensor(_CMP[op](vshape(ta, shape), vshape(tb, shape)), int1, shape)
            if st is not None and st.rec is not None:
                st.rec.alu(out, (ta, tb), "icmp")
            return out
        if op == "sub" and da.is_ptr() and db.is_ptr():
            out = tensor(vshape(ta, shape) - vshape(tb, shape), int64, shape)
            return out
        fail(CompileError, f"invalid operands of type {da!r} and {db!r} for {op}")
    # ---- type of the computation --------------------------------------------------------------------
    div_or_mod = op in ("truediv", "floordiv", "mod")
    if op in ("and", "or", "xor", "shl", "shr"):
        if not da.is_int() or not db.is_int():
            fail(CompileError, f"invalid operands of type {da!r} and {db!r} for a bitwise operation")
        ct = integer_promote(da, db) if not (a_s or b_s) else computation_type(da, a_s, db, b_s, False)
    else:
        ct = computation_type(da, a_s, db, b_s, div_or_mod)
    if op == "truediv" and ct.is_int():
        ct = float32
    if op == "floordiv" and not ct.is_int():
        fail(CompileError, f"unexpected type {ct!r} for //")
    npd = ct.np
    va = vshape(ta, shape)
    vb = vshape(tb, shape)
    if va.dtype != npd:
        va = va.astype(npd)
    if vb.dtype != npd:
        vb = vb.astype(npd)
    rdt = ct
    with np.errstate(all="ignore"):
        if op == "add":
            v = va + vb
        elif op == "sub":
            v = va - vb
        elif op == "mul":
            v = va * vb
        elif op == "truediv":
            v = va / vb
        elif op == "floordiv":
            v = _trunc_div(va, vb) if ct.is_int_signed() else va // vb
        elif op == "mod":
            if ct.is_floating():
                v = np.fmod(va, vb)
            else:
                v = _trunc_rem(va, vb) if ct.is_int_signed() else va % vb
        elif op == "and":
            v = va & vb
        elif op == "or":
            v = va | vb
        elif op == "xor":
            v = va ^ vb
        elif op == "shl":
            v = np.left_shift(va, vb)
        elif op == "shr":
            v = np.right_shift(va, vb)
        elif op in _CMP:
            v = _CMP[op](va, vb)
            rdt = int1
        else:
            fail(UnsupportedConstruct, f"unsupported binary operation {op}")
    if rdt in (float16, bfloat16):
        v = round_to(rdt, v)
    out = tensor(v, rdt, shape)
    note_numel(shape)
    if st is not None and st.rec is not None:
        if ct.is_int() and (ta.ax is not None or tb.ax is not None):
            aa = broadcast_ax(ta, shape) if ta.ax is not None else AI.pessimistic(len(shape))
            bb = broadcast_ax(tb, shape) if tb.ax is not None else AI.pessimistic(len(shape))
            out.ax = AI.binary({"floordiv": "div", "mod": "rem"}.get(op, op), aa, bb, shape)
        _prov2(out, ta, tb)
        st.rec.alu(out, (ta, tb), op if op not in _CMP else ("fcmp" if ct.is_floating() else "icmp"))
    return out


def _prov2(out, a, b):
    ds = a.dsrc
    if b.dsrc:
        ds = b.dsrc if not ds else (ds | b.dsrc)
    out.dsrc = ds


def _prov1(out, a, keep_load=True):
    out.dsrc = a.dsrc
    if keep_load:
        out.lsrc = a.lsrc


def unary_np(x: tensor, f, kind: str, out_dt: dtype | None = None) -> tensor:
    x = to_tensor(x)
    dt = out_dt or x.dtype
    with np.errstate(all="ignore"):
        v = f(x.v)
    if dt in (float16, bfloat16):
        v = round_to(dt, v)
    elif dt.np is not None and v.dtype != dt.np:
        v = v.astype(dt.np)
    out = tensor(v, dt, x.shape)
    st = ST
    if st is not None and st.rec is not None:
        _prov1(out, x, keep_load=False)
        st.rec.alu(out, (x,), kind)
    return out


# ---------------------------------------------------------------------------------------------------------
# creation, shape ops
# ---------------------------------------------------------------------------------------------------------

def _is_pow2(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def check_shape(shape, what="shape"):
    shape = tuple(int(unwrap(s)) for s in shape)
    for s in shape:
        if not _is_pow2(s):
            fail(CompileError, f"{what} {list(shape)}: each dimension must be a power of 2 (got {s})")
    return shape


def arange(start, end) -> tensor:
    start, end = unwrap(start), unwrap(end)
    if isinstance(start, tensor) or isinstance(end, tensor):
        fail(CompileError, "arange's arguments must be of type tl.constexpr")
    start, end = int(start), int(end)
    if end <= start:
        fail(CompileError, f"arange's end argument must be greater than the start argument (got {start}, {end})")
    n = end - start
    if not _is_pow2(n):
        fail(CompileError, f"arange's range must be a power of 2 (got arange({start}, {end}) of length {n})")
    if start < -2 ** 31 or end > 2 ** 31:
        fail(CompileError, "arange must fit in int32")
    out = tensor(np.arange(start, end, dtype=np.int32)[None, :], int32, (n,))
    note_numel((n,))
    st = ST
    if st is not None and st.rec is not None:
        out.ax = AI.make_range(start, end)
        st.rec.alu(out, (), "arange")
    return out


def full(shape, value, dt: dtype) -> tensor:
    shape = check_shape(shape if isinstance(unwrap(shape), (list, tuple)) else [shape])
    value = unwrap(value)
    dt = unwrap(dt)
    if isinstance(value, tensor):
        if value.shape:
            fail(CompileError, "tl.full's value must be a scalar")
        sv = cast(value, dt)
        v = np.broadcast_to(sv.v.reshape((-1,) + (1,) * len(shape)), (sv.v.shape[0],) + shape)
        out = tensor(v, dt, shape)
        ax = None
    else:
        if dt.is_floating():
            arr = round_to(dt, np.array([value], np.float32 if dt.np == np.float32 else dt.np))
        else:
            arr = np.array([value]).astype(dt.np)
        v = np.broadcast_to(arr.reshape((1,) + (1,) * len(shape)), (1,) + shape)
        out = tensor(v, dt, shape)
        ax = AI.constant(int(value), shape) if dt.is_int() else None
    note_numel(shape)
    st = ST
    if st is not None and st.rec is not None:
        out.ax = ax
        st.rec.alu(out, (), "full")
    return out


def zeros(shape, dt) -> tensor:
    return full(shape, 0, unwrap(dt))


def expand_dims(x, axis) -> tensor:
    x = to_tensor(x)
    axis = unwrap(axis)
    if isinstance(axis, (list, tuple)):
        for a in sorted(int(unwrap(a)) for a in axis):
            x = expand_dims(x, a)
        return x
    axis = int(axis)
    r = len(x.shape)
    if axis < 0:
        axis += r + 1
    if not 0 <= axis <= r:
        fail(CompileError, f"expand_dims axis {axis} out of range for a tensor of rank {r}")
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    out = tensor(x.v.reshape((x.v.shape[0],) + shape), x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        if x.ax is not None:
            out.ax = AI.expand_dims(x.ax, axis, r == 0)
        _prov1(out, x)
        out.lay = x.lay
        out.src = x.src
        st.rec.view(out, x, "expand", axis)
    return out


def broadcast_to(x, shape) -> tensor:
    x = to_tensor(x)
    shape = tuple(int(unwrap(s)) for s in shape)
    bs = broadcast_shapes(x.shape, shape)
    if bs != shape:
        fail(CompileError, f"cannot broadcast shape {list(x.shape)} to {list(shape)}")
    v = np.broadcast_to(vshape(x, shape), (x.v.shape[0],) + shape)
    out = tensor(v, x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        out.ax = broadcast_ax(x, shape)
        _prov1(out, x)
        out.src = x.src
        out.lay = x.lay
        st.rec.view(out, x, "bcast", None)
    return out


def reshape(x, shape) -> tensor:
    x = to_tensor(x)
    shape = tuple(int(unwrap(s)) for s in shape)
    n = int(np.prod(shape)) if shape else 1
    if n != x.numel:
        fail(CompileError, f"reshape: cannot reshape {list(x.shape)} ({x.numel} elements) to {list(shape)}")
    out = tensor(x.v.reshape((x.v.shape[0],) + shape), x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        _prov1(out, x)
        out.src = x.src
        st.rec.view(out, x, "reshape", None)
    return out


def permute(x, *dims) -> tensor:
    x = to_tensor(x)
    if len(dims) == 1 and isinstance(unwrap(dims[0]), (list, tuple)):
        dims = unwrap(dims[0])
    dims = tuple(int(unwrap(d)) for d in dims)
    if sorted(dims) != list(range(len(x.shape))):
        fail(CompileError, f"permute: {list(dims)} is not a permutation of the dimensions of {list(x.shape)}")
    shape = tuple(x.shape[d] for d in dims)
    out = tensor(x.v.transpose((0,) + tuple(d + 1 for d in dims)), x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        if x.ax is not None:
            out.ax = AI.permute(x.ax, dims)
        _prov1(out, x)
        out.src = x.src
        st.rec.view(out, x, "perm", dims)
    return out


def trans(x, *dims) -> tensor:
    x = to_tensor(x)
    if len(dims) == 1 and isinstance(unwrap(dims[0]), (list, tuple)):
        dims = unwrap(dims[0])
    if not dims:
        if len(x.shape) != 2:
            if len(x.shape) < 2:
                return x
            fail(CompileError, "trans without dims needs a 2-D tensor")
        dims = (1, 0)
    return permute(x, *dims)


# ---------------------------------------------------------------------------------------------------------
# casts
# ---------------------------------------------------------------------------------------------------------

def cast(x, dt, bitcast=False, fp_downcast_rounding=None) -> tensor:
    dt = unwrap(dt)
    if not isinstance(dt, dtype):
        fail(CompileError, f"{dt!r} is not a triton dtype")
    x = to_tensor(x)
    src = x.dtype
    if src == dt:
        return x
    st = ST
    if dt.is_ptr() or src.is_ptr():
        if dt.is_ptr() and src.is_ptr():
            return _cast_pointer(x, dt)
        if src.is_ptr() and dt in (int64, uint64):
            buf = x.buf
            v = (buf.base_addr + x.v.astype(np.int64) * buf.elem_bytes).astype(dt.np)
            return tensor(v, dt, x.shape)
        fail(UnsupportedConstruct, f"cast between {src!r} and {dt!r} is not supported")
    if bitcast:
        if src.primitive_bitwidth != dt.primitive_bitwidth:
            fail(CompileError, f"Cannot bitcast data-type of size {src.primitive_bitwidth} to data-type of size "
                               f"{dt.primitive_bitwidth}")
        raw = np.ascontiguousarray(to_storage(src, x.v))
        v = to_compute(dt, raw.view(dt.np_storage if dt is not bfloat16 else np.uint16))
        out = tensor(v, dt, x.shape)
        kind = "bitcast"
    else:
        with np.errstate(all="ignore"):
            if dt is int1:
                v = x.v != 0
            elif dt.is_floating():
                v = x.v.astype(dt.np)
                if dt in (float16, bfloat16):
                    v = round_to(dt, v)
            else:
                if src.is_floating():
                    v = np.trunc(x.v)
                    v = np.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0) if not np.all(np.isfinite(v)) else v
                    v = v.astype(np.int64).astype(dt.np)
                else:
                    v = x.v.astype(dt.np)
        out = tensor(v, dt, x.shape)
        kind = "cvt"
    if st is not None and st.rec is not None:
        if src.is_int() and dt.is_int() and x.ax is not None:
            out.ax = x.ax
        _prov1(out, x)
        st.rec.alu(out, (x,), kind if not (src.is_int() and dt.is_int()) else "icvt", src_dtype=src)
    return out


def _cast_pointer(x: tensor, dt: pointer_type) -> tensor:
    buf = x.buf
    e_old = buf.elem_bytes
    e_new = dt.element_ty.itemsize
    byte = x.v * e_old
    if np.any(byte % e_new):
        fail(UnsupportedConstruct, "pointer cast to a wider element type at an unaligned offset")
    flat = buf.flat
    nb = flat.nbytes // e_new * e_new
    view = flat.view(np.uint8)[:nb].view(dt.element_ty.np_storage if dt.element_ty is not bfloat16 else np.uint16)
    nbuf = Buffer(view, dt.element_ty, buf.base_addr, buf.name)
    out = tensor(byte // e_new, dt, x.shape)
    out.buf = nbuf
    out.ax = x.ax
    return out


# ---------------------------------------------------------------------------------------------------------
# control-flow helpers used by the rewritten kernel
# ---------------------------------------------------------------------------------------------------------

def cond_value(c):
    """A branch condition: a Python bool when every active program agrees, else a bool (P,) mask."""
    c = unwrap(c)
    if not isinstance(c, tensor):
        return bool(c)
    if c.shape:
        fail(CompileError, "a branch/loop condition must be a scalar, not a tensor of shape "
                           f"{list(c.shape)}")
    v = c.v
    if v.dtype != np.bool_:
        v = v != 0
    if v.shape[0] == 1:
        return bool(v[0])
    st = ST
    a = st.active()
    if a is None:
        if v.all():
            return True
        if not v.any():
            return False
        return v
    sel = v[a]
    if sel.all():
        return True
    if not sel.any():
        return False
    return v


def merge_values(mask: np.ndarray, new, old):
    """Value of a variable after a masked region: ``new`` for the programs in ``mask``, ``old`` elsewhere."""
    if new is old:
        return new
    new_u, old_u = unwrap(new), unwrap(old)
    nt, ot = isinstance(new_u, tensor), isinstance(old_u, tensor)
    if not nt and not ot:
        try:
            if new_u == old_u:
                return new
        except Exception:
            return new
        if not _is_scalar_py(new_u) or not _is_scalar_py(old_u):
            return new
    if not nt and not _is_scalar_py(new_u):
        return new
    if not ot and not _is_scalar_py(old_u):
        return new
    tn = new_u if nt else to_tensor(new_u)
    to = old_u if ot else to_tensor(old_u)
    if tn.dtype.is_ptr() != to.dtype.is_ptr():
        return new
    if tn.shape != to.shape:
        if tn.numel == to.numel or not tn.shape or not to.shape:
            shape = broadcast_shapes(tn.shape, to.shape)
        else:
            return new
    else:
        shape = tn.shape
    dt = tn.dtype
    vn = vshape(tn, shape)
    vo = vshape(to, shape)
    if not dt.is_ptr() and to.dtype != dt:
        vo = vo.astype(dt.np)
    P = mask.shape[0]
    m = mask.reshape((P,) + (1,) * len(shape))
    v = np.where(m, vn, vo)
    out = tensor(v, dt, shape)
    out.buf = tn.buf
    if tn.buf is not None and to.buf is not None and tn.buf is not to.buf:
        if tn.buf.flat is not to.buf.flat:
            fail(UnsupportedConstruct, "a pointer variable points into different arguments in different programs")
    out.ax = AI.join(tn.ax, to.ax) if (tn.ax is not None and to.ax is not None) else None
    out.lay = tn.lay or to.lay
    out.src = tn.src
    out.lsrc = tn.lsrc
    ds = tn.dsrc
    if to.dsrc:
        ds = to.dsrc if not ds else (ds | to.dsrc)
    out.dsrc = ds
    return out


def program_values(t: tensor) -> np.ndarray:
    st = ST
    v = t.v
    if v.shape[0] == 1 and st.P != 1:
        v = np.broadcast_to(v, (st.P,) + v.shape[1:])
    return v


def erf_np(x: np.ndarray) -> np.ndarray:
    """erf: math.erf per element for small arrays, else Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7)."""
    if x.size <= 4096:
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    s = np.sign(x)
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-a * a)
    return (s * y).astype(x.dtype)
