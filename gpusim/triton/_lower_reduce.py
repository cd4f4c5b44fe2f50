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
        if scan:
            out.lay = lay
        else:
            out.lay = lay.slice(axis) if out.shape == tuple(s for d, s in enumerate(x.shape) if d != axis) else None

    def network(self, out, x, rounds, what):
        """``tl.sort`` / ``tl.topk`` / ``tl.bitonic_merge``: compare-and-swap rounds along the last dimension, each
        ``(bit, live)``: element i meets i ^ 2**bit among the ``live`` elements of the dimension still in play.
        Where the partner lives decides the cost, by the layout: the bits of a thread's contiguous elements (and
        those past one pass of the CTA, which wrap into the same thread) are compare + select in registers; lane
        bits add a butterfly shuffle per element (and the XOR that finds the partner); warp bits a round trip
        through shared memory between two barriers.  Per element per round: 2-3 ALU instructions."""
        if self.probe:
            self._note_use([x], C.user_site()[2])
        lay = x.lay if (x.lay is not None and x.lay.shape == x.shape) else None
        if lay is None:
            lay = default_layout(x.shape, self.W)
            if self.probe:
                self._anchor_input(x, lay, x.shape)
        d = len(x.shape) - 1
        n = max(1, x.shape[d])
        t_bits = int(math.log2(max(1, lay.contig(d))))
        l_bits = t_bits + int(math.log2(max(1, lay.lanes[d])))
        w_bits = l_bits + int(math.log2(max(1, lay.warps[d])))
        dt = x.dtype
        cmp_pipe, cmp = (Pipe.FP32, "FSETP") if dt.is_floating() else (Pipe.INT, "ISETP")
        eb = max(4, dt.itemsize)
        line = C.user_line()[1]
        last = x.src
        for bit, live in rounds:
            e = max(1, lay.ept * live // n)           # elements per thread still in play
            deps = [last]
            if t_bits <= bit < l_bits:
                sh = self._emit(OpKind.ALU, Pipe.LSU, e, deps, label="SHFL.BFLY", line=line)
                deps = [self._alu(Pipe.INT, e, [sh], "LOP3", line)]
            elif l_bits <= bit < w_bits:
                s1 = self._shared(OpKind.STORE, e, eb, deps, "STS", line)
                b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
                l1 = self._shared(OpKind.LOAD, e, eb, [b1], "LDS", line)
                deps = [self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [l1], label="BAR.SYNC", line=line)]
                self._scratch(int(np.prod(x.shape)) * eb)
            c = self._alu(cmp_pipe, e, deps, cmp, line)
            last = self._alu(Pipe.INT, e, [c], "SEL", line)
        out.src = last if last is not None else x.src
        out.lay = lay if out.shape == x.shape else None
