"""The memory hierarchy below the SM's load/store unit, from the SM's side: its L1 data cache, and the requests
(loads, stores, atomics, shared-memory accesses) it sends on to the L2 slices (``l2.py``) and the DRAM channels
(``dram.py``).

Picture a warp's memory instruction leaving the SM as a list of 128 B lines, each with a mask of the 32 B
sectors it needs (the coalescer's output, computed by the trace).  The SM's L1TEX stage takes ``l1.lines_per_clk``
lines per clock; lines missing in L1 leave for the L2 slice their address hashes to (one per
``l1.miss_lines_per_clk``), across the crossbar.

Timing is by reservation: every unit with a bandwidth keeps the clock at which it is next free
(``*_free``); a request waits ``max(0, free - arrival)`` and pushes ``free`` by its service time.  Latencies
are load-to-use cycles measured by pointer chasing (L1 hit, L2 hit near/far, DRAM), so a lone access sees
exactly the measured latency and a busy one adds its queueing delay.  All times are SM clock cycles.

The L1 is a sectored LRU per SM, kept as a plain dict in LRU order (a line that is touched is taken out and put
back at the end; the victim is the first), which costs less than an OrderedDict's linked list on a hit; the dict is
rebuilt every ``COMPACT_EVERY`` evictions so that finding the first line does not walk over many deleted ones.  The
L1 is write-through without allocation for global stores.  The L2's common hit is inlined in ``load``.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..config import GPUConfig

from ._lines import COMPACT_EVERY, POPCOUNT, MemoryStats, evict_first  # noqa: F401  (MemoryStats: re-exported)
from .l2 import COPY, WRITE_BIN_CYCLES, L2Slices  # noqa: F401  (re-exported for callers and tests)


class MemorySystem(L2Slices):
    """L1s, L2 slices and DRAM channels of one GPU, with their reservation clocks and cache state (the L2 and the
    DRAM in their own rooms: ``l2.L2Slices``, ``dram.DRAMChannels``)."""

    def __init__(self, gpu: GPUConfig, l1_bytes: int, sm_to_slice_latency: list[list[int]],
                 sm_partition: list[int], slice_partition: list[int]):
        self.gpu = gpu
        l1 = gpu.l1
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
        self.copy_dram_extra = l1.copy_dram_extra_cycles
        self.l1_lines_per_clk = float(l1.lines_per_clk)
        self.l1_hit_latency = l1.hit_latency_cycles
        self.line_latency = l1.line_latency_cycles
        self.l1_step = 1.0 / l1.lines_per_clk
        self.cache_global_loads = l1.cache_global_loads
        self._init_l2(gpu, sm_to_slice_latency, sm_partition, slice_partition)
        self._init_dram(gpu)
        # completion observers for bandwidth-over-time pictures: f(t, kind, bytes)
        self.observers: list = []

    # ---- the SM side: L1 ---------------------------------------------------------------------------
    def load(self, sm: int, t: float, lines: Sequence[int], masks: Sequence[int], use_l1: bool,
             sets: Sequence[int], wavefronts: int = 0, n_inst: int = 1, copy: bool = False) -> float:
        """A warp's global/local load of ``lines`` (sector masks ``masks``) issued at ``t``; return when all
        data is back.  ``sets`` holds each line's L2 set (``sets_of``); ``wavefronts``: those of the
        L1's data banks (``MemAccess.wavefronts``; 0: one per line); ``n_inst``: the instructions the lines come
        from (listed one instruction after the other), each a request of its own; ``copy``: an asynchronous copy
        into shared memory, whose lines that miss the L2 land ``l1.copy_dram_extra_cycles`` later."""
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
        partitioned = self.partitioned
        mirror = self.mirror[part] if partitioned else None
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
                        evict_first(self.l1_lines, self.l1_evictions, sm)
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
            l2_rd += ns
            if partitioned:
                # the common hits inlined (a far line's whole copy in this partition, a near line's home line); the
                # rest in read_partitioned (its lookups of the same lines change no order: the line is already the
                # most recently used of its set)
                r = None
                if lat[sl] > near:
                    csid = sid - sl + mirror[sl]
                    cset = l2_sets[csid]
                    cv = cset.pop(line | COPY, None)
                    if cv is not None:
                        cset[line | COPY] = cv
                        if not miss & ~cv:
                            csl = mirror[sl]
                            free = slice_free[csl]
                            start = arr if arr > free else free
                            slice_free[csl] = start + ns * sec_cyc
                            r = near + start - xbar
                            if pend2:
                                r = self._after_fill(line | COPY, miss, start, r)   # (the copy in flight)
                else:
                    sset = l2_sets[sid]
                    v = sset.pop(line, None)
                    if v is not None:
                        sset[line] = v
                        if not miss & ~v:
                            free = slice_free[sl]
                            start = arr if arr > free else free
                            slice_free[sl] = start + ns * sec_cyc
                            r = lat[sl] + start - xbar
                if r is None:
                    r = self.read_partitioned(part, arr, line, miss, ns, sid, sl)
                else:
                    l2_hit += ns
                    if obs:
                        for f in obs:
                            f(start, "l2_read", ns * 32)
                    if pend2:
                        r = self._after_fill(line, miss, start, r)     # (its DRAM fill may be in flight)
            else:
                free = slice_free[sl]
                start = arr if arr > free else free
                slice_free[sl] = start + ns * sec_cyc
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
                        r = self._after_fill(line, miss, start, r)     # (its DRAM fill may be in flight)
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
        if copy and l2_rd > l2_hit:
            ready += self.copy_dram_extra
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

    def shared(self, sm: int, t: float, wavefronts: int, latency: int) -> float:
        """Shared-memory access of ``wavefronts`` wavefronts on the SM's data stage; return data-ready time."""
        free = self.l1_free[sm]
        t0 = t if t > free else free
        self.l1_free[sm] = t0 + wavefronts
        return t0 + wavefronts - 1 + latency
