"""Counterfactual replays: the same recorded trace on an idealized variant of the chip.

This is the timing room's answer to "where did the cycles go?".  The front end is not re-run: the kernel's
recorded ``KernelTrace`` is transformed (its memory requests, its shared-memory wavefronts, its grid) and/or the
``GPUConfig`` is overridden, and the engine replays it.  The cycles an idealization saves are the cycles that
cause cost.  Each variant removes one cause and keeps everything else as recorded:

``coalescing``      perfect coalescing: every global/local memory request of a warp touches the fewest 32 B sectors
                    and 128 B lines its active lanes' bytes need (32 lanes x 4 B: 4 sectors in 1 line), on fresh
                    lines laid out in request order; identical requests share their fresh lines, so reuse stays
                    reuse (``perfectly_coalesced``).  A request already at the minimum, or one whose bytes are not
                    carried by lanes (a TMA bulk copy: one lane asks for a whole box), is left as recorded.
``bank_conflicts``  no bank conflicts: one wavefront per shared-memory request phase (the trace's
                    ``shared_ideal_wavefronts``: 1 for a 4 B access, 2 for 8 B, 4 for 16 B).
``divergence``      no divergence: op by op, the threads of a CTA's partially active warps are compacted into full
                    warps, and each partial warp pays its share of the compacted warps' cost (``compaction``:
                    ``ceil(active threads / 32) / partial warps`` of its issue slots and pipe time, and an ALU op of
                    its result latency).  A warp that ran both halves of a 50/50 branch then takes the time of one
                    side; a lone partial warp (a bounds check's last warp, an ``if tid == 0``) keeps its cost.
                    Memory requests, their latency and barriers are unchanged (the same bytes move; every warp
                    meets its barriers).
``occupancy``       occupancy unlimited by registers and shared memory: as many CTAs per SM as the hardware's
                    warp, thread and CTA slots allow; the L1 keeps the size the real carve-out leaves it.
``tail_wave``       no partial last wave (a wave: CTAs per SM x SMs): a grid of more than one wave is rounded up to
                    whole waves with copies of its first CTAs whose global/local lines are moved to fresh addresses
                    (same pattern, new data), replayed, and the time after launch overhead and before drain is
                    scaled back by ``n_ctas / n_ctas_rounded``.  A grid of a fraction ``f`` of one wave (empty CTA
                    slots, idle SMs) is instead packed at full occupancy on the SMs it fills, with ``f`` of the DRAM
                    and L2 bandwidth, and its time scaled by ``f`` (the same answer as rounding up, within a few
                    percent, for one replay of the grid instead of ``1/f``).
``dram_bandwidth``  DRAM bandwidth unlimited: 10^9 GB/s at 100 % efficiency and no row-miss cost (latency kept).
``memory_latency``  memory latency zero: L1 hit, L2 near/far, L2 atomic and DRAM latencies 0 cycles (the crossbar
                    keeps the engine's minimum of 1 cycle per hop; bandwidths, shared-memory latency kept).

The first five are causes in the kernel (what its author can change); a variant that cannot change anything is
*not applicable* (no replay; e.g. no shared memory, every request already minimal, full waves).  The last two are
limits of the chip: always replayed.  Every replay is deterministic (same trace and config: the same cycles).
Units: cycles are SM clock cycles.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from ..config import GPUConfig, load_gpu
from ..trace import WARP, KernelTrace, MemAccess, OpKind, OpTable, Space, _POPCOUNT4
from .engine import Engine, EngineResult
from .sampling import run_sampled
from .occupancy import occupancy
from .sm import _ALU, _ATOM, _LOAD, _STORE

#: (key, cause as printed "without <cause>", kind): kind "kernel" = the kernel's own cause, "chip" = a limit
IDEALS: tuple[tuple[str, str, str], ...] = (
    ("coalescing", "uncoalesced memory access", "kernel"),
    ("bank_conflicts", "bank conflicts", "kernel"),
    ("divergence", "divergence", "kernel"),
    ("occupancy", "occupancy limit (registers/shared memory)", "kernel"),
    ("tail_wave", "partial last wave", "kernel"),
    ("dram_bandwidth", "DRAM bandwidth limit", "chip"),
    ("memory_latency", "memory latency", "chip"),
)
IDEAL_KEYS = tuple(k for k, _, _ in IDEALS)
#: DRAM bandwidth of the "unlimited" variant (GB/s): a sector then moves in ~1e-4 cycles
UNLIMITED_DRAM_GBPS = 1e9


@dataclass
class Counterfactual:
    """One idealized replay.  ``cycles`` is None when the idealization does not apply (``how`` says why)."""

    key: str
    cause: str
    kind: str                      # "kernel" | "chip"
    cycles: float | None           # SM cycles of the kernel on the idealized chip (tail_wave: scaled back)
    how: str                       # what the variant changed, or why it does not apply
    replay_s: float = 0.0          # host seconds the replay took

    @property
    def applicable(self) -> bool:
        return self.cycles is not None


# ---- trace transforms --------------------------------------------------------------------------------------

def _warp_threads(trace: KernelTrace, n_warps: int) -> np.ndarray:
    """Threads of each warp of a table of ``n_warps`` warps (the last warp of a CTA may be partial)."""
    wpc = trace.warps_per_cta
    per_cta = np.minimum(WARP, trace.threads_per_cta - WARP * np.arange(wpc))
    return np.tile(per_cta, n_warps // wpc).astype(np.int64)


# a sector mask reduced or grown to c sectors, keeping its own sectors first: _FIT[mask, c]
_FIT = np.zeros((16, 5), np.uint8)
for _m in range(16):
    _own = [b for b in range(4) if _m >> b & 1] + [b for b in range(4) if not _m >> b & 1]
    for _c in range(5):
        _FIT[_m, _c] = sum(1 << b for b in _own[:_c])
#: a request moves to fresh lines when it touches at least this many times the sectors its lanes need (a layout
#: change: strided or scattered lanes); below, it keeps its first lines (an alignment fix: the same data)
SCATTERED = 2
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xC2B2AE3D27D4EB4F)
_GLOBAL_KINDS = (OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC, OpKind.ASYNC_COPY)


def _active_lanes(t: OpTable, i: int) -> np.ndarray:
    return t.lanes(i) if t.active is not None else np.full(t.n_warps, WARP, np.uint8)


def _minimal(m: MemAccess, lanes: np.ndarray, n_inst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """For one global/local op: (sectors each warp requested, sectors its active lanes need, which warps request
    more than they need); None when no warp does or the op's bytes are not carried by its lanes (a TMA bulk copy:
    one lane asks for a whole box)."""
    if m.ptr is None or m.line is None or len(m.line) == 0:
        return None
    lanes = lanes.astype(np.int64)
    if m.bytes_requested > int(lanes.sum()) * m.bytes_per_lane * n_inst:
        return None
    want = -(-(lanes * m.bytes_per_lane) // 32) * n_inst
    cs = np.concatenate(([0], np.cumsum(_POPCOUNT4[m.smask])))
    have = cs[m.ptr[1:]] - cs[m.ptr[:-1]]
    change = want < have
    return (have, want, change) if change.any() else None


def perfectly_coalesced(trace: KernelTrace) -> tuple[KernelTrace, int, int] | None:
    """The trace with every global/local request at its minimum sectors, with the sectors requested before and
    after; None when every request is already minimal.

    A warp's request that touches more sectors than its active lanes' bytes need (``ceil(lanes x bytes / 32)`` per
    instruction) becomes that many sectors in the fewest 128 B lines (4 sectors each).  A scattered request (at least
    ``SCATTERED`` times the sectors it needs: strided or gathered lanes) moves to fresh lines: the data laid out as a
    coalesced kernel would read it, one request after another in trace order (consecutive warps, consecutive
    lines); requests that name the same lines and sectors (other warps reading the same data, a warp reading it
    again) get the same fresh lines, so that reuse stays reuse.  What the trace cannot tell -- lanes reading
    different bytes of the same sector in successive requests (a thread walking its own row) -- reads as reuse too,
    so such a kernel's ideal moves less data than a transposed layout would.  A merely misaligned request (less than
    ``SCATTERED`` times) keeps its first lines, its own sectors first: the same data, aligned, still shared with the
    neighbours that touch those lines."""
    plans = []                                       # (table index, op index, have, want, change, keys)
    keys_all, lines_all = [], []
    top = -1
    for ti, t in enumerate(trace.tables):
        for i, op in enumerate(t.ops):
            m = op.mem
            if m is None or m.space == Space.SHARED or op.kind not in _GLOBAL_KINDS:
                continue
            if m.line is not None and len(m.line):
                top = max(top, int(m.line.max()))
            got = _minimal(m, _active_lanes(t, i), op.n_inst)
            if got is None:
                continue
            have, want, change = got
            n_lines = np.diff(m.ptr)
            # a request's identity: an order-free hash of its (line, sector mask) entries, its size and need
            with np.errstate(over="ignore"):
                h = (m.line.astype(np.uint64) * np.uint64(16) + m.smask.astype(np.uint64) + np.uint64(1)) * _MIX
                h ^= h >> np.uint64(29)
                cs = np.concatenate(([np.uint64(0)], np.cumsum(h, dtype=np.uint64)))
                key = (cs[m.ptr[1:]] - cs[m.ptr[:-1]]) * _MIX2 + n_lines.astype(np.uint64) * _MIX \
                    + want.astype(np.uint64)
            spi = want // op.n_inst
            keep = np.minimum(n_lines, -(-spi // 4) * op.n_inst)
            plans.append((ti, i, have, want, change, keep))
            fresh = change & (have >= SCATTERED * want)
            keys_all.append(key[fresh])
            lines_all.append(keep[fresh])
    if not plans:
        return None
    keys = np.concatenate(keys_all)
    sizes = np.concatenate(lines_all)
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")         # fresh lines in order of first appearance
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    size_u = sizes[first][order]
    base_u = np.concatenate(([0], np.cumsum(size_u)))[:-1]
    fresh0 = -(-(top + 1) // (1 << 15)) * (1 << 15)  # past every line the kernel touches, on a 4 MB boundary
    base_of = fresh0 + base_u[rank[inverse]]         # per changed warp, in plan order
    tables = [list(t.ops) for t in trace.tables]
    before = after = 0
    at = 0
    for ti, i, have, want, change, keep in plans:
        t = trace.tables[ti]
        op = t.ops[i]
        m = op.mem
        fresh = change & (have >= SCATTERED * want)
        nc = int(fresh.sum())
        bases = np.zeros(len(change), np.int64)
        bases[fresh] = base_of[at:at + nc]
        at += nc
        n_lines = np.diff(m.ptr)
        new_n = np.where(change, keep, n_lines)
        ptr = np.zeros(len(m.ptr), np.int64)
        np.cumsum(new_n, out=ptr[1:])
        warp_of = np.repeat(np.arange(len(new_n)), new_n)
        pos = np.arange(int(ptr[-1])) - ptr[:-1][warp_of]
        ch = change[warp_of]
        fr = fresh[warp_of]
        src = m.ptr[:-1][warp_of] + pos                  # kept entries: the warp's first ones
        line = np.where(fr, bases[warp_of] + pos, m.line[src])
        kl = np.maximum(keep[warp_of], 1)
        w = want[warp_of]
        count = np.minimum(4, w // kl + (pos < w % kl))
        own = m.smask[src]
        smask = np.where(fr, np.left_shift(1, count) - 1, np.where(ch, _FIT[own, count], own)).astype(np.uint8)
        before += int(have.sum())
        after += int(np.where(change, want, have).sum())
        tables[ti][i] = dataclasses.replace(op, mem=MemAccess(space=m.space, bytes_per_lane=m.bytes_per_lane,
                                                               bytes_requested=m.bytes_requested, ptr=ptr,
                                                               line=line.astype(np.int64), smask=smask))
    out = [dataclasses.replace(t, ops=ops) for t, ops in zip(trace.tables, tables)]
    return dataclasses.replace(trace, tables=out), before, after


def without_bank_conflicts(trace: KernelTrace) -> tuple[KernelTrace, int, int] | None:
    """The trace with every shared-memory request at its ideal wavefronts, with the wavefronts before and after
    (over the warps that issue them); None when there is no conflict."""
    before = after = 0
    tables = []
    changed = False
    for t in trace.tables:
        ops = []
        for i, op in enumerate(t.ops):
            m = op.mem
            if m is not None and m.space == Space.SHARED and m.wavefronts is not None:
                live = _active_lanes(t, i) > 0
                b = int(m.wavefronts[live].sum())
                a = int(m.shared_ideal_wavefronts[live].sum())
                if b > a:
                    before += b
                    after += a
                    changed = True
                    op = dataclasses.replace(op, mem=dataclasses.replace(
                        m, wavefronts=np.minimum(m.wavefronts, m.shared_ideal_wavefronts).astype(np.int32)))
            ops.append(op)
        tables.append(dataclasses.replace(t, ops=ops))
    if not changed:
        return None
    return dataclasses.replace(trace, tables=tables), before, after


def compaction(trace: KernelTrace, t: OpTable) -> np.ndarray | None:
    """Per op and warp of table ``t`` (float32, ops x warps): the share of its cost a warp keeps when, op by op, the
    threads of each CTA's partially active warps are compacted into full warps -- ``ceil(lanes / 32) / warps``
    over the CTA's partial warps (a 50/50 branch in 8 warps: 0.5; one thread in each of 8 warps: 1/8; one partial
    warp, as a bounds check's last warp or a lone ``if tid == 0``: 1, nothing to merge).  1 for full and idle
    warps; None when no op of the table has a partial warp."""
    if t.active is None:
        return None
    full = _warp_threads(trace, t.n_warps)
    a = t.active.astype(np.int64)
    partial = (a > 0) & (a < full[None, :])
    if not partial.any():
        return None
    shape = (a.shape[0], t.n_ctas, t.warps_per_cta)
    lanes = np.where(partial, a, 0).reshape(shape).sum(axis=2)
    n_part = partial.reshape(shape).sum(axis=2)
    keep = -(-lanes // WARP) / np.maximum(n_part, 1)
    return np.where(partial, np.repeat(keep, t.warps_per_cta, axis=1), 1.0).astype(np.float32)


def divergent_fraction(trace: KernelTrace) -> tuple[int, int, float]:
    """(warp instructions issued with fewer active lanes than the warp has threads, all warp instructions, warp
    instructions compaction saves -- see ``compaction``)."""
    part = total = 0
    saved = 0.0
    for t in trace.tables:
        n_inst = np.array([op.n_inst for op in t.ops], np.int64)
        if t.active is None:
            total += int(n_inst.sum()) * t.n_warps
            continue
        full = _warp_threads(trace, t.n_warps)
        a = t.active.astype(np.int64)
        issued = a > 0
        total += int((issued.sum(axis=1) * n_inst).sum())
        part += int((((a < full[None, :]) & issued).sum(axis=1) * n_inst).sum())
        keep = compaction(trace, t)
        if keep is not None:
            saved += float(((1.0 - keep.astype(np.float64)).sum(axis=1) * n_inst).sum())
    return part, total, saved


def wave_rounded(trace: KernelTrace, ctas_per_wave: int) -> KernelTrace:
    """The trace with its grid rounded up to whole waves: CTA ``n + i`` replays CTA ``i``'s ops with its global and
    local lines moved past every line the kernel touches (the same pattern on fresh data)."""
    n = trace.n_ctas
    target = -(-n // ctas_per_wave) * ctas_per_wave
    lo, hi = None, None
    for t in trace.tables:
        for op in t.ops:
            m = op.mem
            if m is not None and m.space != Space.SHARED and m.line is not None and len(m.line):
                a, b = int(m.line.min()), int(m.line.max())
                lo = a if lo is None else min(lo, a)
                hi = b if hi is None else max(hi, b)
    span = 0 if lo is None else -(-(hi - lo + 1) // (1 << 15)) * (1 << 15)    # whole 4 MB blocks of lines
    tables = list(trace.tables)
    cta = n
    copy = 0
    while cta < target:
        copy += 1
        shift = copy * span
        for t in trace.tables:
            if cta >= target:
                break
            take = min(t.n_ctas, target - cta)
            tables.append(_table_copy(t, cta, take, shift))
            cta += take
    grid = (target, 1, 1)
    return dataclasses.replace(trace, tables=tables, grid=grid)


def _table_copy(t: OpTable, first_cta: int, n_ctas: int, shift: int) -> OpTable:
    """The first ``n_ctas`` CTAs of table ``t`` as a table starting at ``first_cta``, lines moved by ``shift``."""
    nw = n_ctas * t.warps_per_cta
    ops = []
    for op in t.ops:
        m = op.mem
        if m is not None:
            if m.space == Space.SHARED:
                m = dataclasses.replace(m, wavefronts=m.wavefronts[:nw],
                                        shared_ideal_wavefronts=m.shared_ideal_wavefronts[:nw])
            elif m.ptr is not None:
                end = int(m.ptr[nw])
                m = dataclasses.replace(m, ptr=m.ptr[:nw + 1].copy(), line=m.line[:end] + shift,
                                        smask=m.smask[:end],
                                        wavefronts=None if m.wavefronts is None else m.wavefronts[:nw])
            op = dataclasses.replace(op, mem=m)
        ops.append(op)
    active = None if t.active is None else t.active[:, :nw]
    return OpTable(first_cta=first_cta, n_ctas=n_ctas, warps_per_cta=t.warps_per_cta, ops=ops, active=active)


# ---- config variants -----------------------------------------------------------------------------------------

def _replace(gpu: GPUConfig, **sections: dict) -> GPUConfig:
    """A copy of ``gpu`` with parameters set to ideal values -- outside the physical ranges ``with_overrides``
    checks (a latency of 0, a bandwidth of 10^9 GB/s), so not checked."""
    out = gpu
    for sec, vals in sections.items():
        out = dataclasses.replace(out, **{sec: dataclasses.replace(getattr(out, sec), **vals)})
    return out


def unlimited_dram(gpu: GPUConfig) -> GPUConfig:
    return _replace(gpu, dram={"peak_bandwidth_gbps": UNLIMITED_DRAM_GBPS, "efficiency": 1.0, "row_miss_ns": 0.0})


def zero_latency(gpu: GPUConfig) -> GPUConfig:
    return _replace(gpu, l1={"hit_latency_cycles": 0},
                    l2={"near_latency_cycles": 0, "far_latency_cycles": 0, "atomic_latency_cycles": 0},
                    dram={"latency_cycles": 0})


# ---- engines of the idealized chips ----------------------------------------------------------------------------

class _UnlimitedOccupancyEngine(Engine):
    """The engine with as many CTAs per SM as the hardware's warp/thread/CTA slots allow (registers and shared
    memory unlimited); the memory system keeps the L1 the real carve-out leaves."""

    def __init__(self, trace, gpu, **kw):
        super().__init__(trace, gpu, **kw)
        lim = self.occ.limits
        ctas = min(lim["warps"], lim["ctas"], self.gpu.sm.max_threads // (self.occ.warps_per_cta * WARP))
        self.occ = dataclasses.replace(self.occ, ctas_per_sm=max(ctas, self.occ.ctas_per_sm), limiter="warps")


class _CompactedEngine(Engine):
    """The engine with divergent warps compacted: an ALU or memory op a warp issues with some of its threads
    inactive costs the share ``compaction`` gives it of its instructions' issue slots, pipe time and (ALU) result
    latency.  So a warp running both sides of a 50/50 branch takes the time of the compacted warps each running
    one side; a lone partial warp keeps its cost."""

    _SCALED = (_ALU, _LOAD, _STORE, _ATOM, int(OpKind.ASYNC_COPY))

    def __init__(self, trace, gpu, **kw):
        super().__init__(trace, gpu, **kw)
        self._compact_cache: dict[tuple, tuple] = {}
        self._keep: dict[int, np.ndarray | None] = {}

    def _stream(self, table: OpTable, wi: int):
        if id(table) not in self._keep:
            self._keep[id(table)] = compaction(self.trace, table)
        keep = self._keep[id(table)]
        if keep is None:
            return super()._stream(table, wi)
        col = table.active[:, wi]
        share = keep[:, wi]
        key = (id(table), col.tobytes(), share.tobytes())
        got = self._compact_cache.get(key)
        if got is None:
            cops = self.compiled(table)
            reasons = self.stall_reason_of(table)
            ops = []
            for k in np.flatnonzero(col).tolist():
                c = cops[k]
                f = float(share[k])
                if f < 1.0 and c[1] in self._SCALED:
                    x = c[7] * f if c[1] == _ALU else c[7]
                    c = c[:3] + (c[3] * f,) + c[4:5] + (c[5] * f, c[6] * f, x) + c[8:]
                ops.append(c)
            got = self._compact_cache[key] = self._allocate(ops, reasons)
        return got


# ---- the replays ------------------------------------------------------------------------------------------------

def _fmt_int(x: float) -> str:
    return f"{int(round(x)):,}"


def replay(key: str, trace: KernelTrace, gpu: GPUConfig | str = "h100", *, policy: str | None = None,
           sampling: bool | None = None) -> Counterfactual:
    """Replay ``trace`` on the chip idealized by ``key`` (one of ``IDEAL_KEYS``).  ``sampling``: as
    ``sampling.run_sampled`` (a large grid of alike waves is sampled; False: exact); the occupancy, divergence and
    tail-wave variants always replay exactly."""
    gpu = load_gpu(gpu)
    names = {k: (c, kind) for k, c, kind in IDEALS}
    if key not in names:
        raise KeyError(f"unknown idealization {key!r}; known: {', '.join(IDEAL_KEYS)}")
    cause, kind = names[key]
    t0 = time.perf_counter()

    def run(tr: KernelTrace, cfg: GPUConfig, cls=Engine) -> EngineResult:
        if cls is Engine and sampling is not False:   # a large grid of alike waves: sampled, as the report was
            return run_sampled(tr, cfg, policy=policy)
        return cls(tr, cfg, policy=policy).run(progress=None)

    def done(cycles: float | None, how: str) -> Counterfactual:
        return Counterfactual(key, cause, kind, cycles, how, time.perf_counter() - t0)

    if key == "coalescing":
        got = perfectly_coalesced(trace)
        if got is None:
            return done(None, "every global/local request already touches the fewest sectors its lanes need")
        tr, b, a = got
        return done(run(tr, gpu).cycles, f"global/local sectors requested {_fmt_int(b)} -> {_fmt_int(a)}")
    if key == "bank_conflicts":
        got = without_bank_conflicts(trace)
        if got is None:
            return done(None, "no shared-memory request has a bank conflict"
                        if _uses_shared(trace) else "no shared-memory access")
        tr, b, a = got
        return done(run(tr, gpu).cycles, f"shared-memory wavefronts {_fmt_int(b)} -> {_fmt_int(a)}")
    if key == "divergence":
        part, total, saved = divergent_fraction(trace)
        if not part:
            return done(None, "every warp instruction runs with all of its warp's threads active")
        if saved <= 0:
            return done(None, f"{100.0 * part / max(1, total):.1f}% of warp instructions run with inactive threads, "
                              f"but never in two warps of a CTA at once: nothing to compact")
        return done(run(trace, gpu, _CompactedEngine).cycles,
                    f"{100.0 * part / max(1, total):.1f}% of warp instructions ran with inactive threads; "
                    f"compacted into full warps: {100.0 * saved / max(1, total):.1f}% fewer")
    if key == "occupancy":
        base = _occ(trace, gpu)
        if base.limiter not in ("registers", "shared_memory"):
            slot = {"ctas": "CTA", "warps": "warp"}.get(base.limiter, base.limiter)
            return done(None, f"occupancy is limited by the hardware's {slot} slots "
                              f"({base.theoretical_pct:.1f}%), not by registers or shared memory")
        resident = base.ctas_per_sm * gpu.chip.sm_count
        if trace.n_ctas <= resident:
            return done(None, f"occupancy is limited by {base.limiter.replace('_', ' ')} "
                              f"({base.theoretical_pct:.1f}%), but all {trace.n_ctas:,} CTAs are resident at once "
                              f"already ({resident:,} fit)")
        eng = _UnlimitedOccupancyEngine(trace, gpu, policy=policy)
        res = eng.run(progress=None)
        return done(res.cycles, f"CTAs per SM {base.ctas_per_sm} -> {eng.occ.ctas_per_sm} "
                                f"(limited by {base.limiter.replace('_', ' ')})")
    if key == "tail_wave":
        occ = _occ(trace, gpu)
        per_wave = occ.ctas_per_sm * gpu.chip.sm_count
        n = trace.n_ctas
        if n % per_wave == 0:
            return done(None, f"the grid is {_waves(n // per_wave)} of {per_wave:,} CTAs")
        if n < per_wave:
            return done(*tail_by_packing(trace, gpu, occ.ctas_per_sm, policy))
        return done(*tail_by_rounding(trace, gpu, per_wave, policy))
    if key == "dram_bandwidth":
        return done(run(trace, unlimited_dram(gpu)).cycles,
                    f"DRAM {gpu.dram.peak_bandwidth_gbps * gpu.dram.efficiency:,.0f} GB/s sustained -> unlimited, "
                    f"no row-miss cost")
    # memory_latency
    return done(run(trace, zero_latency(gpu)).cycles,
                f"L1 {gpu.l1.hit_latency_cycles}, L2 {gpu.l2.near_latency_cycles}/{gpu.l2.far_latency_cycles}, "
                f"DRAM {gpu.dram.latency_cycles} cycles -> 0")


def tail_by_rounding(trace: KernelTrace, gpu: GPUConfig, per_wave: int, policy: str | None = None
                     ) -> tuple[float, str]:
    """Cycles without the partial last wave, by rounding the grid up to whole waves (``wave_rounded``) and scaling
    the run (after launch overhead, before drain) back by ``n_ctas / n_ctas_rounded``; and what it did."""
    n = trace.n_ctas
    tr = wave_rounded(trace, per_wave)
    res = Engine(tr, gpu, policy=policy).run(progress=None)
    fixed = res.launch_overhead_cycles + gpu.chip.drain_cycles
    cycles = fixed + (res.cycles - fixed) * n / tr.n_ctas
    return cycles, (f"grid {n:,} -> {tr.n_ctas:,} CTAs ({_waves(tr.n_ctas // per_wave)} of {per_wave:,}), time "
                    f"scaled back by {n:,}/{tr.n_ctas:,}")


def tail_by_packing(trace: KernelTrace, gpu: GPUConfig, ctas_per_sm: int, policy: str | None = None
                    ) -> tuple[float, str]:
    """Cycles without the partial last wave of a grid smaller than one wave (fraction ``f`` of its CTA slots): the
    grid packed at full occupancy on ``ceil(n_ctas / ctas_per_sm)`` SMs sharing ``f`` of the DRAM and L2 bandwidth
    -- a whole wave's load per SM and per byte of bandwidth, so it runs as long as a whole wave on the full chip --
    and the run scaled by ``f``.  It costs one replay of the grid itself, where rounding up would replay ``1/f``
    times the CTAs; the two agree within a few percent (tests/test_explain.py)."""
    n = trace.n_ctas
    per_wave = ctas_per_sm * gpu.chip.sm_count
    f = n / per_wave
    sms = -(-n // ctas_per_sm)
    packed = _replace(gpu, chip={"sm_count": sms},
                      dram={"peak_bandwidth_gbps": gpu.dram.peak_bandwidth_gbps * f},
                      l2={"bytes_per_clk_per_slice": gpu.l2.bytes_per_clk_per_slice * f})
    res = Engine(trace, packed, policy=policy).run(progress=None)
    fixed = res.launch_overhead_cycles + gpu.chip.drain_cycles
    cycles = fixed + (res.cycles - fixed) * f
    pct = f"{100 * f:.1f}%" if f >= 0.01 else f"{100 * f:.2g}%"
    return cycles, (f"{n:,} CTA{'s' if n > 1 else ''} fill{'s' if n == 1 else ''} {pct} of a wave's {per_wave:,} "
                    f"slots: packed on {sms} SM{'s' if sms > 1 else ''} with {pct} of the DRAM/L2 bandwidth, time "
                    f"scaled by {n:,}/{per_wave:,}")


def _waves(n: int) -> str:
    return "1 whole wave" if n == 1 else f"{n} whole waves"


def _occ(trace: KernelTrace, gpu: GPUConfig):
    return occupancy(gpu, trace.threads_per_cta, trace.regs_per_thread, trace.shared_bytes_per_cta, trace.name)


def _uses_shared(trace: KernelTrace) -> bool:
    return any(op.mem is not None and op.mem.space == Space.SHARED for _, _, op in trace.iter_ops())


def counterfactuals(trace: KernelTrace, gpu: GPUConfig | str = "h100", keys: tuple[str, ...] = IDEAL_KEYS, *,
                    policy: str | None = None, progress=None, sampling: bool | None = None) -> list[Counterfactual]:
    """Every idealization of ``keys`` replayed (or found not applicable), in the order of ``keys``.
    ``progress``, if given, is called with (done, total) after each; it only observes.  ``sampling``: see
    ``replay``."""
    gpu = load_gpu(gpu)
    out = []
    for k in keys:
        out.append(replay(k, trace, gpu, policy=policy, sampling=sampling))
        if progress is not None:
            progress(len(out), len(keys))
    return out
