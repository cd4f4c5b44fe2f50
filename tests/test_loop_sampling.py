"""Loop sampling (gpusim.timing.loops): the periodic run of ops found exactly, the truncated trace well formed, and
the extrapolated replay against the exact one on traces where the answer is known."""
from __future__ import annotations

import os

import numpy as np
import pytest

from gpusim.api import time_trace
from gpusim.config import load_gpu
from gpusim.timing import loops, sampling
from gpusim.trace import KernelTrace, Op, OpKind, OpTable, Pipe, coalesce_global

from synthetic import GB

GPU = load_gpu("h100")


def loop_trace(n_ctas: int, repeats: int, *, prologue: int = 5, body_alu: int = 3, masked_iter: int | None = None,
               block: int = 128, load: bool = True) -> KernelTrace:
    """Prologue ALU ops, then ``repeats`` copies of [LDG (warp-private lines), FFMA chain carried over the loop,
    loop counter], then an epilogue that uses the last FFMA.  ``masked_iter``: in that repeat the FFMA runs with 16
    active lanes (a data-dependent mask: the period breaks there)."""
    wpc = block // 32
    nw = n_ctas * wpc
    ops: list[Op] = [Op(OpKind.ALU, Pipe.INT, 2, 1, label="IMAD") for _ in range(prologue)]
    act_rows = [np.full(nw, 32, np.uint8) for _ in range(prologue)]
    last_fma = prologue - 1
    for r in range(repeats):
        if load:
            addr = GB + (np.arange(nw)[:, None] * repeats + r) * 128 + np.arange(32)[None, :] * 4
            ops.append(Op(OpKind.LOAD, Pipe.LSU, 1, 10, mem=coalesce_global(addr, 4), label="LDG"))
            act_rows.append(np.full(nw, 32, np.uint8))
            ld = len(ops) - 1
            deps = (last_fma, ld)
        else:
            deps = (last_fma,)
        for k in range(body_alu):
            ops.append(Op(OpKind.ALU, Pipe.FP32, 1, 11, deps=deps if k == 0 else (len(ops) - 1,), label="FFMA"))
            act_rows.append(np.full(nw, 16 if r == masked_iter else 32, np.uint8))
        last_fma = len(ops) - 1
        ops.append(Op(OpKind.ALU, Pipe.INT, 1, 12, deps=(0,), label="IADD3"))   # depends on the prologue
        act_rows.append(np.full(nw, 32, np.uint8))
    ops.append(Op(OpKind.ALU, Pipe.FP32, 2, 13, deps=(last_fma,), label="FMUL"))
    act_rows.append(np.full(nw, 32, np.uint8))
    addr = 2 * GB + np.arange(nw * 32).reshape(nw, 32) * 4
    ops.append(Op(OpKind.STORE, Pipe.LSU, 1, 14, deps=(len(ops) - 1,), mem=coalesce_global(addr, 4), label="STG"))
    act_rows.append(np.full(nw, 32, np.uint8))
    return KernelTrace("loop", "cuda", (n_ctas, 1, 1), (block, 1, 1), 32, 0,
                       [OpTable(0, n_ctas, wpc, ops, np.stack(act_rows))])


def test_find_loop_finds_the_body_and_its_repeats():
    tr = loop_trace(4, 60, prologue=5, body_alu=3)
    lp = loops.find_loop(tr.tables[0])
    assert lp is not None
    assert lp.period == 5                    # LDG + 3 FFMA + IADD3
    # the first repeat's FFMA depends on the prologue, the others on the previous repeat: the periodic run (any
    # rotation of the body) starts in the first two repeats and ends in the last
    assert 5 <= lp.start <= 10 and 5 + 59 * 5 <= lp.end <= 5 + 60 * 5 and lp.repeats >= 58
    assert loops.find_loops(tr) == [lp]


def test_a_mask_that_changes_inside_the_loop_breaks_the_period():
    tr = loop_trace(4, 60, masked_iter=30)
    lp = loops.find_loop(tr.tables[0])
    # the periodic run is at most the longer side of the masked repeat (29 repeats): never across it
    assert lp is None or lp.end <= 5 + 30 * 5 or lp.start >= 5 + 31 * 5


def test_short_loops_are_not_sampled():
    tr = loop_trace(4, loops.LOOP_MIN_REPEATS - 1)
    assert loops.find_loop(tr.tables[0]) is None


