"""Joining the chunk tables of a launch: consecutive chunks whose op lists are identical become one ``OpTable``
with their memory accesses (and active-lane counts) concatenated.  Nothing of the compiler's: it keeps the
trace small; the timing engine replays the joined table exactly as the separate ones.
"""
from __future__ import annotations

import numpy as np

from .. import trace as T
from ..trace import Op, OpTable
from ._layouts import WARP


# ---------------------------------------------------------------------------------------------------------
# joining chunk tables
# ---------------------------------------------------------------------------------------------------------

def _signature(t: OpTable):
    return tuple((o.kind, o.pipe, o.n_inst, o.line, o.deps, o.flops, o.mma_dtype, o.label, o.sync, o.smem_bytes,
                  None if o.mem is None else (o.mem.space, o.mem.bytes_per_lane)) for o in t.ops)


def merge_tables(tables: list[OpTable]) -> list[OpTable]:
    """Join consecutive tables with identical op lists into one table (concatenating their accesses)."""
    out: list[OpTable] = []
    group: list[OpTable] = []
    sig = None
    for t in tables:
        s = _signature(t)
        if group and s == sig:
            group.append(t)
            continue
        if group:
            out.append(_join(group))
        group, sig = [t], s
    if group:
        out.append(_join(group))
    return out


def _join(group: list[OpTable]) -> OpTable:
    if len(group) == 1:
        return group[0]
    t0 = group[0]
    ops = []
    for i, o in enumerate(t0.ops):
        mem = o.mem
        if mem is not None:
            mem = T.concat_access([t.ops[i].mem for t in group])
        ops.append(Op(kind=o.kind, pipe=o.pipe, n_inst=o.n_inst, line=o.line, deps=o.deps, mem=mem, flops=o.flops,
                      mma_dtype=o.mma_dtype, label=o.label, sync=o.sync, independent=o.independent,
                      smem_bytes=o.smem_bytes))
    if all(t.active is None for t in group):
        active = None
    else:
        active = np.concatenate([t.active if t.active is not None else
                                 np.full((len(t.ops), t.n_warps), WARP, np.uint8) for t in group], axis=1)
    return OpTable(first_cta=t0.first_cta, n_ctas=sum(t.n_ctas for t in group), warps_per_cta=t0.warps_per_cta,
                   ops=ops, active=active)
