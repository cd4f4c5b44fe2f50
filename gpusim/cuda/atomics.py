"""The atomic units of the SIMT machine: ``cuda.atomic.*`` on global (L2) and shared memory.

Atomics apply with exact sequential semantics per address, in thread order (``_atomic_apply``): each active lane
gets the value its address held just before its own update.  An atomic whose result is unused on global memory
is recorded as a reduction (``RED``), as ptxas emits it.  Units: bytes for addresses.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from ..trace import OpKind, Pipe
from . import costs as C_
from .values import ARRAYS, EMPTY, ArrayRef, ArrayView, Ununified, V, _union, m_and
from .views import view_index


# the array dtypes numba-cuda's typing accepts per atomic (its cudadecl): a float16 add or an int8 max fails to compile
_ATOMIC_ALL = ("float64", "float32", "int32", "uint32", "int64", "uint64")
_ATOMIC_INT = ("int32", "uint32", "int64", "uint64")
_ATOMIC_DTYPES = {"and_": _ATOMIC_INT, "or_": _ATOMIC_INT, "xor": _ATOMIC_INT, "exch": _ATOMIC_INT,
                  "cas": _ATOMIC_INT, "compare_and_swap": _ATOMIC_INT, "inc": ("uint32", "uint64"),
                  "dec": ("uint32", "uint64")}


class Atomics:
    """The chunk's (``runtime.Chunk``) atomic operations."""

    def atomic(self, op, obj, idx, args, line, used=True) -> V:
        if op in ("cas", "exch"):
            CAS_CALLS[0] += 1            # (a while loop that keeps trying one may be a contended spin lock)
        if type(obj) is Ununified:
            raise self._err(obj.error, obj.message(), line)
        if not isinstance(obj, ARRAYS):
            raise self._err(CompileError, f"cuda.atomic.{op} needs an array as its first argument", line)
        if view_index(idx):
            raise self._err(CompileError, f"cuda.atomic.{op}: Cannot cast a slice to int64 (an atomic updates one "
                            "element: its index is an integer or a tuple of integers)", line)
        if type(idx) is tuple and isinstance(obj, (ArrayRef, ArrayView)) and obj.ndim == 1:
            raise self._err(CompileError, f"cuda.atomic.{op}: Cannot cast UniTuple(int64 x {len(idx)}) to int64 (a 1-d "
                            "array's index is an integer, not a tuple)", line)
        # numba-cuda compiles a float index of an atomic, converted to an integer (truncated)
        if type(obj) is ArrayView:
            idx = tuple(self.cast(x, np.dtype(np.int64), line) if type(x) is V and x.v.dtype.kind == "f" else x
                        for x in (idx if type(idx) is tuple else (idx,)))
        arr, idx = self._norm_idx(obj, idx, line, True)
        if arr.space in ("local", "const"):
            raise self._err(UnsupportedConstruct, f"cuda.atomic.{op} on a {arr.space} array", line)
        allowed = _ATOMIC_DTYPES.get(op, _ATOMIC_ALL)
        if arr.dtype.name not in allowed:
            raise self._err(CompileError, f"cuda.atomic.{op} has no implementation for a {arr.dtype} array (numba-cuda "
                            f"types it for {', '.join(allowed)})", line)
        m = self.mask
        if m is EMPTY:
            return V(arr.dtype.type(0), (), False)
        # numba-cuda compiles a float index of an atomic, converted to an integer (truncated)
        idx = tuple(self.cast(x, np.dtype(np.int64), line) if type(x) is V and x.v.dtype.kind == "f" else x
                    for x in idx)
        vals = [self._val(a, line) for a in args]
        flat, deps, runtime, nwrap = self._index(arr, idx, line, True)
        S = (self.C, self.P)
        sel = None if m.a is None else np.broadcast_to(m.a, S).reshape(-1)
        if arr.space == "shared":
            pos = self._lin(arr, flat)
            dst = arr.flatview
        else:
            pos = flat
            dst = arr.span
        pos = np.broadcast_to(np.asarray(pos, dtype=np.int64), S).reshape(-1)
        vv = [np.broadcast_to(np.asarray(v.v).astype(arr.dtype), S).reshape(-1) for v in vals]
        if sel is not None:
            pos = pos[sel]
            vv = [x[sel] for x in vv]
        old = _atomic_apply(op, dst, pos, vv, used)
        if used:
            res = np.zeros(S[0] * S[1], arr.dtype)
            if sel is None:
                res[:] = old
            else:
                res[sel] = old
            res = res.reshape(S)
        else:
            res = arr.dtype.type(0)
        if not self.recording:
            return V(res, (), False)
        adeps = self._rec_index(arr, runtime, nwrap, deps, line)
        self._load_cse.clear()
        self._vec_loads.clear()
        n0 = len(self.ops)
        vdeps = adeps
        for v in vals:
            vdeps = _union(vdeps, v.deps)
        for v in vals:
            if v.v.dtype != arr.dtype and not v.const:
                self._cvt(v, arr.dtype, line)
        vdeps = _union(adeps, self._out(vdeps, n0))
        if op in _CAS_MINMAX and arr.dtype.kind == "f" and arr.space != "shared":
            return self._cas_minmax(op, arr, flat, vv, old, sel, res, used, vdeps, line)
        mem = self._mem(arr, flat)
        sp = "shared" if arr.space == "shared" else ("global" if used else "global_red")
        opname = {"and_": "and", "or_": "or", "cas": "cas", "exch": "exch"}.get(op, op)
        oi = self._rec_op(OpKind.ATOMIC, Pipe.LSU, C_.mem_label("atomic", sp, arr.itemsize, opname), line,
                          vdeps, mem)
        return V(res, (oi,) if used else (), False)

    def _cas_minmax(self, op, arr, flat, vv, old, sel, res, used, vdeps, line) -> V:
        """numba-cuda's float ``atomic.max`` / ``min`` / ``nanmax`` / ``nanmin`` on global memory: a volatile load of
        the location, then a compare-and-swap only in the lanes whose value would change it (numba's
        ``___numba_atomic_float_max`` and kin: no PTX atomic max/min on floats); a lane whose value does not improve
        on the location issues no atomic at all (records/h200/ncu_wild.json, numba-examples' min/max: no L2
        atomic sector in 4,224 warps' calls).  Each lane's ``old`` (the location just before its turn, in thread
        order) decides it, as the sequential semantics give it."""
        S = (self.C, self.P)
        v = vv[0]                                    # (the active lanes' values, as ``old``)
        better = (v > old) if op in ("max", "nanmax") else (v < old)
        if op in ("nanmax", "nanmin"):
            better |= np.isnan(old) & ~np.isnan(v)
        need = np.zeros(S[0] * S[1], bool)
        if sel is None:
            need[:] = better
        else:
            need[sel] = better
        mem = self._mem(arr, flat)
        ld = self._rec_op(OpKind.LOAD, Pipe.LSU, C_.mem_label("load", "global", arr.itemsize) + ".STRONG.GPU", line,
                          vdeps, None if mem is None else dataclasses.replace(mem, l1_bypass=True))
        cmp = self._rec_span(("cmp", arr.dtype.name), line, (ld,))
        deps = (ld,) + tuple(cmp)
        if need.any():
            saved = self.mask
            self.mask = m_and(saved, need.reshape(S))
            try:
                cas = self._rec_op(OpKind.ATOMIC, Pipe.LSU, C_.mem_label("atomic", "global", arr.itemsize, "cas"),
                                   line, deps, self._mem(arr, flat))
            finally:
                self.mask = saved
            deps = deps + (cas,)
        return V(res, deps if used else (), False)


