"""Nsight Compute plumbing for the hardware harness: find ``ncu``, choose metrics it knows, parse its CSV.

Standard library only.  The metric names follow Nsight Compute's naming (``unit__counter.rollup.submetric``);
the harness checks each against ``ncu --query-metrics`` and a short probe run before profiling, so one name
this ncu version does not know is dropped (and recorded) instead of failing the whole run.
"""
from __future__ import annotations

import csv
import glob
import io
import os
import re
import shutil
import subprocess

# ---------------------------------------------------------------------------------------------------- metrics

STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
    "short_scoreboard", "sleeping", "tex_throttle", "wait", "gmma",
)

PIPES = ("alu", "fma", "fmaheavy", "fmalite", "fp16", "fp64", "lsu", "xu", "cbu", "adu", "uniform", "tensor",
         "tensor_op_hmma", "tensor_op_gmma", "tensor_op_imma", "tex", "ipa", "tma")

SUITE_METRICS: list[str] = [
    # time and clocks
    "gpc__cycles_elapsed.max",
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "sm__cycles_elapsed.max",
    "sm__cycles_active.avg",
    "dram__cycles_elapsed.avg.per_second",
    # occupancy
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__warps_active.avg.per_cycle_active",
    # global memory: sectors and requests
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sector_hit_rate.pct",
    # local memory (register spills, local arrays)
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum",
    "lts__t_sector_hit_rate.pct",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_atom.sum",
    "lts__t_sectors_op_red.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    # shared memory
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    # instructions
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "sm__inst_executed.avg.per_cycle_active",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__warps_eligible.avg.per_cycle_active",
    *[f"smsp__inst_executed_pipe_{p}.sum" for p in PIPES],
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    # launch configuration and occupancy limits
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_driver",
    "launch__shared_mem_config_size",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__waves_per_multiprocessor",
    "launch__grid_size",
    "launch__block_size",
    "launch__thread_count",
    "launch__sm_count",
    # warp stall reasons: cycles per issued instruction, and average latency per warp
    *[f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS],
    *[f"smsp__average_warp_latency_issue_stalled_{r}.ratio" for r in STALL_REASONS],
]

MICRO_METRICS: list[str] = [
    "gpc__cycles_elapsed.max",
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "lts__t_sectors_op_read.sum",
    "smsp__inst_executed.sum",
    *[f"smsp__inst_executed_pipe_{p}.sum" for p in ("fma", "fmaheavy", "fp64", "xu", "lsu", "alu", "tensor")],
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__grid_size",
    "launch__block_size",
]

# metrics that ncu computes from the launch itself; `--query-metrics` may not list them
NON_HW_PREFIXES = ("launch__", "device__", "profiler__", "sm__maximum_warps_per_active_cycle_pct")


# ---------------------------------------------------------------------------------------------------- ncu itself

def locate_ncu() -> str:
    """The ncu executable: $NCU, then PATH, then the usual install folders (newest version first)."""
    env = os.environ.get("NCU")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise FileNotFoundError(f"$NCU={env!r} is not an executable file")
    found = shutil.which("ncu")
    if found:
        return found
    patterns = ["/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/bin/ncu",
                "/usr/local/cuda*/nsight-compute*/ncu", "/opt/nvidia/nsight-compute/ncu",
                "/usr/local/NVIDIA-Nsight-Compute*/ncu", "/usr/lib/nsight-compute/ncu"]
    candidates = [p for pat in patterns for p in glob.glob(pat) if os.access(p, os.X_OK)]
    if not candidates:
        raise FileNotFoundError("ncu not found: not in $NCU, not on PATH, not under /opt/nvidia/nsight-compute/*/ "
                                "or /usr/local/cuda*/; set NCU=/path/to/ncu")
    return sorted(candidates, key=_version_key)[-1]


def _version_key(path: str):
    return [int(x) for x in re.findall(r"\d+", path)]


def ncu_version(ncu: str) -> str:
    out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    return (out.stdout + out.stderr).strip()


