"""``Report.explain()`` / ``gpusim explain``: the causes of lost cycles, each quantified by replaying the recorded
trace on an idealized chip (gpusim/timing/counterfactual.py).

The checks hold the idealized replays against kernels that do not have the cause: bank conflicts removed from the
stride-32 shared reads against the padded stride-33 kernel, perfect coalescing of stride-32 reads against stride 1,
unlimited occupancy of a shared-memory-limited copy against the same copy without the reservation, no divergence
against the warp-uniform branch.  Sizes are small: grids of whole waves (so that the partial-last-wave replay, which
would add CTAs, does not apply) or few CTAs.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from gpusim.api import simulate_launch
from gpusim.cli import main
from gpusim.kernelfile import load_kernel_file
from gpusim.errors import GpusimError
from gpusim.metrics import Report
from gpusim.timing.counterfactual import (IDEAL_KEYS, compaction, divergent_fraction, perfectly_coalesced, replay,
                                          tail_by_rounding, wave_rounded, without_bank_conflicts)
from gpusim.timing.engine import Engine
from gpusim.trace import WARP, KernelTrace, Op, OpKind, OpTable, Pipe, coalesce_global

KERNELS = "kernels/"


def _reports(name: str, **params) -> list[Report]:
    mod = load_kernel_file(KERNELS + name)
    return simulate_launch(mod.launch(**params), "h100")


def _one(name: str, **params) -> Report:
    (rep,) = _reports(name, **params)
    return rep


def _numbers(expl) -> list[tuple]:
    return [(r["key"], r["applicable"], r["cycles_without"], r["saving_cycles"], r["saving_pct"], r["rank"], r["how"])
            for r in expl.records] + [(expl.limiter, expl.limiter_why)]


# ---- the bar: bank conflicts, coalescing, occupancy, compute -----------------------------------------------------

SMALL_PARAMS = dict(dyn_shared_bytes=204800, block=64, blocks=132, n=16384)   # 1 CTA per SM: one whole wave

BANK = dict(reps=8, blocks=264, block=1024)          # 2 CTAs of 32 warps per SM: one whole wave


@pytest.fixture(scope="module")
def bank32():
    rep = _one("bank_conflicts.py", stride=32, **BANK)
    return rep, rep.explain()


def test_bank_conflicts_rank_first_and_the_ideal_matches_the_padded_kernel(bank32):
    rep, e = bank32
    top = e.ranked()[0]
    assert top["key"] == "bank_conflicts" and top["rank"] == 1
    assert top["saving_pct"] == max(r["saving_pct"] for r in e.records)
    padded = _one("bank_conflicts.py", stride=33, **BANK)
    assert top["cycles_without"] == pytest.approx(padded.cycles, rel=0.10)
    assert e.limiter == "compute"
    # every 4-byte load of stride 32 hits one bank: 32 wavefronts per warp and rep -> 1
    warps = BANK["blocks"] * BANK["block"] // WARP
    _, before, after = without_bank_conflicts(rep.trace)
    assert (before, after) == (warps * BANK["reps"] * 32, warps * BANK["reps"])


STRIDED = dict(n=1056 * 256)                         # 1056 CTAs of 256 threads: one whole wave


@pytest.fixture(scope="module")
def strided32():
    rep = _one("strided_read.py", stride=32, **STRIDED)
    return rep, rep.explain()


def test_uncoalesced_reads_rank_coalescing_first(strided32):
    rep, e = strided32
    assert e.ranked("kernel")[0]["key"] == "coalescing"
    assert e.record("coalescing")["saving_pct"] > 30
    # each lane's 4 B in its own sector (32 per warp) -> the 4 sectors 32 x 4 B need
    n = STRIDED["n"]
    _, before, after = perfectly_coalesced(rep.trace)
    assert (before, after) == (n, n // 8)
    unit = _one("strided_read.py", stride=1, **STRIDED)
    assert e.record("coalescing")["cycles_without"] == pytest.approx(unit.cycles, rel=0.10)
    assert perfectly_coalesced(unit.trace) is None                  # already minimal: not applicable
    assert e.limiter == "DRAM bandwidth"


def test_coalescing_realigns_misaligned_requests_and_relays_scattered_ones():
    lane = np.arange(WARP, dtype=np.int64)
    addr = np.stack([1 << 20 | 16 + 4 * lane,         # misaligned by 16 B: 5 sectors for 4 -> its own lines
                     2 << 20 | 128 * lane,              # one lane per line: 32 sectors -> 4 on a fresh line
                     2 << 20 | 128 * lane,              # the same data again: the same fresh line
                     3 << 20 | 4 * lane])               # coalesced: untouched
    m = coalesce_global(addr, 4)
    op = Op(OpKind.LOAD, Pipe.LSU, 1, line=1, mem=m)
    t = OpTable(first_cta=0, n_ctas=1, warps_per_cta=4, ops=[op])
    tr = KernelTrace(name="k", frontend="cuda", grid=(1, 1, 1), block=(128, 1, 1), regs_per_thread=32,
                     shared_bytes_per_cta=0, tables=[t])
    new, before, after = perfectly_coalesced(tr)
    assert (before, after) == (5 + 32 + 32 + 4, 4 * 4)
    n = new.tables[0].ops[0].mem
    per_warp = [(n.line[a:b].tolist(), n.smask[a:b].tolist()) for a, b in zip(n.ptr[:-1], n.ptr[1:])]
    assert per_warp[0] == ([(1 << 20) // 128], [0b1111])                   # its first line, all 4 sectors
    assert per_warp[1] == per_warp[2] and per_warp[1][1] == [0b1111]
    assert per_warp[1][0][0] > int(m.line.max())                          # a fresh line past the kernel's data
    assert per_warp[3] == ([(3 << 20) // 128], [0b1111])


def test_explain_is_deterministic():
    rep = _one("grid_stride_copy.py", **{**SMALL_PARAMS, "blocks": 140})
    first = rep.explain()
    again = rep.explain()
    assert again is not first and rep.explanation is again
    assert _numbers(again) == _numbers(first)
    replayed = {r["key"] for r in first.records if r["applicable"]}
    assert replayed >= {"occupancy", "tail_wave", "dram_bandwidth", "memory_latency"}


COPY = dict(dyn_shared_bytes=48 * 1024, block=64, blocks=4224, n=1 << 19)   # 4 CTAs of 2 warps per SM: 12.5 %


def test_shared_memory_limited_copy_ranks_occupancy_first():
    rep = _one("grid_stride_copy.py", **COPY)
    assert rep["occupancy_theoretical_pct"] == pytest.approx(12.5)
    e = rep.explain()
    top = e.ranked("kernel")[0]
    assert top["key"] == "occupancy" and top["saving_pct"] > 30
    assert "4 -> 32" in top["how"]
    assert e.limiter == "occupancy"
    # the ideal is the same copy at full occupancy: the one without the reservation
    free = _one("grid_stride_copy.py", **{**COPY, "dyn_shared_bytes": 0})
    assert free["occupancy_theoretical_pct"] == pytest.approx(100.0)
    assert top["cycles_without"] == pytest.approx(free.cycles, rel=0.10)


def test_tensor_core_matmul_is_compute_bound():
    rep = _one("tl_matmul.py", M=1024, N=4224, K=256)      # 264 tiles of 128 x 128: one whole wave
    e = rep.explain()
    assert e.limiter == "compute"
    # the SM's own units are busiest: the tensor cores and the shared-memory data stage that feeds them (per K step
    # of 64: 48 KB of wgmma operands and 32 KB of copies into shared memory at 128 B/clk, 640 clocks, against 512
    # of tensor work), no memory or occupancy idealization saves 10%
    busy = sorted(e.units_busy_pct, key=e.units_busy_pct.get, reverse=True)
    assert busy[:2] == ["L1/shared data stage", "tensor cores"]
    assert e.units_busy_pct["L1/shared data stage"] >= 1.25 * e.units_busy_pct["tensor cores"]
    assert all(r["saving_pct"] < 10 for r in e.records)


def test_a_kernel_with_nothing_saturated_is_latency_bound_not_compute_bound():
    """A 4-wave vector add of 2^20 elements: no idealization saves 10% and no SM unit is half busy, so its time is
    the launch, the dispatch and the warps' load-to-store chains -- latency, not compute."""
    e = _one("vector_add.py", n=1 << 20).explain()
    assert all(r["saving_pct"] < 10 for r in e.records)
    assert max(e.units_busy_pct.values()) < 50
    assert e.limiter == "latency" and "no SM unit is half busy" in e.limiter_why