def test_truncate_keeps_prologue_first_repeats_and_epilogue_with_moved_dependences():
    R, j = 60, 8
    tr = loop_trace(4, R)
    t = tr.tables[0]
    lp = loops.find_loop(t)
    short = loops.truncate(tr, [lp], j)
    st = short.tables[0]
    n_epi = len(t.ops) - lp.end
    assert len(st.ops) == lp.start + j * lp.period + n_epi
    assert st.active.shape == (len(st.ops), t.active.shape[1])
    short.check()
    # the epilogue's FMUL depended on the last repeat's last FFMA: now on the last kept repeat's
    fmul = st.ops[-2]
    assert fmul.label == "FMUL"
    last_ffma = max(i for i, op in enumerate(st.ops[:-2]) if op.label == "FFMA")
    assert fmul.deps == (last_ffma,)
    # and that FFMA's chain runs back through every kept repeat to the prologue: 1 + 3 x (j + 1) FFMAs at most
    chain, i = 0, last_ffma
    while st.ops[i].label == "FFMA":
        chain += 1
        i = st.ops[i].deps[0]
    assert 3 * j <= chain <= 3 * (j + 1)
    # the original is untouched
    assert t.ops[-2].deps == (5 + 60 * 5 - 2,)


@pytest.mark.parametrize("load", [False, True])
def test_extrapolated_replay_matches_the_exact_one(monkeypatch, load):
    """A grid of one wave whose CTAs run a 200-repeat loop: the loop-sampled cycles within 2% of the exact replay (the bar of sampling),
    instructions issued exactly, and the memory counters linear in the trip count exactly."""
    tr = loop_trace(132, 200, load=load)
    monkeypatch.setattr(loops, "LOOP_MIN_WORK", 0)
    rep = time_trace(tr, GPU, progress=False)
    assert "loop" in rep.context["sampling"], rep.context["sampling"]
    assert rep.context["sampling"]["loop"]["repeats"] >= 199
    assert rep.context["sampling"]["line"].startswith("loop sampled")
    ex = time_trace(tr, GPU, progress=False, exact=True)
    assert "loop" not in ex.context["sampling"]
    assert abs(rep.cycles - ex.cycles) <= 0.02 * ex.cycles, (rep.cycles, ex.cycles)      # issue 16: within 2%
    assert rep["inst_issued_engine"] == ex["inst_issued_engine"]
    if load:
        assert rep["dram_bytes_read"] == ex["dram_bytes_read"]


def test_small_replays_are_not_loop_sampled():
    tr = loop_trace(8, 200)
    assert loops.replay_work(tr, 1.0) < loops.LOOP_MIN_WORK
    rep = time_trace(tr, GPU, progress=False)
    assert "loop" not in rep.context["sampling"]


def test_extrapolate_is_linear():
    assert loops.extrapolate(10.0, 18.0, 4, 8, 100) == pytest.approx(18.0 + 92 * 2.0)
    assert sampling._WAVES_REPLAYED > 0


def test_the_two_truncated_replays_run_on_two_cores_with_the_same_result(monkeypatch):
    """The J1 replay runs in a forked child on a host with two cores (``forked.both``): the report is identical
    to the one replayed serially (GPUSIM_NO_FORK)."""
    from gpusim.timing import forked
    tr = loop_trace(132, 200, load=True)
    monkeypatch.setattr(loops, "LOOP_MIN_WORK", 0)
    calls = []
    real_both = forked.both

    def spy(a, b):
        calls.append(forked.can_fork())
        return real_both(a, b)
    monkeypatch.setattr(forked, "both", spy)
    par = time_trace(tr, GPU, progress=False)
    monkeypatch.setenv("GPUSIM_NO_FORK", "1")
    ser = time_trace(tr, GPU, progress=False)
    assert calls == [(os.cpu_count() or 1) >= 2, False]
    assert par.cycles == ser.cycles and par.context["sampling"] == ser.context["sampling"]
    for k in ("dram_bytes_read", "dram_bytes_write", "inst_issued_engine", "l2_hit_rate_pct"):
        assert par[k] == ser[k]


def test_a_failed_child_is_replaced_by_its_replay_in_the_parent():
    from gpusim.timing import forked
    parent = os.getpid()

    def first():
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return "recomputed here"
    assert forked.both(first, lambda: 7) == ("recomputed here", 7)
    assert forked.both(lambda: [1, 2], lambda: "b") == ([1, 2], "b")
