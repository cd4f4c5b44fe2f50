"""The timing engine: replays a kernel trace on the modelled chip with simpy and counts what happened.

The CTA scheduler (the chip's work distributor) starts the grid after the launch overhead, fills every SM
with as many CTAs as occupancy allows (CTA ``i`` of the first wave goes to SM ``i mod n``), and when a CTA
retires it dispatches the next CTA in linear order to the freed slot after ``cta_launch_cycles`` -- so grids
larger than one wave run in waves, and a last partial wave leaves SMs idle (wave quantization).  The work
distributor starts at most ``cta_dispatch_per_cycle`` CTAs per cycle chip-wide (a CTA's warps become ready at its
start).  The kernel ends when the last CTA retires, plus a drain.  Each SM sub-partition's warp scheduler is
woken by entries in
simpy's event queue (see ``sm.py``), which the engine drains itself (``_drain``: simpy's step, inlined); the
memory system (``memory.py``) is passive and timed by reservation.  Nothing here computes values.

Observation never changes timing: the optional timeline is appended to, never read, by the engine.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np
import simpy

from .._host import gc_paused
from ..config import GPUConfig, load_gpu
from ..trace import KernelTrace, OpKind, OpTable, Pipe
from .chip import build_wiring
from .memory import MemorySystem
from .occupancy import Occupancy, occupancy
from .sm import (_ACOPY, _ALU, _ATOM, _BAR, _GSYNC, _LOAD, _LOCAL, _MEMBAR, _MMA, _NOINST, _SHARED, _STORE, CTA, SM,
                 STALL_REASONS, Warp, WarpScheduler)

INF = math.inf
_GLOBAL_KINDS = {_LOAD, _STORE, _ACOPY, _ATOM}
_FP32 = int(Pipe.FP32)
def code_fetch_cycles(gpu: GPUConfig, n_ctas: int) -> float:
    """Cycles an SM's first CTAs of a launch of ``n_ctas`` CTAs wait for its cold instruction and constant caches
    (``chip.code_fetch_cycles`` + ``code_fetch_per_sm_cycles`` x the SMs the launch starts at once)."""
    return float(gpu.chip.code_fetch_cycles) + gpu.chip.code_fetch_per_sm_cycles * min(n_ctas, gpu.chip.sm_count)


def _gpu_fence(label: str) -> bool:
    """Is the op a GPU- or system-scope memory fence (MEMBAR.*.GPU / .SYS), which holds its warp?"""
    return label.startswith("MEMBAR") and (".GPU" in label or ".SYS" in label)


#: failed lock attempts after which a launch is taken for deadlocked (CTAs waiting on each other's locks)
SPIN_LIMIT = 20_000_000


@dataclass
class EngineResult:
    """What the engine measured.  Cycles are SM clock cycles."""

    cycles: float
    occupancy: Occupancy
    inst_issued: int
    stall_cycles: dict[str, float]
    memory: dict[str, int]
    sm_active_cycles: float           # summed over SMs
    sm_warp_cycles: float             # integral of resident warps, summed over SMs
    cta_spans: list[tuple[int, int, float, float]] = field(default_factory=list)  # (cta, sm, start, end)
    # (sm, subpartition, warp uid, t0, t1, state, first op, last op); state indexes sm.STALL_REASONS
    # (0 = issuing); ops are indices into the warp's OpTable (-1 for a barrier wait)
    timeline: list[tuple] | None = None
    # uid -> [cta, warp in cta, warp slot on its SM, warp index in its OpTable, t start, t exit]
    warps: dict[int, list] = field(default_factory=dict)
    bandwidth_events: list[tuple[float, str, int]] | None = None
    launch_overhead_cycles: float = 0.0
    sim_events: int = 0
    notes: list[str] = field(default_factory=list)   # choices the engine made for the user (Report.notes)
    # how the grid was replayed (``sampling.SamplingInfo.to_dict``): mode "exact" or "sampled", waves, reason
    sampling: dict = field(default_factory=dict)
    spin_inst: int = 0                # warp instructions of failed lock attempts (spin loops), not in the trace
    sm_clock_mhz: float = 0.0         # the SM clock the kernel ran at (GPUConfig.clocked_for); 0: the preset's


class Engine:
    """Build the chip for ``gpu`` and replay ``trace`` on it."""

    def __init__(self, trace: KernelTrace, gpu: GPUConfig | str = "h100", *, record_timeline: bool = False,
                 policy: str | None = None):
        # a kernel that keeps the tensor cores busy runs its SMs at the preset's lower tensor clock
        preset = load_gpu(gpu)
        gpu = preset.clocked_for(any(int(op.kind) == _MMA for t in trace.tables for op in t.ops))
        self.trace = trace
        self.gpu = gpu
        self.env = simpy.Environment()
        sm = gpu.sm
        self.occ = occupancy(gpu, trace.threads_per_cta, trace.regs_per_thread, trace.shared_bytes_per_cta,
                             trace.name)
        wiring = build_wiring(gpu)
        self.wiring = wiring
        self.mem = MemorySystem(gpu, self.occ.l1_bytes, wiring.latency, wiring.sm_partition,
                                wiring.slice_partition)
        self.policy_lrr = (policy or sm.scheduler_policy) == "lrr"
        # per-pipe clocks per warp instruction on one sub-partition, and a warp's own issue interval
        lanes_per_sub = {p: max(1e-9, sm.pipe_lanes_per_clk.get(p.key, 32) / sm.subpartitions) for p in Pipe}
        self.pipe_cycles = [max(1.0, sm.warp_size / lanes_per_sub[p]) / sm.issue_per_clk for p in Pipe]
        # an IMAD holds the FP32 pipe longer where the chip multiplies integers at a lower rate than it adds floats
        self.imad_factor = (sm.pipe_lanes_per_clk.get("fp32", 128) / sm.imad_lanes_per_clk
                            if sm.imad_lanes_per_clk else 1.0)
        ilp = sm.alu_ilp
        self.pipe_latency = [sm.pipe_latency_cycles.get(p.key, 4) for p in Pipe]
        self.warp_inst_cycles = [max(self.pipe_cycles[p], sm.pipe_latency_cycles.get(p.key, 4) / ilp, 1.0)
                                 for p in Pipe]
        tens = gpu.tensor.flops_per_clk_per_sm
        self.tensor_flops_per_clk_smsp = {k: v / sm.subpartitions for k, v in tens.items()}
        self.tensor_default = tens.get("fp16", 1024) / sm.subpartitions   # load_gpu requires an fp16 rate
        self.notes: list[str] = []
        if gpu.chip.sm_clock_mhz != preset.chip.sm_clock_mhz:
            self.notes.append(f"SM clock {gpu.chip.sm_clock_mhz:.0f} MHz: a tensor-core kernel runs at "
                              f"chip.sm_clock_tensor_mhz (the L2 and DRAM keep their clocks)")
        self.mma_latency = gpu.tensor.mma_latency_cycles
        self.operand_bytes_per_clk = gpu.tensor.operand_bytes_per_clk
        self.shared_latency = sm.shared_latency_cycles
        self.membar_cycles = sm.membar_gpu_cycles
        self.cache_loads_l1 = gpu.l1.cache_global_loads
        self.stall_cycles = [0.0] * len(STALL_REASONS)
        self.sms = [SM(self, i, sm.subpartitions) for i in range(gpu.chip.sm_count)]
        self.next_cta = 0
        self.n_ctas = trace.n_ctas
        self.all_dispatched = False
        self.code_fetch = code_fetch_cycles(gpu, trace.n_ctas)
        rate = gpu.chip.cta_dispatch_per_cycle
        # cycles between two CTA starts (chip-wide); a vanishing rate is held to a finite (absurd) interval
        self.dispatch_interval = min(1.0 / rate, 1e12) if rate > 0 else 0.0
        self.dispatch_free = 0.0
        self.ctas_done = 0
        self.t_last_cta = 0.0
        self._progress = None          # optional f(ctas_done), see run()
        self._progress_next = 0
        self._progress_stride = 1
        self.cta_spans: list[tuple[int, int, float, float]] = []
        self.timeline: list | None = [] if record_timeline else None
        self.bw_events: list | None = None
        if record_timeline:
            self.bw_events = []
            self.mem.observers.append(lambda t, kind, nbytes: self.bw_events.append((t, kind, nbytes)))
        self.warp_info: dict[int, list] = {}
        self._uid = 0
        self._compiled: dict[int, list[tuple]] = {}
        self._reasons: dict[int, list[int]] = {}
        self._stream_cache: dict[int, tuple[list[list[tuple]], list[int] | None]] = {}
        self._table_index = {id(t): i for i, t in enumerate(trace.tables)}
        # grid barrier (GRID_SYNC ops of a cooperative launch): the warps waiting, the last arrival, and the
        # warps that have exited (the barrier waits for every other warp of the grid)
        self.grid_arrived: list[Warp] = []
        self.grid_bar_time = 0.0
        # spin locks (ATOMIC ops with Op.sync): lock word address -> the CTA holding it.  A CTA that finds the
        # lock taken spins: its compare-and-swap goes to the L2 again every round trip (Warp.advance)
        self.locks: dict[int, CTA] = {}
        self.spin_attempts = 0
        self.spin_inst = 0
        self.spin_loop_cycles = 2 * sm.barrier_latency_cycles + sm.shared_latency_cycles
        self.warps_exited = 0
        self.grid_warps = trace.n_ctas * trace.warps_per_cta
        #: cycles from the last warp's arrival at a grid barrier to the release of all (cudaCGSynchronize: CTA
        #: barriers, a GPU-scope fence, one arrival atomic per CTA on the barrier word, the spin that sees it flip):
        #: a base plus a per-CTA part, both calibrated on the H100 (see the preset's sources)
        chip = gpu.chip
        self.grid_sync_cycles = chip.grid_sync_base_cycles + chip.grid_sync_per_cta_cycles * trace.n_ctas
        if trace.meta.get("cooperative"):
            most = self.occ.ctas_per_sm * gpu.chip.sm_count
            if trace.n_ctas > most:
                from ..errors import CooperativeLaunchTooLarge
                raise CooperativeLaunchTooLarge(
                    f"kernel {trace.name!r}: cooperative launch of {trace.n_ctas} blocks, but only {most} can be "
                    f"resident at once on {gpu.name} (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)")

    # ---- trace access (cached per table/op) ---------------------------------------------------------
    def compiled(self, table: OpTable) -> list[tuple]:
        """Per op of ``table``, the fields the scheduler's inner loop reads, unpacked once per table:
        (op index, kind, pipe, n_inst, deps, pipe busy cycles, warp cycles, x, op) -- both cycle counts for all
        ``n_inst`` instructions -- where ``x`` is the
        result latency of an ALU op, the tensor-pipe busy cycles of an MMA, the wavefronts of each warp of a
        shared-memory access (a list), and for a global/local access (a tuple) its requests: lines, sector
        masks, each warp's start offset, the lines' L2 slices, and whether a load goes through L1.

        Also notes each op's stall reason (see ``stall_reason_of``)."""
        c = self._compiled.get(id(table))
        if c is None:
            pc, wc, lat = self.pipe_cycles, self.warp_inst_cycles, self.pipe_latency
            c = []
            reasons = []
            for k, op in enumerate(table.ops):
                kind, pipe = int(op.kind), int(op.pipe)
                reason = 2                               # long_scoreboard: global/local memory
                if kind == _MMA:
                    rate = self.tensor_flops_per_clk_smsp.get(op.mma_dtype)
                    if rate is None:
                        rate = self.tensor_default
                        note = (f"{op.mma_dtype or 'untyped'} MMAs timed at the fp16 tensor rate: {self.gpu.name} "
                                f"has no tensor.flops_per_clk_per_sm[{op.mma_dtype!r}]")
                        if note not in self.notes:
                            self.notes.append(note)
                    x = op.flops / rate
                    if op.smem_bytes and self.operand_bytes_per_clk > 0:
                        # (tensor cycles, cycles of the SM's shared-memory data stage for the operands)
                        x = (x, op.smem_bytes / self.operand_bytes_per_clk)
                    reason = 9                           # tensor_wait
                elif kind == _ALU and _gpu_fence(op.label):
                    kind, x = _MEMBAR, self.membar_cycles    # the warp waits for the fence (Warp.advance)
                    reason = 11
                elif kind == _ALU:
                    x = lat[pipe]
                    reason = 6                           # wait: a fixed-latency result
                elif op.mem is not None and int(op.mem.space) == _SHARED:
                    x = op.mem.wavefronts.tolist()      # per warp of the table
                    reason = 3                           # short_scoreboard
                elif kind in _GLOBAL_KINDS:
                    m = op.mem
                    # the coalesced requests stay numpy arrays, read through memoryviews (a warp's part is a slice
                    # whose items become ints as the memory system takes them), so that a long run holds no
                    # per-line Python objects
                    # (a store's flag instead: it is 8 bytes per lane or narrower, so that back-to-back ones over the
                    # same sectors merge, see MemorySystem.store)
                    use_l1 = ((self.cache_loads_l1 and not m.l1_bypass) or int(m.space) == _LOCAL) if kind == _LOAD \
                        else (m.bytes_per_lane <= 8 if kind == _STORE else m.bytes_per_lane < 16)
                    x = (memoryview(np.ascontiguousarray(m.line)), memoryview(np.ascontiguousarray(m.smask)),
                         m.ptr.tolist(), memoryview(self.mem.sets_of(m.line)), use_l1)
                    if kind == _LOAD and m.wavefronts is not None:
                        x = x + (m.wavefronts.tolist(),)        # the L1 passes per warp (8/16-byte lanes)
                    if kind == _ATOM and op.sync and m.addr is not None:
                        # a lock word (see Warp.advance, lock_release); a failed attempt goes round the spin loop:
                        # its barriers and broadcast, and the fence before the next attempt if the atomic has one
                        fenced = k > 0 and _gpu_fence(table.ops[k - 1].label)
                        spin = self.spin_loop_cycles + (self.membar_cycles if fenced else 0)
                        # and every warp of the CTA executes the loop's instructions again: those it issues from
                        # the barrier before the attempt through the broadcast of the old value (thread 0's branch
                        # with the fence and the atomic only in warp 0), plus the loop's branch
                        j0 = max((j for j in range(k) if table.ops[j].kind == OpKind.BARRIER), default=k)
                        loop = table.ops[j0:k + 5]
                        W = table.warps_per_cta
                        if table.active is None:
                            per_cta = (sum(o.n_inst for o in loop) + 3) * W
                        else:
                            c0 = int(np.argmax(table.active[k].reshape(-1, W)[:, 0] > 0))  # a CTA that issues it
                            act = table.active[j0:k + 5, c0 * W:(c0 + 1) * W] > 0
                            per_cta = sum(o.n_inst * int(a.sum()) for o, a in zip(loop, act)) + 3 * W
                        x = x + (op.sync, m.addr.tolist(), spin, per_cta)
                elif kind == _GSYNC:
                    kind, x = _BAR, True                 # a barrier whose release waits for the whole grid
                    reason = 4
                else:
                    x = None
                n = op.n_inst
                busy = n * pc[pipe]
                if kind == _ALU and pipe == _FP32 and self.imad_factor != 1.0 and op.label.startswith("IMAD"):
                    busy *= self.imad_factor
                # the warp's own cycles for the n instructions; independent ones (an elementwise tile op) go out at
                # the FP32 pace even on a slower pipe, which stays busy for them (``busy``) and holds its next op
                dtw = n * (min(wc[pipe], wc[_FP32]) if kind == _ALU and op.independent else wc[pipe])
                c.append((k, kind, pipe, n, op.deps, busy, dtw, x, op))
                reasons.append(reason)
            self._compiled[id(table)] = c
            self._reasons[id(table)] = reasons
        return c

    def stall_reason_of(self, table: OpTable) -> list[int]:
        """Per op of ``table``: the stall reason (index into ``STALL_REASONS``) of a warp waiting for its result:
        long_scoreboard for global/local memory, short_scoreboard for shared memory, tensor_wait for an MMA,
        wait for a fixed-latency ALU result."""
        self.compiled(table)
        return self._reasons[id(table)]

    def lanes_of(self, table: OpTable, k: int, wi: int) -> int:
        return 32 if table.active is None else int(table.active[k, wi])

    def _stream(self, table: OpTable, wi: int) -> tuple[list[tuple], int]:
        """What warp ``wi`` of ``table`` executes: the compiled ops (``compiled``) whose column of ``active`` is
        non-zero, in order, with their scoreboard slots (``_allocate``); and the number of slots."""
        cached = self._stream_cache.get(id(table))
        if cached is None:
            cops = self.compiled(table)
            reasons = self.stall_reason_of(table)
            if table.active is None:
                cached = ([self._allocate(cops, reasons)], None)
            else:
                bits = np.packbits(table.active.T != 0, axis=1)
                index: dict[bytes, int] = {}
                streams: list[tuple[list[tuple], int]] = []
                inverse = []
                for w in range(bits.shape[0]):
                    key = bits[w].tobytes()
                    j = index.get(key)
                    if j is None:
                        j = index[key] = len(streams)
                        streams.append(self._allocate([cops[k] for k in np.flatnonzero(table.active[:, w]).tolist()],
                                                      reasons))
                    inverse.append(j)
                cached = (streams, inverse)
            self._stream_cache[id(table)] = cached
        streams, inverse = cached
        return streams[0] if inverse is None else streams[inverse[wi]]

    @staticmethod
    def _allocate(ops: list[tuple], reasons: list[int]) -> tuple[list[tuple], int]:
        """Give the results of a warp's ops scoreboard slots, as a register allocator would: a result that a
        later op of the stream reads gets a slot from its write until its last reader, after which the slot is
        reused.  A warp's scoreboard is then a short list (``Warp.pending``), not a table of every op.

        An op's tuple becomes (op index, kind, pipe, n_inst, slots it reads, pipe busy cycles, warp cycles, x,
        slot it writes, stall reason per slot read).  Slot 0 takes results nobody reads.  A dependence on an
        op that never records a result (an ALU op off any load's chain, a store, a barrier) or that this warp
        does not execute is dropped: its ready time would read as 0."""
        def writes(c) -> bool:
            kind = c[1]
            return bool(c[4]) if kind == _ALU else kind in (_MMA, _LOAD, _ACOPY, _ATOM)

        pos = {c[0]: i for i, c in enumerate(ops)}
        kept = []
        last_read: dict[int, int] = {}
        for i, c in enumerate(ops):
            ds = []
            for d in c[4]:
                j = pos.get(d)
                if j is not None and j < i and writes(ops[j]) and d not in ds:
                    ds.append(d)
                    last_read[d] = i
            kept.append(ds)
        slot_of: dict[int, int] = {}
        free: list[int] = []
        n_slots = 1
        out = []
        for i, c in enumerate(ops):
            ds = kept[i]
            reads = tuple(slot_of[d] for d in ds)
            for d in ds:                      # read before the op writes: its slot may take this op's result
                if last_read[d] == i:
                    free.append(slot_of.pop(d))
            ws = 0
            if c[0] in last_read:
                if free:
                    ws = free.pop()
                else:
                    ws = n_slots
                    n_slots += 1
                slot_of[c[0]] = ws
            out.append(c[:4] + (reads,) + c[5:8] + (ws, tuple(reasons[d] for d in ds)))
        return out, n_slots

    # ---- the CTA scheduler --------------------------------------------------------------------------
    def _dispatch(self, sm: SM, t: float, limit: int | None = None) -> None:
        """Start CTAs on ``sm`` (up to ``limit`` of them) while it has room and the grid has CTAs left."""
        occ = self.occ
        room = occ.ctas_per_sm if limit is None else min(occ.ctas_per_sm, len(sm.ctas) + limit)
        t_call = t
        while len(sm.ctas) < room and self.next_cta < self.n_ctas:
            cid = self._take_next_cta()
            table, local = self.trace.table_of(cid)
            t = t_call
            if self.dispatch_interval:                  # the work distributor starts one CTA at a time
                if self.dispatch_free > t:
                    t = self.dispatch_free
                self.dispatch_free = t + self.dispatch_interval
            cta = CTA(cid, sm, table, local, t)
            wpc = table.warps_per_cta
            t_go = t
            if self.code_fetch:
                # the SM's first CTAs wait for its instruction and constant caches to fill (cold at launch)
                if sm.warm_at is None:
                    sm.warm_at = t + self.code_fetch
                if sm.warm_at > t:
                    t_go = sm.warm_at
                    self.stall_cycles[_NOINST] += (t_go - t) * wpc
            for i in range(wpc):
                wi = local * wpc + i
                stream, n_slots = self._stream(table, wi)
                w = Warp(self._uid, cta, wi, i, stream, n_slots, t)
                w.ready_at = t_go
                slot = sm.warp_rr
                sm.warp_rr += 1
                w.slot = slot
                self.warp_info[self._uid] = [cid, i, slot % self.gpu.sm.max_warps, wi, t, INF]
                self._uid += 1
                cta.warps.append(w)
                cta.live += 1
                sm.resident_warps += 1
                sm.scheds[slot % len(sm.scheds)].add(w)
            sm.ctas.append(cta)
        if self.next_cta >= self.n_ctas:
            self.all_dispatched = True

    def _take_next_cta(self) -> int:
        """The linear id of the next CTA to dispatch (advancing ``next_cta``); the sampled engine
        (``sampling.SampledEngine``) overrides it to skip the steady middle of a grid."""
        cid = self.next_cta
        self.next_cta = cid + 1
        return cid

    def _dispatch_later(self, sm: SM, delay: float) -> None:
        ev = self.env.timeout(delay)
        ev.callbacks.append(lambda _ev, sm=sm: self._dispatch_and_wake(sm))

    def _dispatch_and_wake(self, sm: SM) -> None:
        self._dispatch(sm, self.env.now, limit=1)      # the slot one CTA gave back
        if self.all_dispatched:
            # idle schedulers with no warps may now finish
            for s in self.sms:
                for sc in s.scheds:
                    if not sc.warps:
                        sc.wake()

    def warp_exit(self, w: Warp, t: float) -> None:
        cta = w.cta
        sm = cta.sm
        sm.resident_warps -= 1
        cta.live -= 1
        w.ready_at = INF
        w.pending = None               # its scoreboard is dead: free it
        self.warp_info[w.uid][5] = t
        self.warps_exited += 1
        if cta.bar_arrived and len(cta.bar_arrived) == cta.live:
            self._release_barrier(cta)
        if self.grid_arrived and len(self.grid_arrived) == self.grid_warps - self.warps_exited:
            self._release_grid_barrier()
        if t > cta.t_end:
            cta.t_end = t          # the CTA retires when its last warp has (warps drain their stores apart)
        if cta.live == 0:
            t = cta.t_end
            if t > self.env.now:
                # its stores still draining: the CTA keeps its place on the SM until then
                ev = self.env.timeout(t - self.env.now)
                ev.callbacks.append(lambda _ev, cta=cta: self._retire(cta))
            else:
                self._retire(cta)

    def _retire(self, cta: CTA) -> None:
        """A CTA whose warps have all exited gives its place on the SM back."""
        sm = cta.sm
        t = cta.t_end
        if self.locks:
            self._release_locks_of(cta)
        sm.ctas.remove(cta)
        self.ctas_done += 1
        self.t_last_cta = max(self.t_last_cta, t)
        self.cta_spans.append((cta.cta_id, sm.index, cta.t_start, t))
        if self._progress is not None and self.ctas_done >= self._progress_next:
            self._progress_next = self.ctas_done + self._progress_stride
            self._progress(self.ctas_done)
        if self.next_cta < self.n_ctas:
            self._dispatch_later(sm, max(0.0, t - self.env.now) + self.gpu.chip.cta_launch_cycles)
        elif self.ctas_done == self.n_ctas:
            for s in self.sms:
                for sc in s.scheds:
                    sc.wake()

    # ---- barriers ------------------------------------------------------------------------------------
    def barrier_arrive(self, w: Warp, t: float) -> None:
        cta = w.cta
        w.ready_at = INF
        w.t_arrive = t
        cta.bar_arrived.append(w)
        if t > cta.bar_time:
            cta.bar_time = t
        if len(cta.bar_arrived) == cta.live:
            self._release_barrier(cta)

    def _release_barrier(self, cta: CTA) -> None:
        t = cta.bar_time + self.gpu.sm.barrier_latency_cycles
        for w in cta.bar_arrived:
            self.stall_cycles[4] += t - w.t_arrive
            if self.timeline is not None:
                self.timeline.append((cta.sm.index, w.sched.index, w.uid, w.t_arrive, t, 4, -1, -1))
            w.ready_at = t
            w.sched.wake()
        cta.bar_arrived = []
        cta.bar_time = 0.0

    def grid_barrier_arrive(self, w: Warp, t: float) -> None:
        """A warp reaches a grid barrier (GRID_SYNC): it waits until every warp of the grid that has not exited
        has arrived (a cooperative launch has them all resident)."""
        w.ready_at = INF
        w.t_arrive = t
        self.grid_arrived.append(w)
        if t > self.grid_bar_time:
            self.grid_bar_time = t
        if len(self.grid_arrived) == self.grid_warps - self.warps_exited:
            self._release_grid_barrier()

    def _release_grid_barrier(self) -> None:
        t = self.grid_bar_time + self.grid_sync_cycles
        for w in self.grid_arrived:
            self.stall_cycles[4] += t - w.t_arrive
            if self.timeline is not None:
                self.timeline.append((w.cta.sm.index, w.sched.index, w.uid, w.t_arrive, t, 4, -1, -1))
            w.ready_at = t
            w.sched.wake()
        self.grid_arrived = []
        self.grid_bar_time = 0.0

    # ---- spin locks ----------------------------------------------------------------------------------
    def lock_spin(self) -> None:
        """A CTA's compare-and-swap failed (another CTA holds the lock): count it (a launch whose CTAs wait for
        each other forever stops with an error)."""
        self.spin_attempts += 1
        if self.spin_attempts > SPIN_LIMIT:
            raise RuntimeError(f"kernel {self.trace.name!r}: over {SPIN_LIMIT:,} failed lock attempts: CTAs wait for "
                               f"each other's spin locks (taken in opposite orders?), a deadlock on the GPU")

    def lock_release(self, addr: int) -> None:
        """The lock at ``addr`` is given back: the next compare-and-swap that reaches it takes it."""
        self.locks.pop(addr, None)

    def _release_locks_of(self, cta: CTA) -> None:
        """A CTA that exits gives back what it still holds (a lock released by a plain store, not an exchange)."""
        for addr in [a for a, c in self.locks.items() if c is cta]:
            self.lock_release(addr)

    def _active_cycles(self) -> float:
        """Cycles during which each SM held at least one warp, summed over SMs (the union of its CTAs' spans)."""
        return active_cycles(self.cta_spans)

    # ---- run -----------------------------------------------------------------------------------------
    def _drain(self) -> None:
        """Process simpy's events until none is left: ``Environment.step`` inlined (same order, same clock).  A
        warp scheduler's wake-up (``WarpScheduler._at``) is queued as the scheduler itself and calls its ``run``
        unless a later wake-up replaced it."""
        env = self.env
        q = env._queue
        pop = heapq.heappop
        sched = WarpScheduler
        while q:
            env._now, _, eid, ev = pop(q)
            if type(ev) is sched:
                if eid == ev.valid:
                    ev.run()
                continue
            cbs, ev.callbacks = ev.callbacks, None
            for cb in cbs:
                cb(ev)
            if not ev._ok:
                raise ev._value

    def run(self, progress=None) -> EngineResult:
        """Run the simulation to the end.  ``progress``, if given, is called with the number of CTAs retired
        so far (about 500 times over the grid, and once with the total at the end); it only observes."""
        t0 = float(self.gpu.chip.launch_overhead_cycles)
        if progress is not None:
            self._progress = progress
            self._progress_stride = max(1, self.n_ctas // 500)
            self._progress_next = self._progress_stride
        self.trace.check() if len(self.trace.tables) < 64 else None

        # the work distributor spreads the first wave breadth-first: one CTA per SM per round, visiting TPCs
        # alternately from each L2 partition's side of the chip (as GPCs are interleaved), consecutive CTAs to the
        # SMs of one TPC (records/cta_placement_h100.json: CTAs 2i and 2i+1 start on SMs 2k and 2k+1)
        parts = self.wiring.sm_partition
        tpc = max(1, self.gpu.chip.sms_per_tpc)
        firsts = sorted(range(0, len(self.sms), tpc), key=lambda i: (i - parts.index(parts[i]), parts[i]))
        order = [j for i in firsts for j in range(i, min(i + tpc, len(self.sms)))]

        def start(_ev):
            for _round in range(self.occ.ctas_per_sm):
                for i in order:
                    self._dispatch(self.sms[i], self.env.now, limit=1)
            if self.all_dispatched:
                for sm in self.sms:
                    for sc in sm.scheds:
                        if not sc.warps:
                            sc.wake()

        ev = self.env.timeout(t0)
        ev.callbacks.append(start)
        with gc_paused():
            self._drain()
        if progress is not None and self.ctas_done and self._progress_next - self._progress_stride != self.ctas_done:
            progress(self.ctas_done)
        if self.ctas_done != self.n_ctas:
            raise RuntimeError(f"engine stopped with {self.n_ctas - self.ctas_done} CTAs unfinished "
                               f"(a barrier that never completes?)")
        end = self.t_last_cta
        cycles = end + self.gpu.chip.drain_cycles
        inst = sum(sc.issued for sm in self.sms for sc in sm.scheds)
        return EngineResult(
            cycles=cycles, occupancy=self.occ, inst_issued=inst,
            stall_cycles=dict(zip(STALL_REASONS, self.stall_cycles)),
            memory=self.mem.stats.as_dict(),
            sm_active_cycles=self._active_cycles(),
            sm_warp_cycles=sum(w[5] - w[4] for w in self.warp_info.values()),
            cta_spans=self.cta_spans, timeline=self.timeline, warps=self.warp_info,
            bandwidth_events=self.bw_events, launch_overhead_cycles=t0, notes=list(self.notes),
            spin_inst=self.spin_inst, sm_clock_mhz=self.gpu.chip.sm_clock_mhz)


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``intervals`` ((start, end) pairs; sorted here)."""
    intervals.sort()
    total = 0.0
    cur0, cur1 = intervals[0]
    for a, b in intervals[1:]:
        if a > cur1:
            total += cur1 - cur0
            cur0, cur1 = a, b
        elif b > cur1:
            cur1 = b
    return total + (cur1 - cur0)


def active_cycles(spans: list[tuple[int, int, float, float]], lo: float = -INF, hi: float = INF) -> float:
    """Cycles in [lo, hi) during which each SM held a CTA, summed over SMs; ``spans``: (cta, sm, start, end)."""
    per_sm: dict[int, list[tuple[float, float]]] = {}
    for _cta, sm, t0, t1 in spans:
        a, b = max(t0, lo), min(t1, hi)
        if b > a:
            per_sm.setdefault(sm, []).append((a, b))
    return sum(union_length(iv) for iv in per_sm.values())


def run(trace: KernelTrace, gpu: GPUConfig | str = "h100", progress=None, **kw) -> EngineResult:
    """Replay ``trace`` on ``gpu``; see ``Engine`` (``progress``: see ``Engine.run``)."""
    return Engine(trace, gpu, **kw).run(progress=progress)
