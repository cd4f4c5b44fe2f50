"""Counters, named as Nsight Compute names them, from a trace (counts) and an engine run (time).

Counts that depend only on what the kernel did -- instructions, sectors and requests, bank conflicts, active
threads per instruction -- come from the trace; everything that depends on time or on cache state -- cycles,
occupancy achieved, hit rates, DRAM bytes, stall reasons -- comes from the engine.  ``Report`` keeps each
value with its Nsight Compute metric name, unit and meaning.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import GPUConfig
from .timing.engine import EngineResult, code_fetch_cycles
from .timing.sampling import ASKED, MIN_WAVES
from .trace import WARP, KernelTrace, OpKind, Space, _POPCOUNT4


@dataclass(frozen=True)
class Metric:
    key: str            # gpusim's name
    ncu: str            # Nsight Compute's name ('' when Nsight has none)
    value: Any
    unit: str
    meaning: str


#: memory ops that do not pass the LSU pipe, so Nsight's l1tex__t_{requests,sectors}_pipe_lsu_* count none of them:
#: the TMA unit's bulk copies (UTMALDG / UTMASTG: 0 global requests and sectors on the H100 records of the
#: descriptor kernels) and its read of a tensormap
NOT_LSU = ("UTMA", "(tensormap")


def trace_counts(trace: KernelTrace) -> dict[str, float]:
    """Instruction, request, sector and wavefront counts of a trace (exact; no timing involved)."""
    c = {"inst": 0, "thread_inst": 0, "gld_req": 0, "gld_sectors": 0, "gld_bytes": 0, "gst_req": 0,
         "gst_sectors": 0, "gst_bytes": 0, "shld_wavefronts": 0, "shld_ideal": 0, "shst_wavefronts": 0,
         "shst_ideal": 0, "shld_req": 0, "shst_req": 0, "local_ld_req": 0, "local_st_req": 0, "local_ld_sectors": 0,
         "local_st_sectors": 0, "atom_req": 0, "mma_inst": 0}
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
            if op.label.startswith(NOT_LSU):
                continue
            if m.ptr is not None:
                # a warp whose lanes are all predicated off (a 0-d store done by thread 0 alone, a fully masked
                # tile row) issues the instruction but sends no request (Nsight counts none)
                req = op.n_inst * int((warps & (np.diff(m.ptr) > 0)).sum())
            sectors = int(_POPCOUNT4[m.smask].sum())
            if m.space == Space.LOCAL:
                # Nsight counts a local request per 128 B line of the warp's access (an LDL.64 is two: measured,
                # records/h200/tune_mm_1500_ncu.json), where global requests are instructions
                k = "st" if op.kind == OpKind.STORE else "ld"
                c[f"local_{k}_req"] += int(np.diff(m.ptr)[warps].sum()) if m.ptr is not None else req
                c[f"local_{k}_sectors"] += sectors
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
    # the last ``explain()``'s result (small: records, no trace); to_dict/to_json and the HTML page carry it
    explanation: "Explanation | None" = field(default=None, repr=False)

    def explain(self, policy: str | None = None, progress=None) -> "Explanation":
        """The causes of this kernel's lost cycles, ranked, each quantified by re-simulating the recorded trace on
        an idealized chip (``gpusim.timing.counterfactual``), and the limiter named (see ``explain_report``).
        Computed afresh at every call (each replay is deterministic) and kept in ``self.explanation``.
        ``policy``: the warp-scheduler policy the report was simulated with, if not the preset's."""
        self.explanation = explain_report(self, policy=policy, progress=progress)
        return self.explanation

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
            **({"explanation": self.explanation.to_dict()} if self.explanation is not None else {}),
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
                       "gst_requests", "gst_sectors", "gst_sectors_per_request", "gst_efficiency_pct",
                       "local_ld_requests", "local_ld_sectors", "local_st_requests", "local_st_sectors"]),
    ("Caches and DRAM", ["l1_hit_rate_pct", "l2_hit_rate_pct", "dram_bytes_read", "dram_bytes_write",
                         "dram_bandwidth_gbps", "dram_bandwidth_pct_of_peak"]),
    ("Shared memory", ["shared_ld_wavefronts", "shared_ld_bank_conflicts", "shared_st_bank_conflicts"]),
]


