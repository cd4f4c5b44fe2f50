"""The lecture scenarios at full size, side by side with the H100: each headline ratio simulated vs measured.

    python benchmarks/scenarios.py                    # the two headline variants of every scenario, 2 processes
    python benchmarks/scenarios.py --all-variants     # every variant, and each scenario's whole table first
    python benchmarks/scenarios.py --skip-heavy       # leave out scenarios whose headline needs a heavy case
    python benchmarks/scenarios.py divergence fusion  # some scenarios, by name

Every variant is a validation-suite case, simulated at its own parameters on the H100 preset in a pool of
``--jobs`` processes (largest first); its measured time is the committed record's.  Finished simulations are
kept in ``--cache`` (JSON, default ``out/scenarios_cache.json``), so an interrupted run resumes.  Prints one row
per scenario: headline, simulated ratio, measured H100 ratio, error of the simulated ratio, whether the
simulation gets the direction (the side of 1) right, and the simulation wall time of its cases; then how many are
within 20% and right in direction (the issue's bar: 11 of 13 within 20%, 13 of 13 in direction).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from gpusim import scenario as S  # noqa: E402
from gpusim.validate import records, suite  # noqa: E402


def _sim(name: str) -> tuple[str, dict]:
    case = suite.case_by_name(name)
    return name, S.simulate_case(case, dict(case.params), "h100")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="scenarios (default: all 13)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--all-variants", action="store_true", help="every variant, not only the headline pair")
    ap.add_argument("--skip-heavy", action="store_true", help="leave out scenarios whose headline needs a heavy case")
    ap.add_argument("--cache", default=os.path.join(ROOT, "out", "scenarios_cache.json"),
                    help="JSON of finished simulations, reused and extended ('' for none)")
    a = ap.parse_args(argv)
    scns = [S.get(n) for n in a.names] if a.names else list(S.SCENARIOS)
    left_out = []
    if a.skip_heavy:
        keep = []
        for s in scns:
            pair = (s.variant(s.headline.slow).case, s.variant(s.headline.fast).case)
            (left_out if any("heavy" in suite.case_by_name(c).tags for c in pair) else keep).append(s)
        scns = keep
    want: list[str] = []
    for s in scns:
        labels = [v.label for v in s.variants] if a.all_variants else [s.headline.slow, s.headline.fast]
        want += [s.variant(lbl).case for lbl in labels]
    want = list(dict.fromkeys(want))
    memo: dict[str, dict] = {}
    if a.cache and os.path.exists(a.cache):
        with open(a.cache) as f:
            memo = json.load(f)
    todo = sorted((n for n in want if n not in memo), key=lambda n: -records.measured(n).get("inst_executed", 0))
    print(f"{len(want)} cases, {len(todo)} to simulate in {a.jobs} processes", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    if todo:
        with ProcessPoolExecutor(max_workers=a.jobs) as ex:
            futs = [ex.submit(_sim, n) for n in todo]
            for i, fut in enumerate(as_completed(futs), 1):
                name, pred = fut.result()
                memo[name] = pred
                print(f"[{i}/{len(todo)}] {name}: {pred['wall_s']:.1f} s ({time.perf_counter() - t0:.0f} s in all)",
                      file=sys.stderr, flush=True)
                if a.cache:
                    os.makedirs(os.path.dirname(a.cache) or ".", exist_ok=True)
                    with open(a.cache, "w") as f:
                        json.dump(memo, f, indent=0)
    rows = []
    for s in scns:
        res = S.Result(s, "H100 SXM5", "h100", False, "H100")
        wall = 0.0
        for v in s.variants:
            if v.case in memo and (a.all_variants or v.label in (s.headline.slow, s.headline.fast)):
                case = suite.case_by_name(v.case)
                res.rows.append(S.make_row(s, v, case, dict(case.params), dict(memo[v.case]), "h100", False))
                wall += memo[v.case].get("wall_s", 0.0)
        if a.all_variants:
            print(S.format_text(res))
        h = res.headline()
        rows.append([s.name, f"{h['text']} ({h['slow']} / {h['fast']})", f"{h['simulated']:.2f}x",
                     f"{h['measured']:.2f}x", f"{h['error_pct']:+.1f}%", "yes" if h["direction_right"] else "NO",
                     f"{wall:.0f}", h])
    head = ["scenario", "headline", "simulated", "measured H100", "error", "direction right?", "sim wall s"]
    print(S.format_table(head, [r[:-1] for r in rows]))
    within = sum(abs(r[-1]["error_pct"]) <= 20.0 for r in rows)
    right = sum(bool(r[-1]["direction_right"]) for r in rows)
    print(f"\nwithin 20% of the H100: {within} of {len(rows)}; direction right: {right} of {len(rows)}"
          + (f"; not run (heavy): {', '.join(s.name for s in left_out)}" if left_out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