# ---- the other idealizations --------------------------------------------------------------------------------------

def test_no_divergence_approaches_the_warp_uniform_kernel():
    div = _one("divergence.py", group=8, n=8192, iters=64)
    uni = _one("divergence.py", group=32, n=8192, iters=64)
    part, total, saved = divergent_fraction(div.trace)
    assert part / total > 0.5 and 0 < saved < part
    assert divergent_fraction(uni.trace)[0] == 0                   # the bounds check never splits a warp
    cf = replay("divergence", div.trace, div.config)
    assert cf.applicable and cf.cycles < 0.9 * div.cycles
    assert cf.cycles == pytest.approx(uni.cycles, rel=0.05)
    assert not replay("divergence", uni.trace, uni.config).applicable


def test_compaction_merges_partial_warps_of_a_cta():
    # one CTA of 8 warps (256 threads), five ALU ops of 2 instructions with these active lanes per warp:
    rows = [[32] * 8,                       # converged
            [16] * 8,                       # one side of a 50/50 branch: 128 threads -> 4 warps, each keeps 1/2
            [1] * 8,                        # one thread per warp: 8 threads -> 1 warp, each keeps 1/8
            [1] + [0] * 7,                  # if tid == 0: one partial warp, nothing to merge
            [32] * 7 + [5]]                 # a bounds check's last warp: nothing to merge
    ops = [Op(OpKind.ALU, Pipe.FP32, 2, line=1) for _ in rows]
    t = OpTable(first_cta=0, n_ctas=1, warps_per_cta=8, ops=ops, active=np.array(rows, np.uint8))
    tr = KernelTrace(name="k", frontend="cuda", grid=(1, 1, 1), block=(256, 1, 1), regs_per_thread=32,
                     shared_bytes_per_cta=0, tables=[t])
    keep = compaction(tr, t)
    assert keep[:, 0].tolist() == [1.0, 0.5, 0.125, 1.0, 1.0]
    assert keep[4].tolist() == [1.0] * 8
    part, total, saved = divergent_fraction(tr)
    assert (part, total) == (2 * (8 + 8 + 1 + 1), 2 * (8 + 8 + 8 + 1 + 8))
    assert saved == pytest.approx(2 * (8 * 0.5 + 8 * 0.875))
    assert not replay("divergence", dataclasses.replace(tr, tables=[dataclasses.replace(
        t, active=np.array(rows[3:], np.uint8), ops=ops[3:])])).applicable


