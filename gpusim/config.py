"""The GPU as data: a frozen configuration with the source of every number.

A preset is a TOML file in ``gpusim/presets/``.  Every parameter is written either as a plain value or as
``{ value = ..., source = "..." }``; the loader keeps the sources so a report can say where a number came
from (whitepaper, microbenchmark, "calibrated on H100 by gpusim validate calibrate", or "assumed").  A user
file may say ``inherit = "h100"`` and override any subset of parameters.

Units live in the names: ``*_cycles`` are SM clock cycles, ``*_bytes`` bytes, ``*_mhz`` megahertz,
``*_ns`` nanoseconds, ``*_per_clk`` per SM clock.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

PRESET_DIR = Path(__file__).with_name("presets")


class ConfigError(ValueError):
    """A configuration file or preset name that cannot be used."""


@dataclass(frozen=True)
class ChipSpec:
    """Whole-chip facts: identity, clocks, SM count and kernel launch costs."""

    name: str
    arch: str                      # "hopper" | "ampere"
    compute_capability: tuple[int, int]
    sm_count: int
    sm_clock_mhz: float            # clock the cycle counts are converted to time with
    launch_overhead_cycles: int    # from launch to first CTA running (front-end + grid setup)
    cta_launch_cycles: int         # per-CTA dispatch latency on an SM
    drain_cycles: int              # after the last CTA retires until the kernel is complete (membar/flush)


@dataclass(frozen=True)
class SMSpec:
    """One streaming multiprocessor: residency limits, schedulers, pipes and fixed latencies."""

    subpartitions: int             # warp schedulers per SM
    warp_size: int
    max_warps: int
    max_ctas: int
    max_threads: int
    max_threads_per_cta: int
    registers: int                 # 32-bit registers per SM
    max_registers_per_thread: int
    register_alloc_unit: int       # registers allocated per warp in units of this many
    l1_shared_bytes: int           # unified L1 + shared memory per SM
    max_shared_per_sm_bytes: int
    max_shared_per_cta_bytes: int
    shared_carveouts_kb: tuple[int, ...]  # allowed shared-memory carve-outs
    shared_alloc_unit_bytes: int
    shared_reserved_per_cta_bytes: int    # system use (sm_80+ reserves 1 KB per CTA)
    shared_banks: int
    shared_bank_bytes: int
    issue_per_clk: int             # instructions one scheduler issues per clock
    scheduler_policy: str          # "gto" | "lrr"
    # lanes per clock per SM for each pipe (a warp instruction takes warp_size/(lanes/subpartitions) clocks)
    pipe_lanes_per_clk: dict[str, int] = field(default_factory=dict)
    # dependent-issue latency (cycles) of each pipe
    pipe_latency_cycles: dict[str, int] = field(default_factory=dict)
    shared_latency_cycles: int = 23
    barrier_latency_cycles: int = 20
    branch_divergence_cycles: int = 0
    alu_ilp: float = 2.0           # independent instructions a warp has in flight: a warp issues one ALU
                                   # instruction per max(pipe interval, latency / alu_ilp) cycles


@dataclass(frozen=True)
class L1Spec:
    """Per-SM L1 data cache (shares its SRAM with shared memory)."""

    line_bytes: int
    sector_bytes: int
    hit_latency_cycles: int
    bytes_per_clk: int             # tag/data throughput (one wavefront = this many bytes)
    cache_global_loads: bool
    max_outstanding_sectors: int   # miss-status entries per SM
    lines_per_clk: float = 1.0     # distinct 128 B lines the tag stage looks up per clock


@dataclass(frozen=True)
class L2Spec:
    """The L2 cache: sectored, split in partitions with near and far latency."""

    size_bytes: int
    partitions: int
    slices: int
    line_bytes: int
    sector_bytes: int
    fetch_bytes: int               # bytes fetched from DRAM on a read miss (sector promotion)
    near_latency_cycles: int       # load-to-use latency of an L2 hit in the near partition
    far_latency_cycles: int        # ... in the far partition
    bytes_per_clk_per_slice: float
    write_back: bool
    atomic_latency_cycles: int
    capacity_fraction: float = 1.0  # share of size_bytes that holds distinct lines (H100: far-partition
                                    # accesses keep a second copy near the SM, so less than all of it)


@dataclass(frozen=True)
class DRAMSpec:
    """Device memory: channels of banks with row buffers, moving data in bursts."""

    kind: str                      # "HBM3", "HBM2e", "GDDR6X"
    bus_width_bits: int
    mem_clock_mhz: float
    peak_bandwidth_gbps: float     # GB/s, 1e9 bytes
    efficiency: float              # fraction of peak a long stream achieves
    channels: int
    banks_per_channel: int
    row_bytes: int
    burst_bytes: int               # access granularity of one burst
    latency_cycles: int            # load-to-use latency of a DRAM access with an open row (SM cycles)
    row_miss_ns: float             # precharge + activate (tRP + tRCD)
    interleave_bytes: int          # address interleave granularity across channels


@dataclass(frozen=True)
class TensorSpec:
    """Tensor cores: dense FLOP per clock per SM by input type, and the MMA instruction family."""

    flops_per_clk_per_sm: dict[str, int]
    mma_kind: str                  # "wgmma" (Hopper) or "mma.sync"
    mma_latency_cycles: int


@dataclass(frozen=True)
class GPUConfig:
    """A whole GPU.  ``sources`` maps "section.param" to where its value came from."""

    chip: ChipSpec
    sm: SMSpec
    l1: L1Spec
    l2: L2Spec
    dram: DRAMSpec
    tensor: TensorSpec
    preset: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    # ---- derived quantities -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.chip.name

    def dram_bytes_per_cycle(self) -> float:
        """Sustained DRAM bandwidth in bytes per SM clock."""
        return self.dram.peak_bandwidth_gbps * 1e9 * self.dram.efficiency / (self.chip.sm_clock_mhz * 1e6)

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / self.chip.sm_clock_mhz

    def peak_flops_per_clk(self, kind: str = "fp32") -> float:
        """Peak FLOP per clock of the whole chip: FMA pipes count 2 FLOP per lane."""
        if kind in self.tensor.flops_per_clk_per_sm:
            return self.tensor.flops_per_clk_per_sm[kind] * self.chip.sm_count
        return 2 * self.sm.pipe_lanes_per_clk[kind] * self.chip.sm_count

    def with_overrides(self, **sections: dict[str, Any]) -> "GPUConfig":
        """A copy with some parameters changed: ``cfg.with_overrides(l2={"size_bytes": 100 << 20})``."""
        out = self
        for sec, changes in sections.items():
            spec = getattr(out, sec)
            out = dataclasses.replace(out, **{sec: dataclasses.replace(spec, **changes)})
        src = dict(out.sources)
        for sec, changes in sections.items():
            for k in changes:
                src[f"{sec}.{k}"] = "override"
        return dataclasses.replace(out, sources=src)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("sources")
        return d


_SECTIONS = {"chip": ChipSpec, "sm": SMSpec, "l1": L1Spec, "l2": L2Spec, "dram": DRAMSpec, "tensor": TensorSpec}


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for sec, vals in over.items():
        if sec in ("inherit", "preset"):
            continue
        if not isinstance(vals, dict):
            raise ConfigError(f"top-level key {sec!r} must be a section like [{sec}]")
        out.setdefault(sec, {}).update(vals)
    return out


def _raw(name_or_path: str, _depth: int = 0) -> tuple[dict[str, Any], str, str]:
    """Return (raw tables, preset name, origin) for a preset name or a TOML file path."""
    if _depth > 8:
        raise ConfigError("config inheritance is more than 8 levels deep (a cycle?)")
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.exists():
        raw = _read(p)
        origin = str(p)
        parent = raw.get("inherit")
        if parent:
            base, pname, _ = _raw(str(parent), _depth + 1)
            return _merge(base, raw), raw.get("preset", p.stem), origin
        return raw, raw.get("preset", p.stem), origin
    key = name_or_path.lower().replace("-", "_")
    aliases = {"h100_sxm": "h100", "h100_sxm5": "h100", "a100_sxm": "a100", "3090": "rtx3090",
               "rtx_3090": "rtx3090"}
    key = aliases.get(key, key)
    path = PRESET_DIR / f"{key}.toml"
    if not path.exists():
        if p.suffix == ".toml":
            raise ConfigError(f"config file {name_or_path!r} does not exist")
        near = difflib.get_close_matches(key, preset_names(), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"unknown GPU preset {name_or_path!r}{hint}; presets: {', '.join(preset_names())}; "
                          "or give the path of a .toml config file")
    raw = _read(path)
    parent = raw.get("inherit")
    if parent:
        base, _, _ = _raw(str(parent), _depth + 1)
        raw = _merge(base, raw)
    return raw, key, str(path)


def load_gpu(name_or_path: "str | GPUConfig" = "h100") -> GPUConfig:
    """Load a preset by name (``h100``, ``a100``, ``rtx3090``, ``h200``) or a TOML config file path."""
    if isinstance(name_or_path, GPUConfig):
        return name_or_path
    name_or_path = os.fspath(name_or_path)
    raw, preset, origin = _raw(name_or_path)
    sources: dict[str, str] = {}
    kwargs: dict[str, Any] = {}
    for sec, cls in _SECTIONS.items():
        table = raw.get(sec)
        if table is None:
            raise ConfigError(f"{origin}: missing section [{sec}]")
        vals: dict[str, Any] = {}
        names = {f.name: f for f in fields(cls)}
        for k, v in table.items():
            if k not in names:
                near = difflib.get_close_matches(k, list(names), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ConfigError(f"{origin}: [{sec}] has unknown parameter {k!r}{hint}")
            if isinstance(v, dict) and "value" in v:
                sources[f"{sec}.{k}"] = str(v.get("source", "unspecified"))
                v = v["value"]
            else:
                sources.setdefault(f"{sec}.{k}", "user config" if origin != str(PRESET_DIR / f"{preset}.toml")
                                   else "unspecified")
            if isinstance(v, list):
                v = tuple(v)
            vals[k] = v
        missing = [f.name for f in fields(cls) if f.name not in vals
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ConfigError(f"{origin}: [{sec}] is missing {', '.join(missing)}")
        kwargs[sec] = cls(**vals)
    cfg = GPUConfig(preset=preset, sources=sources, **kwargs)
    _check(cfg, origin)
    return cfg


def _check(cfg: GPUConfig, origin: str) -> None:
    sm = cfg.sm
    problems = []
    if sm.max_shared_per_sm_bytes > sm.l1_shared_bytes:
        problems.append("sm.max_shared_per_sm_bytes exceeds sm.l1_shared_bytes")
    if cfg.l2.line_bytes % cfg.l2.sector_bytes or cfg.l1.line_bytes % cfg.l1.sector_bytes:
        problems.append("line size must be a multiple of the sector size")
    if cfg.l2.fetch_bytes % cfg.l2.sector_bytes:
        problems.append("l2.fetch_bytes must be a multiple of l2.sector_bytes")
    for pipe in ("fp32", "fp64", "int", "sfu", "lsu", "branch"):
        if pipe not in sm.pipe_lanes_per_clk:
            problems.append(f"sm.pipe_lanes_per_clk lacks {pipe!r}")
    if sm.scheduler_policy not in ("gto", "lrr"):
        problems.append(f"sm.scheduler_policy must be 'gto' or 'lrr', not {sm.scheduler_policy!r}")
    if problems:
        raise ConfigError(f"{origin}: " + "; ".join(problems))
