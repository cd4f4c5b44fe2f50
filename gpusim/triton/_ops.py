"""Functional semantics of the memory, dot, reduction and math ops of ``triton.language``, over all programs.

Loads and stores gather/scatter a whole chunk of programs with one numpy fancy-indexing call; lanes that
are masked off (by ``mask`` or because their program is inactive under program-varying control flow) never
touch memory.  An active lane outside its pointer's array reads/writes another argument array that holds the
address (as the GPU would); outside every argument array it raises ``OutOfBounds`` naming the program id and
the element offsets.  ``dot`` multiplies in float32 (tf32-rounded inputs for fp32 unless
``input_precision="ieee"``) with fp32 accumulation, batched over programs with ``np.matmul``.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import CompileError, OutOfBounds, UnsupportedConstruct
from . import _axisinfo as AI
from . import _core as C
from ._core import (bfloat16, binary, cast, fail, float16, float32, float64, int1, int32, int64, tensor,
                    to_tensor, unwrap, vshape)

# ---------------------------------------------------------------------------------------------------------
# programs
# ---------------------------------------------------------------------------------------------------------


def program_id(axis) -> tensor:
    axis = int(unwrap(axis))
    if axis not in (0, 1, 2):
        fail(CompileError, f"program_id axis must be 0, 1, or 2 but got {axis}")
    st = C.state()
    col = st.pids[:, axis]
    if st.grid[axis] == 1 or (col.size and col.min() == col.max() and st.P == 1):
        v = col[:1].copy()
    else:
        v = col
    out = tensor(v, int32, ())
    if st.rec is not None:
        out.ax = AI.pessimistic(1)
        st.rec.alu(out, (), "s2r")
    return out


def num_programs(axis) -> tensor:
    axis = int(unwrap(axis))
    if axis not in (0, 1, 2):
        fail(CompileError, f"num_programs axis must be 0, 1, or 2 but got {axis}")
    st = C.state()
    out = tensor(np.array([st.grid[axis]], np.int32), int32, ())
    if st.rec is not None:
        out.ax = AI.pessimistic(1)
    return out


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

def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    pointer = unwrap(pointer)
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
        out.lsrc = st.rec.load(out, pointer, mask, shape, other)
    return out


def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    pointer = unwrap(pointer)
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
    scatter(pointer, shape, vshape(vc, shape), m)
    if st.rec is not None:
        st.rec.store(pointer, vc, mask, shape)


_ATOMIC_NP = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
              "xor": np.bitwise_xor}


def atomic(op: str, pointer, val, mask=None, sem=None, scope=None, cmp=None):
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
    sel_o = o[mm]
    if sel_o.size:
        if sel_o.min() < 0 or sel_o.max() >= buf.n:
            _oob(buf, o, mm, f"atomic_{op}")
            fail(UnsupportedConstruct, f"atomic_{op} across argument arrays is not supported")
        sel_v = vv[mm]
        flat = buf.flat
        cur = C.to_compute(buf.dtype, flat[sel_o])
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
    if elt in (float16, bfloat16):
        old = C.round_to(elt, old)
    out = tensor(old, elt, shape)
    if st.rec is not None:
        st.rec.atomic(out, pointer, vc, mask, shape, op)
    return out


# ---------------------------------------------------------------------------------------------------------
# block pointers (make_block_ptr / advance): lowered as the pointer tensor they describe
# ---------------------------------------------------------------------------------------------------------

class BlockPtr:
    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides = base, list(shape), list(strides)
        self.offsets, self.block_shape, self.order = list(offsets), [int(unwrap(b)) for b in block_shape], order

    @property
    def dtype(self):
        return self.base.dtype

    def _tile(self, boundary_check):
        ptr = self.base
        mask = None
        r = len(self.block_shape)
        for d in range(r):
            idx = C.arange(0, self.block_shape[d])
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


# ---------------------------------------------------------------------------------------------------------
# dot
# ---------------------------------------------------------------------------------------------------------

_DOT_TYPES = ("int8", "uint8", "fp16", "bf16", "fp32", "fp64")


class _OneBlasThread:
    """Run numpy's BLAS on one thread for the duration of a call (OpenBLAS' thread-local setting).

    The batched products here are many small GEMMs; on a small, shared machine OpenBLAS's worker threads
    spin-wait against other processes (and against torch's OpenMP pool when torch is loaded), which can make
    them 10-50x slower than one thread.  The previous setting is restored after each call."""

    fn = None
    probed = False

    @classmethod
    def setter(cls):
        if not cls.probed:
            cls.probed = True
            try:
                import ctypes
                with open("/proc/self/maps") as f:
                    paths = {ln.split()[-1] for ln in f if "openblas" in ln.lower() and ".so" in ln}
                for p in paths:
                    lib = ctypes.CDLL(p)
                    f = getattr(lib, "openblas_set_num_threads_local", None)
                    if f is not None:
                        f.argtypes = [ctypes.c_int]
                        f.restype = ctypes.c_int
                        cls.fn = f
                        break
            except Exception:
                cls.fn = None
        return cls.fn


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched matmul over programs (numpy BLAS, one thread)."""
    f = _OneBlasThread.setter()
    if f is None:
        return np.matmul(a, b)
    prev = f(1)
    try:
        return np.matmul(a, b)
    finally:
        f(prev if prev > 0 else 0)


def dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, out_dtype=float32):
    a, b = unwrap(a), unwrap(b)
    acc = unwrap(acc)
    out_dtype = unwrap(out_dtype) or float32
    if not isinstance(a, tensor) or not isinstance(b, tensor) or not a.shape or not b.shape:
        fail(CompileError, "tl.dot: both operands must be tensors (blocks)")
    if allow_tf32 is not None and input_precision is not None:
        fail(CompileError, "tl.dot: only one of input_precision and allow_tf32 can be specified")
    if input_precision is None:
        input_precision = "tf32" if allow_tf32 is None or unwrap(allow_tf32) else "ieee"
    input_precision = str(unwrap(input_precision)).lower()
    if input_precision not in ("tf32", "tf32x3", "ieee"):
        fail(CompileError, f"tl.dot: unknown input_precision {input_precision!r}")
    for t, n in ((a, "lhs"), (b, "rhs")):
        if t.dtype.name not in _DOT_TYPES:
            fail(CompileError, f"tl.dot: unsupported {n} dtype {t.dtype!r}")
    if a.dtype != b.dtype:
        fail(CompileError, f"tl.dot: both operands must be same dtype. Got {a.dtype} and {b.dtype}")
    ra, rb = len(a.shape), len(b.shape)
    if not (ra == rb == 2 or ra == rb == 3):
        fail(CompileError, f"tl.dot: both inputs must be either 2D or 3D; (lhs: {list(a.shape)} vs rhs: "
                           f"{list(b.shape)})")
    if a.shape[-1] != b.shape[-2]:
        fail(CompileError, f"tl.dot: first input shape ({list(a.shape)}) and second input shape ({list(b.shape)}) "
                           f"are not compatible for matmul (second index of first shape ({a.shape[-1]}) must be "
                           f"equal to first index of second shape ({b.shape[-2]}))")
    if ra == 3 and a.shape[0] != b.shape[0]:
        fail(CompileError, f"tl.dot: batch dimensions differ: {a.shape[0]} and {b.shape[0]}")
    K = a.shape[-1]
    min_k = 32 if a.dtype.primitive_bitwidth == 8 else 16
    if K < min_k:
        fail(CompileError, f"tl.dot: input shapes should have M >= 1, N >= 1 and K >= {min_k} (got K = {K})")
    N = b.shape[-1]
    oshape = a.shape[:-1] + (N,)
    if a.dtype.is_int():
        ret = int32
    elif a.dtype in (float32, bfloat16):
        ret = float32
    elif a.dtype is float64:
        ret = float64
    else:
        ret = out_dtype
        if ret is bfloat16:
            fail(CompileError, "tl.dot: out_dtype=bfloat16 is unsupported; use float32 and cast with .to()")
    if acc is not None:
        acc = to_tensor(acc)
        if tuple(acc.shape) != oshape or acc.dtype != ret:
            fail(CompileError, f"tl.dot: accumulator of shape {list(acc.shape)} and type {acc.dtype} does not match "
                               f"the result {list(oshape)} of type {ret}")
    st = C.state()
    av, bv = a.v, b.v
    if a.dtype.is_int():
        prod = np.matmul(av.astype(np.int64), bv.astype(np.int64)).astype(np.int32)
        v = prod if acc is None else (acc.v.astype(np.int64) + prod).astype(np.int32)
    else:
        cdt = np.float64 if a.dtype is float64 else np.float32
        if a.dtype is float32 and input_precision == "tf32":
            av, bv = C.round_tf32(av), C.round_tf32(bv)
        elif a.dtype is float32 and input_precision == "tf32x3":
            ah = C.round_tf32(av)
            bh = C.round_tf32(bv)
            al = C.round_tf32(av - ah)
            bl = C.round_tf32(bv - bh)
            prod = _matmul(ah, bh) + (_matmul(al, bh) + _matmul(ah, bl))
            av = bv = None
        if av is not None:
            prod = _matmul(av.astype(cdt, copy=False), bv.astype(cdt, copy=False))
        if acc is not None:
            accv = acc.v.astype(cdt, copy=False)
            if prod.shape == np.broadcast_shapes(prod.shape, accv.shape):
                prod += accv
                v = prod
            else:
                v = accv + prod
        else:
            v = prod
        if ret in (float16,):
            v = C.round_to(ret, v.astype(np.float32))
    out = tensor(v, ret, oshape)
    C.note_numel(oshape)
    if st.rec is not None:
        st.rec.dot(out, a, b, acc, input_precision)
    return out


