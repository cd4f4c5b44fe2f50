"""Layouts: how a tile is spread over the threads of a CTA (Triton's TritonGPU encodings).

``blocked`` is the ``BlockedEncodingAttr`` the ``Coalesce`` pass gives a memory access (threads fill the
fastest dimension first, then warps), ``mma_layout`` the accumulator layout of mma.sync / wgmma
(``NvidiaMmaEncodingAttr``); ``Layout.slice`` and ``Layout.permute`` are ``SliceEncodingAttr`` and a
transpose of them.  ``coords`` / ``elem_map`` say which elements each thread holds in register order (what
Triton's linear layouts compute), ``distinct_values`` how many registers an integer tile needs per thread.
Units: elements, lanes (32 per warp) and warps.
"""
from __future__ import annotations

import numpy as np

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


def _ept_in(shape, lay: Layout) -> int:
    """Elements per thread of a tile of ``shape`` held in ``lay`` (size-1 dims of a broadcast hold one)."""
    n = 1
    for d, s in enumerate(shape):
        if s > 1 and d < len(lay.ept_dim):
            n *= min(lay.ept_dim[d], s)
    return max(1, n)
