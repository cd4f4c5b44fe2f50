"""Lowering tile ops to per-warp instruction groups, the way Triton 3.x lowers them on Hopper and Ampere.

One program = one CTA of ``num_warps`` warps.  Every tile op becomes ``Op``s of the trace (``gpusim.trace``):

* Layouts.  A load/store/atomic gets Triton's *coalesced* blocked layout (``Coalesce`` pass): order by
  decreasing contiguity of the pointer, ``sizePerThread`` along the fastest dim = min(alignment, 16 B / element,
  elements per thread), threads of a warp filling the fastest dim first, then warps (``BlockedEncodingAttr``).
  A dot result has the MMA layout (rows over warps); other values inherit their operand's layout.
* Vector width of a global access = min(sizePerThread, alignment = min(divisibility / element bytes,
  contiguity), mask constancy) from the joined AxisInfo of the pointer (``_axisinfo``).  Each thread issues
  ``elements_per_thread / vec`` instructions of ``vec * element_bytes`` bytes; lane addresses go through the
  coalescer (``coalesce_global``), vectorized across all programs of a chunk.
* ``tl.dot``: Hopper ``wgmma.mma_async`` (MMAv3, m64nNk16 / k8 tf32 / k32 int8) when num_warps % 4 == 0,
  M % 64 == 0 and N % 8 == 0; else ``mma.sync`` m16n8k16 (MMAv2) with ``ldmatrix`` from shared memory (also
  on the a100 / rtx3090 presets); fp32 with ``input_precision="ieee"`` and fp64 use FMA.  Operands loaded from
  global memory are staged through shared memory.  warpsPerCTA follows ``warpsPerTileV3/V2``; a dot whose
  result feeds another dot (FlashAttention) puts all warps along M.
* Software pipelining (``num_stages``, ``tl.range(num_stages=)``): a load inside a runtime loop whose value
  feeds a dot operand and whose vector is >= 4 B becomes ``cp.async`` (ASYNC_COPY) into a ring of
  ``num_stages`` shared buffers; the copy for iteration i + num_stages - 1 is issued at the start of
  iteration i (copies for iterations 0 .. num_stages - 2 form the prologue), and an ASYNC_WAIT at the load's
  place waits for its own iteration's copy.
* Reductions: in-thread combines, ``log2(lanes)`` shuffle+combine steps, and across warps a round trip
  through shared memory with barriers.  exp = FMUL by log2(e) + MUFU.EX2; log = MUFU.LG2 + FMUL; rsqrt/exp2/
  log2 one MUFU; sin/cos are libdevice polynomials (~20 FP32 instructions); fp16/bf16 arithmetic is packed
  (HADD2/HMUL2/HFMA2, two elements per instruction).

Shared memory per CTA (bytes) = the largest, over loops (and the code outside loops), of: sum over that loop's
pipelined loads of num_stages x tile bytes + staged dot operands (a loop-invariant one, like FlashAttention's Q,
is staged once) + the largest reduction / layout-conversion scratch (Triton's allocator reuses memory between
sequential loops).  Registers per thread: ``register_estimate``.  Shared-memory accesses are modelled without
bank conflicts (Triton swizzles/pads its shared layouts).
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from .. import trace as T
from ..trace import MemAccess, Op, OpKind, OpTable, Pipe, Space
from . import _axisinfo as AI
from . import _core as C

WARP = 32


# ---------------------------------------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------------------------------------

def _clamp(x, lo, hi):
    return min(max(x, lo), hi)


class Layout:
    """Distribution of a tile over the threads of a CTA.

    ``ept_dim[d]``, ``lanes[d]``, ``warps[d]``: distinct elements per thread, lanes and warps along dim d (unique
    data only: replicated copies are not counted).  Blocked layouts also keep Triton's parameters.
    """

    __slots__ = ("kind", "shape", "ept_dim", "lanes", "warps", "spt", "tpw", "wpc", "order", "mma")

    def __init__(self, kind, shape, ept_dim, lanes, warps, spt=None, tpw=None, wpc=None, order=None, mma=None):
        self.kind = kind
        self.shape = tuple(shape)
        self.ept_dim = tuple(ept_dim)
        self.lanes = tuple(lanes)
        self.warps = tuple(warps)
        self.spt, self.tpw, self.wpc, self.order = spt, tpw, wpc, order
        self.mma = mma

    @property
    def ept(self) -> int:
        n = 1
        for e in self.ept_dim:
            n *= e
        return max(1, n)

    def slice(self, axis: int) -> "Layout":
        keep = [d for d in range(len(self.shape)) if d != axis]
        return Layout("slice", [self.shape[d] for d in keep], [self.ept_dim[d] for d in keep],
                      [self.lanes[d] for d in keep], [self.warps[d] for d in keep])

    def __repr__(self):
        if self.kind == "blocked":
            return (f"#blocked<sizePerThread={list(self.spt)}, threadsPerWarp={list(self.tpw)}, "
                    f"warpsPerCTA={list(self.wpc)}, order={list(self.order)}>")
        if self.kind == "mma":
            return f"#mma<v{self.mma[0]}, warpsPerCTA={list(self.mma[1])}, instrShape={list(self.mma[2])}>"
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
    """getOrderFromContiguity: largest contiguity first; ties keep the reversed (row-major) order."""
    r = len(contig)
    idx = list(range(r - 1, -1, -1))
    return tuple(sorted(idx, key=lambda d: -contig[d]))


def mma_layout(shape, version, wpc, instr) -> Layout:
    M, N = shape[-2], shape[-1]
    w0, w1 = wpc
    rows_w = max(1, M // (16 * w0))
    cols_w = max(1, N // (8 * w1))
    lead = list(shape[:-2])
    return Layout("mma", shape, lead + [2 * rows_w if M >= 16 else M, 2 * cols_w],
                  [1] * len(lead) + [min(8, max(1, M // 2)), 4], [1] * len(lead) + [min(w0, max(1, M // 16)),
                                                                                      min(w1, max(1, N // 8))],
                  mma=(version, tuple(wpc), tuple(instr)))


_MAP_CACHE: dict = {}


def elem_map(lay: Layout, vec: int):
    """Flat (row-major) element index of the first element of each vector: int64 (W, n_inst, 32), and the bool
    mask of slots holding replicated data (kept only once for stores)."""
    key = (lay.shape, lay.spt, lay.tpw, lay.wpc, lay.order, vec)
    hit = _MAP_CACHE.get(key)
    if hit is not None:
        return hit
    shape, spt, tpw, wpc, order = lay.shape, lay.spt, lay.tpw, lay.wpc, lay.order
    r = len(shape)
    W = int(np.prod(wpc)) if r else 1
    if r == 0:
        idx = np.zeros((W, 1, WARP), np.int64)
        dup = np.ones((W, 1, WARP), bool)
        dup[0, 0, 0] = False
        _MAP_CACHE[key] = (idx, dup)
        return idx, dup
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
    d0 = order[0]
    # registers per dim: (rep, s) pairs; along d0 only vector starts
    reg_lists = []
    for d in range(r):
        tile = spt[d] * tpw[d] * wpc[d]
        reps = max(1, shape[d] // tile)
        if d == d0:
            starts = [(rep, s) for rep in range(reps) for s in range(0, spt[d], vec)]
        else:
            starts = [(rep, s) for rep in range(reps) for s in range(spt[d])]
        reg_lists.append(starts)
    n_inst = 1
    for lst in reg_lists:
        n_inst *= len(lst)
    # instruction index -> per-dim (rep, s)
    grids = np.meshgrid(*[np.arange(len(lst)) for lst in reg_lists], indexing="ij")
    flat = np.zeros((W, n_inst, WARP), np.int64)
    stride = 1
    for d in range(r - 1, -1, -1):
        lst = np.array(reg_lists[d], np.int64).reshape(-1, 2)
        sel = lst[grids[d].reshape(-1)]            # (n_inst, 2)
        rep, s = sel[:, 0], sel[:, 1]
        coord = ((rep[None, :, None] * (tpw[d] * wpc[d]) + warp_d[d][:, None, None] * tpw[d]
                  + lane_d[d][None, None, :]) * spt[d] + s[None, :, None]) % shape[d]
        flat += coord * stride
        stride *= shape[d]
    fl = flat.reshape(-1)
    _, first = np.unique(fl, return_index=True)
    dup = np.ones(fl.shape, bool)
    dup[first] = False
    out = (flat, dup.reshape(flat.shape))
    _MAP_CACHE[key] = out
    return out


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
    per_prog_lines: list = [None] * Pa
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
    """Shared-memory access without bank conflicts (Triton's swizzled/padded layouts): ceil(32*bpl/128)
    wavefronts per instruction."""
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
    __slots__ = ("start", "iters", "stages", "kind", "has_copies", "depth", "key")

    def __init__(self, start, stages, kind, depth, key=None):
        self.start, self.iters, self.stages, self.kind = start, [], stages, kind
        self.key = key
        self.has_copies = False
        self.depth = depth


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

    def smem(self) -> int:
        return int(sum(self.pipe.values()) + sum(self.staging.values()) + self.scratch)

    def regs(self) -> int:
        return int(sum(self.acc.values()) + sum(self.frag.values()) + sum(self.loads.values()))


class Stats:
    """Per-launch results shared by all chunks: shared memory, register basis, decisions for ``meta``."""

    def __init__(self):
        self.regions: dict = {}           # innermost runtime loop (site key) or None -> Region
        self.addr_regs: dict = {}         # memory sites -> 64-bit address regs
        self.mem_sites: dict = {}         # "file:line" -> vector decision
        self.dots: dict = {}
        self.flops = 0.0

    def region(self, key) -> Region:
        r = self.regions.get(key)
        if r is None:
            r = self.regions[key] = Region()
        return r


_FP16ISH = ("fp16", "bf16")
_FLOP_KINDS = {"add": 1, "sub": 1, "mul": 1, "truediv": 1, "fma": 2, "exp": 1, "exp2": 1, "log": 1, "log2": 1,
               "sqrt": 1, "sqrt_rn": 1, "rsqrt": 1, "sin": 1, "cos": 1}


class Recorder:
    """Lowers the tile ops of one chunk of programs into the op list of one OpTable."""

    def __init__(self, gpu, num_warps: int, num_stages: int, P: int, facts: Facts, stats: Stats, probe=False):
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
        op = RecOp(kind, pipe, int(max(1, n)) if kind != OpKind.ALU or n > 0 else 0, line, d, mem, flops, mma_dtype,
                   label, C.ST.active())
        self.ops.append(op)
        return op

    def _alu(self, pipe, n, deps, label, line=None):
        if n <= 0:
            return None
        return self._emit(OpKind.ALU, pipe, n, deps, label=label, line=line)

    def _n_warps(self):
        return self.P * self.W

    def _active_warps(self):
        a = C.ST.active()
        return self._n_warps() if a is None else int(a.sum()) * self.W

    # ---- loops -------------------------------------------------------------------------------------
    def loop_begin(self, num_stages, kind="for"):
        st = num_stages if num_stages is not None else self.S
        self.loops.append(_Loop(len(self.ops), int(st), kind, len(self.loops), C.user_site()[2]))

    def loop_iter(self):
        if self.loops:
            self.loops[-1].iters.append(len(self.ops))
            # the loop's compare-and-branch
            self._emit(OpKind.ALU, Pipe.INT, 1, (), label="ISETP+BRA")

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
            copies.append([o for o in part if o.kind == OpKind.ASYNC_COPY and o.loop is lp])
            rest.append([o for o in part if not (o.kind == OpKind.ASYNC_COPY and o.loop is lp)])
        D = lp.stages - 1
        new = list(pre)
        for i in range(min(D, n)):
            new.extend(copies[i])
        for i in range(n):
            if i + D < n:
                new.extend(copies[i + D])
            new.extend(rest[i])
        self.ops[lp.start:] = new

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
        if kind in ("full", "bitcast"):
            return
        if dt.is_floating() and kind in _FLOP_KINDS:
            self.stats.flops += _FLOP_KINDS[kind] * out.numel * (self._active_warps() // self.W)
        n = self.ept(out)
        deps = [x.src for x in ins]
        pipe, per, label = _alu_cost(kind, dt, ins, src_dtype)
        op = None
        if kind == "exp":
            self._alu(Pipe.FP32, n, deps, "FMUL")
            op = self._alu(Pipe.SFU, n, [self.ops[-1]], "MUFU.EX2")
        elif kind == "log":
            first = self._alu(Pipe.SFU, n, deps, "MUFU.LG2")
            op = self._alu(Pipe.FP32, n, [first], "FMUL")
        elif kind == "truediv" and dt.is_floating() and dt is not C.float64:
            first = self._alu(Pipe.SFU, n, deps, "MUFU.RCP")
            op = self._alu(Pipe.FP32, 2 * n, [first], "FFMA")
        elif kind == "sqrt_rn":
            first = self._alu(Pipe.SFU, n, deps, "MUFU.RSQ")
            op = self._alu(Pipe.FP32, 4 * n, [first], "FFMA")
        elif kind == "addptr":
            # one 64-bit address per vector access: elements of a vector are immediate offsets
            vg = 1
            if out.ax is not None and out.shape:
                vg = max(1, min(max(out.ax.contig), 16 // max(1, dt.element_ty.itemsize)))
            op = self._alu(Pipe.INT, 2 * -(-n // vg), deps, "IMAD.WIDE")
        else:
            op = self._alu(pipe, math.ceil(n * per), deps, label)
        if op is not None:
            out.src = op

    # ---- memory ------------------------------------------------------------------------------------
    def _mem_decision(self, site, ptr, mask, shape, is_load: bool):
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
            mv = C.vshape(mask_t, shape)
            if mv.dtype != np.bool_:
                mv = mv != 0
            if not (mv.shape[0] == 1 and mv.all()):
                m = np.broadcast_to(mv, (mv.shape[0],) + tuple(shape)).reshape(mv.shape[0], -1)[:, idx]
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

    def load(self, out, ptr, mask, shape):
        file, line, site = C.user_site()
        lay, vec, f = self._mem_decision(site, ptr, mask, shape, True)
        out.lay = lay
        eb = ptr.dtype.element_ty.itemsize
        n_inst = max(1, lay.ept // vec) if shape else 1
        lp = self.in_runtime_loop()
        pipelined = (bool(f.get("dot_operand")) and lp is not None and lp.stages >= 2 and vec * eb >= 4
                     and len(shape) >= 2)
        deps = [ptr.src, mask.src if mask is not None else None]
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        dec = dict(f.get("decision", {}))
        dec["op"] = "load"
        dec["async_copy"] = pipelined
        if not self.probe:
            self.stats.mem_sites[key] = dec
        mem = None if self.probe else coalesce_programs(self._addresses(ptr, shape, mask, lay, vec, False),
                                                      vec * eb, self.P)
        if self.probe:
            mem = _empty_access(self._n_warps(), vec * eb)
        tile_bytes = int(np.prod(shape)) * eb if shape else eb
        if pipelined:
            cp = self._emit(OpKind.ASYNC_COPY, Pipe.LSU, n_inst, deps, mem, label=f"LDGSTS.E.BYPASS.{vec * eb * 8}",
                            line=line)
            cp.loop = lp
            cp.it = len(lp.iters) - 1
            lp.has_copies = True
            # an empty access: the engine treats ASYNC_WAIT like a memory op (no lines: nothing moves)
            wait = self._emit(OpKind.ASYNC_WAIT, Pipe.LSU, 1, [cp], _empty_access(self._n_warps(), vec * eb),
                              label="LDGDEPBAR+DEPBAR.LE", line=line)
            out.src = wait
            self._region().pipe[site] = lp.stages * tile_bytes
        else:
            op = self._emit(OpKind.LOAD, Pipe.LSU, n_inst, deps, mem, label=f"LDG.E.{vec * eb * 8}", line=line)
            out.src = op
            if lp is not None and shape:
                self._region().loads[site] = -(-lay.ept * eb // 4)
        self.stats.addr_regs[site] = 2 * min(n_inst, 2)
        return site

    def store(self, ptr, val, mask, shape):
        file, line, site = C.user_site()
        lay, vec, f = self._mem_decision(site, ptr, mask, shape, False)
        eb = ptr.dtype.element_ty.itemsize
        deps = [ptr.src, val.src, mask.src if mask is not None else None]
        vl = val.lay
        if shape and vl is not None and vl.shape == tuple(shape) and vl.kind == "mma":
            deps = self._convert_through_shared(shape, eb, val.src, line)
        n_inst = max(1, lay.ept // vec) if shape else 1
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        dec = dict(f.get("decision", {}))
        dec["op"] = "store"
        if not self.probe:
            self.stats.mem_sites[key] = dec
            mem = coalesce_programs(self._addresses(ptr, shape, mask, lay, vec, True), vec * eb, self.P)
        else:
            mem = _empty_access(self._n_warps(), vec * eb)
        self._emit(OpKind.STORE, Pipe.LSU, n_inst, deps, mem, label=f"STG.E.{vec * eb * 8}", line=line)
        self.stats.addr_regs[site] = 2 * min(n_inst, 2)

    def atomic(self, out, ptr, val, mask, shape, op):
        file, line, site = C.user_site()
        lay, vec, f = self._mem_decision(site, ptr, mask, shape, False)
        vec = 1
        if shape:
            lay = blocked(tuple(shape), (1,) * len(shape), lay.order, self.W)
        eb = ptr.dtype.element_ty.itemsize
        n_inst = lay.ept if shape else 1
        deps = [ptr.src, val.src, mask.src if mask is not None else None]
        mem = _empty_access(self._n_warps(), eb) if self.probe else coalesce_programs(
            self._addresses(ptr, shape, mask, lay, 1, True), eb, self.P)
        a = self._emit(OpKind.ATOMIC, Pipe.LSU, n_inst, deps, mem,
                       label=f"ATOMG.E.{op.upper()}.{ptr.dtype.element_ty.name.upper()}", line=line)
        out.src = a
        out.lay = lay

    def barrier(self):
        self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, (), label="BAR.SYNC")

    def _shared(self, kind, n_inst, bpl, deps, label, line):
        mem = shared_ideal(self._n_warps(), n_inst, bpl, self._active_warps())
        return self._emit(kind, Pipe.LSU, n_inst, deps, mem, label=label, line=line)

    def _convert_through_shared(self, shape, eb, src, line):
        """Layout conversion of a register tile through shared memory (st.shared, barrier, ld.shared)."""
        numel = int(np.prod(shape))
        per_thread_bytes = max(eb, numel * eb // (WARP * self.W))
        bpl = min(16, per_thread_bytes)
        n = max(1, per_thread_bytes // bpl)
        s1 = self._shared(OpKind.STORE, n, bpl, [src], f"STS.{bpl * 8}", line)
        b = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
        l1 = self._shared(OpKind.LOAD, n, bpl, [b], f"LDS.{bpl * 8}", line)
        self._scratch(numel * eb)
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
        out.dsrc = frozenset([site]) | (a.dsrc or frozenset()) | (b.dsrc or frozenset())
        M, N, K = a.shape[-2], b.shape[-1], a.shape[-1]
        batch = a.shape[0] if len(a.shape) == 3 else 1
        dt = a.dtype.name
        if dt == "fp32":
            dt = "tf32" if precision in ("tf32", "tf32x3") else "fp32"
        mult = 3 if (a.dtype.name == "fp32" and precision == "tf32x3") else 1
        chained = bool(f.get("chained"))
        W = self.W
        eb = a.dtype.itemsize
        deps_acc = [acc.src] if acc is not None else []
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        if dt in ("fp32", "fp64") or dt not in ("fp16", "bf16", "tf32", "int8", "uint8"):
            # FMA dot: operands staged in shared memory, each thread reads a row of A and a column of B
            wpc = (W, 1)
            ops = self._stage(a, line) + self._stage(b, line)
            n_fma = max(1, batch * M * N * K // (WARP * W))
            pipe = Pipe.FP64 if dt == "fp64" else Pipe.FP32
            ld = self._shared(OpKind.LOAD, max(1, (batch * (M * K + K * N)) // (WARP * W) // 4), 16, ops,
                              "LDS.128", line)
            op = self._alu(pipe, n_fma, [ld] + deps_acc, "DFMA" if dt == "fp64" else "FFMA", line)
            out.src = op
            out.lay = mma_layout(out.shape, 0, wpc, (1, 1, 1))
            self.stats.dots[key] = {"unit": "FMA", "warpsPerCTA": list(wpc)}
            self._region().acc[site] = max(1, batch * M * N // (WARP * W)) * (2 if dt == "fp64" else 1)
            self.stats.flops += 2.0 * batch * M * N * K * self._active_warps() // W
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
            rep_k = max(1, K // k)
            n_inst = rep_m * rep_n * rep_k * mult
            flops = n_inst * 2 * 64 * n * k // 4
            deps = deps_acc[:]
            # A: registers when computed in the kernel (e.g. FlashAttention's P), else shared memory
            a_in_regs = a.lsrc is None
            if not a_in_regs:
                deps += self._smem_operand(a, line, "a")
            else:
                deps.append(a.src)
                self._region().frag[site] = max(1, M * K * eb // 4 // (WARP * W))
            deps += self._smem_operand(b, line, "b")
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
            rep_k = max(1, K // kk)
            n_inst = rep_m * rep_n * rep_k * batch * mult
            flops = n_inst * 2 * 16 * 8 * kk
            deps = deps_acc[:]
            # operands into registers in the dot-operand layout: ldmatrix from shared memory
            for x, rows, which in ((a, 16 * rep_m, "a"), (b, 8 * rep_n, "b")):
                nbytes = rows * K * eb * batch
                if x.lsrc is None and x is a:
                    deps.append(x.src)            # computed in registers (e.g. P): converted in registers
                    self._region().frag[(site, which)] = max(1, M * K * eb // 4 // (WARP * W))
                    continue
                # Triton's prefetch pass keeps two k-slices of each shared-memory operand in registers
                self._region().frag[(site, which)] = max(1, rows * min(K, 2 * kk) * eb * batch // 4 // WARP)
                hit = self._staged.get(("ldsm", id(x)))
                if hit is not None and hit[0]() is x:
                    deps.append(hit[1])           # loop-invariant operand: fragments loaded once (hoisted)
                    continue
                sdeps = self._smem_operand(x, line, which)
                ld = self._shared(OpKind.LOAD, max(1, nbytes // 512), 16, sdeps, "LDSM.16.M88.4", line)
                self._staged[("ldsm", id(x))] = (weakref.ref(x), ld)
                deps.append(ld)
            label = f"HMMA.16816.F32" + ("" if dt == "fp16" else f".{dt.upper()}") if kk == 16 else \
                f"HMMA.1688.F32.TF32" if dt == "tf32" else "IMMA.16832.S32.S8"
            op = self._emit(OpKind.MMA, Pipe.TENSOR, n_inst, deps, flops=flops, mma_dtype=_mma_key(dt),
                            label=label, line=line)
            instr = (16, 8, kk)
            self.stats.dots[key] = {"unit": "mma.sync (MMAv2)", "instr": f"m16n8k{kk}", "warpsPerCTA": list(wpc),
                                    "mma_per_warp": n_inst}
            version = 2
        out.src = op
        out.lay = mma_layout(out.shape, version, wpc, instr)
        self._region().acc[site] = max(1, batch * M * N // (WARP * W))
        self.stats.flops += 2.0 * batch * M * N * K * self._active_warps() // W

    def _smem_operand(self, x, line, which) -> list:
        """Deps making operand ``x`` available in shared memory: its async-copy wait, or a staging store."""
        src = x.src
        if src is not None and src.kind == OpKind.ASYNC_WAIT:
            return [src]
        return self._stage(x, line)

    def _stage(self, x, line) -> list:
        """Registers -> shared memory for a dot operand (local_alloc): st.shared + barrier.  A loop-invariant
        operand is staged once (Triton hoists the allocation out of the loop)."""
        hit = self._staged.get(id(x))
        if hit is not None and hit[0]() is x:
            return [hit[1]]
        eb = x.dtype.itemsize
        numel = x.numel
        per_thread_bytes = max(eb, numel * eb // (WARP * self.W))
        bpl = min(16, per_thread_bytes)
        n = max(1, per_thread_bytes // bpl)
        s1 = self._shared(OpKind.STORE, n, bpl, [x.src], f"STS.{bpl * 8}", line)
        b = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
        self._staged[id(x)] = (weakref.ref(x), b)
        self._region().staging[(x.lsrc if x.lsrc is not None else C.user_site()[2], numel)] = numel * eb
        return [b]

    # ---- reductions --------------------------------------------------------------------------------
    def reduce(self, out, x, axis, kind, scan=False):
        lay = x.lay if (x.lay is not None and x.lay.shape == x.shape) else default_layout(x.shape, self.W)
        e = lay.ept_dim[axis]
        lanes = lay.lanes[axis]
        warps = lay.warps[axis]
        n_out = max(1, lay.ept // max(1, e))
        dt = x.dtype
        if dt.is_floating() and kind == "add":
            self.stats.flops += (x.numel - max(1, out.numel)) * (self._active_warps() // self.W)
        per = 2 if kind in ("argmax", "custom") else 1
        pipe = Pipe.FP32 if dt.is_floating() else Pipe.INT
        if dt is C.float64:
            pipe = Pipe.FP64
        line = C.user_line()[1]
        deps = [x.src]
        last = None
        if e > 1:
            last = self._alu(pipe, (e - 1) * n_out * per, deps, "FADD" if kind == "add" else "FMNMX", line)
            deps = [last]
        steps = int(math.log2(lanes)) if lanes > 1 else 0
        for _ in range(steps):
            sh = self._emit(OpKind.ALU, Pipe.LSU, n_out * per, deps, label="SHFL.BFLY", line=line)
            last = self._alu(pipe, n_out * per, [sh], "FADD" if kind == "add" else "FMNMX", line)
            deps = [last]
        if warps > 1:
            eb = max(4, dt.itemsize)
            s1 = self._shared(OpKind.STORE, n_out, eb, deps, "STS", line)
            b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
            l1 = self._shared(OpKind.LOAD, n_out * warps, eb, [b1], "LDS", line)
            c = self._alu(pipe, n_out * (warps - 1) * per, [l1], "FADD" if kind == "add" else "FMNMX", line)
            b2 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [c], label="BAR.SYNC", line=line)
            last = b2
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
                          flops=int(o.flops), mma_dtype=o.mma_dtype, label=o.label))
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


def _alu_cost(kind, dt, ins, src_dtype):
    """(pipe, instructions per element, SASS-like label) of an elementwise op producing ``dt``."""
    name = dt.name
    half = name in _FP16ISH
    if kind in ("add", "sub", "mul", "fma", "fmnmx", "abs"):
        if dt.is_floating():
            if half:
                return Pipe.FP16, 0.5, {"add": "HADD2", "sub": "HADD2", "mul": "HMUL2", "fma": "HFMA2"}.get(
                    kind, "HMNMX2")
            if name == "fp64":
                return Pipe.FP64, 1, "DADD" if kind != "mul" else "DMUL"
            return Pipe.FP32, 1, {"add": "FADD", "sub": "FADD", "mul": "FMUL", "fma": "FFMA",
                                  "abs": "FADD.FTZ"}.get(kind, "FMNMX")
        wide = 2 if dt.primitive_bitwidth == 64 else 1
        return (Pipe.FP32 if kind == "mul" else Pipe.INT), wide, "IMAD" if kind == "mul" else "IADD3"
    if kind == "addptr":
        return Pipe.INT, 2, "IMAD.WIDE"
    if kind in ("truediv",):
        return Pipe.FP64, 10, "DDIV"
    if kind in ("floordiv", "mod"):
        const = any(x.v.shape[0] == 1 and not x.shape for x in ins[1:2])
        return Pipe.INT, 4 if const else 12, "IMAD.HI"
    if kind in ("and", "or", "xor", "lop"):
        return Pipe.INT, 1, "LOP3"
    if kind in ("shl", "shr"):
        return Pipe.INT, 1, "SHF"
    if kind in ("icmp",):
        return Pipe.INT, 1, "ISETP"
    if kind == "fcmp":
        return Pipe.FP32, (0.5 if any(x.dtype.name in _FP16ISH for x in ins) else 1), "FSETP"
    if kind in ("sel",):
        return Pipe.INT, 1, "SEL"
    if kind == "imnmx":
        return Pipe.INT, 1, "IMNMX"
    if kind == "arange":
        return Pipe.INT, 1, "IADD3"
    if kind == "s2r":
        return Pipe.UNIFORM, 1, "S2UR"
    if kind == "cvt":
        if half or (src_dtype is not None and src_dtype.name in _FP16ISH):
            return Pipe.FP16, 0.5, "F2FP.PACK_AB" if half else "HADD2.F32"
        if name == "fp64" or (src_dtype is not None and src_dtype.name == "fp64"):
            return Pipe.FP64, 1, "F2F.F64"
        return Pipe.FP32, 1, "I2F" if dt.is_floating() else "F2I"
    if kind == "icvt":
        return Pipe.INT, 1, "SGXT"
    if kind == "exp2":
        return Pipe.SFU, 1, "MUFU.EX2"
    if kind == "log2":
        return Pipe.SFU, 1, "MUFU.LG2"
    if kind == "rsqrt":
        return Pipe.SFU, 1, "MUFU.RSQ"
    if kind == "sqrt":
        return Pipe.SFU, 1, "MUFU.SQRT"
    if kind in ("sin", "cos"):
        return Pipe.FP32, 20, "FFMA"      # libdevice __nv_sinf/__nv_cosf polynomial
    if kind == "erf":
        return Pipe.FP32, 15, "FFMA"
    if kind == "frnd":
        return Pipe.FP32, 1, "FRND"
    if kind in ("trans", "mov", "shfl"):
        return Pipe.INT, 0, "MOV"
    if dt.is_floating():
        return Pipe.FP32, 1, "FADD"
    return Pipe.INT, 1, "IADD3"


# ---------------------------------------------------------------------------------------------------------
# registers and shared memory
# ---------------------------------------------------------------------------------------------------------

def register_estimate(stats: Stats, num_warps: int) -> tuple[int, dict]:
    """Registers per thread: 24 (program ids, strides, loop counters, predicates) + the largest, over loops, of
    (fp32 dot accumulators/results + dot operand fragments held in registers + tiles loaded into registers in
    that loop) + up to two 64-bit addresses per memory op (further vectors of a tile are immediate offsets).
    Returns (estimate before the 255 cap, basis)."""
    key, reg = None, Region()
    for k, r in stats.regions.items():
        if r.regs() > reg.regs() or (key is None and r.regs() == reg.regs() and r.regs()):
            key, reg = k, r
    basis = {
        "base": 24,
        "dot_accumulators": int(sum(reg.acc.values())),
        "dot_operand_fragments": int(sum(reg.frag.values())),
        "loop_loaded_tiles": int(sum(reg.loads.values())),
        "addresses": int(sum(stats.addr_regs.values())),
    }
    return int(sum(basis.values())), basis


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
