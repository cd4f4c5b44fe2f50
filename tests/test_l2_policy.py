"""The L2 with l2.partitioned: far copies as lines of their own, remote fills least recently used, a per-set dirty
limit and sets spread evenly, on hand-picked addresses whose sets are known (analytic counts, no calibration)."""
import dataclasses

import numpy as np
import pytest

from gpusim.config import load_gpu
from gpusim.timing.engine import Engine
from gpusim.timing.memory import COPY

from synthetic import alu_trace

H100 = load_gpu("h100")


def mem_of(**l2):
    base = dict(partitioned=True, far_copies=True, ways=16, capacity_fraction=1.0, dirty_at_launch_bytes=0,
                write_bytes_per_clk_per_slice=0.0, dirty_max_bytes=0, dirty_ways=0,
                remote_fill_position=0)
    base.update(l2)
    gpu = dataclasses.replace(H100, l2=dataclasses.replace(H100.l2, **base))
    return Engine(alu_trace(1), gpu).mem


def lines_of_set(mem, sid, n, start=1 << 24):
    """``n`` line numbers (from ``start`` on) whose home is set ``sid``."""
    cand = np.arange(start, start + 8 * n * len(mem.l2_sets), dtype=np.int64)
    out = cand[mem.sets_of(cand) == sid][:n].tolist()
    assert len(out) == n and all(mem.set_of(x) == sid for x in out)
    return out


def near_sm(mem, sid):
    """An SM of the partition that holds set ``sid`` (its reads of it are near and leave no copy)."""
    return mem.sm_partition.index(mem.slice_partition[sid % mem.n_slices])


def far_sm(mem, sid):
    p = mem.slice_partition[sid % mem.n_slices]
    return next(i for i, q in enumerate(mem.sm_partition) if q != p)


def read(mem, sm, line, t=0.0):
    return mem.load(sm, t, [line], [0b1111], False, mem.sets_of([line]))


def test_a_contiguous_footprint_spreads_evenly_over_the_sets():
    """One hash over all the sets: 4 lines a set of consecutive lines land far more evenly than a random placement
    (whose spread would be sqrt(4) = 2 lines), and set_of, sets_of and slice_of agree."""
    mem = mem_of()
    n = 4 * len(mem.l2_sets)
    lines = np.arange(1 << 22, (1 << 22) + n, dtype=np.int64)
    sets = mem.sets_of(lines)
    counts = np.bincount(sets, minlength=len(mem.l2_sets))
    assert counts.mean() == 4 and counts.std() < 1.0
    assert [mem.set_of(int(x)) for x in lines[:2000]] == sets[:2000].tolist()
    assert all(mem.slice_of(int(x)) == mem.set_of(int(x)) % mem.n_slices for x in lines[:2000])


@pytest.mark.parametrize("pos", [0, 4])
def test_a_remote_fill_goes_in_among_the_least_recently_used(pos):
    """A set full of W lines its home partition read; a far SM's miss on a new line of the set evicts the set's LRU
    line and goes in with ``remote_fill_position`` lines older than it; each next miss of the home partition evicts
    the LRU line, so after pos + 1 of them the home line of the remote fill is gone (its copy stays in the far
    partition) while the home partition's own lines read after it stay."""
    mem = mem_of(remote_fill_position=pos)
    sid = 3
    ns, fs = near_sm(mem, sid), far_sm(mem, sid)
    w = mem.l2_capacity
    assert w == 16
    own = lines_of_set(mem, sid, w + pos + 1)
    for x in own[:w]:
        read(mem, ns, x)
    assert list(mem.l2_sets[sid]) == own[:w]
    remote = lines_of_set(mem, sid, 1, start=own[-1] + 1)[0]
    read(mem, fs, remote)
    assert list(mem.l2_sets[sid]) == own[1:1 + pos] + [remote] + own[1 + pos:w]
    for x in own[w:]:
        read(mem, ns, x)
    assert remote not in mem.l2_sets[sid]
    assert list(mem.l2_sets[sid]) == own[pos + 1:]
    assert (remote | COPY) in mem.l2_sets[mem._copy_set(mem.sm_partition[fs], sid)]


