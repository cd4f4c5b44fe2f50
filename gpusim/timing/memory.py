"""The memory hierarchy below the SM's load/store unit: L1 data caches, the L2 slices and the DRAM channels.

Picture a warp's memory instruction leaving the SM as a list of 128 B lines, each with a mask of the 32 B
sectors it needs (the coalescer's output, computed by the trace).  The SM's L1TEX stage takes one line per
clock (a *wavefront*); lines missing in L1 cross the crossbar to the L2 slice their address hashes to, which
moves ``bytes_per_clk_per_slice`` per clock; sectors missing in L2 are fetched from DRAM in
``fetch_bytes`` pieces by the channel the address interleaves to, where a bank with another row open pays
precharge + activate before the burst can use the channel's bus.

Timing is by reservation: every unit with a bandwidth keeps the clock at which it is next free
(``*_free``); a request waits ``max(0, free - arrival)`` and pushes ``free`` by its service time.  Latencies
are load-to-use cycles measured by pointer chasing (L1 hit, L2 hit near/far, DRAM), so a lone access sees
exactly the measured latency and a busy one adds its queueing delay.  All times are SM clock cycles.

Caches are sectored LRU: an L1 per SM and, for L2, sets of ``l2.ways`` lines in each slice (addresses are
hashed over slices and over the sets of a slice; with ``ways`` 0 a slice is one highly associative set).  L1 is
write-through without allocation for global stores; L2 is write-back: dirty sectors reach DRAM when evicted.  An
L2 set is a plain dict kept in LRU order (a line that is touched is taken out and put back at the end; the victim is the first), which costs less than
an OrderedDict's linked list on a hit; the dict is rebuilt every ``COMPACT_EVERY`` evictions so that finding
the first line does not walk over many deleted ones.  L1s are kept the same way.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..config import GPUConfig

POPCOUNT = [bin(i).count("1") for i in range(256)]
_MIX = 0x9E3779B97F4A7C15
_MIX2 = 0xD6E8FEB86659FD93
COMPACT_EVERY = 512
_MASK64 = (1 << 64) - 1


#: cycles per booking bin of an L2 slice's write side (see MemorySystem._write_port)
WRITE_BIN_CYCLES = 64


def _evict_first(sets: list[dict], evictions: list[int], i: int) -> tuple[int, int]:
    """Take the least recently used line (the dict's first) out of set ``i``; return it and its bits.  Every
    ``COMPACT_EVERY`` evictions the set's dict is rebuilt (``sets[i]`` is then a new dict)."""
    d = sets[i]
    victim = next(iter(d))
    v = d.pop(victim)
    n = evictions[i] + 1
    if n >= COMPACT_EVERY:
        n = 0
        sets[i] = dict(d)
    evictions[i] = n
    return victim, v


def _set_hash(x: int) -> int:
    """A second scramble of a line number, for its set within its slice: its address bits folded (xor-shifts) before
    the multiply, so that consecutive lines land on the sets as a random placement would, unevenly."""
    x ^= (x >> 7) ^ (x >> 17)
    return ((x * _MIX2) & _MASK64) >> 40


def _hash(x: int) -> int:
    """A cheap, deterministic scramble of an address block number (Fibonacci hashing)."""
    return ((x * _MIX) & _MASK64) >> 29


class MemoryStats:
    """Counters the metrics layer reads; names say the unit (sectors are 32 B)."""

    __slots__ = ("l1_ld_sectors", "l1_ld_hit_sectors", "l1_ld_wavefronts", "l1_st_sectors",
                 "l2_rd_sectors", "l2_rd_hit_sectors", "l2_wr_sectors", "l2_atom_sectors",
                 "dram_rd_bytes", "dram_wr_bytes", "dram_row_misses", "dram_bursts",
                 "shared_wavefronts", "shared_ideal_wavefronts")

    def __init__(self) -> None:
        for k in self.__slots__:
            setattr(self, k, 0)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


class MemorySystem:
    """L1s, L2 slices and DRAM channels of one GPU, with their reservation clocks and cache state."""

    def __init__(self, gpu: GPUConfig, l1_bytes: int, sm_to_slice_latency: list[list[int]],
                 sm_partition: list[int], slice_partition: list[int]):
        self.gpu = gpu
        l1, l2, dram = gpu.l1, gpu.l2, gpu.dram
        self.stats = MemoryStats()
        n_sm = gpu.chip.sm_count
        # --- L1 ---
        self.l1_lines: list[dict[int, int]] = [{} for _ in range(n_sm)]   # line -> sector bits, in LRU order
        self.l1_evictions = [0] * n_sm
        # fills in flight: line -> (cycle its data is back at the SM, sectors); a later request for those sectors
        # waits for the fill (the miss-status holding register merges it) instead of reading them at hit latency
        self.l1_pend: list[dict[int, tuple[float, int]]] = [{} for _ in range(n_sm)]
        self.l1_capacity = max(1, l1_bytes // l1.line_bytes)
        self.l1_free = [0.0] * n_sm              # L1TEX stage: busy until (cycles)
        # the L1's miss stage: the next missed line can leave for the L2 at (cycles); a line per l1_miss_step
        self.l1_miss_free = [0.0] * n_sm
        self.l1_miss_step = 1.0 / l1.miss_lines_per_clk if l1.miss_lines_per_clk > 0 else 0.0
        self.l1_lines_per_clk = float(l1.lines_per_clk)
        self.l1_hit_latency = l1.hit_latency_cycles
        self.line_latency = l1.line_latency_cycles
        self.l1_step = 1.0 / l1.lines_per_clk
        self.cache_global_loads = l1.cache_global_loads
        # --- L2 ---
        self.n_slices = l2.slices
        # line -> sector bits | dirty << 4 | (with far_copies) 1 << (8 + p) for each far partition p holding a copy
        # sets: l2_sets[slice + slices * k] for the k-th set of a slice (see set_of)
        per_slice = max(1, int(l2.size_bytes * l2.capacity_fraction) // l2.line_bytes // l2.slices)
        self.sets_per_slice = max(1, per_slice // l2.ways) if l2.ways else 1
        self.l2_capacity = l2.ways if l2.ways and per_slice >= l2.ways else per_slice   # lines per set
        self.l2_sets: list[dict[int, int]] = [{} for _ in range(l2.slices * self.sets_per_slice)]
        self.far_copies = l2.far_copies
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
        self.dirty_cap = l2.dirty_max_bytes // l2.line_bytes // l2.slices if l2.dirty_max_bytes else 0
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
        self.sm_partition = sm_partition
        self.slice_partition = slice_partition
        # latency[sm_partition][slice_partition] (load-to-use, cycles)
        self.l2_latency = sm_to_slice_latency
        # the same per slice: l2_latency_by_slice[sm partition][slice]
        self.l2_latency_by_slice = [[row[p] for p in slice_partition] for row in sm_to_slice_latency]
        # per SM partition: the latency of a far line this partition holds a copy of (never, without far_copies)
        self.l2_near = [row[p] if l2.far_copies else 1 << 30 for p, row in enumerate(sm_to_slice_latency)]
        self.xbar_cycles = max(1, (min(min(r) for r in sm_to_slice_latency) - self.l1_hit_latency) // 2)
        fetch_sectors = l2.fetch_bytes // l2.sector_bytes
        # expand a miss mask to whole fetch blocks (e.g. 64 B = aligned sector pairs)
        self.fetch_expand = [self._expand(m, fetch_sectors) for m in range(16)]
        self.atomic_latency = l2.atomic_latency_cycles
        self.atomic_request_cycles = l2.atomic_request_cycles
        # --- DRAM ---
        self.n_channels = dram.channels
        self.n_banks = dram.banks_per_channel
        self.chan_free = [0.0] * dram.channels
        self.bank_free = [0.0] * (dram.channels * dram.banks_per_channel)
        self.open_row = [-1] * (dram.channels * dram.banks_per_channel)
        # write drain (dram.write_drain): the row each bank's buffered writes last opened
        self.write_drain = dram.write_drain
        self.open_row_w = [-1] * (dram.channels * dram.banks_per_channel)
        # write batches (dram.write_batch_bytes): the batch size and each channel's buffered write-back bytes
        self.write_batch = dram.write_batch_bytes if dram.write_drain else 0
        self.wbuf_bytes = [0] * dram.channels
        self.write_turnaround = dram.write_turnaround_ns * gpu.chip.sm_clock_mhz / 1000.0
        bytes_per_cycle = gpu.dram_bytes_per_cycle() / dram.channels
        self.dram_sector_cycles = l2.sector_bytes / bytes_per_cycle
        self.row_miss_cycles = dram.row_miss_ns * gpu.chip.sm_clock_mhz / 1000.0
        self.dram_latency = dram.latency_cycles
        self.lines_per_block = max(1, dram.interleave_bytes // l2.line_bytes)
        self.blocks_per_row = max(1, dram.row_bytes // dram.interleave_bytes)
        # completion observers for bandwidth-over-time pictures: f(t, kind, bytes)
        self.observers: list = []

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
        return _hash(line) % self.n_slices

    def set_of(self, line: int) -> int:
        """Index in ``l2_sets`` of the set that holds ``line``: its slice ``s`` plus ``slices`` times its set in the
        slice (from the hash bits above those that pick the slice); ``set % slices`` is the slice."""
        s = _hash(line) % self.n_slices
        if self.sets_per_slice == 1:
            return s
        return s + self.n_slices * (_set_hash(line) % self.sets_per_slice)

    # ---- DRAM --------------------------------------------------------------------------------------
    def _dram(self, t: float, line: int, mask: int, write: bool) -> float:
        """Move the sectors of ``mask`` of ``line`` over its channel; return the queueing+row delay."""
        block = line // self.lines_per_block
        ch = _hash(block) % self.n_channels
        local = block // self.n_channels
        bank = ch * self.n_banks + (local // self.blocks_per_row) % self.n_banks
        row = local // (self.blocks_per_row * self.n_banks)
        st = self.stats
        ready = self.bank_free[bank]
        if ready < t:
            ready = t
        rows = self.open_row_w if write and self.write_drain else self.open_row
        if rows[bank] != row:
            rows[bank] = row
            ready += self.row_miss_cycles
            st.dram_row_misses += 1
        if write and self.write_batch:                 # (a batch's row activations overlap across the banks)
            return self._buffer_write(t, ch, mask)
        cf = self.chan_free[ch]
        start = ready if ready > cf else cf
        nsec = POPCOUNT[mask]
        end = start + nsec * self.dram_sector_cycles
        self.chan_free[ch] = end
        self.bank_free[bank] = end
        nbytes = nsec * 32
        st.dram_bursts += 1
        if write:
            st.dram_wr_bytes += nbytes
        else:
            st.dram_rd_bytes += nbytes
        if self.observers:
            for f in self.observers:
                f(end, "dram_write" if write else "dram_read", nbytes)
        return start - t

    def _buffer_write(self, t: float, ch: int, mask: int) -> float:
        """A write-back into channel ``ch``'s write buffer (``dram.write_batch_bytes``): it costs its sectors' bus
        time when the batch drains (the batch's row activations overlap across the banks); a full buffer drains at
        once, taking the channel (and so delaying the reads behind it) for the whole batch and one bus turnaround."""
        nsec = POPCOUNT[mask]
        nbytes = nsec * 32
        st = self.stats
        st.dram_bursts += 1
        st.dram_wr_bytes += nbytes
        buf = self.wbuf_bytes[ch] + nbytes
        if buf < self.write_batch:
            self.wbuf_bytes[ch] = buf
            return 0.0
        cf = self.chan_free[ch]
        end = (t if t > cf else cf) + (buf // 32) * self.dram_sector_cycles + self.write_turnaround
        self.chan_free[ch] = end
        self.wbuf_bytes[ch] = 0
        for f in self.observers:
            f(end, "dram_write", buf)
        return 0.0

    # ---- L2 ----------------------------------------------------------------------------------------
    def _l2_insert(self, s: int, sset: dict, line: int, value: int, t: float) -> None:
        """Put ``line`` (not in the set) at the MRU end of set ``s`` (an index of ``l2_sets``); evict the LRU line if the set is over capacity
        (its dirty sectors go to DRAM at ``t``)."""
        sset[line] = value
        if len(sset) > self.l2_capacity:
            victim, v = _evict_first(self.l2_sets, self.l2_evictions, s)
            dirty = (v >> 4) & 15
            if dirty:
                self._dram(t, victim, dirty, True)
                if self.dirty_cap:
                    self.dirty_order[s % self.n_slices].pop(victim, None)

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

    def sets_of(self, lines) -> np.ndarray:
        """L2 set of each line (vectorized form of ``set_of``)."""
        a = np.asarray(lines, dtype=np.uint64)
        with np.errstate(over="ignore"):
            h = (a * np.uint64(_MIX)) >> np.uint64(29)
            n = np.uint64(self.n_slices)
            out = h % n
            if self.sets_per_slice > 1:
                x = a ^ (a >> np.uint64(7)) ^ (a >> np.uint64(17))
                out += n * (((x * np.uint64(_MIX2)) >> np.uint64(40)) % np.uint64(self.sets_per_slice))
        return out.astype(np.int32)

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
        sset = self.l2_sets[sid]
        v = sset.pop(line, None)
        # the written line's copy in the other partition is stale now: only the writer's partition keeps one
        cb = 256 << sm_part if self.far_copies else 0
        if v is not None:
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
        self.slice_free[s] = start + max(ops, POPCOUNT[mask]) * self.sector_cycles + self.atomic_request_cycles
        wait = start - arr
        self.stats.l2_atom_sectors += POPCOUNT[mask]
        sset = self.l2_sets[sid]
        v = sset.pop(line, None)
        delay = 0.0
        if v is None or (mask & ~v & 15):
            have = v or 0
            fetch = self.fetch_expand[mask & ~have & 15] & ~have & 15
            delay = self._dram(start, line, fetch, False) + self.dram_latency - self.l2_latency[sm_part][0]
            v = have | fetch
        self._l2_insert(sid, sset, line, (v & 255) | mask | (mask << 4), start)
        if self.dirty_cap:
            self._dirtied(sid, line, start)
        return t + self.atomic_latency + wait + max(0.0, delay)

    # ---- the SM side: L1 ---------------------------------------------------------------------------
    def load(self, sm: int, t: float, lines: Sequence[int], masks: Sequence[int], use_l1: bool,
             sets: Sequence[int], wavefronts: int = 0, n_inst: int = 1) -> float:
        """A warp's global/local load of ``lines`` (sector masks ``masks``) issued at ``t``; return when all
        data is back.  ``sets`` holds each line's L2 set (``sets_of``); ``wavefronts``: those of the
        L1's data banks (``MemAccess.wavefronts``; 0: one per line); ``n_inst``: the instructions the lines come
        from (listed one instruction after the other), each a request of its own."""
        n = len(lines)
        if n <= 0:
            return t
        wfs = wavefronts if wavefronts > 0 else n
        free = self.l1_free[sm]
        t0 = t if t > free else free
        lpc = self.l1_lines_per_clk
        step = self.l1_step
        # one request's lines leave for the L2 line_latency apart (its data wavefronts come back one by one); the
        # next request's first line follows the previous request's at the stage's throughput
        extra = 0.0
        iper = 1
        ll = self.line_latency
        if ll:
            lat_step = ll * wfs / n
            if lat_step > step and n > n_inst:
                extra = lat_step - step
                iper = int(n / n_inst + 0.5)
        ready = 0.0
        st = self.stats
        l1_hit = 0
        l2_rd = 0
        l2_hit = 0
        part = self.sm_partition[sm]
        slice_free = self.slice_free
        sec_cyc = self.sector_cycles
        l2_sets = self.l2_sets
        lat = self.l2_latency_by_slice[part]
        near = self.l2_near[part]
        cb = 256 << part
        obs = self.observers
        xbar = self.xbar_cycles
        pend1 = self.l1_pend[sm] if use_l1 else None
        if use_l1:
            # the L1 tag lookup: what misses goes on to L2 (j: the line's place in the warp's request)
            od = self.l1_lines[sm]
            cap = self.l1_capacity
            n_sec = 0
            js, ls, ms, ss = [], [], [], []
            for j, line, m, sl in zip(range(n), lines, masks, sets):
                nsec = POPCOUNT[m]
                n_sec += nsec
                have = od.pop(line, None)
                if have is not None:
                    if pend1:
                        p = pend1.get(line)
                        if p is not None:
                            if p[0] <= t0:
                                del pend1[line]
                            elif p[1] & m and p[0] > ready:
                                ready = p[0]          # hit on a fill in flight: its data comes with the fill
                    miss = m & ~have
                    if not miss:
                        od[line] = have
                        l1_hit += nsec
                        continue
                    l1_hit += nsec - POPCOUNT[miss]
                    od[line] = have | m
                else:
                    miss = m
                    od[line] = m
                    if len(od) > cap:
                        _evict_first(self.l1_lines, self.l1_evictions, sm)
                        od = self.l1_lines[sm]
                js.append(j)
                ls.append(line)
                ms.append(miss)
                ss.append(sl)
            to_l2 = zip(js, ls, ms, ss)
        else:
            n_sec = -1
            to_l2 = zip(range(n), lines, masks, sets)
        pend2 = self.l2_pend
        g = sm // self.merge_sms
        gp = self.grp_pend[g] if self.grp_pend is not None else None
        merged = 0
        mwin = self.merge_window
        nsl = self.n_slices
        mstep = self.l1_miss_step if use_l1 else 0.0
        mfree = self.l1_miss_free[sm]
        for j, line, miss, sid in to_l2:
            # L2 lookup, inlined for the common hit case; the line reaches its slice when the tag stage
            # (lpc lines per clock) has sent it, plus the crossbar
            sl = sid % nsl
            arr = t0 + j * step
            if iper > 1:
                arr += (j % iper) * extra
            if mstep:
                # the miss stage sends one missed line per mstep cycles
                if arr < mfree:
                    arr = mfree
                mfree = arr + mstep
            arr += xbar
            if gp is not None:
                p = gp.get(line)
                if p is not None and p[2] <= arr <= p[2] + mwin and arr < p[0] and not (miss & ~p[1]):
                    # the TPC's port already has these sectors on their way: the request merges with it
                    merged += POPCOUNT[miss]
                    if pend1 is not None:
                        pend1[line] = (p[0], miss)
                    if p[0] > ready:
                        ready = p[0]
                    continue
            ns = POPCOUNT[miss]
            free = slice_free[sl]
            start = arr if arr > free else free
            slice_free[sl] = start + ns * sec_cyc
            l2_rd += ns
            if obs:
                for f in obs:
                    f(start, "l2_read", ns * 32)
            sset = l2_sets[sid]
            v = sset.pop(line, None)
            if v is not None and not (miss & ~v):     # (miss has sector bits only; v's high bits: dirty)
                l2_hit += ns
                r = lat[sl]
                if r > near:
                    # a far line: near once this partition holds a copy, which its first read leaves there
                    if v & cb:
                        r = near
                    else:
                        v |= cb
                sset[line] = v                         # the line becomes the most recently used
                r += start - xbar
                if pend2:
                    p = pend2.get(line)
                    if p is not None:
                        if p[0] <= start:
                            del pend2[line]
                        elif p[1] & miss and p[0] > r:
                            r = p[0]                   # its DRAM fill is still in flight
            else:
                r = self._l2_miss(part, start, line, miss, sid, v, arr)
                if len(pend2) > self._pend_cap[-1]:
                    self._pend_cap[-1] = self._prune(pend2, start)
                pend2[line] = (r, miss)
            if pend1 is not None:
                if len(pend1) > self._pend_cap[sm]:
                    self._pend_cap[sm] = self._prune(pend1, t0)
                pend1[line] = (r, miss)
            if gp is not None:
                if len(gp) > self._grp_cap[g]:
                    self._grp_cap[g] = self._prune(gp, t0)
                gp[line] = (r, miss, arr)
            if r > ready:
                ready = r
        if mstep:
            self.l1_miss_free[sm] = mfree
        if n_sec < 0:
            n_sec = l2_rd + merged
        st.l1_ld_wavefronts += n
        st.l1_ld_sectors += n_sec
        st.l1_ld_hit_sectors += l1_hit
        st.l2_rd_sectors += l2_rd
        st.l2_rd_hit_sectors += l2_hit
        # tag stage: lpc lines per clock; data stage: one wavefront of the banks per clock, at least one per 128 B
        busy = n / lpc
        if n_sec > 4 * busy:
            busy = n_sec / 4
        if wfs > busy:
            busy = wfs
        if busy < 1:
            busy = 1
        self.l1_free[sm] = t0 + busy
        done = t0 + busy - 1 + self.l1_hit_latency
        if ll and wfs > n_inst:
            # the last request enters once the stage has taken the others, and its wavefronts come back one by one
            wper = wfs / n_inst
            d2 = t0 + busy * (1 - 1 / n_inst) + (wper - 1) * self.line_latency + self.l1_hit_latency
            if d2 > done:
                done = d2
        return done if done > ready else ready

    @staticmethod
    def _prune(pend: dict, t: float) -> int:
        """Forget the fills of ``pend`` that completed by cycle ``t``; return the size at which to prune next."""
        for line in [k for k, p in pend.items() if p[0] <= t]:
            del pend[line]
        return max(4096, 2 * len(pend))

    def _l2_miss(self, part: int, start: float, line: int, miss: int, sid: int, v, arr: float) -> float:
        """The rest of an L2 read whose sectors are not all present (``v``: the line's bits, taken out of its set
        ``sid``, or None): fetch from DRAM, fill the line and put it back as the most recently used."""
        st = self.stats
        sset = self.l2_sets[sid]
        s = sid % self.n_slices
        if v is not None:
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
        # the requester's partition keeps a copy of the line it brought in (used when the line is far for it)
        cb = 256 << part if self.far_copies else 0
        if v:
            sset[line] = v | fetch | cb
        else:
            self._l2_insert(sid, sset, line, fetch | cb, start)
        return arr - self.xbar_cycles + (start - arr) + self.dram_latency + delay

    def store(self, sm: int, t: float, lines: Sequence[int], masks: Sequence[int],
              prev: dict | None = None) -> tuple[float, dict | None]:
        """A warp's global store: L1 write-through without allocation (a cached copy is updated).  Returns when the
        SM is free of it (the warp cannot exit before) and the sectors it wrote per line: ``prev``, those of the
        warp's store just before this one, go out merged with it (sectors both wrote reach the L2 once)."""
        n = len(lines)
        if n <= 0:
            return t, prev
        free = self.l1_free[sm]
        t0 = t if t > free else free
        self.l1_free[sm] = t0 + n
        st = self.stats
        part = self.sm_partition[sm]
        od = self.l1_lines[sm]
        ack = t0 + n
        # a warp's back-to-back narrow stores to the same sectors leave the SM as one write (a thread's consecutive
        # elements, STG.E.32 x 4 over the same 16 sectors of a warp's lines: benchmarks/device/store_merge.py
        # s32x4 reaches the L2 as 976K sector writes against 787K for whole sectors and 3.1M unmerged; a record's two
        # 8-byte fields written back, STG.E.64 x 2, merge as well: records/ncu_rmw.json rmw_rec_* 1,049K L1 store
        # sectors reach the L2 as 527K, nb_montecarlo's generator states 1,000K as 504K (lts__t_sectors_op_write /
        # 1.5, the far partition counted twice); store_merge.py's volatile s64x2 did not, 1.34M against 1.57M, and
        # no front end here emits volatile stores. So the caller passes ``prev`` for stores of 8 bytes a lane or less)
        cur: dict = {}
        for j, line, m in zip(range(n), lines, masks):
            st.l1_st_sectors += POPCOUNT[m]
            have = od.get(line)
            if have is not None:
                od[line] = have | m
            seen = cur.get(line, 0) | (prev.get(line, 0) if prev else 0)
            cur[line] = cur.get(line, 0) | m
            new = m & ~seen
            if not new:
                continue            # merged: these sectors reach the L2 in one write with the store before
            a = self.l2_write(part, t0 + j, line, new)
            if a > ack:
                ack = a
        return ack, cur

    def atomic(self, sm: int, t: float, lines: Sequence[int], masks: Sequence[int], lanes: int) -> float:
        """A warp's global atomic on ``lanes`` lanes, performed at the L2 slices; return when results are back."""
        n = len(lines)
        if n <= 0:
            return t
        free = self.l1_free[sm]
        t0 = t if t > free else free
        self.l1_free[sm] = t0 + n
        part = self.sm_partition[sm]
        ready = t0
        per_line = max(1, lanes // n)
        for j, line, m in zip(range(n), lines, masks):
            self.l1_lines[sm].pop(line, None)
            r = self.l2_atomic(part, t0 + j, line, m, per_line)
            if r > ready:
                ready = r
        return ready

    def warm_l2(self, lines: Sequence[int], masks: Sequence[int], stores: Sequence[int],
                write_back_at: float | None = None) -> None:
        """Functional warming (``timing.sampling``): each of ``lines``, in order, becomes the most recently used
        of its set with its mask's sectors (a load's widened to ``fetch_bytes`` pieces, a store's dirty), taking
        no time and counting nothing; a set over capacity drops its LRU line, whose dirty sectors go to DRAM at
        ``write_back_at`` (cycles; timed and counted) when given, else nowhere."""
        sets, cap, expand, set_of = self.l2_sets, self.l2_capacity, self.fetch_expand, self.set_of
        for line, m, st in zip(lines, masks, stores):
            s = set_of(line)
            sset = sets[s]
            v = sset.pop(line, 0)
            sset[line] = v | ((m | m << 4) if st else expand[m])
            if len(sset) > cap:
                victim, vv = _evict_first(sets, self.l2_evictions, s)
                if (vv >> 4) & 15:
                    if write_back_at is not None:
                        self._dram(write_back_at, victim, (vv >> 4) & 15, True)
                    if self.dirty_cap:
                        self.dirty_order[s % self.n_slices].pop(victim, None)
            if st and self.dirty_cap:
                self._dirtied(s, line, 0.0, cost=False)

    def shared(self, sm: int, t: float, wavefronts: int, latency: int) -> float:
        """Shared-memory access of ``wavefronts`` wavefronts on the SM's data stage; return data-ready time."""
        free = self.l1_free[sm]
        t0 = t if t > free else free
        self.l1_free[sm] = t0 + wavefronts
        return t0 + wavefronts - 1 + latency
