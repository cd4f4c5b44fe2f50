"""``gpusim validate ...``: collect (on a GPU machine), calibrate, report.

    gpusim validate report [--cases REGEX] [--html FILE] [--json FILE] [--skip-heavy] [--cache FILE] [-j N]
    gpusim validate calibrate [--write]
    gpusim validate collect --out FILE ...      (runs gpusim/validate/collect.py; needs a GPU)
"""
from __future__ import annotations

import argparse
import json
import math
import sys

REPORT_KEYS = ["cycles", "inst_executed", "dram_bytes_read", "dram_bytes_write", "registers_per_thread",
               "shared_bytes_per_cta",
               "gld_sectors_per_request", "shared_ld_bank_conflicts", "occupancy_theoretical_pct",
               "occupancy_achieved_pct", "l2_hit_rate_pct"]


def _select(pattern: str | None, skip_heavy: bool, frontend: str | None):
    import re
    from ..errors import UsageError
    from .suite import select
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            raise UsageError(f"validate report: --cases {pattern!r} is not a regular expression: {e}") from None
    cases = select(pattern)
    if pattern is not None and not cases:
        raise UsageError(f"validate report: no suite case matches --cases {pattern!r} (case names: python -c "
                         f"'from gpusim.validate.suite import CASES; print([c.name for c in CASES])')")
    if skip_heavy:
        cases = [c for c in cases if "heavy" not in c.tags]
    if frontend:
        cases = [c for c in cases if c.frontend == frontend]
    return cases


def format_rows(rows, keys=REPORT_KEYS) -> str:
    head = f"{'case':<34}" + "".join(f"{k[:15]:>17}" for k in keys) + "    sim s"
    lines = [head, " " * 34 + "".join(f"{'measured  err':>17}" for _ in keys)]
    for r in rows:
        s = f"{r.case:<34}"
        for k in keys:
            m, e = r.measured.get(k), r.error(k)
            if m is None or e is None:
                s += f"{'-':>17}"
            elif not math.isfinite(e) or abs(e) >= 10:
                s += f"{m:>10.3g}{'  >999%' if e > 0 else ' <-999%'}"
            else:
                s += f"{m:>10.3g}{100 * e:>+6.0f}%"
        s += f" {r.predicted.get('wall_s', 0):>8.1f}"
        lines.append(s)
    return "\n".join(lines)


def cmd_report(a: argparse.Namespace) -> int:
    from ..progress import StepProgress
    from .compare import compare, pair_orders, summarize
    from ..config import load_gpu
    from ..errors import UsageError
    from .records import device_info, records_gpus, use_gpu
    from .suite import HELD_OUT_GROUPS
    load_gpu(a.gpu)                                    # a bad preset is a one-line error before anything runs
    try:
        use_gpu(a.records or a.gpu)
    except ValueError as e:
        raise UsageError(f"validate report: {e} (give --records h100 to compare a preset with the H100's)") from None
    cases = _select(a.cases, a.skip_heavy, a.frontend)
    prog = StepProgress("cases", unit="case") if sys.stderr.isatty() else None
    if a.sampled and (a.readme or a.holdout_family):
        raise UsageError("validate report: --sampled checks the sampled replay against the records; the README's "
                         "figures and the hold-out fits are made with the exact replay (leave out --readme / "
                         "--holdout-family)")
    rows = compare(cases, a.gpu, progress=prog, cache=a.cache, jobs=a.jobs, exact=not a.sampled)
    if a.sampled:
        print("replay: sampled (gpusim.simulate's default; without --sampled every CTA is replayed)")
    print(format_rows(rows))
    print()
    info = device_info()
    print(f"records: {info['gpu']}, driver {info['driver']}, CUDA {info['cuda']}, {info['date']}")
    for k in REPORT_KEYS:
        s = summarize(rows, k)
        if s:
            print(f"{k:<28} n={s.n:3d}  MAPE {s.mape_pct:7.1f}%  max {s.max_abs_err_pct:7.1f}% ({s.worst_case})"
                  f"  log-corr {s.corr:.3f}")
    held = [r for r in rows if r.group in HELD_OUT_GROUPS or r.group.startswith("scn_")]
    if held and len(held) < len(rows):
        print("cycles by population (MAPE):")
        for label, sel in (("in-sample suite", [r for r in rows if r not in held]),
                           (f"held-out families ({', '.join(sorted(HELD_OUT_GROUPS))})",
                            [r for r in held if r.group in HELD_OUT_GROUPS]),
                           ("scenario cases (collected after the calibration)",
                            [r for r in held if r.group.startswith("scn_")])):
            s = summarize(sel, "cycles")
            if s:
                print(f"  {label:<50} n={s.n:3d}  MAPE {s.mape_pct:6.1f}%  worst {s.max_abs_err_pct:6.1f}% "
                      f"({s.worst_case})")
    pairs = pair_orders(rows)
    if pairs:
        ok = sum(p[3] == p[2] for p in pairs)
        print(f"ordered pairs (slower, faster): {ok}/{len(pairs)} predicted in the measured order")
        for slow, fast, m, p in pairs:
            if m != p:
                print(f"  wrong order: {slow} vs {fast} (measured {'slower' if m else 'faster'})")
    res = None
    if a.holdout_family:
        from .holdout import format_results, run_holdout
        print("\ncycles by family, calibrated with and without it (gpusim/validate/holdout.py: the hand fits of "
              "CALIBRATION.md redone without the family's cases):")
        pool = _select(None, a.skip_heavy, a.frontend)       # the fits use every in-sample case, not only --cases
        res = run_holdout(a.gpu, jobs=a.jobs, cases=pool, families=sorted({c.group for c in cases}),
                          base={r.case: r.predicted for r in rows}, cache=a.holdout_cache)
        print(format_results(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{"case": r.case, "group": r.group, "predicted": r.predicted, "measured": r.measured}
                       for r in rows], f, indent=1)
    if a.readme:
        from .accuracy import update_readme
        note = ("" if a.cases is None else f"Selection: cases matching `{a.cases}`. ") + \
            ("The cases tagged `heavy` (too slow to simulate on a small machine) are left out: see DEVIATIONS.md."
             if a.skip_heavy else "")
        note = note.strip()
        update_readme(rows, info, note, holdout=res, gpu=(a.records or a.gpu) if (a.records or a.gpu) in records_gpus() else "h100")
        print("updated README.md (Accuracy) and docs/accuracy.svg", file=sys.stderr)
    if a.html:
        from .plots import write_validation_html
        write_validation_html(rows, a.html)
        print(f"wrote {a.html}", file=sys.stderr)
    return 0


