"""Held-out-family error: how well the model predicts a family of kernels that its calibration never saw.

Most of the H100 preset's parameters come from the whitepaper or from microbenchmarks (``gpusim validate
calibrate``: pointer chases, an empty kernel, a copy), which belong to no suite family.  A few were fitted by
hand to suite records (CALIBRATION.md, "Fitted to suite records"): ``FITS`` names each one, the cases it was
fitted on, the metric, its prior (the value it had before the fit) and the candidate values of the fit.

For each family F of the in-sample suite, ``holdout`` refits every such parameter without F's cases (the
candidate minimizing the fit metric's MAPE on the remaining fit cases; the prior when F held all of them), then
simulates F's cases on the preset with the refitted values.  A family whose cases informed no fit keeps the
preset as it is: its in-sample error already is its held-out error.  The predictions of each (candidate, case)
are made once and shared by every family (``FitTable``).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .suite import CASES, Case, in_sample as _calibrated_on


@dataclass(frozen=True)
class Fit:
    """One preset parameter fitted to suite records."""

    section: str
    param: str
    prior: float                 # the value before the fit (whitepaper, JEDEC or an assumption)
    candidates: tuple            # values the fit chooses among (the fitted value among them)
    metric: str                  # gpusim metric key whose MAPE the fit minimizes
    cases: str                   # regular expression: the suite cases the fit used
    source: str = ""

    def fit_cases(self, cases: Iterable[Case]) -> list[str]:
        rx = re.compile(self.cases)
        return [c.name for c in cases if rx.search(c.name)]


#: the hand fits of CALIBRATION.md ("Fitted to suite records"), with their priors
FITS: list[Fit] = [
    Fit("l2", "dirty_ways", 0, (0, 4, 7, 10), "dram_bytes_write",
        r"^(vector_add_n(4194304|16777216)|grid_stride_copy_smem0k)$",
        "prior: no limit on a set's dirty lines"),
    Fit("l1", "lines_per_clk", 1.0, (1.0, 2.0, 3.0), "cycles", r"^tl_matmul_(1409|2049)_64x64x32$",
        "prior: one tag lookup per clock"),
    Fit("l2", "bytes_per_clk_per_slice", 40.0, (32.0, 40.0, 48.0, 64.0, 80.0), "cycles",
        r"^(tl_matmul_(1536|2048|4096)_128x128x64|fa_fwd_d(64|128)_n(1024|4096))$",
        "prior: the bandwidth assumed before the fit"),
    Fit("chip", "cta_dispatch_per_cycle", 0.0, (0.0, 0.5, 0.83, 1.2, 2.0), "cycles",
        r"^fill_n(1048576|4194304|16777216)$", "prior: no limit on the work distributor's CTA rate"),
    Fit("dram", "row_miss_ns", 28.0, (0.0, 6.0, 12.0, 20.0, 28.0), "cycles",
        r"^(grid_stride_copy_smem(0|16|48)k|reduction_n16777216_b1056|strided_read_s(1|4|32))$",
        "prior: JEDEC tRP + tRCD"),
    Fit("l2", "atomic_request_cycles", 0.0, (0.0, 1.35, 2.7, 4.05), "cycles", r"^lock_G512_w[14]$",
        "prior: an atomic holds its slice no longer than its sectors take"),
    # the fits of 2026-11-28/29 that used suite records (CALIBRATION.md)
    Fit("l2", "dirty_at_launch_bytes", 0, (0, 2426880), "dram_bytes_write",
        r"^(row_col_sum_(row|col)_n4096|reduction_n16777216.*)$",
        "prior: the L2 holds no dirty line at launch"),
    Fit("l2", "write_bytes_per_clk_per_slice", 64.0, (25.0, 40.0, 64.0), "cycles",
        r"^rw_(write|copy)_n(4194304|8388608)$", "prior: the write side as fast as the read side"),
    Fit("dram", "write_turnaround_ns", 70.0, (15.0, 40.0, 70.0), "cycles",
        r"^(tl_vector_add_f32_n16777216|attn_naive_d64_n(1024|2048)|rmw_(inplace|copy)_n16777216|"
        r"vector_add_n16777216)$", "prior: the switch fitted on the loaded-latency record alone"),
    Fit("chip", "cta_launch_cycles", 80, (80, 300), "occupancy_achieved_pct",
        r"^(vector_add_n(4194304|16777216)|rmw_(inplace|copy)_n16777216)$", "prior: the value assumed before"),
    Fit("chip", "code_fetch_cycles", 0, (0, 150, 300), "cycles", r"^cold_burst_",
        "prior: no cold instruction cache at launch"),
    Fit("l1", "copy_dram_extra_cycles", 0.0, (0.0, 150.0, 300.0), "cycles",
        r"^(fa_bwd_d64_n1024|tl_matmul_1408_128x128x64)$",
        "prior: a copy's DRAM miss lands when a load's would (the value came from the H200's lone-CTA "
        "records; these in-sample cases, with held-out and scenario ones, picked 300 over 400)"),
]


def _ape(pred: float | None, meas: float | None) -> float | None:
    if pred is None or meas is None or not meas:
        return None
    return abs(pred - meas) / abs(meas)


def _mape(pairs: list[tuple[float | None, float | None]]) -> float | None:
    errs = [e for e in (_ape(p, m) for p, m in pairs) if e is not None and math.isfinite(e)]
    return 100 * sum(errs) / len(errs) if errs else None


@dataclass
class FamilyResult:
    """One family's cycles MAPE in-sample and with the fits redone without it."""

    family: str
    cases: list[str]
    in_sample_mape: float | None
    held_out_mape: float | None
    refit: dict[str, float] = field(default_factory=dict)     # "section.param" -> value used when F is held out
    worst: tuple[str, float] | None = None                     # (case, signed error %) held out


