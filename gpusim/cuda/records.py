"""Record (structured dtype) arrays in kernels, as numba-cuda has them.

A numpy structured array passed to a kernel is an array of numba ``Record``s; ``a[i]`` of it is a reference to the
record's bytes (``RecordRef``: the array and the element's indices), and its fields are read and written through
that reference: ``a[i].x``, ``a[i]['x']``, ``r = a[i]; r.x = v``, a nested array field ``r.h[j]``, a nested record
``r.inner.y``, a whole record copied ``a[i] = a[j]`` (field by field).  A record passed by itself
(``kernel[1, 1](arr[0])``, a ``numpy.void``) is such a reference into its own bytes: numba-cuda copies it to the
device and back, so the kernel's writes reach it.

A field of a global record array is itself a global array (``field_array``): the field's bytes at the record's
stride, at the record array's address plus the field's offset, so every field access is an ordinary load or store
of the field's type with the addresses the GPU uses.  Record arrays in shared or local memory are refused.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from .values import ARRAYS, GlobalArray, SubArray, V, const


class RecordRef:
    """``a[i]`` of a record array: the record at indices ``idx`` (per-lane ``V``s) of ``arr`` (a ``GlobalArray``
    with a structured dtype)."""

    __slots__ = ("arr", "idx", "depth")

    def __init__(self, arr, idx: tuple, depth: int = 0):
        self.arr = arr
        self.idx = tuple(idx)
        self.depth = depth

    @property
    def dtype(self):
        return self.arr.dtype

    @property
    def name(self):
        return self.arr.name

    def __repr__(self):
        return f"RecordRef({self.arr.name}, {self.idx})"


def record_dtype_ok(dt: np.dtype) -> bool:
    """Whether numba-cuda can type a structured dtype: numeric fields, nested arrays and records of them."""
    dt = np.dtype(dt)
    if dt.names is None:
        if dt.subdtype is not None:
            return record_dtype_ok(dt.subdtype[0])
        return dt.kind in "biufc"
    return all(record_dtype_ok(dt.fields[n][0]) for n in dt.names)


class Records:
    """The chunk's (``runtime.Chunk``) record accesses."""

    def field_array(self, arr, name, line):
        """The global array of field ``name`` of the record array ``arr`` (its shape: ``arr``'s, then the nested
        array's), cached per (array, field)."""
        key = ("field", arr.key, name)
        f = self._shared.get(key)
        if f is not None:
            return f
        if not isinstance(arr, GlobalArray):
            raise self._err(UnsupportedConstruct, f"record array {arr.name!r} in {arr.space} memory: gpusim keeps "
                            "record (structured dtype) arrays in global memory only (kernel arguments)", line)
        if name not in (arr.dtype.names or ()):
            raise self._err(CompileError, f"Unknown attribute {name!r} of type Record of {arr.dtype} (field names: "
                            f"{', '.join(arr.dtype.names)})", line)
        src = arr.span if arr._flat is arr else arr.ary
        view = src[name]
        off = arr.dtype.fields[name][1]
        try:
            f = GlobalArray(f"{arr.name}.{name}", view, arr.base_addr + off, readonly=arr.readonly)
        except UnsupportedConstruct:
            raise self._err(UnsupportedConstruct, f"field {name!r} of record array {arr.name!r} (dtype {arr.dtype}) "
                            f"is misaligned for its type (offset {off}, record size {arr.dtype.itemsize}): a "
                            "packed record whose fields are not aligned; use align=True", line) from None
        f.pkey = arr.pkey                 # the record array's data pointer
        self._shared[key] = f
        return f

    def record_field(self, rec: RecordRef, name, line):
        """``rec.name`` / ``rec['name']``: a number (loaded), a nested record, or a nested array (a row of the
        field's array)."""
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            names = rec.dtype.names
            if not -len(names) <= int(name) < len(names):
                raise self._err(CompileError, f"record index {int(name)} out of range ({len(names)} fields)", line)
            name = names[int(name)]
        f = self.field_array(rec.arr, name, line)
        if f.record:
            return RecordRef(f, rec.idx, rec.depth)
        if f.ndim > len(rec.idx):
            return SubArray(f, rec.idx, rec.depth)
        return self.load(f, rec.idx, line)

    def record_store(self, rec: RecordRef, name, value, line) -> None:
        """``rec.name = value`` / ``rec['name'] = value``."""
        f = self.field_array(rec.arr, name, line)
        if f.record:
            if type(value) is not RecordRef:
                raise self._err(CompileError, f"cannot store {type(value).__name__} into the record field "
                                f"{name!r} of {rec.name!r}", line)
            return self.record_copy(RecordRef(f, rec.idx), value, line)
        if f.ndim > len(rec.idx):
            return self._nested_store(SubArray(f, rec.idx, rec.depth), value, name, line)
        if isinstance(value, ARRAYS) or type(value) is RecordRef:
            raise self._err(CompileError, f"cannot store an array into the scalar record field {name!r} of "
                            f"{rec.name!r} ({f.dtype})", line)
        self.store(f, rec.idx, value, line)

    def _nested_store(self, sub: SubArray, value, name, line) -> None:
        """A nested array field assigned a number (every element) or an array of its shape (element by element,
        as numba-cuda copies it)."""
        shape = sub.shape
        if not isinstance(value, ARRAYS):
            for ix in np.ndindex(*shape):
                self.store(sub.parent, sub.prefix + tuple(const(int(i)) for i in ix), value, line)
            return
        vshape = value.shape
        if vshape is None or tuple(vshape) != tuple(shape):
            raise self._err(CompileError, f"cannot assign an array of shape {vshape} to the nested array field "
                            f"{name!r} of shape {tuple(shape)}", line)
        for ix in np.ndindex(*shape):
            k = tuple(const(int(i)) for i in ix)
            self.store(sub.parent, sub.prefix + k, self.getitem(value, k if len(k) != 1 else k[0], line), line)

    def record_copy(self, dst: RecordRef, src, line) -> None:
        """``a[i] = a[j]`` / ``a[i] = rec``: every field of ``src`` stored into ``dst`` (records of one dtype)."""
        if type(src) is not RecordRef:
            from .values import kind_name
            raise self._err(CompileError, f"No implementation of function setitem(array(Record of {dst.dtype}), "
                            f"..., {kind_name(src)}): only a record of the same type can be stored into the record "
                            f"array {dst.name!r}", line)
        if src.dtype != dst.dtype:
            raise self._err(CompileError, f"cannot store a record of dtype {src.dtype} into the record array "
                            f"{dst.name!r} of dtype {dst.dtype}", line)
        for name in dst.dtype.names:
            fd = self.field_array(dst.arr, name, line)
            fs = self.field_array(src.arr, name, line)
            if fd.record:
                self.record_copy(RecordRef(fd, dst.idx), RecordRef(fs, src.idx), line)
                continue
            sub = fd.shape[len(dst.idx):]
            for ix in np.ndindex(*sub):
                k = tuple(const(int(i)) for i in ix)
                self.store(fd, dst.idx + k, self.load(fs, src.idx + k, line), line)

    def setattr(self, obj, name, value, line) -> None:
        """``obj.name = value``: a record's field (numba-cuda has no other attribute assignment in kernels)."""
        if type(obj) is RecordRef:
            return self.record_store(obj, name, value, line)
        from .values import kind_name
        raise self._err(CompileError, f"cannot assign the attribute .{name} of {kind_name(obj)} (only record "
                        "fields are assigned in numba-cuda kernels)", line)

    def merge_records(self, c, a: RecordRef, b: RecordRef, name=None):
        """Lane-wise ``a if c else b`` of two references into one record array (a variable assigned on some
        lanes)."""
        if a.arr is not b.arr or len(a.idx) != len(b.idx):
            from .values import Ununified
            return Ununified(name or "a record", b, a, why=(
                f"{name or 'a variable'!r} refers to records of different arrays on different threads: gpusim keeps "
                "a record reference per thread into one array only; give each array its own variable"))
        idx = tuple(self._pick(c, self._val(x, 0), self._val(y, 0), None) for x, y in zip(a.idx, b.idx))
        return RecordRef(a.arr, idx, max(a.depth, b.depth))
