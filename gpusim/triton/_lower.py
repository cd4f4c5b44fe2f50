"""Lowering tile ops to per-warp instruction groups, the way Triton 3.6 lowers them on Hopper (and Ampere).

One program = one CTA of ``num_warps`` warps.  Every tile op becomes ``Op``s of the trace (``gpusim.trace``);
what each unit of work costs is the data in ``costs.py`` (read off Triton 3.6's sm_90 SASS and checked against
the H100's Nsight Compute counts); this module decides how many units an op has:

* Layouts.  A load/store gets Triton's *coalesced* blocked layout (``Coalesce`` pass): order by decreasing
  contiguity of the pointer (ties keep the lower dimension first: a pointer contiguous in no dimension, like the
  B tile of an odd-strided matmul, walks its lanes down dimension 0), ``sizePerThread`` along the fastest dim =
  min(alignment, 16 B / element, elements per thread), threads of a warp filling the fastest dim first, then
  warps (``BlockedEncodingAttr``).  A dot result has the MMA layout; other values inherit their operand's
  layout.  A load whose value is only used by math in another layout (FlashAttention backward's row statistics
  next to an MMA tile) takes that layout, as Triton's layout propagation rematerializes it there.
* Values that have no layout of their own (index arithmetic: ``tl.arange``, offsets, masks, pointers) get the
  layouts of the ops that consume them, as Triton propagates layouts backwards from its anchors: a probe run
  records each site's consumer layouts; a value used in two layouts is computed twice.  Such an op costs one
  instruction per *distinct register value* per thread: along a dimension where the value is affine with a
  compile-time step (``pid * BLOCK + tl.arange``) one register covers all of a thread's elements (the rest
  are immediate offsets); along other dimensions every run of contiguous (or equal) elements needs its own.
* Vector width of a global access = min(sizePerThread, alignment = min(divisibility / element bytes,
  contiguity), mask constancy) from the joined AxisInfo of the pointer (``_axisinfo``).  Each thread issues
  ``elements_per_thread / vec`` instructions of ``vec * element_bytes`` bytes; lane addresses go through the
  coalescer (``coalesce_global``), vectorized across all programs of a chunk.  A masked load first sets its
  destination registers to ``other``.
* ``tl.dot``: Hopper ``wgmma.mma_async`` (MMAv3, m64nNk16 / k8 tf32 / k32 int8) when num_warps % 4 == 0,
  M % 64 == 0 and N % 8 == 0; else ``mma.sync`` m16n8k16 (MMAv2) with ``ldmatrix`` from shared memory (also
  on the a100 / rtx3090 presets); fp32 with ``input_precision="ieee"`` and fp64 use FMA.  Operands loaded from
  global memory are staged through shared memory (Triton's NVMMA 128-byte-swizzled layout; stores into it are
  one instruction per register vector of the load's layout, with the bank conflicts of that layout).
  warpsPerCTA follows ``warpsPerTileV3/V2``; a dot whose result feeds another dot (FlashAttention) puts all
  warps along M.
* Software pipelining (``num_stages``, ``tl.range(num_stages=)``): a load inside a runtime loop whose value
  reaches a dot operand (directly or through elementwise math) and whose vector is >= 4 B becomes ``cp.async``
  (ASYNC_COPY) into a ring of ``num_stages`` shared buffers; the copy for iteration i + num_stages - 1 is
  issued at the start of iteration i (copies for iterations 0 .. num_stages - 2 form the prologue), and an
  ASYNC_WAIT at the load's place waits for its own iteration's copy.
* Reductions: in-thread combines, ``log2(lanes)`` shuffle+combine steps, and across warps Triton's round trip
  through shared memory (partials stored, barrier, read back and shuffled, result stored, barrier, read).
  Register tiles in the MMA layout reach a blocked store through shared memory (STS, barrier, LDS/LDSM).

Shared memory per CTA (bytes) = the largest, over loops (and the code outside loops), of: sum over that loop's
pipelined loads of num_stages x tile bytes (num_stages - 1 for a load that reaches a dot only through other
math) + staged dot operands (a loop-invariant one, like FlashAttention's Q, is staged once) + the largest
reduction / layout-conversion scratch (Triton's allocator reuses memory between sequential loops).  This equals
Triton 3.6's ``metadata.shared`` for every kernel of the suite.  Registers per thread: ``register_estimate``.
Shared-memory accesses are modelled without bank conflicts: Triton's NVMMA 128-byte swizzle makes the staging
stores, ldmatrix reads and conversion scratch conflict-free (the H100's small measured counts grow with the
number of K iterations, not with the address pattern); a reduction's partials are read by their owner warps only.
"""
from __future__ import annotations

import dataclasses
import math
import weakref

import numpy as np

from .. import trace as T
from ..trace import MemAccess, Op, OpKind, OpTable, Pipe, Space
from . import _axisinfo as AI
from . import _core as C
from . import costs as K

WARP = 32


# ---------------------------------------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------------------------------------

def _clamp(x, lo, hi):
    return min(max(x, lo), hi)


class Layout:
    """Distribution of a tile over the threads of a CTA.

    ``ept_dim[d]``, ``lanes[d]``, ``warps[d]``: distinct elements per thread, lanes and warps along dim d (unique
    data only: replicated copies are not counted).  ``spt[d]``: elements a thread holds contiguously along d.
    Blocked layouts also keep Triton's parameters; a slice keeps its parent and the dimension removed.
    """

    __slots__ = ("kind", "shape", "ept_dim", "lanes", "warps", "spt", "tpw", "wpc", "order", "mma", "parent",
                 "_key")

    def __init__(self, kind, shape, ept_dim, lanes, warps, spt=None, tpw=None, wpc=None, order=None, mma=None,
                 parent=None):
        self.kind = kind
        self.shape = tuple(shape)
        self.ept_dim = tuple(ept_dim)
        self.lanes = tuple(lanes)
        self.warps = tuple(warps)
        self.spt, self.tpw, self.wpc, self.order = spt, tpw, wpc, order
        self.mma = mma
        self.parent = parent
        self._key = None

    @property
    def ept(self) -> int:
        n = 1
        for e in self.ept_dim:
            n *= e
        return max(1, n)

    @property
    def key(self):
        if self._key is None:
            pk = None if self.parent is None else (self.parent[0].key, self.parent[1])
            self._key = (self.kind, self.shape, self.ept_dim, self.spt, self.tpw, self.wpc, self.order, self.mma, pk)
        return self._key

    def contig(self, d: int) -> int:
        """Elements a thread holds contiguously along dim ``d``."""
        if self.spt is None or d >= len(self.spt):
            return 1
        return max(1, min(self.spt[d], self.ept_dim[d]))

    def slice(self, axis: int) -> "Layout":
        keep = [d for d in range(len(self.shape)) if d != axis]
        pick = (lambda v: None if v is None else tuple(v[d] for d in keep))
        order = None
        if self.order is not None:
            order = tuple(o - (o > axis) for o in self.order if o != axis)
        tpw = wpc = None
        if self.kind == "blocked":
            tpw, wpc = pick(self.tpw), pick(self.wpc)
        return Layout("slice", [self.shape[d] for d in keep], [self.ept_dim[d] for d in keep],
                      [self.lanes[d] for d in keep], [self.warps[d] for d in keep], spt=pick(self.spt), tpw=tpw,
                      wpc=wpc, order=order, parent=(self, axis))

    def permute(self, dims) -> "Layout":
        """The layout of ``permute(x, dims)`` given this layout of x."""
        pick = (lambda v: None if v is None else tuple(v[d] for d in dims))
        inv = {d: i for i, d in enumerate(dims)}
        order = None if self.order is None else tuple(inv[o] for o in self.order)
        return Layout(self.kind if self.kind == "blocked" else "perm", pick(self.shape), pick(self.ept_dim),
                      pick(self.lanes), pick(self.warps), spt=pick(self.spt), tpw=pick(self.tpw),
                      wpc=pick(self.wpc), order=order, mma=self.mma, parent=(self, tuple(dims)))

    def same_distribution(self, o: "Layout") -> bool:
        return o is self or o.key == self.key

    def __repr__(self):
        if self.kind == "blocked":
            return (f"#blocked<sizePerThread={list(self.spt)}, threadsPerWarp={list(self.tpw)}, "
                    f"warpsPerCTA={list(self.wpc)}, order={list(self.order)}>")
        if self.kind == "mma":
            return f"#mma<v{self.mma[0]}, warpsPerCTA={list(self.mma[1])}, instrShape={list(self.mma[2])}>"
        if self.kind == "slice":
            return f"#slice<dim={self.parent[1]}, parent={self.parent[0]!r}>"
        return f"#{self.kind}<{list(self.shape)}>"


