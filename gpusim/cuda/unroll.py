"""LLVM's runtime loop unrolling, as a post-pass over a chunk's recorded ops (and its register pressure).

numba-cuda's compiler unrolls innermost loops with a runtime trip count by ``costs.LOOP_UNROLL_FACTOR`` and ptxas
then schedules each unrolled group's loads ahead of their uses.  The SIMT machine executes loops iteration by
iteration, recording a ``LoopRecord`` per loop execution (``control.py``); when the chunk's trace table is built,
``unroll_loops`` rewrites the recorded ops the way the unrolled code issues them and ``unroll_pressure`` gives
the registers the hoisted loads need.  Units: ops (indices into the chunk's op list), 32-bit registers.
"""
from __future__ import annotations

from ..trace import OpKind, Pipe, Space
from . import costs as C_


class LoopRecord:
    """The ops one execution of a loop recorded, for the unrolling post-pass (``unroll_loops``).

    ``iters``: per iteration ``[first op, end op, control op indices]`` (control = the trip test and back-edge
    branch, which unrolling removes from all but one iteration of a group); ``setup``: ops that exist only if the
    loop is unrolled (remainder computation); ``eligible``: the loop is innermost, has a runtime trip count and
    no barrier, warp-level collective, break, continue or return in its body; ``epilog``: the remainder
    iterations come after the groups (else before them)."""

    __slots__ = ("kind", "used", "eligible", "iters", "setup", "final", "words", "epilog")

    def __init__(self, kind: str, used: bool, eligible: bool):
        self.kind = kind
        self.epilog = True
        self.used = used
        self.eligible = eligible
        self.iters: list = []
        self.setup: list = []
        self.final: list = []