def test_wave_rounding_adds_fresh_copies_of_the_first_ctas():
    rep = _one("strided_read.py", stride=1, n=40 * 256)             # 40 CTAs
    tr = wave_rounded(rep.trace, 64)
    tr.check()
    assert tr.n_ctas == 64 and len(tr.tables) > len(rep.trace.tables)
    lines = lambda t: np.concatenate([op.mem.line for x in t.tables for op in x.ops if op.mem is not None
                                      and op.mem.line is not None])
    orig, added = lines(rep.trace), lines(tr)[len(lines(rep.trace)):]
    assert added.min() > orig.max()                                 # the copies touch fresh lines only
    assert len(added) == 24 * 8 * 2                                 # 24 CTAs of 8 warps: a load line, a store line


def test_partial_wave_two_ways_agree():
    # 1 CTA of 2 warps per SM: a wave is 132 CTAs; 40 CTAs fill 30% of it
    rep = _one("grid_stride_copy.py", **{**SMALL_PARAMS, "blocks": 40})
    cf = replay("tail_wave", rep.trace, rep.config)
    assert cf.applicable and "packed on 40 SMs" in cf.how
    rounded, how = tail_by_rounding(rep.trace, rep.config, 132)
    assert "40 -> 132 CTAs" in how
    assert cf.cycles == pytest.approx(rounded, rel=0.05)
    fixed = rep.engine.launch_overhead_cycles + rep.config.chip.drain_cycles
    assert fixed < cf.cycles < rep.cycles
    # more than one wave: rounded up to whole waves
    big = _one("grid_stride_copy.py", **{**SMALL_PARAMS, "blocks": 140})
    cf = replay("tail_wave", big.trace, big.config)
    assert "140 -> 264 CTAs (2 whole waves of 132)" in cf.how and cf.cycles < big.cycles
    whole = _one("grid_stride_copy.py", **SMALL_PARAMS)                # 132 CTAs: one whole wave
    assert not replay("tail_wave", whole.trace, whole.config).applicable