def choose(fit: Fit, table: dict[tuple[float, str], dict], measured: Callable[[str], dict],
           without: set[str], cases: Iterable[Case]) -> float:
    """The candidate value of ``fit`` that minimizes its metric's MAPE over its cases not in ``without``; the
    prior when none is left.  ``table[(value, case)]`` holds predictions made with ``value``."""
    names = [n for n in fit.fit_cases(cases) if n not in without]
    if not names:
        return fit.prior
    best, best_err = fit.prior, math.inf
    for v in fit.candidates:
        err = _mape([(table[(v, n)].get(fit.metric), measured(n).get(fit.metric)) for n in names])
        if err is not None and err < best_err - 1e-12:
            best, best_err = v, err
    return best


def holdout(predict: Callable[[str, dict], dict], measured: Callable[[str], dict],
            cases: list[Case] | None = None, fits: list[Fit] | None = None,
            families: list[str] | None = None, base: dict[str, dict] | None = None) -> list[FamilyResult]:
    """Held-out-family cycles error for every in-sample family (or ``families``).

    ``predict(case_name, overrides)`` simulates a case with config overrides (``{"l2": {"x": v}}``) and
    returns its metrics; ``measured(case_name)`` the records'.  ``base``: predictions already made with the
    preset as it is (reused; the rest are made).  Families in ``HELD_OUT_GROUPS`` and the scenario groups are
    never calibrated on and are left out."""
    cases = [c for c in (CASES if cases is None else cases) if measured(c.name)]
    fits = FITS if fits is None else fits
    in_sample = [c for c in cases if _calibrated_on(c)]
    fams = sorted({c.group for c in in_sample}) if families is None else families
    base = dict(base or {})

    def pred(name: str, over: dict) -> dict:
        if not over:
            if name not in base:
                base[name] = predict(name, {})
            return base[name]
        return predict(name, over)

    # the predictions a fit needs when a requested family informed it: each candidate on each of its cases
    asked = {c.name for c in in_sample if c.group in fams}
    table: list[dict[tuple[float, str], dict]] = []
    for f in fits:
        t = {}
        names = f.fit_cases(in_sample)
        if asked & set(names):
            for n in names:
                for v in f.candidates:
                    t[(v, n)] = pred(n, {f.section: {f.param: v}})
        table.append(t)
    out = []
    for fam in fams:
        names = [c.name for c in in_sample if c.group == fam]
        if not names:
            continue
        held = set(names)
        over: dict[str, dict[str, float]] = {}
        refit: dict[str, float] = {}
        for f, t in zip(fits, table):
            if not any(n in held for n in f.fit_cases(in_sample)):
                continue                      # F did not inform this fit: the preset's value stands
            v = choose(f, t, measured, held, in_sample)
            refit[f"{f.section}.{f.param}"] = v
            over.setdefault(f.section, {})[f.param] = v
        ins = [(pred(n, {}).get("cycles"), measured(n).get("cycles")) for n in names]
        ho_pred = {n: pred(n, over) for n in names}
        ho = [(ho_pred[n].get("cycles"), measured(n).get("cycles")) for n in names]
        errs = [(n, 100 * (p - m) / m) for n, (p, m) in zip(names, ho) if p is not None and m]
        worst = max(errs, key=lambda e: abs(e[1])) if errs else None
        out.append(FamilyResult(fam, names, _mape(ins), _mape(ho), refit, worst))
    return out


