"""Helpers shared by the scenarios: simulate a kernel file's launch() and read metrics off the reports."""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from gpusim.api import check_outputs, simulate_launch  # noqa: E402
from gpusim.cli import load_kernel_file  # noqa: E402


def run(kernel_file: str, gpu: str = "h100", **params) -> dict:
    """Simulate ``kernels/<kernel_file>`` with ``launch(**params)``; return summed/first metrics."""
    mod = load_kernel_file(os.path.join(ROOT, "kernels", kernel_file))
    launch = mod.launch(**params)
    reports = simulate_launch(launch, gpu)
    ok = all(c[2] for c in check_outputs(launch))
    if not ok:
        raise SystemExit(f"{kernel_file} {params}: outputs do not match the numpy reference")
    first = reports[0]
    out = {k: first[k] for k in first.metrics}
    for k in ("cycles", "inst_executed", "dram_bytes_read", "dram_bytes_write", "gld_sectors", "gld_requests"):
        out[k] = sum(r[k] for r in reports)
    out["kernels"] = len(reports)
    out["time_us"] = sum(r["time_us"] for r in reports)
    out["meta"] = first.trace.meta if first.trace is not None else {}
    return out


def table(rows: list[list], head: list[str]) -> None:
    """Print a fixed-width table (the golden .out files compare it exactly)."""
    w = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(str(h).rjust(w[i]) for i, h in enumerate(head)))
    for r in rows:
        print("  ".join(str(c).rjust(w[i]) for i, c in enumerate(r)))
