"""Tensor descriptors on Hopper: TMA bulk copies (``tt.descriptor_load`` / ``tt.descriptor_store``).

Triton 3.6 lowers a descriptor load to ``async_tma_copy_global_to_local``: one elected thread of the CTA
(UTMALDG) asks the TMA unit to copy the whole box from global memory into a shared buffer, the expected byte
count is armed on an mbarrier (SYNCS.ARRIVE.TRANS64), and every warp waits on that mbarrier before the first use
(SYNCS.PHASECHK.TRANS64.TRYWAIT).  No thread computes an address.  A box feeding ``tl.dot`` is read by wgmma
straight from shared memory; any other use reads it into registers (ld.shared).  In a runtime loop with
``num_stages >= 2`` the pipeliner multi-buffers the boxes exactly like cp.async copies (``_lower_loops``): the copy
for iteration i + num_stages - 1 is issued in iteration i, and the loads of one iteration share one mbarrier.
A descriptor store writes the tile to a shared staging buffer (all threads, STSM), fences it for the async proxy,
and one thread issues the bulk shared -> global copy (UTMASTG), fire-and-forget.

In the trace: the copy is an ASYNC_COPY of one instruction, issued by warp 0 of each CTA with one lane, whose
requests are the 128 B lines (and 32 B sectors) of the box's in-bounds rows (out-of-bounds parts are neither
read nor written by the TMA unit); the mbarrier wait is an ASYNC_WAIT on it followed by a CTA barrier (every
warp is released when the data has landed).  ``bytes_per_lane`` 16 marks the requests as bypassing L1, so the
engine streams them to L2/DRAM through the SM's data path (one 128 B wavefront per clock) -- not limited by
per-warp LSU issue.  A store is a STORE of one instruction by warp 0 with the box's lines.

A descriptor made in the kernel (``tl.make_tensor_descriptor``): thread 0 fills the 128 B tensormap field by field
while the other warps step over the guards (``costs.TMA_MAKE_DESC`` / ``_SKIP``), warp 0 copies it to the global
scratch with a 32-lane ATOMG whose round trip the fence waits for (an ATOMIC op, so the engine times it), and the
first copy through it waits for the TMA unit to read the tensormap back from global memory (a LOAD of that line,
no instruction).  A pipelined loop of TMA loads initializes one mbarrier per stage before it and invalidates them
after it (``costs.MBARRIER_*``).  The TMA unit's traffic passes no LSU pipe: Nsight's l1tex LSU requests and
sectors count none of it (``metrics.NOT_LSU``).
"""
from __future__ import annotations

import math

import numpy as np

from .. import trace as T
from ..trace import MemAccess, OpKind, Pipe, Space
from . import _core as C
from . import costs as K
from ._coalescing import _empty_access
from ._layouts import WARP, blocked

TMA_BYTES = 16           # granule of a TMA box row (its inner dimension is a multiple of 16 bytes)


