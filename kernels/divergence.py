"""Warp divergence: threads of one warp taking different paths run both, one after the other.

Each thread runs a chain of ``iters`` fp32 FMAs, but on one of two different loop bodies chosen by
``(threadIdx.x // group) % 2``.  With ``group`` = 32 (or more) the choice is uniform across each warp and
every warp runs one body; with ``group`` < 32 both bodies appear inside every warp, the warp executes them
one after the other with half of its lanes masked off, and the kernel issues twice the instructions at half
the active threads per instruction (``smsp__thread_inst_executed_per_inst_executed.ratio`` 32 -> 16).
``group`` = 16, 8, 4, 2, 1 all cost the same: divergence is all-or-nothing per warp.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def divergence(x, out, group, iters, a, b):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        if (cuda.threadIdx.x // group) % 2 == 0:
            for _ in range(iters):
                v = v * a + b
        else:
            for _ in range(iters):
                v = v * a - b
        out[i] = v


def _reference(x, group, iters, a, b, block):
    lane_path = ((np.arange(x.size) % block) // group) % 2 == 0
    v = x.copy()
    for _ in range(iters):
        v = np.where(lane_path, v * a + b, v * a - b).astype(np.float32)
    return v


def launch(n: int = 1 << 16, group: int = 8, iters: int = 64, block: int = 256, seed: int = 0) -> dict:
    """``group``: width of the runs of consecutive threads that take the same path (32 = warp-uniform)."""
    if group < 1:
        raise ValueError(f"group must be >= 1, got {group}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    a, b = np.float32(0.999), np.float32(0.001)     # float32 scalars keep the chain in fp32
    return {
        "kernel": divergence,
        "grid": ((n + block - 1) // block,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [x, out, group, iters, a, b],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: _reference(x, group, iters, a, b, block)},
        "rtol": 1e-4, "atol": 1e-4,
        "flops": 2 * n * iters,
        "min_bytes": 2 * 4 * n,
    }
