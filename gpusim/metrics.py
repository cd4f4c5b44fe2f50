"""Counters, named as Nsight Compute names them, from a trace (counts) and an engine run (time).

Counts that depend only on what the kernel did -- instructions, sectors and requests, bank conflicts, active
threads per instruction -- come from the trace; everything that depends on time or on cache state -- cycles,
occupancy achieved, hit rates, DRAM bytes, stall reasons -- comes from the engine.  ``Report`` keeps each
value with its Nsight Compute metric name, unit and meaning.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import GPUConfig
from .timing.engine import EngineResult
from .trace import KernelTrace, OpKind, Space, _POPCOUNT4


@dataclass(frozen=True)
class Metric:
    key: str            # gpusim's name
    ncu: str            # Nsight Compute's name ('' when Nsight has none)
    value: Any
    unit: str
    meaning: str


def trace_counts(trace: KernelTrace) -> dict[str, float]:
    """Instruction, request, sector and wavefront counts of a trace (exact; no timing involved)."""
    c = {"inst": 0, "thread_inst": 0, "gld_req": 0, "gld_sectors": 0, "gld_bytes": 0, "gst_req": 0,
         "gst_sectors": 0, "gst_bytes": 0, "shld_wavefronts": 0, "shld_ideal": 0, "shst_wavefronts": 0,
         "shst_ideal": 0, "shld_req": 0, "shst_req": 0, "local_req": 0, "atom_req": 0, "mma_inst": 0}
    ic = trace.instruction_counts()
    c["inst"] = ic["inst_executed"]
    c["thread_inst"] = ic["thread_inst_executed"]
    c["per_pipe"] = ic["per_pipe"]
    for t in trace.tables:
        if t.active is not None:
            nz = t.active != 0
        for i, op in enumerate(t.ops):
            if op.kind == OpKind.MMA:
                c["mma_inst"] += op.n_inst * (t.n_warps if t.active is None else int(nz[i].sum()))
            m = op.mem
            if m is None:
                continue
            warps = np.ones(t.n_warps, bool) if t.active is None else nz[i]
            nw = int(warps.sum())
            req = op.n_inst * nw
            if m.space == Space.SHARED:
                wf = int(m.wavefronts[warps].sum())
                ideal = int(m.shared_ideal_wavefronts[warps].sum())
                if op.kind == OpKind.STORE:
                    c["shst_wavefronts"] += wf
                    c["shst_ideal"] += ideal
                    c["shst_req"] += req
                else:
                    c["shld_wavefronts"] += wf
                    c["shld_ideal"] += ideal
                    c["shld_req"] += req
                continue
            sectors = int(_POPCOUNT4[m.smask].sum())
            if m.space == Space.LOCAL:
                c["local_req"] += req
                continue
            if op.kind in (OpKind.LOAD, OpKind.ASYNC_COPY):
                c["gld_req"] += req
                c["gld_sectors"] += sectors
                c["gld_bytes"] += m.bytes_requested
            elif op.kind == OpKind.STORE:
                c["gst_req"] += req
                c["gst_sectors"] += sectors
                c["gst_bytes"] += m.bytes_requested
            elif op.kind == OpKind.ATOMIC:
                c["atom_req"] += req
    return c


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b else 0.0


@dataclass
class Report:
    """The result of simulating one kernel launch: metrics with their Nsight Compute names, and context."""

    kernel: str
    gpu: str
    metrics: dict[str, Metric]
    context: dict[str, Any] = field(default_factory=dict)
    trace: KernelTrace | None = field(default=None, repr=False)
    engine: EngineResult | None = field(default=None, repr=False)
    config: GPUConfig | None = field(default=None, repr=False)
    # choices gpusim made for the user (a default taken, a value capped, a feature ignored), one sentence each;
    # gathered from the config, the trace (KernelTrace.notes) and the engine; printed under "notes:"
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """Add a note (duplicates dropped)."""
        if text and text not in self.notes:
            self.notes.append(text)

    def __getitem__(self, key: str) -> Any:
        if key in self.metrics:
            return self.metrics[key].value
        for m in self.metrics.values():
            if m.ncu == key:
                return m.value
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    @property
    def cycles(self) -> float:
        return self["cycles"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "gpu": self.gpu,
            "metrics": {k: {"value": m.value, "ncu": m.ncu, "unit": m.unit} for k, m in self.metrics.items()},
            "context": self.context,
            "notes": list(self.notes),
            "config": self.config.to_dict() if self.config is not None else None,
        }

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), default=_jsonable, **kw)

    def __str__(self) -> str:
        return format_report(self)


def _jsonable(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (tuple, set)):
        return list(o)
    return str(o)


SECTIONS = [
    ("Time", ["cycles", "time_us", "ipc", "launch_overhead_cycles", "waves"]),
    ("Occupancy", ["occupancy_theoretical_pct", "occupancy_achieved_pct", "occupancy_limiter", "ctas_per_sm",
                   "registers_per_thread", "shared_bytes_per_cta", "l1_bytes"]),
    ("Instructions", ["inst_executed", "threads_per_inst", "inst_issued_engine"]),
    ("Global memory", ["gld_requests", "gld_sectors", "gld_sectors_per_request", "gld_efficiency_pct",
                       "gst_requests", "gst_sectors", "gst_sectors_per_request", "gst_efficiency_pct"]),
    ("Caches and DRAM", ["l1_hit_rate_pct", "l2_hit_rate_pct", "dram_bytes_read", "dram_bytes_write",
                         "dram_bandwidth_gbps", "dram_bandwidth_pct_of_peak"]),
    ("Shared memory", ["shared_ld_wavefronts", "shared_ld_bank_conflicts", "shared_st_bank_conflicts"]),
]


def build_report(trace: KernelTrace, gpu: GPUConfig, res: EngineResult, wall_s: float = 0.0,
                 timing_s: float = 0.0) -> Report:
    """Turn a trace and an engine run into a Report.  ``wall_s``: host seconds for the whole simulation
    (functional execution + trace + timing); ``timing_s``: the timing engine's share."""
    c = trace_counts(trace)
    mem = res.memory
    occ = res.occupancy
    clock_mhz = gpu.chip.sm_clock_mhz
    cycles = float(res.cycles)
    time_us = cycles / clock_mhz
    n_sm = gpu.chip.sm_count
    M: dict[str, Metric] = {}

    def put(key, ncu, value, unit, meaning):
        M[key] = Metric(key, ncu, value, unit, meaning)

    put("cycles", "gpc__cycles_elapsed.max", round(cycles), "cycle", "kernel duration in SM cycles")
    put("time_us", "gpu__time_duration.sum", time_us, "us", f"duration at the preset clock ({clock_mhz:.0f} MHz)")
    active = res.sm_active_cycles
    put("ipc", "sm__inst_executed.avg.per_cycle_active", _ratio(c["inst"], active), "inst/cycle",
        "warp instructions per active cycle per SM")
    put("launch_overhead_cycles", "", res.launch_overhead_cycles, "cycle", "launch to first CTA")
    waves = trace.n_ctas / max(1, occ.ctas_per_sm * n_sm)
    put("waves", "launch__waves_per_multiprocessor", waves, "", "CTAs / (CTAs per SM x SMs)")
    put("occupancy_theoretical_pct", "sm__maximum_warps_per_active_cycle_pct", occ.theoretical_pct, "%",
        "resident warps allowed / max warps")
    achieved = 100.0 * _ratio(res.sm_warp_cycles, res.sm_active_cycles) / gpu.sm.max_warps
    put("occupancy_achieved_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", achieved, "%",
        "average resident warps over active cycles / max warps")
    put("occupancy_limiter", "launch__occupancy_limit_*", occ.limiter, "", "resource that bounds CTAs per SM")
    put("ctas_per_sm", "launch__occupancy_limit_" + {"shared_memory": "shared_mem"}.get(occ.limiter, occ.limiter),
        occ.ctas_per_sm, "CTA", "CTAs resident per SM")
    put("registers_per_thread", "launch__registers_per_thread", trace.regs_per_thread, "reg",
        "estimated by the front end" if not trace.meta.get("registers_given") else "given")
    put("shared_bytes_per_cta", "launch__shared_mem_per_block", trace.shared_bytes_per_cta, "B",
        "static + dynamic shared memory per CTA")
    put("l1_bytes", "", occ.l1_bytes, "B", f"L1 left by the {occ.carveout_bytes // 1024} KB shared carve-out")
    put("inst_executed", "smsp__inst_executed.sum", c["inst"], "inst", "warp instructions executed")
    put("threads_per_inst", "smsp__thread_inst_executed_per_inst_executed.ratio",
        _ratio(c["thread_inst"], c["inst"]), "thread", "average active threads per warp instruction")
    put("inst_issued_engine", "", res.inst_issued, "inst", "warp instructions the engine issued (= executed)")
    put("gld_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", c["gld_req"], "request",
        "global load instructions x warps")
    put("gld_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", c["gld_sectors"], "sector",
        "32 B sectors requested by global loads")
    put("gld_sectors_per_request", "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio",
        _ratio(c["gld_sectors"], c["gld_req"]), "sector/request", "4 = coalesced fp32, 32 = fully scattered")
    put("gld_efficiency_pct", "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
        100 * _ratio(c["gld_bytes"], 32 * c["gld_sectors"]), "%", "bytes used / bytes moved")
    put("gst_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", c["gst_req"], "request",
        "global store instructions x warps")
    put("gst_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", c["gst_sectors"], "sector",
        "32 B sectors written by global stores")
    put("gst_sectors_per_request", "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio",
        _ratio(c["gst_sectors"], c["gst_req"]), "sector/request", "")
    put("gst_efficiency_pct", "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
        100 * _ratio(c["gst_bytes"], 32 * c["gst_sectors"]), "%", "bytes used / bytes moved")
    put("l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct",
        100 * _ratio(mem["l1_ld_hit_sectors"], mem["l1_ld_sectors"] + mem["l1_st_sectors"]), "%",
        "L1 sector hits / sector lookups (global loads and stores)")
    l2_total = mem["l2_rd_sectors"] + mem["l2_wr_sectors"] + mem["l2_atom_sectors"]
    l2_hits = mem["l2_rd_hit_sectors"] + mem["l2_wr_sectors"]
    put("l2_hit_rate_pct", "lts__t_sector_hit_rate.pct", 100 * _ratio(l2_hits, l2_total), "%",
        "L2 sector hits / lookups (writes allocate without a fetch and count as hits)")
    put("dram_bytes_read", "dram__bytes_read.sum", mem["dram_rd_bytes"], "B", "bytes read from DRAM")
    put("dram_bytes_write", "dram__bytes_write.sum", mem["dram_wr_bytes"], "B",
        "bytes written to DRAM (dirty L2 evictions during the kernel)")
    bw = _ratio(mem["dram_rd_bytes"] + mem["dram_wr_bytes"], time_us * 1e3)
    put("dram_bandwidth_gbps", "dram__bytes.sum.per_second", bw, "GB/s", "DRAM bytes / kernel time")
    put("dram_bandwidth_pct_of_peak", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        100 * bw / gpu.dram.peak_bandwidth_gbps, "%", "")
    put("shared_ld_wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", c["shld_wavefronts"],
        "wavefront", "shared-memory load wavefronts")
    put("shared_ld_bank_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        c["shld_wavefronts"] - c["shld_ideal"], "conflict", "extra wavefronts caused by bank conflicts (loads)")
    put("shared_st_bank_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        c["shst_wavefronts"] - c["shst_ideal"], "conflict", "extra wavefronts caused by bank conflicts (stores)")
    n_warps = max(1, trace.n_ctas * trace.warps_per_cta)
    for reason, cyc in res.stall_cycles.items():
        put(f"stall_{reason}", f"smsp__average_warp_latency_issue_stalled_{reason}.ratio", cyc / n_warps,
            "cycle/warp", f"cycles a warp spent in state '{reason}', averaged over the warps launched")
    ctx = {
        "grid": list(trace.grid), "block": list(trace.block), "frontend": trace.frontend,
        "source_file": trace.source_file, "preset": gpu.preset, "clock_mhz": clock_mhz,
        "trace_meta": trace.meta, "per_pipe_inst": c["per_pipe"], "flops": trace.flops,
        "engine_memory": mem, "wall_s": wall_s, "timing_s": timing_s,
        "sim_inst_per_s": c["inst"] / wall_s if wall_s else None,
        "occupancy_limits": occ.limits,
        # which compiler's registers / shared memory the occupancy used (gpusim.compilers)
        "compiler": (trace.meta.get("compiler") or {}).get("label", "built-in estimate"),
    }
    rep = Report(kernel=trace.name, gpu=gpu.name, metrics=M, context=ctx, trace=trace, engine=res, config=gpu)
    for n in [*gpu.notes, *getattr(trace, "notes", ()), *getattr(res, "notes", ())]:
        rep.note(n)
    return rep


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-2):
            return f"{v:.3g}"
        return f"{v:,.2f}"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return str(v)


def format_report(r: Report) -> str:
    """The report as a plain-text table: gpusim name, value, unit, Nsight Compute metric."""
    lines = [f"kernel {r.kernel} on {r.gpu}  grid {tuple(r.context.get('grid', ()))} "
             f"block {tuple(r.context.get('block', ()))}"]
    if r.context.get("compiler"):
        lines.append(f"compiler: {r.context['compiler']}")
    width = 30
    for title, keys in SECTIONS:
        lines.append(f"\n{title}")
        for k in keys:
            m = r.metrics.get(k)
            if m is None:
                continue
            lines.append(f"  {k:<{width}} {_fmt(m.value):>16} {m.unit:<14} {m.ncu}")
    stalls = sorted(((m.value, m) for k, m in r.metrics.items() if k.startswith("stall_") and m.value > 0),
                    key=lambda x: -x[0])
    if stalls:
        total = sum(v for v, _ in stalls)
        sel = r.metrics["stall_selected"].value or 1.0
        lines.append(f"\nWarp states (cycles per warp; per issued instruction: total {total / sel:.1f})")
        for v, m in stalls:
            lines.append(f"  {m.key[6:]:<{width}} {_fmt(v):>16} {100 * v / total:5.1f} %      {m.ncu}")
    if r.notes:
        lines.append("\nnotes:")
        lines.extend(f"  {n}" for n in r.notes)
    if r.context.get("wall_s"):
        rate = r.context.get("sim_inst_per_s") or 0
        lines.append(f"\nsimulated in {r.context['wall_s']:.2f} s ({rate / 1e3:,.0f} K warp-instructions/s)")
    return "\n".join(lines)
