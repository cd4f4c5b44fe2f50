"""Global loads, stores and atomics: where the layout and vector width of an access are picked.

The ``Coalesce`` pass gives an access a blocked layout ordered by the pointer's contiguity, and the vector
width is min(sizePerThread, alignment, mask constancy) from the joined AxisInfo of pointer and mask
(``_mem_decision``).  Each thread issues ``elements_per_thread / vec`` instructions of ``vec * element_bytes``
bytes; the lanes' addresses are coalesced for all programs of the chunk (``_coalescing``).  A load that reaches
a dot inside a runtime loop becomes a cp.async into the software pipeline's shared ring (``_lower_loops``); a
value in an MMA layout reaches a blocked store through shared memory (``ConvertLayoutOp``).  Units: bytes,
instructions per thread.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..trace import SYNC_ACQUIRE, SYNC_RELEASE, MemAccess, OpKind, Pipe
from . import _axisinfo as AI
from . import _core as C
from . import costs as K
from ._coalescing import _empty_access, coalesce_programs
from ._layouts import WARP, Layout, _ept_in, blocked, distinct_values, elem_map, order_from_contiguity


_VIEW_KINDS = ("expand", "bcast", "reshape", "perm", "id")


def _is_zero(other) -> bool:
    """Is a load's ``other`` zero (or absent)?  Zero-filled destinations are set with CS2R."""
    other = C.unwrap(other)
    if other is None:
        return True
    if isinstance(other, C.tensor):
        v = other.v
        return v.size > 0 and bool(np.all(v == 0))
    try:
        return float(other) == 0.0
    except (TypeError, ValueError):
        return False