def format_results(results: list[FamilyResult]) -> str:
    lines = [f"{'family':<18} {'cases':>5} {'in-sample':>10} {'held out':>10}  refitted without the family",
             f"{'':<18} {'':>5} {'MAPE':>10} {'MAPE':>10}"]
    for r in results:
        refit = ", ".join(f"{k} = {v:g}" for k, v in r.refit.items()) or "(no fit used it)"
        ins = "-" if r.in_sample_mape is None else f"{r.in_sample_mape:.1f}%"
        ho = "-" if r.held_out_mape is None else f"{r.held_out_mape:.1f}%"
        lines.append(f"{r.family:<18} {len(r.cases):>5} {ins:>10} {ho:>10}  {refit}")
    allc = [(r.in_sample_mape, r.held_out_mape, len(r.cases)) for r in results
            if r.in_sample_mape is not None and r.held_out_mape is not None]
    if allc:
        n = sum(c for _, _, c in allc)
        lines.append(f"{'all families':<18} {n:>5} {sum(a * c for a, _, c in allc) / n:>9.1f}% "
                     f"{sum(b * c for _, b, c in allc) / n:>9.1f}%  (case-weighted)")
    return "\n".join(lines)


def _predict_override(args: tuple[str, Any, dict]) -> dict:
    from .compare import predict
    name, gpu, over = args
    from ..config import load_gpu
    cfg = load_gpu(gpu)
    if over:
        cfg = cfg.with_overrides(**over)
    return predict(name, cfg)


def run_holdout(gpu: Any = "h100", jobs: int = 1, families: list[str] | None = None,
                cases: list[Case] | None = None, progress=None, base: dict[str, dict] | None = None,
                cache: str | None = None) -> list[FamilyResult]:
    """``holdout`` on the simulator, its predictions made in batches (in ``jobs`` processes): first the preset's
    predictions of the in-sample cases and every fit candidate on its cases, then (once the refits are known)
    each held-out family's cases with its refitted values.  ``base``: predictions with the preset as it is,
    already made (case name -> metrics: ``compare``'s rows).  ``cache``: a JSON file of the predictions with
    overrides, read if it exists and rewritten after each batch (the refits made on a bigger machine, the report
    written here)."""
    import json
    from pathlib import Path
    from . import records
    cases = [c for c in (CASES if cases is None else cases) if records.measured(c.name)]

    def key(name: str, over: dict) -> tuple[str, str]:
        return name, repr(sorted((s, sorted(d.items())) for s, d in over.items()))
    done: dict[tuple[str, str], dict] = {key(n, {}): p for n, p in (base or {}).items()}
    if cache and Path(cache).exists():
        done.update({tuple(k.split("|", 1)): p for k, p in json.loads(Path(cache).read_text()).items()})

    def save() -> None:
        if cache:
            Path(cache).write_text(json.dumps({f"{n}|{o}": p for (n, o), p in done.items() if o != "[]"}, indent=0))
    total = [0]

    def batch(todo: list[tuple[str, dict]]) -> None:
        todo = [t for t in dict((key(*t), t) for t in todo).values() if key(*t) not in done]
        total[0] += len(todo)
        if jobs > 1 and len(todo) > 1:
            from concurrent.futures import ProcessPoolExecutor
            with ProcessPoolExecutor(max_workers=jobs) as ex:
                for (name, over), p in zip(todo, ex.map(_predict_override, [(n, gpu, o) for n, o in todo])):
                    done[key(name, over)] = p
                    save()
                    if progress:
                        progress(len(done), total[0])
        else:
            for name, over in todo:
                done[key(name, over)] = _predict_override((name, gpu, over))
                if progress:
                    progress(len(done), total[0])
        save()

    in_sample = [c for c in cases if _calibrated_on(c)]
    fams = set(families or [c.group for c in in_sample])
    first = [(c.name, {}) for c in in_sample if c.group in fams]
    held = {c.name for c in in_sample if c.group in fams}
    for f in FITS:
        names = f.fit_cases(in_sample)
        if held & set(names):                 # only fits a requested family informed are redone
            first += [(n, {f.section: {f.param: v}}) for n in names for v in f.candidates]
    batch(first)
    wanted: list[tuple[str, dict]] = []

    def dry(name: str, over: dict) -> dict:
        k = key(name, over)
        if k in done:
            return done[k]
        wanted.append((name, over))
        return {}
    holdout(dry, records.measured, cases, families=families)
    batch(wanted)
    return holdout(lambda n, o: done[key(n, o)], records.measured, cases, families=families)
