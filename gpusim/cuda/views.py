"""Array slicing in the SIMT machine: views of global, shared and local arrays, as numba-cuda makes them.

``a[lo:hi:step]``, ``a[i, :]``, ``a[:, j]``, ``a[i0:i1, j0:j1]``, ``a[None, :]`` and views of views make an
``ArrayView`` (values.py): numba's array struct -- a data pointer, a shape and strides -- held per lane, so that
runtime (per-thread) bounds give each thread its own view.  Bounds follow Python's slice rules (negative bounds
count from the end and clamp; negative steps walk backwards; a zero step is an error); an integer index of a
view wraps like an array's.  An element of a view is an element of its base array's storage at offset
``offset + sum(index * stride)``: loads, stores and atomics go through ``base.flat()`` with that offset, so the
recorded addresses are the elements' real byte addresses and coalescing and bank conflicts follow the strides.
An index outside a view raises ``OutOfBounds`` naming the view, the thread and the address.

What numba-cuda refuses is refused here at its line: an array index (fancy / boolean indexing) and storing an
array into a slice (both need numba's runtime, NRT, which kernels lack), ``a[...]`` alone, a runtime slice of a
tuple.  A scalar stored into a slice (``a[1:3] = 0``, ``s[i, :] = 0``) is a loop of stores in each thread.
Units: elements for offsets, lengths and strides.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError, KernelError, OutOfBounds, UnsupportedConstruct
from .values import ARRAYS, EMPTY, I64, ArrayRef, ArrayView, SubArray, Ununified, V, _fix, _union, const

#: an index item of a slicing subscript: a slice, ``None`` (numpy.newaxis) or ``...``
_VIEW_ITEMS = (slice, type(None), type(Ellipsis))



def where_in(arr, off: int) -> tuple[str, str]:
    """The memory space of array ``arr`` and where byte ``off`` of it lies, for an out-of-bounds message."""
    space = {"global": "global", "const": "constant", "shared": "shared", "local": "local"}[arr.space]
    if arr.space in ("global", "const"):
        return space, f"address 0x{arr.base_addr + off:x}"
    if arr.space == "shared":
        return space, f"shared-memory offset {arr.offset + off} (0x{arr.offset + off:x})"
    return space, f"local offset {arr.offset + off}"

def view_index(idx) -> bool:
    """Whether ``idx`` (an index or a tuple of them) makes a view: it holds a slice, ``None`` or ``...``."""
    if type(idx) is tuple:
        return any(isinstance(i, _VIEW_ITEMS) for i in idx)
    return isinstance(idx, _VIEW_ITEMS)


def _slice_bounds(lo, hi, st, n):
    """Python's ``slice(lo, hi, st).indices(n)`` and the length, on int64 values or arrays of them (per lane):
    (start, length).  ``lo`` / ``hi`` may be None."""
    neg = st < 0
    lower = np.where(neg, -1, 0)
    upper = np.where(neg, n - 1, n)

    def fix(x, default):
        if x is None:
            return default
        x = np.where(x < 0, x + n, x)
        return np.minimum(np.maximum(x, lower), upper)
    start = fix(lo, np.where(neg, upper, lower))
    stop = fix(hi, np.where(neg, lower, upper))
    span = np.where(neg, start - stop, stop - start)
    ast = np.where(neg, -st, st)
    length = np.where(span > 0, (span - 1) // np.maximum(ast, 1) + 1, 0)
    return _fix(start.astype(I64)), _fix(length.astype(I64))


class Views:
    """The chunk's (``runtime.Chunk``) slicing: view creation, element offsets of views, stores into slices,
    views chosen per lane.  State (set by ``Chunk.__init__``): ``_view_cse`` (views and element offsets computed
    already: the compiler's CSE / loop-invariant code motion)."""

    def mkslice(self, lo, hi, step, line) -> slice:
        """``lo:hi:step`` in a subscript, or ``slice(...)``: a slice of int64 values (float bounds truncated, as
        numba converts them; bool bounds are 0 / 1)."""
        parts = []
        for x in (lo, hi, step):
            if x is None:
                parts.append(None)
                continue
            if isinstance(x, ARRAYS) or isinstance(x, (tuple, slice)):
                raise self._err(CompileError, f"slice indices must be integers or None, not {type(x).__name__}",
                                line)
            v = self._val(x, line)
            k = np.asarray(v.v).dtype.kind
            if k not in "iubf":
                raise self._err(CompileError, f"slice indices must be integers or None, not {v.v.dtype}", line)
            parts.append(v if v.v.dtype == I64 else self.cast(v, I64, line))
        return slice(*parts)

    # ---- making views ------------------------------------------------------------------------------------------
    def _as_view(self, obj, line, rec=False) -> ArrayView:
        """``obj`` (an array, a row ``a[i]`` or a view) as an ``ArrayView``; ``rec``: record a row's index
        arithmetic (its wraparound and row offset), as ``a[i, ...]`` records it."""
        if type(obj) is ArrayView:
            return obj
        base = obj.parent if type(obj) is SubArray else obj
        rt = base.space in ("global", "const")
        lens = [V(np.int64(s), (), not rt) for s in base.shape]
        strides = [const(int(s)) for s in base.el_strides]
        src = list(range(base.ndim))
        off, bad, deps = np.int64(0), None, ()
        if type(obj) is SubArray:
            space = "global" if rt else "shared"
            for k, i in enumerate(obj.prefix):
                i = self._val(i, line)
                iv, b = self._wrap_check(i.v, base.shape[k])
                bad = b if bad is None else (bad | b)
                off = off + iv * base.el_strides[k]
                deps = _union(deps, i.deps)
                if rec and not i.const and self.recording and self.mask is not EMPTY:
                    if i.v.dtype.kind == "i" and not i.nn:
                        self._rec_wrap(i, lens[k], line, i.deps)
                    self._rec(("index_row", space), line, i.deps)
            p = len(obj.prefix)
            lens, strides, src = lens[p:], strides[p:], src[p:]
        offv = V(_fix(np.asarray(off, dtype=I64)), deps, type(off) is not np.ndarray and not deps)
        contig = base.space != "global" or base.ary.flags.c_contiguous
        return ArrayView(base, offv, lens, strides, src, base.name, _any_lane(bad), getattr(obj, "depth", 0), contig)

    @staticmethod
    def _wrap_check(iv, n):
        """(index wrapped into [0, n) where it may be (clipped elsewhere), lanes outside) of an int index."""
        iv = np.asarray(iv).astype(I64)
        w = np.where(iv < 0, iv + n, iv)
        bad = (w < 0) | (w >= n)
        return np.clip(w, 0, np.maximum(n - 1, 0)), bad

    def make_view(self, obj, idx, line, text=None) -> ArrayView:
        """``obj[idx]`` with slices, ``None`` or ``...`` among the indices (or fewer integers than dimensions of
        a view): a new view, recorded as numba computes it (fix_slice per runtime slice, the data pointer)."""
        items = idx if type(idx) is tuple else (idx,)
        if idx is Ellipsis:
            raise self._err(UnsupportedConstruct, "a[...] alone: numba-cuda has no lowering of getitem(array, "
                            "ellipsis) (write a[:], or a[..., j] / a[i, ...])", line)
        for it in items:
            if isinstance(it, ARRAYS):
                raise self._err(CompileError, "advanced (fancy or boolean) indexing with an array allocates a new "
                                "array: NRT required but not enabled in numba-cuda kernels (index with integers "
                                "and slices)", line)
        act = self.mask.a if self.mask.a is not None else True
        for it in items:
            zero = type(it) is slice and it.step is not None and (np.asarray(it.step.v) == 0) & act
            if np.any(zero):
                c, p = self._first_lane(zero)
                raise self._err(KernelError, "slice step cannot be zero: numba-cuda raises ValueError in this "
                                "thread (a kernel's exception ends the thread, reported only with debug=True); "
                                "gpusim stops here", line, block=self.L.block_of(self.first + c),
                                thread=self.L.thread_of(p))
        # the same slicing of the same values made this view already (CSE / LICM: nothing computed again)
        key = (_array_key(obj), tuple(_item_key(it) for it in items), len(self.frames))
        hit = self._view_cse.get(key)
        if hit is not None:
            return hit
        view = self._as_view(obj, line, True)
        contig = view.contig and _keeps_contiguity(items)
        n_ell = sum(it is Ellipsis for it in items)
        if n_ell > 1:
            raise self._err(CompileError, "an index can only have a single ellipsis ('...')", line)
        used = sum(it is not None and it is not Ellipsis for it in items)
        if used > view.ndim:
            raise self._err(CompileError, f"too many indices for array: {view.name!r} is {view.ndim}-dimensional, "
                            f"but {used} were indexed", line)
        if n_ell:
            e = next(j for j, it in enumerate(items) if it is Ellipsis)
            items = items[:e] + (slice(None),) * (view.ndim - used) + items[e + 1:]
        items = items + (slice(None),) * (view.ndim - sum(it is not None for it in items))
        rec = self.recording and self.mask is not EMPTY
        space = "global" if view.space in ("global", "const") else "shared"
        off = view.offset
        lens, strides, src = [], [], []
        bad = view.bad
        k = 0
        for it in items:
            if it is None:                                  # numpy.newaxis: a dimension of length 1
                lens.append(const(1))
                strides.append(const(0))
                src.append(None)
                continue
            n, s = view.lens[k], view.strides[k]
            if type(it) is slice:
                if it.start is None and it.stop is None and (it.step is None or (it.step.const and it.step.v == 1)):
                    lens.append(n)                          # ':' -- the dimension as it is
                    strides.append(s)
                    src.append(view.src[k])
                    k += 1
                    continue
                off, ln, st = self._slice_dim(view, k, it, off, line, rec, space)
                lens.append(ln)
                strides.append(st)
                src.append(None)
            else:                                           # an integer: the dimension goes away
                i = self._val(it, line)
                if i.v.dtype.kind not in "iu":
                    raise self._err(CompileError, f"Unsupported array index type {i.v.dtype}: an array index must "
                                    "be an integer", line)
                iv, b = self._wrap_check(i.v, n.v)
                bad = b if bad is None else (bad | b)
                deps = _union(_union(off.deps, i.deps), _union(n.deps, s.deps))
                n0 = len(self.ops)
                if rec and not i.const:
                    if i.v.dtype.kind == "i" and not i.nn:
                        self._rec_wrap(i, n, line, deps)
                    self._rec(("index_row", space), line, deps)
                off = V(_fix(off.v + iv * s.v), self._out(deps, n0), off.const and i.const and s.const)
            k += 1
        name = text or f"{view.name}[...]"
        out = ArrayView(view.base, off, lens, strides, src, name, _any_lane(bad), len(self.frames), contig)
        if len(self._view_cse) > 4096:
            self._view_cse.clear()
        if self.mask is not EMPTY:
            self._view_cse[key] = out
        return out

    def _slice_dim(self, view, k, sl, off, line, rec, space):
        """(new offset, length, stride) of dimension ``k`` of ``view`` sliced by ``sl``."""
        n, s = view.lens[k], view.strides[k]
        step = sl.step if sl.step is not None else const(1)
        sv = np.where(np.asarray(step.v) == 0, 1, step.v)      # (a zero step on an active lane raised)
        lo = sl.start.v if sl.start is not None else None
        hi = sl.stop.v if sl.stop is not None else None
        start, ln = _slice_bounds(lo, hi, sv, n.v)
        parts = [p for p in (sl.start, sl.stop, sl.step, n) if p is not None]
        deps = ()
        for p in parts:
            deps = _union(deps, p.deps)
        cst = all(p.const for p in parts)
        n0 = len(self.ops)
        if rec and not cst:
            if view.src[k] is not None and view.base.space in ("global", "const"):
                self._field((view.base.pkey, "shape", view.src[k]), line)
            self._rec(("slice_dim",), line, deps)
            runtime = [b for b in (sl.start, sl.stop) if b is not None and not b.const]
            for b in runtime:
                self._rec(("slice_bound",), line, deps)
                if b.v.dtype.kind == "i" and not b.nn:
                    self._signs_seen.add(b.key())     # its sign is computed: a later wrap of it reuses it
            if len(runtime) == 2:
                self._rec(("slice_span",), line, deps)
            if not step.const:
                self._rec(("floordiv", "int64"), line, deps)
            elif abs(int(step.v)) != 1:
                self._rec(("slice_step", "const"), line, deps)
        d = self._out(deps, n0)
        lnv = V(ln, d, cst, nn=True)
        newoff = V(_fix(off.v + start * s.v), _union(off.deps, d), off.const and cst and s.const)
        stv = V(_fix(s.v * np.asarray(sv, dtype=I64)), _union(s.deps, step.deps), s.const and step.const)
        return newoff, lnv, stv

    # ---- elements of views ---------------------------------------------------------------------------------
    def view_flat(self, view, idx, line, write) -> V:
        """The element offset in ``view.base.flat()`` of ``view[idx]`` (one integer per dimension) on the active
        lanes; an index outside the view on an active lane raises ``OutOfBounds``."""
        m = self.mask
        if m is EMPTY:
            return V(np.int64(0), (), True, nn=True)
        if len(idx) != view.ndim:
            raise self._err(CompileError, f"{view.name!r} has {view.ndim} dimension(s), indexed with {len(idx)}",
                            line)
        act = m.a if m.a is not None else np.ones((1, 1), bool)
        vals, wrapped = [], []
        for k, i in enumerate(idx):
            i = self._val(i, line)
            if i.v.dtype.kind not in "iu":
                raise self._err(CompileError, f"Unsupported array index type {i.v.dtype}: an array index must be an "
                                "integer", line)
            vals.append(i)
            iv, bad = self._wrap_check(i.v, view.lens[k].v)
            if np.any(bad & act):
                self._view_oob(view, vals + list(idx[k + 1:]), line, write, k, bad & act)
            wrapped.append(iv)
        if view.bad is not None and np.any(view.bad & act):
            self._view_oob(view, vals, line, write, None, view.bad & act)
        key = (view.key, tuple(i.key() for i in vals))
        hit = self._view_cse.get(key)
        if hit is not None:
            return hit
        flat = view.offset.v
        deps = view.offset.deps
        cst = view.offset.const
        rec = self.recording
        space = "global" if view.space in ("global", "const") else "shared"
        n0 = len(self.ops)
        for k, (i, iv) in enumerate(zip(vals, wrapped)):
            n, s = view.lens[k], view.strides[k]
            flat = flat + iv * s.v
            d = _union(i.deps, _union(n.deps, s.deps))
            deps = _union(deps, d)
            cst = cst and i.const and s.const
            if rec and not i.const:
                wk = (i.key(), view.key, k)
                if i.v.dtype.kind == "i" and not i.nn and wk not in self._wraps_seen:
                    self._wraps_seen.add(wk)
                    if view.src[k] is not None and view.base.space in ("global", "const"):
                        self._field((view.base.pkey, "shape", view.src[k]), line)
                    self._rec_wrap(i, n, line, d)
                if not (view.contig and k == view.ndim - 1):    # else the element: folds into the address's LEA
                    self._rec(("index_row", space), line, d)
                    rk = (view.key, k, i.key())
                    if rk not in self._row_cse:          # the high halves, once per index value
                        self._row_cse.add(rk)
                        self._rec(("index_row_hi", space), line, d)
        out = V(_fix(np.asarray(flat).astype(I64)), self._out(deps, n0), cst, nn=True)
        if len(self._view_cse) > 4096:
            self._view_cse.clear()
        self._view_cse[key] = out
        if not cst and all(s.const for i, s in zip(vals, view.strides) if i.const):
            # ``b[j]`` then ``b[j + 1]`` / ``b[0]`` then ``b[1]``: the same address plus an immediate (``V.base``)
            c = sum(int(i.v) * int(s.v) for i, s in zip(vals, view.strides) if i.const)
            rk = ("base", view.key, tuple((k, i.key()) for k, i in enumerate(vals) if not i.const))
            first = self._view_cse.get(rk)
            if first is None:
                self._view_cse[rk] = (out, c)
            elif c >= first[1]:
                out.base = (first[0].key(), c - first[1])
        return out

    def _rec_wrap(self, i, n, line, deps) -> None:
        """The negative-index wraparound of index ``i`` in a dimension of length ``n`` (as ``_rec_index``)."""
        if n.const:
            self._rec(("index_wrap_const",), line, deps)
            return
        self._rec(("index_wrap_cse",) if i.key() in self._signs_seen else ("index_wrap",), line, deps)
        self._signs_seen.add(i.key())

    def _first_lane(self, bad) -> tuple:
        """(CTA of the chunk, lane) of the first lane set in ``bad``."""
        bad = np.broadcast_to(bad, (self.C, self.P))
        return divmod(int(np.argmax(bad.reshape(-1))), self.P)

    def _view_oob(self, view, idx, line, write, k, bad):
        L = self.L
        c, p = self._first_lane(bad)

        def at(v):
            v = np.asarray(v.v if type(v) is V else v)
            return int(v) if v.ndim == 0 else int(np.broadcast_to(v, (self.C, self.P))[c, p])
        ix = [at(i) for i in idx]
        shape = tuple(at(n) for n in view.lens)
        isz = view.itemsize
        flat = at(view.offset) + sum(i * at(s) for i, s in zip(ix, view.strides))
        base = view.base
        space, where = where_in(base, flat * isz)
        shown = ix[0] if len(ix) == 1 else tuple(ix)
        why = (f"dimension {k} has {shape[k]} elements" if k is not None else
               "an integer index that made the view was outside its dimension")
        msg = (f"out-of-bounds {space} {'write' if write else 'read'} of {isz} bytes: {view.name}[{shown}] (a view "
               f"of {base.name!r} with shape {shape}; {why}) at {where}")
        raise OutOfBounds(msg, file=self.ck.file, line=line, kernel=self.ck.name,
                          block=L.block_of(self.first + c), thread=L.thread_of(p))

    def view_getitem(self, obj, idx, line, text=None):
        """``obj[idx]`` where ``obj`` is a view or ``idx`` slices: an element, or a new view."""
        items = idx if type(idx) is tuple else (idx,)
        if type(obj) is ArrayView and not view_index(idx) and len(items) == obj.ndim:
            return self.load(obj.base.flat(), (self.view_flat(obj, items, line, False),), line)
        return self.make_view(obj, idx, line, text)

    def view_setitem(self, obj, idx, value, line) -> None:
        """``obj[idx] = value`` where ``obj`` is a view, ``idx`` slices or leaves dimensions: a store, or (a
        slice target) ``value`` stored into every element of the slice."""
        if isinstance(value, ARRAYS):
            raise self._err(CompileError, f"storing an array into {'a slice of ' if view_index(idx) else ''}"
                            f"{obj.name!r}: numba-cuda copies through a temporary array (NRT required but not "
                            "enabled in numba-cuda kernels); copy the elements in a loop", line)
        items = idx if type(idx) is tuple else (idx,)
        if type(obj) is ArrayView and not view_index(idx) and len(items) == obj.ndim:
            return self.store(obj.base.flat(), (self.view_flat(obj, items, line, True),), value, line)
        self.fill(self.make_view(obj, idx, line), value, line)

    def fill(self, view, value, line, prefix=()) -> None:
        """Every element of ``view`` set to the number ``value``: each thread stores in a loop per dimension
        (numba's setitem of a scalar into a slice)."""
        value = self._val(value, line)
        k = len(prefix)
        if k == view.ndim:
            self.store(view.base.flat(), (self.view_flat(view, prefix, line, True),), value, line)
            return
        st = self.range_begin(const(0), view.lens[k], None, line, True, k + 1 < view.ndim)
        while self.range_test(st, line):
            c = st.counter
            self.fill(view, value, line, prefix + (V(c.v, c.deps, c.const, nn=True),))
            self.range_next(st, line)
        self.loop_end(st, line)

    def view_fold(self, view, op, line) -> V:
        """``op`` ("add", "min" or "max") over the elements of a view whose shape varies per thread: each thread
        walks its own view in a loop (numba's ``a.sum()``: from 0, ints in int64; ``max(a)`` of a 1-d array:
        from its first element, which must exist)."""
        act = self.mask.a if self.mask.a is not None else True
        if op != "add" and np.any((view.lens[0].v == 0) & act):
            raise self._err(CompileError, f"{op}() of an empty array (numba raises ValueError: zero-size array to "
                            "reduction operation)", line)
        if op == "add":
            acc, first = V(view.dtype.type(0) if view.dtype.kind == "f" else np.int64(0), (), False), 0
        else:
            acc, first = self.view_getitem(view, const(0), line), 1
        st = self.range_begin(const(first), view.lens[0], None, line, True, True)
        while self.range_test(st, line):
            c = st.counter
            x = self.view_getitem(view, V(c.v, c.deps, c.const, nn=True), line)
            if type(x) is ArrayView:
                x = self.view_fold(x, op, line)
            acc = self.assign(acc, self.binop("add", acc, x, line) if op == "add" else
                              self.minmax(op, (acc, x), line))
            self.range_next(st, line)
        self.loop_end(st, line)
        return acc

    # ---- attributes and lane-wise choices --------------------------------------------------------------------
    def view_attr(self, view, name, line):
        """``.shape``, ``.size``, ``.ndim``, ``.strides`` (bytes), ``.T``, ``.dtype``, ``.itemsize`` of a view."""
        if name in ("shape", "size"):
            if view.base.space in ("global", "const"):
                for k, d in enumerate(view.src):
                    if d is not None:
                        self._field((view.base.pkey, "shape", d), line)
            if name == "shape":
                return view.lens
            r = view.lens[0]
            for n in view.lens[1:]:
                r = self.binop("mul", r, n, line)
            return r
        if name == "ndim":
            return const(view.ndim)
        if name == "strides":
            return tuple(self.binop("mul", s, const(view.itemsize), line) for s in view.strides)
        if name == "T":                                  # the transpose: the dimensions reversed
            if view.ndim < 2:
                return view
            return ArrayView(view.base, view.offset, view.lens[::-1], view.strides[::-1], view.src[::-1],
                             f"{view.name}.T", view.bad, len(self.frames), False)
        if name == "dtype":
            return view.dtype
        if name == "itemsize":
            return const(view.itemsize)
        if name in ("real", "imag") and view.dtype.kind == "c":
            return self.complex_parts_view(view, name, line)
        if name == "real":
            return view
        raise self._err(UnsupportedConstruct, f"array attribute .{name}", line)

    def view_reshape(self, obj, shape, line) -> ArrayView:
        """``a.reshape(n, m)`` / ``a.reshape((n, m))`` of a C-contiguous array, as numba-cuda makes it: a view of
        the same elements with the new shape (one dimension may be -1: inferred), C-contiguous strides."""
        v = self._as_view(obj, line)
        if not v.contig:
            raise self._err(CompileError, f"reshape() supports contiguous array only ({v.name} is not "
                            "C-contiguous)", line)
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        dims = []
        for d in shape:
            d = self._val(d, line)
            if d.v.dtype.kind not in "iu":
                raise self._err(CompileError, f"reshape() takes integers, not {d.v.dtype}", line)
            dims.append(np.asarray(d.v, dtype=I64))
        total = np.ones((), I64)
        for n in v.lens:
            total = total * np.asarray(n.v, dtype=I64)
        known = np.ones((), I64)
        for d in dims:
            known = known * np.where(d < 0, 1, d)
        if sum(1 for d in dims if np.any(d < 0)) > 1 or np.any([np.any(d < -1) for d in dims]):
            raise self._err(KernelError, "reshape(): negative dimensions other than one -1 are not allowed", line)
        dims = [np.where(d < 0, total // np.maximum(known, 1), d) for d in dims]
        new_total = np.ones((), I64)
        for d in dims:
            new_total = new_total * d
        act = self.mask.a if self.mask.a is not None else True
        if np.any((new_total != total) & act):
            raise self._err(KernelError, "reshape(): total size of new array must be unchanged", line)
        lens = [V(_fix(d), (), type(d) is not np.ndarray or d.ndim == 0) for d in dims]
        strides, st = [], np.ones((), I64)
        for d in reversed(dims):
            strides.append(V(_fix(st), (), type(st) is not np.ndarray or st.ndim == 0))
            st = st * d
        return ArrayView(v.base, v.offset, lens, strides[::-1], (None,) * len(dims), f"{v.name}.reshape(...)",
                         v.bad, len(self.frames), True)

    def complex_parts_view(self, obj, name, line):
        """``a.real`` / ``a.imag`` of a complex array: a view of its float parts (numba-cuda: the same bytes,
        strided by the complex item; writable, ``cuda.atomic.add(a.real, i, 1)``)."""
        base = obj.base if type(obj) is ArrayView else obj.parent if type(obj) is SubArray else obj
        ft = np.dtype(np.float32 if base.itemsize == 8 else np.float64)
        part = 1 if name == "imag" else 0
        if type(obj) is not ArrayView and type(obj) is not SubArray and base.space in ("global", "const"):
            key = ("cpart", base.key, name)
            r = self._shared.get(key)
            if r is None:
                from .values import GlobalArray
                r = GlobalArray(f"{base.name}.{name}", base.ary.real if not part else base.ary.imag,
                                base.base_addr + part * ft.itemsize, readonly=base.space == "const")
                r.pkey = base.pkey
                self._shared[key] = r
            return r
        nb = self._retyped(base, ft, line)
        v = self._as_view(obj, line)
        two = const(2)
        off = self.binop("add", self.binop("mul", v.offset, two, line), const(part), line)
        strides = tuple(V(_fix(np.asarray(x.v) * 2), x.deps, x.const, nn=True) for x in v.strides)
        return ArrayView(nb, off, v.lens, strides, (None,) * v.ndim, f"{v.name}.{name}", v.bad, v.depth, False)

    def view_dtype(self, obj, dt, line):
        """``a.view(dtype)``: the same bytes as elements of ``dt`` (numba-cuda's array.view: the data pointer cast,
        the last axis rescaled when the item size changes, which needs that axis contiguous)."""
        dt = np.dtype(dt)
        base = obj.base if type(obj) is ArrayView else obj.parent if type(obj) is SubArray else obj
        isz, nsz = base.itemsize, dt.itemsize
        if dt.kind not in "biufc":
            raise self._err(UnsupportedConstruct, f"{base.name}.view({dt}): gpusim views arrays as numeric types "
                            "only", line)
        nb = self._retyped(base, dt, line)
        v = self._as_view(obj, line)
        if isz == nsz:
            return ArrayView(nb, v.offset, v.lens, v.strides, v.src, v.name, v.bad, v.depth, v.contig)
        bad_msg = f"{v.name}.view({dt}): new type not compatible with array (numba-cuda raises ValueError)"
        if v.ndim == 0 or not (v.strides[-1].const and int(v.strides[-1].v) == 1):
            raise self._err(CompileError, bad_msg + ": the last axis is not contiguous", line)

        def scaled(x: V, what) -> V:
            b = np.asarray(x.v).astype(I64) * isz
            act = self.mask.a if self.mask.a is not None else True
            if np.any((b % nsz != 0) & act):
                raise self._err(CompileError, f"{bad_msg}: {what} of {int(np.max(b))} bytes is not a multiple of "
                                f"{nsz}", line)
            return V(_fix(b // nsz), x.deps, x.const, nn=True)
        off = scaled(v.offset, "the offset")
        lens = tuple(v.lens[:-1]) + (scaled(v.lens[-1], "the last axis"),)
        strides = tuple(scaled(x, "a stride") for x in v.strides[:-1]) + (const(1),)
        return ArrayView(nb, off, lens, strides, (None,) * v.ndim, f"{v.name}.view({dt})", v.bad, v.depth,
                         v.contig)

    def _retyped(self, base, dt, line):
        """``base``'s whole storage (the bytes its flat view spans) as a 1-d array of ``dt``, cached."""
        key = ("retyped", base.key, dt)
        r = self._shared.get(key)
        if r is not None:
            return r
        from .values import GlobalArray, LocalArray, SharedArray
        nsz = dt.itemsize
        if base.space in ("global", "const"):
            raw = base.flat().span.view(np.uint8)
            r = GlobalArray(f"{base.name}.view({dt})", raw[:raw.size // nsz * nsz].view(dt), base.base_addr,
                            readonly=base.space == "const")
            r.pkey = base.pkey
        elif base.space == "shared":
            if base.offset % nsz:
                raise self._err(CompileError, f"{base.name}.view({dt}): the shared array's offset {base.offset} is "
                                f"misaligned for {dt}", line)
            n = base.size * base.itemsize // nsz
            r = SharedArray(f"{base.name}.view({dt})", (n,), dt, base.offset, self.shared_buf.reshape(-1).view(dt),
                            self.shared_buf.shape[1] // nsz, self.C)
        else:
            st = base.storage
            if (st.shape[2] * st.itemsize) % nsz:
                raise self._err(CompileError, f"{base.name}.view({dt}): new type not compatible with array", line)
            r = LocalArray(f"{base.name}.view({dt})", (st.shape[2] * st.itemsize // nsz,), dt, base.offset,
                           st.view(dt), base.slot)
        self._shared[key] = r
        return r

    def merge_arrays(self, c, a, b, name=None, line=None):
        """Lane-wise ``a if c else b`` of two views (or arrays) of one base array and dimensionality: numba
        selects the fields of the array structs.  Of different arrays: an ``Ununified`` (refused where used)."""
        if a is b:
            return a
        if type(a) is SubArray and type(b) is SubArray and a.parent is b.parent and len(a.prefix) == len(b.prefix):
            pre = tuple(self._pick(c, self._val(x, 0), self._val(y, 0), line) for x, y in zip(a.prefix, b.prefix))
            return SubArray(a.parent, pre, max(a.depth, b.depth))
        if isinstance(a, ArrayRef) and isinstance(b, ArrayRef):
            return a                                     # two arrays: as before (the last assignment)
        va, vb = self._as_view(a, 0), self._as_view(b, 0)
        if va.base is not vb.base or va.ndim != vb.ndim:
            return Ununified(name or "a view", b, a, why=(
                f"{name or 'a variable'!r} holds {va.name!r} on some threads and {vb.name!r} on others (views of "
                "different arrays or dimensionality): gpusim keeps a view per thread over one base array only; "
                "give each array its own variable"))
        bad = None
        if va.bad is not None or vb.bad is not None:
            bad = np.where(c, va.bad if va.bad is not None else False, vb.bad if vb.bad is not None else False)
        return ArrayView(va.base, self._pick(c, va.offset, vb.offset, line),
                         tuple(self._pick(c, x, y, line) for x, y in zip(va.lens, vb.lens)),
                         tuple(self._pick(c, x, y, line) for x, y in zip(va.strides, vb.strides)),
                         tuple(x if x == y else None for x, y in zip(va.src, vb.src)),
                         va.name if va.name == vb.name else f"{va.name} or {vb.name}", bad, max(va.depth, vb.depth))

    def _pick(self, c, x: V, y: V, line) -> V:
        """Lane-wise ``x if c else y`` of one field of two views (a SEL where the line is known: ``ifexp``; a
        merge of a variable at a join is the register's own, as for numbers)."""
        if x is y or (x.const and y.const and type(x.v) is not np.ndarray and type(y.v) is not np.ndarray
                      and x.v == y.v):
            return x
        n0 = len(self.ops)
        deps = _union(x.deps, y.deps)
        if line is not None and self.recording and self.mask is not EMPTY:
            self._rec(("select",), line, deps)
        return V(np.where(c, x.v, y.v), self._out(deps, n0), False, nn=x.nn and y.nn)


def _keeps_contiguity(items) -> bool:
    """numba's layout rule for ``a[items]`` of a C-contiguous array (``arraydecl.get_array_index_type``): the
    result stays 'C' when every index left of the innermost given one is an integer (or ``...`` at the end) and
    the innermost is an integer or a slice without a step; indices after an ellipsis make it 'A'."""
    given = [it for it in items if it is not None]
    ell = [j for j, it in enumerate(given) if it is Ellipsis]
    if ell:
        if ell[0] != len(given) - 1:
            return False
        given = given[:-1]
    if any(type(it) is slice for it in given[:-1]):
        return False
    return not given or type(given[-1]) is not slice or given[-1].step is None


def _any_lane(bad):
    """``bad`` as a lane mask, or None when no lane is bad."""
    return None if bad is None or not np.any(bad) else bad


def _array_key(obj):
    """A key of what ``obj`` (an array, a row or a view) denotes: equal keys, the same elements."""
    if type(obj) is SubArray:
        return ("row", obj.parent.key, tuple(V.key(x) if type(x) is V else repr(x) for x in obj.prefix))
    return ("view" if type(obj) is ArrayView else "array", obj.key)


def _item_key(it):
    if type(it) is V:
        return it.key()
    if type(it) is slice:
        return tuple(None if p is None else p.key() for p in (it.start, it.stop, it.step))
    return repr(it)


__all__ = ["Views", "view_index"]
