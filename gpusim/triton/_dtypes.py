"""Triton's type system as gpusim runs it: dtypes, ``constexpr``, and rounding values to their storage type.

Value representation (what Triton computes, to within rounding): fp16/bf16 values are float32 arrays rounded
to the storage type wherever Triton rounds (``round_to``: arithmetic results of that type, loads, stores,
``.to``); fp32, fp64 and the integer types use their numpy types (int32 wraps like the GPU); int1 is bool.
``to_compute`` / ``to_storage`` convert between an argument's memory (storage dtype) and those arrays.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedConstruct


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

    def is_fp8(self):
        return self.name.startswith("fp8")

    def is_fp8e4nv(self):
        return self.name == "fp8e4nv"

    def is_fp8e5(self):
        return self.name == "fp8e5"

    def is_fp8e4b15(self):
        return self.name == "fp8e4b15"

    def is_fp8e4b8(self):
        return self.name == "fp8e4b8"

    def is_fp8e5b16(self):
        return self.name == "fp8e5b16"

    def is_block(self):
        return False

    @property
    def int_bitwidth(self):
        return self.primitive_bitwidth

    @property
    def fp_mantissa_width(self):
        return {"fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52, "fp8e5": 2, "fp8e4nv": 3}.get(self.name, 0)

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
        self.const = const              # a ``tl.const`` argument: stores through it are refused

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


class fp8_dtype(dtype):
    """An OCP fp8 format the H100 executes (``tl.float8e5`` = E5M2, ``tl.float8e4nv`` = E4M3FN): values computed as
    float32 on the format's grid, stored as its byte.  ``exp_bits``/``man_bits``: the fields; ``bias``; ``inf``:
    whether the format has infinities (E5M2) or not (E4M3FN: its top code is NaN).  Conversions into it round to
    nearest even and saturate to the largest finite value (PTX ``cvt.rn.satfinite``, what Triton emits on sm_90)."""

    def __init__(self, long_name: str, name: str, exp_bits: int, man_bits: int, bias: int, inf: bool):
        super().__init__(name, 8, "f", np.float32, np.uint8)
        self.long_name = long_name
        self.man_bits = man_bits
        codes = np.arange(256, dtype=np.int64)
        sign = np.where(codes & 0x80, -1.0, 1.0)
        e = (codes >> man_bits) & ((1 << exp_bits) - 1)
        m = codes & ((1 << man_bits) - 1)
        sub = e == 0
        val = np.where(sub, m * 2.0 ** (1 - bias - man_bits), (1 + m / (1 << man_bits)) * 2.0 ** (e - bias))
        top = (1 << exp_bits) - 1
        if inf:
            val = np.where((e == top) & (m == 0), np.inf, val)
            val = np.where((e == top) & (m != 0), np.nan, val)
        else:
            val = np.where((e == top) & (m == (1 << man_bits) - 1), np.nan, val)
        #: code -> value (float32), the decode table
        self.table = (sign * val).astype(np.float32)
        pos = self.table[:128]
        finite = np.isfinite(pos)
        #: the positive finite values in code order (increasing), for encoding
        self.pos_values = pos[finite]
        self.max_finite = float(self.pos_values[-1])
        self.min_normal = 2.0 ** (1 - bias)
        self.sub_step = 2.0 ** (1 - bias - man_bits)

    def round(self, v: np.ndarray) -> np.ndarray:
        """float32 values -> the nearest value of this format (ties to even, saturating), kept as float32."""
        v = np.ascontiguousarray(v, np.float32)
        a = np.abs(v)
        drop = 23 - self.man_bits
        with np.errstate(all="ignore"):
            u = np.minimum(a, np.float32(self.max_finite * 2)).view(np.uint32)
            half = np.uint32((1 << (drop - 1)) - 1)
            r = ((u + half + ((u >> np.uint32(drop)) & np.uint32(1))) >> np.uint32(drop) << np.uint32(drop))
            r = r.view(np.float32)
            sub = a < self.min_normal
            if sub.any():
                r = r.copy()
                r[sub] = (np.rint(a[sub] / self.sub_step) * self.sub_step).astype(np.float32)
            r = np.minimum(r, np.float32(self.max_finite))
            out = np.copysign(r, v).astype(np.float32)
        nan = np.isnan(v)
        if nan.any():
            out[nan] = np.nan
        return out

    def encode(self, v: np.ndarray) -> np.ndarray:
        """Values (float32, rounded to this format or not) -> their bytes."""
        r = self.round(v)
        a = np.abs(r)
        code = np.searchsorted(self.pos_values, a).astype(np.uint8)
        code |= np.signbit(r).astype(np.uint8) << np.uint8(7)
        nan = np.isnan(r)
        if nan.any():
            code[nan] = 0x7F
        return code

    def decode(self, b: np.ndarray) -> np.ndarray:
        return self.table[np.asarray(b).view(np.uint8)]

    def __repr__(self):
        return f"triton.language.{self.long_name}"


class unsupported_dtype(dtype):
    """A Triton type gpusim does not execute (the fp8 formats of other GPUs: float8e4b15, float8e4b8, float8e5b16):
    comparisons work (``dtype == tl.float8e4b15`` in a constexpr branch), any use in a cast, a constant, a pointer
    type or an argument is refused naming it."""

    def __init__(self, long_name: str, name: str, bits: int):
        super().__init__(name, bits, "f", None, None)
        self.long_name = long_name

    def why(self) -> str:
        return (f"tl.{self.long_name} is not supported by gpusim: an fp8 format the H100's tensor cores do not take "
                "(use tl.float8e5 or tl.float8e4nv)")

    def __repr__(self):
        return f"triton.language.{self.long_name}"


float8e5 = fp8_dtype("float8e5", "fp8e5", 5, 2, 15, inf=True)
float8e4nv = fp8_dtype("float8e4nv", "fp8e4nv", 4, 3, 7, inf=False)
float8e4b15 = unsupported_dtype("float8e4b15", "fp8e4b15", 8)
float8e4b8 = unsupported_dtype("float8e4b8", "fp8e4b8", 8)
float8e5b16 = unsupported_dtype("float8e5b16", "fp8e5b16", 8)
FP8 = (float8e5, float8e4nv)

#: the float types kept as float32 values on a coarser grid (rounded after every operation)
ROUNDED = (float16, bfloat16, float8e5, float8e4nv)

_LONG = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}
ALL_DTYPES = [int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64,
              float8e5, float8e4nv]
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
# the tensor
# ---------------------------------------------------------------------------------------------------------

class block_type:
    """Triton's ``block_type``: a tile's type (``x.type``; a block pointer's ``ptr.type.element_ty``)."""

    def __init__(self, element_ty, shape):
        self.element_ty = element_ty
        self.shape = [unwrap(s) for s in shape]
        self.scalar = element_ty
        self.numel = int(np.prod(self.shape)) if self.shape else 1
        self.name = f"<{self.shape}, {element_ty}>"

    def is_block(self):
        return True

    def is_ptr(self):
        return False

    def get_block_shapes(self):
        return tuple(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * (self.element_ty.primitive_bitwidth // 8)

    def __eq__(self, other):
        return isinstance(other, block_type) and self.element_ty == other.element_ty and self.shape == other.shape

    def __hash__(self):
        return hash((self.element_ty, tuple(self.shape)))

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"<{self.shape}, {self.element_ty!r}>"


def scalar_of(t):
    """A block type's scalar type (Triton's ``.scalar``); any other value as it is."""
    return t.scalar if isinstance(t, block_type) else t


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
    if isinstance(dt, fp8_dtype):
        return dt.round(v)
    return v


def to_compute(dt: dtype, raw: np.ndarray) -> np.ndarray:
    """Storage array -> compute array."""
    if dt is bfloat16:
        return bf16_from_bits(raw.view(np.uint16) if raw.dtype.itemsize == 2 else raw)
    if dt is float16:
        return raw.astype(np.float32)
    if isinstance(dt, fp8_dtype):
        return dt.decode(raw)
    return raw


def to_storage(dt: dtype, v: np.ndarray) -> np.ndarray:
    if dt is bfloat16:
        return bf16_bits(v)
    if dt is float16:
        return np.asarray(v, np.float32).astype(np.float16)
    if isinstance(dt, fp8_dtype):
        return dt.encode(v)
    return np.asarray(v).astype(dt.np_storage, copy=False)