def blocked(shape, spt, order, num_warps) -> Layout:
    """Triton's BlockedEncodingAttr::get: threads fill the fastest dim first, then warps."""
    r = len(shape)
    if r == 0:
        return Layout("blocked", (), (), (), (), (), (), (), ())
    tpw = [1] * r
    wpc = [1] * r
    rem_lanes, rem_threads, rem_warps = WARP, WARP * num_warps, num_warps
    prev_l = prev_w = 1
    for i in order[:-1]:
        tpc = _clamp(rem_threads, 1, max(1, shape[i] // spt[i]))
        tpw[i] = _clamp(tpc, 1, rem_lanes)
        wpc[i] = _clamp(tpc // tpw[i], 1, rem_warps)
        rem_warps //= wpc[i]
        rem_lanes //= tpw[i]
        rem_threads //= tpc
        prev_l *= tpw[i]
        prev_w *= wpc[i]
    last = order[-1]
    tpw[last] = WARP // prev_l
    wpc[last] = num_warps // prev_w
    ept_dim, lanes, warps = [], [], []
    for d in range(r):
        tile = spt[d] * tpw[d] * wpc[d]
        if shape[d] >= tile:
            ept_dim.append(spt[d] * (shape[d] // tile))
        else:
            ept_dim.append(min(spt[d], shape[d]))
        lanes.append(min(tpw[d], max(1, shape[d] // spt[d])))
        warps.append(min(wpc[d], max(1, shape[d] // (spt[d] * tpw[d]))))
    return Layout("blocked", shape, ept_dim, lanes, warps, tuple(spt), tuple(tpw), tuple(wpc), tuple(order))


def default_layout(shape, num_warps) -> Layout:
    r = len(shape)
    return blocked(tuple(shape), (1,) * r, tuple(range(r - 1, -1, -1)), num_warps)


def order_from_contiguity(contig) -> tuple:
    """getOrderFromContiguity: largest contiguity first; ties keep the lower dimension first.

    (Triton 3.6 on tl_matmul_1409: A's pointer, contiguity [1, 64], gets order [1, 0]; B's, contiguity [1, 1],
    gets order [0, 1] -- its lanes walk down K, 32 rows apart: 32 sectors per request.)"""
    return tuple(sorted(range(len(contig)), key=lambda d: -contig[d]))


def mma_layout(shape, version, wpc, instr) -> Layout:
    """The accumulator layout of mma.sync / wgmma: per warp 16-row x 8-column tiles, each thread holding rows
    lane/4 and lane/4 + 8 and the column pair 2*(lane%4), +1 of each tile."""
    M, N = shape[-2], shape[-1]
    w0, w1 = wpc
    rows_w = max(1, M // (16 * w0))
    cols_w = max(1, N // (8 * w1))
    lead = list(shape[:-2])
    return Layout("mma", shape, lead + [2 * rows_w if M >= 16 else M, 2 * cols_w],
                  [1] * len(lead) + [min(8, max(1, M // 2)), 4], [1] * len(lead) + [min(w0, max(1, M // 16)),
                                                                                      min(w1, max(1, N // 8))],
                  spt=tuple([1] * len(lead) + [1, 2]), order=tuple(range(len(shape) - 1, -1, -1)),
                  mma=(version, tuple(wpc), tuple(instr)))


# ---------------------------------------------------------------------------------------------------------
# element maps: which elements each thread holds, in register order
# ---------------------------------------------------------------------------------------------------------

_MAP_CACHE: dict = {}
_COORD_CACHE: dict = {}


def _blocked_coords(lay: Layout):
    """int64 (W, 32, E, r): coordinates of every register element of each thread (register order: the fastest
    dim of ``order`` innermost)."""
    shape, spt, tpw, wpc, order = lay.shape, lay.spt, lay.tpw, lay.wpc, lay.order
    r = len(shape)
    W = int(np.prod(wpc))
    lane = np.arange(WARP)
    warp = np.arange(W)
    lane_d = [None] * r
    warp_d = [None] * r
    ls, ws = lane.copy(), warp.copy()
    for d in order:
        lane_d[d] = ls % tpw[d]
        ls = ls // tpw[d]
        warp_d[d] = ws % wpc[d]
        ws = ws // wpc[d]
    per_dim = []
    for d in range(r):
        tile = spt[d] * tpw[d] * wpc[d]
        reps = max(1, shape[d] // tile)
        regs = np.array([(rep, s) for rep in range(reps) for s in range(spt[d])], np.int64)
        per_dim.append(regs)
    # register index: dims in reverse order of `order` (slowest outermost)
    sizes = [len(per_dim[d]) for d in range(r)]
    dims_outer_first = list(reversed(order))
    grids = np.meshgrid(*[np.arange(sizes[d]) for d in dims_outer_first], indexing="ij")
    E = int(np.prod(sizes))
    out = np.zeros((W, WARP, E, r), np.int64)
    for gi, d in enumerate(dims_outer_first):
        sel = per_dim[d][grids[gi].reshape(-1)]
        rep, s = sel[:, 0], sel[:, 1]
        coord = ((rep[None, None, :] * (tpw[d] * wpc[d]) + warp_d[d][:, None, None] * tpw[d]
                  + lane_d[d][None, :, None]) * spt[d] + s[None, None, :]) % shape[d]
        out[:, :, :, d] = coord
    return out


def _mma_coords(lay: Layout):
    shape = lay.shape
    M, N = shape[-2], shape[-1]
    w0, w1 = lay.mma[1]
    W = w0 * w1
    mt = max(1, M // (16 * w0))
    nt = max(1, N // (8 * w1))
    ncols_w = max(8, N // w1)
    lane = np.arange(WARP)
    r0 = lane // 4
    c0 = 2 * (lane % 4)
    coords = []
    for m in range(mt):
        for n in range(nt):
            for h in (0, 1):
                for c in (0, 1):
                    coords.append((m, n, h, c))
    E = len(coords)
    lead = list(shape[:-2])
    out = np.zeros((W, WARP, E, len(shape)), np.int64)
    for w in range(W):
        wm, wn = w % w0, w // w0
        for e, (m, n, h, c) in enumerate(coords):
            out[w, :, e, -2] = ((m * w0 + wm) * 16 + r0 + 8 * h) % M
            out[w, :, e, -1] = (wn * ncols_w + n * 8 + c0 + c) % N
    if lead:
        # leading (batch) dims: each thread walks them all (rare in the kernels modelled)
        nb = int(np.prod(lead))
        out = np.concatenate([out] * nb, axis=2)
        idx = np.repeat(np.arange(nb), E)
        for k, s in enumerate(reversed(lead)):
            out[:, :, :, len(lead) - 1 - k] = (idx % s)[None, None, :]
            idx = idx // s
    return out


def coords(lay: Layout):
    """int64 (W, 32, E, r) coordinates of each thread's register elements; replicated copies included."""
    key = lay.key
    hit = _COORD_CACHE.get(key)
    if hit is not None:
        return hit
    if lay.kind == "blocked":
        c = _blocked_coords(lay)
    elif lay.kind == "mma":
        c = _mma_coords(lay)
    elif lay.kind == "slice":
        pl, axis = lay.parent
        pc = coords(pl)
        keep = [d for d in range(pc.shape[3]) if d != axis]
        c = pc[:, :, :, keep]
        # drop the elements a thread holds twice (they differed only along the removed dim), keep order
        W, L, E, r = c.shape
        flat = np.zeros((W, L, E), np.int64)
        stride = 1
        for d in range(r - 1, -1, -1):
            flat += c[:, :, :, d] * stride
            stride *= max(1, lay.shape[d])
        keep_pos = [np.sort(np.unique(flat[w, ln], return_index=True)[1]) for w in range(W) for ln in range(L)]
        n = min(len(u) for u in keep_pos)
        c = np.stack([c[w, ln, keep_pos[w * L + ln][:n]] for w in range(W) for ln in range(L)]).reshape(W, L, n, r)
    elif lay.kind == "perm":
        pl, dims = lay.parent
        c = coords(pl)[:, :, :, list(dims)]
    else:
        c = _blocked_coords(default_layout(lay.shape, 1))
    _COORD_CACHE[key] = c
    return c


def elem_map(lay: Layout, vec: int):
    """Flat (row-major) element index of the first element of each vector: int64 (W, n_inst, 32), and the bool
    mask of slots holding replicated data (kept only once for stores)."""
    key = (lay.key, vec)
    hit = _MAP_CACHE.get(key)
    if hit is not None:
        return hit
    shape = lay.shape
    r = len(shape)
    if r == 0:
        W = 1
        idx = np.zeros((W, 1, WARP), np.int64)
        dup = np.ones((W, 1, WARP), bool)
        dup[0, 0, 0] = False
        _MAP_CACHE[key] = (idx, dup)
        return idx, dup
    c = coords(lay)                                   # (W, 32, E, r)
    W, L, E, _ = c.shape
    flat = np.zeros((W, L, E), np.int64)
    stride = 1
    for d in range(r - 1, -1, -1):
        flat += c[:, :, :, d] * stride
        stride *= shape[d]
    vec = max(1, min(vec, E))
    starts = flat[:, :, ::vec]                        # (W, 32, n)
    idx = np.ascontiguousarray(starts.transpose(0, 2, 1))
    fl = idx.reshape(-1)
    _, first = np.unique(fl, return_index=True)
    dup = np.ones(fl.shape, bool)
    dup[first] = False
    out = (idx, dup.reshape(idx.shape))
    _MAP_CACHE[key] = out
    return out


# ---------------------------------------------------------------------------------------------------------
# distinct register values: what index arithmetic costs
# ---------------------------------------------------------------------------------------------------------

def distinct_values(shape, lay: Layout, aff, ax, predicate: bool = False) -> int:
    """Registers (or predicates) a thread needs for an integer tile of ``shape`` held in layout ``lay``.

    Along a dimension where the value is affine with a compile-time step (``aff``), one register serves all of
    the thread's elements (the others are immediate offsets of it); elsewhere each run of elements the thread
    holds contiguously and that AxisInfo proves contiguous (or constant) shares one register.  A predicate is
    shared along a run of constancy only."""
    n = 1
    r = len(shape)
    for d in range(r):
        s = shape[d]
        if s <= 1 or d >= len(lay.ept_dim):
            continue
        e = min(lay.ept_dim[d], s)
        if e <= 1:
            continue
        if predicate:
            run = ax.const[d] if ax is not None and d < len(ax.const) else 1
            if run >= s:
                continue
        else:
            if aff is not None and d < len(aff) and aff[d]:
                continue
            run = max(ax.contig[d], ax.const[d]) if ax is not None and d < len(ax.contig) else 1
            if run >= s and ax is not None and ax.const[d] >= s:
                continue
        run = max(1, min(run, lay.contig(d), e))
        n *= -(-e // run)
    return n


def _const_along(t, d) -> bool:
    if not isinstance(t, C.tensor) or not t.shape:
        return True
    if d >= len(t.shape) or t.shape[d] == 1:
        return True
    ax = t.ax
    return ax is not None and d < len(ax.const) and ax.const[d] >= t.shape[d]


def _aff_along(t, d) -> bool:
    if not isinstance(t, C.tensor) or not t.shape or d >= len(t.shape) or t.shape[d] == 1:
        return True
    if t.aff is not None and d < len(t.aff):
        return t.aff[d]
    return _const_along(t, d)


def _compile_time(t) -> bool:
    """A value known when compiling (a constexpr / literal, or a splat of one)."""
    if not isinstance(t, C.tensor):
        return True
    return t.ax is not None and t.ax.value is not None


def affine(kind, out, ins) -> tuple | None:
    """Per dimension of ``out``: is the (integer or pointer) value affine with a compile-time step there?"""
    r = len(out.shape)
    if r == 0:
        return None
    if kind == "arange":
        return (True,)
    if kind == "full":
        return (True,) * r
    xs = [x for x in ins if isinstance(x, C.tensor)]
    if any(x.shape and len(x.shape) != r for x in xs):
        return (False,) * r
    res = []
    for d in range(r):
        if kind in ("add", "sub", "addptr", "icvt", "cvt"):
            res.append(all(_aff_along(x, d) for x in xs))
        elif kind == "mul" and len(xs) == 2:
            a, b = xs
            if _compile_time(a):
                res.append(_aff_along(b, d))
            elif _compile_time(b):
                res.append(_aff_along(a, d))
            else:
                res.append(_const_along(a, d) and _const_along(b, d))
        elif kind == "shl" and len(xs) == 2 and _compile_time(xs[1]):
            res.append(_aff_along(xs[0], d))
        else:
            res.append(all(_const_along(x, d) for x in xs))
    return tuple(res)


# ---------------------------------------------------------------------------------------------------------
# memory accesses of a chunk of programs
# ---------------------------------------------------------------------------------------------------------

def _empty_access(n_warps, bpl, space=Space.GLOBAL) -> MemAccess:
    return MemAccess(space=space, bytes_per_lane=bpl, bytes_requested=0, ptr=np.zeros(n_warps + 1, np.int64),
                     line=np.zeros(0, np.int64), smask=np.zeros(0, np.uint8))


def coalesce_programs(addr: np.ndarray, bpl: int, P: int) -> MemAccess:
    """Coalesce lane addresses (Pa, W, n, 32) of Pa programs (Pa == 1: the same for all P programs).

    Programs whose accesses are a translation of one another by a multiple of 128 B share one coalescing
    result (the common case: all programs use the same layout on different tiles).
    """
    Pa, W = addr.shape[0], addr.shape[1]
    if Pa == 1:
        one = T.coalesce_global(addr[0], bpl)
        if P == 1:
            return one
        L = one.line.shape[0]
        cnt = np.diff(one.ptr)
        ptr = np.zeros(P * W + 1, np.int64)
        np.cumsum(np.tile(cnt, P), out=ptr[1:])
        return MemAccess(space=Space.GLOBAL, bytes_per_lane=bpl, bytes_requested=one.bytes_requested * P, ptr=ptr,
                         line=np.tile(one.line, P), smask=np.tile(one.smask, P))
    A = addr.reshape(Pa, -1)
    V = A >= 0
    big = np.iinfo(np.int64).max
    mn = np.where(V, A, big).min(axis=1)
    empty = mn == big
    R = np.where(V, A - np.where(empty, 0, mn)[:, None], -1)
    groups = []          # (rep, members array, shifts)
    remaining = np.nonzero(~empty)[0]
    tries = 0
    while remaining.size and tries < 8:
        r = remaining[0]
        same = (R[remaining] == R[r]).all(axis=1) & ((mn[remaining] - mn[r]) % 128 == 0)
        members = remaining[same]
        if members.size == 1 and tries >= 2:
            break
        groups.append((r, members))
        remaining = remaining[~same]
        tries += 1
    cnt = np.zeros((Pa, W), np.int64)
    pieces = []          # (program indices, per-program line arrays generator info)
    for r, members in groups:
        one = T.coalesce_global(addr[r], bpl)
        c = np.diff(one.ptr)
        cnt[members] = c
        shift = (mn[members] - mn[r]) // 128
        pieces.append(("g", members, one, shift))
    if remaining.size:
        rest = T.coalesce_global(addr[remaining].reshape(remaining.size * W, addr.shape[2], addr.shape[3]), bpl)
        c = np.diff(rest.ptr).reshape(remaining.size, W)
        cnt[remaining] = c
        pieces.append(("r", remaining, rest, None))
    ptr = np.zeros(Pa * W + 1, np.int64)
    np.cumsum(cnt.reshape(-1), out=ptr[1:])
    total = int(ptr[-1])
    line = np.empty(total, np.int64)
    smask = np.empty(total, np.uint8)
    prog_start = ptr[np.arange(Pa) * W]
    req = 0
    for kind, members, acc, shift in pieces:
        if kind == "g":
            L = acc.line.shape[0]
            if L:
                pos = prog_start[members][:, None] + np.arange(L)[None, :]
                line[pos] = acc.line[None, :] + shift[:, None]
                smask[pos] = acc.smask[None, :]
            req += acc.bytes_requested * members.size
        else:
            lens = cnt[members].sum(axis=1)
            src_start = np.concatenate(([0], np.cumsum(lens)[:-1]))
            for k, p in enumerate(members):
                n = int(lens[k])
                if n:
                    s = int(prog_start[p])
                    line[s:s + n] = acc.line[src_start[k]:src_start[k] + n]
                    smask[s:s + n] = acc.smask[src_start[k]:src_start[k] + n]
            req += acc.bytes_requested
    return MemAccess(space=Space.GLOBAL, bytes_per_lane=bpl, bytes_requested=req, ptr=ptr, line=line, smask=smask)


def shared_ideal(n_warps: int, n_inst: int, bpl: int, active_warps: int | None = None) -> MemAccess:
    """Shared-memory access without bank conflicts: ceil(32*bpl/128) wavefronts per instruction."""
    per = max(1, (WARP * bpl + 127) // 128)
    wf = np.full(n_warps, n_inst * per, np.int32)
    aw = n_warps if active_warps is None else active_warps
    return MemAccess(space=Space.SHARED, bytes_per_lane=bpl, bytes_requested=aw * n_inst * WARP * bpl,
                     wavefronts=wf, shared_ideal_wavefronts=wf.copy())


# ---------------------------------------------------------------------------------------------------------
# recorded ops
# ---------------------------------------------------------------------------------------------------------

class RecOp:
    __slots__ = ("kind", "pipe", "n_inst", "line", "deps", "mem", "flops", "mma_dtype", "label", "active", "loop",
                 "it")

    def __init__(self, kind, pipe, n_inst, line, deps, mem=None, flops=0, mma_dtype="", label="", active=None):
        self.kind, self.pipe, self.n_inst, self.line = kind, pipe, n_inst, line
        self.deps = deps
        self.mem, self.flops, self.mma_dtype, self.label, self.active = mem, flops, mma_dtype, label, active
        self.loop = None
        self.it = -1


class _Loop:
    __slots__ = ("start", "iters", "stages", "kind", "has_copies", "depth", "key", "wait_it")

    def __init__(self, start, stages, kind, depth, key=None):
        self.start, self.iters, self.stages, self.kind = start, [], stages, kind
        self.key = key
        self.has_copies = False
        self.depth = depth
        self.wait_it = -1


class Facts:
    """What a site (one static op) looks like over all its executions; shared by the probe and every chunk."""

    def __init__(self):
        self.sites: dict = {}

    def get(self, key) -> dict:
        d = self.sites.get(key)
        if d is None:
            d = {}
            self.sites[key] = d
        return d

    _USES = ("lays", "consumer_lays", "users", "folded_users", "contracted_users", "free", "half_fold", "contract",
             "ptr_site", "advance", "trig", "trig_shared")

    def reset_uses(self):
        """Between the two probe passes: forget the use-dependent facts recorded with provisional decisions."""
        for d in self.sites.values():
            for k in self._USES:
                d.pop(k, None)

    def freeze(self):
        """After the probe: the facts seen there decide every chunk's lowering (so chunks agree)."""
        for d in self.sites.values():
            d["from_probe"] = True


class Region:
    """Resources live while one loop runs (or outside every loop): Triton's allocator reuses shared memory and
    registers between sequential loops, so a kernel needs the maximum over regions, not the sum."""

    def __init__(self):
        self.pipe: dict = {}        # pipelined load site -> num_stages x tile bytes
        self.staging: dict = {}     # staged dot operand -> bytes
        self.scratch = 0            # largest reduction / layout-conversion scratch (bytes)
        self.acc: dict = {}         # dot site -> fp32 accumulator registers per thread
        self.frag: dict = {}        # dot site -> operand fragment registers per thread
        self.loads: dict = {}       # non-pipelined load site -> registers per thread
        self.addr: dict = {}        # pointer site -> 64-bit address registers per thread kept live in the loop
        self.res: dict = {}         # dot site (no accumulator input) -> fp32 result registers per thread
        self.ew = 0                 # largest elementwise float tile, registers per thread

    def smem(self) -> int:
        return int(sum(self.pipe.values()) + sum(self.staging.values()) + self.scratch)

    def features(self) -> dict:
        return {"dot_accumulators": int(sum(self.acc.values())), "dot_results": int(sum(self.res.values())),
                "dot_operand_fragments": int(sum(self.frag.values())), "loaded_tiles": int(sum(self.loads.values())),
                "addresses": int(sum(self.addr.values())), "elementwise": int(self.ew)}

    def regs(self) -> int:
        return int(sum(K.REG_WEIGHTS[k] * v for k, v in self.features().items()))


class Stats:
    """Per-launch results shared by all chunks: shared memory, register basis, decisions for ``meta``."""

    def __init__(self):
        self.regions: dict = {}           # innermost runtime loop (site key) or None -> Region
        self.mem_sites: dict = {}         # "file:line" -> vector decision
        self.dots: dict = {}
        self.flops = 0.0
        self.math_fns: set = set()        # libdevice transcendental functions used (sin, cos, log, ...)

    def region(self, key) -> Region:
        r = self.regions.get(key)
        if r is None:
            r = self.regions[key] = Region()
        return r


_FP16ISH = ("fp16", "bf16")
_FLOP_KINDS = {"add": 1, "sub": 1, "mul": 1, "truediv": 1, "fma": 2, "exp": 1, "exp2": 1, "log": 1, "log2": 1,
               "sqrt": 1, "sqrt_rn": 1, "rsqrt": 1, "sin": 1, "cos": 1}
_VIEW_KINDS = ("expand", "bcast", "reshape", "perm", "id")


def _is_zero(other) -> bool:
    """Is a load's ``other`` zero (or absent)?  Zero-filled destinations are set with CS2R."""
    other = C.unwrap(other)
    if other is None:
        return True
    if isinstance(other, C.tensor):
        v = other.v
        return v.size > 0 and bool(np.all(v == 0))
    try:
        return float(other) == 0.0
    except (TypeError, ValueError):
        return False


def _ept_in(shape, lay: Layout) -> int:
    """Elements per thread of a tile of ``shape`` held in ``lay`` (size-1 dims of a broadcast hold one)."""
    n = 1
    for d, s in enumerate(shape):
        if s > 1 and d < len(lay.ept_dim):
            n *= min(lay.ept_dim[d], s)
    return max(1, n)


class Recorder:
    """Lowers the tile ops of one chunk of programs into the op list of one OpTable."""

    def __init__(self, gpu, num_warps: int, num_stages: int, P: int, facts: Facts, stats: Stats, probe=False,
                 n_ptr_args: int = 0, n_scalar_args: int = 0):
        self.gpu = gpu
        self.W = num_warps
        self.S = num_stages
        self.P = P
        self.facts = facts
        self.stats = stats
        self.probe = probe
        self.ops: list[RecOp] = []
        self.loops: list[_Loop] = []
        self.hopper = gpu.tensor.mma_kind == "wgmma"
        self._staged: dict = {}
        self._div_setup: set = set()
        self._advanced: set = set()
        self._reduce_setup = False
        self._access_cache: dict = {}        # (site, store) -> what _global_access needs to reuse its last requests
        self._const_done: set = set()
        self._const_keep: list = []
        # the program's fixed code: stack pointer, thread index, descriptors, its arguments, EXIT
        self._cost(K.PROGRAM, 1, (), line=0)
        if n_ptr_args:
            self._cost(K.POINTER_ARG, n_ptr_args, (), line=0)
        if n_scalar_args:
            self._cost(K.SCALAR_ARG, n_scalar_args, (), line=0)

    def _region(self) -> Region:
        return self.stats.region(self.loops[-1].key if self.loops else None)

    # ---- helpers -----------------------------------------------------------------------------------
    def ept(self, t) -> int:
        lay = t.lay
        if lay is not None and lay.shape == t.shape:
            return lay.ept
        n = t.numel
        return max(1, -(-n // (WARP * self.W)))

    def _emit(self, kind, pipe, n, deps=(), mem=None, flops=0, mma_dtype="", label="", line=None) -> RecOp:
        if line is None:
            line = C.user_line()[1]
        d = [x for x in deps if x is not None]
        if kind in (OpKind.ALU, OpKind.ASYNC_WAIT):
            n = max(0, int(n))
        else:
            n = int(max(1, n))
        op = RecOp(kind, pipe, n, line, d, mem, flops, mma_dtype, label, C.ST.active() if C.ST is not None else None)
        self.ops.append(op)
        return op

    def _alu(self, pipe, n, deps, label, line=None):
        if n <= 0:
            return None
        return self._emit(OpKind.ALU, pipe, n, deps, label=label, line=line)

    def _cost(self, table, units, deps, line=None, tag_loop=None) -> RecOp | None:
        """Emit the instructions of a cost-table entry for ``units`` units: one op per pipe, chained."""
        last = None
        deps = [x for x in deps if x is not None]
        for pipe, n, lab in table:
            k = math.ceil(n * units - 1e-9)
            if k <= 0:
                continue
            op = self._emit(OpKind.ALU, pipe, k, deps if last is None else [last], label=lab, line=line)
            if tag_loop is not None:
                op.loop, op.it = tag_loop, len(tag_loop.iters) - 1
            last = op
        return last if last is not None else self._pass(deps, line)

    def _pass(self, deps, line=None):
        """The source of a value that costs no instruction (a folded conversion, a contracted multiply): ready
        when its inputs are -- the one input itself, or a zero-instruction join of several."""
        live = [x for x in deps if x is not None]
        if len(live) <= 1:
            return live[0] if live else None
        return self._emit(OpKind.ALU, Pipe.FP32, 0, live, label="(folded)", line=line)

    def _n_warps(self):
        return self.P * self.W

    def _active_warps(self):
        a = C.ST.active()
        return self._n_warps() if a is None else int(a.sum()) * self.W

    # ---- layouts of values that have none: their consumers' (recorded by the probe) ---------------------
    def _lays(self, out, site) -> list:
        lay = out.lay
        if lay is not None and lay.shape == out.shape:
            return [lay]
        if site is not None:
            f = self.facts.sites.get(site)
            if f is not None and f.get("lays"):
                return list(f["lays"].values())
        return [default_layout(out.shape, self.W)]

    def view(self, out, x, kind, extra):
        """expand_dims / broadcast_to / reshape / permute / hints: no instructions; layouts pass through."""
        if x.aff is not None and x.shape:
            if kind == "expand":
                a = list(x.aff)
                a.insert(extra, True)
                out.aff = tuple(a)
            elif kind == "bcast" and len(out.shape) == len(x.shape):
                out.aff = tuple(True if x.shape[d] == 1 else x.aff[d] for d in range(len(x.shape)))
            elif kind == "perm":
                out.aff = tuple(x.aff[d] for d in extra)
            elif kind == "id":
                out.aff = x.aff
        elif not x.shape and out.shape:
            out.aff = (True,) * len(out.shape)
        if kind == "perm" and x.lay is not None and x.lay.shape == x.shape:
            out.lay = x.lay.permute(extra)
        if self.probe:
            out.bk = (kind, None, (x,), extra)

    def _anchor_input(self, x, lay: Layout, shape):
        """Probe: ``x`` is used by an op whose layout is ``lay`` (for its ``shape``)."""
        if not isinstance(x, C.tensor) or not x.shape or len(x.shape) != len(shape):
            return
        self._anchor(x, lay)

    def _anchor(self, x, lay: Layout):
        stack = [(x, lay)]
        seen = 0
        while stack and seen < 10000:
            seen += 1
            t, L = stack.pop()
            if t.lay is not None and t.lay.shape == t.shape:
                # t has a layout of its own; a load used in another layout may be rematerialized there
                if t.lsrc is not None and not t.lay.same_distribution(L) and t.lay.kind == "blocked" and \
                        L.kind != "blocked":
                    self.facts.get(t.lsrc).setdefault("consumer_lays", {})[L.key] = L
                continue
            bk = t.bk
            if bk is None:
                continue
            kind, site, ins, extra = bk
            if site is not None:
                lays = self.facts.get(site).setdefault("lays", {})
                if L.key in lays:
                    continue
                lays[L.key] = L
            for y in ins:
                if not isinstance(y, C.tensor) or not y.shape:
                    continue
                if kind == "expand":
                    if len(y.shape) + 1 != len(t.shape):
                        continue
                    Ly = L.slice(extra)
                elif kind == "perm":
                    inv = [0] * len(extra)
                    for i, dd in enumerate(extra):
                        inv[dd] = i
                    Ly = L.permute(tuple(inv))
                elif kind == "reshape":
                    continue
                else:
                    if len(y.shape) != len(t.shape):
                        continue
                    Ly = L
                stack.append((y, Ly))

    def _mark_feeds_dot(self, xs):
        """Probe: the loads whose values reach a dot operand (through elementwise math) are pipelined."""
        stack = [x for x in xs if isinstance(x, C.tensor)]
        seen = set()
        while stack:
            t = stack.pop()
            if id(t) in seen or len(seen) > 10000:
                continue
            seen.add(id(t))
            if t.lsrc is not None:
                fl = self.facts.get(t.lsrc)
                fl["feeds_dot"] = True
                if fl.get("loop") is not None and fl.get("pipelinable"):
                    self.facts.get(fl["loop"])["pipelined"] = True
            bk = t.bk
            if bk is not None:
                stack.extend(y for y in bk[2] if isinstance(y, C.tensor) and not y.dtype.is_ptr())

    # ---- loops -------------------------------------------------------------------------------------
    def loop_begin(self, num_stages, kind="for"):
        st = num_stages if num_stages is not None else self.S
        self.loops.append(_Loop(len(self.ops), int(st), kind, len(self.loops), C.user_site()[2]))

    def loop_iter(self):
        if self.loops:
            lp = self.loops[-1]
            lp.iters.append(len(self.ops))
            line = C.user_line()[1]
            self._cost(K.LOOP_ITER, 1, (), line=line)
            if self.facts.sites.get(lp.key, {}).get("pipelined"):
                # the ring's barrier before this iteration's copies overwrite a slot, and its bookkeeping
                self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, (), label="BAR.SYNC", line=line)
                self._cost(K.PIPE_ITER, 1, (), line=line)

    def loop_end(self):
        lp = self.loops.pop()
        if lp.has_copies and lp.stages >= 2:
            self._reorder(lp)

    def _reorder(self, lp: _Loop):
        seg = self.ops[lp.start:]
        starts = [s - lp.start for s in lp.iters]
        if not starts:
            return
        n = len(starts)
        bounds = starts + [len(seg)]
        pre = seg[:starts[0]]
        copies, rest = [], []
        for i in range(n):
            part = seg[bounds[i]:bounds[i + 1]]
            copies.append([o for o in part if o.loop is lp])
            rest.append([o for o in part if o.loop is not lp])
        D = lp.stages - 1
        # the software pipeline issues D more copy groups than there are iterations: the prologue's and the
        # last iterations' copies for iterations past the end run predicated off (LDGSTS with a false guard,
        # their masks and addresses still computed): tl_matmul_1408_128x128x64 runs 16 LDGSTS outside its
        # loop and 8 in each of its 22 iterations; attn_naive's one-iteration bmm_kernel runs 24
        template = copies[n - 1]
        phantoms = [[p for o in template for p in self._phantom(o)] for _ in range(D)]
        new = list(pre)
        for i in range(min(D, n)):
            new.extend(copies[i])
        for i in range(n):
            if i + D < n:
                new.extend(copies[i + D])
            else:
                new.extend(phantoms.pop())
            new.extend(rest[i])
        for ph in phantoms:
            new[len(pre):len(pre)] = ph
        self.ops[lp.start:] = new

    @staticmethod
    def _phantom(o: RecOp) -> list:
        """A copy (or its bookkeeping) for an iteration past the loop's end: issued predicated off, its pointers
        still advanced."""
        out = [RecOp(OpKind.ALU, o.pipe, o.n_inst, o.line, [], None, 0, "",
                     o.label + " (off)" if o.kind == OpKind.ASYNC_COPY else o.label, o.active)]
        if o.kind == OpKind.ASYNC_COPY and o.flops < 0:
            for pipe, n, lab in K.ADDR_ADVANCE:
                out.append(RecOp(OpKind.ALU, pipe, int(math.ceil(n * -o.flops)), o.line, [], None, 0, "", lab,
                                 o.active))
        return out

    def in_runtime_loop(self):
        return self.loops[-1] if self.loops else None

    # ---- elementwise -------------------------------------------------------------------------------
    def _layout_from(self, out, ins):
        best = None
        for x in ins:
            lay = getattr(x, "lay", None)
            if lay is None or lay.shape != out.shape:
                continue
            if lay.kind == "mma":
                return lay
            if best is None:
                best = lay
        return best

    def alu(self, out, ins, kind, src_dtype=None):
        ins = [x for x in ins if isinstance(x, C.tensor)]
        if out.lay is None:
            out.lay = self._layout_from(out, ins)
        dt = out.dtype
        shape = out.shape
        site = line = None
        if shape:
            _, line, site = C.user_site()
        if dt.is_int() or dt.is_ptr():
            out.aff = affine(kind, out, ins)
        if self.probe and shape:
            out.bk = (kind, site, tuple(ins), None)
            if out.lay is not None and out.lay.shape == shape:
                for x in ins:
                    self._anchor_input(x, out.lay, shape)
            self._note_half_fold(out, ins, kind, site)
            self._note_contraction(out, ins, kind, site)
        if kind == "full" and shape:
            out.bk = ("full", site, (), None)
            return
        if kind in ("full", "bitcast", "trans", "mov"):
            return
        if shape:
            self._materialize_constants(ins, line)
        if dt.is_floating() and kind in _FLOP_KINDS:
            self.stats.flops += _FLOP_KINDS[kind] * out.numel * (self._active_warps() // self.W)
        deps = [x.src for x in ins]
        op = self._elementwise(out, ins, kind, src_dtype, deps, site, line)
        if op is not None:
            out.src = op

    def _materialize_constants(self, ins, line):
        """A constant tile (tl.zeros / tl.full) that a tile op reads is set up in registers once: CS2R per 64
        bits, twice around a software pipeline (fa_fwd's accumulator, rescaled in the loop before its first
        dot: 66 CS2R per thread for 64 registers)."""
        for x in ins:
            if x.src is None and x.bk is not None and x.bk[0] == "full" and x.shape and id(x) not in self._const_done:
                self._const_done.add(id(x))
                self._const_keep.append(x)
                lay = x.lay if x.lay is not None and x.lay.shape == x.shape else None
                lays = [lay] if lay is not None else self._lays(x, x.bk[1])
                n = sum(_ept_in(x.shape, L) for L in lays) * max(1, x.dtype.itemsize // 4)
                lp = self.in_runtime_loop()
                twice = lp is not None and self.facts.sites.get(lp.key, {}).get("pipelined")
                x.src = self._cost(K.MATERIALIZE, n * (2 if twice else 1), (), line)

    def _addptr(self, out, ins, deps, site, line, units, lays):
        """Pointer arithmetic.  A pointer built from a scalar base and 32-bit offsets stays an offset until a
        memory op uses it (LLVM reassociates ``(p + a) + b`` into ``p + (a + b)``): the memory op pays one
        IMAD.WIDE per distinct address; adding an offset that is affine in every dimension is free (immediate
        offsets / the IMAD addend), other offsets are one 32-bit add per distinct value.  A pointer tensor
        advanced in a loop (``ptrs += step``) is a 64-bit IADD3 + IMAD.X per distinct address, plus its
        materialization (IMAD.WIDE) once before the loop."""
        p = ins[0] if ins and ins[0].dtype.is_ptr() else None
        o = ins[1] if len(ins) > 1 else None
        if self.probe and p is not None and p.bk is not None and p.bk[0] == "addptr" and p.bk[1] == site:
            self.facts.get(site)["advance"] = True
        if not out.shape:
            return None
        f = self.facts.sites.get(site) or {}
        if f.get("advance"):
            self._region().addr[site] = (K.REG_NARROW_ADDRESS if f.get("narrow") else 2) * units
            first = None
            if site not in self._advanced:
                self._advanced.add(site)
                first = self._cost(K.ADDR_FROM_BASE, units, deps, line)
            return self._cost(K.ADDR_ADVANCE, units, deps + [first], line)
        if p is None or not p.shape:
            return None
        if o is None or not o.shape or (o.aff is not None and all(o.aff)):
            return None
        return self._cost(K.INT_OP["add"], units, deps, line)

    def _address_cost(self, ptr, lay, shape, site, deps, line):
        """The 64-bit addresses of a memory op whose pointer is still a base + offsets (see ``_addptr``)."""
        f = self.facts.get(site)
        if self.probe:
            if ptr.bk is not None and ptr.bk[0] == "addptr":
                f["ptr_site"] = ptr.bk[1]
            elif ptr.bk is not None and ptr.bk[0] in _VIEW_KINDS and ptr.bk[2] and ptr.bk[2][0].bk is not None \
                    and ptr.bk[2][0].bk[0] == "addptr":
                f["ptr_site"] = ptr.bk[2][0].bk[1]
        ps = f.get("ptr_site")
        if ps is not None and (self.facts.sites.get(ps) or {}).get("advance"):
            return None
        if not shape:
            return None
        # along the fastest dimension an affine pointer is one register plus immediate offsets; along the
        # others LLVM sign-extends each row's 32-bit offset on its own: one address (and its row index
        # arithmetic) per row the thread holds (fa_bwd dq: 4 IMAD.WIDE + LOP3/IADD3/LEA for the 4 rows of Q)
        aff = ptr.aff
        if aff is not None and len(shape) > 1 and lay.order:
            aff = tuple(a if d == lay.order[0] else False for d, a in enumerate(aff))
        n = distinct_values(shape, lay, aff, ptr.ax)
        base = distinct_values(shape, lay, ptr.aff, ptr.ax)
        first = self._cost(K.ADDR_FROM_BASE, n, deps, line)
        if n > base and self.in_runtime_loop() is None:
            # (inside a loop the row offsets are loop-invariant and hoisted; only the IMAD.WIDE remains)
            first = self._cost(K.ADDR_ROW, n - base, [first], line)
        return first

    def _note_contraction(self, out, ins, kind, site):
        """Probe: fp32 ``a * b + c`` contracts into one FFMA (Triton compiles with fp fusion on): the add
        becomes the FFMA and the multiply disappears when the add was its only user (fa_bwd dq's
        ``qk * scale - m``: 32 FFMA, no FMUL)."""
        if kind not in ("add", "sub") or not out.dtype.is_floating() or out.dtype.name in _FP16ISH:
            return
        for y in ins:
            if y.bk is not None and y.bk[0] == "mul" and y.bk[1] is not None and y.dtype == out.dtype:
                self.facts.get(y.bk[1]).setdefault("contracted_users", set()).add(site)
                break

    def _note_half_fold(self, out, ins, kind, site):
        """Probe: LLVM folds fptrunc(fadd/fsub/fmul(fpext a, fpext b)) into the fp16 operation itself (exact for
        fp16 through fp32), so ``(x.to(fp32) * x.to(fp32)).to(fp16)`` is one HMUL2 per pair and no conversions
        (tl_sincos_unfused square_kernel: 23 instructions per warp, HMUL2/HFMA2.MMA only)."""
        for x in ins:
            if x.bk is not None and x.bk[1] is not None:
                self.facts.get(x.bk[1]).setdefault("users", set()).add(site)
        if kind != "cvt" or out.dtype.name not in _FP16ISH or len(ins) != 1 or ins[0].dtype.name != "fp32":
            return
        v = ins[0]
        if v.bk is None or v.bk[0] not in ("add", "sub", "mul") or v.bk[1] is None:
            return
        cvts = [y for y in v.bk[2] if y.shape]
        if not cvts or len(cvts) != len(v.bk[2]):
            return
        for y in cvts:
            if y.bk is None or y.bk[0] != "cvt" or y.bk[1] is None or not y.bk[2] or \
                    y.bk[2][0].dtype.name not in _FP16ISH:
                return
        self.facts.get(v.bk[1])["half_fold"] = True
        self.facts.get(site)["free"] = True
        for y in cvts:
            self.facts.get(y.bk[1]).setdefault("folded_users", set()).add(v.bk[1])

    def _folded(self, site, kind) -> str | None:
        """Chunk runs: 'free' for a conversion the fp16 fold removed, 'half' for the folded op itself."""
        f = self.facts.sites.get(site) if site is not None else None
        if not f:
            return None
        if f.get("free"):
            return "free"
        if f.get("half_fold"):
            return "half"
        users, folded = f.get("users"), f.get("folded_users")
        if kind == "cvt" and users and folded and users <= folded:
            return "free"
        contracted = f.get("contracted_users")
        if kind == "mul" and users and contracted and users <= contracted:
            return "free"
        return None

    def _elementwise(self, out, ins, kind, src_dtype, deps, site, line):
        dt = out.dtype
        shape = out.shape
        fold = self._folded(site, kind) if shape else None
        if fold == "free":
            return self._pass(deps, line)
        if fold == "half":
            units = sum(_ept_in(shape, L) for L in self._lays(out, site))
            return self._cost(K.HALF_OP, units, deps, line)
        lays = self._lays(out, site) if shape else None
        if kind == "s2r":
            return self._cost(K.PROGRAM_ID, 1, deps, line)
        if kind == "arange":
            return self._cost(K.ARANGE, len(lays), deps, line)
        if kind == "shfl":
            return self._cost([(Pipe.LSU, 1, "SHFL.IDX")], sum(_ept_in(shape, L) for L in lays) if shape else 1,
                              deps, line)
        src_float = any(x.dtype.is_floating() for x in ins)
        if (dt.is_int() or dt.is_ptr()) and not (kind in ("fcmp", "cvt") and src_float):
            pred = dt.is_bool()
            if shape:
                units = sum(distinct_values(shape, L, out.aff, out.ax, pred) for L in lays)
            else:
                units = 1
            if kind == "addptr":
                return self._addptr(out, ins, deps, site, line, units, lays)
            if kind in ("floordiv", "mod"):
                b = ins[1] if len(ins) > 1 else None
                if b is None or _compile_time(b):
                    return self._cost(K.INT_DIV_CONST, units, deps, line)
                key = (site, id(b))
                if key not in self._div_setup:
                    self._div_setup.add(key)
                    self._cost(K.INT_DIV_SETUP, 1, [b.src], line)
                return self._cost(K.INT_DIV, units, deps, line)
            table = K.INT_OP.get(kind)
            if kind == "mul" and any(_compile_time(x) and x.ax.value > 0 and not x.ax.value & (x.ax.value - 1)
                                     for x in ins if isinstance(x, C.tensor) and x.ax is not None):
                table = K.INT_OP["shl"]          # times a power of two: a shift (LEA with the add)
            if table is None:
                table = K.INT_OP["lop"] if pred else K.INT_OP["add"]
            wide = 2 if (dt.primitive_bitwidth == 64 and not dt.is_ptr() and kind in ("add", "sub", "mul")) else 1
            return self._cost(table, units * wide, deps, line)
        # floating-point (and float compares / float -> int conversions): every element
        units = sum(_ept_in(shape, L) for L in lays) if shape else 1
        if shape and dt.is_floating():
            r = self._region()
            r.ew = max(r.ew, units * max(1, dt.itemsize // 4))
        name = dt.name
        half = name in _FP16ISH
        src = src_dtype.name if src_dtype is not None else ""
        if kind == "cvt":
            if half and src not in _FP16ISH:
                table = K.CVT_F32_TO_F16 if src_dtype is None or src_dtype.is_floating() else K.CVT_INT_TO_F32
            elif src in _FP16ISH and not half:
                table = K.CVT_F16_TO_F32
            elif name == "fp64" or src == "fp64":
                table = K.CVT_F64
            elif dt.is_floating():
                table = K.CVT_INT_TO_F32
            else:
                table = K.CVT_F32_TO_INT
            return self._cost(table, units, deps, line)
        if kind == "fcmp":
            return self._cost(K.FLOAT_OP["fcmp"], units * (0.5 if any(x.dtype.name in _FP16ISH for x in ins) else 1),
                              deps, line)
        if kind == "truediv" and dt is not C.float64:
            # the reciprocal once per distinct divisor value, then a scaled multiply per element
            b = ins[1] if len(ins) > 1 else None
            n_div = units
            if b is not None and b.shape and shape:
                n_div = sum(_ept_in(b.shape, L) for L in lays)
            elif b is not None and not b.shape:
                n_div = 1
            first = self._cost(K.DIV_RCP, n_div, deps, line)
            return self._cost(K.FLOAT_OP["truediv"], units, [first], line)
        if half and kind in ("add", "sub", "mul", "fma", "fmnmx", "abs", "sel"):
            return self._cost(K.HALF_OP, units, deps, line)
        if name == "fp64" and kind in ("add", "sub", "mul", "fma", "truediv"):
            return self._cost([(Pipe.FP64, 10 if kind == "truediv" else 1, "DFMA")], units, deps, line)
        if kind == "sqrt_rn":
            kind = "sqrt"
        table = K.FLOAT_OP.get(kind)
        if table is None:
            table = K.FLOAT_OP["add"]
        if kind in ("sin", "cos", "log", "log2", "erf"):
            self.stats.math_fns.add(kind)
        if kind in ("sin", "cos") and site is not None:
            # the second of sin/cos of one value reuses the first's range reduction
            x = ins[0] if ins else None
            if self.probe and x is not None and x.bk is not None and x.bk[1] is not None:
                seen = self.facts.get(x.bk[1]).setdefault("trig", {})
                other = "cos" if kind == "sin" else "sin"
                if other in seen and seen[other] != site:
                    self.facts.get(site)["trig_shared"] = other
                seen.setdefault(kind, site)
            shared = (self.facts.sites.get(site) or {}).get("trig_shared")
            if shared:
                table = K.FLOAT_OP[f"{kind}_after_{shared}"]
        return self._cost(table, units, deps, line)

    # ---- memory ------------------------------------------------------------------------------------
    def _mem_decision(self, site, ptr, mask, shape, is_load: bool, force_layout=None):
        """Layout and vector width of a global access at ``site`` (joined AxisInfo of its pointer and mask)."""
        f = self.facts.get(site)
        eb = ptr.dtype.element_ty.itemsize
        bits = ptr.dtype.element_ty.primitive_bitwidth
        pax = C.broadcast_ax(ptr, shape) if ptr.ax is not None else None
        if pax is None:
            pax = AI.pessimistic(len(shape))
        max_ = None
        if mask is not None:
            max_ = C.broadcast_ax(mask, shape) if mask.ax is not None else AI.pessimistic(len(shape))
        if self.probe or not f.get("from_probe"):
            f["ptr_ax"] = AI.join(f.get("ptr_ax"), pax)
            if max_ is not None:
                f["mask_ax"] = AI.join(f.get("mask_ax"), max_)
        pax = f.get("ptr_ax", pax)
        max_ = f.get("mask_ax", max_) if mask is not None else None
        if not shape:
            lay = Layout("blocked", (), (), (), (), (), (), (), ())
            return lay, 1, f
        order = order_from_contiguity(pax.contig)
        d0 = order[0]
        numel = int(np.prod(shape))
        max_mult = max(pax.div[d0] // eb, 1)
        alignment = min(max_mult, pax.contig[d0])
        if force_layout is not None:
            lay = force_layout
            d0 = lay.order[0] if lay.order else len(shape) - 1
            alignment = min(max(pax.div[d0] // eb, 1), pax.contig[d0])
            vec = min(lay.contig(d0), alignment, max(1, 128 // bits))
        else:
            per_thread = min(alignment, max(1, 128 // bits))
            spt_d0 = min(per_thread, max(numel // (WARP * self.W), 1))
            spt = [1] * len(shape)
            spt[d0] = spt_d0
            lay = blocked(tuple(shape), tuple(spt), order, self.W)
            vec = min(spt_d0, alignment, max(1, 128 // bits))
        mask_c = None
        if max_ is not None:
            mask_c = max(1, max_.const[d0])
            vec = min(vec, mask_c)
        vec = max(1, vec)
        f["decision"] = {"vec": vec, "bytes": vec * eb, "order": list(order), "contiguity": pax.contig[d0],
                         "divisibility_bytes": pax.div[d0], "mask_constancy": mask_c, "layout": repr(lay)}
        return lay, vec, f

    def _global_access(self, site, ptr, shape, mask_t, lay, vec, store: bool) -> MemAccess:
        """The coalesced requests of a global access: ``coalesce_programs`` of ``_addresses``.

        A loop's pointer tile advanced by a scalar (``ptrs += BLOCK_K * stride``) from the tile this site accessed
        last, with the same layout and no lane masked at run time, makes the same requests shifted by the
        advance: when that is a whole number of 128 B lines, they are the last requests moved by so many lines
        (same sector masks, same order), without recomputing the lanes' addresses."""
        buf = ptr.buf
        eb = buf.elem_bytes
        unmasked = C.ST.active() is None and (mask_t is None or self._lane_mask(mask_t, shape, None) is None)
        key = (site, store)
        prev = self._access_cache.get(key)
        sh = ptr.shift
        if unmasked and prev is not None and sh is not None and sh[0] is prev[0] and prev[1] == lay.key and \
                prev[2] == vec and prev[3] is buf and (sh[1] * eb) % 128 == 0:
            acc = dataclasses.replace(prev[4], line=prev[4].line + (sh[1] * eb) // 128)   # (ptr, smask shared)
        else:
            acc = coalesce_programs(self._addresses(ptr, shape, mask_t, lay, vec, store), vec * eb, self.P)
        self._access_cache[key] = (ptr.v, lay.key, vec, buf, acc) if unmasked else None
        return acc

    @staticmethod
    def _lane_mask(mask_t, shape, idx):
        """A mask tensor's lanes (reordered by ``idx``, if given) as a (P or 1, ...) bool array, or None when it is
        the same true for all programs."""
        mv = C.vshape(mask_t, shape)
        if mv.dtype != np.bool_:
            mv = mv != 0
        if mv.shape[0] == 1 and mv.all():
            return None
        mv = np.broadcast_to(mv, (mv.shape[0],) + tuple(shape)).reshape(mv.shape[0], -1)
        return mv if idx is None else mv[:, idx]

    def _addresses(self, ptr, shape, mask_t, lay, vec, store: bool):
        st = C.ST
        buf = ptr.buf
        eb = buf.elem_bytes
        idx, dup = elem_map(lay, vec)
        offs = C.vshape(ptr, shape)
        Pn = offs.shape[0]
        offs = np.broadcast_to(offs, (Pn,) + tuple(shape)).reshape(Pn, -1)
        addr = buf.base_addr + offs[:, idx].astype(np.int64, copy=False) * eb   # (Pn, W, n, 32)
        m = None
        if mask_t is not None:
            m = self._lane_mask(mask_t, shape, idx)
        a = st.active()
        if a is not None:
            am = a.reshape(-1, 1, 1, 1)
            m = am if m is None else (m & am)
        if store:
            dm = ~dup[None]
            m = dm if m is None else (m & dm)
        if m is not None:
            if m.shape[0] != addr.shape[0]:
                addr = np.broadcast_to(addr, (max(m.shape[0], addr.shape[0]),) + addr.shape[1:])
            addr = np.where(m, addr, -1)
        return addr

    def _n_vectors(self, lay, vec, shape) -> int:
        if not shape:
            return 1
        return max(1, -(-lay.ept // vec))

    def load(self, out, ptr, mask, shape, other=None):
        file, line, site = C.user_site()
        f = self.facts.get(site)
        force = None
        cl = f.get("consumer_lays")
        if shape and cl and not f.get("dot_operand"):
            cand = [L for L in cl.values() if L.shape == tuple(shape)]
            if cand:
                force = cand[-1]
        lay, vec, f = self._mem_decision(site, ptr, mask, shape, True, force)
        out.lay = lay
        if self.probe and shape:
            self._anchor_input(ptr, lay, shape)
            if mask is not None:
                self._anchor_input(mask, lay, shape)
        eb = ptr.dtype.element_ty.itemsize
        n_inst = self._n_vectors(lay, vec, shape)
        addr = self._address_cost(ptr, lay, shape, site, [ptr.src], line)
        lp = self.in_runtime_loop()
        if self.probe and lp is not None:
            f["loop"] = lp.key
            f["pipelinable"] = lp.stages >= 2 and vec * eb >= 4 and bool(shape)
        pipelined = (bool(f.get("feeds_dot")) and lp is not None and lp.stages >= 2 and vec * eb >= 4
                     and bool(shape))
        deps = [addr if addr is not None else ptr.src, mask.src if mask is not None else None]
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        dec = dict(f.get("decision", {}))
        dec["op"] = "load"
        dec["async_copy"] = pipelined
        if not self.probe:
            self.stats.mem_sites[key] = dec
        # a cp.async writes each element to shared memory once: lanes holding a replicated copy (a slice of an
        # MMA layout) are predicated off, as a store's are
        mem = None if self.probe else self._global_access(site, ptr, shape, mask, lay, vec, pipelined)
        if self.probe:
            mem = _empty_access(self._n_warps(), vec * eb)
        tile_bytes = int(np.prod(shape)) * eb if shape else eb
        n_pred = 0
        if mask is not None and shape:
            n_pred = distinct_values(shape, lay, None, C.broadcast_ax(mask, shape) if mask.ax is not None else None,
                                     predicate=True)
        if pipelined:
            if lp.wait_it != len(lp.iters) - 1:
                # ptxas opens each group of LDGSTS with three never-executed LDS (a scheduling fence)
                self._cost(K.PIPE_GROUP, 1, (), line, tag_loop=lp)
            cp = self._emit(OpKind.ASYNC_COPY, Pipe.LSU, n_inst, deps, mem, label=f"LDGSTS.E.BYPASS.{vec * eb * 8}",
                            line=line)
            cp.loop = lp
            cp.it = len(lp.iters) - 1
            cp.flops = -distinct_values(shape, lay, ptr.aff, ptr.ax)     # (phantoms: addresses to advance)
            # the group commit (LDGDEPBAR) does not wait for the copies: no dependence on them
            self._cost(K.PIPE_LOAD_ITER, 1, [], line, tag_loop=lp)
            if n_pred:
                self._cost(K.PIPE_MASK, n_pred, [mask.src], line, tag_loop=lp)
            lp.has_copies = True
            if self.probe:
                self.facts.get(lp.key)["pipelined"] = True
            # one DEPBAR + barrier per iteration waits for the oldest group (all of its loads)
            first = lp.wait_it != len(lp.iters) - 1
            lp.wait_it = len(lp.iters) - 1
            wait = self._emit(OpKind.ASYNC_WAIT, Pipe.LSU, 1 if first else 0, [cp],
                              _empty_access(self._n_warps(), vec * eb), label="DEPBAR.LE", line=line)
            out.src = wait
            if first:
                self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [wait], label="BAR.SYNC", line=line)
            if not f.get("dot_operand"):
                # consumed by math, not by the tensor cores: read back from the ring into registers
                # (fa_bwd dkdv: 8 LDS.64 per thread for each of its two 64-value row statistics)
                out.src = self._shared(OpKind.LOAD, n_inst, vec * eb, [wait], f"LDS.{vec * eb * 8}", line)
            # a load that reaches a dot only through other math is buffered one stage less (fa_bwd dkdv's
            # row statistics: 1 x 64 fp32 buffers next to 2 x 64 x 64 for Q and dO at num_stages=2)
            bufs = lp.stages if f.get("dot_operand") else max(1, lp.stages - 1)
            self._region().pipe[site] = bufs * tile_bytes
        else:
            init = None
            if mask is not None and shape:
                nbytes = vec * eb
                if nbytes < 4:
                    init = self._cost(K.OTHER_NARROW, n_inst * (1 if _is_zero(other) else 2), (), line)
                elif _is_zero(other):
                    init = self._cost(K.OTHER_ZERO_PER_8B, n_inst * max(1, nbytes // 8), (), line)
                else:
                    init = self._cost(K.OTHER_VALUE_PER_4B, n_inst * max(1, nbytes // 4), (), line)
            if lp is not None and shape and vec * eb < 4:
                # narrow loads in a loop: each address is rebuilt from its base and the running offset, and
                # the loaded halves are shuffled between registers (tl_matmul_1409/2049 loops)
                self._cost(K.NARROW_LOAD_IN_LOOP, n_inst, deps, line)
                ps = f.get("ptr_site")
                if self.probe and ps is not None:
                    self.facts.get(ps)["narrow"] = True
            op = self._emit(OpKind.LOAD, Pipe.LSU, n_inst, deps + [init], mem, label=f"LDG.E.{vec * eb * 8}",
                            line=line)
            out.src = op
            if shape:
                # loaded values: packed when vectorized, one register per element of a 2-byte scalar load
                self._region().loads[site] = -(-lay.ept * max(eb, 4 if vec * eb < 4 else eb) // 4)
        return site

    def store(self, ptr, val, mask, shape):
        file, line, site = C.user_site()
        self._note_use([val], site)
        lay, vec, f = self._mem_decision(site, ptr, mask, shape, False)
        if self.probe and shape:
            self._anchor_input(ptr, lay, shape)
            if mask is not None:
                self._anchor_input(mask, lay, shape)
            if val.lay is None or val.lay.shape != tuple(shape):
                self._anchor_input(val, lay, shape)
        eb = ptr.dtype.element_ty.itemsize
        addr = self._address_cost(ptr, lay, shape, site, [ptr.src], line)
        deps = [addr if addr is not None else ptr.src, val.src, mask.src if mask is not None else None]
        vl = val.lay
        if shape and vl is not None and vl.shape == tuple(shape) and vl.kind != "blocked" and \
                not vl.same_distribution(lay):
            deps = self._convert_through_shared(shape, eb, val.src, line, vl, lay) + deps[2:]
        n_inst = self._n_vectors(lay, vec, shape)
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        dec = dict(f.get("decision", {}))
        dec["op"] = "store"
        if not self.probe:
            self.stats.mem_sites[key] = dec
            mem = self._global_access(site, ptr, shape, mask, lay, vec, True)
        else:
            mem = _empty_access(self._n_warps(), vec * eb)
        self._emit(OpKind.STORE, Pipe.LSU, n_inst, deps, mem, label=f"STG.E.{vec * eb * 8}", line=line)

    def atomic(self, out, ptr, val, mask, shape, op):
        file, line, site = C.user_site()
        lay, _vec, f = self._mem_decision(site, ptr, mask, shape, False)     # atomics are scalar
        if shape:
            lay = blocked(tuple(shape), (1,) * len(shape), lay.order, self.W)
            if self.probe:
                self._anchor_input(ptr, lay, shape)
                if mask is not None:
                    self._anchor_input(mask, lay, shape)
        eb = ptr.dtype.element_ty.itemsize
        n_inst = lay.ept if shape else 1
        addr = self._address_cost(ptr, lay, shape, site, [ptr.src], line)
        deps = [addr if addr is not None else ptr.src, val.src, mask.src if mask is not None else None]
        mem = _empty_access(self._n_warps(), eb) if self.probe else coalesce_programs(
            self._addresses(ptr, shape, mask, lay, 1, True), eb, self.P)
        a = self._emit(OpKind.ATOMIC, Pipe.LSU, n_inst, deps, mem,
                       label=f"ATOMG.E.{op.upper()}.{ptr.dtype.element_ty.name.upper()}", line=line)
        out.src = a
        out.lay = lay

    def barrier(self):
        self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, (), label="BAR.SYNC")

    def _shared(self, kind, n_inst, bpl, deps, label, line, mem=None, warps_on=None):
        """A shared-memory op; ``warps_on``: only the first that many warps of each CTA have a lane whose
        predicate is true (the others issue it predicated off: no wavefronts)."""
        if mem is None:
            aw = self._active_warps()
            if warps_on is not None and warps_on < self.W:
                aw = aw * warps_on // self.W
            mem = shared_ideal(self._n_warps(), n_inst, bpl, aw)
            if warps_on is not None and warps_on < self.W:
                wf = mem.wavefronts.reshape(self.P, self.W)
                wf[:, warps_on:] = 0
                mem.shared_ideal_wavefronts = mem.wavefronts.copy()
        return self._emit(kind, Pipe.LSU, n_inst, deps, mem, label=label, line=line)

    def _convert_through_shared(self, shape, eb, src, line, src_lay=None, dst_lay=None):
        """Layout conversion of a register tile through shared memory: rounds of (st.shared, barrier, ld.shared /
        ldmatrix, barrier).  An MMA accumulator of fp16 leaves as 16-byte STS and LDSM (fa_fwd / tl_matmul
        epilogues: 8 STS.128 + 8 LDSM per thread for 128 bytes), one round per 64-row block of a warpgroup."""
        numel = int(np.prod(shape))
        src_ept = _ept_in(shape, src_lay) if src_lay is not None else max(1, numel // (WARP * self.W))
        dst_ept = _ept_in(shape, dst_lay) if dst_lay is not None else max(1, numel // (WARP * self.W))
        st_bytes = 16 if eb <= 2 else 8
        n_st = max(1, -(-src_ept * eb // st_bytes))
        ld_bytes = 16 if dst_lay is None else min(16, max(eb, dst_lay.contig((dst_lay.order or (len(shape) - 1,))[0])
                                                          * eb))
        n_ld = max(1, -(-dst_ept * eb // ld_bytes))
        rounds = 1
        if src_lay is not None and src_lay.kind == "mma" and len(shape) >= 2:
            w0 = src_lay.mma[1][0]
            rounds = max(1, shape[-2] // (16 * w0))
        s1 = self._shared(OpKind.STORE, n_st, st_bytes, [src], f"STS.{st_bytes * 8}", line)
        b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, rounds, [s1], label="BAR.SYNC", line=line)
        l1 = self._shared(OpKind.LOAD, n_ld, ld_bytes, [b1], "LDSM.16.M88.4" if ld_bytes == 16 and eb == 2 else
                          f"LDS.{ld_bytes * 8}", line)
        if rounds > 1 or src_lay is not None:
            self._alu(Pipe.BRANCH, max(1, 2 * rounds - 1), [l1], "BAR.SYNC", line)
        self._scratch(numel * eb // rounds)
        return [l1]

    def _scratch(self, nbytes):
        r = self._region()
        r.scratch = max(r.scratch, nbytes)

    # ---- dot ---------------------------------------------------------------------------------------
    def dot(self, out, a, b, acc, precision):
        file, line, site = C.user_site()
        f = self.facts.get(site)
        for x in (a, b):
            if x.dsrc:
                for s in x.dsrc:
                    self.facts.get(s)["chained"] = True
            if x.lsrc is not None:
                self.facts.get(x.lsrc)["dot_operand"] = True
        if self.probe:
            self._mark_feeds_dot((a, b))
            self._note_use((a, b, acc), site)
        out.dsrc = frozenset([site]) | (a.dsrc or frozenset()) | (b.dsrc or frozenset())
        M, N, K_ = a.shape[-2], b.shape[-1], a.shape[-1]
        batch = a.shape[0] if len(a.shape) == 3 else 1
        dt = a.dtype.name
        if dt == "fp32":
            dt = "tf32" if precision in ("tf32", "tf32x3") else "fp32"
        mult = 3 if (a.dtype.name == "fp32" and precision == "tf32x3") else 1
        chained = bool(f.get("chained"))
        W = self.W
        eb = a.dtype.itemsize
        deps_acc = [acc.src] if acc is not None else []
        acc_regs = max(1, batch * M * N // (WARP * W))
        if acc is not None and acc.src is None:
            # a constant accumulator (tl.zeros) is materialized in registers first (twice around a software
            # pipeline's prologue)
            lp = self.in_runtime_loop()
            twice = lp is not None and self.facts.sites.get(lp.key, {}).get("pipelined")
            acc.src = self._cost(K.MATERIALIZE, acc_regs * (2 if twice else 1), (), line)
            deps_acc = [acc.src]
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        if dt in ("fp32", "fp64") or dt not in ("fp16", "bf16", "tf32", "int8", "uint8"):
            # FMA dot: operands staged in shared memory, each thread reads a row of A and a column of B
            wpc = (W, 1)
            ops = self._stage_group([a, b], line)
            n_fma = max(1, batch * M * N * K_ // (WARP * W))
            pipe = Pipe.FP64 if dt == "fp64" else Pipe.FP32
            ld = self._shared(OpKind.LOAD, max(1, (batch * (M * K_ + K_ * N)) // (WARP * W) // 4), 16, ops,
                              "LDS.128", line)
            op = self._alu(pipe, n_fma, [ld] + deps_acc, "DFMA" if dt == "fp64" else "FFMA", line)
            out.src = op
            out.lay = mma_layout(out.shape, 0, wpc, (1, 1, 1))
            self.stats.dots[key] = {"unit": "FMA", "warpsPerCTA": list(wpc)}
            self._region().acc[site] = acc_regs * (2 if dt == "fp64" else 1)
            self.stats.flops += 2.0 * batch * M * N * K_ * self._active_warps() // W
            self._anchor_acc(acc, out)
            return
        bits = a.dtype.primitive_bitwidth if dt != "tf32" else 32
        v3 = (self.hopper and W % 4 == 0 and len(a.shape) == 2 and M % 64 == 0 and N % 8 == 0)
        if v3:
            k = 256 // bits
            m_warps = max(M // 16, 1)
            n_warps = max(W // m_warps, 1)
            max_n = max(N // n_warps, 8)
            n = 8
            for cand in range(256, 7, -8):
                if N % cand == 0 and cand <= max_n and (dt not in ("int8", "uint8") or cand <= 224):
                    n = cand
                    break
            if chained:
                wpc = (W, 1)
            else:
                wpc = [4, 1]
                while wpc[0] * wpc[1] < W:
                    if M > 16 * wpc[0]:
                        wpc[0] *= 2
                    else:
                        wpc[1] *= 2
                wpc = tuple(wpc)
            wg_m = max(1, wpc[0] // 4)
            rep_m = max(1, M // (64 * wg_m))
            rep_n = max(1, N // (n * wpc[1]))
            rep_k = max(1, K_ // k)
            n_inst = rep_m * rep_n * rep_k * mult
            flops = n_inst * 2 * 64 * n * k // 4
            deps = deps_acc[:]
            # A: registers when computed in the kernel (e.g. FlashAttention's P), else shared memory
            a_in_regs = a.lsrc is None
            smem = [b] if a_in_regs else [a, b]
            if a_in_regs:
                deps.append(a.src)
                self._region().frag[site] = max(1, M * K_ * eb // 4 // (WARP * W))
            deps += self._smem_operands(smem, line)
            desc = self._cost(K.WGMMA, 1, (), line)
            self._cost(K.WGMMA_PER_INST, n_inst, [desc], line)
            label = f"HGMMA.64x{n}x{k}.F32" + ("" if dt == "fp16" else f".{dt.upper()}")
            op = self._emit(OpKind.MMA, Pipe.TENSOR, n_inst, deps, flops=flops, mma_dtype=_mma_key(dt),
                            label=label, line=line)
            instr = (64, n, k)
            self.stats.dots[key] = {"unit": "wgmma (MMAv3)", "instr": f"m64n{n}k{k}", "warpsPerCTA": list(wpc),
                                    "wgmma_per_warp": n_inst, "a_operand": "registers" if a_in_regs else "shared"}
            version = 3
        else:
            kk = {"fp16": 16, "bf16": 16, "tf32": 8, "int8": 32, "uint8": 32}[dt]
            if chained:
                wpc = (W, 1)
            else:
                w = [1, 1]
                reps = [max(1, -(-M // 16)), max(1, -(-N // 8))]
                while w[0] * w[1] < W:
                    if reps[0] >= reps[1]:
                        w[0] *= 2
                        if reps[0] != 1:
                            reps[0] //= 2
                    else:
                        w[1] *= 2
                        reps[1] //= 2
                wpc = tuple(w)
            rep_m = max(1, -(-M // (16 * wpc[0])))
            rep_n = max(1, -(-N // (8 * wpc[1])))
            rep_k = max(1, K_ // kk)
            n_inst = rep_m * rep_n * rep_k * batch * mult
            flops = n_inst * 2 * 16 * 8 * kk
            deps = deps_acc[:]
            # operands into registers in the dot-operand layout: ldmatrix from shared memory
            for x, rows, which in ((a, 16 * rep_m, "a"), (b, 8 * rep_n, "b")):
                nbytes = rows * K_ * eb * batch
                if x.lsrc is None and x is a:
                    deps.append(x.src)            # computed in registers (e.g. P): converted in registers
                    self._region().frag[(site, which)] = max(1, M * K_ * eb // 4 // (WARP * W))
                    continue
                # Triton's prefetch pass keeps two k-slices of each shared-memory operand in registers
                self._region().frag[(site, which)] = max(1, rows * min(K_, 2 * kk) * eb * batch // 4 // WARP)
                hit = self._staged.get(("ldsm", id(x)))
                if hit is not None and hit[0]() is x:
                    deps.append(hit[1])           # loop-invariant operand: fragments loaded once (hoisted)
                    continue
                sdeps = self._smem_operands([x], line)
                ld = self._shared(OpKind.LOAD, max(1, nbytes // 512), 16, sdeps, "LDSM.16.M88.4", line)
                self._staged[("ldsm", id(x))] = (weakref.ref(x), ld)
                deps.append(ld)
            label = "HMMA.16816.F32" + ("" if dt == "fp16" else f".{dt.upper()}") if kk == 16 else \
                "HMMA.1688.F32.TF32" if dt == "tf32" else "IMMA.16832.S32.S8"
            op = self._emit(OpKind.MMA, Pipe.TENSOR, n_inst, deps, flops=flops, mma_dtype=_mma_key(dt),
                            label=label, line=line)
            instr = (16, 8, kk)
            self.stats.dots[key] = {"unit": "mma.sync (MMAv2)", "instr": f"m16n8k{kk}", "warpsPerCTA": list(wpc),
                                    "mma_per_warp": n_inst}
            version = 2
        out.src = op
        out.lay = mma_layout(out.shape, version, wpc, instr)
        if acc is not None:
            self._region().acc[site] = acc_regs
        else:
            self._region().res[site] = acc_regs
        self.stats.flops += 2.0 * batch * M * N * K_ * self._active_warps() // W
        self._anchor_acc(acc, out)

    def _anchor_acc(self, acc, out):
        if self.probe and acc is not None and (acc.lay is None or acc.lay.shape != acc.shape):
            self._anchor_input(acc, out.lay, out.shape)

    def _smem_operands(self, xs, line) -> list:
        """Deps making the operands ``xs`` available in shared memory: their async-copy waits, or one staging
        group for those held in registers."""
        deps, stage = [], []
        for x in xs:
            src = x.src
            if src is not None and src.kind == OpKind.ASYNC_WAIT:
                deps.append(src)
            else:
                stage.append(x)
        if stage:
            deps += self._stage_group(stage, line)
        return deps

    def _stage_group(self, xs, line) -> list:
        """Registers -> shared memory for dot operands (local_alloc): one st.shared per register vector of each
        operand's layout, the async-proxy fence, one barrier (and, inside a loop, the barrier that lets the
        previous iteration's readers finish first).  A loop-invariant operand is staged once (Triton hoists the
        allocation out of the loop)."""
        deps, todo = [], []
        for x in xs:
            hit = self._staged.get(id(x))
            if hit is not None and hit[0]() is x:
                deps.append(hit[1])
            else:
                todo.append(x)
        if not todo:
            return deps
        pre = []
        if self.in_runtime_loop() is not None:
            pre = [self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, (), label="BAR.SYNC", line=line)]
        stores = []
        for x in todo:
            eb = x.dtype.itemsize
            lay = x.lay if (x.lay is not None and x.lay.shape == x.shape) else default_layout(x.shape, self.W)
            d0 = (lay.order or (len(x.shape) - 1,))[0]
            vec = max(1, min(lay.contig(d0), 16 // eb))
            n = max(1, -(-lay.ept // vec))
            stores.append(self._shared(OpKind.STORE, n, vec * eb, [x.src] + pre, f"STS.{vec * eb * 8}", line))
            self._region().staging[(x.lsrc if x.lsrc is not None else C.user_site()[2], x.numel)] = x.numel * eb
        fence = self._cost(K.WGMMA_FENCE, 1, stores, line) if self.hopper else None
        b = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [fence] if fence is not None else stores, label="BAR.SYNC",
                       line=line)
        for x in todo:
            self._staged[id(x)] = (weakref.ref(x), b)
        return deps + [b]

    # ---- reductions --------------------------------------------------------------------------------
    def _note_use(self, xs, site):
        """Probe: ``site`` uses the values ``xs`` (for the folds that need all of a value's users)."""
        if self.probe:
            for x in xs:
                if isinstance(x, C.tensor) and x.bk is not None and x.bk[1] is not None:
                    self.facts.get(x.bk[1]).setdefault("users", set()).add(site if site is not None else "other")

    def reduce(self, out, x, axis, kind, scan=False):
        rsite = C.user_site()[2]
        if self.probe:
            self._note_use([x], rsite)
            if kind == "add" and not scan and x.dtype.is_floating() and x.bk is not None and x.bk[0] == "mul" \
                    and x.bk[1] is not None:
                # sum(a * b): the in-thread adds contract with the products into FFMAs
                self.facts.get(x.bk[1]).setdefault("contracted_users", set()).add(rsite)
                self.facts.get(rsite)["contract"] = True
        contract = bool((self.facts.sites.get(rsite) or {}).get("contract"))
        lay = x.lay if (x.lay is not None and x.lay.shape == x.shape) else None
        if lay is None:
            lay = default_layout(x.shape, self.W)
            if self.probe:
                self._anchor_input(x, lay, x.shape)
        e = lay.ept_dim[axis]
        lanes = lay.lanes[axis]
        warps = lay.warps[axis]
        n_out = max(1, lay.ept // max(1, e))
        dt = x.dtype
        if dt.is_floating() and kind == "add":
            self.stats.flops += (x.numel - max(1, out.numel)) * (self._active_warps() // self.W)
        per = 2 if kind in ("argmax", "custom") else 1
        if dt.is_floating():
            pipe, label = (Pipe.FP32, "FADD") if kind == "add" else (Pipe.INT, "FMNMX")
            if dt is C.float64:
                pipe, label = Pipe.FP64, "DADD"
        else:
            pipe, label = Pipe.INT, ("IADD3" if kind == "add" else "IMNMX")
        line = C.user_line()[1]
        deps = [x.src]
        last = None
        if e > 1:
            if contract:
                first = self._alu(Pipe.FP32, n_out, deps, "FMUL", line)
                last = self._alu(Pipe.FP32, (e - 1) * n_out, [first], "FFMA", line)
            else:
                last = self._alu(pipe, (e - 1) * n_out * per, deps, label, line)
            deps = [last]
        steps = int(math.log2(lanes)) if lanes > 1 else 0
        for _ in range(steps):
            sh = self._emit(OpKind.ALU, Pipe.LSU, n_out * per, deps, label="SHFL.BFLY", line=line)
            last = self._alu(pipe, n_out * per, [sh], label, line)
            deps = [last]
        if warps > 1:
            eb = max(4, dt.itemsize)
            if not self._reduce_setup:
                self._reduce_setup = True
                self._cost(K.REDUCE_SETUP, 1, (), line)
            # the partials are read back, reduced and written by the threads that own them: the first
            # ceil(partials / 32) warps (tl_softmax: 2.5 shared loads per warp for two reductions over 4 warps)
            owners = max(1, min(self.W, -(-(n_out * warps) // WARP)))
            s1 = self._shared(OpKind.STORE, n_out, eb, deps, "STS", line)
            b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
            l1 = self._shared(OpKind.LOAD, n_out, eb, [b1], "LDS", line, warps_on=owners)
            deps = [l1]
            for _ in range(int(math.log2(warps))):
                sh = self._emit(OpKind.ALU, Pipe.LSU, n_out * per, deps, label="SHFL.BFLY", line=line)
                c = self._alu(pipe, n_out * per, [sh], label, line)
                deps = [c]
            s2 = self._shared(OpKind.STORE, n_out, eb, deps, "STS", line, warps_on=owners)
            b2 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s2], label="BAR.SYNC", line=line)
            last = self._shared(OpKind.LOAD, n_out, eb, [b2], "LDS", line)
            # the barrier that lets everyone read the result before the scratch buffer is reused
            self._alu(Pipe.BRANCH, 1, [last], "BAR.SYNC", line)
            self._scratch(int(np.prod(out.shape) if out.shape else 1) * warps * eb)
        if last is None:
            last = self._alu(pipe, n_out, deps, "MOV", line)
        out.src = last
        if scan:
            out.lay = lay
        else:
            out.lay = lay.slice(axis) if out.shape == tuple(s for d, s in enumerate(x.shape) if d != axis) else None

    # ---- results -----------------------------------------------------------------------------------
    def table(self, first_cta: int) -> OpTable:
        """The recorded ops as an OpTable over this chunk's CTAs (deps as op indices, earlier ops only)."""
        index = {id(o): i for i, o in enumerate(self.ops)}
        ops = []
        any_masked = False
        for i, o in enumerate(self.ops):
            deps = tuple(sorted({index[id(d)] for d in o.deps if id(d) in index and index[id(d)] < i}))
            ops.append(Op(kind=o.kind, pipe=o.pipe, n_inst=int(o.n_inst), line=int(o.line), deps=deps, mem=o.mem,
                          flops=max(0, int(o.flops)), mma_dtype=o.mma_dtype, label=o.label))
            if o.active is not None:
                any_masked = True
        active = None
        if any_masked:
            active = np.full((len(ops), self.P * self.W), WARP, np.uint8)
            for i, o in enumerate(self.ops):
                if o.active is not None:
                    active[i] = np.repeat(o.active, self.W).astype(np.uint8) * WARP
        return OpTable(first_cta=first_cta, n_ctas=self.P, warps_per_cta=self.W, ops=ops, active=active)


def _mma_key(dt: str) -> str:
    return {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "int8": "int8", "uint8": "int8"}.get(dt, dt)


# ---------------------------------------------------------------------------------------------------------
# registers and shared memory
# ---------------------------------------------------------------------------------------------------------

def register_estimate(stats: Stats, num_warps: int) -> tuple[int, dict]:
    """Registers per thread: a base plus, for the loop (or the code outside loops) that needs the most, a
    weighted sum of the register tiles live there (``costs.REG_WEIGHTS``: dot accumulators and results, operand
    fragments held in registers, loaded tiles, 64-bit addresses of pointers advanced in the loop, the largest
    elementwise temporary).  Returns (estimate before the 255 cap, basis)."""
    key, reg = None, Region()
    for k, r in stats.regions.items():
        if r.regs() > reg.regs() or (key is None and r.regs() == reg.regs() and r.regs()):
            key, reg = k, r
    basis = {"base": K.REG_BASE}
    basis.update(reg.features())
    extra = max(0, len(stats.math_fns) - 1)
    basis["extra_libdevice_functions"] = extra
    est = K.REG_BASE + reg.regs() + K.REG_PER_EXTRA_LIBDEVICE_FN * extra
    return int(round(est)), basis


def shared_estimate(stats: Stats) -> tuple[int, dict]:
    reg = Region()
    for r in stats.regions.values():
        if r.smem() > reg.smem():
            reg = r
    basis = {"pipeline_buffers": int(sum(reg.pipe.values())), "dot_operand_staging": int(sum(reg.staging.values())),
             "scratch": reg.scratch,
             "formula": "max over loops (and the code outside loops) of pipeline buffers + staged dot operands + the "
                        "largest reduction/layout-conversion scratch; pipeline buffer = num_stages x tile bytes per "
                        "cp.async-pipelined load"}
    return reg.smem(), basis


# ---------------------------------------------------------------------------------------------------------
# joining chunk tables
# ---------------------------------------------------------------------------------------------------------

def _signature(t: OpTable):
    return tuple((o.kind, o.pipe, o.n_inst, o.line, o.deps, o.flops, o.mma_dtype, o.label,
                  None if o.mem is None else (o.mem.space, o.mem.bytes_per_lane)) for o in t.ops)


def merge_tables(tables: list[OpTable]) -> list[OpTable]:
    """Join consecutive tables with identical op lists into one table (concatenating their accesses)."""
    out: list[OpTable] = []
    group: list[OpTable] = []
    sig = None
    for t in tables:
        s = _signature(t)
        if group and s == sig:
            group.append(t)
            continue
        if group:
            out.append(_join(group))
        group, sig = [t], s
    if group:
        out.append(_join(group))
    return out


def _join(group: list[OpTable]) -> OpTable:
    if len(group) == 1:
        return group[0]
    t0 = group[0]
    ops = []
    for i, o in enumerate(t0.ops):
        mem = o.mem
        if mem is not None:
            mem = T.concat_access([t.ops[i].mem for t in group])
        ops.append(Op(kind=o.kind, pipe=o.pipe, n_inst=o.n_inst, line=o.line, deps=o.deps, mem=mem, flops=o.flops,
                      mma_dtype=o.mma_dtype, label=o.label))
    if all(t.active is None for t in group):
        active = None
    else:
        active = np.concatenate([t.active if t.active is not None else
                                 np.full((len(t.ops), t.n_warps), WARP, np.uint8) for t in group], axis=1)
    return OpTable(first_cta=t0.first_cta, n_ctas=sum(t.n_ctas for t in group), warps_per_cta=t0.warps_per_cta,
                   ops=ops, active=active)
