"""The streaming multiprocessor: resident CTAs and warps, four warp schedulers, pipes, scoreboards, barriers.

Picture each sub-partition's warp scheduler choosing, every clock, one ready warp and issuing its next
instruction to a pipe.  Simulating that clock by clock costs one event per instruction; instead a scheduler
lets the chosen warp run an *interval*: its instructions issue back to back (one per clock, slower when a pipe
is busy or a dependent chain must wait) until the warp needs a result still in flight (the scoreboard), reaches
a barrier, or runs more than ``WINDOW`` cycles ahead of the scheduler.  The scheduler is charged one clock per
instruction issued and picks again; a warp that is not ready is skipped.  Pipes keep a reservation clock, so
two warps sharing the FP64 pipe each see it busy.  Loads are issued into the memory system at their issue
clock and the scoreboard records when their data returns; consumers wait for it.

Policies: greedy-then-oldest (keep issuing the last warp while it is ready, else the oldest ready warp) and
loose round-robin (the next ready warp after the last one).  Every warp-cycle is attributed to one state,
named as Nsight Compute names stall reasons (``selected``, ``not_selected``, ``long_scoreboard``, ...).
"""
from __future__ import annotations

import math

import simpy

from ..trace import OpKind, Pipe, Space

INF = math.inf
WINDOW = 64           # cycles a warp may run ahead of its scheduler's clock within one interval
QUANTUM = 32          # cycles a scheduler's local clock may run ahead of simpy's before it yields
MAX_INTERVAL_INST = 512

STALL_REASONS = ("selected", "not_selected", "long_scoreboard", "short_scoreboard", "barrier",
                 "math_pipe_throttle", "wait", "lg_throttle", "mio_throttle", "tensor_wait", "drain")

_ALU, _LOAD, _STORE, _ATOM, _BAR, _MMA, _ACOPY, _AWAIT = (int(k) for k in (
    OpKind.ALU, OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC, OpKind.BARRIER, OpKind.MMA, OpKind.ASYNC_COPY,
    OpKind.ASYNC_WAIT))
_SHARED, _GLOBAL, _LOCAL = int(Space.SHARED), int(Space.GLOBAL), int(Space.LOCAL)
_LSU = int(Pipe.LSU)
_TENSOR = int(Pipe.TENSOR)
N_PIPES = len(Pipe)


class CTA:
    """A resident thread block: its warps, barrier state and where it runs."""

    __slots__ = ("cta_id", "sm", "warps", "live", "bar_arrived", "bar_time", "t_start", "t_end", "table",
                 "local_index", "cops")

    def __init__(self, cta_id: int, sm: "SM", table, local_index: int, t: float):
        self.cta_id = cta_id
        self.sm = sm
        self.table = table
        self.cops = sm.engine.compiled(table)
        self.local_index = local_index
        self.warps: list[Warp] = []
        self.live = 0
        self.bar_arrived: list[Warp] = []
        self.bar_time = 0.0
        self.t_start = t
        self.t_end = 0.0


class Warp:
    """One resident warp: its instruction stream (op indices), program counter and scoreboard."""

    __slots__ = ("uid", "cta", "wi", "stream", "pc", "ready_at", "pending", "reason", "sched", "slot",
                 "t_arrive", "done", "in_cta")

    def __init__(self, uid: int, cta: CTA, wi: int, in_cta: int, stream: list[int], t: float):
        self.uid = uid
        self.cta = cta
        self.wi = wi            # warp index inside its OpTable
        self.in_cta = in_cta    # warp index inside its CTA
        self.stream = stream
        self.pc = 0
        self.ready_at = t
        self.pending: dict[int, tuple[float, int]] = {}   # op index -> (ready time, stall reason index)
        self.reason = 0
        self.sched = None
        self.slot = 0
        self.t_arrive = t
        self.done = False


