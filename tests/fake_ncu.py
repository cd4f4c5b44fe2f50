"""A stand-in for Nsight Compute's ``ncu`` command line, for testing the harness's plumbing without a GPU.

It answers ``--version`` and ``--query-metrics`` (leaving out UNLISTED), rejects the metrics in REJECTED at
profile time the way ncu does, runs the application (unless it is the harness's probe script), and on
``--import`` prints a raw CSV page with one row per kernel the application's manifest says it launched.
"""
import csv
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpusim.validate import ncu  # noqa: E402

UNLISTED = {"smsp__inst_executed_pipe_tma"}          # missing from --query-metrics
REJECTED = {"launch__sm_count"}                       # accepted by the query filter, refused when profiling
WITH_VALUE = {"--clock-control", "--profile-from-start", "--target-processes", "--metrics", "--export",
              "--query-metrics-mode"}


def main(args):
    if "--version" in args:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2099.1.0.0 (fake)")
        return 0
    if "--query-metrics" in args:
        print("Device FAKE (GH100)\n" + "-" * 40 + "\nMetric Name    Metric Description")
        for m in sorted(set(ncu.SUITE_METRICS) | set(ncu.MICRO_METRICS)):
            if m.split(".")[0] not in UNLISTED and not m.startswith("launch__"):
                print(f"{m.split('.')[0]:<60} a counter")
        return 0
    if "--import" in args:
        rep = json.loads(Path(args[args.index("--import") + 1]).read_text())
        w = csv.writer(sys.stdout, quoting=csv.QUOTE_ALL)
        info = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
                "Grid Size", "Device", "CC"]
        w.writerow(info + rep["metrics"])
        w.writerow([""] * len(info) + ["unit"] * len(rep["metrics"]))
        for i, k in enumerate(rep["kernels"]):
            w.writerow([str(i), "1", "python3", "host", k, "1", "7", "(256, 1, 1)", "(4, 1, 1)", "0", "9.0"]
                       + [f"{1000 * (i + 1) + j:,}" for j in range(len(rep["metrics"]))])
        return 0
    metrics = args[args.index("--metrics") + 1].split(",")
    bad = [m for m in metrics if m in REJECTED]
    if bad:
        print(f"==ERROR== Failed to find metric {bad[0]}")
        return 1
    i = 0
    while i < len(args) and args[i].startswith("--"):
        i += 2 if args[i] in WITH_VALUE else 1
    app = args[i:]
    rc = 0
    if not any(a.endswith("ncu_probe.py") for a in app):
        rc = subprocess.run(app).returncode
    print('==PROF== Profiling "kernel" - 0: 0%....50%....100% - 1 pass')
    if "--export" in args:
        kernels = []
        if "--manifest" in app:
            for e in json.loads(Path(app[app.index("--manifest") + 1]).read_text())["entries"]:
                if e.get("profiled"):
                    kernels += [f"cudapy::gpusim_kernels::{k}[abi:v1](Array<float, 1, C>)" for k in e["kernels"]]
        Path(args[args.index("--export") + 1] + ".ncu-rep").write_text(json.dumps({"metrics": metrics,
                                                                                   "kernels": kernels}))
    print("==PROF== Disconnected from process 1")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