# ---------------------------------------------------------------------------------------------------------
# reductions and scans
# ---------------------------------------------------------------------------------------------------------

def _norm_axis(x: tensor, axis):
    axis = unwrap(axis)
    r = len(x.shape)
    if axis is None:
        return None
    axis = int(axis)
    if axis < 0:
        axis += r
    if not 0 <= axis < max(r, 1):
        fail(CompileError, f"reduction axis {axis} out of range for a tensor of shape {list(x.shape)}")
    return axis


def _reduce_prep(x, axis):
    x = to_tensor(unwrap(x))
    axis = _norm_axis(x, axis)
    if axis is None:
        if len(x.shape) > 1:
            x = C.reshape(x, [x.numel])
        axis = 0
    if not x.shape:
        fail(CompileError, "cannot reduce a scalar")
    return x, axis


def _reduce_finish(x: tensor, axis: int, v: np.ndarray, dt, keep_dims, kind) -> tensor:
    shape = list(x.shape)
    if keep_dims:
        shape[axis] = 1
        v = np.expand_dims(v, axis + 1)
    else:
        del shape[axis]
    if dt in (float16, bfloat16):
        v = C.round_to(dt, v.astype(np.float32))
    elif dt.np is not None and v.dtype != dt.np:
        v = v.astype(dt.np)
    out = tensor(v, dt, shape)
    st = C.ST
    if st.rec is not None:
        C._prov1(out, x, keep_load=False)
        st.rec.reduce(out, x, axis, kind)
    return out


