"""Sum reduction: grid-stride partial sums, a shared-memory tree with barriers, one atomic add per block.

Each thread first adds up the elements ``i, i + gridsize, ...`` in a register; the block then halves its
256 partial sums in shared memory (8 rounds, a ``syncthreads`` after each; fewer and fewer threads active, so
the later rounds are divergent and barrier-bound), and thread 0 adds the block's sum into ``result[0]`` with
one global atomic.  Few blocks: the grid-stride loop dominates (memory-bound).  One element per thread
(``blocks = n / 256``): the tree and the atomics at one address in L2 dominate.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda

BLOCK = 256          # threads per block; the tree below assumes this power of two


@cuda.jit
def reduce_sum(x, result):
    buf = cuda.shared.array(BLOCK, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    s = np.float32(0.0)
    while i < x.size:
        s += x[i]
        i += step
    buf[t] = s
    cuda.syncthreads()
    h = BLOCK // 2
    while h > 0:
        if t < h:
            buf[t] += buf[t + h]
        cuda.syncthreads()
        h //= 2
    if t == 0:
        cuda.atomic.add(result, 0, buf[0])


def launch(n: int = 1 << 20, blocks: int = 0, seed: int = 0) -> dict:
    """``blocks`` = 0 means one element per thread (``ceil(n / 256)`` blocks)."""
    rng = np.random.default_rng(seed)
    x = (rng.random(n, dtype=np.float32) + np.float32(0.5)).astype(np.float32)   # positive: no cancellation
    result = np.zeros(1, np.float32)
    grid = blocks if blocks > 0 else (n + BLOCK - 1) // BLOCK
    return {
        "kernel": reduce_sum,
        "grid": (grid,),
        "block": (BLOCK,),
        "shared_bytes": 0,
        "args": [x, result],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: np.array([x.astype(np.float64).sum()])},
        "rtol": 1e-4, "atol": 0.0,      # 65536 fp32 atomics into one sum: ~1e-5 relative rounding
        "flops": n,
        "min_bytes": 4 * n,
    }
