"""Sampled timing: replay the waves that represent a large grid and extrapolate the rest.

Picture a grid of many waves (a wave: CTAs per SM x SMs, the CTAs resident at once). After the first CTAs retire,
the CTA scheduler hands out a new CTA each time one finishes, and the chip settles into a *steady state*: each
successive wave's worth of CTAs (``W`` dispatches) takes the same time, moves the same DRAM bytes and hits the L2
as often, because every SM runs the same kind of CTA against a memory system in the same state. Replaying that
steady state wave after wave teaches nothing new. So the sampled engine (``SampledEngine``) replays the grid in
dispatch order, but marks the instant CTA ``a*W`` is dispatched (wave mark ``a``) and snapshots there its counters
(time, DRAM and L2 traffic, stall cycles). Once a window of ``2k`` intervals between marks (``k >= STEADY_HALF``,
the shortest that works, so that a periodic pattern such as a GROUP_M swizzle's fits in it) has halves that agree
and a mean known within the tolerance -- cycles per interval within ``TIME_TOL`` (standard error std / sqrt(2k)),
DRAM traffic within ``COUNTER_TOL`` (std x sqrt(2) / 2k, as a periodic pattern moves the mean only at the window's
ends) -- and was measured after the L2 reached its own steady state (full, its dirty lines no longer growing by more
than ``L2_DIRTY_TOL`` an interval, for ``L2_SETTLE`` intervals, unless the kernel's whole footprint fits in it: a
stream's stores stay dirty some waves after the L2 is full of lines, and the write-backs start when the dirty
lines stop growing), it *skips* the middle: the next CTA dispatched is the
first of the last ``TAIL_WAVES`` whole waves and the partial last wave, whose real traces then run to the end, so
the tail's wave quantization and drain are replayed, not guessed. Before the jump the skipped CTAs' last lines
(``WARM_L2`` times the L2's lines) go through the L2's tags without time or counts (functional warming), so the
tail meets the cache the skipped waves would have left. The skipped ``M`` CTAs (a whole number ``M / W`` of waves)
add their share afterwards, at the mean rate of every interval since the L2 settled (the window and the intervals
before it: a periodic excursion longer than the window, such as a stream's echo of the L2's turnover, then counts in
its share):

    cycles   = cycles of the replayed CTAs + (M / W) x steady cycles per wave
    counter  = counter of the replay        + (M / W) x steady counter per wave

for DRAM bytes read/written, L1/L2 sectors and hits, row misses, stall cycles, active SM cycles and resident warp-
cycles (achieved occupancy); instructions issued add the skipped CTAs' exact count from the trace. Counts that
need no timing (instructions executed, requests, sectors per request, bank conflicts) always come from the whole
trace (``metrics.trace_counts``), and functional execution is never sampled: every output of every CTA is
computed.

A grid of at least ``FILL_MIN_WAVES`` waves whose footprint overflows the L2 spends most of its head filling
the L2, at a rate the steady state never shows again. It fast-forwards the fill: at wave mark ``FILL_HEAD`` the
next whole waves' lines go through the L2's tags (functional warming, dirty lines pushed out written back then)
until it holds ``L2_FULL`` of its lines, their CTAs count as retired, and they are added at the mean rate of the
intervals before (cycles and counters, as above). The replay goes on with a full L2 to its steady state.

What sampling cannot represent falls back to the exact replay, with the reason (``plan``): fewer than
``MIN_WAVES`` waves; CTAs whose work differs (a data-dependent trip count, a causal mask's gradient across the
grid: instructions or sectors per CTA spread beyond ``WORK_CV_TOL``, per wave beyond ``WAVE_WORK_TOL``); global
atomics (their contention depends on every CTA's timing); grid synchronization (a cooperative launch); a recorded
timeline (every warp is drawn). When no steady state shows before the tail, the replay simply runs to the end:
exact. Deterministic: the marks and the decision depend only on simulated times. Units: SM clock cycles; W in
CTAs.

What it cannot see: a replay whose state drifts after the window (in DRAM-bound streaming kernels with L2 write-
backs the busiest DRAM channel's queue keeps growing through the exact replay: its last waves run slower and its
resident warps thin out, which the steady window does not show), so cycles can land a few percent off and achieved
occupancy / stall cycles more (``benchmarks/sampling.py --suite`` measures it per suite case).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..config import GPUConfig, load_gpu
from ..trace import KernelTrace, OpKind, Space, _POPCOUNT4
from . import forked, loops
from .engine import Engine, EngineResult, active_cycles, union_length
from .occupancy import occupancy

#: the reason of an exact replay the caller asked for (``exact=True``, ``--exact``)
ASKED = "asked for"
#: grids of fewer waves are replayed exactly (a sampled run replays at least about five waves anyway)
MIN_WAVES = 6
#: the steady window's halves hold at least this many wave intervals each (2 let a slow drift after a short window
#: through: the naive attention's softmax at 2048 came out -2.5% against the exact replay; 3: +0.3%)
STEADY_HALF = 3
#: the halves' cycles agree within this share of their mean, and the window's mean cycles per interval is known
#: within it (standard error std / sqrt(intervals))
TIME_TOL = 0.01
#: the same for DRAM bytes (read + written) per interval (standard error std x sqrt(2) / intervals)
COUNTER_TOL = 0.02
#: whole waves replayed before the partial last wave (they warm the tail's caches as the skipped waves would)
TAIL_WAVES = 1
#: per-CTA work (warp instructions, global sectors): coefficient of variation above which CTAs are not alike
WORK_CV_TOL = 0.10
#: per-wave work: largest deviation of a whole wave's total from the median wave's
WAVE_WORK_TOL = 0.02
#: the L2 counts as full (evicting) when it holds this share of its lines
L2_FULL = 0.95
#: the L2 counts as settled when it is full and its dirty lines grew by at most this share since the last mark
L2_DIRTY_TOL = 0.02
#: wave intervals left out after the L2 first fills (the transient of its first write-backs)
L2_SETTLE = 2
#: functional warming at the skip: the skipped CTAs' last lines put through the L2, this many times its lines
WARM_L2 = 1.5
#: grids of at least this many waves whose footprint overflows the L2 fast-forward the L2's fill: after
#: ``FILL_HEAD`` wave marks the following waves' lines go through the L2's tags (functional warming) until it is
#: full, and those waves are extrapolated at the rate of the intervals before (a stream's fill is most of its
#: head: 9 of the 24 waves a 2^26 vector add replays to its steady state)
FILL_MIN_WAVES = 100
FILL_HEAD = 4


@dataclass
class SamplingPlan:
    """Whether a launch is sampled, and why not when it is not.

    ``sampled`` False: ``reason`` says why the replay is exact.  ``ctas_per_wave``: W; ``waves``: n_ctas / W;
    ``fits_l2``: the kernel's footprint (an upper bound: the union of each op's address range) fits in the L2's
    LRU capacity, so the L2 never evicts and is in its steady state from the start."""

    sampled: bool
    reason: str = ""
    ctas_per_wave: int = 0
    waves: float = 0.0
    fits_l2: bool = False
    cta_inst: np.ndarray | None = field(default=None, repr=False)     # warp instructions per CTA


@dataclass
class SamplingInfo:
    """What a run did: ``mode`` "sampled" or "exact"; for a sampled run the waves replayed of the total and the
    steady state measured (``wave_cycles``: cycles per wave, mean of the steady intervals); ``reason``: why
    exact (an empty string when the user asked for exact)."""

    mode: str
    reason: str = ""
    waves_total: float = 0.0
    waves_replayed: float = 0.0
    waves_skipped: int = 0
    ctas_skipped: int = 0
    ctas_per_wave: int = 0
    head_waves: int = 0
    wave_cycles: float = 0.0
    #: waves of the L2's fill fast-forwarded (functional warming), extrapolated at the rate before the fill
    fill_waves: int = 0
    #: cycles and DRAM bytes of each interval between wave marks the replay saw (at most the first 200)
    intervals: list = field(default_factory=list)

    def line(self) -> str:
        """One line for the report: ``sampled: 5 of 32 waves ...`` or ``exact (...)``."""
        if self.mode == "sampled":
            return (f"sampled: {_w(self.waves_replayed)} of {_w(self.waves_total)} waves replayed "
                    f"({self.head_waves} to steady state, then the last {_w(self.waves_replayed - self.head_waves)}); "
                    f"{self.waves_skipped - self.fill_waves} waves of {self.ctas_per_wave:,} CTAs extrapolated at "
                    f"{self.wave_cycles:,.0f} cycles each"
                    + (f", {self.fill_waves} of the L2's fill fast-forwarded" if self.fill_waves else ""))
        return "exact" + (f" ({self.reason})" if self.reason else "")

    def to_dict(self) -> dict:
        return {"mode": self.mode, "reason": self.reason, "waves_total": self.waves_total,
                "waves_replayed": self.waves_replayed, "waves_skipped": self.waves_skipped,
                "ctas_skipped": self.ctas_skipped, "ctas_per_wave": self.ctas_per_wave,
                "head_waves": self.head_waves, "wave_cycles": self.wave_cycles, "fill_waves": self.fill_waves,
                "intervals": self.intervals,
                "line": self.line()}


def _w(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}"


# ---- the decision: is the grid made of alike CTAs? ------------------------------------------------------------

def cta_work(trace: KernelTrace) -> tuple[np.ndarray, np.ndarray]:
    """Per CTA (linear id): warp instructions executed and global/local 32 B sectors requested."""
    n = trace.n_ctas
    inst = np.zeros(n, np.int64)
    sectors = np.zeros(n, np.int64)
    for t in trace.tables:
        wpc = t.warps_per_cta
        lo, hi = t.first_cta, t.first_cta + t.n_ctas
        n_inst = np.array([op.n_inst for op in t.ops], np.int64)
        if t.active is None:
            inst[lo:hi] = int(n_inst.sum()) * wpc
        else:
            per_warp = n_inst @ (t.active != 0)
            inst[lo:hi] = per_warp.reshape(t.n_ctas, wpc).sum(axis=1)
        sec = np.zeros(t.n_warps, np.int64)
        for op in t.ops:
            m = op.mem
            if m is None or m.space == Space.SHARED or m.ptr is None or m.smask is None or not len(m.smask):
                continue
            cs = np.concatenate(([0], np.cumsum(_POPCOUNT4[m.smask])))
            sec += cs[m.ptr[1:]] - cs[m.ptr[:-1]]
        sectors[lo:hi] = sec.reshape(t.n_ctas, wpc).sum(axis=1)
    return inst, sectors


def _dirty_flat(before: int, now: int) -> bool:
    """The L2's dirty lines (a count) grew by at most ``L2_DIRTY_TOL`` from ``before`` to ``now``."""
    return now <= (1 + L2_DIRTY_TOL) * before