def reduce_sum(input, axis=None, keep_dims=False, dtype=None):
    x, axis = _reduce_prep(input, axis)
    dtype = unwrap(dtype)
    dt = x.dtype
    if dtype is not None:
        x = cast(x, dtype)
        dt = dtype
    elif dt.is_int() and dt.primitive_bitwidth < 32:
        dt = int32 if dt.is_int_signed() or dt is C.int1 else C.uint32
        x = cast(x, dt)
    with np.errstate(all="ignore"):
        v = x.v.sum(axis=axis + 1, dtype=dt.np if dt.np is not None else None)
    return _reduce_finish(x, axis, v, dt, unwrap(keep_dims), "add")


def _minmax(input, axis, return_indices, tie_break_left, keep_dims, is_max):
    x, axis = _reduce_prep(input, axis)
    if x.dtype is bfloat16:
        x = cast(x, float32)
    if x.dtype.primitive_bitwidth < 32:
        x = cast(x, float32 if x.dtype.is_floating() else int32)
    keep_dims = unwrap(keep_dims)
    v = x.v
    if x.dtype.is_floating():
        red = (np.fmax if is_max else np.fmin).reduce(v, axis=axis + 1)
    else:
        red = v.max(axis=axis + 1) if is_max else v.min(axis=axis + 1)
    vals = _reduce_finish(x, axis, red, x.dtype, keep_dims, "max" if is_max else "min")
    if not unwrap(return_indices):
        return vals
    idx = (np.argmax if is_max else np.argmin)(np.nan_to_num(v, nan=-np.inf if is_max else np.inf)
                                                if x.dtype.is_floating() else v, axis=axis + 1).astype(np.int32)
    ind = _reduce_finish(x, axis, idx, int32, keep_dims, "argmax")
    return vals, ind


