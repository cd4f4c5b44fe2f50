"""Autotuning without a GPU, held against the GPU (issue 16's bar: the simulated pick's real time within 5% of the
real best on at least 80% of the sizes, collected and held out).

    python benchmarks/tune.py                 # the 8 collected sizes (H100) and the 6 held-out ones (H200)
    python benchmarks/tune.py --sizes 512,1000 --no-probe

For each size, Triton tutorial 03's 16 matmul configs are simulated (``gpusim tune``'s ranking, all cores) and the
config ranked first is looked up in the records: ``records/tune_mm_timing.json`` (H100 kernel durations) and, for
the held-out sizes no choice of the model was made on, ``records/h200/tune_mm_probe_timing.json`` (the lent H200,
simulated on the h200 preset).  Prints per size: the real best config and its time, the simulated pick and its
real time, the loss, and whether the configs the GPU refused (out of shared memory) are refused by the simulation
too; then the share of sizes within 5%.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> int:
    from gpusim.validate import suite, tune_check
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", help="comma-separated collected sizes (default: all)")
    ap.add_argument("--no-probe", action="store_true", help="skip the held-out sizes")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")] if a.sizes else list(suite.TUNE_MM_SIZES)
    runs = [("collected (H100)", sizes, "h100", tune_check.RECORD)]
    if not a.no_probe:
        runs.append(("held out (H200)", list(suite.TUNE_MM_PROBE_SIZES), "h200", tune_check.PROBE_RECORD))
    total = []
    for title, szs, gpu, record in runs:
        t0 = time.perf_counter()
        rows = [tune_check.compare(s, jobs=a.jobs, gpu=gpu, record=record) for s in szs]
        print(f"\n{title}: {len(szs)} sizes x 16 configs simulated in {time.perf_counter() - t0:.0f} s")
        print(tune_check.table(rows))
        total += rows
    ok = [r for r in total if r["loss_pct"] is not None and r["loss_pct"] <= 5]
    print(f"\nall: simulated pick within 5% of the real best on {len(ok)}/{len(total)} sizes "
          f"({100 * len(ok) / len(total):.0f}%; bar 80%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
