"""The trace: what a kernel did, warp by warp, as the timing engine consumes it.

This module is the contract between the front ends (``gpusim.cuda``, ``gpusim.triton``), which execute a
kernel and record it, and the timing engine (``gpusim.timing``), which replays it on the modelled chip.
It computes no values and knows no timing.

Picture a group of CTAs executing in lockstep: the front end walks the kernel once for the whole group and
records an *op* for each warp-level instruction group it issues (an index computation, a global load, a
barrier, an MMA).  A warp takes part in an op when at least one of its lanes is active; ``OpTable.active``
holds, per op and warp, how many lanes were active (0 = the warp skips that op, as a warp skips the side of a
branch none of its threads take).  So each warp's instruction stream is the table's ops where its column is
non-zero, in order.  Memory ops carry, per warp, the 128 B lines and 32 B sectors they touch (the coalescer's
output) or the shared-memory wavefronts (the bank-conflict degree), computed here from lane addresses with
numpy.

Units: addresses and sizes in bytes; ``n_inst`` in warp instructions.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable
from typing import Iterator, Sequence

import numpy as np

SECTOR_BYTES = 32        # NVIDIA's memory transaction granule (all presets)
LINE_BYTES = 128         # cache line: 4 sectors
SECTORS_PER_LINE = LINE_BYTES // SECTOR_BYTES
WARP = 32


class OpKind(enum.IntEnum):
    ALU = 0          # arithmetic/logic/conversion/branch on one pipe; result after the pipe's latency
    LOAD = 1         # memory -> registers; result when the last sector returns
    STORE = 2        # registers -> memory; fire and forget
    ATOMIC = 3       # read-modify-write performed at L2 (global) or in the shared-memory unit
    BARRIER = 4      # CTA-wide barrier (bar.sync / __syncthreads)
    MMA = 5          # tensor-core matrix multiply-accumulate
    ASYNC_COPY = 6   # global -> shared copy that does not block (cp.async / TMA); completion is a dep
    ASYNC_WAIT = 7   # wait for earlier ASYNC_COPY ops named in deps (cp.async.wait_group)
    GRID_SYNC = 8    # grid-wide barrier of a cooperative launch (cooperative groups' grid.sync()): every live
    #                  warp of the grid arrives before any proceeds


class Pipe(enum.IntEnum):
    FP32 = 0
    FP16 = 1
    FP64 = 2
    INT = 3
    SFU = 4
    LSU = 5
    BRANCH = 6
    UNIFORM = 7
    TENSOR = 8

    @property
    def key(self) -> str:
        """Name used in ``SMSpec.pipe_lanes_per_clk``."""
        return self.name.lower()


#: the local-memory window of the simulated address space (bytes): both front ends put thread frames there
LOCAL_BASE = 1 << 44


class Space(enum.IntEnum):
    GLOBAL = 0
    SHARED = 1
    LOCAL = 2


@dataclass(slots=True)
class MemAccess:
    """What one memory op did, per warp of its table.

    For GLOBAL/LOCAL: warp ``w`` touched ``line[ptr[w]:ptr[w+1]]`` (128 B line ids = address // 128), with
    ``smask`` the 4-bit mask of the 32 B sectors used in each line; lines are unique per instruction and
    listed instruction by instruction.  For SHARED: ``wavefronts[w]`` is the number of shared-memory
    wavefronts the warp's instructions needed (1 per instruction without bank conflicts).
    """

    space: Space
    bytes_per_lane: int                 # bytes each active lane moves per instruction
    bytes_requested: int                # sum over warps and instructions of active lanes * bytes_per_lane
    ptr: np.ndarray | None = None       # int64 (n_warps + 1,)
    line: np.ndarray | None = None      # int64 (ptr[-1],)
    smask: np.ndarray | None = None     # uint8 (ptr[-1],)
    # int32 (n_warps,): SHARED: the shared-memory wavefronts; GLOBAL/LOCAL: the wavefronts of the L1's data banks
    # (``data_wavefronts``), only where some instruction needs other than one per line; None otherwise
    wavefronts: np.ndarray | None = None
    shared_ideal_wavefronts: np.ndarray | None = None  # int32 (n_warps,): wavefronts with no conflicts
    # int64 (n_warps,): the byte address of a one-lane atomic on a lock word (``Op.sync``), -1 where the warp
    # does not issue it; None for every other access
    addr: np.ndarray | None = None
    # a load that skips the L1 (``ld.global.cg`` / ``.cv`` / volatile): its sectors always go to the L2
    l1_bypass: bool = False

    def sectors_per_warp(self) -> np.ndarray:
        """Number of 32 B sectors each warp's instructions requested (sum over instructions)."""
        if self.ptr is None:
            return np.zeros(0, np.int64)
        pop = _POPCOUNT4[self.smask]
        cs = np.concatenate(([0], np.cumsum(pop, dtype=np.int64)))
        return cs[self.ptr[1:]] - cs[self.ptr[:-1]]

    def lines_per_warp(self) -> np.ndarray:
        return np.diff(self.ptr)


#: ``Op.sync``: a compare-and-swap a spin loop retries until it takes the lock at ``mem.addr`` (the timing engine
#: makes the CTA wait while another holds it), and an exchange that gives such a lock back
SYNC_ACQUIRE, SYNC_RELEASE = 1, 2

_POPCOUNT4 = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


@dataclass(slots=True)
class Op:
    """One instruction group every participating warp of a table executes.

    ``n_inst`` warp instructions on ``pipe``; ``deps`` are indices of earlier ops of the same table whose
    results this op must wait for (the scoreboard); ``line`` is the kernel source line.
    """

    kind: OpKind
    pipe: Pipe
    n_inst: int
    line: int
    deps: tuple[int, ...] = ()
    mem: MemAccess | None = None
    flops: int = 0                      # MMA: floating-point operations per warp
    mma_dtype: str = ""                 # MMA: input type key of TensorSpec.flops_per_clk_per_sm
    label: str = ""                     # e.g. "LDG.E.32", "FADD", "HGMMA.64x128x16"
    sync: int = 0                       # ATOMIC on a lock word (mem.addr): SYNC_ACQUIRE or SYNC_RELEASE
    # ALU: the n_inst instructions read none of each other's results (an elementwise tile op, one instruction per
    # register), so the warp issues them without waiting on a slow pipe; the pipe's throughput holds its next op
    independent: bool = False
    # MMA: bytes of operands the tensor cores read from shared memory for this warp (a wgmma's shared A and B,
    # a quarter of the warpgroup's); they pass the SM's shared-memory data stage (TensorSpec.operand_bytes_per_clk)
    smem_bytes: int = 0


@dataclass(slots=True)
class OpTable:
    """A group of consecutive CTAs that executed the same op sequence in lockstep."""

    first_cta: int                      # linear id of the first CTA (x fastest, then y, then z)
    n_ctas: int
    warps_per_cta: int
    ops: list[Op]
    active: np.ndarray | None = None    # uint8 (len(ops), n_ctas * warps_per_cta) active lanes; None = all 32

    @property
    def n_warps(self) -> int:
        return self.n_ctas * self.warps_per_cta

    def lanes(self, op_index: int) -> np.ndarray:
        """Active lanes of every warp of the table for one op."""
        if self.active is None:
            return np.full(self.n_warps, WARP, np.uint8)
        return self.active[op_index]


@dataclass
class KernelTrace:
    """Everything the timing engine needs to replay one kernel launch."""

    name: str
    frontend: str                       # "cuda" | "triton"
    grid: tuple[int, int, int]
    block: tuple[int, int, int]         # threads per CTA in x, y, z (Triton: (32 * num_warps, 1, 1))
    regs_per_thread: int
    shared_bytes_per_cta: int           # static + dynamic (Triton: pipeline buffers and scratch)
    tables: list[OpTable]
    source_file: str = ""
    source_lines: dict[int, str] = field(default_factory=dict)
    local_bytes_per_thread: int = 0
    flops: float = 0.0                  # useful floating-point operations (for the roofline)
    meta: dict = field(default_factory=dict)  # front-end facts: register estimate basis, vector widths...
    # choices gpusim made for the user that change what the report means (a default taken, a value capped, a
    # feature ignored): one sentence each; they reach Report.notes and are printed under "notes:"
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """Record a choice gpusim made for the user (shown in the report's notes; duplicates dropped)."""
        if text and text not in self.notes:
            self.notes.append(text)

    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_cta(self) -> int:
        return -(-self.threads_per_cta // WARP)

    @property
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def table_of(self, cta: int) -> tuple[OpTable, int]:
        """The table holding linear CTA id ``cta`` and the CTA's index inside it."""
        lo, hi = 0, len(self.tables) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.tables[mid].first_cta <= cta:
                lo = mid
            else:
                hi = mid - 1
        t = self.tables[lo]
        if not (t.first_cta <= cta < t.first_cta + t.n_ctas):
            raise IndexError(f"CTA {cta} is in no table of trace {self.name!r}")
        return t, cta - t.first_cta

    def iter_ops(self) -> Iterator[tuple[OpTable, int, Op]]:
        for t in self.tables:
            for i, op in enumerate(t.ops):
                yield t, i, op

    def check(self) -> None:
        """Raise ValueError if the trace is not well formed (used by tests and by the engine's debug mode)."""
        expect = 0
        for t in self.tables:
            if t.first_cta != expect:
                raise ValueError(f"table starts at CTA {t.first_cta}, expected {expect}")
            if t.warps_per_cta != self.warps_per_cta:
                raise ValueError("table warps_per_cta differs from the trace's")
            if t.active is not None and t.active.shape != (len(t.ops), t.n_warps):
                raise ValueError(f"active has shape {t.active.shape}, expected {(len(t.ops), t.n_warps)}")
            for i, op in enumerate(t.ops):
                if any(d >= i or d < 0 for d in op.deps):
                    raise ValueError(f"op {i} ({op.label}) depends on a later op: {op.deps}")
                if op.kind in (OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC, OpKind.ASYNC_COPY) and op.mem is None:
                    raise ValueError(f"memory op {i} ({op.label}) has no MemAccess")
                m = op.mem
                if m is not None and m.space != Space.SHARED and m.ptr is not None and len(m.ptr) != t.n_warps + 1:
                    raise ValueError(f"op {i}: MemAccess.ptr has {len(m.ptr)} entries, expected {t.n_warps + 1}")
            expect += t.n_ctas
        if expect != self.n_ctas:
            raise ValueError(f"tables cover {expect} CTAs, grid has {self.n_ctas}")

    # ---- counts that need no timing ---------------------------------------------------------------
    def instruction_counts(self) -> dict[str, float]:
        """Warp instructions executed, thread instructions, and per-pipe counts (Nsight's inst_executed)."""
        inst = 0
        thread_inst = 0
        per_pipe: dict[str, int] = {}
        for t in self.tables:
            if t.active is None:
                nw = t.n_warps
                for op in t.ops:
                    inst += op.n_inst * nw
                    thread_inst += op.n_inst * nw * WARP
                    per_pipe[op.pipe.key] = per_pipe.get(op.pipe.key, 0) + op.n_inst * nw
                continue
            warps_active = np.count_nonzero(t.active, axis=1)
            lanes_active = t.active.sum(axis=1, dtype=np.int64)
            for i, op in enumerate(t.ops):
                inst += op.n_inst * int(warps_active[i])
                thread_inst += op.n_inst * int(lanes_active[i])
                per_pipe[op.pipe.key] = per_pipe.get(op.pipe.key, 0) + op.n_inst * int(warps_active[i])
        return {"inst_executed": inst, "thread_inst_executed": thread_inst, "per_pipe": per_pipe}


# ---- the coalescer's arithmetic, shared by both front ends -------------------------------------------

def first_fit(live: "Iterable[tuple[int, int]]", nbytes: int, base: int, align: int) -> int:
    """Device address of a new allocation of ``nbytes``: the lowest ``align``-aligned gap at or above ``base``
    among the ``live`` (address, size) blocks, as a caching allocator reuses freed memory.  So an array's
    address depends only on what is alive when it is allocated, not on what a process allocated before (the same
    kernel and inputs get the same addresses, hence the same cycles, whatever ran earlier)."""
    span = -(-max(int(nbytes), 1) // align) * align
    at = base
    for a, size in sorted(live):
        if a - at >= span:
            break
        at = max(at, -(-(a + size) // align) * align)
    return at


def coalesce_global(addr: np.ndarray, bytes_per_lane: int, space: Space = Space.GLOBAL) -> MemAccess:
    """Group lane addresses into 128 B lines and 32 B sectors, per warp and instruction.

    ``addr``: int64 array (n_warps, n_inst, lanes) or (n_warps, lanes) of byte addresses; negative = lane
    inactive.  Each active lane touches ``bytes_per_lane`` bytes starting at its address.  Returns a
    MemAccess whose per-warp lines are unique within each instruction.
    """
    a = np.asarray(addr, dtype=np.int64)
    if a.ndim == 2:
        a = a[:, None, :]
    n_warps, n_inst, lanes = a.shape
    valid = a >= 0
    bytes_requested = int(np.count_nonzero(valid)) * bytes_per_lane
    first = np.where(valid, a >> 5, -1)
    if bytes_per_lane > SECTOR_BYTES or (bytes_per_lane > 1 and np.any(((a & 31) + bytes_per_lane > 32) & valid)):
        # a lane spans sectors (wide or unaligned access): list every sector it touches
        span = (bytes_per_lane + 31) // 32 + 1
        secs = [np.where(valid, (a + min(k * 32, bytes_per_lane - 1)) >> 5, -1) for k in range(span)]
        secs.append(np.where(valid, (a + bytes_per_lane - 1) >> 5, -1))
        sec = np.concatenate(secs, axis=2)
    else:
        sec = first
    flat = np.sort(sec.reshape(n_warps * n_inst, -1), axis=1)
    valid_s = flat >= 0
    lines = flat >> 2
    # sorted sectors put equal lines side by side: a valid sector opens a line entry when its line differs
    # from its left neighbour's (invalid lanes sort first as -1 and never match a valid line)
    newline = valid_s.copy()
    newline[:, 1:] &= lines[:, 1:] != lines[:, :-1]
    entry_id = np.cumsum(newline.ravel()) - 1
    n_entries = int(entry_id[-1] + 1) if entry_id.size else 0
    bit = (np.left_shift(1, flat & 3)).astype(np.uint8).ravel()
    vflat = valid_s.ravel()
    smask = np.zeros(n_entries, np.uint8)
    np.bitwise_or.at(smask, entry_id[vflat], bit[vflat])
    line_ids = lines.ravel()[newline.ravel()]
    per_row = newline.sum(axis=1)
    per_inst = per_row.reshape(n_warps, n_inst).sum(axis=1)
    ptr = np.zeros(n_warps + 1, np.int64)
    np.cumsum(per_inst, out=ptr[1:])
    wf = data_wavefronts(a, valid, bytes_per_lane, per_row, n_warps, n_inst) \
        if lanes == WARP and np.any(per_row > 1) else None
    return MemAccess(space=space, bytes_per_lane=bytes_per_lane, bytes_requested=bytes_requested,
                     ptr=ptr, line=line_ids, smask=smask, wavefronts=wf)


def _distinct_per_row(x: np.ndarray) -> np.ndarray:
    """Number of distinct non-negative values in each row of ``x`` (negative: none)."""
    s = np.sort(x, axis=1)
    new = s >= 0
    new[:, 1:] &= s[:, 1:] != s[:, :-1]
    return new.sum(axis=1)


def data_wavefronts(a: np.ndarray, valid: np.ndarray, bytes_per_lane: int, lines_per_row: np.ndarray,
                     n_warps: int, n_inst: int) -> np.ndarray | None:
    """Wavefronts of the L1's data banks per warp of a global load (summed over its instructions): the L1 and
    shared memory are one SRAM of 32 banks of 4 B, so lanes reading one bank in different lines serialize as a
    shared-memory bank conflict does -- in one phase of the 32 lanes for 1-4 bytes per lane, one per half-warp
    for 8 and 16 (records/divergent_load_h100.json: 32 lanes at one offset of 32 lines take 32 L1 cycles, 16 lines
    of 8-byte lanes two to a line also 32; records/l1_line_reuse_h100.json; records/h200/l1_wide_lanes.json: 16
    rows of 8-byte lanes 2,000 B apart, both half-warps reading them, take 6-7 cycles, not one pass per line of
    each half-warp).  None when every instruction needs as many as it has lines (what the engine assumes without
    it)."""
    per_phase = WARP if bytes_per_lane <= 4 else WARP // 2
    wf, _ = _bank_wavefronts(a, valid, bytes_per_lane, per_phase)
    wf = wf.reshape(-1)
    if np.array_equal(wf, lines_per_row):
        return None
    return wf.reshape(n_warps, n_inst).sum(axis=1).astype(np.int32)


def shared_wavefronts(addr: np.ndarray, bytes_per_lane: int, banks: int = 32, bank_bytes: int = 4
                      ) -> tuple[np.ndarray, np.ndarray, int]:
    """Shared-memory wavefronts per warp: the bank-conflict degree summed over instructions.

    ``addr``: int64 (n_warps, n_inst, lanes) or (n_warps, lanes) byte offsets in the CTA's shared memory,
    negative = inactive.  A warp's request is split into phases of ``banks * bank_bytes`` bytes (one phase
    for 4 B accesses, two half-warps for 8 B, four quarter-warps for 16 B); in a phase, lanes reading the same
    word are served together (broadcast) and distinct words in one bank serialize.  Returns
    (wavefronts per warp, ideal wavefronts per warp, bytes requested).
    """
    a = np.asarray(addr, dtype=np.int64)
    if a.ndim == 2:
        a = a[:, None, :]
    n_warps, n_inst, lanes = a.shape
    valid = a >= 0
    words = max(1, bytes_per_lane // bank_bytes)
    lanes_per_phase = max(1, lanes // words) if words > 1 else lanes
    total, ideal = _bank_wavefronts(a, valid, bytes_per_lane, lanes_per_phase, banks, bank_bytes)
    return (total.sum(axis=1).astype(np.int32), ideal.sum(axis=1).astype(np.int32),
            int(np.count_nonzero(valid)) * bytes_per_lane)


def _bank_wavefronts(a: np.ndarray, valid: np.ndarray, bytes_per_lane: int, lanes_per_phase: int, banks: int = 32,
                     bank_bytes: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Wavefronts of the banked SRAM (shared memory, and the L1's data for global loads) per (warp, instruction)
    of lane byte addresses ``a`` (n_warps, n_inst, lanes): the request goes in phases of ``lanes_per_phase``
    lanes; in a phase lanes reading the same word are served together and distinct words in one bank serialize.
    Returns (wavefronts, phases with an active lane), int64 (n_warps, n_inst)."""
    lanes = a.shape[2]
    words = max(1, bytes_per_lane // bank_bytes)
    n_phase = -(-lanes // lanes_per_phase)
    total = np.zeros(a.shape[:2], np.int64)
    ideal = np.zeros(a.shape[:2], np.int64)
    for p in range(n_phase):
        sl = a[:, :, p * lanes_per_phase:(p + 1) * lanes_per_phase]
        v = valid[:, :, p * lanes_per_phase:(p + 1) * lanes_per_phase]
        w0 = sl // bank_bytes
        wl = np.concatenate([np.where(v, w0 + k, -1) for k in range(words)], axis=2)
        wl = np.sort(wl, axis=2)
        distinct = wl >= 0
        distinct[:, :, 1:] &= wl[:, :, 1:] != wl[:, :, :-1]
        bank = np.where(distinct, wl % banks, banks)  # 'banks' = discard bucket
        # count distinct words per bank: one-hot over banks is (.., nb+1) small enough
        counts = np.zeros(wl.shape[:2] + (banks + 1,), np.int32)
        np.add.at(counts, (np.arange(wl.shape[0])[:, None, None], np.arange(wl.shape[1])[None, :, None], bank), 1)
        degree = counts[:, :, :banks].max(axis=2)
        any_active = v.any(axis=2)
        total += np.where(any_active, np.maximum(degree, 1), 0)
        ideal += any_active
    return total, ideal


def shared_access(addr: np.ndarray, bytes_per_lane: int, banks: int = 32, bank_bytes: int = 4) -> MemAccess:
    """A SHARED MemAccess from lane byte offsets (see ``shared_wavefronts``)."""
    wf, ideal, nbytes = shared_wavefronts(addr, bytes_per_lane, banks, bank_bytes)
    return MemAccess(space=Space.SHARED, bytes_per_lane=bytes_per_lane, bytes_requested=nbytes,
                     wavefronts=wf, shared_ideal_wavefronts=ideal)


def concat_access(parts: Sequence[MemAccess]) -> MemAccess:
    """Join MemAccess objects of disjoint warp ranges (in order) into one."""
    if len(parts) == 1:
        return parts[0]
    p0 = parts[0]
    if p0.space == Space.SHARED:
        return MemAccess(space=p0.space, bytes_per_lane=p0.bytes_per_lane,
                         bytes_requested=sum(p.bytes_requested for p in parts),
                         wavefronts=np.concatenate([p.wavefronts for p in parts]),
                         shared_ideal_wavefronts=np.concatenate([p.shared_ideal_wavefronts for p in parts]))
    ptrs = [parts[0].ptr]
    off = parts[0].ptr[-1]
    for p in parts[1:]:
        ptrs.append(p.ptr[1:] + off)
        off += p.ptr[-1]
    addr = np.concatenate([p.addr for p in parts]) if all(p.addr is not None for p in parts) else None
    wf = None
    if any(p.wavefronts is not None for p in parts):
        wf = np.concatenate([p.wavefronts if p.wavefronts is not None else np.diff(p.ptr).astype(np.int32)
                             for p in parts])
    return MemAccess(space=p0.space, bytes_per_lane=p0.bytes_per_lane,
                     bytes_requested=sum(p.bytes_requested for p in parts),
                     ptr=np.concatenate(ptrs), line=np.concatenate([p.line for p in parts]),
                     smask=np.concatenate([p.smask for p in parts]), addr=addr, wavefronts=wf)


# ---- launches observed outside gpusim.simulate ---------------------------------------------------------
#: Callables ``f(trace: KernelTrace)`` called after each recorded launch.  ``gpusim.session()`` adds one so
#: that ``kernel[grid, block](...)`` inside the session is timed.  Front ends record a trace for a plain
#: launch only when this list is non-empty (otherwise they just compute values, which is faster).
launch_observers: list = []


def publish_launch(trace: "KernelTrace") -> None:
    for f in list(launch_observers):
        f(trace)


#: ``f(trace: KernelTrace, gpu) -> cycles``: replays a trace on the timing engine.  ``gpusim.api`` installs it
#: when imported; a front end calls it where the real runtime measures a kernel (Triton's autotuner benchmarks
#: every config), since front ends do not import the engine.
benchmarker = None