def reduce_max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, return_indices, return_indices_tie_break_left, keep_dims, True)


def reduce_min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, return_indices, return_indices_tie_break_left, keep_dims, False)


def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, True, tie_break_left, keep_dims, True)[1]


def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, True, tie_break_left, keep_dims, False)[1]


def xor_sum(input, axis=None, keep_dims=False):
    x, axis = _reduce_prep(input, axis)
    if not x.dtype.is_int():
        fail(CompileError, "xor_sum only supported for integers")
    return _reduce_finish(x, axis, np.bitwise_xor.reduce(x.v, axis=axis + 1), x.dtype, unwrap(keep_dims), "xor")


def reduce_or(input, axis, keep_dims=False):
    x, axis = _reduce_prep(input, axis)
    return _reduce_finish(x, axis, np.bitwise_or.reduce(x.v, axis=axis + 1), x.dtype, unwrap(keep_dims), "or")


def reduce(input, axis, combine_fn, keep_dims=False):
    """Generic reduction with a user combine function: a tree of combine calls on halves (power-of-2 sizes)."""
    single = isinstance(unwrap(input), tensor)
    xs = [to_tensor(unwrap(input))] if single else [to_tensor(unwrap(t)) for t in input]
    axis = unwrap(axis)
    if axis is None:
        xs = [C.reshape(x, [x.numel]) for x in xs]
        axis = 0
    axis = _norm_axis(xs[0], axis)
    st = C.ST
    rec, st.rec = st.rec, None
    try:
        cur = xs
        while cur[0].shape[axis] > 1:
            h = cur[0].shape[axis] // 2
            lo = [_slice(t, axis, 0, h) for t in cur]
            hi = [_slice(t, axis, h, 2 * h) for t in cur]
            r = combine_fn(*lo, *hi)
            cur = [r] if isinstance(unwrap(r), tensor) else [unwrap(t) for t in r]
            cur = [to_tensor(t) for t in cur]
    finally:
        st.rec = rec
    outs = []
    for t, x in zip(cur, xs):
        v = t.v.reshape(t.v.shape[:axis + 1] + t.v.shape[axis + 2:])
        outs.append(_reduce_finish(x, axis, v, t.dtype, unwrap(keep_dims), "custom"))
    return outs[0] if single else tuple(outs)


def _slice(t: tensor, axis: int, lo: int, hi: int) -> tensor:
    sl = [slice(None)] * (len(t.shape) + 1)
    sl[axis + 1] = slice(lo, hi)
    shape = list(t.shape)
    shape[axis] = hi - lo
    return tensor(t.v[tuple(sl)], t.dtype, shape)


def _scan(input, axis, reverse, f, dtype, kind):
    x = to_tensor(unwrap(input))
    axis = _norm_axis(x, axis)
    dtype = unwrap(dtype)
    dt = dtype or x.dtype
    if dtype is None and dt.is_int() and dt.primitive_bitwidth < 32:
        dt = int32
    if dt != x.dtype:
        x = cast(x, dt)
    v = x.v
    if unwrap(reverse):
        v = np.flip(v, axis + 1)
    with np.errstate(all="ignore"):
        r = f(v, axis=axis + 1, dtype=dt.np)
    if unwrap(reverse):
        r = np.flip(r, axis + 1)
    if dt in (float16, bfloat16):
        r = C.round_to(dt, r)
    out = tensor(np.ascontiguousarray(r), dt, x.shape)
    st = C.ST
    if st.rec is not None:
        st.rec.reduce(out, x, axis, kind, scan=True)
    return out


def cumsum(input, axis=0, reverse=False, dtype=None):
    return _scan(input, axis, reverse, np.cumsum, dtype, "add")


def cumprod(input, axis=0, reverse=False, dtype=None):
    return _scan(input, axis, reverse, np.cumprod, dtype, "mul")


# ---------------------------------------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------------------------------------

