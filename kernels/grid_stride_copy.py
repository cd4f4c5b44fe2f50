"""Grid-stride copy whose occupancy is limited by dynamic shared memory.

A fixed grid of ``blocks`` blocks copies ``n`` floats with a grid-stride loop.  Each block also reserves
``dyn_shared_bytes`` of dynamic shared memory (declared, and one word of it written so it is not dead), which
the copy does not need: it only limits how many blocks fit on an SM (228 KB of shared memory per SM on H100,
plus 1 KB reserved per block).  256-thread blocks: 0 or 16 KB -> 8 blocks (64 warps, full occupancy), 48 KB ->
4 blocks, 100 KB -> 2, 200 KB -> 1 (8 warps).  Fewer warps in flight means fewer loads in flight, and the
copy falls below the DRAM bandwidth.  Compare theoretical occupancy (``sm__maximum_warps_per_active_cycle_pct``)
with achieved bandwidth.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def grid_stride_copy(a, out, dyn_words):
    dyn = cuda.shared.array(0, np.float32)       # dynamic shared memory: sized by the launch
    if cuda.threadIdx.x == 0 and dyn_words > 0:
        dyn[0] = a[0]                            # touch the reservation
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        out[i] = a[i]
        i += step


def launch(n: int = 1 << 20, dyn_shared_bytes: int = 49152, blocks: int = 264, block: int = 256,
           seed: int = 0) -> dict:
    """``blocks`` defaults to 2 per H100 SM; the suite uses 1056 (8 per SM: one full wave at full occupancy)."""
    if dyn_shared_bytes < 0 or dyn_shared_bytes % 4:
        raise ValueError(f"dyn_shared_bytes must be a non-negative multiple of 4, got {dyn_shared_bytes}")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    return {
        "kernel": grid_stride_copy,
        "grid": (blocks,),
        "block": (block,),
        "shared_bytes": dyn_shared_bytes,
        "args": [a, out, dyn_shared_bytes // 4],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: a.copy()},
        "rtol": 0.0, "atol": 0.0,
        "flops": 0,
        "min_bytes": 2 * 4 * n,
    }
