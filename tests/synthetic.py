"""Hand-built traces for testing the timing engine without a front end."""
from __future__ import annotations

import numpy as np

from gpusim.trace import (KernelTrace, Op, OpKind, OpTable, Pipe, Space, coalesce_global, shared_access)

GB = 1 << 32  # arrays live 4 GiB apart in the synthetic address space


def streaming_trace(n: int, *, n_in: int = 2, block: int = 256, elem: int = 4, stride: int = 1,
                    chunk_threads: int = 1 << 20, name: str = "stream") -> KernelTrace:
    """out[i] = sum of n_in inputs at [i*stride]: n_in loads, one FP32 op, one store per thread."""
    nblocks = -(-n // block)
    wpc = block // 32
    per = max(1, chunk_threads // block)
    tables = []
    for first in range(0, nblocks, per):
        nc = min(per, nblocks - first)
        nw = nc * wpc
        tid = first * block + np.arange(nc * block)
        valid = tid < n
        def addr(k, s):
            return np.where(valid, k * GB + tid * elem * s, -1).reshape(nw, 32)
        ops = [Op(OpKind.ALU, Pipe.INT, 6, 1, label="IMAD")]
        for k in range(n_in):
            ops.append(Op(OpKind.LOAD, Pipe.LSU, 1, 2, mem=coalesce_global(addr(k + 1, stride), elem), label="LDG"))
        ops.append(Op(OpKind.ALU, Pipe.FP32, max(1, n_in - 1), 2, deps=tuple(range(1, n_in + 1)), label="FADD"))
        ops.append(Op(OpKind.STORE, Pipe.LSU, 1, 2, deps=(n_in + 1,), mem=coalesce_global(addr(0, 1), elem),
                      label="STG"))
        act = np.full((len(ops), nw), 32, np.uint8)
        act[1:] = valid.reshape(nw, 32).sum(1).astype(np.uint8)
        tables.append(OpTable(first, nc, wpc, ops, act))
    return KernelTrace(name, "cuda", (nblocks, 1, 1), (block, 1, 1), 16, 0, tables)


def alu_trace(n_ctas: int, *, block: int = 128, n_inst: int = 2000, pipe: Pipe = Pipe.FP32, regs: int = 32,
              shared: int = 0, barrier: bool = False) -> KernelTrace:
    """Compute-only CTAs: each warp issues n_inst instructions on one pipe (optionally split by a barrier)."""
    wpc = block // 32
    half = n_inst // 2
    ops = [Op(OpKind.ALU, pipe, half, 1, label="FFMA")]
    if barrier:
        ops.append(Op(OpKind.BARRIER, Pipe.BRANCH, 1, 2, label="BAR.SYNC"))
    ops.append(Op(OpKind.ALU, pipe, n_inst - half, 3, label="FFMA"))
    return KernelTrace("alu", "cuda", (n_ctas, 1, 1), (block, 1, 1), regs, shared,
                       [OpTable(0, n_ctas, wpc, ops, None)])


def shared_trace(n_ctas: int, stride_words: int, *, block: int = 256, reps: int = 64) -> KernelTrace:
    """Each warp reads shared[(lane * stride) % 8192] `reps` times (dependent chain through an add)."""
    wpc = block // 32
    lane = np.arange(32)
    offs = ((lane * stride_words) % 8192) * 4
    acc = shared_access(np.tile(offs, (n_ctas * wpc, 1)), 4)
    ops = []
    for r in range(reps):
        deps = (len(ops) - 1,) if ops else ()
        ops.append(Op(OpKind.LOAD, Pipe.LSU, 1, 1, deps=deps, mem=acc, label="LDS"))
        ops.append(Op(OpKind.ALU, Pipe.FP32, 1, 1, deps=(len(ops) - 1,), label="FADD"))
    return KernelTrace("shared", "cuda", (n_ctas, 1, 1), (block, 1, 1), 32, 32768,
                       [OpTable(0, n_ctas, wpc, ops, None)])