def _math1(name, f, x, dtypes=("fp32", "fp64"), kind=None):
    x = to_tensor(unwrap(x))
    if dtypes is not None and x.dtype.name not in dtypes:
        fail(CompileError, f"tl.{name}: Expected dtype {list(dtypes)} but got {x.dtype.name}")
    return C.unary_np(x, f, kind or name)


def exp(x):
    return _math1("exp", np.exp, x)


def exp2(x):
    return _math1("exp2", np.exp2, x)


def log(x):
    return _math1("log", np.log, x)


def log2(x):
    return _math1("log2", np.log2, x)


def sin(x):
    return _math1("sin", np.sin, x)


def cos(x):
    return _math1("cos", np.cos, x)


def sqrt(x):
    return _math1("sqrt", np.sqrt, x)


def sqrt_rn(x):
    return _math1("sqrt_rn", np.sqrt, x, ("fp32",), "sqrt")


def rsqrt(x):
    return _math1("rsqrt", lambda v: 1.0 / np.sqrt(v), x)


def erf(x):
    return _math1("erf", C.erf_np, x)


def floor(x):
    return _math1("floor", np.floor, x, kind="frnd")


def ceil(x):
    return _math1("ceil", np.ceil, x, kind="frnd")


def abs_(x):
    x = to_tensor(unwrap(x))
    if x.dtype.is_int_unsigned():
        return x
    return C.unary_np(x, np.abs, "abs")


def fdiv(x, y, ieee_rounding=False):
    x, y = to_tensor(unwrap(x)), to_tensor(unwrap(y))
    if not x.dtype.is_floating() or not y.dtype.is_floating():
        fail(CompileError, "both operands of fdiv must have floating scalar type")
    return binary("truediv", x, y)


def div_rn(x, y):
    return fdiv(x, y)


def fma(x, y, z):
    x, y, z = unwrap(x), unwrap(y), unwrap(z)
    st = C.ST
    rec, st.rec = st.rec, None
    try:
        prod = binary("mul", x, y)
        r = binary("add", prod, z)
    finally:
        st.rec = rec
    if not r.dtype.is_floating():
        return binary("add", binary("mul", x, y), z)
    xs = [to_tensor(t) for t in (x, y, z)]
    shape = r.shape
    with np.errstate(all="ignore"):
        v = (vshape(xs[0], shape).astype(np.float64) * vshape(xs[1], shape) + vshape(xs[2], shape))
    v = v.astype(r.dtype.np)
    if r.dtype in (float16, bfloat16):
        v = C.round_to(r.dtype, v)
    out = tensor(v, r.dtype, shape)
    if rec is not None:
        rec.alu(out, tuple(xs), "fma")
    return out


def umulhi(x, y):
    x, y = to_tensor(unwrap(x)), to_tensor(unwrap(y))
    shape = C.broadcast_shapes(x.shape, y.shape)
    a = vshape(x, shape).astype(np.uint64 if not x.dtype.is_int_signed() else np.int64)
    b = vshape(y, shape).astype(a.dtype)
    bits = x.dtype.primitive_bitwidth
    v = ((a.astype(object) * b.astype(object)) >> bits).astype(x.dtype.np) if bits == 64 else \
        ((a * b) >> np.array(bits, a.dtype)).astype(x.dtype.np)
    out = tensor(v, x.dtype, shape)
    st = C.ST
    if st.rec is not None:
        st.rec.alu(out, (x, y), "mul")
    return out


def minimum(x, y, propagate_nan=None):
    return _minmax2(x, y, propagate_nan, False)


def maximum(x, y, propagate_nan=None):
    return _minmax2(x, y, propagate_nan, True)


