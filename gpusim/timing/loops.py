"""Loop sampling: replay a long loop's first iterations twice and extrapolate its cost per iteration.

A CTA of a tiled matmul or of FlashAttention spends almost all its time in one loop (over K, over the key
blocks), each iteration issuing the same instructions against the next tile: after the pipeline fills, every
iteration costs the chip the same cycles and moves the same bytes. The trace has every iteration written out
(a table's op list is the loop unrolled), so a replay of ``R`` iterations costs ``R`` times one.

``find_loop`` looks in each table's op list for the longest run of ops that repeats with a period ``P``: op
``i`` and op ``i + P`` alike (kind, pipe, instructions, source line, label, the memory op's space, width and
number of lines, and every warp's active lanes), ``R`` repeats starting at op ``s``. ``truncate`` builds the
same trace with the loop cut to its first ``j`` repeats (the ops after it kept, their dependences on the loop's
last repeats moved onto the last kept one). The grid is replayed at ``j1`` and ``j2`` repeats (each replay
itself sampled by waves when the grid allows), and every quantity the engine measures is extrapolated linearly
in the trip count:

    X(R) = X(j2) + (R - j2) x (X(j2) - X(j1)) / (j2 - j1)

for cycles, instructions issued, stall cycles, active and warp cycles, and the memory counters (DRAM bytes,
L1/L2 sectors and hits). Counts from the trace (instructions executed, requests, bank conflicts) come from the
whole trace as always, and every output was computed by the front end for every iteration.

When: only where the replay is long (``LOOP_MIN_WORK`` warp-ops of replay would be spent) and the loop is long
(``R >= LOOP_MIN_REPEATS``) with the same trip count in every table; never for an exact replay (``--exact``,
validation), a timeline, atomics or grid synchronization (the wave plan's exclusions). What it cannot see: a
change of the memory system's state that grows with the trip count (the truncated CTAs touch ``j / R`` of their
operands, so a footprint that fits in the L2 at ``j`` repeats but not at ``R`` reads fewer bytes from DRAM per
iteration than the full loop); DEVIATIONS.md measures it. Units: ops, repeats, SM clock cycles.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from ..trace import KernelTrace, OpKind, OpTable, Space

#: loops of fewer repeats are not looked for (and sampling one needs ``2 * J2`` repeats to pay: ``pays``)
LOOP_MIN_REPEATS = 48
#: the two truncated replays keep this many repeats (the pipeline is full after a few iterations, but the slope
#: between 8 and 16 still carries the DRAM queues' and the L2's start: 1.6-2.4% off on a latency-bound loop of
#: 200, 0.9-1.5% with 16 and 32); the environment variable GPUSIM_LOOP_J="8,16" sets them, for experiments
#: (DEVIATIONS.md measures the default)
J1, J2 = (int(x) for x in os.environ.get("GPUSIM_LOOP_J", "16,32").split(","))
#: replays estimated below this many warp-op events (summed over the warps replayed) are not worth sampling
LOOP_MIN_WORK = 30_000_000
#: the loop must cover at least this share of a table's ops
LOOP_MIN_SHARE = 0.5


@dataclass(frozen=True)
class Loop:
    """A periodic run of ops in one table: ops ``[start, start + period * repeats)`` are ``repeats`` copies."""

    start: int
    period: int
    repeats: int

    @property
    def end(self) -> int:
        return self.start + self.period * self.repeats


def _signatures(t: OpTable) -> np.ndarray:
    """An integer per op: equal for ops alike in everything the engine times, except their addresses."""
    ids: dict[tuple, int] = {}
    out = np.empty(len(t.ops), np.int64)
    for i, op in enumerate(t.ops):
        m = op.mem
        ms = None
        if m is not None:
            n_lines = int(m.ptr[-1]) if m.ptr is not None else -1
            wf = int(m.wavefronts.sum()) if m.wavefronts is not None else -1
            ms = (int(m.space), m.bytes_per_lane, m.bytes_requested, n_lines, wf)
        key = (int(op.kind), int(op.pipe), op.n_inst, op.line, op.label, op.flops, op.mma_dtype, len(op.deps), ms)
        out[i] = ids.setdefault(key, len(ids))
    if t.active is not None:
        # active lanes: ops alike only when every warp's lanes agree (a data-dependent mask breaks the period)
        rows = np.ascontiguousarray(t.active).view(np.dtype((np.void, t.active.shape[1] * t.active.itemsize)))
        _, inv = np.unique(rows.ravel(), return_inverse=True)
        out = out * (int(inv.max()) + 1) + inv.reshape(-1)
    return out


def _candidate_periods(sig: np.ndarray, most: int = 6) -> list[int]:
    """The most frequent distances between consecutive occurrences of the same signature."""
    order = np.argsort(sig, kind="stable")
    s = sig[order]
    gaps = np.diff(order)[s[1:] == s[:-1]]
    if not len(gaps):
        return []
    vals, counts = np.unique(gaps, return_counts=True)
    return [int(v) for v in vals[np.argsort(-counts, kind="stable")][:most]]


def _periodic_deps_start(t: OpTable, start: int, end: int, P: int) -> int:
    """The first op from which ops ``[.., end)`` have dependences that repeat with period ``P``: an op's dependence
    on an op of the loop moves with the repeat; a dependence on an op before the loop stays, or moves into the loop
    (the pipeline's prologue loads, waited on by the first repeats, then the loop's own loads)."""
    s = start
    for i in range(s + P, end):
        a, b = t.ops[i].deps, t.ops[i - P].deps
        for x, y in zip(a, b):
            if not (x == y + P or (y < s and x == y)):
                s = i - P + 1                # op i - P is not part of the loop
                break
    return s


def find_loop(t: OpTable) -> Loop | None:
    """The periodic run covering the most ops of ``t`` (``LOOP_MIN_REPEATS`` repeats or more), or None."""
    n = len(t.ops)
    if n < 2 * LOOP_MIN_REPEATS:
        return None
    sig = _signatures(t)
    best: Loop | None = None
    for P in _candidate_periods(sig):
        if P <= 0 or P * LOOP_MIN_REPEATS > n:
            continue
        eq = sig[:-P] == sig[P:]
        # the longest run of True in eq: a periodic stretch of len + P ops
        e = np.concatenate(([0], eq.astype(np.int8), [0]))
        d = np.diff(e)
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        if not len(starts):
            continue
        k = int(np.argmax(ends - starts))
        end = int(ends[k]) + P
        if (end - int(starts[k])) // P < LOOP_MIN_REPEATS:
            continue
        start = _periodic_deps_start(t, int(starts[k]), end, P)
        cand = Loop(start, P, (end - start) // P)
        if cand.repeats >= LOOP_MIN_REPEATS and (best is None or cand.period * cand.repeats >
                                                  best.period * best.repeats):
            best = cand
    if best is None or best.period * best.repeats < LOOP_MIN_SHARE * n:
        return None
    return best


def find_loops(trace: KernelTrace) -> list[Loop] | None:
    """One loop per table, all with the same number of repeats; None when any table has none."""
    loops = []
    for t in trace.tables:
        lp = find_loop(t)
        if lp is None:
            return None
        loops.append(lp)
    if len({lp.repeats for lp in loops}) != 1:
        return None
    return loops


def _truncate_table(t: OpTable, lp: Loop, j: int) -> OpTable:
    s, P, R = lp.start, lp.period, lp.repeats
    cut = s + j * P                       # ops [cut, end) are dropped
    shift = (R - j) * P

    def move(d: int) -> int:
        if d < cut:
            return d
        m = d - shift                     # an op of the dropped repeats or after the loop: the same op j repeats on
        if m < s:
            m = s + (d - s) % P
        return m

    ops = list(t.ops[:cut])
    for op in t.ops[lp.end:]:
        deps = tuple(move(d) for d in op.deps)
        ops.append(op if deps == op.deps else replace(op, deps=deps))
    active = None
    if t.active is not None:
        active = np.concatenate((t.active[:cut], t.active[lp.end:]))
    return OpTable(t.first_cta, t.n_ctas, t.warps_per_cta, ops, active)


def truncate(trace: KernelTrace, loops: list[Loop], j: int) -> KernelTrace:
    """``trace`` with each table's loop cut to its first ``j`` repeats."""
    tables = [_truncate_table(t, lp, j) for t, lp in zip(trace.tables, loops)]
    return replace(trace, tables=tables)


