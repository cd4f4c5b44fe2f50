"""A warp's back-to-back stores over the same sectors reach the L2 as one write (the L1 merges them), for 4- and
8-byte lanes alike; checked analytically on the memory system and against the H100 records of kernels that write
a record's fields one 8-byte store at a time (records/ncu_rmw.json, nb_montecarlo in records/ncu_families.json)."""
import numpy as np
import pytest

from gpusim.api import launch_steps, time_trace, trace_kernel
from gpusim.config import load_gpu
from gpusim.timing.chip import build_wiring
from gpusim.timing.memory import MemorySystem
from gpusim.validate import records
from gpusim.validate.suite import case_by_name, load_case

H100 = load_gpu("h100")
#: lts__t_sectors_op_write counts a write to the far partition twice: 1.5x the sectors on a uniform stream
#: (the fp32 streams of records/ncu_rmw.json: 792K for 524K L1 store sectors)
LTS_FAR_FACTOR = 1.5


def _mem():
    w = build_wiring(H100)
    return MemorySystem(H100, 256 * 1024, w.latency, w.sm_partition, w.slice_partition)


def test_a_store_over_the_sectors_of_the_warps_store_before_it_adds_no_l2_write():
    m = _mem()
    lines = list(range(5000, 5004))
    half = [0b1111] * 4                       # bytes 0-7 of each 16: every sector of the 4 lines, partly
    _, wrote = m.store(0, 0.0, lines, half)
    assert m.stats.l2_wr_sectors == 16 and m.stats.l1_st_sectors == 16
    _, wrote2 = m.store(0, 5.0, lines, half, prev=wrote)      # the other 8 bytes: the same sectors
    assert m.stats.l2_wr_sectors == 16 and m.stats.l1_st_sectors == 32
    m.store(0, 9.0, lines, [0b1111] * 4)                       # not passed the store before: a write of its own
    assert m.stats.l2_wr_sectors == 32
    # a partial overlap sends the new sectors only
    m.store(0, 12.0, [6000], [0b0011])
    _, w = m.store(0, 13.0, [6000], [0b0011])
    m.store(0, 14.0, [6000], [0b0111], prev=w)
    assert m.stats.l2_wr_sectors == 32 + 2 + 2 + 1


def _simulate(case: str):
    c = case_by_name(case)
    st = launch_steps(load_case(c))[-1]
    tr = trace_kernel(st["kernel"], st["grid"], st["block"], *st["args"], gpu=H100,
                      shared_bytes=st.get("shared_bytes", 0))
    return time_trace(tr, H100, progress=False, exact=True)


@pytest.mark.parametrize("case", ["rmw_rec_inplace_n1048576", "nb_montecarlo_n1000000"])
def test_record_fields_written_8_bytes_at_a_time_merge_as_on_the_h100(case):
    """Two STG.E.64 per thread over the same 16 sectors of a warp: the L2 sees each sector once (the records:
    lts__t_sectors_op_write / 1.5 within 3% of the simulated L2 write sectors), and the kernel runs at the rate of
    the L2's write side that the merged writes and the DRAM fills share (cycles within 10% of the record)."""
    rep = _simulate(case)
    rows = records.kernel_metrics(case)
    lts_w = sum(r["lts__t_sectors_op_write.sum"] for r in rows) / LTS_FAR_FACTOR
    l1_st = sum(r["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] for r in rows)
    mem = rep.engine.memory
    assert mem["l1_st_sectors"] == pytest.approx(l1_st, rel=1e-3)
    assert mem["l2_wr_sectors"] == pytest.approx(lts_w, rel=0.03)
    assert mem["l2_wr_sectors"] < 0.6 * mem["l1_st_sectors"]
    measured = records.measured(case)["cycles"]
    assert rep.cycles == pytest.approx(measured, rel=0.10), (rep.cycles, measured)


def test_a_copy_that_misses_the_l2_lands_later_than_a_load():
    """``l1.copy_dram_extra_cycles``: an asynchronous copy into shared memory (cp.async / LDGSTS, which bypasses the
    L1) whose lines miss the L2 completes that many cycles after an L1-bypassing load of the same lines would (two
    memory systems in the same state); once the lines are in the L2 the two complete together."""
    extra = H100.l1.copy_dram_extra_cycles
    assert extra == 300
    lines = list(range(90_000, 90_004))
    a, b = _mem(), _mem()
    sl = a.sets_of(np.array(lines, np.int64)).tolist()
    t_load = a.load(0, 0.0, lines, [0b1111] * 4, False, sl)
    t_copy = b.load(0, 0.0, lines, [0b1111] * 4, False, sl, copy=True)
    assert t_copy - t_load == pytest.approx(extra)
    t0 = 100_000.0                                     # the L2 holds them now: a hit, no extra
    assert b.load(0, t0, lines, [0b1111] * 4, False, sl, copy=True) == pytest.approx(
        a.load(0, t0, lines, [0b1111] * 4, False, sl))