def _minmax2(x, y, propagate_nan, is_max):
    x, y = unwrap(x), unwrap(y)
    tx = x if isinstance(x, tensor) else to_tensor(x)
    ty = y if isinstance(y, tensor) else to_tensor(y)
    ct = C.computation_type(tx.dtype, C._is_scalar_py(x), ty.dtype, C._is_scalar_py(y), False)
    shape = C.broadcast_shapes(tx.shape, ty.shape)
    a = vshape(tx, shape).astype(ct.np, copy=False)
    b = vshape(ty, shape).astype(ct.np, copy=False)
    pn = str(unwrap(propagate_nan) or "").upper()
    if ct.is_floating():
        if "ALL" in pn:
            f = np.maximum if is_max else np.minimum
        else:
            f = np.fmax if is_max else np.fmin
    else:
        f = np.maximum if is_max else np.minimum
    v = f(a, b)
    out = tensor(v, ct, shape)
    st = C.ST
    if st.rec is not None:
        if ct.is_int() and (tx.ax is not None or ty.ax is not None):
            aa = C.broadcast_ax(tx, shape) or AI.pessimistic(len(shape))
            bb = C.broadcast_ax(ty, shape) or AI.pessimistic(len(shape))
            out.ax = AI.binary("max" if is_max else "min", aa, bb, shape)
        C._prov2(out, tx, ty)
        st.rec.alu(out, (tx, ty), "fmnmx" if ct.is_floating() else "imnmx")
    return out


def clamp(x, min, max, propagate_nan=None):
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


def where(condition, x, y):
    c = to_tensor(unwrap(condition))
    if c.dtype is not int1:
        c = cast(c, int1)
    x, y = unwrap(x), unwrap(y)
    tx = x if isinstance(x, tensor) else to_tensor(x)
    ty = y if isinstance(y, tensor) else to_tensor(y)
    shape = C.broadcast_shapes(C.broadcast_shapes(c.shape, tx.shape), ty.shape)
    if tx.dtype.is_ptr() or ty.dtype.is_ptr():
        if not (tx.dtype.is_ptr() and ty.dtype.is_ptr()) or tx.buf.flat is not ty.buf.flat:
            fail(UnsupportedConstruct, "tl.where between pointers into different arguments is not supported")
        ct = tx.dtype
        a, b = vshape(tx, shape), vshape(ty, shape)
    else:
        ct = C.computation_type(tx.dtype, C._is_scalar_py(x), ty.dtype, C._is_scalar_py(y), False)
        a = vshape(tx, shape).astype(ct.np, copy=False)
        b = vshape(ty, shape).astype(ct.np, copy=False)
    v = np.where(vshape(c, shape), a, b)
    out = tensor(v, ct, shape)
    out.buf = tx.buf
    C.note_numel(shape)
    st = C.ST
    if st.rec is not None:
        if (ct.is_int() or ct.is_ptr()) and tx.ax is not None and ty.ax is not None:
            out.ax = AI.select(C.broadcast_ax(c, shape) if c.ax is not None else None, C.broadcast_ax(tx, shape),
                               C.broadcast_ax(ty, shape), not c.shape)
        C._prov2(out, tx, ty)
        st.rec.alu(out, (c, tx, ty), "sel")
    return out


# ---------------------------------------------------------------------------------------------------------
# compiler hints
# ---------------------------------------------------------------------------------------------------------

def _hint(x, values, what):
    x = to_tensor(unwrap(x))
    values = unwrap(values)
    if isinstance(values, (list, tuple)):
        vals = [int(unwrap(v)) for v in values]
    else:
        vals = [int(values)]
    if len(vals) != (1 if not x.shape else len(x.shape)) and not (len(vals) == 1 and len(x.shape) <= 1):
        fail(CompileError, f"Shape of input to {what} does not match the length of values")
    out = tensor(x.v, x.dtype, x.shape)
    out.buf, out.lay, out.src, out.lsrc, out.dsrc = x.buf, x.lay, x.src, x.lsrc, x.dsrc
    st = C.ST
    if st is not None and st.rec is not None:
        key = {"multiple_of": "div", "max_contiguous": "contig", "max_constancy": "const"}[what]
        out.ax = AI.with_hint(x.ax, max(1, len(x.shape)), **{key: vals if len(vals) > 1 else vals[0]})
        st.rec.view(out, x, "id", None)
    return out


def multiple_of(x, values):
    return _hint(x, values, "multiple_of")


def max_contiguous(x, values):
    return _hint(x, values, "max_contiguous")


def max_constancy(x, values):
    return _hint(x, values, "max_constancy")


def debug_barrier():
    st = C.state()
    if st.rec is not None:
        st.rec.barrier()


# ---------------------------------------------------------------------------------------------------------
# composite ops defined by Triton's standard library
# ---------------------------------------------------------------------------------------------------------

def sigmoid(x):
    return binary("truediv", 1, binary("add", 1, exp(binary("sub", 0, x) if not isinstance(unwrap(x), tensor)
                                                              else -to_tensor(unwrap(x)))))