def cmd_calibrate(a: argparse.Namespace) -> int:
    from .calibrate import calibrate
    return calibrate(write=a.write)


def cmd_collect(a: argparse.Namespace) -> int:
    from . import collect
    return collect.main(a.rest)


def add_parser(sub) -> None:
    v = sub.add_parser("validate", help="hardware records: collect, calibrate, compare")
    vs = v.add_subparsers(dest="vcmd", required=True)
    r = vs.add_parser("report", help="simulate suite cases and compare them with the H100 records")
    r.add_argument("--cases", help="regular expression on case names")
    r.add_argument("--frontend", choices=["cuda", "triton"])
    r.add_argument("--skip-heavy", action="store_true", help="leave out the cases tagged heavy")
    r.add_argument("--gpu", default="h100", help="preset simulated (and, unless --records, whose records are read: "
                                                 "h100, h200)")
    r.add_argument("--records", metavar="GPU", help="read this GPU's records (default: the --gpu preset's)")
    r.add_argument("--json", metavar="FILE")
    r.add_argument("--html", metavar="FILE", help="write the plots (scatter, matmul sweep) as an HTML page")
    r.add_argument("--cache", metavar="FILE", help="reuse/store predictions in FILE (interactive work)")
    r.add_argument("--jobs", "-j", type=int, default=1, help="simulate cases in this many processes")
    r.add_argument("--holdout-family", action="store_true",
                   help="also recalibrate the hand-fitted parameters without each family and report its error")
    r.add_argument("--holdout-cache", metavar="FILE",
                   help="with --holdout-family: reuse/store the refits' predictions in FILE")
    r.add_argument("--readme", action="store_true", help="rewrite README.md's Accuracy section and docs/accuracy.svg")
    r.add_argument("--sampled", action="store_true",
                   help="replay each kernel as gpusim run does (sampled where it can be) instead of every CTA")
    r.set_defaults(fn=cmd_report)
    c = vs.add_parser("calibrate", help="fit the H100 preset's parameters to the microbenchmark records")
    c.add_argument("--write", action="store_true", help="write the fitted values into gpusim/presets/h100.toml")
    c.set_defaults(fn=cmd_calibrate)
    k = vs.add_parser("collect", help="run the suite on a real GPU (see gpusim/validate/README.md)")
    k.add_argument("rest", nargs=argparse.REMAINDER)
    k.set_defaults(fn=cmd_collect)