def query_metric_names(ncu: str, timeout: float = 180) -> tuple[set[str], str]:
    """Names listed by ``ncu --query-metrics --query-metrics-mode all`` (full names with suffixes) plus the
    base names; returns (names, error text or "")."""
    names: set[str] = set()
    errors = []
    for mode in ("all", "base"):
        try:
            out = subprocess.run([ncu, "--query-metrics", "--query-metrics-mode", mode],
                                 capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            errors.append(f"--query-metrics-mode {mode}: {e!r}")
            continue
        found = parse_metric_listing(out.stdout)
        if not found:
            errors.append(f"--query-metrics-mode {mode}: rc={out.returncode}, no metric names in output; "
                          f"stderr: {out.stderr.strip()[-500:]}")
        names |= found
    return names, "; ".join(errors)


_NAME_RX = re.compile(r"^([a-z][a-z0-9]*__[A-Za-z0-9_.]+)")


def parse_metric_listing(text: str) -> set[str]:
    """First token of each line that looks like a metric name."""
    out = set()
    for line in text.splitlines():
        m = _NAME_RX.match(line.strip())
        if m:
            out.add(m.group(1))
    return out


def filter_metrics(requested: list[str], known: set[str]) -> tuple[list[str], dict[str, str]]:
    """Keep metrics that ``known`` lists (full name or base name) or that are launch statistics; drop the rest.
    With an empty ``known`` (query failed) everything is kept for the probe to decide."""
    keep, dropped = [], {}
    for m in dict.fromkeys(requested):           # de-duplicate, keep order
        base = m.split(".", 1)[0]
        if not known or m in known or base in known or m.startswith(NON_HW_PREFIXES):
            keep.append(m)
        else:
            dropped[m] = "not listed by ncu --query-metrics"
    return keep, dropped


def metrics_named_in(text: str, metrics: list[str]) -> list[str]:
    """Requested metrics that ncu's error output names (longest first, so a name is not matched inside another)."""
    hits = []
    for m in sorted(metrics, key=len, reverse=True):
        if m in text and not any(m in h for h in hits):
            hits.append(m)
        elif m.split(".", 1)[0] in text and "." in m and not any(m.split(".", 1)[0] in h for h in hits):
            # ncu sometimes names the base metric only
            if re.search(r"(?<![A-Za-z0-9_])" + re.escape(m.split(".", 1)[0]) + r"(?![A-Za-z0-9_])", text):
                hits.append(m)
    return hits


# ---------------------------------------------------------------------------------------------------- CSV

def _number(text: str):
    s = text.strip()
    if s in ("", "n/a", "N/A", "nan"):
        return None
    t = s.replace(",", "") if re.fullmatch(r"-?[\d,]+(\.\d*)?([eE][-+]?\d+)?", s) else s
    try:
        v = float(t)
    except ValueError:
        return s
    return int(v) if v.is_integer() and re.fullmatch(r"-?\d+", t) else v


def parse_raw_csv(text: str) -> tuple[list[dict], dict[str, str]]:
    """Parse ``ncu --csv --page raw`` output: returns (rows, units).  Each row has the info columns under their
    CSV names ("ID", "Kernel Name", "Grid Size", ...) and the metrics under "metrics"."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no CSV header (a line starting with \"ID\") in ncu output; first lines: "
                         + " | ".join(lines[:5]))
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = next(reader)
    metric_cols = [i for i, h in enumerate(header) if "__" in h]
    info_cols = [i for i in range(len(header)) if i not in metric_cols]
    rows, units = [], {}
    for rec in reader:
        if not rec or len(rec) < len(header):
            continue
        if rec[0].strip() == "":                       # the units row
            units.update({header[i]: rec[i] for i in metric_cols})
            continue
        row = {header[i]: rec[i] for i in info_cols}
        row["metrics"] = {header[i]: _number(rec[i]) for i in metric_cols}
        try:
            row["ID"] = int(row["ID"])
        except (KeyError, ValueError):
            pass
        rows.append(row)
    rows.sort(key=lambda r: r["ID"] if isinstance(r.get("ID"), int) else 1 << 60)
    return rows, units


def kernel_name_of(row: dict) -> str:
    for key in ("Kernel Name", "Function Name", "Name"):
        if key in row:
            return row[key]
    return ""


def align(entries: list[dict], rows: list[dict], lookahead: int = 8) -> list[dict]:
    """Give each profiled manifest entry its CSV rows, in launch order.

    ``entries``: [{"name", "profiled": bool, "kernels": [python kernel names in launch order]}, ...].
    Returns per entry {"name", "rows": [row or None per expected kernel], "warnings": [...]}; a row matches an
    expected kernel when the Python name occurs in ncu's (demangled) kernel name.
    """
    out, i = [], 0
    for e in entries:
        res = {"name": e["name"], "rows": [], "warnings": []}
        if not e.get("profiled"):
            out.append(res)
            continue
        for pyname in e.get("kernels", []):
            j = next((j for j in range(i, min(len(rows), i + lookahead)) if pyname in kernel_name_of(rows[j])), None)
            if j is None:
                res["rows"].append(None)
                res["warnings"].append(f"no ncu row for kernel {pyname!r} (next row: "
                                       f"{kernel_name_of(rows[i])[:80] if i < len(rows) else 'none'!r})")
                continue
            for skipped in rows[i:j]:
                res["warnings"].append(f"unexpected ncu row {skipped.get('ID')}: {kernel_name_of(skipped)[:80]!r}")
            res["rows"].append(rows[j])
            i = j + 1
        out.append(res)
    return out
