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
                 "local_index")

    def __init__(self, cta_id: int, sm: "SM", table, local_index: int, t: float):
        self.cta_id = cta_id
        self.sm = sm
        self.table = table
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
                 "n_issued", "t_arrive", "done", "in_cta")

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
        self.n_issued = 0
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
        env = self.env
        eng = self.engine
        lrr = eng.policy_lrr
        stall = eng.stall_cycles
        while True:
            now = env.now
            warps = self.warps
            w = None
            soonest = INF
            last = self.last
            if last is not None and not lrr and not last.done and last.ready_at <= now:
                w = last
            else:
                start = 0
                if lrr and last is not None and last in warps:
                    start = warps.index(last) + 1
                n = len(warps)
                for k in range(n):
                    c = warps[(start + k) % n] if lrr else warps[k]
                    ra = c.ready_at
                    if ra <= now:
                        w = c
                        break
                    if ra < soonest:
                        soonest = ra
            if w is None:
                if not warps and eng.all_dispatched:
                    return
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
            # time the warp spent ready but not chosen
            if w.ready_at < now:
                stall[1] += now - w.ready_at
            n_issued = self.advance(w, now)
            self.last = w
            if w.done:
                warps.remove(w)
                self.last = None
                eng.warp_exit(w, w.ready_at)
            if not n_issued:
                continue
            busy_until = now + n_issued
            soonest = INF
            for c in warps:
                ra = c.ready_at
                if ra < soonest:
                    soonest = ra
                    if ra <= busy_until:
                        break
            if soonest <= busy_until or (not warps and eng.all_dispatched):
                yield env.timeout(n_issued)
                continue
            # nothing can issue before `soonest`: sleep until then (one event), unless woken earlier
            self.sleeping = True
            try:
                if soonest < INF:
                    yield env.timeout(soonest - now)
                else:
                    yield eng.never
            except simpy.Interrupt:
                pass
            self.sleeping = False
            if env.now < busy_until:
                yield env.timeout(busy_until - env.now)

    def advance(self, w: Warp, now: float) -> int:
        """Run warp ``w`` from ``now`` through one interval; return the issue slots it used."""
        eng = self.engine
        cta = w.cta
        table = cta.table
        ops = table.ops
        stream = w.stream
        pend = w.pending
        pipe_free = self.pipe_free
        cyc = eng.pipe_cycles
        per_inst = eng.warp_inst_cycles
        stall = eng.stall_cycles
        sm_id = self.sm.index
        mem = eng.mem
        t = now
        issued = 0
        limit = now + WINDOW
        throttle = 0.0
        n = len(stream)
        pc = w.pc
        pc0 = pc
        reason = 6  # "wait": fixed-latency dependency
        hooks = eng.timeline
        while True:
            if pc >= n:
                w.done = True
                break
            k = stream[pc]
            op = ops[k]
            deps = op.deps
            if deps:
                dep_t = 0.0
                for d in deps:
                    p = pend.get(d)
                    if p is not None and p[0] > dep_t:
                        dep_t = p[0]
                        reason = p[1]
                if dep_t > t:
                    if issued == 0 and t == now:
                        # nothing issued: wait for the data
                        w.ready_at = dep_t
                        w.reason = reason
                        w.pc = pc
                        stall[reason] += dep_t - now
                        if hooks is not None:
                            hooks.append((sm_id, self.index, w.uid, now, dep_t, reason, k, k))
                        return 0
                    t_end = t
                    w.pc = pc
                    self._end_interval(w, now, t_end, issued, throttle, hooks, pc0)
                    w.ready_at = dep_t
                    w.reason = reason
                    stall[reason] += dep_t - max(t_end, now + issued)
                    if hooks is not None:
                        hooks.append((sm_id, self.index, w.uid, max(t_end, now + issued), dep_t, reason, k, k))
                    return issued
            kind = op.kind
            ni = op.n_inst
            p = op.pipe
            if kind == _ALU:
                pf = pipe_free[p]
                start = t if t > pf else pf
                if start > t:
                    throttle += start - t
                pipe_free[p] = start + ni * cyc[p]
                t = start + ni * per_inst[p]
            elif kind == _BAR:
                w.pc = pc + 1
                issued += ni
                w.n_issued += ni
                self._end_interval(w, now, t + ni, issued, throttle, hooks, pc0)
                eng.barrier_arrive(w, max(t + ni, now + issued))
                return issued
            elif kind == _MMA:
                pf = pipe_free[_TENSOR]
                start = t if t > pf else pf
                busy = op.flops / eng.tensor_flops_per_clk_smsp.get(op.mma_dtype, eng.tensor_default)
                pipe_free[_TENSOR] = start + busy
                pend[k] = (start + busy + eng.mma_latency, 9)
                t = start + ni
            elif kind == _AWAIT:
                # cp.async.wait_group: its deps (the copies) were checked above; costs one issue slot
                t = t + ni
            else:
                # memory instruction: the LSU pipe, then the memory system
                pf = pipe_free[_LSU]
                start = t if t > pf else pf
                if start > t:
                    throttle += start - t
                pipe_free[_LSU] = start + ni * cyc[_LSU]
                t = start + ni
                m = op.mem
                if m.space == _SHARED:
                    wf = int(m.wavefronts[w.wi])
                    ready = mem.shared(sm_id, t, wf, eng.shared_latency)
                    if kind != _STORE:
                        pend[k] = (ready, 3)
                else:
                    lines, masks, ptr, slices = eng.mem_lists(table, k)
                    lo = ptr[w.wi]
                    hi = ptr[w.wi + 1]
                    if kind == _LOAD:
                        ready = mem.load(sm_id, t, lines, masks, lo, hi,
                                         eng.cache_loads_l1 or m.space == _LOCAL, slices)
                        pend[k] = (ready, 2)
                    elif kind == _STORE:
                        mem.store(sm_id, t, lines, masks, lo, hi)
                    elif kind == _ACOPY:
                        ready = mem.load(sm_id, t, lines, masks, lo, hi, m.bytes_per_lane < 16, slices)
                        pend[k] = (ready, 2)
                    elif kind == _ATOM:
                        lanes = eng.lanes_of(table, k, w.wi)
                        ready = mem.atomic(sm_id, t, lines, masks, lo, hi, lanes)
                        pend[k] = (ready, 2)
            issued += ni
            w.n_issued += ni
            pc += 1
            if t > limit or issued >= MAX_INTERVAL_INST:
                w.pc = pc
                if pc >= n:
                    w.done = True
                    self._end_interval(w, now, t, issued, throttle, hooks, pc0)
                    return issued
                self._end_interval(w, now, t, issued, throttle, hooks, pc0)
                w.ready_at = t
                return issued
        # stream finished
        w.pc = pc
        self._end_interval(w, now, t, issued, throttle, hooks, pc0)
        return issued

    def _end_interval(self, w: Warp, now: float, t: float, issued: int, throttle: float, hooks,
                      pc0: int) -> None:
        """Account the interval's warp-cycles: issue slots, pipe throttling, dependent-issue waits."""
        stall = self.engine.stall_cycles
        stall[0] += issued
        self.issued += issued
        span = t - now
        if span > issued:
            th = min(throttle, span - issued)
            stall[5] += th
            stall[6] += span - issued - th
        w.ready_at = t if t > now + issued else now + issued
        if hooks is not None and w.pc > pc0:
            hooks.append((self.sm.index, self.index, w.uid, now, w.ready_at, 0, w.stream[pc0],
                          w.stream[w.pc - 1]))


class SM:
    """One SM: its four schedulers and the CTAs resident on it."""

    def __init__(self, engine, index: int, n_sub: int):
        self.engine = engine
        self.index = index
        self.scheds = [WarpScheduler(engine, self, i) for i in range(n_sub)]
        self.ctas: list[CTA] = []
        self.warp_rr = 0
        self.resident_warps = 0
        self.last_change = 0.0
        self.warp_cycles = 0.0      # integral of resident warps over time
        self.active_cycles = 0.0    # time with at least one resident warp

    def account(self, now: float) -> None:
        dt = now - self.last_change
        if dt > 0 and self.resident_warps:
            self.warp_cycles += self.resident_warps * dt
            self.active_cycles += dt
        self.last_change = now
