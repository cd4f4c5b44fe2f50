"""Spin locks, memory fences and atomic semantics (``kernels/tl_spinlock.py``): the trace keeps one acquiring
compare-and-swap per program, the engine serializes the holders, a GPU-scope fence holds the warp, and the
atomic round trips match the H100 records (``records/ncu_sync.json``)."""
from __future__ import annotations

import numpy as np
import pytest

from gpusim.api import simulate_launch
from gpusim.config import load_gpu
from gpusim.errors import UnsupportedConstruct
from gpusim.kernelfile import load_kernel_file, make_launch
from gpusim.trace import SYNC_ACQUIRE, SYNC_RELEASE, OpKind
from gpusim.triton import trace_launch
from gpusim.validate import records, suite

GPU = load_gpu("h100")
FILE = str(suite.KERNELS_DIR / "tl_spinlock.py")
MOD = load_kernel_file(FILE)


def _launch(**p):
    return make_launch(MOD, p, FILE)


def _cycles(**p) -> float:
    return float(simulate_launch(_launch(**p), GPU)[0].cycles)


def _trace(**p):
    lc = _launch(**p)
    return trace_launch(lc["kernel"], lc["grid"], lc["args"], lc.get("meta")), lc


def test_a_waiting_program_keeps_only_its_acquiring_attempt():
    """Programs that waited for the lock ran their loop several times functionally; their failed attempts are not in
    the trace (the engine times the wait), so each CTA has exactly one acquire and one release."""
    tr, lc = _trace(G=6)
    assert int(lc["buffers"]["count"][0]) == 6
    assert sorted(lc["buffers"]["order"].tolist()) == list(range(6))
    t = tr.tables[0]
    W = t.warps_per_cta
    for sync in (SYNC_ACQUIRE, SYNC_RELEASE):
        rows = [i for i, o in enumerate(t.ops) if o.sync == sync]
        per_cta = [sum(int(t.active[i, c * W] > 0) for i in rows) for c in range(t.n_ctas)]
        assert per_cta == [1] * 6, (sync, per_cta)
        # the lock word's exact address, on warp 0 of the CTAs that issue the op
        for i in rows:
            addr = t.ops[i].mem.addr.reshape(t.n_ctas, W)
            on = t.active[i].reshape(t.n_ctas, W)[:, 0] > 0
            assert (addr[:, 1:] == -1).all()
            assert len(set(addr[on, 0].tolist())) <= 1        # one lock word (an op nobody issues: none)


def test_holders_are_serialized():
    """G programs hand the lock on G - 1 times.  Each hand-off holds at least the holder's release fence and the
    next holder's compare-and-swap round trip; without the lock model the critical sections would overlap."""
    lat = GPU.sm.membar_gpu_cycles + GPU.l2.atomic_latency_cycles
    one, eight = _cycles(G=1), _cycles(G=8)
    assert 7 * lat <= eight - one <= 7 * 3 * lat


def test_fence_and_atomic_round_trip_match_the_chain_records():
    """atomic_chain: N dependent scalar atomics.  The slope per atomic is the round trip (relaxed) and the round
    trip plus MEMBAR.ALL.GPU and CCTL.IVALL (acq_rel); both within 3% of the H100's (Nsight cycles)."""
    for sem in ("relaxed", "acq_rel"):
        sim = [_cycles(kind="chain", N=n, sem=sem) for n in (64, 512)]
        hw = [records.measured(f"atomic_chain_{sem}_N{n}")["cycles"] for n in (64, 512)]
        slope_sim, slope_hw = (sim[1] - sim[0]) / 448, (hw[1] - hw[0]) / 448
        assert slope_sim == pytest.approx(slope_hw, rel=0.03), sem
        assert sim[1] == pytest.approx(hw[1], rel=0.03), sem
    # the difference between the two is the fence the preset calibrates
    d = (_cycles(kind="chain", N=512, sem="acq_rel") - _cycles(kind="chain", N=512, sem="relaxed")) / 511
    assert d == pytest.approx(GPU.sm.membar_gpu_cycles, rel=0.05)


