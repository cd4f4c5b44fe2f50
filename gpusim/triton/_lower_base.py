"""What every lowering step shares: recorded ops, the probe's facts, emission, layouts of index values.

``RecOp`` is one instruction group of a chunk's trace; ``Facts`` what the probe run learned about each static
op (site).  ``LoweringBase`` emits instruction groups (one ``Op`` per pipe of a ``costs`` entry; counts are
per thread, i.e. warp instructions per warp), shared-memory ops, and gives values that have no layout of their
own (index arithmetic, masks, pointers) the layouts of the ops that consume them: Triton propagates layouts
backwards from its anchors (loads, stores, dots, reductions; ``RemoveLayoutConversions``), so the probe
records each site's consumer layouts and a value used in two layouts is computed twice.  ``table`` turns the
recorded ops into the chunk's ``OpTable``.
"""
from __future__ import annotations

import math

import numpy as np

from ..trace import Op, OpKind, OpTable, Pipe, Space
from . import _core as C
from . import costs as K
from ._coalescing import shared_ideal
from ._layouts import WARP, Layout, default_layout
from ._resources import Region


# ---------------------------------------------------------------------------------------------------------
# recorded ops
# ---------------------------------------------------------------------------------------------------------

class RecOp:
    __slots__ = ("kind", "pipe", "n_inst", "line", "deps", "mem", "flops", "mma_dtype", "label", "active", "loop",
                 "it", "lanes", "sync", "indep", "smem")

    def __init__(self, kind, pipe, n_inst, line, deps, mem=None, flops=0, mma_dtype="", label="", active=None):
        self.kind, self.pipe, self.n_inst, self.line = kind, pipe, n_inst, line
        self.deps = deps
        self.mem, self.flops, self.mma_dtype, self.label, self.active = mem, flops, mma_dtype, label, active
        self.loop = None
        self.it = -1
        self.lanes = None        # active lanes of each warp of a CTA (an op only some warps issue), or None: all
        self.sync = 0            # Op.sync: a lock acquired or released (a one-thread atomic of a spin lock)
        self.indep = False       # Op.independent: an elementwise op's instructions, one per register
        self.smem = 0            # Op.smem_bytes: an MMA's operand bytes read from shared memory, per warp


class Facts:
    """What a site (one static op) looks like over all its executions; shared by the probe and every chunk."""

    def __init__(self):
        self.sites: dict = {}

    def get(self, key) -> dict:
        d = self.sites.get(key)
        if d is None:
            d = {}
            self.sites[key] = d
        return d

    _USES = ("lays", "consumer_lays", "users", "folded_users", "contracted_users", "free", "half_fold", "contract",
             "ptr_site", "advance", "trig", "trig_shared")

    def reset_uses(self):
        """Between the two probe passes: forget the use-dependent facts recorded with provisional decisions."""
        for d in self.sites.values():
            for k in self._USES:
                d.pop(k, None)

    def freeze(self):
        """After the probe: the facts seen there decide every chunk's lowering (so chunks agree)."""
        for d in self.sites.values():
            d["from_probe"] = True


