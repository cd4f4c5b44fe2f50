"""Predicted vs measured: simulate suite cases and hold each metric against the H100 records.

``predict(case)`` simulates a suite case on the preset (every step of it) and returns its metrics combined
across steps exactly as ``records.measured`` combines the hardware's, keyed by gpusim metric names.
``compare(cases)`` returns one row per case with both; ``summary(rows)`` gives per-metric error statistics
(MAPE, correlation, worst case) and the ordered pairs of ``suite.PAIRS``.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import records
from .suite import CASES, PAIRS, Case, case_by_name, load_case

# metrics compared, with the tier each is held to (see DEVIATIONS.md and tests/test_validation.py)
TIERS: dict[str, str] = {
    "gld_sectors_per_request": "exact",
    "gst_sectors_per_request": "exact",
    "shared_ld_bank_conflicts": "exact",
    "occupancy_theoretical_pct": "exact",
    "dram_bytes_read": "5%",
    "dram_bytes_write": "info",
    "registers_per_thread": "estimate",
    "cycles": "cycles",
    "inst_executed": "info",
    "l2_hit_rate_pct": "info",
    "l1_hit_rate_pct": "info",
    "occupancy_achieved_pct": "info",
    "threads_per_inst": "info",
}


def _report_row(r) -> dict[str, float]:
    """A report's metrics keyed by their Nsight Compute names (numbers only)."""
    row = {}
    for m in r.metrics.values():
        if m.ncu and isinstance(m.value, (int, float)):
            row[m.ncu] = float(m.value)
    mem = r.context.get("engine_memory", {})
    row["lts__t_sectors_op_read.sum"] = float(mem.get("l2_rd_sectors", 0))
    row["launch__shared_mem_per_block_static"] = float(r["shared_bytes_per_cta"])
    row["launch__shared_mem_per_block_dynamic"] = 0.0
    return row


def predict(case: Case | str, gpu: Any = "h100", compiler: str | None = None, exact: bool = True) -> dict[str, float]:
    """Simulate one suite case; metrics combined over its kernels like the records'.  ``compiler``: registers and
    shared memory from ``gpusim.compilers``' mode; None: ``$GPUSIM_COMPILER`` when set, else the built-in estimate
    (the published validation numbers and the calibrations were made with it).  ``exact``: every CTA replayed
    (the default: validation measures the model, not its sampling; False: the default sampled replay of
    ``gpusim.simulate``)."""
    import os
    from ..api import fresh_addresses, simulate_launch
    from ..config import load_gpu
    if isinstance(case, str):
        case = case_by_name(case)
    cfg = load_gpu(gpu)
    t0 = time.perf_counter()
    with fresh_addresses():             # the same addresses whatever ran before in this process (-j, order)
        launch = load_case(case)
        reports = simulate_launch(launch, cfg, compiler=compiler or os.environ.get("GPUSIM_COMPILER", "").strip()
                                  or "builtin", exact=exact)
    out = combine_reports(reports)
    out["wall_s"] = time.perf_counter() - t0
    return out


def combine_reports(reports) -> dict[str, float]:
    """The metrics of a launch's reports (one per kernel) combined as ``records.measured`` combines the
    hardware's kernels, keyed by gpusim metric names; ``sim_inst``: warp instructions simulated."""
    rows = [_report_row(r) for r in reports]
    out: dict[str, float] = {}
    for key, (metric, how) in records.NCU_METRICS.items():
        v = records._combine(rows, metric, how)
        if v is not None:
            out[key] = v
    if out.get("gld_requests"):
        out["gld_sectors_per_request"] = out["gld_sectors"] / out["gld_requests"]
    if out.get("gst_requests"):
        out["gst_sectors_per_request"] = out["gst_sectors"] / out["gst_requests"]
    if "shared_static_bytes" in out:
        out["shared_bytes_per_cta"] = out.pop("shared_static_bytes") + out.pop("shared_dynamic_bytes", 0.0)
    out["n_kernels"] = len(rows)
    out["sim_inst"] = sum(r["inst_executed"] for r in reports)
    return out


