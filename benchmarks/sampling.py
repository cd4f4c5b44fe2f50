"""Sampled simulation: wall time of the trace (functional execution) and of the timing replay, sampled and exact.

    python benchmarks/sampling.py                      # every case, sampled replay only
    python benchmarks/sampling.py --exact              # also the exact replay, and the sampled error
    python benchmarks/sampling.py vector_add_2e28      # some cases, by name
    python benchmarks/sampling.py --suite [--match RE] # every validation-suite case whose replay is sampled:
                                                       # sampled vs exact cycles and counters (--heavy: all)

Each case runs in its own process (peak RSS is its own): the kernel file's launch() is traced once
(``trace s``: functional execution and the trace), then replayed sampled (``sampled s``, the default of
``gpusim.simulate``) and, with ``--exact``, exactly (``exact s``).  ``peak MB`` is the process's peak RSS after
the sampled replay (before any exact one).  ``bar s`` is the speed target of issue 16 for trace + sampled replay.
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

#: name -> (kernel file, launch() params, target seconds for trace + sampled replay)
CASES = {
    "tl_matmul_8192": ("kernels/tl_matmul.py", {"M": 8192, "N": 8192, "K": 8192, "BM": 128, "BN": 128, "BK": 64,
                                                "num_warps": 8, "num_stages": 3, "GROUP_M": 8}, 20.0),
    "tl_flash_attn_fwd_16x16384x128": ("kernels/tl_flash_attn_fwd.py",
                                       {"Z": 1, "H": 16, "N_CTX": 16384, "HEAD_DIM": 128, "causal": False,
                                        "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}, 20.0),
    "vector_add_2e28": ("kernels/vector_add.py", {"n": 1 << 28}, 10.0),
    "fma_loop_1024_2112x256": ("kernels/math_throughput.py", {"op": "fp32", "n": 2112 * 256, "iters": 1024}, 30.0),
    "vector_add_2e24": ("kernels/vector_add.py", {"n": 1 << 24}, None),
    "vector_add_2e26": ("kernels/vector_add.py", {"n": 1 << 26}, None),
    "tl_vector_add_2e26": ("kernels/tl_vector_add.py", {"n": 1 << 26}, None),
}


def run_one(name: str, exact: bool) -> dict:
    sys.path.insert(0, ROOT)
    from gpusim.api import launch_steps, time_trace, trace_kernel
    from gpusim.config import load_gpu
    from gpusim.kernelfile import load_kernel_file
    path, params, bar = CASES[name]
    gpu = load_gpu("h100")
    mod = load_kernel_file(os.path.join(ROOT, path))
    launch = mod.launch(**params)
    row = {"case": name, "bar_s": bar, "trace_s": 0.0, "sampled_s": 0.0, "exact_s": None, "cycles_sampled": 0.0,
           "cycles_exact": None, "replay": []}
    traces = []
    for st in launch_steps(launch):
        t0 = time.perf_counter()
        if "block" in st:
            tr = trace_kernel(st["kernel"], st["grid"], st["block"], *st["args"], gpu=gpu,
                              shared_bytes=st.get("shared_bytes", 0))
        else:
            tr = trace_kernel(st["kernel"], st["grid"], *st["args"], gpu=gpu, **(st.get("meta") or {}))
        t1 = time.perf_counter()
        rep = time_trace(tr, gpu, progress=False)
        t2 = time.perf_counter()
        row["trace_s"] += t1 - t0
        row["sampled_s"] += t2 - t1
        row["cycles_sampled"] += rep.cycles
        row["replay"].append(rep.context["sampling"]["line"])
        row.setdefault("intervals", []).append(rep.context["sampling"].get("intervals", []))
        row["ctas"] = tr.n_ctas
        traces.append((tr, rep))
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if exact:
        row["exact_s"] = 0.0
        row["cycles_exact"] = 0.0
        for tr, rep in traces:
            t0 = time.perf_counter()
            ex = time_trace(tr, gpu, progress=False, exact=True)
            row["exact_s"] += time.perf_counter() - t0
            row["cycles_exact"] += ex.cycles
            for k in ("dram_bytes_read", "dram_bytes_write", "inst_issued_engine", "occupancy_achieved_pct"):
                row.setdefault("counters", {}).setdefault(k, [0, 0])
                row["counters"][k][0] += rep[k]
                row["counters"][k][1] += ex[k]
    return row


def _n_ctas(step: dict) -> int:
    grid = step["grid"]
    if callable(grid):
        grid = grid(dict(step.get("meta") or {}))
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    n = 1
    for g in grid:
        n *= int(g)
    return n


def suite_one(name: str) -> dict:
    """One suite case: each kernel of its launch traced; those whose replay is sampled also replayed exactly."""
    sys.path.insert(0, ROOT)
    from gpusim.api import launch_steps, time_trace, trace_kernel
    from gpusim.config import load_gpu
    from gpusim.timing.sampling import MIN_WAVES, plan
    from gpusim.validate.suite import case_by_name, load_case
    gpu = load_gpu("h100")
    launch = load_case(case_by_name(name))
    row = {"case": name, "kernels": []}
    for st in launch_steps(launch):
        if _n_ctas(st) < MIN_WAVES * gpu.chip.sm_count:
            continue                               # under MIN_WAVES waves even at one CTA per SM: exact
        t0 = time.perf_counter()
        if "block" in st:
            tr = trace_kernel(st["kernel"], st["grid"], st["block"], *st["args"], gpu=gpu,
                              shared_bytes=st.get("shared_bytes", 0))
        else:
            tr = trace_kernel(st["kernel"], st["grid"], *st["args"], gpu=gpu, **(st.get("meta") or {}))
        t1 = time.perf_counter()
        p = plan(tr, gpu)
        if not p.sampled:
            row["kernels"].append({"kernel": tr.name, "replay": f"exact ({p.reason})"})
            continue
        rep = time_trace(tr, gpu, progress=False)
        t2 = time.perf_counter()
        k = {"kernel": tr.name, "trace_s": t1 - t0, "sampled_s": t2 - t1, "replay": rep.context["sampling"]["line"]}
        if rep.context["sampling"]["mode"] == "sampled":
            ex = time_trace(tr, gpu, progress=False, exact=True)
            k["exact_s"] = time.perf_counter() - t2
            k["err"] = {m: (rep[m] - ex[m]) / ex[m] if ex[m] else 0.0
                        for m in ("cycles", "dram_bytes_read", "dram_bytes_write", "inst_issued_engine",
                                  "l2_hit_rate_pct", "occupancy_achieved_pct")}
        row["kernels"].append(k)
    return row


def main_suite(heavy: bool, pattern: str | None = None) -> int:
    import re
    sys.path.insert(0, ROOT)
    from gpusim.validate.suite import CASES
    worst = 0.0
    print(f"{'case':<36} {'trace s':>8} {'sampled s':>9} {'exact s':>8} {'cycles':>8} {'DRAM rd':>8} {'DRAM wr':>8} "
          f"{'inst':>7} {'L2 hit':>7} {'occ':>7}  (sampled - exact) / exact", flush=True)
    for c in CASES:
        if "heavy" in c.tags and not heavy or pattern and not re.search(pattern, c.name):
            continue
        p = subprocess.run([sys.executable, __file__, "--suite-child", c.name], capture_output=True, text=True,
                           cwd=ROOT)
        if p.returncode:
            print(f"{c.name:<36} ERROR {p.stderr.strip().splitlines()[-1] if p.stderr else 'failed'}", flush=True)
            continue
        row = json.loads(p.stdout.strip().splitlines()[-1])
        for k in row["kernels"]:
            if "err" not in k:
                print(f"{c.name:<36} {k['replay']}", flush=True)
                continue
            e = k["err"]
            worst = max(worst, abs(e["cycles"]))
            print(f"{c.name:<36} {k['trace_s']:>8.1f} {k['sampled_s']:>9.1f} {k['exact_s']:>8.1f} "
                  + " ".join(f"{100 * e[m]:>+7.2f}%" for m in ("cycles", "dram_bytes_read", "dram_bytes_write",
                                                               "inst_issued_engine", "l2_hit_rate_pct",
                                                               "occupancy_achieved_pct")), flush=True)
            print(f"    {k['replay']}", flush=True)
    print(f"worst |cycles error| {100 * worst:.2f}%; machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--exact", action="store_true", help="also replay exactly (slow at these sizes)")
    ap.add_argument("--json")
    ap.add_argument("--suite", action="store_true", help="walk the validation suite's sampled cases")
    ap.add_argument("--heavy", action="store_true", help="with --suite: the heavy cases too")
    ap.add_argument("--match", help="with --suite: only the cases whose name matches this regular expression")
    ap.add_argument("--child")
    ap.add_argument("--suite-child")
    a = ap.parse_args()
    if a.suite_child:
        print(json.dumps(suite_one(a.suite_child)))
        return 0
    if a.suite:
        return main_suite(a.heavy, a.match)
    if a.child:
        print(json.dumps(run_one(a.child, a.exact)))
        return 0
    names = a.cases or list(CASES)
    rows = []
    for n in names:
        if n not in CASES:
            print(f"unknown case {n}; cases: {', '.join(CASES)}", file=sys.stderr)
            return 2
        cmd = [sys.executable, __file__, "--child", n] + (["--exact"] if a.exact else [])
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if p.returncode:
            rows.append({"case": n, "error": p.stderr.strip().splitlines()[-1] if p.stderr else "failed"})
        else:
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        if "error" in r:
            print(f"{n:<32} ERROR {r['error']}", flush=True)
            continue
        tot = r["trace_s"] + r["sampled_s"]
        ex = f"{r['exact_s']:>8.1f}" if r["exact_s"] is not None else f"{'-':>8}"
        cex = f"{r['cycles_exact']:>12,.0f}" if r["cycles_exact"] else f"{'-':>12}"
        err = (f"{100 * (r['cycles_sampled'] - r['cycles_exact']) / r['cycles_exact']:>+7.2f}%"
               if r["cycles_exact"] else f"{'-':>8}")
        bar = "" if r["bar_s"] is None else (f"{r['bar_s']:.0f} s: " + ("met" if tot <= r["bar_s"] else "missed"))
        if len(rows) == 1:
            print(f"{'case':<32} {'trace s':>8} {'sampled s':>9} {'exact s':>8} {'peak MB':>8} {'cycles sampled':>14} "
                  f"{'cycles exact':>12} {'error':>8}  bar (trace + sampled)")
        print(f"{n:<32} {r['trace_s']:>8.1f} {r['sampled_s']:>9.1f} {ex} {r['peak_rss_mb']:>8.0f} "
              f"{r['cycles_sampled']:>14,.0f} {cex} {err}  {bar}", flush=True)
        for line in r["replay"]:
            print(f"    {line}")
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