class WarpScheduler:
    """One SM sub-partition: a warp scheduler with its own pipes, issuing one instruction per clock."""

    def __init__(self, engine, sm: "SM", index: int):
        self.engine = engine
        self.env: simpy.Environment = engine.env
        self.sm = sm
        self.index = index
        self.warps: list[Warp] = []
        self.pipe_free = [0.0] * N_PIPES
        self.sleeping = False
        self.last: Warp | None = None
        self.issued = 0
        self.proc = self.env.process(self.run())

    def add(self, w: Warp) -> None:
        w.sched = self
        self.warps.append(w)
        self.wake()

    def wake(self) -> None:
        if self.sleeping:
            self.sleeping = False
            self.proc.interrupt()

    def run(self):
        """The scheduler's process.  It keeps a local clock ``tl`` that may run up to ``QUANTUM`` cycles ahead
        of simpy's clock, so that many short intervals cost one simpy event; it yields whenever it gets
        further ahead, and sleeps (interruptibly) when no warp can issue before then."""
        env = self.env
        eng = self.engine
        lrr = eng.policy_lrr
        stall = eng.stall_cycles
        tl = 0.0
        while True:
            now = env.now
            if tl < now:
                tl = now
            warps = self.warps
            w = None
            soonest = INF
            last = self.last
            if last is not None and not lrr and not last.done and last.ready_at <= tl:
                w = last
            else:
                start = 0
                if lrr and last is not None and last in warps:
                    start = warps.index(last) + 1
                n = len(warps)
                for k in range(n):
                    c = warps[(start + k) % n] if lrr else warps[k]
                    ra = c.ready_at
                    if ra <= tl:
                        w = c
                        break
                    if ra < soonest:
                        soonest = ra
            if w is None:
                if not warps and eng.all_dispatched:
                    return
                if soonest - now < QUANTUM:
                    tl = soonest          # a warp is ready soon: move the local clock, no event
                    continue
                self.sleeping = True
                try:
                    if soonest < INF:
                        yield env.timeout(soonest - now)
                    else:
                        yield eng.never
                except simpy.Interrupt:
                    pass
                self.sleeping = False
                continue
            ra = w.ready_at
            if ra < tl:
                stall[1] += tl - ra       # ready but not chosen
            n_issued = self.advance(w, tl)
            self.last = w
            if w.done:
                warps.remove(w)
                self.last = None
                eng.warp_exit(w, w.ready_at)
            tl += n_issued
            if tl - now >= QUANTUM:
                yield env.timeout(tl - now)

    def advance(self, w: Warp, now: float) -> int:
        """Run warp ``w`` from ``now`` through one interval; return the issue slots it used."""
        eng = self.engine
        cta = w.cta
        table = cta.table
        cops = cta.cops
        stream = w.stream
        pend = w.pending
        pipe_free = self.pipe_free
        stall = eng.stall_cycles
        t = now
        issued = 0
        limit = now + WINDOW
        throttle = 0.0
        n = len(stream)
        pc = w.pc
        pc0 = pc
        while pc < n:
            k = stream[pc]
            kind, p, ni, deps, cyc, per_inst, op = cops[k]
            if deps:
                dep_t = 0.0
                reason = 6
                for d in deps:
                    q = pend.get(d)
                    if q is not None and q[0] > dep_t:
                        dep_t, reason = q
                if dep_t > t and reason == 6 and dep_t - t <= WINDOW:
                    t = dep_t         # a short fixed-latency dependence: wait inside the interval
                elif dep_t > t:
                    # the scoreboard stops the warp until the data is back
                    w.pc = pc
                    t_end = self._end_interval(w, now, t, issued, throttle, pc0)
                    w.ready_at = dep_t
                    w.reason = reason
                    stall[reason] += dep_t - t_end
                    if eng.timeline is not None:
                        eng.timeline.append((self.sm.index, self.index, w.uid, t_end, dep_t, reason, k, k))
                    return issued
            if kind == _ALU:
                pf = pipe_free[p]
                if pf > t:
                    throttle += pf - t
                    t = pf
                pipe_free[p] = t + ni * cyc
                t += ni * per_inst
                if deps:
                    # a result on a dependence chain from a load: its consumers wait for the pipe latency
                    pend[k] = (t + eng.pipe_latency[p], 6)
            elif kind == _BAR:
                w.pc = pc + 1
                issued += ni
                t_end = self._end_interval(w, now, t + ni, issued, throttle, pc0)
                eng.barrier_arrive(w, t_end)
                return issued
            elif kind == _MMA:
                pf = pipe_free[_TENSOR]
                start = t if t > pf else pf
                busy = op.flops / eng.tensor_flops_per_clk_smsp.get(op.mma_dtype, eng.tensor_default)
                pipe_free[_TENSOR] = start + busy
                pend[k] = (start + busy + eng.mma_latency, 9)
                t = start + ni
            elif kind == _AWAIT:
                t += ni          # cp.async.wait_group: its deps (the copies) were checked above
            else:
                # memory instruction: the LSU pipe, then the memory system
                pf = pipe_free[_LSU]
                if pf > t:
                    throttle += pf - t
                    t = pf
                pipe_free[_LSU] = t + ni * cyc
                t += ni
                m = op.mem
                if m.space == _SHARED:
                    ready = eng.mem.shared(self.sm.index, t, int(m.wavefronts[w.wi]), eng.shared_latency)
                    if kind != _STORE:
                        pend[k] = (ready, 3)
                else:
                    self._memory(w, table, k, kind, m, t)
            issued += ni
            pc += 1
            if t > limit or issued >= MAX_INTERVAL_INST:
                break
        w.pc = pc
        if pc >= n:
            w.done = True
        self._end_interval(w, now, t, issued, throttle, pc0)
        return issued

    def _memory(self, w: Warp, table, k: int, kind: int, m, t: float) -> None:
        """Send a memory instruction issued at ``t`` into the memory system; note when its data is back."""
        eng = self.engine
        mem = eng.mem
        sm_id = self.sm.index
        lines, masks, ptr, slices = eng.mem_lists(table, k)
        lo = ptr[w.wi]
        hi = ptr[w.wi + 1]
        if kind == _LOAD:
            w.pending[k] = (mem.load(sm_id, t, lines, masks, lo, hi, eng.cache_loads_l1 or m.space == _LOCAL,
                                     slices), 2)
        elif kind == _STORE:
            mem.store(sm_id, t, lines, masks, lo, hi)
        elif kind == _ACOPY:
            w.pending[k] = (mem.load(sm_id, t, lines, masks, lo, hi, m.bytes_per_lane < 16, slices), 2)
        elif kind == _ATOM:
            w.pending[k] = (mem.atomic(sm_id, t, lines, masks, lo, hi, eng.lanes_of(table, k, w.wi)), 2)

    def _end_interval(self, w: Warp, now: float, t: float, issued: int, throttle: float, pc0: int) -> float:
        """Account the interval's warp-cycles (issue slots, pipe throttling, dependent-issue waits); the warp
        is next ready when both its own clock ``t`` and its issue slots are through.  Returns that time."""
        stall = self.engine.stall_cycles
        stall[0] += issued
        self.issued += issued
        end = now + issued
        if t > end:
            extra = t - end
            th = throttle if throttle < extra else extra
            stall[5] += th
            stall[6] += extra - th
            end = t
        w.ready_at = end
        tl = self.engine.timeline
        if tl is not None and w.pc > pc0:
            tl.append((self.sm.index, self.index, w.uid, now, end, 0, w.stream[pc0], w.stream[w.pc - 1]))
        return end


class SM:
    """One SM: its four schedulers and the CTAs resident on it."""

    def __init__(self, engine, index: int, n_sub: int):
        self.engine = engine
        self.index = index
        self.scheds = [WarpScheduler(engine, self, i) for i in range(n_sub)]
        self.ctas: list[CTA] = []
        self.warp_rr = 0
        self.resident_warps = 0