@dataclass
class Row:
    case: str
    group: str
    predicted: dict[str, float]
    measured: dict[str, float]
    tags: tuple = ()

    def error(self, key: str) -> float | None:
        """Relative error (predicted - measured) / measured, or None when not comparable."""
        p, m = self.predicted.get(key), self.measured.get(key)
        if p is None or m is None:
            return None
        if m == 0:
            return 0.0 if p == 0 else math.inf
        return (p - m) / m


def _predict_named(args: tuple[str, Any, bool]) -> tuple[str, dict[str, float]]:
    name, gpu, exact = args
    return name, predict(name, gpu, exact=exact)


def compare(cases: Iterable[Case] | None = None, gpu: Any = "h100", progress=None,
            cache: str | Path | None = None, jobs: int = 1, exact: bool = True) -> list[Row]:
    """Simulate each case and pair it with its record.  ``cache``: a JSON file of earlier predictions to
    reuse (written back), keyed by case name -- for interactive work; tests never pass one.  ``jobs`` > 1
    simulates the cases in that many worker processes (largest first).  ``exact`` False: the sampled replay
    (``predict``)."""
    cases = [c for c in (CASES if cases is None else cases) if records.measured(c.name)]
    memo: dict[str, dict] = {}
    if cache and Path(cache).exists():
        memo = json.loads(Path(cache).read_text())
    todo = [c.name for c in cases if c.name not in memo]
    done = len(cases) - len(todo)

    def got(name: str, pred: dict) -> None:
        nonlocal done
        memo[name] = pred
        done += 1
        if cache:
            Path(cache).write_text(json.dumps(memo, indent=0))
        if progress:
            progress(done, len(cases))

    if jobs > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor
        todo.sort(key=lambda n: -records.measured(n).get("inst_executed", 0))
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            for name, pred in ex.map(_predict_named, [(n, gpu, exact) for n in todo]):
                got(name, pred)
    else:
        for name in todo:
            got(name, predict(name, gpu, exact=exact))
    return [Row(c.name, c.group, memo[c.name], records.measured(c.name), c.tags) for c in cases]


@dataclass
class MetricSummary:
    key: str
    n: int
    mape_pct: float
    max_abs_err_pct: float
    worst_case: str
    corr: float
    within: dict[str, int] = field(default_factory=dict)


def _corr(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 3:
        return float("nan")
    lx = [math.log(max(x, 1e-12)) for x in xs]
    ly = [math.log(max(y, 1e-12)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxy = sum((a - mx) * (b - my) for a, b in zip(lx, ly))
    sxx = sum((a - mx) ** 2 for a in lx)
    syy = sum((b - my) ** 2 for b in ly)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else float("nan")


def summarize(rows: list[Row], key: str) -> MetricSummary | None:
    errs = [(r.case, r.error(key), r.predicted.get(key), r.measured.get(key)) for r in rows]
    errs = [e for e in errs if e[1] is not None and math.isfinite(e[1])]
    if not errs:
        return None
    ape = [abs(e[1]) for e in errs]
    worst = max(errs, key=lambda e: abs(e[1]))
    return MetricSummary(key=key, n=len(errs), mape_pct=100 * sum(ape) / len(ape),
                         max_abs_err_pct=100 * abs(worst[1]), worst_case=worst[0],
                         corr=_corr([e[2] for e in errs], [e[3] for e in errs]),
                         within={t: sum(a <= t / 100 for a in ape) for t in (5, 10, 20, 50)})


def pair_orders(rows: list[Row], key: str = "cycles") -> list[tuple[str, str, bool, bool]]:
    """For each (slower, faster) pair: (slower, faster, measured order right, predicted order right)."""
    by = {r.case: r for r in rows}
    out = []
    for slow, fast in PAIRS:
        if slow in by and fast in by:
            m = by[slow].measured.get(key, 0) > by[fast].measured.get(key, 0)
            p = by[slow].predicted.get(key, 0) > by[fast].predicted.get(key, 0)
            out.append((slow, fast, m, p))
    return out