class TmaLowering:
    """``Recorder``'s lowering of tensor descriptors (``_ops_descriptor``)."""

    def _one_warp(self, op, lanes):
        if op is not None:
            op.lanes = (lanes,) + (0,) * (self.W - 1)
        return op

    def desc_make(self, desc, deps):
        line = C.user_line()[1]
        n0 = len(self.ops)
        src = [getattr(x, "src", None) for x in deps]
        last = self._cost(K.TMA_MAKE_DESC, 1, src, line)
        desc.scratch = self._scratch_access()
        at = self._emit(OpKind.ATOMIC, Pipe.LSU, 1, [last], desc.scratch, label="ATOMG.E.EXCH.STRONG.GPU", line=line)
        last = self._cost(K.TMA_MAKE_DESC_FENCE, 1, [at], line)
        for op in self.ops[n0:]:
            self._one_warp(op, WARP)
        n1 = len(self.ops)
        skip = self._cost(K.TMA_MAKE_DESC_SKIP, 1, src, line) if self.W > 1 else None
        for op in self.ops[n1:]:
            op.lanes = (0,) + (WARP,) * (self.W - 1)
        desc.src = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [x for x in (last, skip) if x is not None],
                              label="BAR.SYNC", line=line)

    def _scratch_access(self) -> MemAccess:
        """Warp 0's copy of a descriptor made in the kernel to the global scratch: one 128 B line per program (32
        lanes x 4 B), the programs' own (``costs.TMA_SCRATCH_*``), the n-th descriptor of a program at n x 128 B."""
        P, W = self.P, self.W
        self.n_desc += 1
        k = self.n_desc
        if self.probe:
            return _empty_access(P * W, 4)
        pid = np.asarray(C.ST.pids, np.int64)
        g = C.ST.grid
        lin = pid[:, 0] + g[0] * (pid[:, 1] + g[1] * pid[:, 2])
        base = K.TMA_SCRATCH_BASE + lin * K.TMA_SCRATCH_PER_PROGRAM + (k * 128) % K.TMA_SCRATCH_PER_PROGRAM
        addr = base[:, None, None] + 4 * np.arange(WARP, dtype=np.int64)[None, None, :]
        acc = T.coalesce_global(addr, 4)
        cnt = np.zeros((P, W), np.int64)
        cnt[:, 0] = np.diff(acc.ptr)
        ptr = np.zeros(P * W + 1, np.int64)
        np.cumsum(cnt.reshape(-1), out=ptr[1:])
        return MemAccess(space=Space.GLOBAL, bytes_per_lane=4, bytes_requested=acc.bytes_requested, ptr=ptr,
                         line=acc.line, smask=acc.smask)

    def tma_access(self, desc, o, m) -> MemAccess:
        """The requests of one box per program of the chunk, all in warp 0 of its CTA: the 16-byte pieces of the
        box's in-bounds rows coalesced into 128 B lines and 32 B sectors."""
        shape = tuple(desc.block_shape)
        P, W = self.P, self.W
        eb = desc.dtype.itemsize
        buf = desc.base.buf
        full = (P,) + shape
        cpe = max(1, TMA_BYTES // eb)
        if shape[-1] % cpe:
            cpe = 1
        oc = np.broadcast_to(o, full)[..., ::cpe]
        addr = buf.base_addr + oc.astype(np.int64) * eb
        ok = None
        if m is not None:
            mf = np.broadcast_to(m, full)
            ok = mf.reshape(full[:-1] + (shape[-1] // cpe, cpe)).any(axis=-1)
        a = C.ST.active()
        if a is not None:
            am = a.reshape((P,) + (1,) * len(shape))
            ok = am if ok is None else (ok & am)
        if ok is not None:
            addr = np.where(ok, addr, -1)
        acc = T.coalesce_global(addr.reshape(P, 1, -1), cpe * eb)
        cnt = np.zeros((P, W), np.int64)
        cnt[:, 0] = np.diff(acc.ptr)
        ptr = np.zeros(P * W + 1, np.int64)
        np.cumsum(cnt.reshape(-1), out=ptr[1:])
        return MemAccess(space=Space.GLOBAL, bytes_per_lane=TMA_BYTES, bytes_requested=acc.bytes_requested,
                         ptr=ptr, line=acc.line, smask=acc.smask)

    @staticmethod
    def _offset_deps(offsets, desc):
        return [x.src for x in offsets if isinstance(x, C.tensor)] + [desc.src]

    def desc_load(self, out, desc, offsets, shape, o, m):
        file, line, site = C.user_site()
        f = self.facts.get(site)
        eb = desc.dtype.itemsize
        tile_bytes = int(np.prod(shape)) * eb
        lp = self.in_runtime_loop()
        pipelined = lp is not None and lp.stages >= 2
        if self.probe and pipelined:
            f["loop"] = lp.key
            self.facts.get(lp.key)["pipelined"] = True
        tag = lp if pipelined else None
        issue = self._cost(K.TMA_ISSUE, 1, self._offset_deps(offsets, desc), line, tag_loop=tag)
        if getattr(desc, "scratch", None) is not None:
            # the first copy through a descriptor made in the kernel: the TMA unit reads its 128 B tensormap from
            # global memory (the fence invalidated its descriptor cache) before it can move the box
            fetch = self._emit(OpKind.LOAD, Pipe.LSU, 0, [issue], desc.scratch, label="(tensormap fetch)",
                               line=line)
            self._one_warp(fetch, 1)
            if tag is not None:
                fetch.loop, fetch.it = tag, len(tag.iters) - 1     # it moves with the copy into the prologue
            desc.scratch = None
            issue = fetch
        mem = _empty_access(self._n_warps(), TMA_BYTES) if self.probe else self.tma_access(desc, o, m)
        cp = self._emit(OpKind.ASYNC_COPY, Pipe.LSU, 1, [issue], mem, label=f"UTMALDG.{len(shape)}D", line=line)
        self._one_warp(cp, 1)
        it = len(lp.iters) - 1 if lp is not None else -1
        if pipelined:
            cp.loop, cp.it = lp, it
            lp.has_copies = True
        if pipelined and lp.tma_it == it and lp.tma_wait is not None:
            wait = lp.tma_wait               # the loads of one iteration arrive on one mbarrier: one wait
            wait.deps.append(cp)
        else:
            wait = self._emit(OpKind.ASYNC_WAIT, Pipe.LSU, 0, [cp], label="SYNCS.PHASECHK.TRANS64.TRYWAIT",
                              line=line)
            self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [wait], label="SYNCS.PHASECHK.TRANS64.TRYWAIT (all warps)",
                       line=line)
            if pipelined:
                lp.tma_it, lp.tma_wait = it, wait
                lp.tma = True
                self._cost(K.TMA_WAIT, 1, (), line)
        out.src = wait
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        if not self.probe:
            self.stats.mem_sites[key] = {"op": "descriptor_load", "tma": True, "box": list(shape),
                                         "bytes": tile_bytes, "pipelined": pipelined}
        bufs = lp.stages if pipelined else 1
        for outer in self.loops[:-1]:
            b = self.facts.sites.get(outer.key, {}).get("tma_store_bytes")
            if b:
                self._region().staging[("tma_store", outer.key)] = b
        if not pipelined:
            f["tma_bytes"] = tile_bytes + K.MBARRIER_BYTES
            f["tma_region"] = lp.key if lp is not None else None
        r = self._region()
        r.pipe[site] = bufs * tile_bytes
        r.pipe[(lp.key if pipelined else site, "mbarrier")] = bufs * K.MBARRIER_BYTES
        f["smem_box"] = bool(f.get("dot_operand"))
        if not f.get("dot_operand") and shape:
            # consumed by math, not by the tensor cores: read from the shared buffer into registers
            numel = int(np.prod(shape))
            vec = max(1, min(16 // eb, numel // (WARP * self.W), shape[-1]))
            spt = [1] * len(shape)
            spt[-1] = vec
            lay = blocked(tuple(shape), tuple(spt), tuple(range(len(shape) - 1, -1, -1)), self.W)
            n_ld = max(1, -(-lay.ept // vec))
            out.src = self._shared(OpKind.LOAD, n_ld, vec * eb, [wait], f"LDS.{vec * eb * 8}", line)
            out.lay = lay
            r.loads[site] = -(-lay.ept * eb // 4)
        return site

    def desc_store(self, desc, val, offsets, shape, o, m):
        file, line, site = C.user_site()
        self._note_use([val], site)
        eb = desc.dtype.itemsize
        numel = int(np.prod(shape)) if shape else 1
        vl = val.lay
        ept = vl.ept if (vl is not None and vl.shape == tuple(shape)) else max(1, -(-numel // (WARP * self.W)))
        n_st = max(1, math.ceil(ept * eb / 16))
        label = "STSM.16.M88.4" if (vl is not None and vl.kind == "mma" and eb == 2) else "STS.128"
        s = self._shared(OpKind.STORE, n_st, 16, [val.src], label, line)
        fence = self._cost(K.WGMMA_FENCE, 1, [s], line)
        b = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [fence], label="BAR.SYNC", line=line)
        issue = self._cost(K.TMA_STORE_ISSUE, 1, self._offset_deps(offsets, desc) + [b], line)
        mem = _empty_access(self._n_warps(), TMA_BYTES) if self.probe else self.tma_access(desc, o, m)
        st = self._emit(OpKind.STORE, Pipe.LSU, 1, [issue], mem, label=f"UTMASTG.{len(shape)}D", line=line)
        self._one_warp(st, 1)
        # the staging buffer is reused: wait until the bulk copy has read it, then a barrier
        self._cost(K.TMA_STORE_DRAIN, 1, [], line)
        self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [], label="BAR.SYNC", line=line)
        if self.loops:
            # inside a runtime loop (a persistent kernel's tile loop) the staging buffer is live next to the boxes
            # of the loops it holds, which the pipeliner overlaps with the epilogue: its own allocation
            self._region().staging[("tma_store", site)] = numel * eb
            for lp in self.loops:
                f = self.facts.get(lp.key)
                f["tma_store_bytes"] = max(f.get("tma_store_bytes", 0), numel * eb)
        else:
            self._scratch(numel * eb)       # after every loop: reuses the boxes' memory
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        if not self.probe:
            self.stats.mem_sites[key] = {"op": "descriptor_store", "tma": True, "box": list(shape),
                                         "bytes": numel * eb}