def test_a_far_read_leaves_a_copy_that_takes_a_line_of_the_readers_partition():
    """A line read by an SM of the other partition: the mirror set of the reader's partition gets a copy (a line of
    its own, clean); the next read from that partition is served by the copy at the near latency and leaves the home
    line's place in its set as it is.  A near read leaves no copy."""
    mem = mem_of()
    sid = 7
    x, y, z = lines_of_set(mem, sid, 3)
    fs = far_sm(mem, sid)
    part = mem.sm_partition[fs]
    sl = sid % mem.n_slices
    csid = mem._copy_set(part, sid)
    assert csid % mem.n_slices == mem.mirror[part][sl] and csid // mem.n_slices == sid // mem.n_slices
    assert mem.slice_partition[csid % mem.n_slices] == part != mem.slice_partition[sl]
    read(mem, near_sm(mem, sid), y)
    read(mem, fs, x)
    read(mem, near_sm(mem, sid), z)
    assert list(mem.l2_sets[sid]) == [x, y, z]               # (the remote fill went in least recently used)
    assert mem.l2_sets[csid][x | COPY] & 15 == 0b1111 and not mem.l2_sets[csid][x | COPY] & 0xF0
    t = 1e6
    assert read(mem, fs, x, t) - t == mem.l2_near[part]      # (nothing else in flight: no queueing)
    assert list(mem.l2_sets[sid]) == [x, y, z]
    assert sum(1 for s in mem.l2_sets for k in s if k >= 0 and k & COPY) == 1


def test_a_store_leaves_only_the_writers_copy():
    """A store from the home partition drops the other partition's copy; a store from the far partition makes its
    own copy (clean), and the home line is the dirty one."""
    mem = mem_of()
    sid = 11
    x = lines_of_set(mem, sid, 1)[0]
    fs, ns = far_sm(mem, sid), near_sm(mem, sid)
    csid = mem._copy_set(mem.sm_partition[fs], sid)
    read(mem, fs, x)
    assert (x | COPY) in mem.l2_sets[csid]
    mem.store(ns, 10.0, [x], [0b0011])
    assert (x | COPY) not in mem.l2_sets[csid]
    assert (mem.l2_sets[sid][x] >> 4) & 15 == 0b0011
    mem.store(fs, 20.0, [x], [0b1100])
    assert mem.l2_sets[csid][x | COPY] & 15 == 0b1100 and not mem.l2_sets[csid][x | COPY] & 0xF0
    assert (mem.l2_sets[sid][x] >> 4) & 15 == 0b1111
    assert mem.stats.dram_wr_bytes == 0


def test_a_set_past_its_dirty_ways_writes_back_its_oldest_dirty_lines_and_keeps_them():
    """l2.dirty_ways D: stores of K whole lines of one set (D < K <= W) write back exactly K - D lines, the oldest
    first, each of which stays in the set, clean; no line is evicted."""
    mem = mem_of(dirty_ways=8)
    sid = 13
    ns = near_sm(mem, sid)
    k = 14
    xs = lines_of_set(mem, sid, k)
    for i, x in enumerate(xs):
        mem.store(ns, float(i), [x], [0b1111])
    assert mem.stats.dram_wr_bytes == (k - 8) * 128
    s = mem.l2_sets[sid]
    assert list(s) == xs
    assert [x for x in xs if s[x] & 0xF0] == xs[k - 8:]
    assert mem.l2_ndirty[sid] == 8


def test_a_footprint_read_from_both_partitions_takes_two_lines_each():
    """W/2 lines of one home set, each read by both partitions: the home set holds each once and the far
    partition's mirror set a copy of each (two lines of L2 per line of data), and DRAM is read once per line."""
    mem = mem_of()
    sid = 17
    ns, fs = near_sm(mem, sid), far_sm(mem, sid)
    csid = mem._copy_set(mem.sm_partition[fs], sid)
    xs = lines_of_set(mem, sid, 8)
    for x in xs:
        read(mem, ns, x)
        read(mem, fs, x)
    assert set(mem.l2_sets[sid]) == set(xs)
    assert set(mem.l2_sets[csid]) == {x | COPY for x in xs}
    assert mem.stats.dram_rd_bytes == 8 * 128


def test_warming_puts_lines_through_the_tags_and_leaves_copies_for_far_readers():
    """warm_l2 (sampling's functional warming): every warmed line ends in its home set, a store's dirty; with
    l2.partitioned a line's reader is taken to be of partition set_hash(line) % 2, and a line far for it leaves a
    copy there (about half of them); without, no copy lines at all."""
    from gpusim.timing._lines import set_hash
    for partitioned in (True, False):
        mem = mem_of(partitioned=partitioned)
        xs = list(range(1 << 22, (1 << 22) + 400))
        mem.warm_l2(xs, [0b1111] * 400, [i % 2 for i in range(400)])
        for i, x in enumerate(xs):
            s = mem.set_of(x)
            assert x in mem.l2_sets[s] and bool(mem.l2_sets[s][x] & 0xF0) == bool(i % 2)
        copies = {k & ~COPY for st in mem.l2_sets for k in st if k >= 0 and k & COPY}
        if partitioned:
            far = {x for x in xs if set_hash(x) % 2 != mem.slice_partition[mem.slice_of(x)]}
            assert copies == far and 120 < len(far) < 280
        else:
            assert not copies
