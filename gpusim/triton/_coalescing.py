"""Memory accesses of a chunk of programs, as the LSU serves them.

``coalesce_programs``: the lane addresses of one global access, for every program of a chunk at once, coalesced
into 128 B lines and their 32 B sectors (``trace.coalesce_global``, the L1's coalescer); programs whose
accesses are translations of one another by whole lines share one result.  ``shared_ideal``: a shared-memory
access without bank conflicts (what Triton's swizzled layouts achieve).  Units: bytes per lane, 128 B
wavefronts.
"""
from __future__ import annotations

import numpy as np

from .. import trace as T
from ..trace import MemAccess, Space
from ._layouts import WARP


# ---------------------------------------------------------------------------------------------------------
# memory accesses of a chunk of programs
# ---------------------------------------------------------------------------------------------------------

def _empty_access(n_warps, bpl, space=Space.GLOBAL) -> MemAccess:
    return MemAccess(space=space, bytes_per_lane=bpl, bytes_requested=0, ptr=np.zeros(n_warps + 1, np.int64),
                     line=np.zeros(0, np.int64), smask=np.zeros(0, np.uint8))


def coalesce_programs(addr: np.ndarray, bpl: int, P: int) -> MemAccess:
    """Coalesce lane addresses (Pa, W, n, 32) of Pa programs (Pa == 1: the same for all P programs).

    Programs whose accesses are a translation of one another by a multiple of 128 B share one coalescing
    result (the common case: all programs use the same layout on different tiles).
    """
    Pa, W = addr.shape[0], addr.shape[1]
    if Pa == 1:
        one = T.coalesce_global(addr[0], bpl)
        if P == 1:
            return one
        L = one.line.shape[0]
        cnt = np.diff(one.ptr)
        ptr = np.zeros(P * W + 1, np.int64)
        np.cumsum(np.tile(cnt, P), out=ptr[1:])
        return MemAccess(space=Space.GLOBAL, bytes_per_lane=bpl, bytes_requested=one.bytes_requested * P, ptr=ptr,
                         line=np.tile(one.line, P), smask=np.tile(one.smask, P),
                         wavefronts=None if one.wavefronts is None else np.tile(one.wavefronts, P))
    A = addr.reshape(Pa, -1)
    V = A >= 0
    big = np.iinfo(np.int64).max
    mn = np.where(V, A, big).min(axis=1)
    empty = mn == big
    R = np.where(V, A - np.where(empty, 0, mn)[:, None], -1)
    groups = []          # (rep, members array, shifts)
    remaining = np.nonzero(~empty)[0]
    tries = 0
    while remaining.size and tries < 8:
        r = remaining[0]
        same = (R[remaining] == R[r]).all(axis=1) & ((mn[remaining] - mn[r]) % 128 == 0)
        members = remaining[same]
        if members.size == 1 and tries >= 2:
            break
        groups.append((r, members))
        remaining = remaining[~same]
        tries += 1
    cnt = np.zeros((Pa, W), np.int64)
    pieces = []          # (program indices, per-program line arrays generator info)
    for r, members in groups:
        one = T.coalesce_global(addr[r], bpl)
        c = np.diff(one.ptr)
        cnt[members] = c
        shift = (mn[members] - mn[r]) // 128
        pieces.append(("g", members, one, shift))
    if remaining.size:
        rest = T.coalesce_global(addr[remaining].reshape(remaining.size * W, addr.shape[2], addr.shape[3]), bpl)
        c = np.diff(rest.ptr).reshape(remaining.size, W)
        cnt[remaining] = c
        pieces.append(("r", remaining, rest, None))
    ptr = np.zeros(Pa * W + 1, np.int64)
    np.cumsum(cnt.reshape(-1), out=ptr[1:])
    wf = None                # the L1's half-warp passes (trace._half_warp_passes), where any piece has them
    if any(acc.wavefronts is not None for _, _, acc, _ in pieces):
        wf = cnt.astype(np.int32)
        for kind, members, acc, _ in pieces:
            if acc.wavefronts is not None:
                wf[members] = acc.wavefronts if kind == "g" else acc.wavefronts.reshape(members.size, W)
    total = int(ptr[-1])
    line = np.empty(total, np.int64)
    smask = np.empty(total, np.uint8)
    prog_start = ptr[np.arange(Pa) * W]
    req = 0
    for kind, members, acc, shift in pieces:
        if kind == "g":
            L = acc.line.shape[0]
            if L:
                pos = prog_start[members][:, None] + np.arange(L)[None, :]
                line[pos] = acc.line[None, :] + shift[:, None]
                smask[pos] = acc.smask[None, :]
            req += acc.bytes_requested * members.size
        else:
            lens = cnt[members].sum(axis=1)
            src_start = np.concatenate(([0], np.cumsum(lens)[:-1]))
            for k, p in enumerate(members):
                n = int(lens[k])
                if n:
                    s = int(prog_start[p])
                    line[s:s + n] = acc.line[src_start[k]:src_start[k] + n]
                    smask[s:s + n] = acc.smask[src_start[k]:src_start[k] + n]
            req += acc.bytes_requested
    return MemAccess(space=Space.GLOBAL, bytes_per_lane=bpl, bytes_requested=req, ptr=ptr, line=line, smask=smask,
                     wavefronts=None if wf is None else wf.reshape(-1))


def shared_ideal(n_warps: int, n_inst: int, bpl: int, active_warps: int | None = None) -> MemAccess:
    """Shared-memory access without bank conflicts: ceil(32*bpl/128) wavefronts per instruction."""
    per = max(1, (WARP * bpl + 127) // 128)
    wf = np.full(n_warps, n_inst * per, np.int32)
    aw = n_warps if active_warps is None else active_warps
    return MemAccess(space=Space.SHARED, bytes_per_lane=bpl, bytes_requested=aw * n_inst * WARP * bpl,
                     wavefronts=wf, shared_ideal_wavefronts=wf.copy())
