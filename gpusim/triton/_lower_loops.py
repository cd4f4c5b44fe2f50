"""Runtime loops: their bookkeeping, and Triton's software pipeliner (``tritongpu-pipeline``).

A loop over ``range`` / ``tl.range`` costs its counter and branch per iteration.  When it holds cp.async copies
(loads that reach a dot, see ``_lower_memory``) and ``num_stages >= 2``, ``loop_end`` reorders its ops the way
the pipeliner schedules them: the copies for iteration i + num_stages - 1 are issued at the end of iteration i,
after its MMAs (the SASS of tutorial 03's kernel at 3 stages: ``DEPBAR.LE SB0`` for the step's copies, ``BAR.SYNC``,
the ``HGMMA``s, ``WARPGROUP.DEPBAR.LE gsb0, 0x1``, ``BAR.SYNC``, then the ``LDGSTS`` of step i + 2), those for
iterations 0 .. num_stages - 2 form the prologue, and the last iterations issue copies past the end predicated off.
(Until 2026-11-29 the copies led their iteration: a lone CTA at 2 stages came out 53% fast against the H200,
``records/h200/ctas_*``; DEVIATIONS.md.)
"""
from __future__ import annotations

import math

from ..trace import OpKind, Pipe
from . import _core as C
from . import costs as K
from ._lower_base import RecOp


class _Loop:
    __slots__ = ("start", "iters", "stages", "kind", "has_copies", "depth", "key", "wait_it", "tma_it", "tma_wait", "tma",
                 "line", "gates")

    def __init__(self, start, stages, kind, depth, key=None, line=0):
        self.start, self.iters, self.stages, self.kind = start, [], stages, kind
        self.key = key
        self.line = line          # the loop statement's source line
        self.gates = []           # (op index, reload op) of each iteration's register spills (``_lower_spill``)
        self.has_copies = False
        self.depth = depth
        self.wait_it = -1
        self.tma_it = -1          # the iteration whose TMA loads share the mbarrier wait ``tma_wait``
        self.tma_wait = None
        self.tma = False          # its copies are TMA loads: a ring of mbarriers set up before it, torn down after


class LoopLowering:
    """``Recorder``'s loop hooks (called by ``_control``'s ``For`` / ``While``) and the pipeliner's
    reordering."""

    def loop_begin(self, num_stages, kind="for", line=0):
        st = num_stages if num_stages is not None else self.S
        _, here, key = C.user_site()
        self.loops.append(_Loop(len(self.ops), int(st), kind, len(self.loops), key, line or here))

    def loop_iter(self):
        if self.loops:
            lp = self.loops[-1]
            lp.iters.append(len(self.ops))
            line = C.user_line()[1]
            self.spill_iteration(lp, line)
            self._cost(K.LOOP_ITER, 1, (), line=line)
            if self.facts.sites.get(lp.key, {}).get("pipelined"):
                # the ring's barrier before this iteration's copies overwrite a slot, and its bookkeeping
                self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, (), label="BAR.SYNC", line=line)
                self._cost(K.PIPE_ITER, 1, (), line=line)

    def note_carried(self, values) -> None:
        """The tiles the current loop carries from one trip to the next (from its second trip on): their registers
        per thread, for the register estimate (``Region.carry``)."""
        regs = 0
        for t in values:
            if isinstance(t, C.tensor) and t.shape and not t.dtype.is_ptr():       # (pointers: ``addresses``)
                if t.lsrc is not None and self.facts.get(t.lsrc).get("smem_box"):
                    continue        # a TMA box that only feeds tl.dot never leaves shared memory
                regs += -(-self.ept(t) * max(1, t.dtype.primitive_bitwidth) // 32)
        r = self._region()
        r.carry = max(r.carry, regs)

    def loop_end(self):
        lp = self.loops.pop()
        self.spill_gate(lp)
        if lp.has_copies and lp.stages >= 2:
            self._reorder(lp)
        if lp.tma:
            line = C.user_line()[1]
            n0 = len(self.ops)
            self._cost(K.MBARRIER_INIT, lp.stages, (), line=line)
            init = self.ops[n0:]
            del self.ops[n0:]
            self.ops[lp.start:lp.start] = init
            self._cost(K.MBARRIER_INVAL, lp.stages, (), line=line)

    def _reorder(self, lp: _Loop):
        seg = self.ops[lp.start:]
        starts = [s - lp.start for s in lp.iters]
        if not starts:
            return
        n = len(starts)
        bounds = starts + [len(seg)]
        pre = seg[:starts[0]]
        copies, rest = [], []
        for i in range(n):
            part = seg[bounds[i]:bounds[i + 1]]
            copies.append([o for o in part if o.loop is lp])
            rest.append([o for o in part if o.loop is not lp])
        D = lp.stages - 1
        # the software pipeline issues D more copy groups than there are iterations: the prologue's and the
        # last iterations' copies for iterations past the end run predicated off (LDGSTS with a false guard,
        # their masks and addresses still computed): tl_matmul_1408_128x128x64 runs 16 LDGSTS outside its
        # loop and 8 in each of its 22 iterations; attn_naive's one-iteration bmm_kernel runs 24
        template = copies[n - 1]
        phantoms = [[p for o in template for p in self._phantom(o)] for _ in range(D)]
        new = list(pre)
        for i in range(min(D, n)):
            new.extend(copies[i])
        for i in range(n):
            # iteration i's body (its wait for its copies, the barrier, its MMAs), then the copies for iteration i + D:
            # Triton 3.6's loop issues them after the wgmmas (they overwrite the slot the previous wgmmas read)
            new.extend(rest[i])
            new.extend(copies[i + D] if i + D < n else phantoms.pop())
        for ph in phantoms:
            new[len(pre):len(pre)] = ph
        self.ops[lp.start:] = new

    @staticmethod
    def _phantom(o: RecOp) -> list:
        """A copy (or its bookkeeping) for an iteration past the loop's end: issued predicated off, its pointers
        still advanced."""
        out = [RecOp(OpKind.ALU, o.pipe, o.n_inst, o.line, [], None, 0, "",
                     o.label + " (off)" if o.kind == OpKind.ASYNC_COPY else o.label, o.active)]
        if o.kind == OpKind.ASYNC_COPY and o.flops < 0:
            for pipe, n, lab in K.ADDR_ADVANCE:
                out.append(RecOp(OpKind.ALU, pipe, int(math.ceil(n * -o.flops)), o.line, [], None, 0, "", lab,
                                 o.active))
        return out

    def in_runtime_loop(self):
        return self.loops[-1] if self.loops else None
