"""The values a kernel computes, as the SIMT machine holds them: one lane per thread, in registers and arrays.

A runtime value (``V``) is a numpy array with one element per lane of a chunk of CTAs, stored with broadcasting
so that it costs only what it varies over: shape ``(C, P)`` in general, ``(1, P)`` for values that depend on the
thread index only, ``(C, 1)`` for per-CTA values, and a numpy scalar for values uniform over the chunk; it
carries the scoreboard dependencies (``deps``: indices of the pending long-latency ops it came from) and whether
the compiler knows it (``const``).  Here also: numba's typing rules (``arith_type``, ``unify``), the active-lane
masks (``Mask``, ``m_and``/``m_andnot``/``m_or``) and the arrays a kernel indexes -- global (device memory,
``base_addr`` in bytes), shared (per CTA, byte ``offset`` in its shared memory) and local (per thread, byte
``offset`` in its local frame) and the views slicing makes of them (``SubArray``: ``a[i]`` of a 2-d array;
``ArrayView``: any other slice).  Every other module of the SIMT runtime builds on these; this one imports none of
them.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np

from ..errors import CompileError, UnsupportedConstruct

I64 = np.dtype(np.int64)
U64 = np.dtype(np.uint64)
F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BOOL = np.dtype(np.bool_)
I32 = np.dtype(np.int32)
U32 = np.dtype(np.uint32)

_serial = itertools.count(1)


# ---- values ---------------------------------------------------------------------------------------------------

class V:
    """A runtime value: ``v`` (numpy scalar = uniform, or array of shape (C|1, P|1)), the indices of the
    pending long-latency ops it came from (``deps``), and whether the compiler knows it (``const``)."""

    __slots__ = ("v", "deps", "const", "sid", "nn", "base", "pow2")

    def __init__(self, v, deps=(), const=False, nn=False):
        self.v = v
        self.deps = deps
        self.const = const
        self.sid = 0
        self.nn = nn            # the compiler knows the value is >= 0 (no negative-index wraparound)
        # (key of a value u, c): this value is u + c with the sign of u (u >= 0, or u a multiple of 2^m and
        # 0 <= c < 2^m), so an access at it is the access at u with c elements of immediate offset
        self.base = None
        self.pow2 = 0           # m when the value is a known multiple of 2^m (a product by a constant 2^m)

    def key(self) -> int:
        if not self.sid:
            self.sid = next(_serial)
        return self.sid

    def __repr__(self) -> str:
        return f"V({self.v!r}, deps={self.deps}, const={self.const})"


class _Undef:
    __slots__ = ()

    def __repr__(self):
        return "<undefined>"


UNDEF = _Undef()


class Ununified:
    """A variable assigned values of two kinds on two paths (a number and a tuple or an array): numba cannot
    unify their types where the paths join, so any use of it is an error (an unused one is dropped, as numba
    drops the dead join)."""

    __slots__ = ("name", "a", "b", "why")

    def __init__(self, name, a, b, why=None):
        self.name, self.a, self.b, self.why = name, a, b, why

    @property
    def error(self):
        """The error class to raise: numba's unification failure, or (``why`` given) a limit of gpusim's."""
        return UnsupportedConstruct if self.why else CompileError

    def message(self) -> str:
        if self.why:
            return self.why
        return f"Cannot unify {kind_name(self.a)} and {kind_name(self.b)} for {self.name!r}"


def kind_name(x) -> str:
    """numba's name of the type of a value of the chunk (for error messages)."""
    if isinstance(x, V):
        return str(x.v.dtype)
    if isinstance(x, ARRAYS):
        return f"array({x.dtype}, {x.ndim}d)"
    if isinstance(x, tuple):
        if hasattr(x, "vname"):                   # a vector type's value (vectors.Vec)
            return x.vname
        return "Tuple(" + ", ".join(kind_name(e) for e in x) + ")"
    if isinstance(x, Dim3):
        return "Dim3"
    if type(x).__name__ == "RecordRef":
        from .types import from_dtype
        return str(from_dtype(x.dtype))
    return type(x).__name__