def test_chip_limits_are_replayed_and_never_slower_for_a_stream(strided32):
    rep, e = strided32
    for key in ("dram_bandwidth", "memory_latency"):
        r = e.record(key)
        assert r["applicable"] and r["kind"] == "chip"
        assert r["cycles_without"] <= rep.cycles
    # the stride-32 reads move 8x the bytes used; without the DRAM limit the L2's write side (the fills,
    # ~2,000 B/clk on the H100, close to DRAM's own rate) binds next, so the saving stays well under 8x
    assert 15 < e.record("dram_bandwidth")["saving_pct"] < 60
    cfg = dataclasses.replace(rep.config, l2=dataclasses.replace(rep.config.l2, write_bytes_per_clk_per_slice=0.0))
    base = replay("dram_bandwidth", rep.trace, cfg)                  # no write-side limit: DRAM alone binds
    full = Engine(rep.trace, cfg).run(progress=None).cycles
    assert base.cycles < 0.7 * full


def test_not_applicable_causes_are_listed_with_saving_zero(bank32):
    rep, e = bank32
    assert [r["key"] for r in e.records].count("coalescing") == 1 and len(e.records) == len(IDEAL_KEYS)
    for key in ("coalescing", "divergence", "occupancy", "tail_wave"):
        r = e.record(key)
        assert not r["applicable"] and r["saving_pct"] == 0 and r["rank"] is None
        assert r["cycles_without"] == rep.engine.cycles and r["how"]
    # order: kernel causes by saving, chip limits by saving, then the rest
    kinds = [(r["applicable"], r["kind"]) for r in e.records]
    assert kinds == sorted(kinds, key=lambda k: (not k[0], k[1] != "kernel"))


def test_report_serializes_the_explanation_not_the_trace(bank32):
    rep, e = bank32
    d = json.loads(rep.to_json())
    assert d["explanation"]["limiter"] == e.limiter
    assert d["explanation"]["records"][0]["key"] == "bank_conflicts"
    assert "trace" not in d and len(rep.to_json()) < 40_000
    bare = Report(kernel="k", gpu="g", metrics={})
    with pytest.raises(GpusimError, match="carries no trace"):
        bare.explain()


# ---- the command --------------------------------------------------------------------------------------------------

SMALL = ["kernels/grid_stride_copy.py"] + [x for k, v in {**SMALL_PARAMS, "blocks": 140}.items()
                                           for x in ("-p", f"{k}={v}")]      # 140 CTAs: 1.06 waves


def test_cli_prints_ranked_lines(capsys):
    assert main(["explain", *SMALL]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("explain grid_stride_copy on NVIDIA H100")
    assert "limiter: " in lines[1]
    ranked = [ln for ln in lines if ln.strip().startswith("without ")]
    assert len(ranked) >= 3 and all(" cycles (" in ln and "%)" in ln for ln in ranked)
    kernel = ranked[:ranked.index(next(ln for ln in ranked if "memory latency" in ln or "DRAM" in ln))]
    pcts = [float(ln.split(" cycles (")[1].split("%")[0]) for ln in kernel]
    assert pcts == sorted(pcts)                                     # -Y%: the largest saving first
    assert "not applicable:" in out


def test_cli_json_and_html(capsys, tmp_path):
    page = tmp_path / "e.html"
    assert main(["explain", *SMALL, "--json", "--html", str(page)]) == 0
    d = json.loads(capsys.readouterr().out)
    (e,) = d["explanations"]
    assert e["kernel"] == "grid_stride_copy" and e["limiter"] in ("compute", "DRAM bandwidth", "latency", "occupancy")
    assert {r["key"] for r in e["records"]} == set(IDEAL_KEYS)
    for r in e["records"]:
        assert math.isclose(r["saving_cycles"], e["cycles"] - r["cycles_without"])
    text = page.read_text()
    assert "Why " in text and f"limiter: <b>{e['limiter']}</b>" in text and "without DRAM bandwidth limit" in text
    assert "CTAs per SM 1 -&gt; 32" in text and "not applicable" in text


def test_cli_errors_are_one_line(capsys):
    assert main(["explain", "kernels/strided_read.py", "-p", "strid=4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusim: error: kernels/strided_read.py:") and "did you mean 'stride'" in err