# ---- atomics: exact sequential semantics per address, in thread order -------------------------------------------

#: compare-and-swap / exchange calls executed so far (control.loop_test: a spin loop that never lets go)
CAS_CALLS = [0]

#: float atomics numba-cuda compiles to a load and a compare-and-swap loop (``ir_numba_atomic_minmax``)
_CAS_MINMAX = frozenset({"max", "min", "nanmax", "nanmin"})

_UFUNC_ATOMIC = {"add": np.add, "sub": np.add, "max": np.maximum, "min": np.minimum, "and_": np.bitwise_and,
                 "or_": np.bitwise_or, "xor": np.bitwise_xor, "nanmax": np.fmax, "nanmin": np.fmin}


def _atomic_apply(op, dst: np.ndarray, pos: np.ndarray, vv: list, used: bool) -> np.ndarray:
    """Apply the atomic op of each lane (in order) to ``dst``; return each lane's old value."""
    n = len(pos)
    dt = dst.dtype
    if n == 0:
        return np.zeros(0, dt)
    val = vv[0]
    if op == "sub":
        val = np.negative(val)
    if op in ("add", "sub") and not used:
        np.add.at(dst, pos, val)
        return np.zeros(0, dt)
    order = np.argsort(pos, kind="stable")
    sp = pos[order]
    sv = val[order]
    newg = np.empty(n, bool)
    newg[0] = True
    newg[1:] = sp[1:] != sp[:-1]
    starts = np.flatnonzero(newg)
    sizes = np.diff(np.append(starts, n))
    addrs = sp[starts]
    init = dst[addrs].copy()
    old_s = np.empty(n, dt)
    G = len(starts)
    maxs = int(sizes.max())
    if op == "exch":
        old_s[1:] = sv[:-1]
        old_s[starts] = init
        final = sv[starts + sizes - 1]
    elif op in ("add", "sub") and dt.kind in "iu":
        cs = np.cumsum(sv, dtype=dt)
        excl = cs - sv
        base = excl[starts]
        old_s = np.repeat(init - base, sizes) + excl
        final = init + (cs[starts + sizes - 1] - base)
    elif op in _UFUNC_ATOMIC:
        uf = _UFUNC_ATOMIC[op]
        # numba-cuda's float max/min: ``val > old ? val : old`` -- a NaN value leaves the location as it is, a NaN
        # location stays NaN (nanmax/nanmin: fmax/fmin, a NaN location takes the value)
        sticky = op in ("max", "min") and dt.kind == "f"
        if sticky:
            uf = np.fmax if op == "max" else np.fmin
        final = np.empty(G, dt)
        if G <= maxs:
            for g in range(G):
                s, e = starts[g], starts[g] + sizes[g]
                acc = uf.accumulate(np.concatenate(([init[g]], sv[s:e])).astype(dt))
                if sticky and np.isnan(init[g]):
                    acc[:] = init[g]
                old_s[s:e] = acc[:-1]
                final[g] = acc[-1]
        else:
            cur = init.copy()
            by = np.argsort(-sizes, kind="stable")
            ssz = sizes[by]
            for r in range(maxs):
                k = int(np.count_nonzero(ssz > r))
                gi = by[:k]
                p_ = starts[gi] + r
                old_s[p_] = cur[gi]
                nxt = uf(cur[gi], sv[p_]).astype(dt)
                cur[gi] = np.where(np.isnan(cur[gi]), cur[gi], nxt) if sticky else nxt
            final = cur
    else:   # cas, inc, dec: state machines, sequential per address
        cmpv = vv[0][order]
        newv = vv[1][order] if len(vv) > 1 else None
        cur = init.copy()
        if G <= maxs:
            for g in range(G):
                s, e = int(starts[g]), int(starts[g] + sizes[g])
                c = cur[g].item()
                a_ = cmpv[s:e].tolist()
                b_ = newv[s:e].tolist() if newv is not None else None
                out = []
                for j in range(e - s):
                    out.append(c)
                    c = _step(op, c, a_[j], b_[j] if b_ is not None else None)
                old_s[s:e] = out
                cur[g] = c
        else:
            by = np.argsort(-sizes, kind="stable")
            ssz = sizes[by]
            for r in range(maxs):
                k = int(np.count_nonzero(ssz > r))
                gi = by[:k]
                p_ = starts[gi] + r
                o = cur[gi]
                old_s[p_] = o
                if op == "cas":
                    cur[gi] = np.where(o == cmpv[p_], newv[p_], o)
                elif op == "inc":
                    cur[gi] = np.where(o >= cmpv[p_], 0, o + 1)
                else:
                    cur[gi] = np.where((o == 0) | (o > cmpv[p_]), cmpv[p_], o - 1)
        final = cur
    dst[addrs] = final
    old = np.empty(n, dt)
    old[order] = old_s
    return old


def _step(op, c, a, b):
    if op == "cas":
        return b if c == a else c
    if op == "inc":
        return 0 if c >= a else c + 1
    return a if (c == 0 or c > a) else c - 1