def _fix(x):
    """0-d arrays (numpy's result of all-scalar ops) back to numpy scalars."""
    if type(x) is np.ndarray and x.ndim == 0:
        return x[()]
    return x


#: a value keeps at most this many producers (the most recent ones).  Masked merges inside divergent loops
#: would otherwise accumulate every earlier producer; the older ones have long completed on the hardware.
MAX_DEPS = 8


def convert(x, dt: np.dtype):
    """``x`` (a numpy scalar or array) as ``dt``, as the GPU converts: a float to a 32- or 64-bit integer is
    truncated and clamped to the integer's range, NaN to 0 (PTX ``cvt.rzi``, which numba-cuda's ``fptosi`` /
    ``fptoui`` lower to), where numpy's cast of an out-of-range value is undefined (x86 gives INT_MIN)."""
    x = np.asarray(x) if not isinstance(x, (np.ndarray, np.generic)) else x
    if x.dtype.kind != "f" or dt.kind not in "iu" or dt.itemsize < 4:
        return x.astype(dt)
    info = np.iinfo(dt)
    with np.errstate(invalid="ignore"):
        hi = x >= float(info.max)
        lo = x <= float(info.min)
        bad = hi | lo | np.isnan(x)
        if not np.any(bad):
            return x.astype(dt)
        r = np.where(bad, 0, x).astype(dt)
    return _fix(np.where(hi, dt.type(info.max), np.where(lo, dt.type(info.min), r)).astype(dt))


def _union(a: tuple, b: tuple) -> tuple:
    if not a:
        return b
    if not b or a == b:
        return a
    u = sorted(set(a) | set(b))
    return tuple(u[-MAX_DEPS:]) if len(u) > MAX_DEPS else tuple(u)


def const(x) -> V:
    """A compile-time constant as numba types it: bool, int -> int64, float -> float64, numpy scalars kept."""
    if isinstance(x, (bool, np.bool_)):
        return V(np.bool_(x), (), True)
    if isinstance(x, int):
        if 2 ** 63 <= x < 2 ** 64:                 # numba types a literal past int64 as uint64 (0x8000000000000000)
            return V(np.uint64(x), (), True)
        return V(np.int64(x), (), True)
    if isinstance(x, float):
        return V(np.float64(x), (), True)
    if isinstance(x, complex):
        return V(np.complex128(x), (), True)
    if isinstance(x, np.generic):
        return V(x, (), True)
    raise TypeError(f"not a numeric constant: {x!r}")


# ---- typing (numba's rules) -------------------------------------------------------------------------------------

_ARITH_CACHE: dict = {}


def arith_type(ta: np.dtype, tb: np.dtype) -> np.dtype:
    """Result type of + - * // % ** between two numba scalar types (integers widen to 64 bit)."""
    key = (ta, tb)
    r = _ARITH_CACHE.get(key)
    if r is not None:
        return r
    ka, kb = ta.kind, tb.kind
    if ka == "c" or kb == "c":
        # numba: complex64 only when every operand fits it (complex64, float32); ints and float64 make complex128
        small = all((t.kind == "c" and t.itemsize == 8) or (t.kind == "f" and t.itemsize <= 4) for t in (ta, tb))
        r = np.dtype(np.complex64 if small else np.complex128)
        _ARITH_CACHE[key] = r
        return r
    if ka in "iub" and kb in "iub":
        # numba: integers widen to 64 bit; unsigned only when both operands are (uint64 op int64 -> int64)
        r = U64 if (ka == "u" and kb == "u") else I64
    elif ka == "f" and kb == "f":
        r = ta if ta.itemsize >= tb.itemsize else tb
    elif ka == "f" or kb == "f":
        f, o = (ta, tb) if ka == "f" else (tb, ta)
        r = f if o.kind == "b" else F64
    else:
        raise CompileError(f"arithmetic on {ta} and {tb} is not supported")
    _ARITH_CACHE[key] = r
    return r


def unify(ta: np.dtype, tb: np.dtype) -> np.dtype:
    """Type of a variable assigned values of both types at a control-flow join, and of ``min``/``max``
    (numba follows numpy's promotion here: int32|int64 -> int64, uint64|int64 -> float64)."""
    if ta == tb:
        return ta
    return np.result_type(ta, tb)