def replay_work(trace: KernelTrace, replayed_share: float) -> float:
    """Warp-op events a replay of ``replayed_share`` of the grid's CTAs costs (ops x warps, summed over tables)."""
    return replayed_share * sum(len(t.ops) * t.n_warps for t in trace.tables)


def couples_ctas(trace: KernelTrace) -> str:
    """Why the CTAs' timings depend on one another so that no subset stands for the rest ('' if they do not):
    grid synchronization, or global atomics (their contention, a spin lock's hand-offs)."""
    for _t, _i, op in trace.iter_ops():
        if op.kind == OpKind.GRID_SYNC:
            return "grid synchronization: every CTA waits for all the others"
        if op.kind == OpKind.ATOMIC and op.mem is not None and op.mem.space != Space.SHARED:
            return "global atomics: their contention depends on every CTA's timing"
    return ""


def worth_sampling(trace: KernelTrace, loops: list[Loop] | None, replayed_share: float) -> bool:
    """Whether loop sampling applies and pays: a common loop of ``LOOP_MIN_REPEATS`` or more repeats, truncation
    to ``J2`` halving the replay at least, and a replay of ``LOOP_MIN_WORK`` warp-op events or more."""
    if not loops or loops[0].repeats < max(LOOP_MIN_REPEATS, 2 * J2):
        return False
    if couples_ctas(trace):
        return False
    return replay_work(trace, replayed_share) >= LOOP_MIN_WORK


