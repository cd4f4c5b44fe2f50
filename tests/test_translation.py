"""Address translation: measured on the H100, and why the model has no TLB term.

``records/tlb_chase_h100.json`` (``benchmarks/device/tlb_chase.py``): one thread chases pointers through one slot
per stride (4 KiB, 64 KiB, 2 MiB: one page per access at 2 MiB, the page size of large allocations), over
footprints up to 32 GiB.  If translation cost anything beyond the TLBs' reach, the hops that touch a new 2 MiB page
every time would slow down as the pages outgrow the reach.  They do not, within a few percent: so the model, which
charges no translation, predicts the strided kernels' latency the same way at any footprint."""
import json
import os

import pytest

from gpusim.config import load_gpu

REC = os.path.join(os.path.dirname(__file__), "..", "gpusim", "validate", "records", "tlb_chase_h100.json")


@pytest.fixture(scope="module")
def chase():
    with open(REC) as f:
        return json.load(f)["cases"]


def _hop(cases, stride, slots, key):
    return next(c[key] for c in cases if c["stride"] == stride and c["slots"] == slots)


def test_l1_hits_cost_the_same_through_1536_pages(chase):
    """Warm hops that hit L1 (<= 1024 slots of 128 B lines): one new 2 MiB page per hop over 2 GiB costs what a 4 KiB
    stride inside 4 MiB costs (no L1 TLB reach is visible)."""
    inside = _hop(chase, 4096, 1024, "warm_cycles_per_hop")
    for slots in (256, 512, 1024):
        assert _hop(chase, 2 << 20, slots, "warm_cycles_per_hop") == pytest.approx(inside, rel=0.02)


def test_l2_hits_pay_at_most_4pct_for_translation_up_to_32_gib(chase):
    """Warm hops that hit L2: one 2 MiB page per hop over 6-32 GiB (3,072-16,384 pages) against 16-64 MiB of 4 KiB
    strides (8-32 pages): within 4% (10 cycles), and flat from 6 to 32 GiB (no second TLB level's reach shows)."""
    few_pages = _hop(chase, 4096, 16384, "warm_cycles_per_hop")
    many = [_hop(chase, 2 << 20, s, "warm_cycles_per_hop") for s in (3072, 4096, 6144, 8192, 12288, 16384)]
    assert max(many) <= 1.04 * few_pages
    assert max(many) - min(many) <= 0.005 * min(many)


def test_cold_hops_pay_at_most_4pct_for_page_walks(chase):
    """Cold hops (DRAM): one new page per hop over 16 MiB-32 GiB costs within 4% of a 4 KiB-stride chase over 16 MiB,
    and the H100 preset's DRAM latency (with the chase loop's overhead, as calibrated) sits in that band."""
    base = _hop(chase, 4096, 4096, "cold_cycles_per_hop")
    cold = [c["cold_cycles_per_hop"] for c in chase if c["stride"] == 2 << 20 and c["slots"] >= 8]
    assert max(cold) <= 1.04 * base and min(cold) >= 0.9 * base
    dram = load_gpu("h100").dram.latency_cycles
    assert 0.9 * base <= dram <= base


def test_many_warps_missing_pages_at_once_are_not_slowed():
    """Throughput (``benchmarks/device/tlb_throughput.py``, ``records/tlb_throughput_h100.json``): 2^20 warps each
    reading one random line spread over 64 .. 16,384 pages of 2 MiB take the same time within 1% (no page-walk
    bandwidth limit shows either)."""
    with open(os.path.join(os.path.dirname(REC), "tlb_throughput_h100.json")) as f:
        rows = json.load(f)["cases"]
    assert [r["pages_2mib"] for r in rows][-1] >= 16384
    t = [r["median_ms"] for r in rows]
    assert max(t) <= 1.01 * min(t)