_SHORT = {"f2": "f16", "f4": "f32", "f8": "f64", "i1": "i32", "i2": "i32", "i4": "i32", "i8": "i64",
          "u1": "u32", "u2": "u32", "u4": "u32", "u8": "u64", "b1": "b", "c8": "c64", "c16": "c128"}


def short(dt: np.dtype) -> str:
    return _SHORT[dt.kind + str(dt.itemsize)]


# ---- masks ------------------------------------------------------------------------------------------------------

class Mask:
    """Active lanes: ``a`` is None (every lane of the chunk) or a bool array broadcastable to (C, P).
    ``rid`` caches the trace row (per-warp active-lane counts) once computed; ``sid`` identifies the mask."""

    __slots__ = ("a", "rid", "sid")

    def __init__(self, a):
        self.a = a
        self.rid = -1
        self.sid = next(_serial)


EMPTY = Mask(False)


def m_and(m: Mask, c) -> Mask:
    if m is EMPTY:
        return EMPTY
    if type(c) is np.ndarray:
        r = c if m.a is None else (m.a & c)
        return Mask(r) if r.any() else EMPTY
    return m if c else EMPTY


def m_andnot(m: Mask, c) -> Mask:
    if m is EMPTY:
        return EMPTY
    if type(c) is np.ndarray:
        r = ~c if m.a is None else (m.a & ~c)
        return Mask(r) if r.any() else EMPTY
    return EMPTY if c else m


def m_or(a: Mask, b: Mask) -> Mask:
    if a is EMPTY:
        return b
    if b is EMPTY or a is b:
        return a
    if a.a is None:
        return a
    if b.a is None:
        return b
    return Mask(a.a | b.a)


# ---- arrays -----------------------------------------------------------------------------------------------------

class ArrayRef:
    """An array a kernel indexes: global (argument or constant), shared (per CTA) or local (per thread)."""

    space = "global"

    def __init__(self, name: str, shape: tuple, dtype: np.dtype):
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.itemsize = self.dtype.itemsize
        self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        el = []
        acc = 1
        for s in reversed(self.shape):
            el.append(acc)
            acc *= s
        self.el_strides = tuple(reversed(el))
        self.key = next(_serial)
        self.pkey = self.key            # the key its kernel parameters (data pointer, shape) are read under
        self.record = self.dtype.names is not None      # a structured dtype (the cuda.random states)
        self._flat = None

    def flat(self) -> "ArrayRef":
        """This array's storage as one 1-d array (its element offsets, the same addresses): views index it."""
        if self._flat is None:
            f = copy.copy(self)
            if self.space == "global" or self.space == "const":
                n = len(self.span)
            else:
                n = self.storage.shape[-1]
            f.shape, f.ndim, f.size, f.el_strides = (n,), 1, n, (1,)
            f.key = next(_serial)       # its own accesses' caches; the parameters stay the base's (pkey)
            f._flat = f
            self._flat = f
        return self._flat


