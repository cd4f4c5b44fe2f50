"""numba's type names, as ``gpusim.cuda.types`` (and ``from gpusim.cuda import float32``): ``numba.cuda.types``.

The scalar types (``float32``, ``int64``, ``boolean``, ``void`` ...) are what kernels use in signatures
(``cuda.jit("void(float32[:], float32[:])")``, ``cuda.jit((int32[:, ::1],))``), in array declarations
(``cuda.local.array(3, float32)``, ``cuda.shared.array(16, dtype=float32)``) and as conversions
(``float32(x)``, inside a kernel or on the host).  Slicing a scalar type makes an array type as numba does:
``float32[:]`` is a 1-d array of any layout (``array(float32, 1d, A)``), ``float32[::1]`` a C-contiguous one,
``int32[:, ::1]`` a 2-d C-contiguous one, ``float32[::1, :]`` a 2-d Fortran one.  A type called with types
makes a signature: ``void(float32[:])``; ``CPointer(uint8)`` is a raw pointer argument (launched with a
simulated device address, ``x.__cuda_array_interface__["data"][0]``).  Signatures key ``kernel.overloads`` by
their argument types, as numba's do (``typeof`` gives the types of launch arguments).

Only what the front end needs: names, numpy dtypes, equality and hashing; no type inference.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Type", "Scalar", "Array", "Record", "CPointer", "Signature", "NoneType", "typeof", "parse_signature",
           "from_dtype",
           "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "boolean", "bool_", "void", "none", "complex64", "complex128", "intp", "uintp", "f2", "f4", "f8", "i1",
           "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1", "c8", "c16", "int_", "float_", "double", "byte"]


class Type:
    """A numba type: compared and hashed by its name (numba's convention)."""

    name = "type"

    def __eq__(self, other):
        return isinstance(other, Type) and type(other) is type(self) and other.key() == self.key()

    def __hash__(self):
        return hash((type(self).__name__, self.key()))

    def key(self):
        return self.name

    def __repr__(self):
        return self.name

    __str__ = __repr__


def _layout(idx) -> tuple[int, str]:
    """(ndim, layout) of ``T[idx]``: slices only, ``::1`` on the last axis = C, on the first = F."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    if not parts or not all(isinstance(p, slice) for p in parts):
        raise TypeError(f"array types are written with slices (float32[:], int32[:, ::1]), not {idx!r}")
    for p in parts:
        if p.start is not None or p.stop is not None or p.step not in (None, 1):
            raise TypeError(f"array type slice {p!r}: only ':' and '::1' are allowed")
    unit = [p.step == 1 for p in parts]
    n = len(parts)
    if not any(unit):
        return n, "A"
    if unit == [False] * (n - 1) + [True]:
        return n, "C"
    if unit == [True] + [False] * (n - 1):
        return n, "F"
    raise TypeError(f"array type {idx!r}: '::1' must be on the first (F) or the last (C) axis")


class Scalar(Type):
    """A numeric scalar type; calling it converts (``float32(1.5)``) or, with types, makes a signature."""

    def __init__(self, name: str, dtype):
        self.name = name
        self.dtype = np.dtype(dtype)

    def __call__(self, *args):
        if args and all(isinstance(a, Type) for a in args):
            return Signature(self, args)
        if len(args) != 1:
            raise TypeError(f"{self.name}() takes one value")
        return self.dtype.type(args[0])

    def __getitem__(self, idx):
        ndim, layout = _layout(idx)
        return Array(self, ndim, layout)

    @property
    def bitwidth(self) -> int:
        return self.dtype.itemsize * 8

    @property
    def underlying_float(self) -> "Scalar":
        """A complex type's float type (numba's ``Complex.underlying_float``)."""
        if self.dtype.kind != "c":
            raise AttributeError(f"{self.name} has no underlying_float (not a complex type)")
        return float32 if self.dtype.itemsize == 8 else float64


class NoneType(Type):
    """``void`` / ``none``: the return type of kernels."""

    def __init__(self, name="none"):
        self.name = name

    def key(self):
        return "none"

    def __call__(self, *args):
        if all(isinstance(a, Type) for a in args):
            return Signature(self, args)
        raise TypeError("void() takes types (a signature), not values")


class Array(Type):
    """``array(dtype, ndim, layout)``."""

    def __init__(self, dtype: Type, ndim: int, layout: str = "A", readonly: bool = False):
        self.dtype = dtype
        self.ndim = int(ndim)
        self.layout = layout
        self.readonly = readonly
        ro = "readonly " if readonly else ""
        self.name = f"{ro}array({dtype}, {self.ndim}d, {layout})"

    def key(self):
        return (self.dtype.key() if isinstance(self.dtype, Type) else str(self.dtype), self.ndim, self.layout,
                self.readonly)

    def __call__(self, *args):
        if all(isinstance(a, Type) for a in args):
            return Signature(self, args)
        raise TypeError("an array type called with values")


class Record(Type):
    """A structured dtype (numba's ``Record``): ``xoroshiro128p_type`` of ``gpusim.cuda.random``."""

    def __init__(self, dtype: np.dtype):
        self.dtype = np.dtype(dtype)
        fields = ",".join(f"{n}[type={from_dtype(self.dtype.fields[n][0])};offset={self.dtype.fields[n][1]}]"
                          for n in self.dtype.names)
        self.name = f"Record({fields};{self.dtype.itemsize};{self.dtype.isalignedstruct})"

    def key(self):
        return self.name

    def __getitem__(self, idx):
        ndim, layout = _layout(idx)
        return Array(self, ndim, layout)


class NestedArray(Type):
    """An array field of a record (numba's ``NestedArray``): ``nestedarray(uint8, (5,))``."""

    def __init__(self, dtype: Type, shape: tuple):
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        self.ndim = len(self.shape)
        self.name = f"nestedarray({dtype}, {self.shape})"


class CPointer(Type):
    """``CPointer(dtype)``: a raw pointer argument (launched with a device address, e.g.
    ``x.__cuda_array_interface__["data"][0]``); indexed like a 1-d array of ``dtype``."""

    def __init__(self, dtype: Type):
        self.dtype = dtype
        self.name = f"CPointer({dtype})"

    def key(self):
        return self.name


class Signature:
    """``return_type(arg, ...)``; ``args`` keys ``kernel.overloads``."""

    def __init__(self, return_type, args):
        self.return_type = return_type
        self.args = tuple(args)

    def __eq__(self, other):
        return isinstance(other, Signature) and (self.return_type, self.args) == (other.return_type, other.args)

    def __hash__(self):
        return hash((self.return_type, self.args))

    def __repr__(self):
        return f"{self.return_type}({', '.join(map(str, self.args))})"


float16 = f2 = Scalar("float16", np.float16)
float32 = f4 = Scalar("float32", np.float32)
float64 = f8 = float_ = double = Scalar("float64", np.float64)
int8 = i1 = byte = Scalar("int8", np.int8)
int16 = i2 = Scalar("int16", np.int16)
int32 = i4 = Scalar("int32", np.int32)
int64 = i8 = intp = int_ = Scalar("int64", np.int64)
uint8 = u1 = Scalar("uint8", np.uint8)
uint16 = u2 = Scalar("uint16", np.uint16)
uint32 = u4 = Scalar("uint32", np.uint32)
uint64 = u8 = uintp = Scalar("uint64", np.uint64)
boolean = bool_ = b1 = Scalar("bool", np.bool_)
complex64 = c8 = Scalar("complex64", np.complex64)
complex128 = c16 = Scalar("complex128", np.complex128)
void = NoneType("none")
none = void

_BY_DTYPE = {t.dtype: t for t in (float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
                                  uint64, boolean, complex64, complex128)}
#: the names a signature string may use (numba's type namespace, the part kernels use)
NAMESPACE = {n: globals()[n] for n in __all__ if isinstance(globals().get(n), Type)}


def from_dtype(dt) -> Type:
    """The numba type of a numpy dtype (numba's ``numpy_support.from_dtype``)."""
    dt = np.dtype(dt)
    if dt.names is not None:
        return Record(dt)
    if dt.subdtype is not None:                 # a nested array field of a record: ('u1', (5,))
        return NestedArray(from_dtype(dt.subdtype[0]), dt.subdtype[1])
    t = _BY_DTYPE.get(dt)
    if t is None:
        raise TypeError(f"dtype {dt} has no numba type here")
    return t


def typeof(value) -> Type:
    """numba's ``typeof`` for launch arguments: arrays (by dtype, ndim, layout), Python and numpy scalars."""
    if isinstance(value, (bool, np.bool_)):
        return boolean
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return float64
    if isinstance(value, complex):
        return complex128
    if isinstance(value, np.generic):
        return from_dtype(value.dtype)
    if isinstance(value, tuple):
        return Tuple(tuple(typeof(v) for v in value),
                     type(value) if isinstance(getattr(type(value), "_fields", None), tuple) else None)
    a = getattr(value, "_ary", value)
    if not isinstance(a, np.ndarray) and (type(value).__module__ or "").startswith("torch"):
        from .memory import as_device_storage     # a torch tensor: typed as the array it is (numba reads its
        a = as_device_storage(value)               # __cuda_array_interface__ on a GPU)
    if isinstance(a, np.ndarray):
        layout = "C" if a.flags.c_contiguous else ("F" if a.flags.f_contiguous else "A")
        return Array(from_dtype(a.dtype), a.ndim, layout)
    raise TypeError(f"no numba type for {type(value).__name__}")


class Tuple(Type):
    """A tuple's type; ``pyclass``: a namedtuple's class (numba's NamedTuple / NamedUniTuple)."""

    def __init__(self, types, pyclass=None):
        self.types = tuple(types)
        self.pyclass = pyclass
        self.name = f"UniTuple({self.types[0]} x {len(self.types)})" if self.types and \
            all(t == self.types[0] for t in self.types) else f"Tuple({', '.join(map(str, self.types))})"
        if pyclass is not None:
            self.name = f"{pyclass.__name__}({', '.join(map(str, self.types))})"


def parse_signature(sig) -> Signature:
    """A signature as ``cuda.jit`` takes it: ``"void(float32[:], int32)"``, ``void(float32[:])``, or a tuple of
    argument types ``(int32[:, ::1],)`` (return type none)."""
    if isinstance(sig, Signature):
        return sig
    if isinstance(sig, str):
        try:
            r = eval(sig, {"__builtins__": {}}, dict(NAMESPACE))      # noqa: S307 - a type expression
        except Exception as e:
            raise TypeError(f"cannot parse the signature {sig!r}: {e} (write e.g. 'void(float32[:], int32)')") \
                from None
        if isinstance(r, Signature):
            return r
        if isinstance(r, Type):
            return Signature(void, (r,))
        if isinstance(r, tuple) and all(isinstance(t, Type) for t in r):
            return Signature(void, r)
        raise TypeError(f"signature {sig!r} is not a signature")
    if isinstance(sig, tuple) and all(isinstance(t, Type) or _is_numba_type(t) for t in sig):
        return Signature(void, sig)
    if isinstance(sig, Type):
        return Signature(void, (sig,))
    if _is_numba_type(sig) and hasattr(sig, "args"):           # numba's own Signature
        return Signature(getattr(sig, "return_type", void), tuple(sig.args))
    raise TypeError(f"{sig!r} is not a signature (a string, a signature, or a tuple of types)")


def _is_numba_type(t) -> bool:
    return (type(t).__module__ or "").startswith("numba")
