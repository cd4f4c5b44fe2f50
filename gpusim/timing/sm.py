"""The streaming multiprocessor: resident CTAs and warps, four warp schedulers, pipes, scoreboards, barriers.

Picture each sub-partition's warp scheduler choosing, every clock, one ready warp and issuing its next
instruction to a pipe.  Simulating that clock by clock costs one event per instruction; instead a scheduler
lets the chosen warp run an *interval*: its instructions issue back to back (one per clock, slower when a pipe
is busy or a dependent chain must wait) until the warp needs a result still in flight (the scoreboard), reaches
a barrier (its CTA's, or the grid's in a cooperative launch: ``Engine.grid_barrier_arrive``), or runs more
than ``WINDOW`` cycles ahead of the scheduler.  The scheduler is charged one clock per instruction issued and
picks again; a warp that is not ready is skipped.  Pipes keep a reservation clock, so
two warps sharing the FP64 pipe each see it busy.  Loads are issued into the memory system at their issue
clock and the scoreboard records when their data returns; consumers wait for it.

Policies: greedy-then-oldest (keep issuing the last warp while it is ready, else the oldest ready warp) and
loose round-robin (the next ready warp after the last one).  Every warp-cycle is attributed to one state,
named as Nsight Compute names stall reasons (``selected``, ``not_selected``, ``long_scoreboard``, ...).
"""
from __future__ import annotations

import math
from heapq import heappush

import simpy
from simpy.events import NORMAL, URGENT

from ..trace import OpKind, Pipe, Space

INF = math.inf
WINDOW = 64           # cycles a warp may run ahead of its scheduler's clock within one interval
QUANTUM = 32          # cycles a scheduler's local clock may run ahead of simpy's before it yields
MAX_INTERVAL_INST = 512

STALL_REASONS = ("selected", "not_selected", "long_scoreboard", "short_scoreboard", "barrier",
                 "math_pipe_throttle", "wait", "lg_throttle", "mio_throttle", "tensor_wait", "drain", "membar",
                 "no_instruction")

_ALU, _LOAD, _STORE, _ATOM, _BAR, _MMA, _ACOPY, _AWAIT, _GSYNC = (int(k) for k in (
    OpKind.ALU, OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC, OpKind.BARRIER, OpKind.MMA, OpKind.ASYNC_COPY,
    OpKind.ASYNC_WAIT, OpKind.GRID_SYNC))
