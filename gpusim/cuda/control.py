"""The SIMT stack of the machine: divergence and reconvergence of structured control flow.

An ``if`` on a lane-varying condition runs both sides under complementary masks (a side no lane takes is
skipped), loops run while any lane is active, ``break``/``continue``/``return`` remove lanes from the mask until
the construct they leave ends, and lanes reconverge at the end of each construct (its immediate post-dominator;
a convergence region, BSSY ... BSYNC, where the condition varies within a warp and code follows).  Assignments
under a partial mask merge (``where(mask, new, old)``).  Device functions run inlined in a ``Frame``.  Loops
with a runtime trip count keep a ``unroll.LoopRecord`` of the ops each iteration recorded, for the unrolling
pass; constant-trip loops of at most ``costs.LOOP_UNROLL_MAX_TRIP`` iterations are fully unrolled.

``Control`` is the largest of the chunk's mixins (about 390 lines): if/else, loops and returns share the mask
discipline (entry, exited, broken and continued lanes) and the loop records, and are kept together so that the
discipline can be read in one place.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from ..trace import WARP
from . import costs as C_
from .atomics import CAS_CALLS
from .unroll import LoopRecord
from .records import RecordRef
from .retkinds import kind_of_value
from .vectors import Vec
from .values import Mask
from .values import (ARRAYS, BOOL, EMPTY, I64, UNDEF, ArrayRef, ArrayView, LocalArray, SharedArray, SubArray, Ununified,
                     V, _fix, _union, const, m_and, m_andnot, m_or, unify)


def _kind(x) -> str:
    if isinstance(x, V):
        return "number"
    if isinstance(x, ARRAYS):
        return "array"
    if type(x) is Vec:
        return x.vname
    if isinstance(x, tuple):
        return "tuple"
    if isinstance(x, Ununified):
        return "ununified"
    return "other"


class Frame:
    __slots__ = ("entry", "returned", "retval", "kind", "check", "args", "ran")

    def __init__(self, entry, kind, check=None, args=()):
        self.entry = entry
        self.returned = EMPTY
        self.retval = UNDEF
        self.kind = kind
        self.check, self.args, self.ran = check, args, {}     # numba's return-type unification (retkinds.py)


class IfState:
    __slots__ = ("entry", "mt", "me", "tend", "join", "has_else", "line")


#: passes of a loop around a compare-and-swap after which it is taken for a spin lock that cannot be released (at
#: least four passes per thread of the chunk: a CAS loop lets one contender per address through per pass)
SPIN_PASSES = 20_000


class LoopState:
    __slots__ = ("entry", "exited", "broken", "cont", "nret", "counter", "stop", "step", "unrolled",
                 "iter_mask", "nlost", "rec", "used", "countable", "join", "varying", "mark", "tested", "start",
                 "slots", "spins", "cas_seen")


class SlotPlan:
    """A runtime-unrolled ``range`` loop whose lanes split differently into remainder and groups
    (``Control.range_begin``).

    LLVM compiles ``for v in range(a, b, c)`` with a runtime trip count ``n`` as ``n // U`` groups of ``U``
    iterations (``costs.LOOP_UNROLL_FACTOR``) and a remainder of ``n % U`` single ones: after the groups (an
    epilogue) when a loop-carried integer starts at a constant (``range(n)``: the loop value starts at 0), else
    before them (a prologue: ``range(start, n, stride)`` with a runtime start; LLVM's ``isEpilogProfitable``, as
    numba-cuda's SASS shows).  A warp whose lanes split differently issues the remainder copies for the lanes that
    have one and the groups for those that have them, each lane at its own iteration: ``max(n % U) + U *
    max(n // U)`` iterations, not ``max(n)`` (trips of 3 and 4 in one warp: 7).  Arrays are (C, P) int64 per lane;
    ``R``: the warp's largest remainder (prologue) or ``U`` times its most groups (epilogue), per lane."""

    __slots__ = ("s", "a", "c", "r", "q", "R", "epilog")

    def __init__(self, a, c, r, q, R, epilog):
        self.s = 0
        self.a, self.c, self.r, self.q, self.R, self.epilog = a, c, r, q, R, epilog


def _iter_words(kind: str, used, countable: bool) -> int:
    """32-bit registers of a loop's trip state: numba's range iterator keeps a 64-bit count and, when the body
    reads the loop variable, a 64-bit value (32-bit when only narrowed arithmetic reads it); a countable
    ``while`` keeps the 64-bit trip counter of its unrolled form."""
    if kind == "range":
        return 2 + (2 if used is True else (1 if used else 0))
    return 2 if countable else 0


class Control:
    """The chunk's (``runtime.Chunk``) control flow: the compiler turns every ``if``/``while``/``for``/``break``/
    ``continue``/``return`` and assignment into calls of these methods.  State (set by ``Chunk.__init__``):
    ``mask``, ``base``, ``full``, ``frames``, ``loop_depth``, ``n_returns``, ``n_lost``, ``_open_loops``,
    ``_loops``, ``_straight``, ``_iter_words``."""

    def assign(self, old, new, name=None):
        t = type(new)
        if self.mask is not self.base and name is not None and old is not UNDEF and old is not None \
                and _kind(old) != _kind(new):
            return Ununified(name, old, new)      # numba's type unification fails where the paths join
        if t is V:
            if name is not None:
                d = self.L.var_dtypes
                isz = new.v.dtype.itemsize
                if d.get(name, 0) < isz:
                    d[name] = isz
                if not new.const:
                    self.L.var_runtime.add(name)      # else a compile-time constant: no register
            m = self.mask
            if m is self.base or old is UNDEF or type(old) is not V:
                return new
            if m is EMPTY:
                return old
            ov, nv = old.v, new.v
            if type(ov) is not np.ndarray and type(nv) is not np.ndarray and ov == nv and ov.dtype == nv.dtype:
                return new
            dt = unify(ov.dtype, nv.dtype)
            r = np.where(m.a, nv if nv.dtype == dt else nv.astype(dt), ov if ov.dtype == dt else ov.astype(dt))
            return V(r, _union(old.deps, new.deps), False)
        if t is tuple and type(old) is tuple and len(old) == len(new) and self.mask is not self.base:
            return tuple(self.assign(o, n) for o, n in zip(old, new))
        if t is Vec and type(old) is Vec and old.vname == new.vname and self.mask is not self.base:
            return Vec(new.vname, [self.assign(o, n) for o, n in zip(old, new)])
        if t is ArrayView and name is not None and not new.offset.const:
            d = self.L.var_dtypes             # a view's data pointer lives in a register pair (its shape and
            d[name] = max(d.get(name, 0), 8)  # strides mostly fold or are rematerialized)
            self.L.var_runtime.add(name)
        m = self.mask
        if (t is SubArray or t is ArrayView or type(old) in (SubArray, ArrayView)) and isinstance(old, ARRAYS) \
                and m is not self.base and m.a is not None:
            # a view assigned on some lanes: each lane keeps its own (numba selects the array structs' fields)
            return old if m is EMPTY else self.merge_arrays(m.a, new, old, name)
        if t is slice and type(old) is slice and m is not self.base and m.a is not None and \
                all((x is None) == (y is None) for x, y in zip((old.start, old.stop, old.step),
                                                                (new.start, new.stop, new.step))):
            return old if m is EMPTY else slice(*(None if y is None else self.assign(x, y) for x, y in
                                                  zip((old.start, old.stop, old.step), (new.start, new.stop, new.step))))
        if t is RecordRef and type(old) is RecordRef and m is not self.base and m.a is not None:
            return old if m is EMPTY else self.merge_records(m.a, new, old, name)
        if new is None:
            return old if old is not UNDEF else None
        return new

    # ---- functions and returns ------------------------------------------------------------------------------
    def func_begin(self, kind, check=None, args=()):
        """``check``: a device function's ``retkinds.ReturnCheck`` (its returns' types must unify: checked before
        its body runs, from what can be read off the returns, and at its end with the values the returns gave)."""
        f = Frame(self.mask, kind, check, args)
        if check is not None:
            err = lambda msg, line: self._err(CompileError, msg, line)      # noqa: E731
            check.verify(args, {}, err)
            check.verify_calls(args, err)
        self.frames.append(f)
        if kind == "kernel" and self.recording:
            line = self.ck.first_line
            self._rec(("kernel_entry",), line)
            for _ in range(self.L.param_words):
                self._rec(("param",), line)
        return f

    def func_end(self, f, line):
        self.frames.pop()
        if f.check is not None and f.ran:
            f.check.verify(f.args, f.ran, lambda msg, ln: self._err(CompileError, msg, ln))
        if f.kind == "kernel":
            if self.recording:
                self.mask = self.full
                self._rec(("exit",), line)
        self.mask = f.entry
        return None if f.retval is UNDEF else f.retval

    def ret(self, f, val, line):
        m = self.mask
        if m is EMPTY:
            return
        if val is not None:
            if f.kind == "kernel":
                raise self._err(CompileError, "a kernel cannot return a value (CUDA kernel must have void return type)", line)
            if isinstance(val, (LocalArray, SharedArray)):
                raise self._err(CompileError, "Only accept returning of array passed into the function as argument "
                                f"(the cuda.{val.space}.array {val.name!r} cannot be returned)", line)
            if isinstance(val, (SubArray, ArrayView)) and val.depth >= len(self.frames):
                raise self._err(CompileError, "Only accept returning of array passed into the function as argument "
                                f"(the view {val.name!r} made in this function cannot be returned)", line)
            f.retval = val if f.retval is UNDEF else self.assign(f.retval, val)
        if f.check is not None:
            f.ran.setdefault(line, []).append(kind_of_value(val))
        f.returned = m_or(f.returned, m)
        self.mask = EMPTY
        self.n_returns += 1
        self.n_lost += 1
        self._no_unroll()

    def raise_(self, info, dyn, line):
        """A kernel's ``raise`` (or failing ``assert``) on the active lanes, before their ``return``: the launch
        keeps the first raising thread's exception (``Launch.raised``), which ``launch.run`` raises on the host
        when the kernel was compiled with debug=True, as numba-cuda's dispatcher does."""
        m = self.mask
        if m is EMPTY or self.L.raised is not None:
            return
        c, p = self._first_lane(m.a if m.a is not None else True)
        args = list(info.args)
        if dyn is not None:
            rec, self.recording = self.recording, False
            try:
                vals = dyn()
            finally:
                self.recording = rec
            for i, v in zip(info.dynamic, vals):
                a = np.asarray(v.v) if type(v) is V else None
                args[i] = (np.broadcast_to(a, (self.C, self.P))[c, p].item() if a is not None and a.ndim
                           else a.item() if a is not None else v)
        self.L.raised = (info.cls, tuple(args), line, self.L.block_of(self.first + c), self.L.thread_of(p))

    def live(self) -> bool:
        return self.mask is not EMPTY

    # ---- if / else ----------------------------------------------------------------------------------------------
    def if_begin(self, c, line, join=True, has_else=False) -> IfState:
        """``if c:`` -- ``join``: code follows the ``if`` (the compiler opens a convergence region for a
        lane-varying condition); ``has_else``: the statement has an else arm (the then arm jumps over it)."""
        st = IfState()
        m0 = self.mask
        st.entry = m0
        st.join = False
        st.has_else = has_else
        st.line = line
        if m0 is EMPTY:
            st.mt = st.me = EMPTY
            return st
        c = self.truth(c, line)
        cv = c.v
        if self.recording and not c.const:
            varying = type(cv) is np.ndarray and cv.shape[-1] != 1
            if varying and join:
                st.join = True
                self._rec(("if_varying",), line, c.deps)
            elif join:
                self._rec(("branch",), line, c.deps)
            else:
                self._rec(("branch_exit",) if len(self.frames) == 1 and self.loop_depth == 0 else ("branch",),
                          line, c.deps)
        if type(cv) is not np.ndarray:
            if cv:
                st.mt, st.me = m0, EMPTY
            else:
                st.mt, st.me = EMPTY, m0
            return st
        mt = m_and(m0, cv)
        if mt is EMPTY:
            st.mt, st.me = EMPTY, m0
            return st
        me = m_andnot(m0, cv)
        if me is EMPTY:
            st.mt, st.me = m0, EMPTY
            return st
        st.mt, st.me = mt, me
        return st

    def if_then(self, st) -> bool:
        if st.mt is EMPTY:
            return False
        self.mask = st.mt
        return True

    def if_else(self, st) -> bool:
        st.tend = self.mask if st.mt is not EMPTY else EMPTY
        if st.has_else and st.tend is not EMPTY and self.recording and st.me is not EMPTY:
            self._rec(("branch",), st.line)          # the then arm jumps over the else arm
        if st.me is EMPTY:
            return False
        self.mask = st.me
        return True

    def if_end(self, st) -> None:
        eend = self.mask if st.me is not EMPTY else EMPTY
        if st.tend is st.mt and eend is st.me:
            self.mask = st.entry
        else:
            new = m_or(st.tend, eend)
            if st.entry is self.base and self.loop_depth == 0 and len(self.frames) == 1:
                # kernel top level, outside loops: lanes can only have left through a kernel return
                self.base = new
            self.mask = new
        if st.join and self.recording and self.mask is not EMPTY:
            self._rec(("join",), st.line)

    def ifexp(self, c, fa, fb, line) -> V:
        """``a if c else b``: each arm is evaluated for the lanes that select it, then merged (SEL)."""
        m0 = self.mask
        c = self.truth(c, line)
        cv = c.v
        if type(cv) is not np.ndarray:
            return fa() if cv else fb()
        mt = m_and(m0, cv)
        me = m_andnot(m0, cv)
        if me is EMPTY:
            return fa()
        if mt is EMPTY:
            return fb()
        self.mask = mt
        try:
            a = fa()
        finally:
            self.mask = m0
        self.mask = me
        try:
            b = fb()
        finally:
            self.mask = m0
        if isinstance(a, ARRAYS) and isinstance(b, ARRAYS):     # a view per lane (numba selects the structs)
            r = self.merge_arrays(cv, a, b, None, line)
            if type(r) is Ununified:
                raise self._err(r.error, r.message(), line)
            return r
        return self.select_value(c, self._val(a, line), self._val(b, line), line)

    def selp(self, c, a, b, line) -> V:
        """``cuda.selp(c, a, b)``: both operands evaluated, one SEL; numba-cuda types it for two operands of one
        type only."""
        a, b = self._val(a, line), self._val(b, line)
        ta, tb = np.asarray(a.v).dtype, np.asarray(b.v).dtype
        if ta != tb:
            raise self._err(CompileError, f"No implementation of function selp found for signature: selp(bool, {ta}, "
                            f"{tb}) (numba-cuda selects between two operands of one type)", line)
        c = self.truth(c, line)
        if type(c.v) is not np.ndarray:
            return a if c.v else b
        return self.select_value(c, a, b, line)

    def shortcircuit(self, is_and, a, fb, line):
        """``a and b`` / ``a or b``: ``b`` is evaluated only for the lanes whose result depends on it."""
        a = self._val(a, line)
        ta = self.truth(a, line)
        cv = ta.v
        if type(cv) is not np.ndarray:
            if is_and:
                return fb() if cv else a
            return a if cv else fb()
        m0 = self.mask
        need = m_and(m0, cv) if is_and else m_andnot(m0, cv)
        if need is EMPTY:
            return a
        self.mask = need
        try:
            b = self._val(fb(), line)
        finally:
            self.mask = m0
        if a.v.dtype == BOOL and b.v.dtype == BOOL:
            r = (cv & b.v) if is_and else (cv | b.v)
            deps = _union(ta.deps, b.deps)
            n0 = len(self.ops)
            if self.recording:
                self._rec(("shortcircuit",), line, deps)
            return V(_fix(r), self._out(deps, n0), False)
        return self.select_value(ta, b, a, line) if is_and else self.select_value(ta, a, b, line)

    # ---- loops ------------------------------------------------------------------------------------------------
    # A loop with a runtime trip count keeps a LoopRecord of the ops each iteration recorded; ``unroll_loops``
    # later rewrites innermost ones the way LLVM's runtime unrolling does.  A loop whose condition varies
    # across the lanes of a warp and that has code after it opens a convergence region (BSSY ... BSYNC).

    def _no_unroll(self) -> None:
        """Something in the open loops' bodies stops LLVM from runtime-unrolling them (a barrier, a warp-level
        collective, break / continue / return)."""
        for r in self._open_loops:
            r.eligible = False

    def _collective(self) -> None:
        self._no_unroll()

    def _open_loop(self, st, kind: str, eligible: bool, setup_key, line) -> None:
        """Start the LoopRecord of a loop with a runtime trip count (an enclosing one is then not innermost)."""
        for r in self._open_loops:
            r.eligible = False
        rec = LoopRecord(kind, st.used, eligible)
        rec.words = _iter_words(kind, st.used, eligible)
        self._iter_words += rec.words
        self.L.iter_words = max(self.L.iter_words, self._iter_words)
        if st.varying and st.join:
            self._rec(("loop_region",), line)
        if setup_key is not None:
            rec.setup = self._rec_span(setup_key, line)
        st.rec = rec
        self._open_loops.append(rec)

    def loop_begin(self, line, countable=False, join=True) -> LoopState:
        """A ``while`` loop: ``countable`` -- the compiler can compute its trip count (``while i < n: ... i +=
        step``), so it is a candidate for runtime unrolling; ``join``: code follows the loop."""
        self.loop_depth += 1
        st = LoopState()
        st.entry = self.mask
        st.exited = st.broken = st.cont = EMPTY
        st.nret = self.n_returns
        st.unrolled = False
        st.iter_mask = None
        st.nlost = 0
        st.rec = None
        st.used = True
        st.countable = countable
        st.join = join
        st.varying = False
        st.mark = len(self.ops)
        st.tested = False
        st.slots = None
        st.spins = 0
        st.cas_seen = CAS_CALLS[0]
        return st

    def _loop_cond(self, st, cv) -> bool:
        m = self.mask
        if type(cv) is not np.ndarray:
            if cv:
                ok = True
            else:
                st.exited = m_or(st.exited, m)
                self.mask = EMPTY
                ok = False
        else:
            mt = m_and(m, cv)
            if mt is EMPTY:
                st.exited = m_or(st.exited, m)
                self.mask = EMPTY
                ok = False
            else:
                ex = m_andnot(m, cv)
                if ex is not EMPTY:
                    st.exited = m_or(st.exited, ex)
                    self.mask = mt
                ok = True
        st.iter_mask = self.mask
        st.nlost = self.n_lost
        return ok

    def loop_test(self, st, c, line) -> bool:
        if self.mask is EMPTY:
            return False
        if CAS_CALLS[0] != st.cas_seen:
            # a loop around a compare-and-swap: each pass lets at least one contender through, unless the holder of
            # a spin lock waits, in lockstep, for the threads that spin on it (its release comes after the loop)
            st.cas_seen = CAS_CALLS[0]
            st.spins += 1
            if st.spins > max(SPIN_PASSES, 4 * self.C * self.L.P):
                raise self._err(UnsupportedConstruct, f"a loop around a compare-and-swap ran {st.spins:,} passes "
                                "without its threads getting through: a spin lock its threads contend for -- gpusim "
                                "runs a warp's threads, and the blocks it executes together, in lockstep, so the "
                                "holder never reaches its release (the GPU interleaves them); spin locks run in "
                                "gpusim's Triton kernels (tl.atomic_cas), not in numba-cuda ones: use an atomic "
                                "update (cuda.atomic.add ...) instead of the lock", line)
        c = self.truth(c, line)
        rec = None
        ctl = list(range(st.mark, len(self.ops)))       # the test's compare ...
        if self.recording and not c.const:
            if not st.tested:
                st.varying = type(c.v) is np.ndarray and c.v.shape[-1] != 1
                self._open_loop(st, "while", st.countable, ("while_setup",) if st.countable else None, line)
            rec = st.rec
            ctl += self._rec_span(("branch",), line, c.deps)    # ... and branch
        st.tested = True
        ok = self._loop_cond(st, c.v)
        if rec is not None:
            if ok:
                rec.iters.append([ctl[0] if ctl else len(self.ops), None, ctl])
            else:
                rec.final = ctl
        return ok

    def loop_next(self, st) -> None:
        if st.rec is not None and st.rec.iters and st.rec.iters[-1][1] is None:
            st.rec.iters[-1][1] = len(self.ops)
        st.mark = len(self.ops)
        if self.n_lost == st.nlost and st.iter_mask is not None:
            self.mask = st.iter_mask
            st.cont = EMPTY
            return
        if st.cont is not EMPTY:
            self.mask = m_or(self.mask, st.cont)
            st.cont = EMPTY

    def loop_end(self, st, line=0) -> None:
        self.loop_depth -= 1
        if st.unrolled and self.recording and len(self.ops) > st.start:
            self._straight.append((st.start, len(self.ops)))
        if st.nret == self.n_returns:
            self.mask = st.entry
        else:
            self.mask = m_or(st.exited, st.broken)
        rec = st.rec
        if rec is not None:
            self._open_loops.remove(rec)
            self._iter_words -= rec.words
            if rec.iters and rec.iters[-1][1] is None:
                rec.iters[-1][1] = len(self.ops)
            self._loops.append(rec)
            if st.varying and st.join and self.recording and st.entry is not EMPTY:
                m = self.mask
                self.mask = st.entry
                self._rec(("join",), line)
                self.mask = m

    def brk(self, st) -> None:
        if self.mask is EMPTY:
            return
        st.broken = m_or(st.broken, self.mask)
        self.mask = EMPTY
        self.n_lost += 1
        self._no_unroll()

    def cont(self, st) -> None:
        if self.mask is EMPTY:
            return
        st.cont = m_or(st.cont, self.mask)
        self.mask = EMPTY
        self._no_unroll()
        # lanes that continue rejoin at the next iteration: not lost for the loop

    def range_begin(self, a, b, c, line, used=True, join=True, slots=False) -> LoopState:
        """``for v in range(a, b, c)`` -- ``used``: the body reads ``v`` (numba's iterator then also advances
        the value); ``join``: code follows the loop; ``slots``: the body lets lanes run out of step
        (``analysis._slot_order``), so lanes with different remainders run them as the unrolled code does
        (``SlotPlan``)."""
        st = self.loop_begin(line, False, join)
        st.used = used
        a = self._val(a, line)
        b = self._val(b, line)
        c = const(1) if c is None else self._val(c, line)
        # numba-cuda compiles range() of floats, converting them to int64 (truncated): range(2.5) runs twice
        a, b, c = (self.cast(v, I64, line) if v.v.dtype.kind == "f" else v for v in (a, b, c))
        for v in (a, b, c):
            if v.v.dtype.kind not in "iub":
                raise self._err(CompileError, f"range() arguments must be integers, not {v.v.dtype}", line)
        if c.const and int(c.v) == 0:
            raise self._err(CompileError, "range() step must not be zero", line)
        if a.const and b.const and c.const:
            trip = len(range(int(a.v), int(b.v), int(c.v)))
            st.unrolled = trip <= C_.LOOP_UNROLL_MAX_TRIP
            st.start = len(self.ops)
        st.counter = V(a.v.astype(I64) if a.v.dtype != I64 else a.v, a.deps, st.unrolled)
        st.stop = b
        st.step = V(c.v.astype(I64) if c.v.dtype != I64 else c.v, c.deps, c.const)
        if self.recording and not st.unrolled and self.mask is not EMPTY:
            st.varying = any(type(v.v) is np.ndarray and v.v.shape[-1] != 1 for v in (a, b, c))
            deps = _union(_union(a.deps, b.deps), c.deps)
            self._rec(("range_setup",), line, deps)
            if not c.const:
                self._rec(("range_setup_div",), line, deps)
            self._open_loop(st, "range", True, ("unroll_setup", "used") if used else ("unroll_setup",), line)
        st.slots = None
        if st.rec is not None:
            st.rec.epilog = bool(a.const)          # LLVM's isEpilogProfitable: the loop value starts at a constant
            if slots and st.varying and C_.LOOP_UNROLL_FACTOR > 1:
                st.slots = self._slot_plan(st, st.rec.epilog)
        return st

    def _slot_plan(self, st, epilog: bool):
        """The ``SlotPlan`` of a runtime loop entered by lanes with per-lane bounds, or None where the warps' lanes
        split alike (then the iterations run in step, as recorded plainly)."""
        U = C_.LOOP_UNROLL_FACTOR
        shape = (self.C, self.L.P)
        m = self.mask.a
        live = np.ones(shape, bool) if m is None else np.broadcast_to(m, shape)
        a, b, c = (np.broadcast_to(np.asarray(v, np.int64), shape) for v in (st.counter.v, st.stop.v, st.step.v))
        if not np.all(c[live] != 0):
            return None
        cs = np.where(c == 0, 1, c)
        n = np.where(cs > 0, (b - a + cs - 1) // cs, (a - b - cs - 1) // (-cs))
        n = np.where(live & (n > 0), n, 0)
        r, q = n % U, n // U
        if epilog:
            R = U * np.repeat(q.reshape(self.C, -1, WARP).max(axis=2), WARP, axis=1)
            alike = np.array_equal(np.where(r > 0, U * q, R), R)
        else:
            R = np.repeat(r.reshape(self.C, -1, WARP).max(axis=2), WARP, axis=1)
            alike = np.array_equal(np.where(n > 0, r, R), R)
        return None if alike else SlotPlan(a, cs, r, q, R, epilog)

    def _slot_test(self, st) -> bool:
        """The next slot of a ``SlotPlan`` loop: its lanes and each lane's loop value; False when none is left."""
        sp = st.slots
        s = sp.s
        sp.s += 1
        U = C_.LOOP_UNROLL_FACTOR
        first = s < sp.R                # prologue: the remainder copies; epilogue: the groups
        if sp.epilog:
            act = np.where(first, s < U * sp.q, (s - sp.R) < sp.r)
            it = np.where(first, s, U * sp.q + (s - sp.R))
        else:
            act = np.where(first, sp.r > s, (s - sp.R) < U * sp.q)
            it = np.where(first, s, sp.r + (s - sp.R))
        if not act.any():
            st.exited = m_or(st.exited, self.mask)
            self.mask = EMPTY
            return False
        self.mask = Mask(act)
        st.iter_mask = self.mask
        st.nlost = self.n_lost
        st.counter = V(sp.a + it * sp.c, st.counter.deps if s == 0 else (), False)
        return True

    def range_test(self, st, line) -> bool:
        if self.mask is EMPTY:
            return False
        if st.slots is not None:
            ok = self._slot_test(st)
            if ok and st.rec is not None:
                st.rec.iters.append([len(self.ops), None, []])
                self._rec(("range_iter", st.used), line)
            return ok
        cnt, stop, step = st.counter.v, st.stop.v, st.step.v
        if type(step) is not np.ndarray:
            cv = _fix(cnt < stop) if step > 0 else _fix(cnt > stop)
        else:
            cv = np.where(step > 0, cnt < stop, cnt > stop)
        ok = self._loop_cond(st, cv)
        if ok and st.rec is not None:
            st.rec.iters.append([len(self.ops), None, []])
            self._rec(("range_iter", st.used), line)
        return ok

    def range_next(self, st, line) -> None:
        self.loop_next(st)
        if self.mask is EMPTY:
            return
        if st.rec is not None:
            it = st.rec.iters[-1]
            it[2] = self._rec_span(("loop_counter",), line) + self._rec_span(("loop_branch",), line)
            it[1] = len(self.ops)
            st.mark = len(self.ops)
        if st.slots is None:
            st.counter = V(_fix(st.counter.v + st.step.v), (), st.unrolled)
