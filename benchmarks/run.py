"""Simulation speed: wall time, simulated warp-instructions per second and peak memory per case.

    python benchmarks/run.py                 # all cases
    python benchmarks/run.py vector_add_2e22 # some cases, by name
    python benchmarks/run.py --repeat 3      # each case 3 times; the row with the median wall time

Each case runs in its own process (so peak RSS is its own) and simulates a kernel file's launch() on the
H100 preset.  ``wall s`` is the whole simulation: functional execution and trace (``trace s``) plus the timing
engine (``timing s``); ``K inst/s`` is simulated warp-instructions per wall second; ``ref s`` is the host's
speed index just before the case (``host_reference_s``: lower is faster).  Prints a table;
``--json FILE`` also writes the rows.  A shared host's speed varies by 10-20% from run to run: use
``--repeat`` for figures to publish.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {
    # issue 2: SIMT front end + engine (bar: >= 250 K warp-instructions/s)
    "vector_add_2e22": ("kernels/vector_add.py", {"n": 1 << 22}),
    "divergence": ("kernels/divergence.py", {}),
    "matmul_tiled_512": ("kernels/matmul_tiled.py", {"n": 512}),
    # issue 3: tile front end + engine (bars: <= 60 s each)
    "tl_matmul_4096": ("kernels/tl_matmul.py", {"M": 4096, "N": 4096, "K": 4096, "BM": 128, "BN": 128, "BK": 64,
                                                "num_warps": 8, "num_stages": 3}),
    "tl_flash_attn_fwd_4x4096x64": ("kernels/tl_flash_attn_fwd.py", {"Z": 1, "H": 4, "N_CTX": 4096,
                                                                      "HEAD_DIM": 64}),
}


def host_reference_s() -> float:
    """CPU seconds of a fixed pure-Python workload (dict and integer operations, like the engine's): a speed
    index of the host at the time, so that runs on a shared machine can be compared."""
    t = time.process_time()
    d: dict[int, int] = {}
    acc = 0
    for i in range(2_000_000):
        d[i & 4095] = i
        acc += d.get(i & 2047, 0)
    return time.process_time() - t


def run_one(name: str) -> dict:
    sys.path.insert(0, ROOT)
    from gpusim.api import simulate_launch
    from gpusim.cli import load_kernel_file
    path, params = CASES[name]
    mod = load_kernel_file(os.path.join(ROOT, path))
    ref = host_reference_s()
    t0 = time.perf_counter()
    launch = mod.launch(**params)
    t1 = time.perf_counter()
    # GPUSIM_BENCH_EXACT=1: every CTA replayed (the engine's own speed, comparable with commits before sampling)
    exact = os.environ.get("GPUSIM_BENCH_EXACT", "") not in ("", "0")
    reports = simulate_launch(launch, "h100", exact=True) if exact else simulate_launch(launch, "h100")
    t2 = time.perf_counter()
    inst = sum(r["inst_executed"] for r in reports)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    timing = sum(r.context["timing_s"] for r in reports)
    return {"case": name, "wall_s": t2 - t1, "trace_s": t2 - t1 - timing, "timing_s": timing,
            "setup_s": t1 - t0, "host_ref_s": ref, "warp_inst": inst,
            "inst_per_s": inst / (t2 - t1), "peak_rss_mb": rss_mb, "cycles": sum(r.cycles for r in reports)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--json")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; the median row is shown")
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(run_one(a.child)))
        return 0
    names = a.cases or list(CASES)
    rows = []
    for n in names:
        if n not in CASES:
            print(f"unknown case {n}; cases: {', '.join(CASES)}", file=sys.stderr)
            return 2
        runs = []
        for _ in range(max(1, a.repeat)):
            p = subprocess.run([sys.executable, __file__, "--child", n], capture_output=True, text=True, cwd=ROOT)
            if p.returncode:
                runs = [{"case": n, "error": p.stderr.strip().splitlines()[-1] if p.stderr else "failed"}]
                break
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        runs.sort(key=lambda r: r.get("wall_s", 0.0))
        row = runs[len(runs) // 2]
        if len(runs) > 1:
            row["wall_s_all"] = [r["wall_s"] for r in runs]
        rows.append(row)
    print(f"{'case':<30} {'wall s':>8} {'trace s':>8} {'timing s':>8} {'warp-inst':>12} {'K inst/s':>9} "
          f"{'peak MB':>8} {'cycles':>12} {'ref s':>6}")
    for r in rows:
        if "error" in r:
            print(f"{r['case']:<30} ERROR {r['error']}")
            continue
        print(f"{r['case']:<30} {r['wall_s']:>8.2f} {r['trace_s']:>8.2f} {r['timing_s']:>8.2f} {r['warp_inst']:>12,} "
              f"{r['inst_per_s'] / 1e3:>9.0f} {r['peak_rss_mb']:>8.0f} {r['cycles']:>12,.0f} {r['host_ref_s']:>6.2f}")
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
