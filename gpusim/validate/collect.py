"""Hardware records: run the suite's kernels on a real GPU with the real front ends, and write JSON.

    python -m gpusim.validate.collect --timing --out timing.json      # check + do_bench, compile metadata
    python -m gpusim.validate.collect --ncu --out ncu.json            # Nsight Compute counters, one launch each
    python -m gpusim.validate.collect --micro --out micro.json        # calibration microbenchmarks
    python -m gpusim.validate.collect --micro --ncu --out micro_ncu.json
    python -m gpusim.validate.collect --cpu-check                     # the same harness on the CPU modes
    python -m gpusim.validate.collect --compile-check --out c.json    # compile every case for sm_90, no GPU

Every mode takes ``--cases REGEX`` and ``--shard i/n``.  Records are written after every case, so a run
stopped by a time limit keeps what it finished; ``--time-budget`` stops starting new cases in time.

The same kernel source that gpusim simulates runs here: numba-cuda kernels get numba device arrays, Triton
kernels get torch tensors, and the buffers a multi-kernel case passes between its steps are one device
buffer each (identity of the numpy array in the launch dict).  Each case is checked against its numpy
reference before it is timed; ``do_bench`` clears the L2 between runs (cold cache), as ncu does between
replay passes.

This module imports numpy, the standard library and the suite at import time, and torch / Triton /
numba-cuda only when a mode needs them: never simpy, plotly or the simulator.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

# numba-cuda registers an overload for np.row_stack, which numpy 2.5 removed: restore the alias first
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
# small grids are deliberate here (under-one-wave cases): no warning per launch configuration
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from . import ncu as ncu_tools
from . import suite
from .harness import compare, sass_histogram  # noqa: F401  (re-exported: tests and older scripts import them here)
from .harness import (MODULE, PreparedCase, Record, _child_cmd, _done_cases, _jsonable, _summary, _wall_times_ms,
                      collect_device, environment, free_gpu_memory, kernel_device_times, log, nvidia_smi,
                      profiler_range)
from .cpu_check import cpu_child, run_cpu_check
from .compile_check import run_compile_check


# ================================================================================================ timing mode

def run_timing(args) -> int:
    device = collect_device()
    if device == "cuda":
        import triton.testing
    rec = Record(args.out, "timing")
    cases = suite.select(args.cases, args.shard, suite.SUITES[args.suite])
    skip = _done_cases(args.skip_done)
    rec.data["device_mode"] = device
    rec.data["env"] = environment(gpu=device == "cuda")
    rec.data["clocks_before"] = rec.data["env"].get("nvidia_smi", {})
    rec.data["do_bench"] = {"warmup_ms": 25, "rep_ms": 100, "statistic": "median of return_mode='all'",
                            "l2_flush": "triton clears a 256 MB buffer before every run (cold L2)"}
    rec.data["selection"] = {"suite": args.suite, "cases": args.cases, "shard": args.shard, "n": len(cases)}
    rec.save()
    t_start = time.time()
    for n_done, case in enumerate(cases):
        if case.name in skip:
            continue
        entry = case.to_json()
        rec.data["cases"][case.name] = entry
        if time.time() - t_start > args.time_budget:
            entry["status"] = "skipped"
            entry["error"] = f"time budget of {args.time_budget:.0f} s used up"
            rec.save()
            continue
        log(f"timing {n_done + 1}/{len(cases)} {case.name}")
        t0 = time.time()
        prep = None
        try:
            spec = suite.load_case(case, suite.cpu_params(case) if device == "cpu" else None)
            entry["flops"], entry["min_bytes"] = spec.get("flops"), spec.get("min_bytes")
            prep = PreparedCase(spec, device, case.name)
            prep.run()
            prep.synchronize()
            entry["first_run_s"] = round(time.time() - t0, 3)
            entry["check"] = prep.check()
            entry["kernels"] = prep.compiled_info(sass=not args.no_sass)
            if device == "cuda":
                times = triton.testing.do_bench(prep.run, warmup=25, rep=100, return_mode="all")
            else:
                times = _wall_times_ms(prep.run)
            q = np.quantile(times, [0.2, 0.5, 0.8])
            entry["do_bench_ms"] = {"median": statistics.median(times), "min": min(times), "p20": float(q[0]),
                                    "p80": float(q[2]), "n": len(times)}
            if device == "cuda":
                try:
                    entry["device_time"] = kernel_device_times(prep.run, prep.synchronize, prep.kernel_names())
                except Exception as e:                   # noqa: BLE001
                    entry["device_time_error"] = repr(e)
            entry["status"] = "ok" if entry["check"]["passed"] else "mismatch"
        except Exception as e:                           # noqa: BLE001
            entry["status"] = "error"
            entry["error"] = f"{type(e).__name__}: {e}"
            entry["traceback"] = traceback.format_exc()[-4000:]
            log(f"  ERROR {entry['error'][:300]}")
        entry["wall_s"] = round(time.time() - t0, 3)
        if prep is not None:
            prep.close()
        del prep
        free_gpu_memory()
        rec.save()
        if entry.get("status") == "mismatch":
            log(f"  MISMATCH {json.dumps(entry['check']['outputs'], default=_jsonable)[:400]}")
    rec.data["clocks_after"] = nvidia_smi() if device == "cuda" else {}
    rec.data["wall_s"] = round(time.time() - t_start, 1)
    rec.save()
    return _summary(rec.data["cases"])


# ================================================================================================ ncu mode

def _ncu_base(ncu: str, metrics: list[str]) -> list[str]:
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
            "--metrics", ",".join(metrics)]


PROBE_SCRIPT = (
    "import torch\n"
    "x = torch.ones(1 << 20, device='cuda')\n"
    "torch.cuda.synchronize()\n"
    "torch.cuda.cudart().cudaProfilerStart()\n"
    "y = x * 2.0 + 1.0\n"
    "torch.cuda.synchronize()\n"
    "torch.cuda.cudart().cudaProfilerStop()\n"
)


def probe_metrics(ncu: str, metrics: list[str], workdir: Path, budget_s: float = 240) -> tuple[list[str], dict]:
    """Profile one small torch kernel with the metric list; drop metrics ncu rejects (named in its error
    output, else found by bisection).  Returns (accepted metrics, {dropped: reason})."""
    t0 = time.time()
    dropped: dict[str, str] = {}
    script = workdir / "ncu_probe.py"
    script.write_text(PROBE_SCRIPT)

    def attempt(ms: list[str]) -> tuple[bool, str]:
        r = subprocess.run(_ncu_base(ncu, ms) + [sys.executable, str(script)], capture_output=True, text=True,
                           timeout=300)
        text = r.stdout + r.stderr
        ok = r.returncode == 0 and "==ERROR==" not in text and "==PROF== Profiling" in text
        return ok, text

    ok, text = attempt(metrics)
    rounds = 0
    while not ok and rounds < 4:
        named = ncu_tools.metrics_named_in("\n".join(l for l in text.splitlines() if "ERROR" in l or "rror" in l),
                                           metrics)
        if not named:
            break
        for m in named:
            dropped[m] = "rejected by ncu in probe: " + next((l for l in text.splitlines() if m in l), "")[:300]
        metrics = [m for m in metrics if m not in named]
        ok, text = attempt(metrics)
        rounds += 1
    if ok:
        return metrics, dropped
    log("ncu probe failed without naming a metric; bisecting. ncu said: " + text[-1500:])
    # the whole list fails: find the bad ones by bisection (bounded by the time budget)
    good: list[str] = []

    def bisect(ms: list[str]):
        if time.time() - t0 > budget_s:
            for m in ms:
                dropped[m] = "untested: probe time budget used up"
            return
        ok, _ = attempt(ms)
        if ok:
            good.extend(ms)
        elif len(ms) == 1:
            dropped[ms[0]] = "probe fails with this metric"
        else:
            bisect(ms[:len(ms) // 2])
            bisect(ms[len(ms) // 2:])

    bisect(metrics)
    if not good:
        raise RuntimeError("ncu cannot profile even a torch kernel; last output:\n" + text[-3000:])
    return [m for m in metrics if m in good], dropped


def run_ncu(args) -> int:
    t_begin = time.time()
    out_path = Path(args.out)
    rec = Record(out_path, "ncu_micro" if args.micro else "ncu")
    work = Path(tempfile.mkdtemp(prefix="gpusim_ncu_"))
    stem = out_path.with_suffix("")
    raw_csv = stem.with_name(stem.name + "_raw.csv")
    log_path = stem.with_name(stem.name + "_ncu.log")
    rec.data["env"] = environment()
    ncu = ncu_tools.locate_ncu()
    info = rec.data["ncu"] = {"path": ncu, "version": ncu_tools.ncu_version(ncu)}
    log(f"ncu: {ncu} ({info['version'].splitlines()[-1] if info['version'] else '?'})")
    requested = list(ncu_tools.MICRO_METRICS if args.micro else ncu_tools.SUITE_METRICS)
    if args.metrics:
        requested = [m for m in args.metrics.split(",") if m]
    info["metrics_requested"] = requested
    known, qerr = ncu_tools.query_metric_names(ncu)
    info["query_metrics_count"] = len(known)
    if qerr:
        info["query_metrics_error"] = qerr
    metrics, dropped = ncu_tools.filter_metrics(requested, known)
    rec.save()
    log(f"metrics: {len(metrics)} kept after --query-metrics, {len(dropped)} dropped; probing")
    metrics, dropped_probe = probe_metrics(ncu, metrics, work)
    dropped.update(dropped_probe)
    info["metrics_used"] = metrics
    info["metrics_dropped"] = dropped
    rec.save()
    if dropped:
        log("dropped metrics: " + ", ".join(sorted(dropped)))

    manifest = work / "manifest.json"
    report = work / "report"
    # the child stops starting targets in time for the report import and this process to finish
    child_budget = max(30.0, args.time_budget - (time.time() - t_begin) - 45.0)
    cmd = (_ncu_base(ncu, metrics) + ["--export", str(report), "--force-overwrite"]
           + _child_cmd(args, ["--ncu-child", "--manifest", str(manifest), "--time-budget", f"{child_budget:.0f}"]))
    info["command"] = cmd
    rec.save()
    log("profiling: " + " ".join(cmd[:8]) + " ...")
    t0 = time.time()
    with open(log_path, "w") as lf:
        try:
            r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, timeout=child_budget + 90)
            info["returncode"] = r.returncode
        except subprocess.TimeoutExpired:
            info["returncode"] = "timeout"
    info["profile_wall_s"] = round(time.time() - t0, 1)
    info["log_tail"] = log_path.read_text(errors="replace")[-6000:]
    entries = json.loads(manifest.read_text())["entries"] if manifest.exists() else []
    rec.data["manifest"] = entries
    rep_file = next((p for p in (work / "report.ncu-rep", report) if p.exists()), None)
    rows, units = [], {}
    if rep_file is None:
        info["import_error"] = "ncu wrote no report"
    else:
        base_cmd = [ncu, "--import", str(rep_file), "--csv", "--page", "raw", "--print-units", "base"]
        imp = subprocess.run(base_cmd + ["--print-metric-name", "name"], capture_output=True, text=True, timeout=600)
        if imp.returncode != 0 or '"ID"' not in imp.stdout:     # an ncu without --print-metric-name
            imp = subprocess.run(base_cmd, capture_output=True, text=True, timeout=600)
        raw_csv.write_text(imp.stdout)
        info["raw_csv"] = raw_csv.name
        if imp.returncode != 0:
            info["import_error"] = imp.stderr[-3000:]
        try:
            rows, units = ncu_tools.parse_raw_csv(imp.stdout)
        except ValueError as e:
            info["import_error"] = f"{e}; stderr: {imp.stderr[-2000:]}"
    rec.data["units"] = units
    aligned = {a["name"]: a for a in ncu_tools.align(entries, rows)}
    for e in entries:
        entry = rec.data["cases"].setdefault(e["name"], {})
        if not args.micro:
            try:
                entry.update(suite.case_by_name(e["name"]).to_json())
            except KeyError:
                pass
        entry.update({k: v for k, v in e.items() if k not in ("name",)})
        a = aligned.get(e["name"], {"rows": [], "warnings": []})
        entry["kernels"] = [None if row is None else
                            {"ncu_id": row.get("ID"), "ncu_name": ncu_tools.kernel_name_of(row),
                             "grid": row.get("Grid Size"), "block": row.get("Block Size"),
                             "metrics": row["metrics"]} for row in a["rows"]]
        if a["warnings"]:
            entry["warnings"] = a["warnings"]
        if e.get("status") == "ok" and (not a["rows"] or any(r is None for r in a["rows"])):
            entry["status"] = "no_counters"
    if args.micro:
        from . import microbench
        rec.data["derived"] = microbench.derive_from_ncu(rec.data["cases"])
    rec.data["n_rows"] = len(rows)
    rec.save()
    shutil.rmtree(work, ignore_errors=True)
    log(f"ncu: {len(rows)} kernel rows for {len(entries)} entries in {info['profile_wall_s']} s")
    return _summary(rec.data["cases"])


def ncu_child(args) -> int:
    """Runs under ncu: every target is compiled and warmed outside the profiler range, then launched once
    inside it.  Writes the manifest (names and kernels, in launch order) after every target."""
    manifest = Path(args.manifest)
    device = collect_device()
    if device == "cpu":
        start = stop = (lambda: None)
    else:
        start, stop = profiler_range()
    if args.micro:
        from . import microbench
        targets = [(t.name, t.prepare, {"kind": t.kind, "params": t.params})
                   for t in microbench.select(args.cases, args.shard, quick=args.quick, for_ncu=True)]
    else:
        # on the CPU modes the cases run at their tiny CPU sizes
        targets = [(c.name, (lambda c=c: PreparedCase(
                        suite.load_case(c, suite.cpu_params(c) if device == "cpu" else None), device, c.name)), {})
                   for c in suite.select(args.cases, args.shard, suite.SUITES[args.suite])]
    entries: list[dict] = []
    t_start = time.time()

    def save():
        tmp = manifest.with_name(manifest.name + ".tmp")
        tmp.write_text(json.dumps({"entries": entries}, default=_jsonable))
        os.replace(tmp, manifest)

    for name, prepare, extra in targets:
        e = {"name": name, "profiled": False, "status": "running", **extra}
        entries.append(e)
        if time.time() - t_start > args.time_budget:
            e["status"] = "skipped"
            e["error"] = f"time budget of {args.time_budget:.0f} s used up"
            save()
            continue
        log(f"ncu target {len(entries)}/{len(targets)} {name}")
        prep = None
        active = False
        try:
            prep = prepare()
            prep.run()
            prep.synchronize()
            prep.run()
            prep.synchronize()
            e["kernels"] = prep.kernel_names()
            start()
            active = True
            e["profiled"] = True
            t0 = time.time()
            prep.run()
            prep.synchronize()
            stop()
            active = False
            e["profile_s"] = round(time.time() - t0, 2)
            e["status"] = "ok"
        except Exception as ex:                          # noqa: BLE001
            if active:
                try:
                    stop()
                except Exception:                        # noqa: BLE001
                    pass
            e["status"] = "error"
            e["error"] = f"{type(ex).__name__}: {ex}"
            e["traceback"] = traceback.format_exc()[-3000:]
            log(f"  ERROR {e['error'][:300]}")
        if prep is not None and hasattr(prep, "close"):
            prep.close()
        del prep
        free_gpu_memory()
        save()
    return 0


# ================================================================================================ micro mode

def run_micro(args) -> int:
    from . import microbench
    rec = Record(args.out, "micro")
    rec.data["env"] = environment()
    rec.save()
    t_start = time.time()

    def on_result(name, result):
        rec.data["cases"][name] = result
        rec.save()

    microbench.run_timing(microbench.select(args.cases, args.shard, quick=args.quick), on_result,
                          time_budget=args.time_budget)
    rec.data["derived"] = microbench.derive_from_timing(rec.data["cases"])
    rec.data["clocks_after"] = nvidia_smi()
    rec.data["wall_s"] = round(time.time() - t_start, 1)
    rec.save()
    return _summary(rec.data["cases"])


# ================================================================================================ CLI

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_argument_group("modes (one of --timing, --ncu, --micro, --micro --ncu, --cpu-check, --compile-check)")
    mode.add_argument("--timing", action="store_true", help="check outputs and time every case with do_bench")
    mode.add_argument("--ncu", action="store_true", help="profile every case once under ncu (one child process)")
    mode.add_argument("--micro", action="store_true", help="calibration microbenchmarks (with --ncu: their counters)")
    mode.add_argument("--cpu-check", action="store_true",
                      help="run the harness on the CPU modes (numba simulator, Triton interpreter) at tiny sizes")
    mode.add_argument("--compile-check", action="store_true", help="compile every case for --arch without a GPU")
    ap.add_argument("--out", help="JSON record to write (rewritten after every case)")
    ap.add_argument("--cases", help="regular expression on case names (re.search)")
    ap.add_argument("--suite", choices=sorted(suite.SUITES), default="main",
                    help="case list: main (the validation suite) or tune (autotuning configs x sizes)")
    ap.add_argument("--shard", help="i/n: run every n-th selected case starting at the i-th (1-based)")
    ap.add_argument("--time-budget", type=float, default=480.0,
                    help="seconds after which no new case is started (default 480)")
    ap.add_argument("--skip-done", help="a previous timing record: skip its cases that are ok")
    ap.add_argument("--no-sass", action="store_true", help="timing: skip the SASS opcode histograms")
    ap.add_argument("--metrics", help="ncu: comma-separated metric list replacing the built-in one")
    ap.add_argument("--quick", action="store_true", help="micro: fewer sizes and repetitions")
    ap.add_argument("--defaults", action="store_true",
                    help="cpu-check: each kernel file's default launch (shrunk) instead of the suite's cases")
    ap.add_argument("--arch", type=int, default=90, help="compile-check: target compute capability (default 90)")
    ap.add_argument("--max-shared", type=int, default=232448,
                    help="compile-check: shared memory per block allowed (default 227 KB, H100)")
    # internal: children
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--manifest", help=argparse.SUPPRESS)
    ap.add_argument("--cpu-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.cpu_child:
        return cpu_child(args)
    if args.ncu_child:
        return ncu_child(args)
    chosen = [m for m in ("timing", "ncu", "micro", "cpu_check", "compile_check") if getattr(args, m)]
    if args.micro and args.ncu:
        chosen = ["ncu"]
    if len(chosen) != 1:
        ap.error("choose one mode: --timing, --ncu, --micro, --micro --ncu, --cpu-check or --compile-check")
    if chosen[0] in ("timing", "ncu", "micro") and not args.out:
        ap.error(f"--{chosen[0]} needs --out FILE")
    return {"timing": run_timing, "ncu": run_ncu, "micro": run_micro, "cpu_check": run_cpu_check,
            "compile_check": run_compile_check}[chosen[0]](args)


if __name__ == "__main__":
    sys.exit(main())
