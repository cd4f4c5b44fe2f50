"""Gates on the committed H100 records, in the tiers of the validation method (issue 4).

Every non-heavy suite case is simulated once (in parallel worker processes) and held against
``gpusim/validate/records``:

* exact: sectors per request of global loads/stores (affine SIMT accesses), shared-memory bank conflicts of
  the bank-conflict kernels, theoretical occupancy;
* estimates: registers per thread and shared memory per block within the stated estimate error;
* DRAM bytes read within 5% (or 64 KiB for kernels that read less than 1 MiB);
* cycles: MAPE <= 20% over the cases, no case off by more than 2x, and every ordered pair in the measured
  order (pairs whose measured cycles differ by less than 5% are ties and are not gated).

The heavy cases (tagged in the suite), and the five in-sample cases that take longest to simulate
(``LEFT_TO_THE_REPORT``), are left to ``gpusim validate report``; see DEVIATIONS.md.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from gpusim.validate import records, suite
from gpusim.validate.compare import Row, compare, pair_orders, summarize
from gpusim.validate.suite import CASES, PAIRS, REGISTER_DEVIATION_TOL, REGISTER_DEVIATIONS, in_sample

#: the in-sample cases (suite.in_sample): the held-out families and the lecture-scenario cases were collected
#: after the calibration; `gpusim validate report` publishes their error apart (README, DEVIATIONS.md)
#: in-sample cases that take 80 s or more each to simulate on a 2-core machine (``wall_s`` of ``gpusim validate report
#: --json``, 2026-11-29: 88-261 s; together 43% of the gated cases' simulation time): held by the report, not here
LEFT_TO_THE_REPORT = {"tl_matmul_4096_64x64x32", "tl_matmul_4096_128x128x64", "tl_matmul_2049_64x64x32",
                      "attn_naive_d64_n1024", "attn_naive_d64_n2048"}
CASES_GATED = [c for c in CASES if "heavy" not in c.tags and in_sample(c) and records.measured(c.name)
               and c.name not in LEFT_TO_THE_REPORT]

CYCLES_MAPE_MAX_PCT = 20.0
CYCLES_MAX_FACTOR = 2.0
DRAM_READ_TOL = 0.05
DRAM_SMALL_BYTES = 1 << 20
DRAM_SMALL_SLACK = 64 << 10
#: stated estimate errors: registers per thread (absolute, or relative for large counts)
REGISTER_TOL_ABS, REGISTER_TOL_REL = 8, 0.20
SHARED_TOL_REL = 0.10
TIE = 0.05


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return compare(CASES_GATED, jobs=max(1, min(len(os.sched_getaffinity(0)), 4)))


def _fails(rows, key, ok) -> list[str]:
    out = []
    for r in rows:
        p, m = r.predicted.get(key), r.measured.get(key)
        if p is None or m is None:
            continue
        if not ok(r, p, m):
            out.append(f"{r.case}: predicted {p:.4g}, measured {m:.4g}")
    return out


def test_suite_is_large_enough():
    assert len(CASES_GATED) >= 60


@pytest.mark.parametrize("key", ["gld_sectors_per_request", "gst_sectors_per_request"])
def test_sectors_per_request_exact_for_simt_kernels(rows, key):
    simt = [r for r in rows if suite.case_by_name(r.case).frontend == "cuda"]
    assert simt
    bad = _fails(simt, key, lambda r, p, m: abs(p - m) <= 0.01 * max(1.0, m))
    assert not bad, "\n".join(bad)


def test_bank_conflicts_exact(rows):
    bc = [r for r in rows if r.group == "bank_conflicts" or r.case.startswith("bank_conflicts")]
    assert len(bc) >= 7
    bad = _fails(bc, "shared_ld_bank_conflicts", lambda r, p, m: abs(p - m) <= 0.01 * max(m, 100))
    assert not bad, "\n".join(bad)


def test_theoretical_occupancy_exact(rows):
    bad = _fails(rows, "occupancy_theoretical_pct", lambda r, p, m: abs(p - m) < 0.01)
    assert not bad, "\n".join(bad)


def test_registers_within_estimate_error(rows):
    def ok(r, p, m):
        tol = REGISTER_DEVIATION_TOL if r.case in REGISTER_DEVIATIONS else REGISTER_TOL_REL
        return abs(p - m) <= max(REGISTER_TOL_ABS, tol * m)
    bad = _fails(rows, "registers_per_thread", ok)
    assert not bad, "\n".join(bad)
    deviations = (Path(__file__).resolve().parents[1] / "DEVIATIONS.md").read_text()
    for case in REGISTER_DEVIATIONS:
        assert case in deviations, f"{case}: register deviation not explained in DEVIATIONS.md"


def test_shared_memory_per_block(rows):
    bad = _fails(rows, "shared_bytes_per_cta",
                 lambda r, p, m: abs(p - m) <= SHARED_TOL_REL * max(m, 1024))
    assert not bad, "\n".join(bad)


def test_dram_bytes_read_within_5_percent(rows):
    bad = _fails(rows, "dram_bytes_read",
                 lambda r, p, m: abs(p - m) <= (DRAM_READ_TOL * m if m >= DRAM_SMALL_BYTES else DRAM_SMALL_SLACK))
    assert not bad, "\n".join(bad)


def test_cycles_mape(rows):
    s = summarize(rows, "cycles")
    assert s is not None and s.n == len([r for r in rows if r.case not in records.ncu_excluded()])
    assert s.mape_pct <= CYCLES_MAPE_MAX_PCT, f"cycles MAPE {s.mape_pct:.1f}% (worst {s.worst_case})"


def test_no_case_off_by_more_than_2x(rows):
    bad = _fails(rows, "cycles", lambda r, p, m: 1 / CYCLES_MAX_FACTOR <= p / m <= CYCLES_MAX_FACTOR)
    assert not bad, "\n".join(bad)


def test_ordered_pairs(rows):
    by = {r.case: r for r in rows}
    checked, wrong = 0, []
    for slow, fast, m_ok, p_ok in pair_orders(rows):
        ms, mf = by[slow].measured["cycles"], by[fast].measured["cycles"]
        if abs(ms - mf) <= TIE * max(ms, mf):
            continue
        checked += 1
        if m_ok != p_ok:
            wrong.append(f"{slow} vs {fast}: measured {ms:.0f} vs {mf:.0f}, predicted "
                         f"{by[slow].predicted['cycles']:.0f} vs {by[fast].predicted['cycles']:.0f}")
    assert checked >= 10
    assert not wrong, "\n".join(wrong)


def test_errors_are_finite(rows):
    for r in (r for r in rows if r.case not in records.ncu_excluded()):
        e = r.error("cycles")
        assert e is not None and math.isfinite(e), r.case


def test_a_prediction_does_not_depend_on_the_arrays_the_process_holds(monkeypatch):
    """Validation cases run in an empty simulated address space (``api.fresh_addresses``): their arrays get the
    same device addresses, so the same cycles, whatever the process still holds (before, ``-j 2`` and the order
    of the cases moved a one-wave matmul by 3%)."""
    import numpy as np
    from gpusim import api
    from gpusim.cuda.memory import ADDRESS_SPACE
    from gpusim.triton._buffers import ADDRESSES
    from gpusim.validate.compare import predict
    seen = []
    real = api.simulate_launch

    def spy(launch, *a, **k):
        arrs = [x for x in launch["args"] if isinstance(x, np.ndarray)]
        seen.append([ADDRESS_SPACE.address_of(x) for x in arrs])
        return real(launch, *a, **k)

    monkeypatch.setattr(api, "simulate_launch", spy)
    first = predict("vector_add_n4096")
    held = [np.zeros(k * 1000 + 37, np.float32) for k in range(1, 6)]     # live, registered, odd sizes
    for h in held:
        ADDRESS_SPACE.address_of(h)
        ADDRESSES.address(h.ctypes.data, h.nbytes, h)
    n_cuda, n_tl = len(ADDRESS_SPACE._blocks), len(ADDRESSES.by_ptr)
    again = predict("vector_add_n4096")
    assert seen[0] == seen[1] and len(seen[0]) == 3
    first.pop("wall_s"), again.pop("wall_s")
    assert first == again
    assert len(ADDRESS_SPACE._blocks) == n_cuda and len(ADDRESSES.by_ptr) == n_tl      # restored after the case


def test_a_pointer_table_case_runs_after_others_in_one_process():
    """Tutorial 08's grouped GEMM hands device addresses out (``data_ptr``) for its pointer table; in an empty
    address space those must be forgotten too, or the next case's table maps to the previous case's arrays (the
    report once stopped with "a pointer cast from int64 holds 0x..., which is no address gpusim handed out")."""
    from gpusim.validate.compare import predict
    first = predict("tut_grouped_gemm_4x512")
    again = predict("tut_grouped_gemm_4x512")
    assert first["cycles"] == again["cycles"] > 0
