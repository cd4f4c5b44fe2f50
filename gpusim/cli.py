"""Command line: ``gpusim run FILE``, ``gpusim gpus``, ``gpusim validate ...``.

``gpusim run kernels/vector_add.py`` imports the file, calls its ``launch()`` (parameters with ``-p k=v``),
simulates every kernel it launches on the chosen GPU, checks the outputs against the file's numpy reference
and prints the report (``--json`` for machine-readable output).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from .errors import GpusimError


def load_kernel_file(path: str):
    """Import a kernel file by path as a module (its name derived from the file name)."""
    p = Path(path)
    if not p.exists():
        raise GpusimError(f"kernel file {path!r} does not exist")
    name = "gpusim_kernel_" + p.stem
    spec = importlib.util.spec_from_file_location(name, p)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    if not hasattr(mod, "launch"):
        raise GpusimError(f"{path}: defines no launch() function (see kernels/README.md for the convention)")
    return mod


def _parse_params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items or []:
        if "=" not in it:
            raise GpusimError(f"parameter {it!r} is not of the form key=value")
        k, v = it.split("=", 1)
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def cmd_run(a: argparse.Namespace) -> int:
    from .api import check_outputs, simulate_launch
    from .config import load_gpu

    gpu = load_gpu(a.gpu)
    mod = load_kernel_file(a.file)
    launch = mod.launch(**_parse_params(a.param))
    want_timeline = bool(a.html or a.trace)
    progress = None
    if not a.json and sys.stderr.isatty():
        from .progress import StepProgress
        progress = StepProgress("simulating")
    reports = simulate_launch(launch, gpu, record_timeline=want_timeline, progress=progress)
    checks = check_outputs(launch) if "reference" in launch else []
    ok = all(c[2] for c in checks)
    if a.json:
        payload = {"file": a.file, "reports": [r.to_dict() for r in reports],
                   "outputs_match_reference": ok,
                   "checks": [{"output": str(k), "max_abs_error": e, "ok": o} for k, e, o in checks]}
        print(json.dumps(payload, indent=1, default=str))
    else:
        for r in reports:
            print(r)
            print()
        if len(reports) > 1:
            tot = sum(r.cycles for r in reports)
            print(f"{len(reports)} kernels, {tot:,.0f} cycles in all ({tot / gpu.chip.sm_clock_mhz:.2f} us)")
        for k, e, o in checks:
            print(f"output {k}: {'matches' if o else 'DOES NOT MATCH'} the numpy reference (max abs error {e:.3g})")
    if a.html:
        from .viz import write_html
        write_html(reports, a.html, gpu)
        print(f"wrote {a.html}", file=sys.stderr)
    if a.trace:
        from .viz import write_chrome_trace
        write_chrome_trace(reports, a.trace)
        print(f"wrote {a.trace}", file=sys.stderr)
    return 0 if ok else 1


def cmd_gpus(a: argparse.Namespace) -> int:
    from .config import load_gpu, preset_names
    for name in preset_names():
        g = load_gpu(name)
        print(f"{name:<9} {g.name:<26} {g.chip.sm_count:>4} SMs  {g.chip.sm_clock_mhz:>5.0f} MHz  "
              f"L2 {g.l2.size_bytes / 2**20:>4.0f} MB  DRAM {g.dram.kind} {g.dram.peak_bandwidth_gbps:>5.0f} GB/s")
    if a.verbose:
        g = load_gpu(a.verbose)
        for k, src in sorted(g.sources.items()):
            sec, par = k.split(".", 1)
            print(f"  {k:<40} {getattr(getattr(g, sec), par)!s:<30} {src}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpusim", description="Simulate GPU kernels on a modelled GPU.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="simulate the launch() of a kernel file and print its report")
    r.add_argument("file")
    r.add_argument("--gpu", default="h100", help="preset name (gpusim gpus) or a .toml config file")
    r.add_argument("-p", "--param", action="append", default=[], help="launch() parameter, key=value")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--html", metavar="FILE", help="write a self-contained HTML page with timeline and plots")
    r.add_argument("--trace", metavar="FILE", help="write the warp timeline as a Chrome trace (Perfetto)")
    r.set_defaults(fn=cmd_run)
    g = sub.add_parser("gpus", help="list the GPU presets")
    g.add_argument("-v", "--verbose", metavar="PRESET", help="show every parameter of PRESET with its source")
    g.set_defaults(fn=cmd_gpus)
    try:
        from .validate.cli import add_parser as add_validate
        add_validate(sub)
    except ImportError:
        pass
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except GpusimError as e:
        print(f"gpusim: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
