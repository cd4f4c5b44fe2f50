"""CUDA vector types in kernels, as numba-cuda has them: ``cuda.float32x4(a, b, c, d)``, ``cuda.int2(i, j)``.

numba-cuda names one type per base type (int8 .. uint64, float32, float64) and width 1..4 (``float32x3``), with the C
aliases (``float3``, ``double2``, ``int4``, ``uchar4``, ``longlong2`` ...).  A constructor takes scalars (converted to
the base type) and vectors of the same base type, as many elements in all as the width: ``float32x4(v2, z, w)``.
A vector is immutable; its elements are ``.x``, ``.y``, ``.z``, ``.w`` (read only); it is passed to and returned
from device functions.  It is not indexable and has no arithmetic (numba-cuda types none).

In the SIMT machine a vector is a ``Vec``: a tuple of per-lane values with its type's name.  Building one and
reading its elements are register moves, which the compiler folds: nothing is recorded.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError

_BASES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
_ATTRS = ("x", "y", "z", "w")
#: the C names numba-cuda gives the vector types (``float3`` is ``float32x3``), by the numpy C types' sizes
_ALIASES = {"char": np.byte, "short": np.short, "int": np.intc, "long": np.int_, "longlong": np.longlong,
            "uchar": np.ubyte, "ushort": np.ushort, "uint": np.uintc, "ulong": np.uint, "ulonglong": np.ulonglong,
            "float": np.single, "double": np.double}

#: vector type name -> (base dtype, number of elements), the canonical names only
VECTOR_TYPES: dict = {f"{b}x{n}": (np.dtype(b), n) for b in _BASES for n in (1, 2, 3, 4)}


class VectorType:
    """``cuda.float32x4`` (and its aliases) on the host: a constructor that only kernels call."""

    def __init__(self, name: str):
        self._gpusim_vector = name
        self.__name__ = name
        self.aliases: list = []

    def __call__(self, *args):
        raise RuntimeError(f"cuda.{self.__name__} can only be used inside a kernel")

    def __repr__(self):
        return f"<gpusim.cuda vector type {self.__name__}>"


def _stubs() -> dict:
    out = {name: VectorType(name) for name in VECTOR_TYPES}
    for alias, ctype in _ALIASES.items():
        base = np.dtype(ctype).name
        for n in (1, 2, 3, 4):
            stub = out[f"{base}x{n}"]
            stub.aliases.append(f"{alias}{n}")
            out[f"{alias}{n}"] = stub
    return out


#: every name numba-cuda exports for a vector type (canonical and aliases) -> its stub
STUBS = _stubs()


class Vec(tuple):
    """A vector value: its elements (``V``s of the base dtype), ``vname`` the type's canonical name."""

    def __new__(cls, vname, items):
        t = super().__new__(cls, items)
        t.vname = vname
        return t


class Vectors:
    """The chunk's vector values (a mixin of ``runtime.Chunk``)."""

    def vector_make(self, vname, args, line) -> Vec:
        """``cuda.float32x4(...)``: scalars converted to the base type, vectors of that base type spread."""
        base, n = VECTOR_TYPES[vname]
        items = []
        for a in args:
            if type(a) is Vec:
                if VECTOR_TYPES[a.vname][0] != base:
                    raise self._vector_error(vname, args, line)
                items.extend(a)
            elif isinstance(a, tuple) or a is None:
                raise self._vector_error(vname, args, line)
            else:
                items.append(self.cast(a, base, line))
        if len(items) != n:
            raise self._vector_error(vname, args, line)
        return Vec(vname, items)

    def _vector_error(self, vname, args, line):
        from .values import kind_name
        got = ", ".join(a.vname if type(a) is Vec else kind_name(a) if not isinstance(a, (int, float)) else
                        type(a).__name__ for a in args)
        return self._err(CompileError, f"No implementation of function Function(<class "
                                       f"'numba.cuda.stubs.{vname}'>) found for signature: {vname}({got}) (a "
                                       f"{vname} is built from {VECTOR_TYPES[vname][1]} {VECTOR_TYPES[vname][0]} "
                                       f"elements: scalars and {VECTOR_TYPES[vname][0]} vectors)", line)

    def vector_attr(self, v: Vec, name, line):
        n = len(v)
        if name in _ATTRS[:n]:
            return v[_ATTRS.index(name)]
        raise self._err(CompileError, f"Unknown attribute '{name}' of type {v.vname}", line)