class LoweringBase:
    """The state and primitives the lowering mixins of ``Recorder`` share (``Recorder.__init__`` sets the
    state)."""

    # ---- helpers -----------------------------------------------------------------------------------
    def _region(self) -> Region:
        return self.stats.region(self.loops[-1].key if self.loops else None)

    def ept(self, t) -> int:
        lay = t.lay
        if lay is not None and lay.shape == t.shape:
            return lay.ept
        n = t.numel
        return max(1, -(-n // (WARP * self.W)))

    def _emit(self, kind, pipe, n, deps=(), mem=None, flops=0, mma_dtype="", label="", line=None) -> RecOp:
        if line is None:
            line = C.user_line()[1]
        d = [x for x in deps if x is not None]
        if kind in (OpKind.ALU, OpKind.ASYNC_WAIT):
            n = max(0, int(n))
        else:
            n = int(max(1, n))
        op = RecOp(kind, pipe, n, line, d, mem, flops, mma_dtype, label, C.ST.rec_active() if C.ST is not None else None)
        self.ops.append(op)
        return op

    def unrecord(self, since: int, programs: np.ndarray) -> None:
        """Take ``programs`` (bool (P,)) out of the ops recorded from index ``since`` on: a spin loop's failed
        attempts, which the timing engine replaces by waiting for the lock (``Engine.lock_wait``)."""
        keep = ~programs
        for o in self.ops[since:]:
            a = o.active
            if a is None:
                o.active = keep.copy()
            elif a.dtype == np.uint8:                        # lanes per warp (an op of one thread)
                o.active = a * np.repeat(keep, self.W).astype(np.uint8)
            else:
                o.active = a & keep

    def _alu(self, pipe, n, deps, label, line=None):
        if n <= 0:
            return None
        return self._emit(OpKind.ALU, pipe, n, deps, label=label, line=line)

    def _cost(self, table, units, deps, line=None, tag_loop=None) -> RecOp | None:
        """Emit the instructions of a cost-table entry for ``units`` units: one op per pipe, chained."""
        last = None
        deps = [x for x in deps if x is not None]
        for pipe, n, lab in table:
            k = math.ceil(n * units - 1e-9)
            if k <= 0:
                continue
            op = self._emit(OpKind.ALU, pipe, k, deps if last is None else [last], label=lab, line=line)
            if tag_loop is not None:
                op.loop, op.it = tag_loop, len(tag_loop.iters) - 1
            last = op
        return last if last is not None else self._pass(deps, line)

    def _pass(self, deps, line=None):
        """The source of a value that costs no instruction (a folded conversion, a contracted multiply): ready
        when its inputs are -- the one input itself, or a zero-instruction join of several."""
        live = [x for x in deps if x is not None]
        if len(live) <= 1:
            return live[0] if live else None
        return self._emit(OpKind.ALU, Pipe.FP32, 0, live, label="(folded)", line=line)

    def _n_warps(self):
        return self.P * self.W

    def _active_warps(self):
        a = C.ST.active()
        return self._n_warps() if a is None else int(a.sum()) * self.W

    def _shared(self, kind, n_inst, bpl, deps, label, line, mem=None, warps_on=None):
        """A shared-memory op; ``warps_on``: only the first that many warps of each CTA have a lane whose
        predicate is true (the others issue it predicated off: no wavefronts)."""
        if mem is None:
            aw = self._active_warps()
            if warps_on is not None and warps_on < self.W:
                aw = aw * warps_on // self.W
            mem = shared_ideal(self._n_warps(), n_inst, bpl, aw)
            if warps_on is not None and warps_on < self.W:
                wf = mem.wavefronts.reshape(self.P, self.W)
                wf[:, warps_on:] = 0
                mem.shared_ideal_wavefronts = mem.wavefronts.copy()
        return self._emit(kind, Pipe.LSU, n_inst, deps, mem, label=label, line=line)

    def _scratch(self, nbytes):
        r = self._region()
        r.scratch = max(r.scratch, nbytes)

    # ---- layouts of values that have none: their consumers' (recorded by the probe) ---------------------
    def _lays(self, out, site) -> list:
        lay = out.lay
        if lay is not None and lay.shape == out.shape:
            return [lay]
        if site is not None:
            f = self.facts.sites.get(site)
            if f is not None and f.get("lays"):
                return list(f["lays"].values())
        return [default_layout(out.shape, self.W)]

    def view(self, out, x, kind, extra):
        """expand_dims / broadcast_to / reshape / permute / hints: no instructions; layouts pass through."""
        if x.aff is not None and x.shape:
            if kind == "expand":
                a = list(x.aff)
                a.insert(extra, True)
                out.aff = tuple(a)
            elif kind == "bcast" and len(out.shape) == len(x.shape):
                out.aff = tuple(True if x.shape[d] == 1 else x.aff[d] for d in range(len(x.shape)))
            elif kind == "perm":
                out.aff = tuple(x.aff[d] for d in extra)
            elif kind == "id":
                out.aff = x.aff
        elif not x.shape and out.shape:
            out.aff = (True,) * len(out.shape)
        if kind == "perm" and x.lay is not None and x.lay.shape == x.shape:
            out.lay = x.lay.permute(extra)
        if self.probe:
            out.bk = (kind, None, (x,), extra)

    def _anchor_input(self, x, lay: Layout, shape):
        """Probe: ``x`` is used by an op whose layout is ``lay`` (for its ``shape``)."""
        if not isinstance(x, C.tensor) or not x.shape or len(x.shape) != len(shape):
            return
        self._anchor(x, lay)

    def _anchor(self, x, lay: Layout):
        stack = [(x, lay)]
        seen = 0
        while stack and seen < 10000:
            seen += 1
            t, L = stack.pop()
            if t.lay is not None and t.lay.shape == t.shape:
                # t has a layout of its own; a load used in another layout may be rematerialized there
                if t.lsrc is not None and not t.lay.same_distribution(L) and t.lay.kind == "blocked" and \
                        L.kind != "blocked":
                    self.facts.get(t.lsrc).setdefault("consumer_lays", {})[L.key] = L
                continue
            bk = t.bk
            if bk is None:
                continue
            kind, site, ins, extra = bk
            if site is not None:
                lays = self.facts.get(site).setdefault("lays", {})
                if L.key in lays:
                    continue
                lays[L.key] = L
            for y in ins:
                if not isinstance(y, C.tensor) or not y.shape:
                    continue
                if kind == "expand":
                    if len(y.shape) + 1 != len(t.shape):
                        continue
                    Ly = L.slice(extra)
                elif kind == "perm":
                    inv = [0] * len(extra)
                    for i, dd in enumerate(extra):
                        inv[dd] = i
                    Ly = L.permute(tuple(inv))
                elif kind == "reshape":
                    continue
                else:
                    if len(y.shape) != len(t.shape):
                        continue
                    Ly = L
                stack.append((y, Ly))

    def _mark_feeds_dot(self, xs):
        """Probe: the loads whose values reach a dot operand (through elementwise math) are pipelined."""
        stack = [x for x in xs if isinstance(x, C.tensor)]
        seen = set()
        while stack:
            t = stack.pop()
            if id(t) in seen or len(seen) > 10000:
                continue
            seen.add(id(t))
            if t.lsrc is not None:
                fl = self.facts.get(t.lsrc)
                fl["feeds_dot"] = True
                if fl.get("loop") is not None and fl.get("pipelinable"):
                    self.facts.get(fl["loop"])["pipelined"] = True
            bk = t.bk
            if bk is not None:
                stack.extend(y for y in bk[2] if isinstance(y, C.tensor) and not y.dtype.is_ptr())

    # ---- uses (probe) ------------------------------------------------------------------------------
    def _note_use(self, xs, site):
        """Probe: ``site`` uses the values ``xs`` (for the folds that need all of a value's users)."""
        if self.probe:
            for x in xs:
                if isinstance(x, C.tensor) and x.bk is not None and x.bk[1] is not None:
                    self.facts.get(x.bk[1]).setdefault("users", set()).add(site if site is not None else "other")

    # ---- results -----------------------------------------------------------------------------------
    def _sink_loads(self) -> None:
        """Issue a global load just before its first use when a long stretch of independent arithmetic separates
        them (``costs.LOAD_SINK_MIN_SLOTS`` issue slots or more, in one straight-line stretch: no loop boundary,
        store, atomic, barrier or asynchronous copy between).  ptxas does this to keep the loaded registers free
        meanwhile: in the dropout tutorial's SASS the two LDG.E.128 sit after the ~350 instructions of Philox that
        the source puts after them, so the load's whole latency is exposed (the H100 shows 600-900 cycles of
        long-scoreboard stall per warp there)."""
        ops = self.ops
        index = {id(o): i for i, o in enumerate(ops)}
        first_use: dict = {}
        for j, o in enumerate(ops):
            for d in o.deps:
                i = index.get(id(d))
                if i is not None and i < j and i not in first_use:
                    first_use[i] = j
        fence = (OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC, OpKind.BARRIER, OpKind.ASYNC_COPY, OpKind.ASYNC_WAIT,
                 OpKind.MMA)      # (another load between: the two keep their order)
        move: dict = {}
        for i, o in enumerate(ops):
            j = first_use.get(i)
            if o.kind != OpKind.LOAD or o.mem is None or o.mem.space != Space.GLOBAL or j is None or j - i < 2:
                continue
            slots = 0
            for b in ops[i + 1:j]:
                if b.kind in fence or b.loop is not o.loop or b.it != o.it:
                    break
                slots += b.n_inst
            else:
                if slots >= K.LOAD_SINK_MIN_SLOTS:
                    move.setdefault(j, []).append(o)
        if not move:
            return
        moved = {id(o) for v in move.values() for o in v}
        new = []
        for j, o in enumerate(ops):
            if id(o) in moved:
                continue
            new.extend(move.get(j, ()))
            new.append(o)
        self.ops[:] = new

    def table(self, first_cta: int) -> OpTable:
        """The recorded ops as an OpTable over this chunk's CTAs (deps as op indices, earlier ops only)."""
        self._sink_loads()
        index = {id(o): i for i, o in enumerate(self.ops)}
        ops = []
        any_masked = False
        for i, o in enumerate(self.ops):
            deps = tuple(sorted({index[id(d)] for d in o.deps if id(d) in index and index[id(d)] < i}))
            ops.append(Op(kind=o.kind, pipe=o.pipe, n_inst=int(o.n_inst), line=int(o.line), deps=deps, mem=o.mem,
                          flops=max(0, int(o.flops)), mma_dtype=o.mma_dtype, label=o.label, sync=o.sync,
                          independent=o.indep, smem_bytes=int(o.smem)))
            if o.active is not None or o.lanes is not None:
                any_masked = True
        active = None
        if any_masked:
            active = np.full((len(ops), self.P * self.W), WARP, np.uint8)
            for i, o in enumerate(self.ops):
                if o.active is not None:
                    if o.active.dtype == np.uint8:          # lanes per warp already (an op of one thread)
                        active[i] = o.active
                    else:
                        active[i] = np.repeat(o.active, self.W).astype(np.uint8) * WARP
                if o.lanes is not None:
                    active[i] = np.minimum(active[i], np.tile(np.asarray(o.lanes, np.uint8), self.P))
        return OpTable(first_cta=first_cta, n_ctas=self.P, warps_per_cta=self.W, ops=ops, active=active)
