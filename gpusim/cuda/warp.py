"""Barriers and warp-level operations of the SIMT machine: ``syncthreads`` and its reductions, shuffles, votes.

A CTA barrier reached by some threads of a block but not by others that have not exited raises
``BarrierDivergence`` (on hardware it deadlocks or misbehaves).  Shuffles read the source lane's value within
the warp (32 lanes); votes reduce a predicate over the warp's active lanes.  Barriers and warp-level collectives
are convergent: a loop containing one is not runtime-unrolled.
"""
from __future__ import annotations

import numpy as np

from ..errors import BarrierDivergence, CompileError
from ..trace import WARP, Op, OpKind
from . import costs as C_
from .values import EMPTY, I32, V, _union


class WarpOps:
    """The chunk's (``runtime.Chunk``) barriers, memory fences and warp-level collectives."""

    def syncthreads(self, line) -> None:
        m = self.mask
        if m is EMPTY:
            return
        if m is not self.base:
            S = (self.C, self.P)
            act = np.broadcast_to(m.a, S) if m.a is not None else np.ones(S, bool)
            alive = np.ones(S, bool) if self.L.exist is None else np.broadcast_to(self.L.exist, S).copy()
            ex = self.frames[0].returned if self.frames else EMPTY
            if ex is not EMPTY:
                alive = alive & ~(np.broadcast_to(ex.a, S) if ex.a is not None else np.ones(S, bool))
            missing = alive & ~act
            bad = act.any(axis=1) & missing.any(axis=1)
            if bad.any():
                c = int(np.argmax(bad))
                p_in = int(np.argmax(act[c]))
                p_out = int(np.argmax(missing[c]))
                L = self.L
                raise BarrierDivergence(
                    f"cuda.syncthreads() is reached by thread {L.thread_of(p_in)} but not by thread "
                    f"{L.thread_of(p_out)} of the same block, which has not exited (a barrier inside a divergent "
                    "branch or loop: on hardware it deadlocks or misbehaves)",
                    file=self.ck.file, line=line, kernel=self.ck.name, block=L.block_of(self.first + c),
                    thread=L.thread_of(p_in))
        self._no_unroll()                            # a barrier is convergent: its loop is not unrolled
        self._vec_loads.clear()
        self._load_cse.clear()
        if self.recording:
            pipe, n, label = C_.cost(("barrier",))[0]
            ri = self._row_of(m)
            self.ops.append(Op(OpKind.BARRIER, pipe, n, line, (), label=label))
            self.op_rows.append(ri)

    def sync_reduce(self, kind, pred, line) -> V:
        """``cuda.syncthreads_count/and/or(pred)``: a barrier that also reduces ``pred`` over the block."""
        pv = self._val(pred, line)
        if pv.v.dtype.kind not in "iu":
            what = "bool" if pv.v.dtype.kind == "b" else str(pv.v.dtype)
            raise self._err(CompileError, f"No implementation of function syncthreads_{kind} for a {what} "
                            "predicate (numba-cuda 0.30 types it (int32) -> int32: write "
                            f"cuda.syncthreads_{kind}(1 if cond else 0))", line)
        self.syncthreads(line)
        m = self.mask
        S = (self.C, self.P)
        act = np.ones(S, bool) if m.a is None else np.broadcast_to(m.a, S)
        p = np.broadcast_to(self.truth(pred, line).v, S) & act
        if kind == "count":
            r = p.sum(axis=1).astype(I32)[:, None]
        elif kind == "and":
            r = (p == act).all(axis=1).astype(I32)[:, None]
        else:
            r = p.any(axis=1).astype(I32)[:, None]
        return V(r, (), False)

    def simple(self, key, line) -> None:
        """An instruction with no functional effect in lockstep (syncwarp, threadfence)."""
        if key == ("syncwarp",):
            self._collective()
        self._load_cse.clear()                       # fences and warp barriers order memory too
        if self.recording and self.mask is not EMPTY:
            self._rec(key, line)

    def _warp_view(self, v):
        return np.broadcast_to(v, (self.C, self.P)).reshape(self.C, self.wpc, WARP)

    def shfl(self, kind, mask, value, arg, line) -> V:
        v = self._val(value, line)
        if v.v.dtype.name not in ("int32", "int64", "uint32", "uint64", "float32", "float64"):
            name = {"idx": "shfl_sync", "up": "shfl_up_sync", "down": "shfl_down_sync", "xor": "shfl_xor_sync"}[kind]
            raise self._err(CompileError, f"No implementation of function {name} for a {v.v.dtype} value (numba-cuda "
                            "shuffles 32- and 64-bit ints and floats)", line)
        a = self._val(arg, line)
        lane = np.arange(WARP, dtype=np.int64)
        av = np.broadcast_to(np.asarray(a.v, dtype=np.int64), (self.C, self.P)).reshape(self.C, self.wpc, WARP)
        if kind == "idx":
            src = av % WARP
        elif kind == "up":
            src = lane - av
            src = np.where(src < 0, lane, src)
        elif kind == "down":
            src = lane + av
            src = np.where(src >= WARP, lane, src)
        else:
            src = (lane ^ av) % WARP
        src = np.broadcast_to(src, (self.C, self.wpc, WARP))
        r = np.take_along_axis(self._warp_view(v.v), src, axis=2).reshape(self.C, self.P)
        deps = _union(v.deps, a.deps)
        n0 = len(self.ops)
        self._collective()
        if self.recording and self.mask is not EMPTY:
            self._rec(("warp_shuffle",), line, deps)
        return V(r, self._out(deps, n0), False)

    def vote(self, kind, mask, pred, line) -> V:
        m = self.mask
        if kind == "lanemask_lt":                   # %lanemask_lt: the lanes below this one
            lane = np.arange(self.P, dtype=np.uint64) % WARP
            r = ((np.uint64(1) << lane) - np.uint64(1)).astype(np.uint32)[None, :]
            if self.recording and m is not EMPTY:
                self._rec(("sreg", "lanemask_lt"), line)
            return V(np.broadcast_to(r, (self.C, self.P)).copy(), (), False)
        self._collective()
        act = np.ones((self.C, self.P), bool) if m.a is None else np.broadcast_to(m.a, (self.C, self.P))
        if m is EMPTY:
            act = np.zeros((self.C, self.P), bool)
        if kind == "activemask":
            bits = act
        else:
            # numba-cuda's vote_sync_intrinsic: an integer mask, an integer or boolean predicate
            mv = self._val(mask, line)
            if mv.v.dtype.kind not in "iu":
                raise self._err(CompileError, f"No implementation of function {kind}_sync: Mask type must be an "
                                f"integer. Got {mv.v.dtype}", line)
            pv = self._val(pred, line)
            if pv.v.dtype.kind not in "iub":
                raise self._err(CompileError, f"No implementation of function {kind}_sync for a {pv.v.dtype} "
                                "predicate: Predicate must be an integer or boolean (numba-cuda)", line)
            p = self.truth(pv, line)
            bits = act & np.broadcast_to(p.v, (self.C, self.P))
        w = bits.reshape(self.C, self.wpc, WARP)
        if kind in ("ballot", "activemask"):
            words = (w.astype(np.uint64) << np.arange(WARP, dtype=np.uint64)).sum(axis=2).astype(np.uint32)
            r = np.repeat(words, WARP, axis=1).reshape(self.C, self.P)
        elif kind == "any":
            r = np.repeat(w.any(axis=2), WARP, axis=1).reshape(self.C, self.P).astype(I32)
        elif kind == "eq":                          # every active lane's predicate the same
            aw = act.reshape(self.C, self.wpc, WARP)
            same = (w == aw).all(axis=2) | (~w).all(axis=2)
            r = np.repeat(same, WARP, axis=1).reshape(self.C, self.P).astype(I32)
        else:
            aw = act.reshape(self.C, self.wpc, WARP)
            r = np.repeat((w == aw).all(axis=2), WARP, axis=1).reshape(self.C, self.P).astype(I32)
        if self.recording and m is not EMPTY:
            self._rec(("warp_vote",), line)
        return V(r, (), False)

    def match(self, kind, mask, value, line):
        """``match_any_sync``: per lane, the active lanes (of ``mask``) holding the same value; ``match_all_sync``:
        (that mask if every such lane holds one value else 0, whether they do)."""
        m = self.mask
        self._collective()
        v = self._val(value, line)
        if v.v.dtype.name not in ("int32", "int64", "uint32", "uint64", "float32", "float64"):
            raise self._err(CompileError, f"No implementation of function match_{kind}_sync for a {v.v.dtype} "
                            "value (numba-cuda matches 32- and 64-bit ints and floats)", line)
        mk = self._val(mask, line)
        act = np.ones((self.C, self.P), bool) if m.a is None else np.broadcast_to(m.a, (self.C, self.P))
        if m is EMPTY:
            act = np.zeros((self.C, self.P), bool)
        lane = np.arange(WARP, dtype=np.uint64)
        inmask = ((np.broadcast_to(np.asarray(mk.v, np.uint64), (self.C, self.P)).reshape(self.C, self.wpc, WARP)
                   >> lane) & np.uint64(1)).astype(bool)
        part = act.reshape(self.C, self.wpc, WARP) & inmask          # lanes taking part
        x = self._warp_view(v.v)
        bits = np.uint64(1) << lane
        same = (x[..., :, None] == x[..., None, :]) & part[..., None, :]     # [lane, other]
        word = (same * bits).sum(axis=-1).astype(np.uint32)
        deps = _union(v.deps, mk.deps)
        n0 = len(self.ops)
        if self.recording and m is not EMPTY:
            self._rec(("warp_match",), line, deps)
        if kind == "any":
            return V(word.reshape(self.C, self.P), self._out(deps, n0), False)
        members = (part * bits).sum(axis=-1).astype(np.uint32)            # per warp
        alleq = (word == members[..., None])
        out = np.where(alleq, members[..., None], np.uint32(0)).astype(np.uint32)
        return (V(out.reshape(self.C, self.P), self._out(deps, n0), False),
                V(alleq.reshape(self.C, self.P), self._out(deps, n0), False))
