"""Address generation of the SIMT machine: arrays, their indexing, bounds checks and index arithmetic.

An access ``a[i, j]`` becomes an element offset per lane (``_index``; negative indices wrap as in numba, and an
index outside its dimension on an active lane raises ``OutOfBounds`` naming the thread, the element and its
address, as compute-sanitizer would).  The integer instructions that compute the address are recorded once per
(array, index values) -- the compiler's CSE and loop-invariant code motion -- with the negative-index wraparound
LLVM keeps for signed indices it cannot prove non-negative (``_rec_index``).  Kernel parameters (array data
pointers, shape entries) are read from the constant bank at their first use.  Subscripts that slice, and every
subscript of a view, go to ``views.py``.  Units: elements for offsets, bytes for addresses.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError, OutOfBounds, UnsupportedConstruct
from .vectors import Vec
from .values import (ARRAYS, EMPTY, Dim3, I64, ArrayRef, ArrayView, GlobalArray, LocalArray, Shape, SharedArray,
                     SubArray, Ununified, V, _union, const)
from .views import view_index, where_in
from .records import RecordRef


class Indexing:
    """The chunk's (``runtime.Chunk``) arrays and indexing: shared/local/constant array creation, array
    attributes (``shape``, ``size`` ...), ``getitem``/``setitem`` (which load/store through ``MemoryAccess``)."""

    def shared_array(self, slot, line) -> SharedArray:
        a = self._shared.get(slot.index)
        if a is not None:
            return a
        L = self.L
        if slot.dynamic:
            off = L.dyn_offset
            nbytes = L.dyn_shared
            n = nbytes // slot.dtype.itemsize
            shape = (n,)
        else:
            off, shape = slot.offset, slot.shape
            n = int(np.prod(shape, dtype=np.int64))
            nbytes = n * slot.dtype.itemsize
        isz = slot.dtype.itemsize
        if self.shared_buf is None:           # no shared memory at all (e.g. 0 dynamic bytes): an empty array
            a = SharedArray(slot.name, shape, slot.dtype, off, np.zeros(0, slot.dtype), 0, self.C)
            self._shared[slot.index] = a
            return a
        if self.shared_buf.shape[1] % isz or off % isz:
            raise self._err(UnsupportedConstruct, f"shared array {slot.name!r} is misaligned", line)
        flat = self.shared_buf.reshape(-1).view(slot.dtype)
        a = SharedArray(slot.name, shape, slot.dtype, off, flat, self.shared_buf.shape[1] // isz, self.C)
        self._shared[slot.index] = a
        return a

    def local_array(self, slot, line) -> LocalArray:
        a = self._local.get(slot.index)
        if a is not None:
            return a
        n = int(np.prod(slot.shape, dtype=np.int64))
        store = np.zeros((self.C, self.P, n), slot.dtype)
        a = LocalArray(slot.name, slot.shape, slot.dtype, slot.offset, store, slot)
        self._local[slot.index] = a
        return a

    def global_const(self, ary, name, line) -> GlobalArray:
        a = self._shared.get(("const", id(ary)))
        if a is None:
            from .memory import ADDRESS_SPACE
            a = GlobalArray(name, ary, ADDRESS_SPACE.address_of(ary), readonly=True)
            self._shared[("const", id(ary))] = a
        return a

    def const_array_like(self, obj, line):
        """``cuda.const.array_like(a)`` of a runtime array (an argument): the array itself, as numba-cuda lowers
        it."""
        if not isinstance(obj, ARRAYS):
            from .values import kind_name
            raise self._err(CompileError, f"No implementation of function cuda.const.array_like for "
                            f"({kind_name(obj)}): it takes an array", line)
        return obj

    def global_device(self, dev, name, line) -> GlobalArray:
        """A global device array read by the kernel: numba captures its pointer (not its contents), so the
        kernel sees the array as it is at launch, and may write it."""
        st = dev._ary
        a = self._shared.get(("dev", id(st)))
        if a is None:
            from .memory import ADDRESS_SPACE
            a = GlobalArray(name, st, ADDRESS_SPACE.address_of(st))
            self._shared[("dev", id(st))] = a
        return a

    def attr(self, obj, name, line):
        if type(obj) is Ununified:
            raise self._err(obj.error, obj.message(), line)
        if type(obj) is RecordRef:
            return self.record_field(obj, name, line)
        if type(obj) is Vec:
            return self.vector_attr(obj, name, line)
        if type(obj) is Dim3:
            if name in ("x", "y", "z"):
                return self.sreg(obj.sreg, "xyz".index(name), line)
            raise self._err(CompileError, f"Unknown attribute '{name}' of type Dim3", line)
        if type(obj) is ArrayView or (name in ("T", "strides") and isinstance(obj, (ArrayRef, SubArray))):
            return self.view_attr(self._as_view(obj, line), name, line)
        if isinstance(obj, (ArrayRef, SubArray)):
            base = obj.parent if isinstance(obj, SubArray) else obj
            rt = base.space == "global" or base.space == "const"
            if name == "shape":
                if not rt:
                    return tuple(V(np.int64(s), (), True) for s in obj.shape)
                off = len(obj.prefix) if isinstance(obj, SubArray) else 0
                return Shape(tuple(V(np.int64(s), (), False) for s in obj.shape), base, off)
            if name == "size":
                if rt:
                    self._field((base.key, "size"), line)
                return V(np.int64(int(np.prod(obj.shape, dtype=np.int64))), (), not rt)
            if name == "ndim":
                return const(obj.ndim)
            if name == "dtype":
                return obj.dtype
            if name == "itemsize":
                return const(obj.dtype.itemsize)
            if name in ("real", "imag") and obj.dtype.kind == "c":
                return self.complex_parts_view(obj, name, line)
            if name == "real":                   # of a real array: the array itself (numba)
                return obj
            raise self._err(UnsupportedConstruct, f"array attribute .{name}", line)
        if type(obj) is V:
            if name in ("real", "imag") and np.asarray(obj.v).dtype.kind == "c":
                return self.complex_part(obj, name, line)
            if name == "real":
                return obj
            if name == "imag":                   # a real number's imaginary part: 0 of its type (numba)
                return V(obj.v.dtype.type(0), (), True)
            raise self._err(UnsupportedConstruct, f"attribute .{name} of a number", line)
        fields = getattr(type(obj), "_fields", None)
        if isinstance(obj, tuple) and isinstance(fields, tuple):        # a namedtuple argument's field
            if name in fields:
                return obj[fields.index(name)]
            raise self._err(CompileError, f"Unknown attribute '{name}' of type {type(obj).__name__}{fields}", line)
        raise self._err(UnsupportedConstruct, f"attribute .{name} of {type(obj).__name__}", line)

    def length(self, obj, line) -> V:
        if isinstance(obj, (tuple, str)):
            return const(len(obj))
        if type(obj) is Ununified:
            raise self._err(obj.error, obj.message(), line)
        if isinstance(obj, ARRAYS):
            return self.getitem(self.attr(obj, "shape", line), const(0), line)
        from .values import kind_name
        raise self._err(UnsupportedConstruct, f"len() of {kind_name(obj)}", line)

    def unpack(self, obj, n, line):
        if not isinstance(obj, tuple):
            raise self._err(UnsupportedConstruct, f"unpacking {type(obj).__name__} (only tuples unpack)", line)
        if len(obj) != n:
            raise self._err(CompileError, f"cannot unpack {len(obj)} values into {n} names", line)
        if type(obj) is Shape:
            for k in range(n):
                self._field((obj.arr.key, "shape", obj.off + k), line)
            return tuple(obj)
        return obj

    # ---- indexing --------------------------------------------------------------------------------------------------
    def _norm_idx(self, arr, idx, line, write=False):
        """(array, index tuple) of an element access: a row's leading indices prepended; a view's element as its
        offset in its base array's storage (``base.flat()``)."""
        if type(arr) is ArrayView:
            items = idx if type(idx) is tuple else (idx,)
            if view_index(idx) or len(items) != arr.ndim:
                raise self._err(CompileError, f"{arr.name!r} has {arr.ndim} dimension(s); an element needs "
                                f"{arr.ndim} integer index(es)", line)
            return arr.base.flat(), (self.view_flat(arr, items, line, write),)
        if isinstance(arr, SubArray):
            idx = arr.prefix + (idx if type(idx) is tuple else (idx,))
            arr = arr.parent
        elif type(idx) is not tuple:
            idx = (idx,)
        return arr, idx

    def _tuple_runtime_index(self, t, i, line) -> V:
        """``t[i]`` of a tuple of numbers of one type (numba's UniTuple) at a runtime index: a compare and a select
        per element, as LLVM lowers it; negative indices count from the end.  A tuple of vectors of one type: each
        element selected the same way."""
        if t and all(type(x) is Vec and x.vname == t[0].vname for x in t):
            return Vec(t[0].vname, [self._tuple_runtime_index(tuple(x[j] for x in t), i, line)
                                    for j in range(len(t[0]))])
        el = [self._val(x, line) if not isinstance(x, (tuple, slice) + ARRAYS) else None for x in t]
        if not el or any(e is None for e in el) or len({e.v.dtype for e in el}) != 1:
            raise self._err(UnsupportedConstruct, "indexing a tuple of mixed types with a runtime value", line)
        n = len(el)
        iv = np.asarray(i.v)
        act = self.mask.a if self.mask.a is not None else True
        bad = ((iv < -n) | (iv >= n)) & act
        if np.any(bad):
            raise self._err(CompileError, f"tuple index out of range (a runtime index of a {n}-tuple)", line)
        r = el[-1]
        for k in range(n - 2, -1, -1):
            c = self.compare("eq", i, const(k), line)
            if not i.nn:
                c = self.binop("bitor", c, self.compare("eq", i, const(k - n), line), line)
            r = self.select_value(c, el[k], r, line)
        return r

    def getitem(self, obj, idx, line, text=None):
        """``obj[idx]``; ``text``: the subscript's source, given where it slices (names the view)."""
        if type(obj) is Ununified:
            raise self._err(obj.error, obj.message(), line)
        if type(obj) is Vec:
            raise self._err(CompileError, f"No implementation of function Function(<built-in function getitem>) found "
                                          f"for signature: getitem({obj.vname}, ...) (a vector's elements are .x, .y, "
                                          ".z, .w)", line)
        if type(obj) is RecordRef:
            if isinstance(idx, str) or type(idx) is V and idx.const and np.asarray(idx.v).dtype.kind in "iu":
                return self.record_field(obj, idx if isinstance(idx, str) else int(idx.v), line)
            raise self._err(CompileError, f"a record is indexed with a field name or a constant integer, not "
                            f"{type(idx).__name__}", line)
        if isinstance(obj, tuple) and type(idx) is slice:
            return self._tuple_slice(obj, idx, line)
        if isinstance(obj, tuple):
            i = self._val(idx, line)
            if not i.const and i.v.dtype.kind in "iu":
                return self._tuple_runtime_index(obj, i, line)
            if not i.const or i.v.dtype.kind not in "iu":
                raise self._err(UnsupportedConstruct, "indexing a tuple with a runtime value", line)
            try:
                r = obj[int(i.v)]
            except IndexError:
                raise self._err(CompileError, f"tuple index out of range (index {int(i.v)} of {len(obj)})", line) from None
            if type(obj) is Shape:
                self._field((obj.arr.key, "shape", obj.off + int(i.v) % len(obj)), line)
            return r
        if isinstance(obj, ARRAYS):
            if type(obj) is ArrayView or view_index(idx) or _array_index(idx):
                return self.view_getitem(obj, idx, line, text)
            arr, idx = self._norm_idx(obj, idx, line)
            if len(idx) < arr.ndim:
                return SubArray(arr, idx, len(self.frames))
            if arr.record and len(idx) == arr.ndim:
                return RecordRef(arr, idx, len(self.frames))
            return self.load(arr, idx, line)
        raise self._err(UnsupportedConstruct, f"indexing {type(obj).__name__} (no getitem for it in numba-cuda)",
                        line)

    def _tuple_slice(self, t, sl, line) -> tuple:
        """``t[lo:hi:step]`` of a tuple: compile-time bounds only (numba slices tuples statically)."""
        parts = []
        for p in (sl.start, sl.stop, sl.step):
            if p is not None and not (type(p) is V and p.const):
                raise self._err(UnsupportedConstruct, "slicing a tuple with runtime bounds (numba-cuda slices "
                                "tuples at compile time only: slice indices must be constants)", line)
            parts.append(None if p is None else int(p.v))
        if parts[2] == 0:
            raise self._err(CompileError, "slice step cannot be zero", line)
        if type(t) is Shape:
            for k in range(len(t))[slice(*parts)]:
                self._field((t.arr.key, "shape", t.off + k), line)
        return tuple(t)[slice(*parts)]

    def load_hint(self, obj, idx, cop, line):
        """``cuda.ldca/ldcg/ldcs/ldlu/ldcv(array, i)``: ``array[i]`` loaded with a PTX cache operator; ``cg`` (L2 only)
        and ``cv`` (fetched again) skip the L1, the others are timed as a plain load."""
        if not isinstance(obj, ARRAYS):
            raise self._err(CompileError, f"cuda.ld{cop} takes an array, not {type(obj).__name__}", line)
        arr, nidx = self._norm_idx(obj, idx, line)
        if type(obj) is not ArrayView and len(nidx) != arr.ndim:
            raise self._err(CompileError, f"cuda.ld{cop}: array {arr.name!r} has {arr.ndim} dimension(s); "
                            f"{len(nidx)} index(es) given", line)
        if arr.space not in ("global", "const"):
            raise self._err(CompileError, f"cuda.ld{cop} loads from global memory; {arr.name!r} is {arr.space}", line)
        return self.load(arr, nidx, line, l1_bypass=cop in ("cg", "cv"))

    def setitem(self, obj, idx, value, line):
        if type(obj) is Ununified:
            raise self._err(obj.error, obj.message(), line)
        if value is None and isinstance(obj, ARRAYS):
            raise self._err(CompileError, "no setitem(array, index, none): None cannot be stored in an array", line)
        if type(obj) is RecordRef:
            if isinstance(idx, str) or type(idx) is V and idx.const and np.asarray(idx.v).dtype.kind in "iu":
                name = idx if isinstance(idx, str) else obj.dtype.names[int(idx.v)]
                return self.record_store(obj, name, value, line)
            raise self._err(CompileError, "a record field is assigned by its name or a constant integer", line)
        if type(value) is RecordRef and isinstance(obj, ARRAYS) and not obj.record:
            from .values import kind_name
            raise self._err(CompileError, f"No implementation of function setitem(array({obj.dtype}, {obj.ndim}d), "
                            f"int64, {kind_name(value)}): a record cannot be stored into {obj.name!r}", line)
        if isinstance(obj, ARRAYS) and obj.record and type(obj) is not ArrayView and not view_index(idx) \
                and not _array_index(idx):
            arr, nidx = self._norm_idx(obj, idx, line)
            if len(nidx) == arr.ndim:
                return self.record_copy(RecordRef(arr, nidx), value, line)
        if isinstance(obj, ARRAYS):
            if type(obj) is ArrayView or view_index(idx) or _array_index(idx) or isinstance(value, ARRAYS):
                return self.view_setitem(obj, idx, value, line)
            arr, nidx = self._norm_idx(obj, idx, line)
            if len(nidx) < arr.ndim:              # a[i] = x of a 2-d array: x stored into the whole row
                return self.fill(self._as_view(SubArray(arr, nidx, len(self.frames)), line, True), value, line)
            if len(nidx) != arr.ndim:
                raise self._err(CompileError, f"array {arr.name!r} has {arr.ndim} dimension(s); "
                                f"{len(nidx)} index(es) given in an assignment", line)
            return self.store(arr, nidx, value, line)
        if isinstance(obj, tuple):
            raise self._err(CompileError, "no setitem on a tuple: tuples are immutable (item assignment to tuple)",
                            line)
        raise self._err(UnsupportedConstruct, f"item assignment to {type(obj).__name__}", line)

    def _index(self, arr, idx, line, write):
        """Element offset (scalar or array) of ``arr[idx]`` on the active lanes; raises OutOfBounds."""
        if arr.record:
            raise self._err(UnsupportedConstruct, f"loading or storing the record array {arr.name!r} (dtype "
                            f"{arr.dtype}) as a whole number: read its fields (a[i].x, a[i]['x'])", line)
        if len(idx) != arr.ndim:
            raise self._err(CompileError, f"array {arr.name!r} has {arr.ndim} dimension(s), indexed with "
                            f"{len(idx)}", line)
        flat = None
        sc = 0
        deps = ()
        runtime = []
        nwrap = 0
        vals = []
        akey = []
        for k, ix in enumerate(idx):
            ix = self._val(ix, line)
            iv = ix.v
            kd = iv.dtype.kind
            if kd not in "iu":                  # numba: no bool index (a[True]), no float index
                raise self._err(CompileError, f"Unsupported array index type {iv.dtype}: an array index must be an integer", line)
            dim = arr.shape[k]
            if not ix.const:
                runtime.append((k, ix))
                deps = _union(deps, ix.deps)
                if kd == "i" and not ix.nn:
                    nwrap += 1
            vals.append(iv)
            if type(iv) is not np.ndarray:
                i = int(iv)
                if i < 0:
                    i += dim
                if not 0 <= i < dim:
                    self._oob(arr, idx, line, write, k)
                iv = i
            else:
                lo, hi = iv.min(), iv.max()
                if lo < 0:
                    iv = np.where(iv < 0, iv.astype(I64) + dim, iv)
                    lo, hi = iv.min(), iv.max()
                if lo < 0 or hi >= dim:
                    bad = (iv < 0) | (iv >= dim)
                    m = self.mask
                    if m.a is not None:
                        bad = bad & m.a
                    if bad.any():
                        self._oob(arr, idx, line, write, k, bad)
                    iv = np.clip(iv, 0, dim - 1)
            s = arr.el_strides[k]
            if type(iv) is int:
                sc += iv * s
                continue
            akey.append((k, ix.key()))
            term = iv * s if s != 1 else iv
            flat = term if flat is None else flat + term
        if flat is None:
            flat = sc
        else:
            if sc:
                flat = flat + sc
            if flat.dtype != I64:
                flat = flat.astype(I64)
        self._last_parts = (tuple(akey), sc)
        return flat, deps, runtime, nwrap

    def _oob(self, arr, idx, line, write, k, bad=None):
        L = self.L
        if bad is None:
            m = self.mask
            bad = np.ones((1, 1), bool) if m.a is None else m.a
        bad = np.broadcast_to(bad, (self.C, self.P) if bad.ndim == 2 else bad.shape)
        if bad.shape != (self.C, self.P):
            bad = np.broadcast_to(bad, (self.C, self.P))
        flatpos = int(np.argmax(bad.reshape(-1)))
        c, p = divmod(flatpos, self.P)
        lane_idx = []
        for ix in idx:
            v = self._val(ix, line).v
            if type(v) is np.ndarray:
                v = np.broadcast_to(v, (self.C, self.P))[c, p]
            lane_idx.append(int(v))
        isz = arr.itemsize
        off = sum(i * s for i, s in zip(lane_idx, arr.el_strides)) * isz
        space, where = where_in(arr, off)
        ix = lane_idx[0] if len(lane_idx) == 1 else tuple(lane_idx)
        msg = (f"out-of-bounds {space} {'write' if write else 'read'} of {isz} bytes: {arr.name}[{ix}] "
               f"(shape {arr.shape}, dimension {k} has {arr.shape[k]} elements) at {where}")
        raise OutOfBounds(msg, file=self.ck.file, line=line, kernel=self.ck.name,
                          block=L.block_of(self.first + c), thread=L.thread_of(p))

    def _rec_index(self, arr, runtime, nwrap, deps, line) -> tuple:
        """Record the index arithmetic of an access (unless the same address was computed already) and return
        the scoreboard deps the memory op inherits from it: the last index op when the index waits for a load
        (pointer chasing), else none."""
        if arr.space in ("global", "const"):
            if arr.space == "global":
                self._field("desc", line)
            self._field((arr.pkey, "data"), line)
        elif arr.space == "shared" and "shared" not in self._fields_seen and self.recording \
                and self.mask is not EMPTY:
            self._fields_seen.add("shared")
            self._rec(("shared_base",), line)
        if not runtime:
            return ()
        # address arithmetic is a pure function of the index values: computed once, hoisted and reused by
        # later accesses whatever their mask (the compiler's CSE and loop-invariant code motion)
        key = (arr.key, tuple(v.key() for _, v in runtime))
        hit = self._addr_cse.get(key)
        if hit is None and any(v.base is not None for _, v in runtime):
            # u + c next to an access at u (a[2 * i] then a[2 * i + 1], a[i] then a[i + 1] with i >= 0): the same
            # address with an immediate offset in the load/store (LDG [R2.64+0x8]), nothing computed again
            hit = self._addr_cse.get((arr.key, tuple(v.base[0] if v.base is not None else v.key()
                                                     for _, v in runtime)))
        if hit is not None:
            return (hit,) if deps and hit >= 0 else deps
        if len(self._addr_cse) > 4096:
            self._addr_cse.clear()
        n0 = len(self.ops)
        glob = arr.space in ("global", "const")
        last = arr.ndim - 1
        for k, v in runtime:
            wk = (v.key(), arr.key, k)
            if v.v.dtype.kind == "i" and not v.nn and wk not in self._wraps_seen:   # negative-index wraparound
                self._wraps_seen.add(wk)
                if not glob:
                    self._rec(("index_wrap_const",), line, deps)
                else:
                    self._field((arr.pkey, "shape", k), line)
                    sk = v.key()
                    self._rec(("index_wrap_cse",) if sk in self._signs_seen else
                              ("index_wrap_scaled",) if v.pow2 else ("index_wrap",), line, deps)
                    self._signs_seen.add(sk)
            if k != last:                                 # a leading dimension: index * row stride
                space = "global" if glob else "shared"
                rk = (arr.key, k, v.key())
                if rk not in self._row_cse:
                    self._row_cse.add(rk)
                    self._rec(("index_row_hi", space), line, deps)
                self._rec(("index_row", space), line, deps)
        self._rec(("index_addr", 1) if glob else ("index_addr_shared", 1), line, deps)
        hit = len(self.ops) - 1 if len(self.ops) > n0 else -1
        self._addr_cse[key] = hit
        return (hit,) if deps and hit >= 0 else deps


def _array_index(idx) -> bool:
    """Whether ``idx`` holds an array (numpy's advanced indexing: refused, see ``views.make_view``)."""
    if type(idx) is tuple:
        return any(isinstance(i, ARRAYS) for i in idx)
    return isinstance(idx, ARRAYS)