def extrapolate(x1: float, x2: float, j1: int, j2: int, repeats: int) -> float:
    """The value at ``repeats`` of a quantity linear in the trip count, measured at ``j1`` and ``j2`` repeats."""
    return x2 + (repeats - j2) * (x2 - x1) / (j2 - j1)


def _stretch(t, lo: float, f: float):
    return t if t is None else lo + (t - lo) * f


def combine(r1, r2, j1: int, j2: int, repeats: int):
    """The ``EngineResult`` of the whole loop from the replays at ``j1`` and ``j2`` repeats (``extrapolate`` on
    every measured quantity; the occupancy, notes and launch overhead of the ``j2`` replay; its CTA spans and warp
    lifetimes stretched onto the extrapolated clock)."""
    def ex(a, b):
        return extrapolate(float(a), float(b), j1, j2, repeats)

    res = replace(r2)
    res.cycles = ex(r1.cycles, r2.cycles)
    res.inst_issued = int(round(ex(r1.inst_issued, r2.inst_issued)))
    res.stall_cycles = {k: max(0.0, ex(r1.stall_cycles.get(k, 0.0), v)) for k, v in r2.stall_cycles.items()}
    res.memory = {k: max(0, int(round(ex(r1.memory.get(k, 0), v)))) for k, v in r2.memory.items()}
    res.sm_active_cycles = max(0.0, ex(r1.sm_active_cycles, r2.sm_active_cycles))
    res.sm_warp_cycles = max(0.0, ex(r1.sm_warp_cycles, r2.sm_warp_cycles))
    res.sim_events = r1.sim_events + r2.sim_events
    lo = r2.launch_overhead_cycles
    f = res.cycles / r2.cycles if r2.cycles else 1.0
    res.cta_spans = [(c, sm, _stretch(a, lo, f), _stretch(b, lo, f)) for c, sm, a, b in r2.cta_spans]
    res.warps = {u: [*v[:4], _stretch(v[4], lo, f), _stretch(v[5], lo, f)] for u, v in r2.warps.items()}
    return res
