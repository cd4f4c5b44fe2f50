"""The load/store unit of the SIMT machine: global, shared and local loads and stores, and their access summaries.

Loads and stores act on the active lanes only (a store's later lanes win on equal addresses, in thread order).
Each recorded access carries its ``gpusim.trace.MemAccess``: the coalesced 32-byte sectors and 128-byte lines of
a global or local access (``memory.coalesce_rows``; local memory interleaves the 32 lanes of a warp), or the
wavefronts of a shared access over the banks (``memory.shared_rows``).  Redundant loads (the same element, no
store since) are reused as LLVM's GVN does; shared-memory loads of neighbouring elements merge into 16-byte
vector loads (``LDS.128``).  Units: bytes.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import CompileError
from ..trace import WARP, MemAccess, OpKind, Pipe, Space
from . import costs as C_
from .memory import LOCAL_BASE, _unit_stride, coalesce_rows, shared_rows, tile_access
from .values import EMPTY, Mask, V, _union, convert

#: reuse memory summaries of accesses that differ only by a uniform offset (see ``Chunk._mem``)
MEM_CACHE = True


class MemoryAccess:
    """The chunk's (``runtime.Chunk``) loads, stores and memory summaries.  State (set by ``Chunk.__init__``):
    ``_mem_cache``, ``_last_parts`` (set by ``Indexing._index``), ``_load_cse``, ``_vec_loads``,
    ``_thread_row``."""

    def _lane_shape(self, flat):
        m = self.mask
        c = 1
        if type(flat) is np.ndarray and flat.shape[0] != 1:
            c = self.C
        if m.a is not None and m.a.shape[0] != 1:
            c = self.C
        return c

    def _mem(self, arr, flat):
        """MemAccess of one access by the active lanes at element offsets ``flat``.

        Accesses whose lane-varying index parts are the same runtime values as an earlier access (same
        variables, same mask) differ only by a uniform offset: the cached summary is reused, its lines
        shifted (global/local: when the offset moves by whole 128 B lines; shared: conflicts do not move)."""
        akey, sc = self._last_parts
        sp = arr.space
        off = sc * arr.itemsize * (WARP if sp == "local" else 1)     # local memory interleaves 32 lanes
        if sp == "shared":
            key = (arr.key, akey, self.mask.sid, off % 4)
        elif sp == "local":
            key = (arr.key, akey, self.mask.sid, off % 128)
        else:
            # global: arrays of one shape and element size indexed by the same lane-varying values touch the same
            # lines relative to their first byte (``a[i]``, ``b[i]``, ``out[i]``): one summary, shifted by whole lines
            # (of one layout: an F-order array or a record's field strides differently)
            off += arr.base_addr
            key = (arr.itemsize, arr.shape, arr.el_strides, akey, self.mask.sid, off % 128)
        hit = self._mem_cache.get(key) if MEM_CACHE else None
        if hit is not None:
            acc, off0 = hit
            if sp == "shared":
                return acc
            shift = (off - off0) // 128
            if shift == 0:
                return acc
            return MemAccess(space=acc.space, bytes_per_lane=acc.bytes_per_lane,
                             bytes_requested=acc.bytes_requested, ptr=acc.ptr, line=acc.line + shift,
                             smask=acc.smask, wavefronts=acc.wavefronts)
        acc = self._mem_compute(arr, flat)
        if len(self._mem_cache) > 512:
            self._mem_cache.clear()
        self._mem_cache[key] = (acc, off)
        return acc

    def _mem_compute(self, arr, flat, isz=None):
        m = self.mask
        c = self._lane_shape(flat)
        P = self.P
        isz = arr.itemsize if isz is None else isz
        sp = arr.space
        if sp == "local":
            c = self.C
            warp = (np.arange(self.C, dtype=np.int64)[:, None] * self.wpc
                    + (np.arange(P, dtype=np.int64) // WARP)[None, :] + self.first * self.wpc)
            lane = np.arange(P, dtype=np.int64)[None, :] % WARP
            addr = LOCAL_BASE + warp * (WARP * self.L.local_frame) + (arr.offset + np.asarray(flat) * isz) * WARP \
                + lane * isz
        elif sp == "shared":
            addr = arr.offset + np.asarray(flat, dtype=np.int64) * isz
        else:
            addr = arr.base_addr + np.asarray(flat, dtype=np.int64) * isz
        if m.a is not None:
            addr = np.where(m.a, addr, -1)
        addr = np.broadcast_to(addr, (c, P))
        rows = np.ascontiguousarray(addr).reshape(c * self.wpc, WARP)
        if sp == "shared":
            acc = shared_rows(rows, isz, self.L.banks, self.L.bank_bytes)
        else:
            acc = coalesce_rows(rows, isz, Space.LOCAL if sp == "local" else Space.GLOBAL)
        if c == 1 and self.C > 1:
            acc = tile_access(acc, self.C)
        return acc

    # ---- loads and stores ----------------------------------------------------------------------------------------
    def _lin(self, arr, flat):
        """Linear position in ``arr``'s storage of each lane's element (shape broadcast)."""
        if arr.space == "shared":
            return arr.cta_base + flat
        # local
        n = arr.storage.shape[2]
        if self._thread_row is None or self._thread_row[0] != n:
            self._thread_row = (n, np.arange(self.C * self.P, dtype=np.int64).reshape(self.C, self.P) * n)
        return self._thread_row[1] + flat

    def load(self, arr, idx, line, l1_bypass: bool = False) -> V:
        m = self.mask
        if m is EMPTY:
            return V(arr.dtype.type(0), (), False)
        flat, deps, runtime, nwrap = self._index(arr, idx, line, False)
        sp = arr.space
        if sp == "global" or sp == "const":
            val = arr.span[flat] if type(flat) is int else np.take(arr.span, flat)
        elif sp == "shared":
            st = arr.storage
            if type(flat) is int:
                val = st[:, flat:flat + 1].copy()
            elif flat.shape[0] == 1:          # same offsets in every CTA: gather columns
                val = np.take(st, flat[0], axis=1)
            else:
                val = arr.flatview[self._lin(arr, flat)]
        else:
            st = arr.storage
            if not runtime:
                return V(st[:, :, flat].copy(), (), False)   # constant index: a register
            self.L.local_runtime_slots.add(arr.slot.index)
            val = st.reshape(-1)[self._lin(arr, flat)]
        if not self.recording:
            return V(val, (), False)
        lkey = (arr.key, self._last_parts, self.mask.sid, l1_bypass)
        hit = self._load_cse.get(lkey)
        if hit is not None:                       # the same element loaded before, no store since: reused (GVN)
            return V(val, (hit,), False)
        vkey = self._vector_key(arr, runtime) if sp == "shared" else None
        if vkey is not None:
            hit = self._vec_loads.get(vkey)
            if hit is not None:                   # this element came with an earlier vector load
                return V(val, (hit,), False)
        adeps = self._rec_index(arr, runtime, nwrap, deps, line)
        space = {"global": "global", "const": "const", "shared": "shared", "local": "local"}[sp]
        if vkey is not None:
            per = C_.SHARED_VECTOR_BYTES // arr.itemsize
            mem = self._mem_compute(arr, flat - (self._last_parts[1] % per), C_.SHARED_VECTOR_BYTES)
            label = C_.mem_label("load", space, C_.SHARED_VECTOR_BYTES)
        else:
            mem = self._mem(arr, flat)
            label = C_.mem_label("load", space, arr.itemsize)
        if l1_bypass and mem is not None:
            # ld.global.cg / .cv: the summary is shared through the cache, so the flag goes on a copy
            mem = dataclasses.replace(mem, l1_bypass=True)
        oi = self._rec_op(OpKind.LOAD, Pipe.LSU, label, line, adeps, mem)
        if vkey is not None:
            self._vec_loads[vkey] = oi
        if len(self._load_cse) > 4096:
            self._load_cse.clear()
        self._load_cse[lkey] = oi
        return V(val, (oi,), False)

    def _vector_key(self, arr, runtime):
        """Key of the 16-byte group of a shared-memory load that LLVM's load/store vectorizer merges with its
        neighbours (``LDS.128``), or None.  Loads ``a[i, c]`` with lane-varying leading indices whose row offset
        is a multiple of 16 bytes and constant trailing indices (a fully unrolled loop over c: matmul_tiled's
        ``sA[ty, k]``, 4 LDS.128 per tile instead of 16 LDS) fall into aligned 16-byte groups; a store to the
        array, a barrier or another mask ends the straight-line region the vectorizer sees."""
        isz = arr.itemsize
        if isz >= C_.SHARED_VECTOR_BYTES or arr.offset % C_.SHARED_VECTOR_BYTES or not runtime:
            return None
        last = arr.ndim - 1
        for k, _ in runtime:
            if k == last or (arr.el_strides[k] * isz) % C_.SHARED_VECTOR_BYTES:
                return None
        akey, sc = self._last_parts
        return (arr.key, akey, (sc * isz) // C_.SHARED_VECTOR_BYTES, self.mask.sid)

    def store(self, arr, idx, value, line) -> None:
        m = self.mask
        if m is EMPTY:
            return
        if arr.space == "const":
            raise self._err(CompileError, f"array {arr.name!r} is a constant (global) array and cannot be "
                            "written", line)
        value = self._val(value, line)
        if value.v.dtype.kind == "c" and arr.dtype.kind != "c":
            raise self._err(CompileError, f"No implementation of function setitem(array({arr.dtype}), ..., "
                            f"{value.v.dtype}): a complex value cannot be stored into {arr.name!r} of {arr.dtype} "
                            "(numba; store .real or .imag)", line)
        flat, deps, runtime, nwrap = self._index(arr, idx, line, True)
        vv = value.v
        rec = self.recording
        if vv.dtype != arr.dtype:
            vv = self._cvt(value, arr.dtype, line) if rec and not value.const else convert(vv, arr.dtype)
        sp = arr.space
        if sp == "local" and not runtime:
            st = arr.storage[:, :, flat]
            if m.a is None:
                st[...] = vv
            else:
                np.copyto(st, vv, where=m.a)
            return
        if sp == "global":
            self._scatter(arr.span, flat, vv, m)
        else:
            if sp == "local":
                self.L.local_runtime_slots.add(arr.slot.index)
            lin = self._lin(arr, flat)
            self._scatter(arr.flatview if sp == "shared" else arr.storage.reshape(-1), lin, vv, m)
        if not rec:
            return
        if sp == "shared" and self._vec_loads:
            self._vec_loads.clear()
        self._load_cse.clear()                       # the store may alias any element loaded before
        adeps = self._rec_index(arr, runtime, nwrap, deps, line)
        mem = self._mem(arr, flat)
        self._rec_op(OpKind.STORE, Pipe.LSU, C_.mem_label("store", sp, arr.itemsize), line,
                     _union(value.deps, adeps), mem)

    def _scatter(self, dst, pos, vals, m: Mask):
        """dst[pos] = vals on the active lanes, later lanes (thread order) winning on equal positions."""
        if type(pos) is int:
            if type(vals) is not np.ndarray:
                dst[pos] = vals
                return
            vb = np.broadcast_to(vals, (self.C, self.P))
            if m.a is None:
                dst[pos] = vb[-1, -1]
                return
            mb = np.broadcast_to(m.a, (self.C, self.P)).reshape(-1)
            last = len(mb) - 1 - int(np.argmax(mb[::-1]))
            dst[pos] = vb.reshape(-1)[last]
            return
        if m.a is None:
            if _consecutive(pos, len(dst)) and (type(vals) is not np.ndarray or vals.shape == pos.shape):
                # a unit-stride walk (out[i] = ... with i = cuda.grid(1)): one slice copy, ~5x faster than
                # the scatter on a million lanes (no position is repeated, so no lane order to keep)
                a = int(pos.flat[0])
                dst[a:a + pos.size] = vals.reshape(-1) if type(vals) is np.ndarray else vals
                return
            if type(vals) is np.ndarray and vals.shape != pos.shape:
                shape = np.broadcast_shapes(pos.shape, vals.shape)
                pos = np.broadcast_to(pos, shape)
                vals = np.broadcast_to(vals, shape)
            dst[pos] = vals
            return
        shape = np.broadcast_shapes(pos.shape, m.a.shape, np.shape(vals))
        mb = np.broadcast_to(m.a, shape)
        pb = np.broadcast_to(pos, shape)[mb]
        if type(vals) is np.ndarray:
            dst[pb] = np.broadcast_to(vals, shape)[mb]
        else:
            dst[pb] = vals


def _consecutive(pos, limit: int) -> bool:
    """Whether ``pos`` (an int array of a million-ish lanes) holds ``a, a+1, ..., a+n-1`` in order, inside
    ``[0, limit)`` (outside, the fancy-index path raises the bounds error)."""
    if type(pos) is not np.ndarray or pos.size < 4096 or pos.dtype.kind not in "iu":
        return False
    rows = pos.reshape(-1, pos.shape[-1]) if pos.ndim > 1 else pos.reshape(1, -1)
    a, n, w = int(rows[0, 0]), pos.size, rows.shape[1]
    if a < 0 or a + n > limit or int(rows[-1, -1]) - a != n - 1:
        return False
    # each row steps by 1 (checked in cache-sized blocks), and each row starts where the one before ended
    return bool((np.diff(rows[:, 0]) == w).all()) and _unit_stride(rows, 1)
