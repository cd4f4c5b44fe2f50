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
        if scan and steps:
            # a scan shuffles up every element it holds (its running prefix): per step a shuffle, the combine and
            # the select of the lanes below the offset (Triton 3.6's SASS for a 1024-element cumsum on 4 warps:
            # 40 SHFL for 8 elements per thread over 5 steps)
            for _ in range(steps):
                sh = self._emit(OpKind.ALU, Pipe.LSU, n_out * e * per, deps, label="SHFL.UP", line=line)
                c = self._alu(pipe, n_out * e * per, [sh], label, line)
                last = self._alu(Pipe.INT, n_out * e, [c], "FSEL" if dt.is_floating() else "SEL", line)
                deps = [last]
            steps = 0
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
            if scan:                                  # the warps' prefix added to every element
                last = self._alu(pipe, n_out * e * per, [last], label, line)
            # the barrier that lets everyone read the result before the scratch buffer is reused
            self._alu(Pipe.BRANCH, 1, [last], "BAR.SYNC", line)
            self._scratch(int(np.prod(out.shape) if out.shape else 1) * warps * eb)
        if last is None:
            last = self._alu(pipe, n_out, deps, "MOV", line)
        out.src = last
        if scan:
            out.lay = lay
        else:
            out.lay = lay.slice(axis) if out.shape == tuple(s for d, s in enumerate(x.shape) if d != axis) else None

    def network(self, out, x, steps, what):
        """``tl.sort`` / ``tl.topk`` / ``tl.bitonic_merge``: Triton's standard library reshapes the tile into a
        hypercube ``[2] * log2(numel)`` whose default layout puts the 32 lanes on the five lowest bits of an
        element's position, the warps on the next ``log2(num_warps)`` and the registers on the rest.  A
        compare-and-swap round with the partner ``2**j`` apart (``("cas", j)``) costs, per element a thread holds:
        a lane bit, a butterfly shuffle, the compare, the select and two integer ops (the xor trick and the
        direction); a warp bit, the same plus two stores and two loads through shared memory between three
        barriers; a register bit, the compare and the select.  A top-k halving (``("max"|"min", j)``) reduces bit
        j away: a shuffle, a shared-memory round trip or an in-thread max, and a register bit gone halves the
        elements per thread.  Fit to the SASS of Triton 3.6 for sm_90: sorts of 256 and 1024 fp32 on 4 warps (SHFL,
        FSETP, FSEL, STS and LDS within 2%, BAR 27 vs 26), the top-16 of 1024 (SHFL 216 vs 218, FMNMX 31 vs 21)."""
        if self.probe:
            self._note_use([x], C.user_site()[2])
        W = self.W
        pos = list(range(max(0, int(math.log2(max(1, x.numel))))))   # hardware position of each bit, low first
        lane_top = int(math.log2(WARP))
        warp_top = lane_top + int(math.log2(max(1, W)))
        dt = x.dtype
        cmp_pipe, cmp = (Pipe.FP32, "FSETP") if dt.is_floating() else (Pipe.INT, "ISETP")
        eb = max(4, dt.itemsize)
        line = C.user_line()[1]
        last = x.src
        for kind, j in steps:
            e = 2 ** sum(1 for p in pos if p >= warp_top)          # elements per thread
            p = pos[j] if j < len(pos) else warp_top
            deps = [last]
            if p < warp_top:
                if p >= lane_top:
                    s1 = self._shared(OpKind.STORE, 2 * e, eb, deps, "STS", line)
                    b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
                    l1 = self._shared(OpKind.LOAD, 2 * e, eb, [b1], "LDS", line)
                    deps = [self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [l1], label="BAR.SYNC", line=line)]
                    self._scratch(x.numel * eb)
                deps = [self._emit(OpKind.ALU, Pipe.LSU, e, deps, label="SHFL.BFLY", line=line)]
            if kind == "cas":
                if p < warp_top:
                    deps = [self._alu(Pipe.INT, 2 * e, deps, "ISETP+SEL+LOP3", line)]
                c = self._alu(cmp_pipe, e, deps, cmp, line)
                last = self._alu(Pipe.INT, e, [c], "SEL", line)
                if lane_top <= p < warp_top:
                    self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [last], label="BAR.SYNC", line=line)
            else:
                last = self._alu(cmp_pipe if dt.is_floating() else Pipe.INT, max(1, e // 2 if p >= warp_top else e),
                                 deps, "FMNMX" if dt.is_floating() else "IMNMX", line)
                pos.pop(j)
        out.src = last if last is not None else x.src
        out.lay = None
