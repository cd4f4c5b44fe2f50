"""The chip's parts as data: the six sections of a GPU configuration (chip, SM, L1, L2, DRAM, tensor cores) as frozen
dataclasses, each parameter declared with its schema (``P``: unit, valid range, choices).

``config.py`` reads presets and user files into them, checks every value against the schema and assembles a
``GPUConfig``; this module holds only the declarations.  Units live in the names: ``*_cycles`` are SM clock
cycles, ``*_bytes`` bytes, ``*_mhz`` megahertz, ``*_ns`` nanoseconds, ``*_per_clk`` per SM clock.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# ---- the schema: each parameter's type (its annotation), unit and valid range, next to the parameter ----------

#: pipes of ``SMSpec.pipe_lanes_per_clk`` / ``pipe_latency_cycles`` (``trace.Pipe`` keys; the tensor pipe is timed
#: from ``TensorSpec``) and the input types of ``TensorSpec.flops_per_clk_per_sm``
PIPES = ("fp32", "fp16", "fp64", "int", "sfu", "lsu", "branch", "uniform")
MMA_TYPES = ("fp64", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")


def P(unit: str, lo: float | None = None, hi: float | None = None, *, choices: tuple | None = None,
      pow2: bool = False, multiple_of: int | None = None, keys: tuple[str, ...] | None = None,
      required: tuple[str, ...] | None = None, why: str = "", default: Any = dataclasses.MISSING,
      default_factory: Any = dataclasses.MISSING) -> Any:
    """A config parameter: ``dataclasses.field`` with its schema in ``metadata``.

    ``unit``: what the number counts ("cycles", "bytes", ...; "text" for names, "flag" for booleans).
    ``lo``/``hi``: the valid range, inclusive (for lists and tables: of each element).  ``choices``: the only
    values allowed.  ``pow2``: must be a power of two.  ``multiple_of``: must be a multiple of it.  ``keys``
    and ``required``: a table's allowed and required keys.  ``why``: why the range is what it is (said in
    errors).  The type is the field's annotation.
    """
    md = {"unit": unit, "range": (lo, hi), "choices": choices, "pow2": pow2, "multiple_of": multiple_of,
          "keys": keys, "required": required, "why": why}
    return field(default=default, default_factory=default_factory, metadata=md)


_TRACE_FIXED = "fixed by the trace model (gpusim/trace.py)"


@dataclass(frozen=True)
class ChipSpec:
    """Whole-chip facts: identity, clocks, SM count and kernel launch costs."""

    name: str = P("text")
    arch: str = P("text", choices=("volta", "turing", "ampere", "ada", "hopper", "blackwell"))
    compute_capability: tuple[int, int] = P("version (major, minor)", 0, 99)
    sm_count: int = P("SMs", 1, 1024)
    sm_clock_mhz: float = P("MHz", 1, 10_000)   # clock the cycle counts are converted to time with
    # from launch to first CTA running (front-end + grid setup)
    launch_overhead_cycles: int = P("cycles", 0, 10_000_000)
    cta_launch_cycles: int = P("cycles", 0, 1_000_000)         # per-CTA dispatch latency on an SM
    # after the last CTA retires until the kernel is complete (membar/flush)
    drain_cycles: int = P("cycles", 0, 10_000_000)
    # the SMs' clock while a kernel keeps the tensor cores busy (the chip lowers it under that power; the L2 and DRAM
    # keep theirs): a kernel with MMA instructions runs at it (GPUConfig.clocked_for); 0: always sm_clock_mhz
    sm_clock_tensor_mhz: float = P("MHz", 0, 10_000, default=0.0)
    # DRAM bytes a launch reads besides its data on a cold cache: the kernel's code and constant banks
    launch_fetch_bytes: int = P("bytes", 0, 1 << 30, default=0)
    # the first CTA of a launch on each SM waits this long before its warps issue, and CTAs the SM starts before
    # then wait with it: the SM's instruction and constant caches are cold (Nsight's no_instruction and imc_miss)
    code_fetch_cycles: int = P("cycles", 0, 1_000_000, default=0)
    # ... plus this much per SM the launch starts at once (min(CTAs, SMs)): they all fetch the same code lines
    code_fetch_per_sm_cycles: float = P("cycles", 0, 10_000, default=0.0)
    # the work distributor's throughput: CTAs started per cycle over the whole chip (0: unlimited).  It caps how
    # fast short-lived CTAs are replaced, so a kernel of many tiny CTAs runs below the occupancy its limits allow
    cta_dispatch_per_cycle: float = P("CTAs/cycle", 0, 1024, default=0.0)
    # SMs per TPC (consecutive SM indices): the work distributor hands consecutive CTAs to the SMs of one TPC
    sms_per_tpc: int = P("SMs", 1, 8, default=1)
    # a grid barrier (cooperative groups' grid.sync()): from the last warp's arrival to the release of all, the base
    # plus a per-CTA part (each CTA's arrival is an atomic on one barrier word: they serialize at its L2 slice)
    grid_sync_base_cycles: float = P("cycles", 0, 1_000_000, default=2700.0)
    grid_sync_per_cta_cycles: float = P("cycles", 0, 10_000, default=6.5)


@dataclass(frozen=True)
class SMSpec:
    """One streaming multiprocessor: residency limits, schedulers, pipes and fixed latencies."""

    subpartitions: int = P("warp schedulers", 1, 16)   # warp schedulers per SM
    warp_size: int = P("threads", choices=(32,), why=_TRACE_FIXED)
    max_warps: int = P("warps", 1, 256)
    max_ctas: int = P("CTAs", 1, 1024)
    max_threads: int = P("threads", 32, 8192)
    max_threads_per_cta: int = P("threads", 1, 8192)
    registers: int = P("registers", 256, 1 << 22)                 # 32-bit registers per SM
    max_registers_per_thread: int = P("registers", 1, 1024)
    register_alloc_unit: int = P("registers", 1, 1 << 16)       # registers allocated per warp in units of this many
    l1_shared_bytes: int = P("bytes", 1024, 1 << 26)            # unified L1 + shared memory per SM
    max_shared_per_sm_bytes: int = P("bytes", 0, 1 << 26)
    max_shared_per_cta_bytes: int = P("bytes", 0, 1 << 26)
    shared_carveouts_kb: tuple[int, ...] = P("KB", 0, 1 << 16)  # allowed shared-memory carve-outs
    shared_alloc_unit_bytes: int = P("bytes", 1, 1 << 16)
    shared_reserved_per_cta_bytes: int = P("bytes", 0, 1 << 16)    # system use (sm_80+ reserves 1 KB per CTA)
    shared_banks: int = P("banks", 1, 128)
    shared_bank_bytes: int = P("bytes", 1, 16, pow2=True)
    issue_per_clk: int = P("instructions/clock", 1, 8)             # instructions one scheduler issues per clock
    scheduler_policy: str = P("text", choices=("gto", "lrr"))     # greedy-then-oldest | loose round robin
    # lanes per clock per SM for each pipe (a warp instruction takes warp_size/(lanes/subpartitions) clocks)
    pipe_lanes_per_clk: dict[str, int] = P("lanes/clock", 1, 4096, keys=PIPES, required=PIPES,
                                           default_factory=dict)
    # integer multiply-adds (IMAD*, issued to the FP32 pipe's FMA-heavy half) per clock per SM; 0: the fp32 rate
    imad_lanes_per_clk: int = P("lanes/clock", 0, 4096, default=0)
    # dependent-issue latency (cycles) of each pipe
    pipe_latency_cycles: dict[str, int] = P("cycles", 1, 10_000, keys=PIPES, required=PIPES, default_factory=dict)
    shared_latency_cycles: int = P("cycles", 1, 10_000, default=23)
    barrier_latency_cycles: int = P("cycles", 0, 10_000, default=20)
    # a GPU- or system-scope memory fence (MEMBAR.*.GPU / .SYS): the warp waits this long before its next instruction
    membar_gpu_cycles: int = P("cycles", 0, 100_000, default=500)
    branch_divergence_cycles: int = P("cycles", 0, 10_000, default=0)
    alu_ilp: float = P("instructions", 0.01, 64, default=2.0)  # independent instructions a warp has in flight:
                                   # a warp issues one ALU instruction per max(pipe interval, latency / alu_ilp) cycles


@dataclass(frozen=True)
class L1Spec:
    """Per-SM L1 data cache (shares its SRAM with shared memory)."""

    line_bytes: int = P("bytes", choices=(128,), why=_TRACE_FIXED)
    sector_bytes: int = P("bytes", choices=(32,), why=_TRACE_FIXED)
    hit_latency_cycles: int = P("cycles", 1, 10_000)
    bytes_per_clk: int = P("bytes/clock", 1, 4096)             # tag/data throughput (one wavefront = this many bytes)
    cache_global_loads: bool = P("flag")
    max_outstanding_sectors: int = P("sectors", 1, 1 << 20)   # miss-status entries per SM
    # distinct 128 B lines the tag stage looks up per clock
    lines_per_clk: float = P("lines/clock", 0.01, 64, default=1.0)
    # cycles each further line of one request adds to its latency (its hits come back, its misses leave for the L2,
    # one line per this many cycles; the stage's throughput is lines_per_clk, across warps)
    line_latency_cycles: float = P("cycles", 0, 1000, default=0.0)
    # lines that miss the L1 leave for the L2 at most this many per clock per SM (0: no limit beyond the tag stage)
    miss_lines_per_clk: float = P("lines/clock", 0, 64, default=0.0)
    # cycles an asynchronous copy into shared memory (cp.async / LDGSTS) waits beyond a load for its lines that miss
    # the L2 (the fill from DRAM into shared memory)
    copy_dram_extra_cycles: float = P("cycles", 0, 10_000, default=0.0)


@dataclass(frozen=True)
class L2Spec:
    """The L2 cache: sectored, split in partitions with near and far latency."""

    size_bytes: int = P("bytes", 1 << 12, 1 << 34)
    partitions: int = P("partitions", 1, 16)
    slices: int = P("slices", 1, 1024)
    line_bytes: int = P("bytes", choices=(128,), why=_TRACE_FIXED)
    sector_bytes: int = P("bytes", choices=(32,), why=_TRACE_FIXED)
    fetch_bytes: int = P("bytes", choices=(32, 64, 128), why="whole sectors that divide a 128 B line")
    # bytes fetched from DRAM on a read miss (sector promotion)
    near_latency_cycles: int = P("cycles", 1, 100_000)    # load-to-use latency of an L2 hit in the near partition
    far_latency_cycles: int = P("cycles", 1, 100_000)     # ... in the far partition
    bytes_per_clk_per_slice: float = P("bytes/clock", 0.1, 4096)
    write_back: bool = P("flag")
    atomic_latency_cycles: int = P("cycles", 1, 100_000)
    # cycles an atomic request (one warp's atomic on one line) holds its L2 slice beyond moving its sectors: the
    # read-modify-write in the slice's pipeline, which the slice's other requests wait behind
    atomic_request_cycles: float = P("cycles", 0, 10_000, default=0.0)
    # cycles the slice's atomic unit spends on each 32 B sector of such a request (0: the sector moves at the slice's
    # bytes_per_clk_per_slice, as a read's would)
    atomic_sector_cycles: float = P("cycles", 0, 10_000, default=0.0)
    # consecutive 128 B lines that go to one slice (with partitioned: the slice is picked per granule, the set per line)
    slice_granule_lines: int = P("lines", choices=(1, 2), default=1)
    capacity_fraction: float = P("fraction", 0.01, 1.0, default=1.0)  # share of size_bytes that holds distinct
                                    # lines (H100: far-partition accesses keep a second copy near the SM, so less)
    # dirty lines of no kernel address the L2 holds when the kernel starts (bytes), least recently used: they are
    # written back once the kernel's own lines push them out (Nsight Compute's replay leaves them there)
    dirty_at_launch_bytes: int = P("bytes", 0, 1 << 34, default=0)
    # dirty bytes the L2 holds at most (0: no limit beyond its capacity): a store that would pass it has the slice
    # write back its oldest dirty line first (the line stays, clean), so a store-only stream keeps this much dirty
    dirty_max_bytes: int = P("bytes", 0, 1 << 34, default=0)
    # bytes per clock one slice writes into its data array: stores from the SMs and line fills from DRAM (0: no
    # limit beyond bytes_per_clk_per_slice); a warp's stores are acknowledged when written, and it exits after that
    write_bytes_per_clk_per_slice: float = P("bytes/clock", 0, 4096, default=0.0)
    # SMs (consecutive indices: a TPC) whose reads leave for the L2 through one port, where a request for sectors
    # that the group already has in flight merges with it (no slice bandwidth; its data comes with the first's)
    merge_sms: int = P("SMs", 1, 64, default=1)
    # ... for this long after the first request left (cycles): a later request for the same sectors merges only
    # while the first is still at the port
    merge_window_cycles: float = P("cycles", 0, 1_000_000, default=1_000_000.0)
    # a partition keeps a copy of the far lines its SMs read: a line of the other partition costs the far latency
    # only the first time a partition reads it (then near); a store leaves only the writer's partition a copy
    far_copies: bool = P("flag", default=False)
    # lines per set of a slice (0: one set per slice, fully associative LRU); a line's set within its slice is picked
    # by a hash of its address, so that sets fill unevenly and dirty lines start going out before the L2 is full
    ways: int = P("lines", 0, 1 << 20, default=0)
    # the two partitions cache apart (with far_copies): a far line read by a partition leaves a copy that is a line
    # of its own in the partition's set of the same index (it takes room there, and the partition's next reads hit
    # it); the home line a remote read brings in from DRAM goes in among its set's least recently used (see
    # remote_fill_position), and a remote hit leaves the home line where it is; a line's set is picked by one
    # address hash spread evenly over all sets
    partitioned: bool = P("flag", default=False)
    # with partitioned: how many of its set's lines stay less recently used than a home line a remote read brings in
    # from DRAM (0: it goes in least recently used; ways: most recently used, as any other fill)
    remote_fill_position: int = P("lines", 0, 1 << 20, default=0)
    # lines of a set that may be dirty (with partitioned; 0: no limit): a store past it has the set write back its
    # least recently used dirty line first (that line stays, clean)
    dirty_ways: int = P("lines", 0, 1 << 20, default=0)


@dataclass(frozen=True)
class DRAMSpec:
    """Device memory: channels of banks with row buffers, moving data in bursts."""

    kind: str = P("text")                    # "HBM3", "HBM2e", "GDDR6X"
    bus_width_bits: int = P("bits", 8, 1 << 16)
    mem_clock_mhz: float = P("MHz", 1, 100_000)
    peak_bandwidth_gbps: float = P("GB/s", 1, 1_000_000)     # GB/s, 1e9 bytes
    efficiency: float = P("fraction", 0.01, 1.0)              # fraction of peak a long stream achieves
    channels: int = P("channels", 1, 4096)
    banks_per_channel: int = P("banks", 1, 1024)
    row_bytes: int = P("bytes", 32, 1 << 20)
    burst_bytes: int = P("bytes", 1, 4096)               # access granularity of one burst
    # load-to-use latency of a DRAM access with an open row (SM cycles)
    latency_cycles: int = P("cycles", 1, 1_000_000)
    row_miss_ns: float = P("ns", 0, 10_000)              # precharge + activate (tRP + tRCD)
    interleave_bytes: int = P("bytes", 128, 1 << 20, multiple_of=128,
                              why="whole 128 B L2 lines")  # address interleave granularity across channels
    # the controller buffers writes (L2 write-backs) and drains them in row order, apart from the reads: a write
    # opens rows of its own (a row miss only against the bank's last write row) and never closes a read's row
    write_drain: bool = P("flag", default=False)
    # with write_drain: the bytes of write-backs a channel buffers before it drains them in one batch, the bus
    # turning round from reads to writes and back once per batch (reads that arrive meanwhile wait for the batch);
    # 0: each write-back takes the bus on its own, between the reads
    write_batch_bytes: int = P("bytes", 0, 1 << 24, default=0)
    # the read-write-read bus turnaround a batch costs (ns; JEDEC tWTR + tRTW)
    write_turnaround_ns: float = P("ns", 0, 10_000, default=0.0)


@dataclass(frozen=True)
class TensorSpec:
    """Tensor cores: dense FLOP per clock per SM by input type, and the MMA instruction family."""

    flops_per_clk_per_sm: dict[str, int] = P("FLOP/clock", 1, 1 << 20, keys=MMA_TYPES, required=("fp16",))
    mma_kind: str = P("text", choices=("wgmma", "mma.sync"))   # Hopper warpgroup MMA or Ampere's mma.sync
    mma_latency_cycles: int = P("cycles", 1, 100_000)
    # bytes per clock the SM's shared-memory data stage delivers to the tensor cores for operands read from shared
    # memory (a wgmma's descriptors); 0: operand reads cost no shared-memory bandwidth
    operand_bytes_per_clk: float = P("bytes/clock", 0, 4096, default=0.0)