class MemoryLowering:
    """``Recorder``'s lowering of ``tl.load`` / ``tl.store`` / atomics and of layout conversions through shared
    memory."""

    def _address_cost(self, ptr, lay, shape, site, deps, line):
        """The 64-bit addresses of a memory op whose pointer is still a base + offsets (see ``_addptr``)."""
        f = self.facts.get(site)
        if self.probe:
            if ptr.bk is not None and ptr.bk[0] == "addptr":
                f["ptr_site"] = ptr.bk[1]
            elif ptr.bk is not None and ptr.bk[0] in _VIEW_KINDS and ptr.bk[2] and ptr.bk[2][0].bk is not None \
                    and ptr.bk[2][0].bk[0] == "addptr":
                f["ptr_site"] = ptr.bk[2][0].bk[1]
        ps = f.get("ptr_site")
        if ps is not None and (self.facts.sites.get(ps) or {}).get("advance"):
            return None
        if not shape:
            return None
        # along the fastest dimension an affine pointer is one register plus immediate offsets; along the
        # others LLVM sign-extends each row's 32-bit offset on its own: one address (and its row index
        # arithmetic) per row the thread holds (fa_bwd dq: 4 IMAD.WIDE + LOP3/IADD3/LEA for the 4 rows of Q)
        aff = ptr.aff
        if aff is not None and len(shape) > 1 and lay.order:
            aff = tuple(a if d == lay.order[0] else False for d, a in enumerate(aff))
        n = distinct_values(shape, lay, aff, ptr.ax)
        base = distinct_values(shape, lay, ptr.aff, ptr.ax)
        first = self._cost(K.ADDR_FROM_BASE, n, deps, line)
        if n > base and self.in_runtime_loop() is None:
            # (inside a loop the row offsets are loop-invariant and hoisted; only the IMAD.WIDE remains)
            first = self._cost(K.ADDR_ROW, n - base, [first], line)
        return first

    def _mem_decision(self, site, ptr, mask, shape, is_load: bool, force_layout=None):
        """Layout and vector width of a global access at ``site`` (joined AxisInfo of its pointer and mask)."""
        f = self.facts.get(site)
        eb = ptr.dtype.element_ty.itemsize
        bits = ptr.dtype.element_ty.primitive_bitwidth
        pax = C.broadcast_ax(ptr, shape) if ptr.ax is not None else None
        if pax is None:
            pax = AI.pessimistic(len(shape))
        max_ = None
        if mask is not None:
            max_ = C.broadcast_ax(mask, shape) if mask.ax is not None else AI.pessimistic(len(shape))
        if self.probe or not f.get("from_probe"):
            f["ptr_ax"] = AI.join(f.get("ptr_ax"), pax)
            if max_ is not None:
                f["mask_ax"] = AI.join(f.get("mask_ax"), max_)
        pax = f.get("ptr_ax", pax)
        max_ = f.get("mask_ax", max_) if mask is not None else None
        if not shape:
            lay = Layout("blocked", (), (), (), (), (), (), (), ())
            return lay, 1, f
        order = order_from_contiguity(pax.contig)
        d0 = order[0]
        numel = int(np.prod(shape))
        max_mult = max(pax.div[d0] // eb, 1)
        alignment = min(max_mult, pax.contig[d0])
        if force_layout is not None:
            lay = force_layout
            d0 = lay.order[0] if lay.order else len(shape) - 1
            alignment = min(max(pax.div[d0] // eb, 1), pax.contig[d0])
            vec = min(lay.contig(d0), alignment, max(1, 128 // bits))
        else:
            per_thread = min(alignment, max(1, 128 // bits))
            spt_d0 = min(per_thread, max(numel // (WARP * self.W), 1))
            spt = [1] * len(shape)
            spt[d0] = spt_d0
            lay = blocked(tuple(shape), tuple(spt), order, self.W)
            vec = min(spt_d0, alignment, max(1, 128 // bits))
        mask_c = None
        if max_ is not None:
            mask_c = max(1, max_.const[d0])
            vec = min(vec, mask_c)
        vec = max(1, vec)
        f["decision"] = {"vec": vec, "bytes": vec * eb, "order": list(order), "contiguity": pax.contig[d0],
                         "divisibility_bytes": pax.div[d0], "mask_constancy": mask_c, "layout": repr(lay)}
        return lay, vec, f

    def _global_access(self, site, ptr, shape, mask_t, lay, vec, store: bool) -> MemAccess:
        """The coalesced requests of a global access: ``coalesce_programs`` of ``_addresses``.

        A loop's pointer tile advanced by a scalar (``ptrs += BLOCK_K * stride``) from the tile this site accessed
        last, with the same layout and no lane masked at run time, makes the same requests shifted by the
        advance: when that is a whole number of 128 B lines, they are the last requests moved by so many lines
        (same sector masks, same order), without recomputing the lanes' addresses."""
        buf = ptr.buf
        eb = buf.elem_bytes
        unmasked = C.ST.active() is None and (mask_t is None or self._lane_mask(mask_t, shape, None) is None)
        key = (site, store)
        prev = self._access_cache.get(key)
        sh = ptr.shift
        if unmasked and prev is not None and sh is not None and sh[0] is prev[0] and prev[1] == lay.key and \
                prev[2] == vec and prev[3] is buf and (sh[1] * eb) % 128 == 0:
            acc = dataclasses.replace(prev[4], line=prev[4].line + (sh[1] * eb) // 128)   # (ptr, smask shared)
        else:
            acc = coalesce_programs(self._addresses(ptr, shape, mask_t, lay, vec, store), vec * eb, self.P)
        self._access_cache[key] = (ptr.v, lay.key, vec, buf, acc) if unmasked else None
        return acc

    @staticmethod
    def _lane_mask(mask_t, shape, idx):
        """A mask tensor's lanes (reordered by ``idx``, if given) as a (P or 1, ...) bool array, or None when it is
        the same true for all programs."""
        mv = C.vshape(mask_t, shape)
        if mv.dtype != np.bool_:
            mv = mv != 0
        if mv.shape[0] == 1 and mv.all():
            return None
        mv = np.broadcast_to(mv, (mv.shape[0],) + tuple(shape)).reshape(mv.shape[0], -1)
        return mv if idx is None else mv[:, idx]

    def _addresses(self, ptr, shape, mask_t, lay, vec, store: bool):
        st = C.ST
        buf = ptr.buf
        eb = buf.elem_bytes
        if not shape:
            return self._scalar_addresses(ptr, mask_t, store)
        idx, dup = elem_map(lay, vec)
        offs = C.vshape(ptr, shape)
        Pn = offs.shape[0]
        offs = np.broadcast_to(offs, (Pn,) + tuple(shape)).reshape(Pn, -1)
        addr = buf.base_addr + offs[:, idx].astype(np.int64, copy=False) * eb   # (Pn, W, n, 32)
        m = None
        if mask_t is not None:
            m = self._lane_mask(mask_t, shape, idx)
        a = st.active()
        if a is not None:
            am = a.reshape(-1, 1, 1, 1)
            m = am if m is None else (m & am)
        if store:
            dm = ~dup[None]
            m = dm if m is None else (m & dm)
        if m is not None:
            if m.shape[0] != addr.shape[0]:
                addr = np.broadcast_to(addr, (max(m.shape[0], addr.shape[0]),) + addr.shape[1:])
            addr = np.where(m, addr, -1)
        return addr

    def _scalar_addresses(self, ptr, mask_t, store: bool):
        """A 0-d access (``tl.load(X + row)``, ``tl.store(Mean + row, mean)``): every thread of the CTA loads the
        value (one address per warp: one request); a store or an atomic is done by thread 0 alone (Triton's
        redundant-data mask, ``tid == 0``), the other warps issue it predicated off."""
        st = C.ST
        buf = ptr.buf
        v = ptr.v.reshape(-1)
        addr = buf.base_addr + v.astype(np.int64) * buf.elem_bytes                       # (Pn,)
        Pn = addr.shape[0]
        out = np.broadcast_to(addr.reshape(Pn, 1, 1, 1), (Pn, self.W, 1, WARP))
        m = None
        if mask_t is not None:
            mv = mask_t.v.reshape(-1)
            mv = mv if mv.dtype == np.bool_ else (mv != 0)
            if not (mv.shape[0] == 1 and mv.all()):
                m = mv.reshape(-1, 1, 1, 1)
        a = st.active()
        if a is not None:
            am = a.reshape(-1, 1, 1, 1)
            m = am if m is None else (m & am)
        if store:
            one = np.zeros((1, self.W, 1, WARP), bool)
            one[0, 0, 0, 0] = True
            m = one if m is None else (m & one)
        if m is not None:
            if m.shape[0] != Pn:
                out = np.broadcast_to(out, (max(m.shape[0], Pn),) + out.shape[1:])
            out = np.where(m, out, -1)
        return out

    def _n_vectors(self, lay, vec, shape) -> int:
        if not shape:
            return 1
        return max(1, -(-lay.ept // vec))

    def load(self, out, ptr, mask, shape, other=None, l1_bypass: bool = False):
        file, line, site = C.user_site()
        f = self.facts.get(site)
        force = None
        cl = f.get("consumer_lays")
        if shape and cl and not f.get("dot_operand"):
            cand = [L for L in cl.values() if L.shape == tuple(shape)]
            if cand:
                force = cand[-1]
        lay, vec, f = self._mem_decision(site, ptr, mask, shape, True, force)
        out.lay = lay
        if self.probe and shape:
            self._anchor_input(ptr, lay, shape)
            if mask is not None:
                self._anchor_input(mask, lay, shape)
        eb = ptr.dtype.element_ty.itemsize
        n_inst = self._n_vectors(lay, vec, shape)
        addr = self._address_cost(ptr, lay, shape, site, [ptr.src], line)
        lp = self.in_runtime_loop()
        if self.probe and lp is not None:
            f["loop"] = lp.key
            f["pipelinable"] = lp.stages >= 2 and vec * eb >= 4 and bool(shape)
        pipelined = (bool(f.get("feeds_dot")) and lp is not None and lp.stages >= 2 and vec * eb >= 4
                     and bool(shape))
        deps = [addr if addr is not None else ptr.src, mask.src if mask is not None else None]
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        dec = dict(f.get("decision", {}))
        dec["op"] = "load"
        dec["async_copy"] = pipelined
        if not self.probe:
            self.stats.mem_sites[key] = dec
        # a cp.async writes each element to shared memory once: lanes holding a replicated copy (a slice of an
        # MMA layout) are predicated off, as a store's are
        mem = None if self.probe else self._global_access(site, ptr, shape, mask, lay, vec, pipelined)
        if self.probe:
            mem = _empty_access(self._n_warps(), vec * eb)
        elif l1_bypass and mem is not None:
            mem.l1_bypass = True
        tile_bytes = int(np.prod(shape)) * eb if shape else eb
        n_pred = 0
        if mask is not None and shape:
            n_pred = distinct_values(shape, lay, None, C.broadcast_ax(mask, shape) if mask.ax is not None else None,
                                     predicate=True)
        if pipelined:
            if lp.wait_it != len(lp.iters) - 1:
                # ptxas opens each group of LDGSTS with three never-executed LDS (a scheduling fence)
                self._cost(K.PIPE_GROUP, 1, (), line, tag_loop=lp)
            cp = self._emit(OpKind.ASYNC_COPY, Pipe.LSU, n_inst, deps, mem, label=f"LDGSTS.E.BYPASS.{vec * eb * 8}",
                            line=line)
            cp.loop = lp
            cp.it = len(lp.iters) - 1
            cp.flops = -distinct_values(shape, lay, ptr.aff, ptr.ax)     # (phantoms: addresses to advance)
            # the group commit (LDGDEPBAR) does not wait for the copies: no dependence on them
            self._cost(K.PIPE_LOAD_ITER, 1, [], line, tag_loop=lp)
            if n_pred:
                self._cost(K.PIPE_MASK, n_pred, [mask.src], line, tag_loop=lp)
            lp.has_copies = True
            if self.probe:
                self.facts.get(lp.key)["pipelined"] = True
            # one DEPBAR + barrier per iteration waits for the oldest group (all of its loads)
            first = lp.wait_it != len(lp.iters) - 1
            lp.wait_it = len(lp.iters) - 1
            wait = self._emit(OpKind.ASYNC_WAIT, Pipe.LSU, 1 if first else 0, [cp],
                              _empty_access(self._n_warps(), vec * eb), label="DEPBAR.LE", line=line)
            out.src = wait
            if first:
                self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [wait], label="BAR.SYNC", line=line)
            if not f.get("dot_operand"):
                # consumed by math, not by the tensor cores: read back from the ring into registers
                # (fa_bwd dkdv: 8 LDS.64 per thread for each of its two 64-value row statistics)
                out.src = self._shared(OpKind.LOAD, n_inst, vec * eb, [wait], f"LDS.{vec * eb * 8}", line)
            # a load that reaches a dot only through other math is buffered one stage less (fa_bwd dkdv's
            # row statistics: 1 x 64 fp32 buffers next to 2 x 64 x 64 for Q and dO at num_stages=2)
            bufs = lp.stages if f.get("dot_operand") else max(1, lp.stages - 1)
            self._region().pipe[site] = bufs * tile_bytes
        else:
            init = None
            if mask is not None and shape:
                nbytes = vec * eb
                if nbytes < 4:
                    init = self._cost(K.OTHER_NARROW, n_inst * (1 if _is_zero(other) else 2), (), line)
                elif _is_zero(other):
                    init = self._cost(K.OTHER_ZERO_PER_8B, n_inst * max(1, nbytes // 8), (), line)
                else:
                    init = self._cost(K.OTHER_VALUE_PER_4B, n_inst * max(1, nbytes // 4), (), line)
            if lp is not None and shape and vec * eb < 4:
                # narrow loads in a loop: each address is rebuilt from its base and the running offset, and
                # the loaded halves are shuffled between registers (tl_matmul_1409/2049 loops)
                self._cost(K.NARROW_LOAD_IN_LOOP, n_inst, deps, line)
                ps = f.get("ptr_site")
                if self.probe and ps is not None:
                    self.facts.get(ps)["narrow"] = True
            op = self._emit(OpKind.LOAD, Pipe.LSU, n_inst, deps + [init], mem, label=f"LDG.E.{vec * eb * 8}",
                            line=line)
            out.src = op
            if shape:
                # loaded values: packed when vectorized, one register per element of a 2-byte scalar load
                self._region().loads[site] = -(-lay.ept * max(eb, 4 if vec * eb < 4 else eb) // 4)
        return site

    def store(self, ptr, val, mask, shape):
        file, line, site = C.user_site()
        self._note_use([val], site)
        lay, vec, f = self._mem_decision(site, ptr, mask, shape, False)
        if self.probe and shape:
            self._anchor_input(ptr, lay, shape)
            if mask is not None:
                self._anchor_input(mask, lay, shape)
            if val.lay is None or val.lay.shape != tuple(shape):
                self._anchor_input(val, lay, shape)
        eb = ptr.dtype.element_ty.itemsize
        addr = self._address_cost(ptr, lay, shape, site, [ptr.src], line)
        deps = [addr if addr is not None else ptr.src, val.src, mask.src if mask is not None else None]
        vl = val.lay
        if shape and vl is not None and vl.shape == tuple(shape) and vl.kind != "blocked" and \
                not vl.same_distribution(lay):
            deps = self._convert_through_shared(shape, eb, val.src, line, vl, lay) + deps[2:]
        n_inst = self._n_vectors(lay, vec, shape)
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        dec = dict(f.get("decision", {}))
        dec["op"] = "store"
        if not self.probe:
            self.stats.mem_sites[key] = dec
            mem = self._global_access(site, ptr, shape, mask, lay, vec, True)
        else:
            mem = _empty_access(self._n_warps(), vec * eb)
        self._emit(OpKind.STORE, Pipe.LSU, n_inst, deps, mem, label=f"STG.E.{vec * eb * 8}", line=line)

    def atomic(self, out, ptr, val, mask, shape, op, sem="acq_rel"):
        file, line, site = C.user_site()
        lay, _vec, f = self._mem_decision(site, ptr, mask, shape, False)     # atomics are scalar
        if shape:
            lay = blocked(tuple(shape), (1,) * len(shape), lay.order, self.W)
            if self.probe:
                self._anchor_input(ptr, lay, shape)
                if mask is not None:
                    self._anchor_input(mask, lay, shape)
        eb = ptr.dtype.element_ty.itemsize
        n_inst = lay.ept if shape else 1
        addr = self._address_cost(ptr, lay, shape, site, [ptr.src], line)
        deps = [addr if addr is not None else ptr.src, val.src, mask.src if mask is not None else None]
        lane_addr = None if self.probe else self._addresses(ptr, shape, mask, lay, 1, True)
        mem = _empty_access(self._n_warps(), eb) if self.probe else coalesce_programs(lane_addr, eb, self.P)
        if not shape:
            out.src = self._scalar_atomic(ptr, op, deps, self._lock_word(mem, lane_addr, op), line, sem)
            out.lay = lay
            return
        # the semantics' fences, as Triton 3.6 compiles them for sm_90: a release (acq_rel, release) puts
        # MEMBAR.ALL.GPU before the ATOMG, an acquire (acq_rel, acquire) CCTL.IVALL after it, which waits for its
        # result; a relaxed or release atomic whose result is unused is a REDG (nothing waits for it)
        if sem in ("acq_rel", "release"):
            deps = [self._cost(K.SCALAR_ATOMIC_FENCE, 1, deps, line)]
        a = self._emit(OpKind.ATOMIC, Pipe.LSU, n_inst, deps, mem,
                       label=f"ATOMG.E.{op.upper()}.{ptr.dtype.element_ty.name.upper()}", line=line)
        if sem in ("acq_rel", "acquire"):
            self._cost(K.SCALAR_ATOMIC_ACQUIRE, 1, [a], line)
        out.src = a
        out.lay = lay

    def _lock_word(self, mem, lane_addr, op):
        """A 0-d compare-and-swap inside a ``while`` loop (a spin lock's acquire) or a 0-d exchange (its release)
        keeps the exact address of the word per warp (``MemAccess.addr``), so that the timing engine can make a
        CTA wait while another holds the lock (``Op.sync``); any other access is returned as it is."""
        if lane_addr is None or op not in ("cas", "xchg") or (op == "cas" and not C.ST.in_while):
            return mem
        per_prog = lane_addr.reshape(lane_addr.shape[0], -1).max(axis=1)          # -1: masked off
        words = np.full((self.P, self.W), -1, np.int64)
        words[:, 0] = np.broadcast_to(per_prog, (self.P,))
        return dataclasses.replace(mem, addr=words.reshape(-1))

    def _scalar_atomic(self, ptr, op, deps, mem, line, sem="acq_rel"):
        """A 0-d atomic (the spin lock's ``tl.atomic_cas(Lock, 0, 1)``): thread 0 alone performs it inside a
        branch, fenced for the default acq_rel semantics, and a compare-and-swap's old value reaches every thread
        through shared memory (``costs.SCALAR_ATOMIC_*``).  The ATOMG and its fences are recorded for warp 0 only
        (the other warps branch around them)."""
        b0 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, deps, label="BAR.SYNC", line=line)
        setup = self._cost(K.SCALAR_ATOMIC_SETUP, 1, [b0], line)
        a = C.ST.rec_active()          # the programs this op is traced for (not those replaying it after a wait)
        lanes = np.zeros((self.P, self.W), np.uint8)
        lanes[:, 0] = 1
        if a is not None:
            lanes[~a] = 0
        lanes = lanes.reshape(-1)
        before = setup
        if sem in ("acq_rel", "release"):
            before = self._cost(K.SCALAR_ATOMIC_FENCE, 1, [setup], line)
            before.active = lanes
        at = self._emit(OpKind.ATOMIC, Pipe.LSU, 1, [before], mem,
                        label=f"ATOMG.E.{op.upper()}.STRONG.GPU.{ptr.dtype.element_ty.name.upper()}", line=line)
        at.active = lanes
        if mem.addr is not None:
            at.sync = SYNC_ACQUIRE if op == "cas" else SYNC_RELEASE
        if sem in ("acq_rel", "acquire"):
            after = self._cost(K.SCALAR_ATOMIC_ACQUIRE, 1, [at], line)
            after.active = lanes
        if op != "cas":
            return at
        s1 = self._shared(OpKind.STORE, 1, 4, [at], "STS", line, warps_on=1)
        b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [s1], label="BAR.SYNC", line=line)
        return self._shared(OpKind.LOAD, 1, 4, [b1], "LDS", line)

    def barrier(self):
        self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, (), label="BAR.SYNC")

    def _convert_through_shared(self, shape, eb, src, line, src_lay=None, dst_lay=None):
        """Layout conversion of a register tile through shared memory: rounds of (st.shared, barrier, ld.shared /
        ldmatrix, barrier).  An MMA accumulator of fp16 leaves as 16-byte STS and LDSM (fa_fwd / tl_matmul
        epilogues: 8 STS.128 + 8 LDSM per thread for 128 bytes), one round per 64-row block of a warpgroup."""
        numel = int(np.prod(shape))
        src_ept = _ept_in(shape, src_lay) if src_lay is not None else max(1, numel // (WARP * self.W))
        dst_ept = _ept_in(shape, dst_lay) if dst_lay is not None else max(1, numel // (WARP * self.W))
        st_bytes = 16 if eb <= 2 else 8
        n_st = max(1, -(-src_ept * eb // st_bytes))
        ld_bytes = 16 if dst_lay is None else min(16, max(eb, dst_lay.contig((dst_lay.order or (len(shape) - 1,))[0])
                                                          * eb))
        n_ld = max(1, -(-dst_ept * eb // ld_bytes))
        rounds = 1
        if src_lay is not None and src_lay.kind == "mma" and len(shape) >= 2:
            w0 = src_lay.mma[1][0]
            rounds = max(1, shape[-2] // (16 * w0))
        s1 = self._shared(OpKind.STORE, n_st, st_bytes, [src], f"STS.{st_bytes * 8}", line)
        b1 = self._emit(OpKind.BARRIER, Pipe.BRANCH, rounds, [s1], label="BAR.SYNC", line=line)
        l1 = self._shared(OpKind.LOAD, n_ld, ld_bytes, [b1], "LDSM.16.M88.4" if ld_bytes == 16 and eb == 2 else
                          f"LDS.{ld_bytes * 8}", line)
        if rounds > 1 or src_lay is not None:
            self._alu(Pipe.BRANCH, max(1, 2 * rounds - 1), [l1], "BAR.SYNC", line)
        self._scratch(numel * eb // rounds)
        return [l1]