def build_report(trace: KernelTrace, gpu: GPUConfig, res: EngineResult, wall_s: float = 0.0,
                 timing_s: float = 0.0) -> Report:
    """Turn a trace and an engine run into a Report.  ``wall_s``: host seconds for the whole simulation
    (functional execution + trace + timing); ``timing_s``: the timing engine's share."""
    if res.sm_clock_mhz and res.sm_clock_mhz != gpu.chip.sm_clock_mhz:
        gpu = gpu.at_sm_clock(res.sm_clock_mhz)     # the kernel ran at the tensor clock (GPUConfig.clocked_for)
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
    spin = getattr(res, "spin_inst", 0)     # failed lock attempts: the spin loops the trace does not hold
    put("inst_executed", "smsp__inst_executed.sum", c["inst"] + spin, "inst", "warp instructions executed")
    put("threads_per_inst", "smsp__thread_inst_executed_per_inst_executed.ratio",
        _ratio(c["thread_inst"] + WARP * spin, c["inst"] + spin), "thread", "average active threads per warp "
        "instruction")
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
    if c["local_ld_req"] or c["local_st_req"]:
        # local memory (register spills, local arrays): reported when the kernel has any
        for k, what in (("ld", "loads"), ("st", "stores")):
            put(f"local_{k}_requests", f"l1tex__t_requests_pipe_lsu_mem_local_op_{k}.sum", c[f"local_{k}_req"],
                "request", f"local {what} (LDL/STL) x warps")
            put(f"local_{k}_sectors", f"l1tex__t_sectors_pipe_lsu_mem_local_op_{k}.sum", c[f"local_{k}_sectors"],
                "sector", f"32 B sectors of local {what}")
    put("l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct",
        100 * _ratio(mem["l1_ld_hit_sectors"], mem["l1_ld_sectors"] + mem["l1_st_sectors"]), "%",
        "L1 sector hits / sector lookups (global loads and stores)")
    l2_total = mem["l2_rd_sectors"] + mem["l2_wr_sectors"] + mem["l2_atom_sectors"]
    l2_hits = mem["l2_rd_hit_sectors"] + mem["l2_wr_sectors"]
    put("l2_hit_rate_pct", "lts__t_sector_hit_rate.pct", 100 * _ratio(l2_hits, l2_total), "%",
        "L2 sector hits / lookups (writes allocate without a fetch and count as hits)")
    rd = mem["dram_rd_bytes"] + gpu.chip.launch_fetch_bytes
    put("dram_bytes_read", "dram__bytes_read.sum", rd, "B", "bytes read from DRAM (data, and the kernel's code "
        "and constants: chip.launch_fetch_bytes)")
    put("dram_bytes_write", "dram__bytes_write.sum", mem["dram_wr_bytes"], "B",
        "bytes written to DRAM (dirty L2 evictions during the kernel)")
    bw = _ratio(rd + mem["dram_wr_bytes"], time_us * 1e3)
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
        # how the timing replay covered the grid (gpusim.timing.sampling): every CTA, or sampled waves
        "sampling": dict(res.sampling) if res.sampling else {"mode": "exact", "line": "exact"},
    }
    rep = Report(kernel=trace.name, gpu=gpu.name, metrics=M, context=ctx, trace=trace, engine=res, config=gpu)
    for n in [*gpu.notes, *getattr(trace, "notes", ()), *getattr(res, "notes", ())]:
        rep.note(n)
    smp = res.sampling or {}
    if smp.get("mode") == "sampled" or (smp.get("reason") and smp.get("waves_total", 0) >= MIN_WAVES):
        rep.note(smp["line"])            # sampled, or a large grid sampling could not represent
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
    if r.context.get("sampling"):
        lines.append(f"timing replay: {r.context['sampling'].get('line', 'exact')}")
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


# ---- explain: the causes of lost cycles, from counterfactual replays ------------------------------------------

#: a saving below this share of the cycles (percent) names no limiter
SIGNIFICANT_PCT = 10.0
#: occupancy is named over latency when more resident warps recover at least this share of what zero latency
#: recovers (more warps in flight is how a GPU hides latency)
OCCUPANCY_OVER_LATENCY = 0.5