def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    d = 0 if unwrap(dim) is None else unwrap(dim)
    z = binary("sub", x, reduce_max(x, d, keep_dims=True))
    num = exp(z)
    den = reduce_sum(num, d, keep_dims=True)
    return fdiv(num, den)


def cdiv(x, div):
    return binary("floordiv", binary("sub", binary("add", x, div), 1), div)


def zeros_like(x):
    x = to_tensor(unwrap(x))
    return C.zeros(x.shape, x.dtype)


def ravel(x, can_reorder=False):
    x = to_tensor(unwrap(x))
    return C.reshape(x, [x.numel])


def swizzle2d(i, j, size_i, size_j, size_g):
    ij = binary("add", binary("mul", i, size_j), j)
    size_gj = binary("mul", size_g, size_j)
    group_id = binary("floordiv", ij, size_gj)
    off_i = binary("mul", group_id, size_g)
    size_g = minimum(binary("sub", size_i, off_i), size_g)
    ij = binary("mod", ij, size_gj)
    new_i = binary("add", off_i, binary("mod", ij, size_g))
    new_j = binary("floordiv", ij, size_g)
    return new_i, new_j


def flip(x, dim=None):
    x = to_tensor(unwrap(x))
    d = len(x.shape) - 1 if unwrap(dim) is None else int(unwrap(dim))
    out = tensor(np.flip(x.v, d + 1), x.dtype, x.shape)
    return out


def join(a, b):
    a, b = to_tensor(unwrap(a)), to_tensor(unwrap(b))
    shape = C.broadcast_shapes(a.shape, b.shape)
    va = np.broadcast_to(vshape(a, shape), (max(a.v.shape[0], b.v.shape[0]),) + shape)
    vb = np.broadcast_to(vshape(b, shape), va.shape)
    ct = a.dtype
    out = tensor(np.stack([va, vb.astype(va.dtype)], axis=-1), ct, shape + (2,))
    st = C.ST
    if st.rec is not None:
        st.rec.alu(out, (a, b), "mov")
    return out


def split(a):
    a = to_tensor(unwrap(a))
    if not a.shape or a.shape[-1] != 2:
        fail(CompileError, "tl.split: the last dimension must be 2")
    s = a.shape[:-1]
    return tensor(a.v[..., 0], a.dtype, s), tensor(a.v[..., 1], a.dtype, s)


def interleave(a, b):
    j = join(a, b)
    return C.reshape(j, list(j.shape[:-2]) + [j.shape[-2] * 2])


def cat(a, b, can_reorder=False):
    a, b = to_tensor(unwrap(a)), to_tensor(unwrap(b))
    if a.shape[1:] != b.shape[1:]:
        fail(CompileError, "tl.cat: shapes differ beyond the first dimension")
    P0 = max(a.v.shape[0], b.v.shape[0])
    va = np.broadcast_to(a.v, (P0,) + a.shape)
    vb = np.broadcast_to(b.v, (P0,) + b.shape)
    out = tensor(np.concatenate([va, vb], axis=1), a.dtype, (a.shape[0] + b.shape[0],) + a.shape[1:])
    return out


def gather_op(src, index, axis):
    src, index = to_tensor(unwrap(src)), to_tensor(unwrap(index))
    axis = _norm_axis(src, axis)
    P0 = max(src.v.shape[0], index.v.shape[0])
    sv = np.broadcast_to(src.v, (P0,) + src.shape)
    iv = np.broadcast_to(index.v, (P0,) + index.shape).astype(np.int64)
    out = tensor(np.take_along_axis(sv, iv, axis=axis + 1), src.dtype, index.shape)
    st = C.ST
    if st.rec is not None:
        st.rec.alu(out, (src, index), "shfl")
    return out


def histogram(x, num_bins, mask=None):
    x = to_tensor(unwrap(x))
    nb = int(unwrap(num_bins))
    v = x.v.reshape(x.v.shape[0], -1).astype(np.int64)
    res = np.zeros((v.shape[0], nb), np.int32)
    for p in range(v.shape[0]):
        ok = (v[p] >= 0) & (v[p] < nb)
        res[p] = np.bincount(v[p][ok], minlength=nb)[:nb]
    return tensor(res, int32, (nb,))