def unroll_pressure(ops: list, loops: list, factor: int | None = None) -> int:
    """Registers an unrolled loop body needs beyond one iteration's: the results of the loads of the other
    ``factor - 1`` iterations, issued ahead of their uses (32-bit words; the most over the eligible loops).  The
    code is compiled unrolled whatever the trip count, so one recorded iteration decides."""
    U = C_.LOOP_UNROLL_FACTOR if factor is None else factor
    best = 0
    for rec in loops:
        if not rec.eligible or not rec.iters or rec.iters[0][1] is None:
            continue
        a, b, _ = rec.iters[0]
        words = sum(-(-ops[i].mem.bytes_per_lane // 4) for i in range(a, b)
                    if ops[i].kind == OpKind.LOAD and ops[i].mem is not None)
        best = max(best, (U - 1) * words)
    return best


def _disjoint(store, load) -> bool:
    """A store and a load in different memory spaces (shared vs global/local) cannot alias."""
    sm, lm = store.mem, load.mem
    return sm is not None and lm is not None and (sm.space == Space.SHARED) != (lm.space == Space.SHARED)


# ---- runtime loop unrolling, as LLVM compiles it -------------------------------------------------------------

def unroll_loops(ops: list, op_rows: list, loops: list, factor: int | None = None,
                 straight: list | None = None) -> tuple[list, list]:
    """Rewrite the ops of innermost runtime loops the way LLVM's runtime unrolling compiles them.

    Per loop execution (``LoopRecord``) that is eligible, consecutive iterations are grouped by ``factor``
    (``costs.LOOP_UNROLL_FACTOR``); ``trip % factor`` iterations stay single (the remainder loop): the last ones
(an epilogue), or the first where the loop value starts at a runtime value (a prologue, ``LoopRecord.epilog``
False; lanes of a warp that split differently run as ``control.SlotPlan`` says).
    In a group, the trip test and back-edge branch of all but one iteration disappear (a ``range`` loop keeps
    the last iteration's branch, and its counter test only when the body reads the loop variable; a ``while``
    loop keeps its first test).  Then, as ptxas schedules the unrolled body, every load of the group moves up as
    far as it may -- never above an op it depends on (deps are transitive through ALU ops: a pointer chase's
    address depends on the previous load), a store to the same kind of memory (a global load may pass a shared
    store: different address spaces cannot alias), an atomic or barrier, a branch of an inner ``if``, or an
    earlier load (loads keep their order) -- so a warp has up to ``factor`` loads in flight.  Ineligible loops
    lose their unroll set-up ops (and a ``range`` loop its separate trip counter).  Scoreboard deps are remapped
    to the new positions (a dep on a removed op becomes that op's own deps).  Runs at table-build time, when no
    runtime value holds op indices any more.

    ``straight``: op spans of fully unrolled constant-trip loops (straight-line code after LLVM's full unroll);
    their loads are hoisted the same way, but at most ``costs.HOIST_WINDOW`` ops above their place (ptxas
    stops where registers run out), and only where no runtime-loop group already covers the span.
    """
    U = C_.LOOP_UNROLL_FACTOR if factor is None else factor
    n = len(ops)
    drop = bytearray(n)
    regions = []
    for rec in loops:
        if not rec.eligible or U <= 1:
            for i in rec.setup:
                drop[i] = 1
            if rec.kind == "range":           # not unrolled: the iterator's compare decides, no counter
                for it in rec.iters:
                    for i in it[2][:-1]:
                        drop[i] = 1
            continue
        iters = [it for it in rec.iters if it[1] is not None]
        rem = 0 if rec.epilog else len(iters) % U       # a prologue remainder runs first
        for g in range(len(iters) // U):
            grp = iters[rem + g * U:rem + (g + 1) * U]
            for j, (_, _, ctl) in enumerate(grp):
                if rec.kind == "range":
                    gone = ctl if j < U - 1 else (ctl[:-1] if not rec.used else [])
                else:
                    gone = ctl if j > 0 else []
                for i in gone:
                    drop[i] = 1
            regions.append((grp[0][0], grp[-1][1]))
    windows = {r: None for r in regions}
    for a, b in sorted(straight or []):
        if all(b <= ra or a >= rb for ra, rb in windows) and b - a > 1:
            windows[(a, b)] = C_.HOIST_WINDOW
    regions = list(windows)
    if not regions and not any(drop):
        return ops, op_rows
    # deps of removed ops, resolved to kept ones
    resolved: dict[int, tuple] = {}

    def res(deps):
        out = set()
        for d in deps:
            if drop[d]:
                out.update(resolved[d])
            else:
                out.add(d)
        return out

    for i in range(n):
        if drop[i]:
            resolved[i] = tuple(res(ops[i].deps))
    blocking = (OpKind.LOAD, OpKind.STORE, OpKind.ATOMIC, OpKind.BARRIER, OpKind.MMA, OpKind.ASYNC_COPY,
                OpKind.ASYNC_WAIT, OpKind.GRID_SYNC)
    order = []
    pos = 0
    for a, b in sorted(regions):
        win = windows[(a, b)]
        order.extend(i for i in range(pos, a) if not drop[i])
        out: list = []
        for i in range(a, b):
            if drop[i]:
                continue
            op = ops[i]
            if op.kind != OpKind.LOAD:
                out.append(i)
                continue
            need = res(op.deps)
            k = len(out)
            floor = 0 if win is None else max(0, k - win)
            while k > floor:
                prev = ops[out[k - 1]]
                if out[k - 1] in need or prev.pipe == Pipe.BRANCH:
                    break
                if prev.kind in blocking and not (prev.kind == OpKind.STORE and _disjoint(prev, op)):
                    break
                k -= 1
            out.insert(k, i)
        order.extend(out)
        pos = b
    order.extend(i for i in range(pos, n) if not drop[i])
    new_index = {old: k for k, old in enumerate(order)}
    new_ops = []
    for k, old in enumerate(order):
        op = ops[old]
        if op.deps:
            nd = tuple(sorted(new_index[d] for d in res(op.deps)))
            op.deps = nd
        new_ops.append(op)
    return new_ops, [op_rows[i] for i in order]