def test_semantics_decide_the_fences():
    """As Triton 3.6 compiles for sm_90: acq_rel and release put MEMBAR.ALL.GPU before the atomic, acq_rel and
    acquire CCTL.IVALL after it; relaxed has neither.  An unknown sem is an error."""
    def labels(sem):
        tr, _ = _trace(kind="chain", N=3, sem=sem)
        return [o.label for o in tr.tables[0].ops]

    for sem, fence, cctl in (("relaxed", 0, 0), ("acquire", 0, 3), ("release", 3, 0), ("acq_rel", 3, 3)):
        lab = labels(sem)
        assert sum(x.startswith("MEMBAR.ALL.GPU") for x in lab) == fence, sem
        assert sum(x == "CCTL.IVALL" for x in lab) == cctl, sem
    with pytest.raises(UnsupportedConstruct, match="sem='seq_cst'"):
        _trace(kind="chain", N=3, sem="seq_cst")


def test_a_fence_holds_the_warp():
    """A warp stops at a GPU-scope MEMBAR for sm.membar_gpu_cycles (stall reason ``membar``; one warp)."""
    r = simulate_launch(_launch(kind="chain", N=64, sem="acq_rel", num_warps=1), GPU)[0]
    per_warp = r["stall_membar"]
    assert per_warp == pytest.approx(64 * GPU.sm.membar_gpu_cycles, rel=0.02)
    r2 = simulate_launch(_launch(kind="chain", N=64, sem="relaxed", num_warps=1), GPU)[0]
    assert r2["stall_membar"] == 0


def test_atomics_queue_at_their_slice():
    """Atomics arriving together at one L2 slice are performed one after another, each holding the slice for its
    sector (``l2.atomic_sector_cycles``) and ``l2.atomic_request_cycles`` (the read-modify-write): their results
    come back that far apart; a request over four sectors holds it for four sectors (a histogram's scattered adds)."""
    from gpusim.timing.engine import Engine
    tr, _ = _trace(kind="chain", N=2, sem="relaxed")
    mem = Engine(tr, GPU).mem
    assert GPU.l2.atomic_sector_cycles > 0
    mem.l2_atomic(0, 0.0, 4242, 0xF, 1)                   # the line comes into the L2
    done = [mem.l2_atomic(0, 10_000.0, 4242, 1, 1) for _ in range(10)]
    step = GPU.l2.atomic_request_cycles + GPU.l2.atomic_sector_cycles
    assert np.diff(done) == pytest.approx([step] * 9)
    assert done[0] >= 10_000 + GPU.l2.atomic_latency_cycles
    wide = [mem.l2_atomic(0, 20_000.0, 4242, 0xF, 8) for _ in range(4)]
    assert np.diff(wide) == pytest.approx([GPU.l2.atomic_request_cycles + 4 * GPU.l2.atomic_sector_cycles] * 3)


def test_neighbouring_lines_share_a_slice_and_their_atomics_queue_there():
    """l2.slice_granule_lines = 2 (records/h200/l2_slice_interleave.json: hot-spot adds on two lines one apart take
    2.3x the time of lines two or more apart): lines 2k and 2k+1 hash to one slice, two sets of it; their atomics
    arriving together queue at that slice, while a line of another slice is served at once."""
    from gpusim.timing.engine import Engine
    assert GPU.l2.slice_granule_lines == 2
    tr, _ = _trace(kind="chain", N=2, sem="relaxed")
    mem = Engine(tr, GPU).mem
    base = 1 << 20
    for k in range(0, 2000, 2):
        assert mem.slice_of(base + k) == mem.slice_of(base + k + 1)
        assert mem.set_of(base + k) != mem.set_of(base + k + 1)
    other = next(x for x in range(base + 2, base + 200) if mem.slice_of(x) != mem.slice_of(base))
    for line in (base, base + 1, other):
        mem.l2_atomic(0, 0.0, line, 1, 1)                 # the lines come into the L2
    a = mem.l2_atomic(0, 10_000.0, base, 1, 1)
    b = mem.l2_atomic(0, 10_000.0, base + 1, 1, 1)
    c = mem.l2_atomic(0, 10_000.0, other, 1, 1)
    step = GPU.l2.atomic_request_cycles + GPU.l2.atomic_sector_cycles
    assert b - a == pytest.approx(step) and c == pytest.approx(a)
