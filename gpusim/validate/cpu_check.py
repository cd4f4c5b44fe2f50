"""``collect --cpu-check``: the hardware harness run on the real front ends' CPU modes (numba's CUDA simulator,
Triton's interpreter) at tiny sizes, each kernel file in a child process with its mode's environment set.
Checks the harness's plumbing and the kernels' contract without a GPU."""
from __future__ import annotations

import json
import os
import re
import shutil
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

from . import suite
from .harness import (MODULE, PreparedCase, Record, _jsonable, _summary, environment, log)

CPU_ENV = {"cuda": {"NUMBA_ENABLE_CUDASIM": "1"}, "triton": {"TRITON_INTERPRET": "1"}}


def cpu_targets(args) -> list[dict]:
    """What ``--cpu-check`` runs: the suite's cases at tiny sizes, or (``--defaults``) each kernel file's
    default launch with the file's tiny overrides."""
    if args.defaults:
        files = suite.KERNEL_FILES
        if args.cases:
            files = [f for f in files if re.search(args.cases, f)]
        return [{"name": Path(f).stem, "kernel_file": f, "params": dict(suite.CPU_PARAMS[f]),
                 "frontend": "triton" if Path(f).name.startswith("tl_") else "cuda"} for f in files]
    targets, seen = [], {}
    for c in suite.select(args.cases, args.shard, suite.SUITES[getattr(args, "suite", "main")]):
        params = suite.cpu_params(c)
        key = (c.kernel_file, json.dumps(params, sort_keys=True, default=str))
        t = {"name": c.name, "kernel_file": c.kernel_file, "params": params, "frontend": c.frontend}
        if key in seen:
            t["same_as"] = seen[key]       # identical tiny launch: run once
        else:
            seen[key] = c.name
        targets.append(t)
    return targets


def run_cpu_check(args) -> int:
    targets = cpu_targets(args)
    out = Record(args.out or (Path(tempfile.gettempdir()) / "gpusim_cpu_check.json"), "cpu_check")
    out.data["env"] = environment(gpu=False)
    work = Path(tempfile.mkdtemp(prefix="gpusim_cpu_"))
    procs = []
    repo = str(suite.REPO_ROOT)
    for frontend in ("cuda", "triton"):
        group = [t for t in targets if t["frontend"] == frontend and "same_as" not in t]
        if not group:
            continue
        tfile, rfile = work / f"{frontend}_targets.json", work / f"{frontend}_results.json"
        tfile.write_text(json.dumps(group, default=str))
        env = dict(os.environ, **CPU_ENV[frontend])
        env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
        for other, variables in CPU_ENV.items():
            if other != frontend:
                for k in variables:
                    env.pop(k, None)
        cmd = [sys.executable, "-m", MODULE, "--cpu-child", str(tfile), "--out", str(rfile)]
        log(f"cpu-check: {len(group)} {frontend} launches in a child ({' '.join(f'{k}=1' for k in CPU_ENV[frontend])})")
        procs.append((frontend, rfile, subprocess.Popen(cmd, env=env, cwd=repo, stdout=subprocess.PIPE,
                                                         stderr=subprocess.STDOUT, text=True)))
    rc = 0
    results: dict[str, dict] = {}
    for frontend, rfile, p in procs:
        text, _ = p.communicate()
        if p.returncode not in (0, 1) or not rfile.exists():
            log(f"cpu-check child for {frontend} failed (rc={p.returncode}):\n{text[-4000:]}")
            rc = 2
        if rfile.exists():
            results.update(json.loads(rfile.read_text())["results"])
    for t in targets:
        r = dict(results.get(t.get("same_as", t["name"]), {"status": "error", "error": "no result from child"}))
        if "same_as" in t:
            r["same_as"] = t["same_as"]
        r.update(name=t["name"], kernel_file=t["kernel_file"], params=t["params"], frontend=t["frontend"])
        out.data["cases"][t["name"]] = r
    out.save()
    shutil.rmtree(work, ignore_errors=True)
    width = max((len(t["name"]) for t in targets), default=10)
    for name, r in out.data["cases"].items():
        extra = r.get("error", "")[:150] if r.get("status") != "ok" else \
            f"max_abs_err {max(((o.get('max_abs_err') or 0) for o in r['check']['outputs']), default=0):.3g}" \
            f"  {r.get('wall_s', 0):.2f}s" + (f"  (= {r['same_as']})" if "same_as" in r else "")
        print(f"{name:<{width}}  {r.get('status', '?'):<8}  {extra}")
    bad = _summary(out.data["cases"])
    log(f"cpu-check record: {out.path}")
    return rc or bad


def cpu_child(args) -> int:
    targets = json.loads(Path(args.cpu_child).read_text())
    from . import cpumodes
    patched = {}
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        patched["numba_cudasim"] = cpumodes.patch_numba_cudasim()
    if os.environ.get("TRITON_INTERPRET") == "1":
        patched["triton_interpreter"] = cpumodes.patch_triton_interpreter()
        patched["triton_interpreter_libdevice"] = bool(cpumodes.patch_triton_interpreter_libdevice())
    results: dict[str, dict] = {}
    out = Path(args.out)

    def save():
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps({"patched": patched, "results": results}, default=_jsonable))
        os.replace(tmp, out)

    for t in targets:
        r = results[t["name"]] = {"status": "running"}
        t0 = time.time()
        prep = None
        try:
            module = suite.load_kernel_module(t["kernel_file"])
            spec = module.launch(**t["params"])
            prep = PreparedCase(spec, "cpu", t["name"])
            expected = {"cuda": "numba", "triton": "triton"}[t["frontend"]]
            if prep.frontend != expected:
                raise RuntimeError(f"{t['kernel_file']} ran on {prep.frontend}, expected {expected}")
            kinds = {type(st["kernel"]).__name__ for st in prep.steps}
            r["kernel_types"] = sorted(kinds)
            prep.run()
            r["check"] = prep.check()
            r["kernels"] = prep.kernel_names()
            r["status"] = "ok" if r["check"]["passed"] else "mismatch"
        except Exception as e:                           # noqa: BLE001
            r["status"] = "error"
            r["error"] = f"{type(e).__name__}: {e}"
            r["traceback"] = traceback.format_exc()[-3000:]
        r["wall_s"] = round(time.time() - t0, 3)
        if prep is not None:
            prep.close()
        save()
    save()
    return 0 if all(r["status"] == "ok" for r in results.values()) else 1
