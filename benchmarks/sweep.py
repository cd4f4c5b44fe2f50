"""Sweep speed: 200 small points serially and on a process pool (bar: the pool takes <= 55% of the serial time
on two cores).

    python benchmarks/sweep.py              # 200 points, jobs = all cores
    python benchmarks/sweep.py --jobs 2 --points 100

The points are kernels/tl_vector_add.py over 2 GPUs x 5 sizes (8K to 256K elements) x 5 BLOCKs x 4 num_warps (10 to
300 ms of CPU each).  Both runs write their own folder; the tables must be identical row for row.  Prints one table:
points, jobs, serial s, parallel s, ratio, whether the bar is met, and the CPU seconds each run used (the pool's
workers included) with the host's load average: on a shared host the wall times depend on the other work.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SPEC = """kernel = "{kernel}"
gpu = ["h100", "a100"]
[params]
n = [8192, 32768, 65536, 131072, 262144]
BLOCK = [128, 256, 512, 1024, 2048]
num_warps = [1, 2, 4, 8]
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--points", type=int, default=200, help="run the first N points of the 200")
    a = ap.parse_args()
    from gpusim import sweeper
    with tempfile.TemporaryDirectory() as d:
        spec_path = os.path.join(d, "bench.toml")
        with open(spec_path, "w") as f:
            f.write(SPEC.format(kernel=os.path.join(ROOT, "kernels", "tl_vector_add.py")))
        spec = sweeper.load_spec(spec_path)
        points = spec.points()[:a.points]
        # a spec of exactly the first N points: resume skips the rest when a CSV already holds them
        times, cpu = {}, {}
        for label, jobs in (("serial", 1), ("parallel", a.jobs)):
            out = os.path.join(d, label)
            os.makedirs(out)
            _preload(spec, points, out)
            c0 = _cpu()
            t0 = time.perf_counter()
            res = sweeper.sweep(spec_path, jobs=jobs, out=out, progress=False)
            times[label] = time.perf_counter() - t0
            cpu[label] = _cpu() - c0
            assert res.ran == len(points), (res.ran, len(points))
            assert res.errors == 0, [r["error"] for r in res.rows if r["error"]][:3]
        same = open(os.path.join(d, "serial", "sweep.csv")).read() == open(os.path.join(d, "parallel",
                                                                                           "sweep.csv")).read()
    ratio = times["parallel"] / times["serial"]
    host = _host_parallelism(a.jobs)
    load = os.getloadavg()[0]
    print(f"{'points':>6}  {'jobs':>4}  {'serial s':>9}  {'parallel s':>10}  {'ratio':>6}  bar (<= 55%)  rows equal  "
          f"{'serial cpu s':>12}  {'parallel cpu s':>14}  {'load':>5}")
    print(f"{len(points):>6}  {a.jobs:>4}  {times['serial']:>9.1f}  {times['parallel']:>10.1f}  {ratio:>6.1%}  "
          f"{'met' if ratio <= 0.55 else 'NOT met':<12}  {str(same):<10}  {cpu['serial']:>12.1f}  "
          f"{cpu['parallel']:>14.1f}  {load:>5.1f}")
    print(f"host check: {a.jobs} pure-Python busy loops in a pool of {a.jobs} take {host:.0%} of their serial time "
          f"(what this host lets a pool gain now; {1 / a.jobs:.0%} on idle cores)")
    if load > (os.cpu_count() or 1):
        print(f"note: the host's load average ({load:.1f}) exceeds its {os.cpu_count()} cores: other work shares them, "
              f"so the wall times say little; 'cpu s' (this process and its workers) does not depend on it")
    return 0 if same else 1


def _busy(_=None) -> int:
    s = 0
    for i in range(4_000_000):
        s += i & 7
    return s


def _host_parallelism(jobs: int) -> float:
    """Wall time of ``jobs`` busy loops in a pool / run one after another: the speedup the host allows now (with
    the kernel's autogroup scheduling, a session's processes share one slice of a busy host)."""
    import multiprocessing as mp
    t0 = time.perf_counter()
    for _ in range(jobs):
        _busy()
    serial = time.perf_counter() - t0
    with mp.get_context("fork").Pool(jobs) as pool:
        t0 = time.perf_counter()
        pool.map(_busy, range(jobs))
        par = time.perf_counter() - t0
    return par / serial


def _cpu() -> float:
    """CPU seconds of this process and of its finished child processes (the pool's workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _preload(spec, points, out) -> None:
    """Rows for the points past the first N, marked done, so that the sweep runs only N (resume)."""
    from gpusim import sweeper
    skip = spec.points()[len(points):]
    if not skip:
        return
    rows = [{"point": i + len(points), **p, "status": "ok"} for i, p in enumerate(skip)]
    sweeper._write_csv(Path(out) / "sweep.csv", spec.columns, rows)


if __name__ == "__main__":
    sys.exit(main())
