"""`gpusim tune` held against the H100: for each size of the autotuning records (``records/tune_mm_timing.json``:
Triton tutorial 03's 16 matmul configs x 8 sizes, timed on the GPU), the config gpusim ranks first and its
*real* time (the kernel's duration, ``measured``) against the real best.  ``loss`` = real time of the simulated pick / real best - 1.  Configs the H100
refused (out of resources: shared memory over 227 KB) must be refused by the simulation too.  ``--probe``: the
same at 6 sizes no choice of the model was made on (``suite.TUNE_MM_PROBE_SIZES``, 2 of them not multiples of
16), collected later on the lent H200 (``records/h200/tune_mm_probe_timing.json``) and simulated on the H200
preset.

    python -m gpusim.validate.tune_check [--sizes 512,1000] [--jobs 2] [--probe]   (benchmarks/tune.py: both)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path

from . import suite
from .records import RECORDS_DIR

RECORD = "tune_mm_timing.json"
PROBE_RECORD = "h200/tune_mm_probe_timing.json"


def measured(size: int, record: str = RECORD) -> dict[str, float | None]:
    """Config name -> the kernel's real duration (us), None where the GPU refused the config.

    The duration is the record's ``device_time`` (CUPTI kernel time, L2 flushed before each run: what the simulator
    predicts); Triton's ``do_bench`` median also holds the launch overhead, which at small sizes is most of it and
    varies 2-4x between configs and runs (768^3 on the H200: do_bench 11-35 us for kernels of 5.7-8.1 us), so it
    is used only where a record has no ``device_time``."""
    cases = json.loads((RECORDS_DIR / record).read_text())["cases"]
    out = {}
    for name, c in cases.items():
        m = re.fullmatch(rf"tune_mm_{size}_(.+)", name)
        if m:
            dev = (c.get("device_time") or {}).get("total_median_us")
            out[m.group(1)] = None if c["status"] != "ok" else (dev if dev else 1e3 * c["do_bench_ms"]["median"])
    return out


def _cfg_name(p: dict) -> str:
    return f"{p['BM']}x{p['BN']}x{p['BK']}_w{p['num_warps']}_s{p['num_stages']}"


def simulate(size: int, gpu: str = "h100", jobs: int | None = None) -> dict[str, float | None]:
    """Config name -> simulated us (None: refused), every tutorial config at M = N = K = size."""
    from ..tuner import ranking
    cases = [c for c in suite.TUNE_CASES if c.name.startswith(f"tune_mm_{size}_")]
    if not cases:
        raise ValueError(f"no autotuning configs for size {size}: sizes {suite.TUNE_MM_SIZES + suite.TUNE_MM_PROBE_SIZES}")
    keys = ("BM", "BN", "BK", "num_warps", "num_stages", "GROUP_M")
    lines = []
    for c in cases:
        lines.append("[[config]]")
        lines += [f"{k} = {c.params[k]}" for k in keys]
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "configs.toml"
        f.write_text("\n".join(lines) + "\n")
        rows = ranking(str(suite.REPO_ROOT / "kernels" / "tl_matmul.py"), {"M": size, "N": size, "K": size}, gpu,
                       str(f)) if jobs is None else _ranking_jobs(size, f, gpu, jobs)
    return {_cfg_name(r["params"]): r["us"] for r in rows}


def _ranking_jobs(size, f, gpu, jobs):
    from ..tuner import tune
    t = tune(str(suite.REPO_ROOT / "kernels" / "tl_matmul.py"), {"M": size, "N": size, "K": size}, gpu, str(f),
             jobs=jobs)
    return [r for x in t for r in x.rows]


def compare(size: int, jobs: int | None = None, gpu: str = "h100", record: str = RECORD) -> dict:
    meas, sim = measured(size, record), simulate(size, gpu=gpu, jobs=jobs)
    if not meas:
        raise ValueError(f"no autotuning records for size {size} in {record}")
    real_ok = {k: v for k, v in meas.items() if v is not None}
    best = min(real_ok, key=real_ok.get)
    sim_ok = {k: v for k, v in sim.items() if v is not None}
    pick = min(sim_ok, key=sim_ok.get)
    real_pick = meas.get(pick)
    return {"size": size, "sim_us": sim, "real_us": meas, "real_best": best, "real_best_us": real_ok[best],
            "sim_pick": pick,
            "sim_pick_real_us": real_pick,
            "loss_pct": None if real_pick is None else 100 * (real_pick / real_ok[best] - 1),
            "refused_real": sorted(k for k, v in meas.items() if v is None),
            "refused_sim": sorted(k for k, v in sim.items() if v is None),
            "first_config_loss_pct": 100 * (meas[_cfg_name(suite.TUNE_CASES[0].params)] / real_ok[best] - 1)
            if meas.get(_cfg_name(suite.TUNE_CASES[0].params)) else None}


def table(results: list[dict]) -> str:
    head = f"{'size':>5}  {'real best':<22} {'us':>8}  {'simulated pick':<22} {'its real us':>11}  {'loss':>7}  refusals"
    lines = [head]
    for r in results:
        loss = "refused" if r["loss_pct"] is None else f"{r['loss_pct']:+6.1f}%"
        ref = "same" if r["refused_real"] == r["refused_sim"] else \
            f"real {len(r['refused_real'])} vs sim {len(r['refused_sim'])}"
        real_us = "-" if r["sim_pick_real_us"] is None else f"{r['sim_pick_real_us']:.1f}"
        lines.append(f"{r['size']:>5}  {r['real_best']:<22} {r['real_best_us']:>8.1f}  {r['sim_pick']:<22} "
                     f"{real_us:>11}  {loss:>7}  {ref}")
    ok = [r for r in results if r["loss_pct"] is not None and r["loss_pct"] <= 5]
    lines.append(f"simulated pick within 5% of the real best: {len(ok)}/{len(results)} sizes (bar: 80%)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpusim.validate.tune_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", help="comma-separated (default: every size of the record)")
    ap.add_argument("--probe", action="store_true", help="the held-out sizes, collected on the H200, simulated on "
                    "the h200 preset")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    sizes = suite.TUNE_MM_PROBE_SIZES if a.probe else suite.TUNE_MM_SIZES
    if a.sizes:
        sizes = [int(x) for x in a.sizes.split(",")]
    gpu, record = ("h200", PROBE_RECORD) if a.probe else ("h100", RECORD)
    results = []
    for s in sizes:
        results.append(compare(s, jobs=a.jobs, gpu=gpu, record=record))
        print(table(results[-1:]).splitlines()[1], flush=True)
    print(table(results))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