_MEMBAR = 100        # a GPU/system-scope fence (an ALU op labelled MEMBAR.*.GPU/.SYS, see Engine.compiled)
_SHARED, _LOCAL = int(Space.SHARED), int(Space.LOCAL)
_LSU = int(Pipe.LSU)
_DRAIN = STALL_REASONS.index("drain")
_NOINST = STALL_REASONS.index("no_instruction")
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
    """One resident warp: its instruction stream (compiled ops with scoreboard slots, see ``Engine._allocate``),
    program counter and scoreboard."""

    __slots__ = ("uid", "cta", "wi", "stream", "pc", "ready_at", "pending", "reason", "sched", "slot",
                 "t_arrive", "done", "in_cta", "acked_at", "last_store")

    def __init__(self, uid: int, cta: CTA, wi: int, in_cta: int, stream: list[tuple], n_slots: int, t: float):
        self.uid = uid
        self.cta = cta
        self.wi = wi            # warp index inside its OpTable
        self.in_cta = in_cta    # warp index inside its CTA
        self.stream = stream
        self.pc = 0
        self.ready_at = t
        self.pending = [0.0] * n_slots         # scoreboard slot -> when the result it holds is ready (cycles)
        self.reason = 0
        self.sched = None
        self.slot = 0
        self.t_arrive = t
        self.done = False
        self.acked_at = 0.0     # when the SM is free of the warp's stores so far (it exits after that)
        # the sectors per line of its last global store, which the next may merge with when no other memory
        # operation or barrier came between (ptxas clusters a thread's stores; arithmetic between them moves)
        self.last_store = None


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
        self.tl = 0.0           # the scheduler's local clock (cycles), see run()
        self.valid = -1         # simpy event id of the wake-up that counts; older ones are stale
        self.smi = sm.index
        self.mem_load = engine.mem.load
        self.mma_latency = engine.mma_latency
        self._at(0.0, URGENT)

    def _at(self, delay: float, priority) -> None:
        """Have the engine call ``run`` after ``delay`` cycles: an entry in simpy's event queue, ordered as simpy
        orders events (time, priority, id), whose event is this scheduler (see ``Engine._drain``).  It replaces
        any wake-up booked before."""
        env = self.env
        eid = next(env._eid)
        self.valid = eid
        heappush(env._queue, (env._now + delay, priority, eid, self))

    def add(self, w: Warp) -> None:
        w.sched = self
        self.warps.append(w)
        self.wake()

    def wake(self) -> None:
        """A warp of this scheduler may have become ready: a sleeping scheduler runs again now (its timed
        wake-up, if any, goes stale)."""
        if self.sleeping:
            self.sleeping = False
            self._at(0.0, URGENT)

    def run(self) -> None:
        """The scheduler, woken from simpy's event queue.  It keeps a local clock ``tl`` that may run up to ``QUANTUM``
        cycles ahead of simpy's clock, so that many short intervals cost one simpy event; it returns (after
        booking its next call) whenever it gets further ahead, and sleeps when no warp can issue before then:
        a timed call when a warp becomes ready, or none, until ``wake``."""
        self.sleeping = False
        env = self.env
        eng = self.engine
        lrr = eng.policy_lrr
        stall = eng.stall_cycles
        tl = self.tl
        now = env._now
        warps = self.warps
        while True:
            if tl < now:
                tl = now
            w = None
            soonest = INF
            last = self.last
            if lrr:
                start = 0
                if last is not None and last in warps:
                    start = warps.index(last) + 1
                n = len(warps)
                for k in range(n):
                    c = warps[(start + k) % n]
                    if c.ready_at <= tl:
                        w = c
                        break
            elif last is not None and not last.done and last.ready_at <= tl:
                w = last
            else:
                for c in warps:
                    ra = c.ready_at
                    if ra <= tl:
                        w = c
                        break
                    if ra < soonest:
                        soonest = ra
            if w is None:
                if lrr and warps:
                    soonest = min([c.ready_at for c in warps])
                self.tl = tl
                if not warps and eng.all_dispatched:
                    return
                if soonest - now < QUANTUM:
                    tl = soonest          # a warp is ready soon: move the local clock, no event
                    continue
                self.sleeping = True
                if soonest < INF:
                    self._at(soonest - now, NORMAL)
                return
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
                self.tl = tl
                self._at(tl - now, NORMAL)
                return

    def advance(self, w: Warp, now: float) -> int:
        """Run warp ``w`` from ``now`` through one interval; return the issue slots it used.

        The interval ends at a scoreboard wait for a result still in flight, at a barrier, or ``WINDOW``
        cycles on.  Its warp-cycles are accounted: issue slots (``selected``), pipe throttling, and waits on
        fixed-latency results inside the interval; the warp is next ready when both its own clock ``t`` and its
        issue slots are through."""
        cta = w.cta
        stream = w.stream
        pend = w.pending
        pipe_free = self.pipe_free
        t = now
        issued = 0
        limit = now + WINDOW
        throttle = 0.0
        n = len(stream)
        pc = pc0 = w.pc
        stop = 0                  # 1: scoreboard wait (or a failed lock attempt), 2: barrier
        while pc < n:
            k, kind, p, ni, deps, busy, dt, x, ws, dre = stream[pc]
            if deps:
                dep_t = 0.0
                for d in deps:
                    r = pend[d]
                    if r > dep_t:
                        dep_t = r
                        dk = d
                if dep_t > t:
                    reason = dre[deps.index(dk)]
                    if reason == 6 and dep_t - t <= WINDOW:
                        t = dep_t     # a short fixed-latency dependence: wait inside the interval
                    else:
                        stop = 1      # the scoreboard stops the warp until the data is back
                        break
            if kind == _ALU:
                pf = pipe_free[p]
                if pf > t:
                    throttle += pf - t
                    t = pf
                done = t + busy
                pipe_free[p] = done
                t += dt
                if ws:
                    # a result on a dependence chain from a load: its consumers wait for the pipe latency
                    pend[ws] = (done if done > t else t) + x
            elif kind == _BAR:
                w.last_store = None
                pc += 1
                issued += ni
                t += ni
                stop = 2
                break
            elif kind == _MMA:
                pf = pipe_free[_TENSOR]
                start = t if t > pf else pf
                if type(x) is tuple:
                    # operands read from shared memory: the warp's share passes the SM's data stage (shared with
                    # LDS/STS and the copies into shared memory); the tensor pipe waits for them
                    x, sx = x
                    mem = self.engine.mem
                    smi = self.sm.index
                    free = mem.l1_free[smi]
                    s0 = start if start > free else free
                    mem.l1_free[smi] = s0 + sx
                    end = s0 + sx if s0 + sx > start + x else start + x
                else:
                    end = start + x
                pipe_free[_TENSOR] = end
                pend[ws] = end + self.mma_latency
                t = start + ni
            elif kind == _AWAIT:
                t += ni          # cp.async.wait_group: its deps (the copies) were checked above
            elif kind == _MEMBAR:
                # a memory fence: the warp issues nothing more until the memory system acknowledges it
                w.last_store = None
                t += ni
                issued += ni
                pc += 1
                dep_t = t + x
                reason = 11
                stop = 1
                break
            else:
                # memory instruction: the LSU pipe, then the memory system
                spin = False
                if kind == _ATOM and type(x) is tuple and len(x) > 5:       # (a shared atomic: x is a list)
                    lock = x[6][w.wi]
                    if x[5] == 1 and lock >= 0:
                        holder = self.engine.locks.get(lock)
                        if holder is None:
                            self.engine.locks[lock] = cta
                        elif holder is not cta:
                            spin = True    # another CTA holds it: this attempt fails, and the warp tries again
                pf = pipe_free[_LSU]
                if pf > t:
                    throttle += pf - t
                    t = pf
                pipe_free[_LSU] = t + busy
                t += ni
                if type(x) is list:
                    w.last_store = None
                    eng = self.engine
                    ready = eng.mem.shared(self.sm.index, t, x[w.wi], eng.shared_latency)
                    if kind != _STORE:
                        pend[ws] = ready
                else:
                    # global/local: the warp's part of the coalesced requests goes into the memory system
                    line_a, mask_a, ptr, slice_a, use_l1 = x if len(x) == 5 else x[:5]
                    wi = w.wi
                    lo = ptr[wi]
                    hi = ptr[wi + 1]
                    if lo == hi:
                        if kind != _STORE:
                            pend[ws] = t
                    elif kind == _ACOPY or kind == _LOAD:
                        w.last_store = None
                        pend[ws] = self.mem_load(self.smi, t, line_a[lo:hi], mask_a[lo:hi], use_l1, slice_a[lo:hi],
                                                 x[5][wi] if len(x) == 6 else 0, ni, kind == _ACOPY)
                    elif kind == _STORE:
                        # (use_l1: a store of 8 bytes per lane or narrower, which merges with the warp's store
                        # before it over the same sectors)
                        a, wrote = self.engine.mem.store(self.sm.index, t, line_a[lo:hi], mask_a[lo:hi],
                                                         w.last_store if use_l1 else None)
                        w.last_store = wrote if use_l1 else None
                        if a > w.acked_at:
                            w.acked_at = a
                    else:
                        w.last_store = None
                        eng = self.engine
                        r = eng.mem.atomic(self.sm.index, t, line_a[lo:hi], mask_a[lo:hi],
                                           eng.lanes_of(cta.table, k, wi))
                        if spin:
                            # the failed attempt's old value comes back, the spin loop goes round, and the warp
                            # executes this compare-and-swap again (pc stays)
                            eng.lock_spin()
                            eng.spin_inst += x[8]
                            dep_t = r + x[7]
                            reason = 2
                            issued += ni
                            stop = 1
                            break
                        pend[ws] = r
                        if len(x) > 5 and x[5] == 2 and eng.locks.get(x[6][wi]) is cta:
                            eng.lock_release(x[6][wi])      # given back: the next attempt to reach it wins
            issued += ni
            pc += 1
            if t > limit or issued >= MAX_INTERVAL_INST:
                break
        w.pc = pc
        # account the interval's warp-cycles
        eng = self.engine
        stall = eng.stall_cycles
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
        tl = eng.timeline
        if tl is not None and pc > pc0:
            tl.append((self.sm.index, self.index, w.uid, now, end, 0, stream[pc0][0], stream[pc - 1][0]))
        if stop == 1:
            w.ready_at = dep_t
            w.reason = reason
            stall[reason] += dep_t - end
            if tl is not None:
                tl.append((self.sm.index, self.index, w.uid, end, dep_t, reason, k, k))
        elif stop == 2:
            if x is True:                # a grid barrier (GRID_SYNC, compiled as a barrier whose x is True)
                eng.grid_barrier_arrive(w, end)
            else:
                eng.barrier_arrive(w, end)
        elif pc >= n:
            w.done = True
            if w.acked_at > end:
                # EXIT waits until the memory system has acknowledged the warp's stores
                stall[_DRAIN] += w.acked_at - end
                if tl is not None:
                    tl.append((self.sm.index, self.index, w.uid, end, w.acked_at, _DRAIN, k, k))
                w.ready_at = w.acked_at
        return issued


class SM:
    """One SM: its four schedulers and the CTAs resident on it."""

    def __init__(self, engine, index: int, n_sub: int):
        self.engine = engine
        self.index = index
        self.scheds = [WarpScheduler(engine, self, i) for i in range(n_sub)]
        self.ctas: list[CTA] = []
        self.warp_rr = 0
        self.resident_warps = 0
        self.warm_at = None     # when the SM has the launch's code and constants (chip.code_fetch_cycles)
