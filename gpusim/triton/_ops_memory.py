"""Functional semantics of ``tl.load`` / ``tl.store`` / atomics and block pointers, over all programs.

Loads and stores gather/scatter a whole chunk of programs with one numpy fancy-indexing call; lanes that
are masked off (by ``mask`` or because their program is inactive under program-varying control flow) never
touch memory.  An active lane outside its pointer's array reads/writes another argument array that holds the
address (as the GPU would); outside every argument array it raises ``OutOfBounds`` naming the program id and
the element offsets.  Block pointers (``make_block_ptr`` / ``advance``) are lowered as the pointer tensor they
describe.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import CompileError, OutOfBounds, UnsupportedConstruct
from . import _core as C
from ._core import (bfloat16, binary, block_type, cast, fail, int1, pointer_type, tensor, to_tensor, unwrap,
                    vshape)
from ._ops_tile import arange


# ---------------------------------------------------------------------------------------------------------
# masks and addresses
# ---------------------------------------------------------------------------------------------------------

def _effective_mask(mask: tensor | None, shape) -> np.ndarray | None:
    """bool array broadcastable to (P, *shape): the lanes that really access memory; None = all."""
    st = C.ST
    a = st.active()
    m = None
    if mask is not None:
        mv = vshape(mask, shape)
        if mv.dtype != np.bool_:
            mv = mv != 0
        if not (mv.shape[0] == 1 and mv.all()):
            m = mv
    if a is not None:
        am = a.reshape((a.shape[0],) + (1,) * len(shape))
        m = am if m is None else (m & am)
    if m is not None and m.all():
        return None                 # nothing masked in this chunk: plain gather/scatter
    return m


def _pid_tuple(p: int) -> tuple:
    st = C.ST
    return tuple(int(x) for x in st.pids[p])


def _oob(buf: C.Buffer, offs: np.ndarray, sel: np.ndarray | None, what: str):
    """Resolve lanes outside ``buf``: reads/writes of another argument's memory, or an OutOfBounds error.

    Returns (positions, other_buffer, indices) groups for lanes that hit another argument array.
    """
    st = C.ST
    bad = (offs < 0) | (offs >= buf.n)
    if sel is not None:
        bad &= sel
    idx = np.nonzero(bad.reshape(bad.shape[0], -1) if bad.ndim > 1 else bad.reshape(-1, 1))
    flat_off = np.broadcast_to(offs, bad.shape).reshape(bad.shape[0], -1)[idx].astype(np.int64)
    addr = buf.base_addr + flat_off * buf.elem_bytes
    resolved = np.zeros(addr.shape, bool)
    hits = []
    for b in st.buffers:
        if b is buf or b.flat is buf.flat:
            continue
        end = b.base_addr + b.n * b.elem_bytes
        inside = (addr >= b.base_addr) & (addr + buf.elem_bytes <= end) & ~resolved
        if inside.any():
            resolved |= inside
            hits.append((inside, b))
    if not resolved.all():
        k = int(np.argmin(resolved))
        p = int(idx[0][k])
        prog_off = flat_off[(idx[0] == p) & ~resolved]
        shown = ", ".join(str(int(x)) for x in prog_off[:8]) + (" ..." if prog_off.size > 8 else "")
        fail(OutOfBounds, f"out-of-bounds {what} through pointer argument {buf.name!r} (an array of {buf.n} "
                          f"{buf.dtype} elements): element offsets [{shown}] are outside every argument array; "
                          f"mask the access (e.g. mask=offsets < n)",
             program=_pid_tuple(p) if bad.shape[0] > 1 or st.P == 1 else None)
    return idx, addr, hits


def _read_other(buf: C.Buffer, addr: np.ndarray, b: C.Buffer) -> np.ndarray:
    raw = b.flat.view(np.uint8)
    eb = buf.elem_bytes
    k = (addr - b.base_addr)[:, None] + np.arange(eb)[None, :]
    by = np.ascontiguousarray(raw[k])
    st_dt = buf.dtype.np_storage if buf.dtype is not bfloat16 else np.dtype(np.uint16)
    return by.view(st_dt).reshape(-1)


def _write_other(buf: C.Buffer, addr: np.ndarray, b: C.Buffer, raw_vals: np.ndarray):
    raw = b.flat.view(np.uint8)
    eb = buf.elem_bytes
    k = (addr - b.base_addr)[:, None] + np.arange(eb)[None, :]
    raw[k] = np.ascontiguousarray(raw_vals).view(np.uint8).reshape(-1, eb)


_BOUNDS: dict[int, tuple] = {}     # id(pointer offsets array) -> (weak reference to it, min, max)


def _bounds(ptr: tensor, o: np.ndarray) -> tuple[int, int]:
    """Smallest and largest element offset of ``o``, all of ``ptr``'s offsets broadcast.  A pointer tile that is
    another one advanced by a scalar (``ptr.shift``, a loop's ``ptrs += step``) has that one's bounds, advanced:
    no pass over its values."""
    sh = ptr.shift
    hit = _BOUNDS.get(id(sh[0])) if sh is not None else None
    if hit is not None and hit[0]() is sh[0]:
        lo, hi = hit[1] + sh[1], hit[2] + sh[1]
    else:
        lo, hi = int(o.min()), int(o.max())
    v = ptr.v
    if id(v) not in _BOUNDS:
        _BOUNDS[id(v)] = (weakref.ref(v, lambda _r, k=id(v): _BOUNDS.pop(k, None)), lo, hi)
    return lo, hi


def gather(ptr: tensor, shape, m: np.ndarray | None):
    """Loaded values (compute dtype), shape (Pn, *shape), and the effective mask."""
    buf = ptr.buf
    dt = buf.dtype
    offs = vshape(ptr, shape)
    full = (offs.shape[0] if m is None else max(offs.shape[0], m.shape[0]),) + tuple(shape)
    o = np.broadcast_to(offs, full)
    if m is not None:
        mm = np.broadcast_to(m, full)
        if not mm.any():
            return np.zeros(full, dt.np), mm
        o = np.where(mm, o, 0)
    else:
        mm = None
    if o.size == 0:
        return np.zeros(full, dt.np), mm
    lo, hi = _bounds(ptr, o) if mm is None else (o.min(), o.max())
    if buf.n == 0 or lo < 0 or hi >= buf.n:
        idx, addr, hits = _oob(buf, o, mm, "load")
        safe = np.clip(o, 0, max(buf.n - 1, 0))
        raw = buf.flat.take(safe) if buf.n else np.zeros(full, buf.flat.dtype)
        raw = np.array(raw, copy=True)
        r2 = raw.reshape(full[0], -1)
        for inside, b in hits:
            sub = (idx[0][inside], idx[1][inside])
            r2[sub] = _read_other(buf, addr[inside], b)
        return C.to_compute(dt, raw), mm
    return buf.take(o), mm


def scatter(ptr: tensor, shape, vals: np.ndarray, m: np.ndarray | None, what="store"):
    buf = ptr.buf
    dt = buf.dtype
    offs = vshape(ptr, shape)
    P0 = max(offs.shape[0], vals.shape[0], m.shape[0] if m is not None else 1)
    full = (P0,) + tuple(shape)
    o = np.broadcast_to(offs, full)
    v = np.broadcast_to(vals, full)
    if m is not None:
        mm = np.broadcast_to(m, full)
        o = o[mm]
        v = v[mm]
    else:
        mm = None
        o = o.reshape(-1)
        v = v.reshape(-1)
    if o.size == 0:
        return
    raw = C.to_storage(dt, v)
    lo, hi = o.min(), o.max()
    if lo < 0 or hi >= buf.n:
        bad = (o < 0) | (o >= buf.n)
        # locate the program of the first bad lane for the message
        if mm is not None:
            progs = np.nonzero(mm.reshape(P0, -1))[0]
        else:
            progs = np.repeat(np.arange(P0), int(np.prod(shape)) if shape else 1)
        addr = buf.base_addr + o[bad].astype(np.int64) * buf.elem_bytes
        resolved = np.zeros(addr.shape, bool)
        st = C.ST
        writes = []
        for b in st.buffers:
            if b.flat is buf.flat:
                continue
            end = b.base_addr + b.n * b.elem_bytes
            inside = (addr >= b.base_addr) & (addr + buf.elem_bytes <= end) & ~resolved
            if inside.any():
                resolved |= inside
                writes.append((inside, b))
        if not resolved.all():
            k = int(np.argmin(resolved))
            p = int(progs[np.nonzero(bad)[0][k]])
            offp = o[bad][(progs[bad] == p) & ~resolved]
            shown = ", ".join(str(int(x)) for x in offp[:8]) + (" ..." if offp.size > 8 else "")
            fail(OutOfBounds, f"out-of-bounds {what} through pointer argument {buf.name!r} (an array of {buf.n} "
                              f"{dt} elements): element offsets [{shown}] are outside every argument array; "
                              f"mask the access (e.g. mask=offsets < n)", program=_pid_tuple(p))
        for inside, b in writes:
            _write_other(buf, addr[inside], b, raw[bad][inside])
            b.shadow = None
        good = ~bad
        buf.put(o[good], raw[good])
        _invalidate_aliases(buf)
        return
    buf.put(o, raw)
    _invalidate_aliases(buf)


def _invalidate_aliases(buf):
    for b in C.ST.buffers:
        if b is not buf and b.shadow is not None and b.flat.__array_interface__["data"][0] == \
                buf.flat.__array_interface__["data"][0]:
            b.shadow = None


def _check_ptr(ptr, what):
    if not isinstance(ptr, tensor) or not ptr.dtype.is_ptr():
        fail(CompileError, f"Unsupported ptr type {getattr(ptr, 'dtype', type(ptr).__name__)!r} in `tl.{what}`")
    if what != "load" and getattr(ptr.dtype, "const", False):
        fail(CompileError, "Cannot store to a constant pointer")


def const_pointer(t):
    """A kernel argument annotated ``tl.const``: a pointer to constant data (stores through it are refused)."""
    if isinstance(t, tensor) and t.dtype.is_ptr():
        t.dtype = C.pointer_type(t.dtype.element_ty, const=True)
    return t


def _as_mask(mask):
    mask = unwrap(mask)
    if mask is None:
        return None
    t = to_tensor(mask)
    if t.dtype is not int1:
        t = cast(t, int1)
    return t


# ---------------------------------------------------------------------------------------------------------
# load / store / atomics
# ---------------------------------------------------------------------------------------------------------

#: the cache modifiers and eviction policies Triton's semantic layer accepts (anything else: "... not supported")
LOAD_CACHE = ("", ".ca", ".cg", ".cv")
STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
EVICTION = ("", "evict_last", "evict_first")


def _check_hints(cache_modifier, eviction_policy, allowed) -> None:
    if cache_modifier and cache_modifier not in allowed:
        fail(CompileError, f"Cache modifier {cache_modifier} not supported (one of {', '.join(allowed[1:])})")
    if eviction_policy and eviction_policy not in EVICTION:
        fail(CompileError, f"Eviction policy {eviction_policy} not supported (one of {', '.join(EVICTION[1:])})")


def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    pointer = unwrap(pointer)
    _check_hints(cache_modifier, eviction_policy, LOAD_CACHE)
    # ptxas: "Modifier '.evict_first' cannot be combined with modifier '.cg'" (and so on for the others)
    mods = [m for m in (eviction_policy and "." + eviction_policy, cache_modifier, volatile and ".volatile") if m]
    if len(mods) > 1:
        fail(CompileError, f"Modifier '{mods[0]}' cannot be combined with modifier '{mods[1]}' (ptxas: a load takes "
                           f"one of cache_modifier, eviction_policy, volatile)")
    if isinstance(pointer, BlockPtr):
        return _load_block(pointer, boundary_check, padding_option)
    _check_ptr(pointer, "load")
    mask = _as_mask(mask)
    other = unwrap(other)
    if mask is None and other is not None:
        fail(CompileError, "`other` cannot be provided without `mask`")
    if boundary_check or padding_option:
        fail(CompileError, "`padding_option` or `boundary_check` argument is not supported for loading a tensor of "
                           "pointers or loading a scalar; use block pointers (make_block_ptr) instead")
    shape = pointer.shape
    if mask is not None and mask.shape != shape:
        shape = C.broadcast_shapes(shape, mask.shape)
    if other is not None and isinstance(other, tensor) and other.shape != shape:
        shape = C.broadcast_shapes(shape, other.shape)
    elt = pointer.dtype.element_ty
    st = C.state()
    m = _effective_mask(mask, shape)
    vals, mm = gather(pointer, shape, m)
    if mm is not None:
        if other is None:
            ov = 0
        else:
            ot = cast(other if isinstance(other, tensor) else to_tensor(other), elt)
            ov = vshape(ot, shape)
        vals = np.where(mm, vals, ov)
    out = tensor(vals, elt, shape)
    C.note_numel(shape)
    if st.rec is not None:
        # .cg / .cv and volatile loads skip the L1 (ld.global.cg, ld.volatile)
        out.lsrc = st.rec.load(out, pointer, mask, shape, other,
                               l1_bypass=cache_modifier in (".cg", ".cv") or bool(volatile))
    return out


def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    pointer = unwrap(pointer)
    _check_hints(cache_modifier, eviction_policy, STORE_CACHE)
    if isinstance(pointer, BlockPtr):
        return _store_block(pointer, value, boundary_check)
    _check_ptr(pointer, "store")
    mask = _as_mask(mask)
    elt = pointer.dtype.element_ty
    value = unwrap(value)
    vt = value if isinstance(value, tensor) else to_tensor(value)
    shape = pointer.shape
    if vt.shape != shape:
        shape = C.broadcast_shapes(shape, vt.shape)
        if shape != pointer.shape:
            fail(CompileError, f"store: value of shape {list(vt.shape)} does not fit the pointer block "
                               f"{list(pointer.shape)}")
    if mask is not None and mask.shape != shape:
        s2 = C.broadcast_shapes(shape, mask.shape)
        if s2 != shape:
            fail(CompileError, f"store: mask of shape {list(mask.shape)} does not fit the pointer block {list(shape)}")
    vc = cast(vt, elt) if vt.dtype != elt else vt
    st = C.state()
    m = _effective_mask(mask, shape)
    rep = st.replaying()
    if rep is not None:             # done in an earlier round (see _control.While): not again
        keep = (~rep).reshape((rep.shape[0],) + (1,) * len(shape))
        m = keep if m is None else (m & keep)
    if st.in_while:
        # inside a loop that may spin: only a store that changes memory is progress
        old, mm = gather(pointer, shape, m)
        new = np.broadcast_to(vshape(vc, shape), old.shape)
        diff = old != new
        if bool(np.any(diff if mm is None else (diff & mm))):
            st.write_epoch += 1
    else:
        st.write_epoch += 1
    scatter(pointer, shape, vshape(vc, shape), m)
    if st.rec is not None:              # recorded before it counts: a write replayed after a wait is not traced again
        st.rec.store(pointer, vc, mask, shape)
    st.count_writes(None)


_ATOMIC_NP = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
              "xor": np.bitwise_xor}


def atomic(op: str, pointer, val, mask=None, sem=None, scope=None, cmp=None):
    semantics = _sem(sem)
    pointer = unwrap(pointer)
    _check_ptr(pointer, f"atomic_{op}")
    mask = _as_mask(mask)
    elt = pointer.dtype.element_ty
    vt = to_tensor(unwrap(val))
    shape = pointer.shape
    if vt.shape != shape:
        shape = C.broadcast_shapes(shape, vt.shape)
    if mask is not None and mask.shape != shape:
        shape = C.broadcast_shapes(shape, mask.shape)
    vc = cast(vt, elt)
    st = C.state()
    m = _effective_mask(mask, shape)
    buf = pointer.buf
    P0 = st.P                       # every program performs its own read-modify-write
    full = (P0,) + tuple(shape)
    o = np.broadcast_to(vshape(pointer, shape), full)
    vv = np.broadcast_to(vshape(vc, shape), full)
    mm = np.broadcast_to(m, full) if m is not None else np.ones(full, bool)
    old = np.zeros(full, elt.np)
    rep = st.replaying()
    if rep is not None:             # done in an earlier round (see _control.While): its old values again
        rp = rep if st.active() is None else (rep & st.active())
        for p in np.nonzero(rp)[0].tolist():
            old[p] = st.replayed.get((p, int(st.write_idx[p])), 0)
        mm = mm & ~rep.reshape((P0,) + (1,) * len(shape))
    groups = [(buf, mm, o)]
    sel_o = o[mm]
    if sel_o.size and (sel_o.min() < 0 or sel_o.max() >= buf.n):
        groups = _atomic_groups(buf, o, mm, op)     # lanes reaching other arguments' memory (xformers' split-K)
    for buf, mm, o in groups:
        sel_o = o[mm]
        if not sel_o.size:
            continue
        sel_v = vv[mm]
        flat = buf.flat
        raw_before = flat[sel_o]
        cur = C.to_compute(buf.dtype, raw_before)
        uniq, first, counts = np.unique(sel_o, return_index=True, return_counts=True)
        if op == "cas":
            cc = np.broadcast_to(vshape(cast(to_tensor(unwrap(cmp)), elt), shape), full)[mm]
            olds = np.empty_like(cur)
            mem = {}
            for i, (a, c, v) in enumerate(zip(sel_o.tolist(), cc.tolist(), sel_v.tolist())):
                x = mem.get(a, cur[i])
                olds[i] = x
                mem[a] = v if x == c else x
            newvals = mem
        elif counts.max() == 1:
            olds = cur
            if op == "xchg":
                new = sel_v
            else:
                new = _ATOMIC_NP[op](cur, sel_v)
            newvals = None
        elif op == "add":
            order = np.argsort(sel_o, kind="stable")
            so, sv = sel_o[order], sel_v[order].astype(np.float64 if elt.is_floating() else np.int64)
            cs = np.cumsum(sv)
            start = np.searchsorted(so, so, side="left")
            excl = cs - sv - (cs[start] - sv[start])
            olds_sorted = cur[order] + excl.astype(cur.dtype)
            olds = np.empty_like(cur)
            olds[order] = olds_sorted
            newvals = None
            new = olds + sel_v
        else:
            olds = np.empty_like(cur)
            mem = {}
            f = _ATOMIC_NP.get(op)
            for i, (a, v) in enumerate(zip(sel_o.tolist(), sel_v.tolist())):
                x = mem.get(a, cur[i])
                olds[i] = x
                mem[a] = v if op == "xchg" else f(x, v)
            newvals = mem
        old[mm] = olds
        if newvals is not None:
            ks = np.fromiter(newvals.keys(), np.int64, len(newvals))
            vs = np.array(list(newvals.values()), dtype=cur.dtype)
            buf.put(ks, C.to_storage(buf.dtype, vs))
        else:
            # last writer per address holds the final value
            buf.put(sel_o, C.to_storage(buf.dtype, new))
        _invalidate_aliases(buf)
        if not np.array_equal(flat[sel_o], raw_before):
            st.write_epoch += 1
    if elt in C.ROUNDED:
        old = C.round_to(elt, old)
    if st.atomic_log is not None:
        a = st.active()
        st.atomic_log.append((np.where(a, st.write_idx, -1) if a is not None else st.write_idx.copy(), old))
    out = tensor(old, elt, shape)
    if st.rec is not None:              # recorded before it counts: an atomic replayed after a wait is not traced again
        st.rec.atomic(out, pointer, vc, mask, shape, op, semantics)
    st.count_writes(None)
    return out


def _atomic_groups(buf, o, mm, op):
    """(buffer, lanes, element offsets in that buffer) of an atomic whose lanes reach other arguments' memory (a
    pointer chosen per program among several arguments): each group is read-modified-written in its own buffer."""
    _oob(buf, o, mm, f"atomic_{op}")           # OutOfBounds for a lane outside every argument
    inside = (o >= 0) & (o < buf.n)
    groups = [(buf, mm & inside, o)]
    addr = buf.base_addr + o.astype(np.int64) * buf.elem_bytes
    rest = mm & ~inside
    for b in C.ST.buffers:
        if b is buf or b.flat is buf.flat or not rest.any():
            continue
        hit = rest & (addr >= b.base_addr) & (addr + buf.elem_bytes <= b.base_addr + b.n * b.elem_bytes)
        if hit.any():
            if b.dtype != buf.dtype:
                fail(UnsupportedConstruct, f"atomic_{op} through a {buf.dtype!r} pointer into argument {b.name!r} "
                                           f"of {b.dtype!r} elements is not supported")
            groups.append((b, hit, (addr - b.base_addr) // b.elem_bytes))
            rest = rest & ~hit
    return groups


_SEMS = ("relaxed", "acquire", "release", "acq_rel")


def _sem(sem) -> str:
    """An atomic's memory semantics (Triton's default: acq_rel)."""
    s = unwrap(sem)
    if s is None:
        return "acq_rel"
    if s not in _SEMS:
        fail(UnsupportedConstruct, f"atomic sem={s!r}: Triton accepts {', '.join(repr(x) for x in _SEMS)}")
    return s


# ---------------------------------------------------------------------------------------------------------
# block pointers (make_block_ptr / advance): lowered as the pointer tensor they describe
# ---------------------------------------------------------------------------------------------------------

class BlockPtr:
    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides = base, list(shape), list(strides)
        self.offsets, self.block_shape, self.order = list(offsets), [int(unwrap(b)) for b in block_shape], order

    @property
    def type(self):
        """Triton's: a pointer to a block (``ptr.type.element_ty`` is the block's type, ``.element_ty`` of that
        the scalar type)."""
        return pointer_type(block_type(self.base.dtype.element_ty, self.block_shape))

    @property
    def dtype(self):
        return self.type

    def _tile(self, boundary_check):
        ptr = self.base
        mask = None
        r = len(self.block_shape)
        for d in range(r):
            idx = arange(0, self.block_shape[d])
            idx = binary("add", idx, self.offsets[d])
            shp = [1] * r
            shp[d] = self.block_shape[d]
            idx = C.reshape(idx, shp)
            ptr = binary("add", ptr, binary("mul", idx, self.strides[d]))
            if d in boundary_check:
                ok = binary("and", binary("ge", idx, 0), binary("lt", idx, self.shape[d]))
                mask = ok if mask is None else binary("and", mask, ok)
        if ptr.shape != tuple(self.block_shape):
            ptr = C.broadcast_to(ptr, self.block_shape)
        return ptr, mask


def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    base = unwrap(base)
    _check_ptr(base, "make_block_ptr")
    return BlockPtr(base, [unwrap(s) for s in shape], [unwrap(s) for s in strides], [unwrap(o) for o in offsets],
                    block_shape, order)


def advance(base, offsets):
    base = unwrap(base)
    if not isinstance(base, BlockPtr):
        fail(CompileError, "tl.advance expects a block pointer")
    offs = [binary("add", a, unwrap(b)) for a, b in zip(base.offsets, offsets)]
    return BlockPtr(base.base, base.shape, base.strides, offs, base.block_shape, base.order)


def _load_block(bp: BlockPtr, boundary_check, padding_option):
    ptr, mask = bp._tile(tuple(unwrap(b) for b in (boundary_check or ())))
    other = None
    if mask is not None:
        other = float("nan") if padding_option == "nan" else 0
    return load(ptr, mask=mask, other=other)


def _store_block(bp: BlockPtr, value, boundary_check):
    ptr, mask = bp._tile(tuple(unwrap(b) for b in (boundary_check or ())))
    return store(ptr, value, mask=mask)
