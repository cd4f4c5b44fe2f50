"""The L2: slices in partitions, the sets of lines each slice holds, write-back of dirty lines, atomics at the slice.

A line's 32 B sectors missing in the L1 cross the crossbar to the slice its address hashes to, which moves
``bytes_per_clk_per_slice`` per clock (``slice_free``: the clock at which it is next free); sectors missing in the
slice are fetched from DRAM in ``fetch_bytes`` pieces (``DRAMChannels``).  A slice's write side (stores and DRAM
fills) may be slower than its pipeline (``write_bytes_per_clk_per_slice``).  Latencies are load-to-use cycles of a
near or far partition, measured by pointer chasing; all times are SM clock cycles.

Caches are sectored LRU: for each slice, sets of ``l2.ways`` lines (a set is a dict in LRU order: a line that is
touched is taken out and put back at the end; the victim is the first).  The L2 is write-back: dirty sectors reach
DRAM when evicted.  ``l2.far_copies``: a partition keeps a copy of the far lines its SMs read (near latency from the
second read on).  Without ``l2.partitioned`` the copy is a bit of the home line and takes no room (the H100's
capacity for a stream's lines is then set by ``l2.capacity_fraction``); with it, the copy is a line of its own in
the copying partition (``COPY | line``), so a line read from both partitions takes two, and:

* a partition's read of a far line looks up its copy first (near latency, in the copy's slice); missing there it
  reads the home line, whose place in its set's order it leaves as it is (only the home partition's own reads and
  every write make it recent), and the home line a remote read brings in from DRAM goes in with only
  ``l2.remote_fill_position`` lines of its set less recently used than it;
* a store leaves a copy only in the writer's partition;
* a set holds at most ``l2.dirty_ways`` dirty lines: a store past it writes back the set's least recently used
  dirty line first, which stays, clean;
* a line's set is picked by one hash of its address over all the sets, so a contiguous footprint spreads evenly.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

import numpy as np

from ..config import GPUConfig
from ._lines import MASK64, MIX, MIX2, POPCOUNT, evict_first, hash_line, set_hash
from .dram import DRAMChannels

#: cycles per booking bin of an L2 slice's write side (see L2Slices._write_port)
WRITE_BIN_CYCLES = 64
#: with l2.partitioned, a partition's copy of line L is the line L | COPY
COPY = 1 << 62


class L2Slices(DRAMChannels):
    """The L2 slices of one GPU, their sets and reservation clocks, over the DRAM channels (a base of
    ``MemorySystem``; ``stats`` and ``observers`` are the memory system's)."""

    def _init_l2(self, gpu: GPUConfig, sm_to_slice_latency: list[list[int]], sm_partition: list[int],
                 slice_partition: list[int]) -> None:
        l2 = gpu.l2
        n_sm = gpu.chip.sm_count
        self.sm_partition = sm_partition
        self.slice_partition = slice_partition
        self.n_slices = l2.slices
        # line -> sector bits | dirty << 4 | (with far_copies) 1 << (8 + p) for each far partition p holding a copy
        # sets: l2_sets[slice + slices * k] for the k-th set of a slice (see set_of)
        per_slice = max(1, int(l2.size_bytes * l2.capacity_fraction) // l2.line_bytes // l2.slices)
        self.sets_per_slice = max(1, per_slice // l2.ways) if l2.ways else 1
        self.l2_capacity = l2.ways if l2.ways and per_slice >= l2.ways else per_slice   # lines per set
        self.l2_sets: list[dict[int, int]] = [{} for _ in range(l2.slices * self.sets_per_slice)]
        self.n_sets = len(self.l2_sets)
        # l2.slice_granule_lines: 2 needs an even number of sets per slice (a pair of lines takes two of them)
        self.granule = l2.slice_granule_lines if self.sets_per_slice % 2 == 0 else 1
        self.sps2 = self.sets_per_slice // 2
        self.far_copies = l2.far_copies
        # l2.partitioned: far copies are lines of their own (COPY | line) in the copying partition's set of the same
        # index (mirror[p][slice] is the slice of partition p with the same rank as ``slice`` in its own partition);
        # each set counts its dirty lines, l2_ndirty, against l2.dirty_ways
        self.partitioned = l2.partitioned and l2.far_copies
        self.dirty_ways = l2.dirty_ways if self.partitioned else 0
        self.remote_fill_position = l2.remote_fill_position
        self.l2_ndirty = [0] * self.n_sets
        n_part = max(slice_partition) + 1
        own = [[x for x in range(l2.slices) if slice_partition[x] == q] for q in range(n_part)]
        rank = {x: own[slice_partition[x]].index(x) for x in range(l2.slices)}
        self.mirror = [[own[q][rank[x] % len(own[q])] for x in range(l2.slices)] for q in range(n_part)]
        self.l2_evictions = [0] * len(self.l2_sets)      # since the set's dict was last rebuilt
        # DRAM fills in flight: line -> (cycle the requester has its data, sectors), as l1_pend
        self.l2_pend: dict[int, tuple[float, int]] = {}
        # reads in flight per group of l2.merge_sms SMs (a TPC): line -> (cycle its data is back, sectors, cycle it
        # left), as l1_pend; a request of the group for sectors in flight merges with it on its way to the L2
        self.merge_sms = l2.merge_sms
        self.merge_window = l2.merge_window_cycles
        n_grp = (n_sm + l2.merge_sms - 1) // l2.merge_sms
        self.grp_pend: list[dict[int, tuple[float, int, float]]] | None = \
            [{} for _ in range(n_grp)] if l2.merge_sms > 1 else None
        self._pend_cap = [4096] * (n_sm + 1)     # prune l1_pend[sm] / l2_pend (last) past this many entries
        self._grp_cap = [4096] * n_grp
        # with l2.dirty_max_bytes: per slice, its dirty lines, oldest first (line -> its set), and how many it may hold
        self.dirty_cap = (l2.dirty_max_bytes // l2.line_bytes // l2.slices
                          if l2.dirty_max_bytes and not self.partitioned else 0)
        self.dirty_order: list[dict[int, int]] = [{} for _ in range(l2.slices)]
        self._fill_dirty_at_launch(l2.dirty_at_launch_bytes // l2.line_bytes)
        self.slice_free = [0.0] * l2.slices
        self.sector_cycles = l2.sector_bytes / l2.bytes_per_clk_per_slice
        # the data array's write side (stores and DRAM fills), when it is slower than the slice's pipeline
        self.slice_wbins: list[dict[int, float]] = [{} for _ in range(l2.slices)]   # bin -> sectors booked
        # bins [first, end) known full, and the size of the bins' dict at which to forget old ones
        self.slice_wrun = [[0, 0, 512] for _ in range(l2.slices)]
        self.write_sector_cycles = (l2.sector_bytes / l2.write_bytes_per_clk_per_slice
                                    if l2.write_bytes_per_clk_per_slice > 0 else 0.0)
        # latency[sm_partition][slice_partition] (load-to-use, cycles)
        self.l2_latency = sm_to_slice_latency
        # the same per slice: l2_latency_by_slice[sm partition][slice]
        self.l2_latency_by_slice = [[row[p] for p in slice_partition] for row in sm_to_slice_latency]
        # per SM partition: the latency of a far line this partition holds a copy of (never, without far_copies)
        self.l2_near = [row[p] if l2.far_copies else 1 << 30 for p, row in enumerate(sm_to_slice_latency)]
        self.xbar_cycles = max(1, (min(min(r) for r in sm_to_slice_latency) - gpu.l1.hit_latency_cycles) // 2)
        fetch_sectors = l2.fetch_bytes // l2.sector_bytes
        # expand a miss mask to whole fetch blocks (e.g. 64 B = aligned sector pairs)
        self.fetch_expand = [self._expand(m, fetch_sectors) for m in range(16)]
        self.atomic_latency = l2.atomic_latency_cycles
        self.atomic_request_cycles = l2.atomic_request_cycles
        self.atomic_sector_cycles = l2.atomic_sector_cycles

    def _fill_dirty_at_launch(self, n_lines: int) -> None:
        """The L2 as the kernel finds it: ``n_lines`` whole dirty lines that belong to no kernel address (negative
        line numbers), spread evenly over the sets, each the least recently used of its set.  The kernel's lines
        push them out once its footprint nears the capacity; then they cost DRAM writes."""
        n_sets = len(self.l2_sets)
        q, r = divmod(max(0, n_lines), n_sets)
        for s in range(n_sets):
            sset = self.l2_sets[s]
            for j in range(min(self.l2_capacity, q + (s < r))):
                line = -(j * n_sets + s + 1)
                sset[line] = 0xFF
                self.l2_ndirty[s] += 1
                if self.dirty_cap:
                    self.dirty_order[s % self.n_slices][line] = s

    @staticmethod
    def _expand(mask: int, group: int) -> int:
        if group <= 1:
            return mask
        out = 0
        for g in range(0, 4, group):
            gm = ((1 << group) - 1) << g
            if mask & gm:
                out |= gm
        return out

    def slice_of(self, line: int) -> int:
        if self.partitioned:
            return self.set_of(line) % self.n_slices
        return hash_line(line) % self.n_slices

    def set_of(self, line: int) -> int:
        """Index in ``l2_sets`` of the set that holds ``line``: its slice ``s`` plus ``slices`` times its set in the
        slice (from the hash bits above those that pick the slice); ``set % slices`` is the slice.  With
        l2.partitioned one multiplicative hash picks the set among all (its high bits times the number of sets; the
        slice from the hash's top, its set from the rest), which spreads a contiguous or strided footprint evenly over
        the slices and the sets, as the chip's address hash does."""
        if self.partitioned:
            if self.granule == 2:
                # l2.slice_granule_lines = 2: a pair of lines hashes to a pair of sets of one slice
                half = self.sps2
                idx = ((((line >> 1) * MIX) & MASK64) >> 32) * (self.n_sets >> 1) >> 32
                return idx // half + self.n_slices * (2 * (idx % half) + (line & 1))
            idx = (((line * MIX) & MASK64) >> 32) * self.n_sets >> 32
            sps = self.sets_per_slice
            return idx // sps + self.n_slices * (idx % sps)
        s = hash_line(line) % self.n_slices
        if self.sets_per_slice == 1:
            return s
        return s + self.n_slices * (set_hash(line) % self.sets_per_slice)

    def sets_of(self, lines) -> np.ndarray:
        """L2 set of each line (vectorized form of ``set_of``)."""
        a = np.asarray(lines, dtype=np.uint64)
        with np.errstate(over="ignore"):
            if self.partitioned:
                if self.granule == 2:
                    half = np.uint64(self.sps2)
                    idx = (((a >> np.uint64(1)) * np.uint64(MIX)) >> np.uint64(32)) * np.uint64(self.n_sets >> 1) \
                        >> np.uint64(32)
                    return (idx // half + np.uint64(self.n_slices) * (np.uint64(2) * (idx % half)
                                                                     + (a & np.uint64(1)))).astype(np.int32)
                idx = ((a * np.uint64(MIX)) >> np.uint64(32)) * np.uint64(self.n_sets) >> np.uint64(32)
                sps = np.uint64(self.sets_per_slice)
                return (idx // sps + np.uint64(self.n_slices) * (idx % sps)).astype(np.int32)
            h = (a * np.uint64(MIX)) >> np.uint64(29)
            n = np.uint64(self.n_slices)
            out = h % n
            if self.sets_per_slice > 1:
                x = a ^ (a >> np.uint64(7)) ^ (a >> np.uint64(17))
                out += n * (((x * np.uint64(MIX2)) >> np.uint64(40)) % np.uint64(self.sets_per_slice))
        return out.astype(np.int32)


    # ---- a set's lines -------------------------------------------------------------------------------
    def _l2_insert(self, s: int, sset: dict, line: int, value: int, t: float, cost: bool = True,
                   last: bool = False) -> None:
        """Put ``line`` (not in the set) at the MRU end of set ``s`` (an index of ``l2_sets``); evict the LRU line if
        the set is over capacity (its dirty sectors go to DRAM at ``t``, unless not ``cost``: functional warming).
        ``last``: the line goes in with ``l2.remote_fill_position`` lines less recently used than it, instead (a remote
        fill of a home line with l2.partitioned; ``l2_sets[s]`` is then a new dict)."""
        if value & 0xF0:
            self.l2_ndirty[s] += 1
        if last:
            if len(sset) >= self.l2_capacity:
                self._evict(s, t, cost)
            sset = self.l2_sets[s]
            p = self.remote_fill_position
            if p >= len(sset):
                sset[line] = value
                return
            # the p least recently used lines, the new one, then the rest (dicts keep insertion order)
            items = iter(sset.items())
            new = dict(islice(items, p))
            new[line] = value
            new.update(items)
            self.l2_sets[s] = new
            return
        sset[line] = value
        if len(sset) > self.l2_capacity:
            self._evict(s, t, cost)

    def _evict(self, s: int, t: float, cost: bool) -> None:
        """Drop set ``s``'s least recently used line; its dirty sectors go to DRAM at ``t`` (if ``cost``)."""
        victim, v = evict_first(self.l2_sets, self.l2_evictions, s)
        dirty = (v >> 4) & 15
        if dirty:
            self.l2_ndirty[s] -= 1
            if cost:
                self._dram(t, victim, dirty, True)
            if self.dirty_cap:
                self.dirty_order[s % self.n_slices].pop(victim, None)

    def _dirty_limit(self, sid: int, keep: int, t: float, cost: bool = True) -> None:
        """l2.dirty_ways: past it, set ``sid`` writes back (at ``t``, if ``cost``) its least recently used dirty line
        other than ``keep``, which stays, clean."""
        sset = self.l2_sets[sid]
        for k, v in sset.items():
            if v & 0xF0 and k != keep:
                if cost:
                    self._dram(t, k, (v >> 4) & 15, True)
                sset[k] = v & ~0xF0                     # (it keeps its place in the set's order)
                self.l2_ndirty[sid] -= 1
                return

    def _dirtied(self, sid: int, line: int, t: float, cost: bool = True) -> None:
        """``line`` of set ``sid`` is (again) dirty: it becomes its slice's newest dirty line; past ``dirty_cap`` the
        slice writes back its oldest one (at ``t``, unless not ``cost``: functional warming), which stays clean."""
        order = self.dirty_order[sid % self.n_slices]
        order.pop(line, None)
        order[line] = sid
        if len(order) > self.dirty_cap:
            old = next(iter(order))
            osid = order.pop(old)
            oset = self.l2_sets[osid]
            v = oset.get(old)
            if v is not None and (v >> 4) & 15:
                if cost:
                    self._dram(t, old, (v >> 4) & 15, True)
                oset[old] = v & ~0xF0                   # (the line keeps its place in the set's LRU order)
                self.l2_ndirty[osid] -= 1

    def _store_bits(self, sid: int, line: int, bits: int, t: float, cost: bool = True) -> None:
        """Set ``sid`` gets ``bits`` (sectors, dirty sectors << 4) of ``line``, which becomes its most recently used."""
        sset = self.l2_sets[sid]
        v = sset.pop(line, None)
        if v is None:
            self._l2_insert(sid, sset, line, bits, t, cost)
        else:
            if bits & 0xF0 and not v & 0xF0:
                self.l2_ndirty[sid] += 1
            sset[line] = v | bits

    def _copy_set(self, part: int, sid: int) -> int:
        """The set of partition ``part`` that holds its copies of the lines of set ``sid``."""
        sl = sid % self.n_slices
        return sid - sl + self.mirror[part][sl]

    def _drop_copies(self, sid: int, line: int, keep_part: int) -> None:
        """A write to ``line`` (home set ``sid``): the copies of partitions other than ``keep_part`` are stale."""
        home = self.slice_partition[sid % self.n_slices]
        for q in range(len(self.mirror)):
            if q != keep_part and q != home:
                self.l2_sets[self._copy_set(q, sid)].pop(line | COPY, None)

    def _write_port(self, s: int, t: float, nsec: int) -> float:
        """Write ``nsec`` sectors into slice ``s``'s data array from cycle ``t`` on; return when they are written.

        The write side is booked in bins of WRITE_BIN_CYCLES, each holding as many sectors as it can write, so that
        a request that reaches the slice at an earlier cycle than one booked before it (the SMs' clocks run apart
        by up to a few hundred cycles) takes the room still free then instead of queueing behind it.  Bins
        ``[run[0], run[1])`` are known full: a request that falls in them goes to the first bin after them (and
        ``run[2]`` is the number of bins past which the old ones are forgotten).
        """
        wc = self.write_sector_cycles
        bins = self.slice_wbins[s]
        run = self.slice_wrun[s]
        b = int(t // WRITE_BIN_CYCLES)
        if run[0] <= b < run[1]:
            b = run[1]
        b0 = b
        cap = WRITE_BIN_CYCLES / wc
        need = float(nsec)
        while True:
            used = bins.get(b, 0.0)
            take = cap - used
            if take >= need:
                used += need
                bins[b] = used
                done = b * WRITE_BIN_CYCLES + used * wc
                break
            if take > 0:
                bins[b] = cap
                need -= take
            b += 1
            if b == run[0]:
                b = run[1]
        # bins b0 .. b-1 are full now (and b too, if this request filled it)
        end = b + 1 if cap - used < 1e-9 else b
        if end > b0:
            if b0 <= run[1] and end >= run[0]:
                run[0], run[1] = min(run[0], b0), max(run[1], end)
            else:
                run[0], run[1] = b0, end
        if len(bins) > run[2]:
            old = int(t // WRITE_BIN_CYCLES) - 256      # bins well before the request's cycle: none books there
            for k in [k for k in bins if k < old]:
                del bins[k]
            if run[0] < old:
                run[0] = min(old, run[1])
            run[2] = max(512, 2 * len(bins))
        return done if done > t + nsec * wc else t + nsec * wc

    # ---- requests at the slice --------------------------------------------------------------------------
    def l2_write(self, sm_part: int, t: float, line: int, mask: int) -> float:
        """Store sectors ``mask`` of ``line`` into L2 (write-back, no fetch: byte masks are kept); return when the
        SM is free of it (see below; 0 when the write side is not modelled)."""
        sid = self.set_of(line)
        s = sid % self.n_slices
        arr = t + self.xbar_cycles
        free = self.slice_free[s]
        start = arr if arr > free else free
        nsec = POPCOUNT[mask]
        self.slice_free[s] = start + nsec * self.sector_cycles
        # (no write side modelled: the store needs no acknowledgement)
        ack = 0.0
        if self.write_sector_cycles:
            # the SM may let the store go once the slice is a crossbar trip from taking it: a write side with no
            # backlog holds no warp, a backed-up one holds the warps whose stores queue behind it
            ack = self._write_port(s, start, nsec) - nsec * self.write_sector_cycles - self.xbar_cycles
        self.stats.l2_wr_sectors += nsec
        if self.observers:
            for f in self.observers:
                f(start, "l2_write", nsec * 32)
        if self.partitioned:
            self._store_bits(sid, line, mask | (mask << 4), start)
            self._drop_copies(sid, line, sm_part)
            if self.slice_partition[s] != sm_part:
                self._store_bits(self._copy_set(sm_part, sid), line | COPY, mask, start)
            if self.dirty_ways and self.l2_ndirty[sid] > self.dirty_ways:
                self._dirty_limit(sid, line, start)
            return ack
        sset = self.l2_sets[sid]
        v = sset.pop(line, None)
        # the written line's copy in the other partition is stale now: only the writer's partition keeps one
        cb = 256 << sm_part if self.far_copies else 0
        if v is not None:
            if not v & 0xF0:
                self.l2_ndirty[sid] += 1
            sset[line] = (v & 255) | mask | (mask << 4) | cb
        else:
            self._l2_insert(sid, sset, line, mask | (mask << 4) | cb, start)
        if self.dirty_cap:
            self._dirtied(sid, line, start)
        return ack

    def l2_atomic(self, sm_part: int, t: float, line: int, mask: int, ops: int) -> float:
        """An atomic on ``ops`` lane-operations in ``line`` performed at the L2 slice; return result time."""
        sid = self.set_of(line)
        s = sid % self.n_slices
        arr = t + self.xbar_cycles
        free = self.slice_free[s]
        start = arr if arr > free else free
        # the slice's atomic unit: each sector of the request (l2.atomic_sector_cycles; 0: at the read rate, a
        # sector per lane-operation at least) and the request's own read-modify-write (l2.atomic_request_cycles)
        if self.atomic_sector_cycles:
            self.slice_free[s] = start + POPCOUNT[mask] * self.atomic_sector_cycles + self.atomic_request_cycles
        else:
            self.slice_free[s] = start + max(ops, POPCOUNT[mask]) * self.sector_cycles + self.atomic_request_cycles
        wait = start - arr
        self.stats.l2_atom_sectors += POPCOUNT[mask]
        sset = self.l2_sets[sid]
        v = sset.pop(line, None)
        if v is not None and v & 0xF0:
            self.l2_ndirty[sid] -= 1                   # (counted again as it goes back in)
        delay = 0.0
        if v is None or (mask & ~v & 15):
            have = v or 0
            fetch = self.fetch_expand[mask & ~have & 15] & ~have & 15
            delay = self._dram(start, line, fetch, False) + self.dram_latency - self.l2_latency[sm_part][0]
            v = have | fetch
        self._l2_insert(sid, sset, line, (v & 255) | mask | (mask << 4), start)
        if self.partitioned:
            self._drop_copies(sid, line, -1)
            if self.dirty_ways and self.l2_ndirty[sid] > self.dirty_ways:
                self._dirty_limit(sid, line, start)
        if self.dirty_cap:
            self._dirtied(sid, line, start)
        return t + self.atomic_latency + wait + max(0.0, delay)

    def _slice_read(self, sl: int, arr: float, ns: int) -> float:
        """``ns`` sectors read from slice ``sl``, arriving at ``arr``: return when the slice starts on them."""
        free = self.slice_free[sl]
        start = arr if arr > free else free
        self.slice_free[sl] = start + ns * self.sector_cycles
        for f in self.observers:
            f(start, "l2_read", ns * 32)
        return start

    def _after_fill(self, line: int, miss: int, start: float, r: float) -> float:
        """A hit at ``start`` on sectors ``miss`` of ``line`` with its data back at the SM at ``r``: later if the
        line's DRAM fill is still in flight."""
        pend2 = self.l2_pend
        if pend2:
            p = pend2.get(line)
            if p is not None:
                if p[0] <= start:
                    del pend2[line]
                elif p[1] & miss and p[0] > r:
                    r = p[0]
        return r

    def read_partitioned(self, part: int, arr: float, line: int, miss: int, ns: int, sid: int, sl: int) -> float:
        """An L2 read (l2.partitioned) of sectors ``miss`` (``ns`` of them) of ``line`` (home set ``sid``, slice
        ``sl``) by an SM of partition ``part``, at the crossbar's far end at ``arr``; return when its data is back at
        the SM.  A far line is looked up first as the partition's copy; missing there, the home line is read (far
        latency; from DRAM if missing, going in least recently used) and leaves the copy."""
        st = self.stats
        lat = self.l2_latency_by_slice[part][sl]
        xbar = self.xbar_cycles
        far = lat > self.l2_near[part]
        if far:
            csid = self._copy_set(part, sid)
            cset = self.l2_sets[csid]
            cv = cset.pop(line | COPY, None)
            if cv is not None:
                cset[line | COPY] = cv                  # the copy becomes the most recently used of its set
                if not miss & ~cv:
                    start = self._slice_read(csid % self.n_slices, arr, ns)
                    st.l2_rd_hit_sectors += ns
                    # (a copy whose data is still on its way from the home partition is waited for)
                    return self._after_fill(line | COPY, miss, start,
                                            self._after_fill(line, miss, start, self.l2_near[part] + start - xbar))
        start = self._slice_read(sl, arr, ns)
        sset = self.l2_sets[sid]
        if far:
            v = sset.get(line)                          # (a remote read leaves the home line's place as it is)
        else:
            v = sset.pop(line, None)
            if v is not None:
                sset[line] = v
        if v is not None and not miss & ~v:
            st.l2_rd_hit_sectors += ns
            r = self._after_fill(line, miss, start, lat + start - xbar)
        else:
            r = self._l2_miss(part, start, line, miss, sid, v, arr)
            pend2 = self.l2_pend
            if len(pend2) > self._pend_cap[-1]:
                self._pend_cap[-1] = self._prune(pend2, start)
            pend2[line] = (r, miss)
        if far:
            v = self.l2_sets[sid].get(line)
            self._store_bits(csid, line | COPY, (v & 15) if v is not None else miss, start)
            pend2 = self.l2_pend
            if len(pend2) > self._pend_cap[-1]:
                self._pend_cap[-1] = self._prune(pend2, start)
            pend2[line | COPY] = (r, miss)              # the copy holds the data from r on
        return r

    def _l2_miss(self, part: int, start: float, line: int, miss: int, sid: int, v, arr: float) -> float:
        """The rest of an L2 read whose sectors are not all present (``v``: the line's bits, taken out of its set
        ``sid`` (l2.partitioned: left in it), or None): fetch from DRAM, fill the line and put it back as the most
        recently used (l2.partitioned: a remote fill of a new line as the least)."""
        st = self.stats
        sset = self.l2_sets[sid]
        s = sid % self.n_slices
        had = v is not None
        if had:
            st.l2_rd_hit_sectors += POPCOUNT[miss & v & 15]
            m2 = miss & ~v & 15
        else:
            v = 0
            m2 = miss
        fetch = self.fetch_expand[m2] & ~v & 15
        lat = self.l2_latency[part][self.slice_partition[s]]
        delay = self._dram(start + lat * 0.5, line, fetch, False)
        if self.write_sector_cycles:
            # the fill is written into the data array, booked when the miss is (a reservation later than now would
            # hold up the slice's earlier stores): a write side backed up by then delays the data
            nf = POPCOUNT[fetch]
            wait = self._write_port(s, start, nf) - nf * self.write_sector_cycles - start
            if wait > delay:
                delay = wait
        if self.partitioned:
            if had:
                sset[line] = v | fetch                  # (in place: the caller made it recent, or not)
            else:
                self._l2_insert(sid, sset, line, fetch, start, last=self.slice_partition[s] != part)
        else:
            # the requester's partition keeps a copy of the line it brought in (used when the line is far for it)
            cb = 256 << part if self.far_copies else 0
            if v:
                sset[line] = v | fetch | cb
            else:
                self._l2_insert(sid, sset, line, fetch | cb, start)
        return arr - self.xbar_cycles + (start - arr) + self.dram_latency + delay

    @staticmethod
    def _prune(pend: dict, t: float) -> int:
        """Forget the fills of ``pend`` that completed by cycle ``t``; return the size at which to prune next."""
        for line in [k for k, p in pend.items() if p[0] <= t]:
            del pend[line]
        return max(4096, 2 * len(pend))

    def warm_l2(self, lines: Sequence[int], masks: Sequence[int], stores: Sequence[int],
                write_back_at: float | None = None) -> None:
        """Functional warming (``timing.sampling``): each of ``lines``, in order, becomes the most recently used
        of its set with its mask's sectors (a load's widened to ``fetch_bytes`` pieces, a store's dirty), taking
        no time and counting nothing; a set over capacity drops its LRU line, whose dirty sectors go to DRAM at
        ``write_back_at`` (cycles; timed and counted) when given, else nowhere.  With l2.partitioned, warming does
        not know which SM read a line: a line's reader is taken to be of partition ``set_hash(line) % partitions``
        (so that, as in a stream, half the lines are far for their reader and leave a copy)."""
        expand, set_of = self.fetch_expand, self.set_of
        t = write_back_at if write_back_at is not None else 0.0
        cost = write_back_at is not None
        n_part = len(self.mirror)
        for line, m, st in zip(lines, masks, stores):
            s = set_of(line)
            part = set_hash(line) % n_part if self.partitioned else -1
            if part < 0 or part == self.slice_partition[s % self.n_slices]:
                self._store_bits(s, line, (m | m << 4) if st else expand[m], t, cost)
            else:
                csid = self._copy_set(part, s)
                if st:
                    self._store_bits(s, line, m | m << 4, t, cost)
                    self._store_bits(csid, line | COPY, m, t, cost)
                else:
                    if (line | COPY) not in self.l2_sets[csid] and line not in self.l2_sets[s]:
                        self._l2_insert(s, self.l2_sets[s], line, expand[m], t, cost, last=True)
                    self._store_bits(csid, line | COPY, expand[m], t, cost)
            if st:
                if self.dirty_cap:
                    self._dirtied(s, line, 0.0, cost=False)
                elif self.dirty_ways and self.l2_ndirty[s] > self.dirty_ways:
                    self._dirty_limit(s, line, t, cost)