class GlobalArray(ArrayRef):
    """A kernel argument (or a global numpy array frozen as a constant) in device memory."""

    def __init__(self, name: str, ary: np.ndarray, base_addr: int, readonly: bool = False):
        super().__init__(name, ary.shape, ary.dtype)
        self.ary = ary
        self.base_addr = int(base_addr)
        self.readonly = readonly
        self.space = "const" if readonly else "global"
        isz = ary.itemsize
        if any(s < 0 or s % isz for s in ary.strides):
            raise UnsupportedConstruct(f"array argument {name!r} has negative or misaligned strides "
                                       f"{ary.strides}; pass a contiguous copy")
        if ary.flags.c_contiguous:
            self.span = ary.reshape(-1)
        else:
            self.el_strides = tuple(s // isz for s in ary.strides)
            extent = 1 + sum((n - 1) * s for n, s in zip(ary.shape, self.el_strides)) if ary.size else 0
            self.span = np.lib.stride_tricks.as_strided(ary, shape=(extent,), strides=(isz,))


class SharedArray(ArrayRef):
    space = "shared"

    def __init__(self, name, shape, dtype, offset: int, flatview: np.ndarray, row_el: int, n_ctas: int):
        super().__init__(name, shape, dtype)
        self.offset = offset            # byte offset in the CTA's shared memory
        self.flatview = flatview        # the chunk's whole shared memory as one 1-D array of this dtype
        start = offset // self.itemsize
        n = self.size if self.shape else 0
        # (C, n) view of this array in every CTA of the chunk
        self.storage = flatview.reshape(n_ctas, row_el)[:, start:start + n]
        self.cta_base = np.arange(n_ctas, dtype=np.int64)[:, None] * row_el + start


class LocalArray(ArrayRef):
    space = "local"

    def __init__(self, name, shape, dtype, offset: int, storage: np.ndarray, slot):
        super().__init__(name, shape, dtype)
        self.offset = offset            # byte offset in the thread's local frame
        self.storage = storage          # (C, P, n)
        self.slot = slot


class SubArray:
    """``a[i]`` of a multi-dimensional array: the leading indices, applied at the final access.  ``depth``: the
    call depth (frames) that made it (a device function may not return a view it made)."""

    def __init__(self, parent: ArrayRef, prefix: tuple, depth: int = 0):
        self.parent = parent
        self.prefix = prefix
        self.shape = parent.shape[len(prefix):]
        self.ndim = len(self.shape)
        self.name = parent.name
        self.dtype = parent.dtype
        self.depth = depth
        self.record = parent.record


class ArrayView:
    """A view made by slicing (``a[lo:hi:step]``, ``a[i, 1:]``, ``a[:, j]``, ``a[None, :]``, a view of a view) --
    numba's array struct (data pointer, shape, strides), held per lane over its base array's storage.

    ``offset``: the element offset of the view's first element in the base's storage (``base.flat()``);
    ``lens`` / ``strides``: per dimension its length and the step between neighbours, in elements.  Each is a
    ``V``: uniform (a numpy scalar) or one value per lane (runtime slice bounds).  ``src``: per dimension the
    base dimension whose length it still has (a kernel parameter for global arrays), or None.  ``bad``: lanes
    whose integer index at creation fell outside its dimension (an access through the view raises there), or
    None.  ``name``: the source text that made it (``a[1:]``), for messages.  ``contig``: numba types it
    C-contiguous (layout 'C': its innermost stride is the element, the others follow from the shape) rather than
    'A' (strides kept at run time).  Units: elements."""

    def __init__(self, base: ArrayRef, offset: V, lens: tuple, strides: tuple, src: tuple, name: str,
                 bad=None, depth: int = 0, contig: bool = True):
        self.base = self.parent = base
        self.offset, self.lens, self.strides, self.src = offset, tuple(lens), tuple(strides), tuple(src)
        self.name = name
        self.bad = bad
        self.depth = depth
        self.contig = contig
        self.ndim = len(self.lens)
        self.dtype, self.itemsize, self.space, self.record = base.dtype, base.itemsize, base.space, base.record
        self.key = next(_serial)

    @property
    def shape(self):
        """The shape as ints when it is the same on every lane, else None (a runtime, per-thread slice)."""
        if any(type(n.v) is np.ndarray for n in self.lens):
            return None
        return tuple(int(n.v) for n in self.lens)


#: everything a kernel can index like an array
ARRAYS = (ArrayRef, SubArray, ArrayView)


class Dim3:
    """``cuda.threadIdx`` / ``blockIdx`` / ``blockDim`` / ``gridDim`` used as a value (numba's ``Dim3``: its ``.x``,
    ``.y``, ``.z`` are int32, it prints as ``(x, y, z)``; it is not indexable).  ``sreg``: the special register's
    name (``tid``, ``ctaid``, ``ntid``, ``nctaid``), read when a component is."""

    __slots__ = ("sreg",)

    def __init__(self, sreg):
        self.sreg = sreg


class Shape(tuple):
    """``a.shape`` of a kernel argument: entries are kernel parameters, each read (ULDC) at its first use."""

    def __new__(cls, items, arr, off):
        t = super().__new__(cls, items)
        t.arr = arr
        t.off = off
        return t
