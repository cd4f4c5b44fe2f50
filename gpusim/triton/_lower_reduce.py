"""Reductions and scans, as Triton's ``ReduceOpToLLVM`` / ``ScanOpToLLVM`` lower them.

In-thread combines of the elements a thread holds along the axis, ``log2(lanes)`` butterfly shuffle + combine
steps within a warp, and across warps a round trip through shared memory (partials stored, barrier, read back
by their owner warps and shuffled, the result stored, barrier, read).  ``sum(a * b)`` contracts its in-thread
adds with the products into FFMA.  Units: instructions per thread, bytes of scratch.
"""
from __future__ import annotations

import math

import numpy as np

from ..trace import OpKind, Pipe
from . import _core as C
from . import costs as K
from ._coalescing import shared_ideal
from ._layouts import WARP, default_layout


class ReduceLowering:
    """``Recorder``'s lowering of reductions and scans."""

    def reduce(self, out, x, axis, kind, scan=False):
        rsite = C.user_site()[2]
        if self.probe:
            self._note_use([x], rsite)
            if kind == "add" and not scan and x.dtype.is_floating() and x.bk is not None and x.bk[0] == "mul" \
                    and x.bk[1] is not None:
                # sum(a * b): the in-thread adds contract with the products into FFMAs
                self.facts.get(x.bk[1]).setdefault("contracted_users", set()).add(rsite)
                self.facts.get(rsite)["contract"] = True
        contract = bool((self.facts.sites.get(rsite) or {}).get("contract"))
        lay = x.lay if (x.lay is not None and x.lay.shape == x.shape) else None
        if lay is None:
            lay = default_layout(x.shape, self.W)
            if self.probe:
                self._anchor_input(x, lay, x.shape)
        e = lay.ept_dim[axis]
        lanes = lay.lanes[axis]
        warps = lay.warps[axis]
        n_out = max(1, lay.ept // max(1, e))
        dt = x.dtype
        if dt.is_floating() and kind == "add":
            self.stats.flops += (x.numel - max(1, out.numel)) * (self._active_warps() // self.W)
        per = 2 if kind in ("argmax", "custom") else 1
        if dt.is_floating():
            pipe, label = (Pipe.FP32, "FADD") if kind == "add" else (Pipe.INT, "FMNMX")
            if dt is C.float64:
                pipe, label = Pipe.FP64, "DADD"
        else:
            pipe, label = Pipe.INT, ("IADD3" if kind == "add" else "IMNMX")
        if kind == "combine":                         # a user combine function: one instruction per application
            pipe = Pipe.FP64 if dt is C.float64 else Pipe.FP32 if dt.is_floating() else Pipe.INT
            label = "COMBINE"
        line = C.user_line()[1]
        if scan:
            self._scan(out, x, axis, kind, lay, pipe, label, per, line)
            return
        deps = [x.src]
        last = None
        if e > 1:
            if contract:
                first = self._alu(Pipe.FP32, n_out, deps, "FMUL", line)
                last = self._alu(Pipe.FP32, (e - 1) * n_out, [first], "FFMA", line)
            else:
                last = self._alu(pipe, (e - 1) * n_out * per, deps, label, line)
            deps = [last]
        steps = int(math.log2(lanes)) if lanes > 1 else 0
        for _ in range(steps):
            sh = self._emit(OpKind.ALU, Pipe.LSU, n_out * per, deps, label="SHFL.BFLY", line=line)
            last = self._alu(pipe, n_out * per, [sh], label, line)
            deps = [last]
        if warps > 1:
            eb = max(4, dt.itemsize)
            if not self._reduce_setup:
                self._reduce_setup = True
                self._cost(K.REDUCE_SETUP, 1, (), line)
            # the partials are read back, reduced and written by the threads that own them: the first
            # ceil(partials / 32) warps (tl_softmax: 2.5 shared loads per warp for two reductions over 4 warps)
            owners = max(1, min(self.W, -(-(n_out * warps) // WARP)))
            s1 = self._shared(OpKind.STORE, n_out, eb, deps, "STS", line)
            b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
            l1 = self._shared(OpKind.LOAD, n_out, eb, [b1], "LDS", line, warps_on=owners)
            deps = [l1]
            for _ in range(int(math.log2(warps))):
                sh = self._emit(OpKind.ALU, Pipe.LSU, n_out * per, deps, label="SHFL.BFLY", line=line)
                c = self._alu(pipe, n_out * per, [sh], label, line)
                deps = [c]
            s2 = self._shared(OpKind.STORE, n_out, eb, deps, "STS", line, warps_on=owners)
            b2 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s2], label="BAR.SYNC", line=line)
            last = self._shared(OpKind.LOAD, n_out, eb, [b2], "LDS", line)
            # the barrier that lets everyone read the result before the scratch buffer is reused
            self._alu(Pipe.BRANCH, 1, [last], "BAR.SYNC", line)
            self._scratch(int(np.prod(out.shape) if out.shape else 1) * warps * eb)
        if last is None:
            last = self._alu(pipe, n_out, deps, "MOV", line)
        out.src = last
        out.lay = lay.slice(axis) if out.shape == tuple(s for d, s in enumerate(x.shape) if d != axis) else None

    def _scan(self, out, x, axis, kind, lay, pipe, label, per, line):
        """An inclusive scan along ``axis`` (cumsum, cumprod, associative_scan), as ScanOpToLLVM lowers it: each
        contiguous run of a thread's elements scanned in registers, the runs' totals scanned across the lanes
        (per step: shuffle up, combine, select the lanes past the offset), the lanes' prefix combined into every
        element; across warps, the warps' totals through shared memory and their prefix combined in again.  For
        1024 fp32 on 4 warps (8 per thread in 2 runs of 4): about 60 instructions per thread, as the H100 records
        have (records/ncu_sort_scan.json cumsum_n1024_r8192: 91 warp instructions per warp with the loads and
        stores); registers: half the elements per thread per scanned operand (22 and 31 measured for one and two
        operands)."""
        e = lay.ept_dim[axis]
        lanes, warps = lay.lanes[axis], lay.warps[axis]
        n_out = max(1, lay.ept // max(1, e))
        runs = max(1, e // max(1, lay.contig(axis)))
        deps = [x.src]
        last = None
        if e > runs:
            last = self._alu(pipe, (e - runs) * n_out * per, deps, label, line)
            deps = [last]
        for _ in range(int(math.log2(lanes)) if lanes > 1 else 0):
            sh = self._emit(OpKind.ALU, Pipe.LSU, runs * n_out * per, deps, label="SHFL.UP", line=line)
            c = self._alu(pipe, runs * n_out * per, [sh], label, line)
            last = self._alu(Pipe.INT, runs * n_out, [c], "SEL", line)
            deps = [last]
        if lanes > 1 or runs > 1:
            last = self._alu(pipe, e * n_out * per, deps, label, line)      # the prefix into every element
            deps = [last]
        if warps > 1:
            eb = max(4, x.dtype.itemsize)
            s1 = self._shared(OpKind.STORE, runs * n_out, eb, deps, "STS", line)
            b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
            l1 = self._shared(OpKind.LOAD, runs * n_out, eb, [b1], "LDS", line)
            c = self._alu(pipe, (warps - 1) * runs * n_out * per, [l1], label, line)
            last = self._alu(pipe, e * n_out * per, [c], label, line)
            self._alu(Pipe.BRANCH, 1, [last], "BAR.SYNC", line)
            self._scratch(max(1, x.numel // max(1, x.shape[axis])) * warps * runs * eb)
        if last is None:
            last = self._alu(pipe, n_out, deps, "MOV", line)
        r = self._region()
        r.mfn = max(r.mfn, (e // 2) * (2 if kind == "combine" else 1))
        out.src = last
        out.lay = lay

    def network(self, out, x, steps):
        """``tl.sort`` / ``tl.topk`` / ``tl.bitonic_merge``: Triton's standard library reshapes the tile into a
        hypercube ``[2] * log2(numel)`` whose default layout puts the 32 lanes on the five lowest bits of an
        element's position, the warps on the next ``log2(num_warps)`` and the registers on the rest.  A
        compare-and-swap round with the partner ``2**j`` apart (``("cas", j)``) costs, per element a thread holds:
        a lane bit, a butterfly shuffle, the compare, the select and an integer op (the xor trick); a warp bit, the
        same plus a store and a load through shared memory between three barriers, each thread's elements
        side by side there, so a warp's access is an ``e``-way bank conflict for ``e`` elements per thread; a
        register bit, the compare and the select.  A top-k halving (``("max"|"min", j)``) reduces bit j away: a
        shuffle, a shared-memory round trip or an in-thread max, and a register bit gone halves the elements per
        thread.  Instructions from Triton 3.6's SASS for sm_90 (sorts of 256 and 1024 fp32 on 4 warps); the shared
        accesses and their conflicts from the H100 records (records/ncu_sort_scan.json: 2.5, 8.5 and 16.5
        wavefronts per access for 2, 8 and 16 elements per thread); registers ``11 + e`` math elements."""
        if self.probe:
            self._note_use([x], C.user_site()[2])
        W = self.W
        pos = list(range(max(0, int(math.log2(max(1, x.numel))))))   # hardware position of each bit, low first
        lane_top = int(math.log2(WARP))
        warp_top = lane_top + int(math.log2(max(1, W)))
        dt = x.dtype
        cmp = "FSETP" if dt.is_floating() else "ISETP"         # the alu pipe, as FSEL and FMNMX
        eb = max(4, dt.itemsize)
        line = C.user_line()[1]
        last = x.src
        e0 = 2 ** sum(1 for p in pos if p >= warp_top)
        r = self._region()
        r.mfn = max(r.mfn, 11 + e0)
        crossed = False                                             # a round exchanged across warps
        for kind, j in steps:
            e = 2 ** sum(1 for p in pos if p >= warp_top)          # elements per thread
            p = pos[j] if j < len(pos) else warp_top
            deps = [last]
            if p < warp_top:
                if p >= lane_top:
                    # a round's exchange hits each bank e times; a halving's partials go through conflict-free
                    deps = self._network_exchange(e, eb, deps, line, conflicts=kind == "cas")
                    self._scratch(x.numel * eb)
                    crossed |= kind == "cas"
                deps = [self._emit(OpKind.ALU, Pipe.LSU, e, deps, label="SHFL.BFLY", line=line)]
            if kind == "cas":
                if p < warp_top:
                    deps = [self._alu(Pipe.INT, e, deps, "LOP3", line)]
                c = self._alu(Pipe.INT, e, deps, cmp, line)
                last = self._alu(Pipe.INT, e, [c], "SEL", line)
                if lane_top <= p < warp_top:
                    self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [last], label="BAR.SYNC", line=line)
            else:
                last = self._alu(Pipe.INT, max(1, e // 2 if p >= warp_top else e),
                                 deps, "FMNMX" if dt.is_floating() else "IMNMX", line)
                pos.pop(j)
        if crossed:
            # the tile enters and leaves the hypercube layout through shared memory once (its elements spread over
            # the warps): one more exchange (the records: e more accesses per warp than the rounds' for 2 and 8
            # elements per thread, 3e for 16)
            self._network_exchange(e0, eb, [last], line)
        out.src = last if last is not None else x.src
        out.lay = None

    def _network_exchange(self, e, eb, deps, line, conflicts=True):
        """One exchange of a thread's ``e`` elements through shared memory: a store, a barrier, a load, a barrier.
        The thread's elements lie side by side, so a warp's access hits each bank ``e`` times (4-byte elements):
        e + 1/2 wavefronts per access, as the H100 records have (2.5, 8.5, 16.5 for e = 2, 8, 16)."""
        for kind, label in ((OpKind.STORE, "STS"), (OpKind.LOAD, "LDS")):
            m = shared_ideal(self._n_warps(), e, eb, self._active_warps())
            if conflicts:
                m.wavefronts = (m.wavefronts * min(WARP, e * eb // 4) + e // 2).astype(m.wavefronts.dtype)
            op = self._shared(kind, e, eb, deps, label, line, mem=m)
            deps = [self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [op], label="BAR.SYNC", line=line)]
        return deps