def footprint_bound_bytes(trace: KernelTrace) -> int:
    """An upper bound of the bytes of global/local memory the kernel touches: the union, over ops and tables, of
    each op's range of 128 B lines (a strided access's gaps count, so it is never below the true footprint)."""
    ranges = []
    for t in trace.tables:
        for op in t.ops:
            m = op.mem
            if m is None or m.space == Space.SHARED or m.line is None or not len(m.line):
                continue
            ranges.append((int(m.line.min()), int(m.line.max()) + 1))
    if not ranges:
        return 0
    return int(union_length(ranges)) * 128


def _spread(x: np.ndarray) -> float:
    """Coefficient of variation (std / mean) of ``x``; 0 for an empty or all-zero array."""
    if not len(x):
        return 0.0
    mu = float(x.mean())
    return float(x.std()) / mu if mu else 0.0


def plan(trace: KernelTrace, gpu: GPUConfig | str = "h100", *, record_timeline: bool = False) -> SamplingPlan:
    """Decide whether ``trace``'s replay can be sampled (see the module docstring), without replaying it."""
    gpu = load_gpu(gpu)
    occ = occupancy(gpu, trace.threads_per_cta, trace.regs_per_thread, trace.shared_bytes_per_cta, trace.name)
    W = max(1, occ.ctas_per_sm * gpu.chip.sm_count)
    n = trace.n_ctas
    waves = n / W

    def exact(reason: str) -> SamplingPlan:
        return SamplingPlan(False, reason, W, waves)

    if waves < MIN_WAVES:
        return exact(f"{_w(waves)} waves of {W:,} CTAs: fewer than {MIN_WAVES}, small enough to replay whole")
    if record_timeline:
        return exact("a timeline was asked for: every warp is replayed")
    if trace.meta.get("cooperative"):
        return exact("a cooperative launch (grid synchronization): every CTA waits for all the others")
    why = loops.couples_ctas(trace)
    if why:
        return exact(why)
    inst, sectors = cta_work(trace)
    for name, x in (("warp instructions", inst), ("global sectors", sectors)):
        cv = _spread(x)
        if cv > WORK_CV_TOL:
            return exact(f"CTAs differ in work ({name} per CTA vary by {100 * cv:.0f}% (std/mean): a "
                         f"data-dependent trip count or a work gradient across the grid)")
        full = (n // W) * W
        per_wave = x[:full].reshape(-1, W).sum(axis=1).astype(np.float64)
        med = float(np.median(per_wave))
        if med and float(np.abs(per_wave - med).max()) / med > WAVE_WORK_TOL:
            dev = float(np.abs(per_wave - med).max()) / med
            return exact(f"waves differ in work ({name} per wave differ by up to {100 * dev:.1f}% from the median "
                         f"wave: a work gradient across the grid)")
    cap = gpu.l2_stream_bytes() - gpu.l2.dirty_at_launch_bytes
    return SamplingPlan(True, "", W, waves, fits_l2=footprint_bound_bytes(trace) <= cap, cta_inst=inst)


# ---- the sampled replay ---------------------------------------------------------------------------------------

class SampledEngine(Engine):
    """The engine with a CTA scheduler that skips the steady middle of the grid (see the module docstring).

    ``run()`` returns the extrapolated ``EngineResult``; ``self.info`` says what was done (``SamplingInfo``).
    The CTAs' spans and warp lifetimes it returns are those of the replayed CTAs, on the replay's clock."""

    def __init__(self, trace: KernelTrace, gpu: GPUConfig | str, sampling_plan: SamplingPlan, **kw):
        super().__init__(trace, gpu, **kw)
        self.plan = sampling_plan
        self.W = sampling_plan.ctas_per_wave
        self.marks: list[dict] = []          # wave marks: the state when CTA a*W is dispatched
        self.skip_at: int | None = None      # the wave mark at which the middle was skipped
        self.window = 0                      # wave intervals of the steady window that passed the test
        self.settled = 0                     # the first wave mark of the settled history (the rates' start)
        self.ctas_skipped = 0
        # waves of the L2's fill fast-forwarded at wave mark FILL_HEAD (CTAs FILL_HEAD * W on); None: not tried
        self.fill: int | None = None
        full = self.n_ctas // self.W
        # the first CTA of the tail: the last TAIL_WAVES whole waves and the partial wave
        self.tail_first = (full - TAIL_WAVES) * self.W
        self.l2_lines_total = self.mem.l2_capacity * len(self.mem.l2_sets)
        self.info = SamplingInfo("exact", "no steady state before the tail: every CTA replayed",
                                 waves_total=self.n_ctas / self.W, waves_replayed=self.n_ctas / self.W,
                                 ctas_per_wave=self.W)

    def _mark(self) -> dict:
        mem = self.mem
        st = mem.stats
        return {"t": self.env.now, "stall": list(self.stall_cycles), "mem": st.as_dict(),
                "dram": st.dram_rd_bytes + st.dram_wr_bytes,
                "l2_full": self._l2_lines() >= L2_FULL * self.l2_lines_total, "l2_dirty": sum(mem.l2_ndirty)}

    def _l2_lines(self) -> int:
        return sum(len(s) for s in self.mem.l2_sets)

    def _take_next_cta(self) -> int:
        cid = self.next_cta
        if self.skip_at is None and cid % self.W == 0 and cid > 0:
            self.marks.append(self._mark())
            if self.fill is None and len(self.marks) == FILL_HEAD and self.plan.waves >= FILL_MIN_WAVES \
                    and not self.plan.fits_l2 and not self.marks[-1]["l2_full"]:
                cid = self._fast_forward_fill(cid)
            elif self._steady() and self.tail_first - cid >= self.W:
                skip = self.tail_first - cid
                self.skip_at = len(self.marks)
                self.ctas_skipped = skip
                self.ctas_done += skip           # counted as retired (progress, and the end-of-grid test)
                self._warm(cid, self.tail_first)
                cid = self.tail_first
        self.next_cta = cid + 1
        return cid

    def _fast_forward_fill(self, cid: int) -> int:
        """Put whole waves from CTA ``cid`` on through the L2's tags (functional warming, in dispatch order) until
        it is full and its dirty lines stopped growing (by more than ``L2_DIRTY_TOL`` over a wave), leaving at
        least ``3 * STEADY_HALF + L2_SETTLE`` waves before the tail; count them as retired; return the CTA to
        dispatch next.  ``run`` adds their time and counters at the rate of the intervals
        measured before (``self.fill``)."""
        target = L2_FULL * self.l2_lines_total
        room = self.tail_first - (3 * STEADY_HALF + L2_SETTLE) * self.W
        waves = 0
        chunk = max(1, self.W // 4)
        dirty_before = None                  # the L2's dirty lines a wave ago, once it is full of lines
        while cid + self.W <= room:
            full = self._l2_lines() >= target
            dirty = sum(self.mem.l2_ndirty)
            if full and dirty_before is not None and _dirty_flat(dirty_before, dirty):
                break                        # full and its dirty lines flat: the settled L2 (see ``_steady``)
            dirty_before = dirty if full else None
            for lo in range(cid, cid + self.W, chunk):
                lines, masks, stores = _accesses(self.trace, lo, min(lo + chunk, cid + self.W))
                # (the dirty lines it pushes out -- those dirty at launch -- are written back now, as they
                # would have been during the fill)
                self.mem.warm_l2(lines.tolist(), masks.tolist(), stores.tolist(), write_back_at=self.env.now)
            cid += self.W
            waves += 1
        self.ctas_done += waves * self.W
        self.fill = waves
        return cid

    def _warm(self, lo: int, hi: int) -> None:
        """Functional warming: leave the L2 as the skipped CTAs ``[lo, hi)`` would have left it, by putting the
        lines of the last of them (at least ``WARM_L2`` times the L2's lines, or all) through its tags, chunk
        by chunk of ``W // 4`` CTAs in dispatch order, without time or counts."""
        target = WARM_L2 * self.l2_lines_total
        chunk = max(1, self.W // 4)
        parts = []
        got = 0
        c_hi = hi
        while c_hi > lo and got < target:
            c_lo = max(lo, c_hi - chunk)
            acc = _accesses(self.trace, c_lo, c_hi)
            parts.append(acc)
            got += len(acc[0])
            c_hi = c_lo
        for lines, masks, stores in reversed(parts):
            self.mem.warm_l2(lines.tolist(), masks.tolist(), stores.tolist())

    def _steady(self) -> bool:
        """Has the replay reached its steady state?  Among the intervals between wave marks measured after the L2
        reached its own steady state, find the shortest window of ``2k`` intervals (``k >= STEADY_HALF``) whose
        halves agree and whose mean is known within the tolerance: cycles per interval within ``TIME_TOL``, DRAM
        bytes within ``COUNTER_TOL`` -- a window at least as long as any period of the pattern (a GROUP_M
        swizzle's) passes; noisy intervals need a long window, or never pass (exact).  Marks start at CTA W (the
        first retirement), so the first wave's ramp is never in a window.  Sets ``self.window``."""
        marks = self.marks
        start = 0
        if not self.plan.fits_l2:
            # the start of the trailing run of marks where the L2 is full and its dirty lines flat
            start = len(marks)
            while start > 0 and marks[start - 1]["l2_full"] and (
                    start < 2 or _dirty_flat(marks[start - 2]["l2_dirty"], marks[start - 1]["l2_dirty"])):
                start -= 1
            start += L2_SETTLE
        avail = len(marks) - 1 - start
        for k in range(STEADY_HALF, avail // 2 + 1):
            win = marks[-(2 * k + 1):]
            for key, tol in (("t", TIME_TOL), ("dram", COUNTER_TOL)):
                x = np.array([m[key] for m in win], np.float64)
                dx = np.diff(x)
                a, b = x[k] - x[0], x[-1] - x[k]
                mean = float(dx.mean())
                if key == "t" and mean <= 0:
                    break
                # the halves agree, and the window's mean is known to within tol: its standard error, std / sqrt(2k)
                # for cycles (a transient's or the dispatch's noise); for DRAM bytes std * sqrt(2) / 2k, the shift
                # the window's two ends give a periodic pattern (a GROUP_M swizzle alternates L2 hits wave by wave)
                se = float(dx.std()) / (math.sqrt(2 * k) if key == "t" else math.sqrt(2 * k * k))
                if abs(a - b) > tol * 0.5 * (a + b) or se > tol * mean:
                    break
            else:
                self.window = 2 * k
                self.settled = start
                return True
        return False

    def run(self, progress=None) -> EngineResult:
        res = super().run(progress=progress)
        m = self.marks[:201]
        intervals = [[round(b["t"] - a["t"], 1),
                      b["mem"]["dram_rd_bytes"] + b["mem"]["dram_wr_bytes"] - a["mem"]["dram_rd_bytes"]
                      - a["mem"]["dram_wr_bytes"]] for a, b in zip(m, m[1:])]
        self.info.intervals = intervals
        fill = self.fill or 0
        if fill:
            # the fast-forwarded fill, at the rate of the intervals before it (marks start at CTA W: the first
            # wave's ramp is left out)
            lo = FILL_HEAD * self.W
            self._extrapolate(res, self.marks[:FILL_HEAD], fill, lo, lo + fill * self.W)
        if self.skip_at is None:
            if fill:
                self.info.waves_skipped = fill
                self.info.ctas_skipped = fill * self.W
                self.info.waves_replayed -= fill
                self.info.reason = (f"no steady state before the tail: every CTA replayed but {fill} waves of the "
                                    f"L2's fill")
            return res
        # the rates: every interval since the L2 settled, not only the window that passed the test -- a periodic
        # excursion longer than the window (a stream's echo of the L2's turnover, one interval in ten 20% slower)
        # then counts in its share instead of being missed (2^26 vector add vs exact: -2.1% -> -0.5%)
        win = self.marks[min(self.settled, self.skip_at - (self.window + 1)):self.skip_at]
        waves_skipped = self.ctas_skipped // self.W
        wave_cycles = self._extrapolate(res, win, waves_skipped, self.tail_first - self.ctas_skipped,
                                        self.tail_first)
        replayed = (self.n_ctas - self.ctas_skipped) / self.W - fill
        self.info = SamplingInfo("sampled", "", waves_total=self.n_ctas / self.W, waves_replayed=replayed,
                                 waves_skipped=waves_skipped + fill, ctas_skipped=self.ctas_skipped + fill * self.W,
                                 ctas_per_wave=self.W, head_waves=self.skip_at,
                                 wave_cycles=wave_cycles, intervals=intervals, fill_waves=fill)
        return res

    def _extrapolate(self, res: EngineResult, win: list[dict], waves: int, cta_lo: int, cta_hi: int) -> float:
        """Add to ``res`` ``waves`` waves at the mean rate of the intervals between the marks ``win`` (cycles and
        the engine's counters), and the exact instructions of CTAs ``[cta_lo, cta_hi)``; return the cycles per
        wave."""
        k = len(win) - 1
        f = waves / k                            # extrapolated waves per measured interval
        t_lo, t_hi = win[0]["t"], win[-1]["t"]
        wave_cycles = (t_hi - t_lo) / k
        res.memory = {key: int(round(v + f * (win[-1]["mem"][key] - win[0]["mem"][key])))
                      for key, v in res.memory.items()}
        res.stall_cycles = {r: v + f * (win[-1]["stall"][i] - win[0]["stall"][i])
                            for i, (r, v) in enumerate(res.stall_cycles.items())}
        res.sm_active_cycles = res.sm_active_cycles + f * active_cycles(res.cta_spans, t_lo, t_hi)
        res.sm_warp_cycles = res.sm_warp_cycles + f * _warp_cycles_between(res.warps, t_lo, t_hi)
        res.inst_issued = res.inst_issued + int(self.plan.cta_inst[cta_lo:cta_hi].sum())
        res.cycles = res.cycles + waves * wave_cycles
        return wave_cycles


def _accesses(trace: KernelTrace, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The global/local lines CTAs ``[lo, hi)`` touch, each once, in order of its last touch (op by op, the
    CTAs' warps in order within an op), with the union of its sector masks and whether a store wrote it."""
    ls, ms, ss = [], [], []
    for t in trace.tables:
        a, b = max(lo, t.first_cta), min(hi, t.first_cta + t.n_ctas)
        if a >= b:
            continue
        w0, w1 = (a - t.first_cta) * t.warps_per_cta, (b - t.first_cta) * t.warps_per_cta
        for op in t.ops:
            m = op.mem
            if m is None or m.space == Space.SHARED or m.ptr is None or m.line is None:
                continue
            e0, e1 = int(m.ptr[w0]), int(m.ptr[w1])
            if e1 > e0:
                ls.append(m.line[e0:e1])
                ms.append(m.smask[e0:e1])
                ss.append(np.full(e1 - e0, op.kind == OpKind.STORE, np.uint8))
    if not ls:
        z = np.zeros(0, np.int64)
        return z, z.astype(np.uint8), z.astype(np.uint8)
    lines, masks, stores = np.concatenate(ls), np.concatenate(ms), np.concatenate(ss)
    order = np.argsort(lines, kind="stable")
    sl = lines[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(sl)) + 1))
    m_or = np.bitwise_or.reduceat(masks[order], starts)
    s_or = np.maximum.reduceat(stores[order], starts)
    last = np.maximum.reduceat(order, starts)
    o2 = np.argsort(last)
    return sl[starts][o2], m_or[o2], s_or[o2]


def _warp_cycles_between(warps: dict[int, list], lo: float, hi: float) -> float:
    """Resident warp-cycles in [lo, hi): each warp's lifetime clipped to the interval, summed."""
    if not warps:
        return 0.0
    a = np.array([(v[4], v[5]) for v in warps.values()], np.float64)
    return float(np.clip(np.minimum(a[:, 1], hi) - np.maximum(a[:, 0], lo), 0.0, None).sum())


def run_sampled(trace: KernelTrace, gpu: GPUConfig | str = "h100", *, sampling: bool | None = None,
                record_timeline: bool = False, policy: str | None = None, progress=None) -> EngineResult:
    """Replay ``trace``: sampled where ``plan`` allows it (``sampling`` None or True, the default), else -- or
    with ``sampling=False`` -- exactly.  The result's ``sampling`` says what was done (``SamplingInfo.to_dict``)."""
    gpu = load_gpu(gpu)
    if sampling is False:
        eng = Engine(trace, gpu, record_timeline=record_timeline, policy=policy)
        res = eng.run(progress=progress)
        waves = trace.n_ctas / max(1, eng.occ.ctas_per_sm * gpu.chip.sm_count)
        info = SamplingInfo("exact", ASKED, waves_total=waves, waves_replayed=waves,
                            ctas_per_wave=eng.occ.ctas_per_sm * gpu.chip.sm_count)
    else:
        p = plan(trace, gpu, record_timeline=record_timeline)
        if not record_timeline:
            res = _loop_sampled(trace, gpu, p, policy, progress)
            if res is not None:
                return res
        if p.sampled:
            eng = SampledEngine(trace, gpu, p, record_timeline=record_timeline, policy=policy)
            res = eng.run(progress=progress)
            info = eng.info
        else:
            res = Engine(trace, gpu, record_timeline=record_timeline, policy=policy).run(progress=progress)
            info = SamplingInfo("exact", p.reason, waves_total=p.waves, waves_replayed=p.waves,
                                ctas_per_wave=p.ctas_per_wave)
    res.sampling = info.to_dict()
    return res


#: waves a sampled replay typically replays (to steady state, then the tail): the share of the grid it costs
_WAVES_REPLAYED = 8


def _loop_sampled(trace: KernelTrace, gpu: GPUConfig, p: SamplingPlan, policy, progress) -> EngineResult | None:
    """Loop sampling (``loops``) on top of the wave plan, where it applies and pays; None otherwise."""
    share = min(1.0, _WAVES_REPLAYED / p.waves) if p.sampled and p.waves else 1.0
    if loops.replay_work(trace, share) < loops.LOOP_MIN_WORK:
        return None                                  # cheap already: do not even look for the loop
    found = loops.find_loops(trace)
    if not loops.worth_sampling(trace, found, share):
        return None
    R = found[0].repeats
    t1, t2 = (loops.truncate(trace, found, j) for j in (loops.J1, loops.J2))
    # the two replays are independent: on two cores, the first in a forked child (forked.both)
    runs = forked.both(lambda: run_sampled(t1, gpu, policy=policy),
                       lambda: run_sampled(t2, gpu, policy=policy, progress=progress))
    res = loops.combine(runs[0], runs[1], loops.J1, loops.J2, R)
    inner = runs[1].sampling
    lp = found[0]
    line = (f"loop sampled: {R} repeats of a {lp.period}-op loop body replayed at {loops.J1} and {loops.J2}, the "
            f"rest extrapolated per repeat; each replay {inner.get('line', 'exact')}")
    cap = gpu.l2_stream_bytes()
    if footprint_bound_bytes(trace) > cap >= footprint_bound_bytes(loops.truncate(trace, found, loops.J2)):
        res.notes.append("loop sampled: the truncated replays' operands fit in the L2 but the whole loop's do not, so "
                         "the DRAM bytes (and L2 hit rate) extrapolated from them miss the loop's capacity misses; "
                         "`--exact` replays the whole loop")
    res.sampling = {**inner, "mode": "sampled", "reason": "", "loop": {"repeats": R, "period": lp.period,
                                                                       "start": lp.start, "j": [loops.J1, loops.J2]},
                    "line": line}
    return res
