"""The warp timeline: what every resident warp of an SM was doing, cycle by cycle, as bars.

The engine's event log (``EngineResult.timeline``, recorded with ``record_timeline=True``) holds one record
per interval a warp spent in one state: issuing a run of instructions, waiting for a load, at a barrier...
Here those records become bars on rows.  Picture the SM's warp slots as lanes of a running track, grouped by
sub-partition (the four warp schedulers): a CTA's warps take free slots when it is dispatched and give them
back when they exit, so one row shows the warps that used a slot one after another.  Rows are assigned here
(the lowest slot of the warp's sub-partition that is free when the warp arrives), which the engine's own
round-robin slot counter does not guarantee.

Issuing intervals whose instructions ran with fewer than 32 active lanes (a branch taken by part of the warp,
or the tail warp of a grid) get their own colour, "lanes masked off".  For a big kernel a deterministic subset
of SMs is shown (all their warps, the whole time span), and past a bar budget consecutive bars of a warp in the
same state are merged, then, as a last resort, binned in time; ``TimelineBars.notes`` says what was done.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from ..timing.sm import STALL_REASONS
from ..trace import WARP, KernelTrace, OpKind

# display categories: key, legend label, colour
CATEGORIES: list[tuple[str, str, str]] = [
    ("issuing", "issuing", "#2ca02c"),
    ("masked", "issuing, lanes masked off (divergence)", "#e377c2"),
    ("memory", "waiting on global memory", "#1f77b4"),
    ("shared", "waiting on shared memory", "#17becf"),
    ("barrier", "waiting at a barrier", "#d62728"),
    ("pipe", "waiting on a pipe (math, tensor)", "#ff7f0e"),
    ("other", "other", "#7f7f7f"),
]
CAT_INDEX = {k: i for i, (k, _, _) in enumerate(CATEGORIES)}
# engine state (index into STALL_REASONS) -> display category; "masked" is decided per interval
STATE_CATEGORY = {0: "issuing", 1: "other", 2: "memory", 3: "shared", 4: "barrier", 5: "pipe", 6: "pipe",
                  7: "memory", 8: "other", 9: "pipe", 10: "other", 11: "memory"}
STATE_MEANING = {0: "issuing (selected)", 1: "ready, not selected", 2: "waiting on global/local memory "
                 "(long_scoreboard)", 3: "waiting on shared memory (short_scoreboard)", 4: "waiting at a barrier",
                 5: "waiting on a busy pipe (math_pipe_throttle)", 6: "fixed-latency dependency (wait)",
                 7: "LSU queue full (lg_throttle)", 8: "MIO queue full (mio_throttle)",
                 9: "waiting on a tensor-core result (tensor_wait)", 10: "draining",
                 11: "waiting for a memory fence (membar)"}

DEFAULT_MAX_BARS = 15000


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---- which SMs, which rows ---------------------------------------------------------------------------------

def active_sms(report) -> list[int]:
    """SMs that ran at least one CTA, in order."""
    return sorted({sm for _, sm, _, _ in report.engine.cta_spans})


def sample_sms(report, max_sms: int | None = 8) -> list[int]:
    """Up to ``max_sms`` SMs spread evenly over those that ran CTAs (first and last included); deterministic."""
    act = active_sms(report)
    if max_sms is None or len(act) <= max_sms:
        return act
    if max_sms <= 1:
        return act[:1]
    idx = np.round(np.linspace(0, len(act) - 1, max_sms)).astype(int)
    return [act[i] for i in sorted(set(idx.tolist()))]


@dataclass
class WarpPlaces:
    """Where each warp is drawn: SM, sub-partition and row (slot) inside its sub-partition."""

    sm: dict[int, int]                       # uid -> SM
    sub: dict[int, int]                      # uid -> sub-partition
    row: dict[int, int]                      # uid -> row in its (SM, sub-partition)
    rows: dict[tuple[int, int], int]         # (SM, sub) -> number of rows

    stride: int = 64                         # rows a sub-partition may need at most (the SM's max warps)

    def slot(self, uid: int) -> int:
        """A slot number unique in the SM and stable across kernels: sub-partition * stride + row (the
        Chrome trace's tid)."""
        return self.sub[uid] * self.stride + self.row[uid]


def place_warps(report, sms: list[int] | None = None) -> WarpPlaces:
    """Assign every warp of the chosen SMs (all when None) a row: the lowest slot free when it arrives."""
    res = report.engine
    n_sub = report.config.sm.subpartitions if report.config is not None else 4
    cta_sm = {cta: sm for cta, sm, _, _ in res.cta_spans}
    want = None if sms is None else set(sms)
    sub_of: dict[int, int] = {}
    if res.timeline:
        for rec in res.timeline:
            if rec[2] not in sub_of:
                sub_of[rec[2]] = rec[1]
    groups: dict[tuple[int, int], list[tuple[float, int, float]]] = {}
    out_sm, out_sub = {}, {}
    for uid, (cta, _w, slot, _wi, t0, t1) in res.warps.items():
        sm = cta_sm.get(cta)
        if sm is None or (want is not None and sm not in want):
            continue
        sub = sub_of.get(uid, slot % n_sub)
        out_sm[uid], out_sub[uid] = sm, sub
        groups.setdefault((sm, sub), []).append((t0, uid, t1))
    rows: dict[tuple[int, int], int] = {}
    out_row: dict[int, int] = {}
    for key, ws in groups.items():
        ws.sort()
        busy: list[tuple[float, int]] = []    # (exit time, row) of warps holding a row
        free: list[int] = []
        n = 0
        for t0, uid, t1 in ws:
            while busy and busy[0][0] <= t0:
                heapq.heappush(free, heapq.heappop(busy)[1])
            if free:
                r = heapq.heappop(free)
            else:
                r, n = n, n + 1
            out_row[uid] = r
            heapq.heappush(busy, (t1, r))
        rows[key] = n
    stride = max([report.config.sm.max_warps if report.config is not None else 64] + list(rows.values()))
    return WarpPlaces(out_sm, out_sub, out_row, rows, stride)


# ---- what an issuing interval executed ----------------------------------------------------------------------

@dataclass(frozen=True)
class Issued:
    """What a warp executed in one issuing interval."""

    ops: tuple[int, ...]        # op indices into the warp's OpTable
    lanes: tuple[int, ...]      # active lanes of each
    n_inst: int                 # warp instructions issued
    n_masked: int               # of which with fewer than 32 active lanes
    fewest: int                 # fewest active lanes
    text: str                   # hover text: instructions, lanes, source lines


class OpDescriber:
    """Hover text for log records: the instructions a warp issued, their source lines and active lanes."""

    def __init__(self, report):
        self.trace: KernelTrace = report.trace
        self.res = report.engine
        self._table_cache: dict[int, tuple] = {}
        self._cache: dict[tuple, Issued] = {}
        self._wait_cache: dict[tuple, str] = {}

    def table(self, uid: int):
        """The OpTable warp ``uid`` runs and its warp index there."""
        got = self._table_cache.get(uid)
        if got is None:
            cta, _w, _slot, wi, _t0, _t1 = self.res.warps[uid]
            got = self._table_cache[uid] = (self.trace.table_of(cta)[0], wi)
        return got

    @staticmethod
    def op_name(op) -> str:
        return op.label or op.kind.name

    def interval(self, uid: int, first: int, last: int) -> Issued:
        """The ops warp ``uid`` executed in ``first..last`` (those its column of ``active`` marks)."""
        tab, wi = self.table(uid)
        col = None if tab.active is None else tab.active[first:last + 1, wi]
        key = (id(tab), first, last, None if col is None else col.tobytes())
        got = self._cache.get(key)
        if got is not None:
            return got
        if col is None:
            ops = tuple(range(first, last + 1))
            lanes = (WARP,) * len(ops)
        else:
            nz = np.flatnonzero(col)
            ops = tuple((nz + first).tolist())
            lanes = tuple(col[nz].tolist())
        n_inst = n_masked = 0
        for k, ln in zip(ops, lanes):
            ni = tab.ops[k].n_inst
            n_inst += ni
            if ln < WARP:
                n_masked += ni
        got = Issued(ops, lanes, n_inst, n_masked, min(lanes, default=WARP), self._describe(tab, ops, lanes))
        if len(self._cache) > 50000:
            self._cache.clear()
        self._cache[key] = got
        return got

    def issued(self, uid: int, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
        """Op indices the warp executed in ``first..last`` and the active lanes of each."""
        if first < 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        it = self.interval(uid, first, last)
        return np.array(it.ops, np.int64), np.array(it.lanes, np.int64)

    def _describe(self, tab, ops, lanes, max_ops: int = 4) -> str:
        parts = []
        for k, ln in zip(ops[:max_ops], lanes[:max_ops]):
            op = tab.ops[k]
            s = _esc(self.op_name(op)) + (f" ×{op.n_inst}" if op.n_inst > 1 else "") + f" (line {op.line})"
            if ln < WARP:
                s += f" [{ln}/32 lanes]"
            parts.append(s)
        if len(ops) > max_ops:
            parts.append(f"… +{len(ops) - max_ops} more ops")
        lines = list(dict.fromkeys(tab.ops[k].line for k in ops))
        src = []
        for ln in lines[:3]:
            text = self.trace.source_lines.get(ln, "").strip()
            if text:
                text = text if len(text) <= 70 else text[:67] + "..."
                src.append(f"line {ln}: {_esc(text)}")
        if len(lines) > 3:
            src.append(f"… +{len(lines) - 3} more lines")
        return "<br>".join(["ops " + ", ".join(parts)] + src) if parts else ""

    def describe_wait(self, uid: int, op_index: int) -> str:
        """For a stall record: the instruction waiting, and the earlier ops it waits for."""
        if op_index < 0:
            return ""
        tab, _ = self.table(uid)
        key = (id(tab), op_index)
        got = self._wait_cache.get(key)
        if got is None:
            got = self._wait_cache[key] = self._describe_wait(tab, op_index)
        return got

    def _describe_wait(self, tab, op_index: int) -> str:
        op = tab.ops[op_index]
        s = f"next: {_esc(self.op_name(op))} (line {op.line})"
        prod = [tab.ops[d] for d in op.deps if tab.ops[d].kind in (OpKind.LOAD, OpKind.ATOMIC, OpKind.MMA,
                                                                    OpKind.ASYNC_COPY)]
        if prod:
            s += " waits for " + ", ".join(f"{_esc(self.op_name(p))} (line {p.line})" for p in prod[:3])
            text = self.trace.source_lines.get(prod[0].line, "").strip()
            if text:
                s += f"<br>line {prod[0].line}: {_esc(text[:70])}"
        return s


# ---- the bars -------------------------------------------------------------------------------------------------

@dataclass
class TimelineBars:
    """Bars of one timeline figure, as parallel lists (one entry per bar), and what was done to them."""

    sms: list[int]
    n_sms_active: int
    n_sms_chip: int
    places: WarpPlaces
    y: list[int] = field(default_factory=list)            # row on the figure (0 = top)
    t0: list[float] = field(default_factory=list)
    t1: list[float] = field(default_factory=list)
    cat: list[int] = field(default_factory=list)          # index into CATEGORIES
    state: list[int] = field(default_factory=list)        # engine state (-1 for a binned bar)
    busy: list[float] = field(default_factory=list)       # cycles of the log records the bar stands for
    n_records: list[int] = field(default_factory=list)    # log records merged into the bar (0: binned)
    uid: list[int] = field(default_factory=list)          # warp (-1 for a binned bar)
    n_inst: list[int] = field(default_factory=list)       # warp instructions issued (issuing bars)
    n_masked: list[int] = field(default_factory=list)     # ... of which with lanes masked off
    fewest: list[int] = field(default_factory=list)       # fewest active lanes among them
    text: list[str] = field(default_factory=list)         # hover text: instructions, source lines, waits
    cat_cycles: list = field(default_factory=list)        # binned bars: cycles of each category in the bar
    row_labels: list[tuple[int, str]] = field(default_factory=list)   # (first row, "SM s · SP p") per group
    row_of_uid: dict[int, int] = field(default_factory=dict)
    n_rows: int = 0
    n_records_total: int = 0
    merged: str = ""                                      # "", "contiguous", "gaps" or "binned"
    bin_cycles: float = 0.0                               # bin width when binned
    notes: list[str] = field(default_factory=list)


# a raw bar: [t0, t1, cat, state, busy, n_records, first op, last op, n_inst, n_masked, fewest]
_T0, _T1, _CAT, _ST, _BUSY, _NREC, _FIRST, _LAST, _NINST, _NMASK, _FEW = range(11)


def _records_by_warp(report, sms: set[int]) -> dict[int, list[tuple]]:
    per: dict[int, list[tuple]] = {}
    for rec in report.engine.timeline or ():
        if rec[0] in sms:
            per.setdefault(rec[2], []).append(rec)
    for recs in per.values():
        recs.sort(key=lambda r: (r[3], r[4]))
    return per


def timeline_bars(report, max_sms: int | None = 8, max_bars: int = DEFAULT_MAX_BARS,
                  sms: list[int] | None = None) -> TimelineBars:
    """The bars of the warp timeline of ``report`` (needs ``record_timeline=True``).

    One bar per log record of the chosen SMs; when they are more than ``max_bars``, consecutive bars of a warp
    in the same category are merged (touching ones first, then across the smallest gaps), and if that is not
    enough each row is binned in time (``merged`` says which; ``notes`` says it in words).
    """
    n_chip = report.config.chip.sm_count if report.config is not None else len(active_sms(report))
    act = active_sms(report)
    chosen = sorted(sms) if sms is not None else sample_sms(report, max_sms)
    places = place_warps(report, chosen)
    tb = TimelineBars(sms=chosen, n_sms_active=len(act), n_sms_chip=n_chip, places=places)
    if len(chosen) < len(act):
        tb.notes.append(f"showing SM{'s' if len(chosen) > 1 else ''} {', '.join(map(str, chosen))} of {n_chip} "
                        f"({len(act)} ran CTAs): "
                        f"every warp of these SMs over the whole kernel")
    base: dict[tuple[int, int], int] = {}
    y = 0
    for sm in chosen:
        for sub in sorted(s for (m, s) in places.rows if m == sm):
            base[(sm, sub)] = y
            tb.row_labels.append((y, f"SM {sm} · SP {sub}"))
            y += places.rows[(sm, sub)]
    tb.n_rows = y
    per = _records_by_warp(report, set(chosen))
    tb.n_records_total = sum(len(v) for v in per.values())
    desc = OpDescriber(report)
    masked = CAT_INDEX["masked"]
    raw: dict[int, list[list]] = {}
    for uid in sorted(per):
        tb.row_of_uid[uid] = base[(places.sm[uid], places.sub[uid])] + places.row[uid]
        out = []
        for (_sm, _sub, _u, t0, t1, st, f, l) in per[uid]:
            cat = CAT_INDEX[STATE_CATEGORY.get(st, "other")]
            ni = nm = 0
            few = WARP
            if st == 0 and f >= 0:
                it = desc.interval(uid, f, l)
                ni, nm, few = it.n_inst, it.n_masked, it.fewest
                if nm:
                    cat = masked
            out.append([t0, t1, cat, st, t1 - t0, 1, f, l, ni, nm, few])
        raw[uid] = out
    n = tb.n_records_total
    if n > max_bars:
        n, tb.merged = _merge(raw, max_bars)
    if n > max_bars:
        _binned(tb, raw, max_bars)
        tb.merged = "binned"
        tb.notes.append(f"{tb.n_records_total:,} intervals are more than the figure's budget of {max_bars:,} "
                        f"bars: each row is drawn in time bins of {tb.bin_cycles:,.0f} cycles coloured by the "
                        f"state that filled most of the bin (hover for the shares)")
        return tb
    if tb.merged == "contiguous":
        tb.notes.append(f"consecutive intervals of a warp in the same state are merged into one bar "
                        f"({tb.n_records_total:,} intervals, {n:,} bars)")
    elif tb.merged == "gaps":
        tb.notes.append(f"consecutive intervals of a warp in the same state are merged into one bar, also across "
                        f"short gaps when the warp was ready but not selected ({tb.n_records_total:,} intervals, "
                        f"{n:,} bars; hover shows the cycles the merged intervals cover)")
    for uid, bars in raw.items():
        row = tb.row_of_uid[uid]
        for b in bars:
            tb.y.append(row)
            tb.t0.append(b[_T0])
            tb.t1.append(b[_T1])
            tb.cat.append(b[_CAT])
            tb.state.append(b[_ST])
            tb.busy.append(b[_BUSY])
            tb.n_records.append(b[_NREC])
            tb.uid.append(uid)
            tb.n_inst.append(b[_NINST])
            tb.n_masked.append(b[_NMASK])
            tb.fewest.append(b[_FEW])
            tb.text.append(_bar_text(desc, uid, b))
    return tb


def _bar_text(desc: OpDescriber, uid: int, b: list) -> str:
    head = ""
    if b[_NREC] > 1:
        head = f"{b[_NREC]} intervals merged, covering {b[_BUSY]:,.0f} of these cycles<br>"
    if b[_ST] == 0:
        return head + (desc.interval(uid, b[_FIRST], b[_LAST]).text if b[_FIRST] >= 0 else "")
    w = desc.describe_wait(uid, b[_FIRST])
    return head + STATE_MEANING.get(b[_ST], STALL_REASONS[b[_ST]]) + ("<br>" + w if w else "")


def _merge(raw: dict[int, list[list]], max_bars: int) -> tuple[int, str]:
    """Merge consecutive same-category bars of each warp: touching ones first ("contiguous"), then across the
    smallest gaps until the count fits ("gaps").  Returns the bar count (over budget if merging cannot reach
    it) and the kind of merge done."""
    total = 0
    for uid, bars in raw.items():
        out = []
        for b in bars:
            if out and out[-1][_CAT] == b[_CAT] and b[_T0] <= out[-1][_T1]:
                _absorb(out[-1], b)
            else:
                out.append(b)
        raw[uid] = out
        total += len(out)
    if total <= max_bars:
        return total, "contiguous"
    gaps = []
    for bars in raw.values():
        for i in range(1, len(bars)):
            if bars[i][_CAT] == bars[i - 1][_CAT]:
                gaps.append(bars[i][_T0] - bars[i - 1][_T1])
    need = total - max_bars
    if need > len(gaps):
        return total, "contiguous"
    gaps.sort()
    limit = gaps[need - 1]
    total = 0
    for uid, bars in raw.items():
        out = []
        for b in bars:
            if out and out[-1][_CAT] == b[_CAT] and b[_T0] - out[-1][_T1] <= limit:
                _absorb(out[-1], b)
            else:
                out.append(b)
        raw[uid] = out
        total += len(out)
    return total, "gaps"


def _absorb(a: list, b: list) -> None:
    """Merge bar ``b`` (the next one of the same warp and category) into ``a``."""
    if b[_BUSY] > a[_BUSY]:
        a[_ST] = b[_ST]          # the state that filled most of the merged time names it
    a[_T1] = max(a[_T1], b[_T1])
    a[_BUSY] += b[_BUSY]
    a[_NREC] += b[_NREC]
    if a[_FIRST] < 0:
        a[_FIRST] = b[_FIRST]
    if b[_LAST] >= 0:
        a[_LAST] = b[_LAST]
    a[_NINST] += b[_NINST]
    a[_NMASK] += b[_NMASK]
    a[_FEW] = min(a[_FEW], b[_FEW])


def _binned(tb: TimelineBars, raw: dict[int, list[list]], max_bars: int) -> None:
    """Coarsen to time bins per row, each drawn as one bar coloured by the category that filled most of it."""
    rows = [(tb.row_of_uid[u], b) for u, bars in raw.items() for b in bars]
    if not rows:
        return
    t0 = np.array([b[_T0] for _, b in rows], float)
    t1 = np.array([b[_T1] for _, b in rows], float)
    cat = np.array([b[_CAT] for _, b in rows], np.int64)
    row = np.array([r for r, _ in rows], np.int64)
    lo, hi = float(t0.min()), float(t1.max())
    nb = max(1, max_bars // max(1, len(np.unique(row))))
    width = max((hi - lo) / nb, 1e-9)
    tb.bin_cycles = width
    b0 = np.clip(((t0 - lo) / width).astype(np.int64), 0, nb - 1)
    b1 = np.clip(((t1 - lo) / width).astype(np.int64), 0, nb - 1)
    reps = b1 - b0 + 1
    idx = np.repeat(np.arange(len(t0)), reps)
    bins = b0[idx] + (np.arange(len(idx)) - np.repeat(np.cumsum(reps) - reps, reps))
    s = np.maximum(t0[idx], lo + bins * width)
    e = np.minimum(t1[idx], lo + (bins + 1) * width)
    dur = np.maximum(e - s, 0.0)
    ncat = len(CATEGORIES)
    cell = row[idx] * nb + bins
    n_cells = (int(row.max()) + 1) * nb
    acc = np.bincount(cell * ncat + cat[idx], weights=dur, minlength=n_cells * ncat).reshape(n_cells, ncat)
    first = np.full(n_cells, np.inf)
    last = np.full(n_cells, -np.inf)
    np.minimum.at(first, cell, s)
    np.maximum.at(last, cell, e)
    cells = np.flatnonzero(np.isfinite(first))
    dom = acc[cells].argmax(axis=1)
    prev = None
    for c, d in zip(cells.tolist(), dom.tolist()):
        r, b = divmod(c, nb)
        if prev is not None and prev[0] == r and prev[1] == b - 1 and prev[2] == d:
            i = len(tb.t1) - 1
            tb.t1[i] = float(last[c])
            prev[1] = b
            tb.cat_cycles[i] = tb.cat_cycles[i] + acc[c]
            tb.busy[i] = float(tb.cat_cycles[i].sum())
            continue
        tb.y.append(r)
        tb.t0.append(float(first[c]))
        tb.t1.append(float(last[c]))
        tb.cat.append(int(d))
        tb.state.append(-1)
        tb.busy.append(float(acc[c].sum()))
        tb.n_records.append(0)
        tb.uid.append(-1)
        tb.n_inst.append(0)
        tb.n_masked.append(0)
        tb.fewest.append(WARP)
        tb.text.append("")
        tb.cat_cycles.append(acc[c].copy())
        prev = [r, b, d]


def _row_places(tb: TimelineBars) -> dict[int, tuple[int, int, int]]:
    """Figure row -> (SM, sub-partition, slot)."""
    out = {}
    ends = [f for f, _ in tb.row_labels[1:]] + [tb.n_rows]
    for (first, lab), end in zip(tb.row_labels, ends):
        sm_s, sub_s = lab.split(" · ")
        for r in range(first, end):
            out[r] = (int(sm_s.split()[1]), int(sub_s.split()[1]), r - first)
    return out


# ---- the figure -------------------------------------------------------------------------------------------

def timeline_figure(report, max_sms: int | None = 8, max_bars: int = DEFAULT_MAX_BARS,
                    sms: list[int] | None = None):
    """The warp timeline of ``report`` as a plotly figure: rows grouped by SM and sub-partition, one row per
    warp slot, bars coloured by state; hover shows instructions, active lanes and source lines.

    ``max_sms`` SMs are sampled evenly among those that ran CTAs (``sms`` picks them instead); past
    ``max_bars`` bars, bars are merged or binned.  What was sampled or merged is said in the subtitle and in
    ``fig.layout.meta`` (``sms``, ``notes``, ``merged``, ``n_bars``, ``n_intervals``).
    """
    import plotly.graph_objects as go

    from .charts import TEMPLATE, _empty, _title, fit_top_margin

    fig = go.Figure(layout=dict(template=TEMPLATE))
    res = report.engine
    if res is None or not res.timeline:
        fig.update_layout(height=260, title=_title("Warp timeline", report))
        return _empty(fig, "no timeline recorded: simulate with record_timeline=True "
                           "(gpusim run --html / --trace does)")
    tb = timeline_bars(report, max_sms=max_sms, max_bars=max_bars, sms=sms)
    places = tb.places
    y = np.asarray(tb.y, np.int32)
    t0 = np.asarray(tb.t0, float)
    t1 = np.asarray(tb.t1, float)
    cat = np.asarray(tb.cat, np.int32)
    text = np.asarray(tb.text, object)
    info = res.warps
    binned = tb.merged == "binned"
    cd = np.zeros((len(y), 5 + (len(CATEGORIES) if binned else 5)), np.float32)
    if binned:
        where = _row_places(tb)
        if len(y):
            cd[:, 0:3] = [where[r] for r in tb.y]
            cd[:, 3] = t0
            cd[:, 4] = t1
            shares = np.asarray(tb.cat_cycles, float)
            cd[:, 5:] = 100.0 * shares / np.maximum(shares.sum(axis=1, keepdims=True), 1e-12)
    elif len(y):
        cd[:, 0] = [places.sm[u] for u in tb.uid]
        cd[:, 1] = [places.sub[u] for u in tb.uid]
        cd[:, 2] = [places.row[u] for u in tb.uid]
        cd[:, 3] = [info[u][0] for u in tb.uid]
        cd[:, 4] = [info[u][1] for u in tb.uid]
        cd[:, 5] = t0
        cd[:, 6] = t1
        cd[:, 7] = tb.n_inst
        cd[:, 8] = tb.n_masked
        cd[:, 9] = tb.fewest
    head = ("SM %{customdata[0]:.0f} · SP %{customdata[1]:.0f} · slot %{customdata[2]:.0f} · "
            "CTA %{customdata[3]:.0f} warp %{customdata[4]:.0f}<br>")
    span = "%{x:,.0f} cycles (%{customdata[5]:,.0f}–%{customdata[6]:,.0f})"
    bin_tmpl = ("SM %{customdata[0]:.0f} · SP %{customdata[1]:.0f} · slot %{customdata[2]:.0f}<br>"
                f"%{{customdata[3]:,.0f}}–%{{customdata[4]:,.0f}} (bins of {tb.bin_cycles:,.0f} cycles); "
                "share of the time logged:<br>" +
                "<br>".join(f"{lab}: %{{customdata[{5 + i}]:.0f}} %" for i, (_, lab, _) in enumerate(CATEGORIES)) +
                "<extra></extra>")
    for ci, (key, label, colour) in enumerate(CATEGORIES):
        m = cat == ci
        if not m.any():
            continue
        if binned:
            tmpl = bin_tmpl
        elif key in ("issuing", "masked"):
            tmpl = (head + f"<b>{label}</b>: " + span + "<br>%{customdata[7]:.0f} warp instructions, "
                    "%{customdata[8]:.0f} of them with lanes masked off (fewest active %{customdata[9]:.0f}/32)"
                    "<br>%{text}<extra></extra>")
        else:
            tmpl = head + f"<b>{label}</b>: " + span + "<br>%{text}<extra></extra>"
        fig.add_trace(go.Bar(
            orientation="h", y=y[m], base=np.round(t0[m], 2).tolist(), x=np.maximum(t1[m] - t0[m], 1e-3),
            name=label, marker=dict(color=colour, line=dict(width=0)), width=0.8, customdata=cd[m],
            text=None if binned else text[m].tolist(), textposition="none", hovertemplate=tmpl, meta=key))
    clock = report.config.chip.sm_clock_mhz if report.config is not None else 0
    shapes = []
    prev_sm = None
    for first, lab in tb.row_labels:
        sm_lab = lab.split(" · ")[0]
        if first > 0:
            shapes.append(dict(type="line", xref="paper", x0=0, x1=1, y0=first - 0.5, y1=first - 0.5,
                               line=dict(color="#555555" if sm_lab != prev_sm else "#d0d0d0", width=1)))
        prev_sm = sm_lab
    ends = [f for f, _ in tb.row_labels[1:]] + [tb.n_rows]
    centres = [(f + e - 1) / 2 for (f, _), e in zip(tb.row_labels, ends)]
    row_px = 7 if tb.n_rows <= 160 else 5 if tb.n_rows <= 320 else 3
    fig.update_layout(
        title=_title("Warp timeline", report, tb.notes),
        barmode="overlay", bargap=0, shapes=shapes, height=int(min(2600, max(320, 160 + row_px * tb.n_rows))),
        xaxis=dict(title=f"time (cycles at {clock:.0f} MHz from the launch)", showgrid=True),
        yaxis=dict(tickmode="array", tickvals=centres, ticktext=[lab for _, lab in tb.row_labels],
                   showgrid=False, zeroline=False, range=[tb.n_rows - 0.5, -0.5],
                   tickfont=dict(size=9 if tb.n_rows > 40 else 11)),
        hovermode="closest", margin=dict(l=110),
        meta=dict(sms=tb.sms, n_sms_active=tb.n_sms_active, n_sms_chip=tb.n_sms_chip, n_bars=len(tb.t0),
                  n_intervals=tb.n_records_total, merged=tb.merged, notes=tb.notes))
    fit_top_margin(fig)
    return fig
