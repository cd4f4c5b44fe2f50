"""The committed H100 (and H200: ``records/h200/``) records, read back as one measured value per case and metric.

Records are the JSON files in ``records/`` written by ``collect.py`` on the GPU machine: ``timing.json``
(do_bench medians, CUPTI device times, compiler facts), ``ncu_*.json`` (Nsight Compute counters, one row per
kernel launched) and ``micro*.json`` (calibration microbenchmarks).  A case that launches several kernels
(steps) is aggregated the way its metric composes: counts and cycles add up, ratios are weighted.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

RECORDS_DIR = Path(__file__).with_name("records")
#: the GPU whose records are read: ``h100`` (``records/``) or another preset name with a folder ``records/<name>/``
#: (``records/h200/``); set by ``use_gpu`` through the environment so worker processes read the same records
RECORDS_GPU_ENV = "GPUSIM_RECORDS_GPU"


def records_gpus() -> list[str]:
    """The GPUs with committed records."""
    return ["h100"] + sorted(p.name for p in RECORDS_DIR.iterdir() if p.is_dir() and any(p.glob("timing*.json")))


def records_dir() -> Path:
    name = os.environ.get(RECORDS_GPU_ENV, "h100").strip().lower() or "h100"
    return RECORDS_DIR if name == "h100" else RECORDS_DIR / name


def use_gpu(name: str) -> None:
    """Read the records of GPU ``name`` from now on (this process and the workers it starts).  ValueError when
    there are none."""
    name = name.strip().lower()
    if name not in records_gpus():
        raise ValueError(f"no hardware records for GPU {name!r}: records exist for {', '.join(records_gpus())}")
    os.environ[RECORDS_GPU_ENV] = name

# gpusim metric key -> (Nsight Compute metric, how steps combine: "sum" | "max" | "wavg:<weight metric>" | "first")
NCU_METRICS: dict[str, tuple[str, str]] = {
    "cycles": ("gpc__cycles_elapsed.max", "sum"),
    "time_us": ("gpu__time_duration.sum", "sum"),         # recorded in ns: measured() converts to us
    "inst_executed": ("smsp__inst_executed.sum", "sum"),
    "threads_per_inst": ("smsp__thread_inst_executed_per_inst_executed.ratio", "wavg:smsp__inst_executed.sum"),
    "gld_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "sum"),
    "gld_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sum"),
    "gst_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "sum"),
    "gst_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sum"),
    "dram_bytes_read": ("dram__bytes_read.sum", "sum"),
    "dram_bytes_write": ("dram__bytes_write.sum", "sum"),
    "l2_hit_rate_pct": ("lts__t_sector_hit_rate.pct", "wavg:lts__t_sectors_op_read.sum"),
    "l1_hit_rate_pct": ("l1tex__t_sector_hit_rate.pct", "wavg:l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    "shared_ld_bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "sum"),
    "shared_st_bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "sum"),
    "shared_ld_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "sum"),
    "occupancy_theoretical_pct": ("sm__maximum_warps_per_active_cycle_pct", "first"),
    "occupancy_achieved_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active", "wavg:gpc__cycles_elapsed.max"),
    "registers_per_thread": ("launch__registers_per_thread", "max"),
    "shared_static_bytes": ("launch__shared_mem_per_block_static", "max"),
    "shared_dynamic_bytes": ("launch__shared_mem_per_block_dynamic", "max"),
    "waves": ("launch__waves_per_multiprocessor", "max"),
}
for _r in ("selected", "not_selected", "long_scoreboard", "short_scoreboard", "barrier", "math_pipe_throttle",
           "wait", "mio_throttle", "lg_throttle"):
    NCU_METRICS[f"stall_{_r}"] = (f"smsp__average_warp_latency_issue_stalled_{_r}.ratio", "wavg:smsp__inst_executed.sum")


@functools.lru_cache(maxsize=None)
def _load_from(d: Path, name: str) -> dict:
    with open(d / name) as f:
        return json.load(f)


def _load(name: str) -> dict:
    return _load_from(records_dir(), name)


def record_files(prefix: str) -> list[str]:
    return sorted(p.name for p in records_dir().glob(f"{prefix}*.json"))


def ncu_cases() -> dict[str, dict]:
    """case name -> its ncu record (all shards merged)."""
    return _ncu_cases(records_dir())


@functools.lru_cache(maxsize=None)
def _ncu_cases(d: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for fn in sorted(p.name for p in d.glob("ncu_*.json")):
        out.update(_load_from(d, fn)["cases"])
    return out


def ncu_excluded() -> dict[str, str]:
    """case name -> why its Nsight row was left out of the record (an ncu file's ``excluded``: a counter that
    cannot be, next to a plausible do_bench time of the same launch)."""
    out: dict[str, str] = {}
    for fn in record_files("ncu_"):
        for names, why in _load(fn).get("excluded", {}).items():
            out.update({n.strip(): why for n in names.split(",")})
    return out


def timing_cases() -> dict[str, dict]:
    return _timing_cases(records_dir())


@functools.lru_cache(maxsize=None)
def _timing_cases(d: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for fn in sorted(p.name for p in d.glob("timing*.json")):
        out.update(_load_from(d, fn)["cases"])
    return out


def device_info() -> dict[str, Any]:
    """GPU, driver, package versions and clocks of the record machine."""
    t = _load(record_files("timing")[0])
    env = t.get("env", {})
    smi = env.get("nvidia_smi", {})
    return {"gpu": env.get("gpu", {}).get("name", smi.get("name")), "driver": smi.get("driver_version"),
            "cuda": env.get("torch_cuda"), "packages": env.get("packages", {}),
            "sm_clock_mhz": smi.get("clocks.sm"), "mem_clock_mhz": smi.get("clocks.mem"),
            "date": t.get("created_utc", "")[:10]}


def kernel_metrics(case: str) -> list[dict[str, Any]]:
    """The ncu metrics of each kernel a case launched, in launch order."""
    rec = ncu_cases().get(case)
    if rec is None or rec.get("status") != "ok":
        return []
    return [k["metrics"] for k in rec["kernels"]]


def _combine(rows: list[dict], metric: str, how: str) -> float | None:
    vals = [r.get(metric) for r in rows]
    if not vals or any(v is None or isinstance(v, str) for v in vals):
        return None
    if how == "sum":
        return float(sum(vals))
    if how == "max":
        return float(max(vals))
    if how == "first":
        return float(vals[0])
    if how.startswith("wavg:"):
        w = [float(r.get(how[5:]) or 0) for r in rows]
        tot = sum(w)
        return float(sum(v * x for v, x in zip(vals, w)) / tot) if tot else float(vals[0])
    raise ValueError(how)


def measured(case: str) -> dict[str, float]:
    """Measured values of a case, keyed by gpusim metric names (missing metrics are absent)."""
    rows = kernel_metrics(case)
    out: dict[str, float] = {}
    if rows:
        for key, (metric, how) in NCU_METRICS.items():
            v = _combine(rows, metric, how)
            if v is not None:
                out[key] = v
        if out.get("gld_requests"):
            out["gld_sectors_per_request"] = out["gld_sectors"] / out["gld_requests"]
        if out.get("gst_requests"):
            out["gst_sectors_per_request"] = out["gst_sectors"] / out["gst_requests"]
        if "shared_static_bytes" in out:
            out["shared_bytes_per_cta"] = out.pop("shared_static_bytes") + out.pop("shared_dynamic_bytes", 0.0)
        if "time_us" in out:
            out["time_us"] /= 1e3                     # ncu records gpu__time_duration in ns (the files' "units")
        out["n_kernels"] = len(rows)
    t = timing_cases().get(case)
    if t and t.get("status") == "ok":
        out["do_bench_us"] = 1e3 * t["do_bench_ms"]["median"]
        dt = t.get("device_time") or {}
        if dt.get("total_median_us"):
            out["device_time_us"] = dt["total_median_us"]
    return out


def micro() -> dict[str, dict]:
    """Microbenchmark entries by name, timed and (where profiled) with their ncu metrics."""
    out: dict[str, dict] = {}
    for fn in ("micro.json", "micro_ncu.json"):
        if (RECORDS_DIR / fn).exists():            # the H100's: the calibration microbenchmarks
            d = _load_from(RECORDS_DIR, fn)
            for name, e in d.get("cases", d.get("entries", {})).items():
                out.setdefault(name, {}).update({("ncu" if "ncu" in fn else "timed"): e})
    return out
