"""The trace recorder of the SIMT machine: what the warps issue, as ``gpusim.trace`` ops.

Each op (``gpusim.trace.Op``) is one instruction group a warp issues, with the index of its *row*: the per-warp
active-lane counts of the mask it ran under (``rows``; computed once per mask).  ALU constructs are recorded by
their cost key (``costs.COSTS``: pipe, warp instructions, SASS label), memory ops with their access summary
(``_rec_op``); ``_out`` threads the scoreboard dependencies of computed values through ALU results.  Units:
warp instructions for counts, lanes for rows.  ``Recording`` is the base of the chunk's concern mixins: it also
holds the operand check (``_val``) and the error constructor (``_err``) they all use.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from ..trace import WARP, Op, OpKind
from . import costs as C_
from .values import ARRAYS, EMPTY, UNDEF, Mask, Ununified, V, const


class Recording:
    """Trace bookkeeping of a chunk (``runtime.Chunk``): ops, their lane-count rows, flops, kernel-parameter
    reads.  State (set by ``Chunk.__init__``): ``ops``, ``op_rows``, ``rows``, ``row_total``, ``flops``,
    ``_fields_seen``, ``mask``, ``recording``."""

    def _add_row(self, row: np.ndarray) -> int:
        self.rows.append(row)
        self.row_total.append(int(row.sum(dtype=np.int64)))
        return len(self.rows) - 1

    def _row_of(self, m: Mask) -> int:
        if m.rid >= 0:
            return m.rid
        a = m.a
        C, wpc = self.C, self.wpc
        if a.shape[1] == 1:
            per = a[:, 0]
            row = np.where(per[:, None], self.L.warp_lanes[None, :], 0).astype(np.uint8)
            if row.shape[0] != C:
                row = np.broadcast_to(row, (C, wpc))
        else:
            cnt = a.reshape(a.shape[0], wpc, WARP).sum(axis=2, dtype=np.uint8)
            row = cnt if cnt.shape[0] == C else np.broadcast_to(cnt, (C, wpc))
        m.rid = self._add_row(np.ascontiguousarray(row).reshape(-1))
        return m.rid

    def _rec(self, key, line, deps=(), flop=0):
        m = self.mask
        if m is EMPTY:
            return -1
        ri = self._row_of(m)
        entries = C_.COSTS.get(key)
        if entries is None:
            entries = C_.cost(key)
        ops = self.ops
        for pipe, n, label in entries:
            ops.append(Op(OpKind.ALU, pipe, n, line, deps, label=label))
            self.op_rows.append(ri)
        if flop:
            self.flops += flop * self.row_total[ri]
        return len(ops) - 1 if entries else -1

    def _out(self, deps: tuple, n0: int) -> tuple:
        """Scoreboard deps of a computed value: the last op recorded since ``n0`` when the inputs wait for a
        long-latency result (deps are transitive through ALU results: a chain load -> ALU -> address -> load
        stays ordered when loads are hoisted, and the engine holds the consumer for the ALU op's latency), else
        the inputs' own deps (nothing recorded) or none (values that wait for nothing)."""
        if not deps:
            return ()
        n = len(self.ops)
        return (n - 1,) if n > n0 else deps

    def _rec_op(self, kind, pipe, label, line, deps, mem=None) -> int:
        ri = self._row_of(self.mask)
        self.ops.append(Op(kind, pipe, 1, line, deps, mem=mem, label=label))
        self.op_rows.append(ri)
        return len(self.ops) - 1

    def _rec_span(self, key, line, deps=()) -> list:
        """Record ``key`` and return the indices of the ops it added."""
        n0 = len(self.ops)
        self._rec(key, line, deps)
        return list(range(n0, len(self.ops)))

    def _field(self, key, line) -> None:
        """A kernel parameter (array data pointer, shape entry, size; the global-memory descriptor) read from
        the constant bank: one ULDC.64 at its first use in the kernel (loop-invariant, so hoisted)."""
        if key in self._fields_seen or not self.recording or self.mask is EMPTY:
            return
        self._fields_seen.add(key)
        self._rec(("global_desc",) if key == "desc" else ("array_field",), line)


    def _val(self, x, line) -> V:
        if type(x) is V:
            return x
        if x is UNDEF:
            raise CompileError("a local variable is used before it is assigned", file=self.ck.file, line=line,
                               kernel=self.ck.name)
        if isinstance(x, (bool, int, float, np.generic)):
            return const(x)
        if type(x) is Ununified:
            raise x.error(x.message(), file=self.ck.file, line=line, kernel=self.ck.name)
        what = "an array" if isinstance(x, ARRAYS) else "a record" if type(x).__name__ == "RecordRef" else \
            type(x).__name__
        raise CompileError(f"{what} is used where a number is expected", file=self.ck.file, line=line,
                           kernel=self.ck.name)

    def _err(self, cls, msg, line, **kw):
        return cls(msg, file=self.ck.file, line=line, kernel=self.ck.name, **kw)