@dataclass
class Explanation:
    """What ``Report.explain()`` found for one kernel launch.

    ``records`` (also what iterating gives), in the order printed: the kernel's own causes ranked by saving, then
    the chip's limits ranked by saving, then the causes that do not apply.  Each record is a dict: ``key`` (see
    ``gpusim.timing.counterfactual.IDEALS``), ``cause`` (printed "without <cause>"), ``kind`` ("kernel" |
    "chip"), ``applicable``, ``cycles_without`` (SM cycles on the idealized chip; the kernel's cycles when not
    applicable), ``saving_cycles``, ``saving_pct`` (of the kernel's cycles; negative = the ideal ran slower; 0
    when not applicable), ``rank`` (1 = largest saving in its kind; None when not applicable), ``how`` (what
    the replay changed, or why it does not apply), ``replay_s`` (host seconds).  ``limiter`` is one of
    "compute", "DRAM bandwidth", "latency", "occupancy", with ``limiter_why`` the evidence in one sentence.
    """

    kernel: str
    gpu: str
    cycles: float
    records: list[dict[str, Any]]
    limiter: str
    limiter_why: str
    units_busy_pct: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0

    def __iter__(self):
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def record(self, key: str) -> dict[str, Any]:
        """The record of one idealization by its key ("coalescing", "bank_conflicts", ...)."""
        for r in self.records:
            if r["key"] == key:
                return r
        raise KeyError(key)

    def ranked(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The applicable records (of ``kind`` if given), largest saving first."""
        return [r for r in self.records if r["applicable"] and (kind is None or r["kind"] == kind)]

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "gpu": self.gpu, "cycles": self.cycles, "limiter": self.limiter,
                "limiter_why": self.limiter_why, "records": [dict(r) for r in self.records],
                "units_busy_pct": dict(self.units_busy_pct), "wall_s": self.wall_s}

    def __str__(self) -> str:
        return format_explanation(self)


def _fixed_cycles(rep: Report) -> float:
    """A launch's cycles in which no SM runs its work: the launch overhead, the SMs' code fetch, the drain."""
    return rep.engine.launch_overhead_cycles + rep.config.chip.drain_cycles + \
        code_fetch_cycles(rep.config, rep.trace.n_ctas)


def sm_units_busy(rep: Report) -> dict[str, float]:
    """Busy share (%) of each SM unit over the kernel's run (its cycles after the launch overhead and the SMs' code
    fetch, before the drain), averaged over the SMs and their sub-partitions: the warp schedulers' issue slots, each
    pipe (warp instructions x clocks each takes on a sub-partition's share of the pipe), the tensor cores (MMA FLOP
    at the preset's rate) and the L1/shared data stage (shared wavefronts + L1 sectors / 4 + the wgmma operands read from
    shared memory at ``tensor.operand_bytes_per_clk``, one 128 B wavefront per clock).  The largest is the SM's
    busiest unit (Nsight Compute's "SM throughput" in spirit)."""
    tr, gpu, res = rep.trace, rep.config, rep.engine
    sm = gpu.sm
    run = max(1.0, float(res.cycles) - _fixed_cycles(rep))
    n_sm = gpu.chip.sm_count
    slots = n_sm * sm.subpartitions * run
    c = trace_counts(tr)
    out = {"issue slots": 100.0 * c["inst"] / (slots * sm.issue_per_clk)}
    for pipe, n in sorted(c["per_pipe"].items()):
        if pipe == "tensor" or pipe not in sm.pipe_lanes_per_clk:
            continue
        lanes = sm.pipe_lanes_per_clk[pipe] / sm.subpartitions
        out[f"{pipe} pipe"] = 100.0 * n * max(1.0, sm.warp_size / lanes) / sm.issue_per_clk / slots
    rates = gpu.tensor.flops_per_clk_per_sm
    tensor_clk = 0.0
    operand_wf = 0.0                # clocks of the shared-memory data stage the MMAs' operand reads take
    for t in tr.tables:
        for i, op in enumerate(t.ops):
            if op.kind == OpKind.MMA:
                warps = t.n_warps if t.active is None else int(np.count_nonzero(t.active[i]))
                tensor_clk += op.flops * warps / rates.get(op.mma_dtype, rates["fp16"])
                if gpu.tensor.operand_bytes_per_clk > 0:
                    operand_wf += op.smem_bytes * warps / gpu.tensor.operand_bytes_per_clk
    if tensor_clk:
        out["tensor cores"] = 100.0 * tensor_clk / (n_sm * run)
    mem = res.memory
    wavefronts = (c["shld_wavefronts"] + c["shst_wavefronts"] + (mem["l1_ld_sectors"] + mem["l1_st_sectors"]) / 4
                  + operand_wf)
    if wavefronts:
        out["L1/shared data stage"] = 100.0 * wavefronts / (n_sm * run)
    return out


def _limiter(rep: Report, saving: dict[str, float | None], units: dict[str, float]) -> tuple[str, str]:
    """Name the limiter from the savings (percent; None = not applicable) and the report's counters.

    Each limiter scores the savings that speak for it: DRAM bandwidth the unlimited-DRAM replay, latency the
    zero-latency replay, occupancy the larger of unlimited occupancy and no partial last wave (the SMs' warp slots
    not filled), compute the larger of no bank conflicts and no divergence (SM throughput spent on conflict
    wavefronts or masked lanes).  The largest score names the limiter, with occupancy preferred to latency when it
    recovers at least ``OCCUPANCY_OVER_LATENCY`` of it; when no score reaches ``SIGNIFICANT_PCT`` the kernel is
    bound inside the SM: compute (its busiest unit quoted) when a unit is at least half busy, else latency (the
    launch overhead and drain, the dispatch and the warps' dependent chains)."""
    def s(k: str) -> float:
        v = saving.get(k)
        return 0.0 if v is None else v

    occ_key = "occupancy" if s("occupancy") >= s("tail_wave") else "tail_wave"
    score = {"DRAM bandwidth": s("dram_bandwidth"), "latency": s("memory_latency"),
             "occupancy": s(occ_key), "compute": max(s("bank_conflicts"), s("divergence"))}
    best = max(score, key=lambda k: score[k])
    if best == "latency" and score["occupancy"] >= SIGNIFICANT_PCT and \
            score["occupancy"] >= OCCUPANCY_OVER_LATENCY * score["latency"]:
        best = "occupancy"
    busiest = max(units, key=lambda k: units[k]) if units else "issue slots"
    busy = units.get(busiest, 0.0)
    if score[best] >= SIGNIFICANT_PCT:
        v = score[best]
        if best == "DRAM bandwidth":
            return best, (f"unlimited DRAM bandwidth saves {v:.0f}% (DRAM at {rep.get('dram_bandwidth_pct_of_peak', 0):.0f}"
                          f"% of peak)")
        if best == "latency":
            return best, (f"zero memory latency saves {v:.0f}%; unlimited DRAM bandwidth {score['DRAM bandwidth']:.0f}%, "
                          f"achieved occupancy {rep.get('occupancy_achieved_pct', 0):.0f}%")
        if best == "occupancy":
            if occ_key == "occupancy":
                return best, (f"occupancy unlimited by {rep.get('occupancy_limiter', '?').replace('_', ' ')} saves "
                              f"{v:.0f}% (theoretical occupancy {rep.get('occupancy_theoretical_pct', 0):.1f}%; "
                              f"zero memory latency {score['latency']:.0f}%)")
            waves = rep.get("waves", 0)
            n = rep.trace.n_ctas
            what = (f"the grid of {n:,} CTA{'s' if n > 1 else ''} fills {100 * waves:.2g}% of one wave's CTA slots"
                    if waves < 1 else f"the grid's last of {math.ceil(waves)} waves leaves CTA slots empty")
            return best, f"{what}: a grid of whole waves would save {v:.0f}%"
        what = "bank conflicts" if s("bank_conflicts") >= s("divergence") else "divergence"
        return best, f"removing {what} saves {v:.0f}% (SM throughput); busiest SM unit: {busiest} {busy:.0f}% busy"
    fixed = _fixed_cycles(rep)
    fixed_pct = 100.0 * fixed / max(1.0, float(rep.engine.cycles))
    if fixed_pct >= 50.0 and busy < 50.0:
        return "latency", (f"launch overhead, code fetch and drain are {fixed_pct:.0f}% of the cycles; no "
                           f"idealization saves {SIGNIFICANT_PCT:.0f}%")
    if busy < 50.0:
        # nothing saturated and no single latency dominant: the launch, the CTAs' dispatch and the warps' chains
        return "latency", (f"no idealization saves {SIGNIFICANT_PCT:.0f}% and no SM unit is half busy (busiest: "
                           f"{busiest} {busy:.0f}%): launch overhead, code fetch and drain are {fixed_pct:.0f}% of the "
                           f"cycles, "
                           f"the rest the CTAs' dispatch and their warps' dependent latencies")
    return "compute", (f"no memory or occupancy idealization saves {SIGNIFICANT_PCT:.0f}%; busiest SM unit: "
                       f"{busiest} {busy:.0f}% busy")


def explain_report(rep: Report, policy: str | None = None, progress=None) -> Explanation:
    """Re-simulate ``rep``'s trace on every idealized chip of ``gpusim.timing.counterfactual`` and rank the
    causes (see ``Explanation``).  Needs the report's trace, engine result and config (a report built by
    ``build_report``; one read back from JSON has none)."""
    import time

    from .errors import GpusimError
    from .timing.counterfactual import counterfactuals

    if rep.trace is None or rep.engine is None or rep.config is None:
        raise GpusimError(f"report of kernel {rep.kernel!r} carries no trace to re-simulate (explain needs a "
                          f"report from gpusim.simulate / simulate_launch, not one read back from JSON)")
    t0 = time.perf_counter()
    base = float(rep.engine.cycles)
    exact = (rep.context.get("sampling") or {}).get("reason") == ASKED      # the report replayed every CTA
    cfs = counterfactuals(rep.trace, rep.config, policy=policy, progress=progress, sampling=False if exact else None)
    records = []
    saving: dict[str, float | None] = {}
    for cf in cfs:
        without = base if cf.cycles is None else float(cf.cycles)
        pct = 100.0 * (base - without) / base if base else 0.0
        saving[cf.key] = pct if cf.applicable else None
        records.append({"key": cf.key, "cause": cf.cause, "kind": cf.kind, "applicable": cf.applicable,
                        "cycles_without": without, "saving_cycles": base - without, "saving_pct": pct,
                        "rank": None, "how": cf.how, "replay_s": cf.replay_s})
    ordered = []
    for kind in ("kernel", "chip"):
        group = sorted((r for r in records if r["applicable"] and r["kind"] == kind),
                       key=lambda r: -r["saving_cycles"])           # stable: ties keep the IDEALS order
        for i, r in enumerate(group):
            r["rank"] = i + 1
        ordered += group
    ordered += [r for r in records if not r["applicable"]]
    units = sm_units_busy(rep)
    limiter, why = _limiter(rep, saving, units)
    return Explanation(kernel=rep.kernel, gpu=rep.gpu, cycles=base, records=ordered, limiter=limiter,
                       limiter_why=why, units_busy_pct=units, wall_s=time.perf_counter() - t0)


def format_explanation(e: Explanation) -> str:
    """The explanation as text: the limiter, then "without X: N cycles (-Y%)" lines ranked by saving."""
    n_replays = sum(1 for r in e.records if r["applicable"])
    lines = [f"explain {e.kernel} on {e.gpu}: {e.cycles:,.0f} cycles "
             f"({n_replays} idealized replays in {e.wall_s:.1f} s)",
             f"  limiter: {e.limiter} -- {e.limiter_why}"]
    width = max([len(r["cause"]) for r in e.records if r["applicable"]] + [10])

    def line(r) -> str:
        pct = -r["saving_pct"]
        return (f"    without {r['cause'] + ':':<{width + 1}} {r['cycles_without']:>12,.0f} cycles "
                f"({pct:+.1f}%)   {r['how']}")

    for kind, title in (("kernel", "causes in the kernel (re-simulated without each, largest saving first):"),
                        ("chip", "limits of the chip:")):
        group = e.ranked(kind)
        if group:
            lines.append(f"  {title}")
            lines.extend(line(r) for r in group)
    na = [r for r in e.records if not r["applicable"]]
    if na:
        lines.append("  not applicable:")
        lines.extend(f"    {r['cause']}: {r['how']}" for r in na)
    return "\n".join(lines)
