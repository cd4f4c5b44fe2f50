"""Cold burst: every CTA of a sub-wave or one-wave grid reads ``k`` fp32 values per thread from DRAM at once.

Thread ``i`` of ``n`` (the grid's threads) reads ``a[i + j * n]`` for ``j < k`` (each warp instruction one
coalesced 128 B line, the ``k`` loads of a thread independent) and writes their sum to ``out[i]``.  The L2 is cold
(the measurement flushes it), so the whole burst of ``4 * k * n`` bytes comes from DRAM while the SMs wait: the
kernel measures how fast the memory system serves a burst from idle, by its size -- the start of every short
streaming kernel (a vector add of a few MB spends most of its time there).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def cold_burst(a, out, k):
    i = cuda.grid(1)
    n = cuda.gridsize(1)
    s = np.float32(0.0)
    for j in range(k):
        s += a[i + j * n]
    out[i] = s


def launch(ctas: int = 132, k: int = 4, block: int = 256, seed: int = 0) -> dict:
    """``ctas`` CTAs of ``block`` threads, ``k`` loads per thread: ``4 * k * ctas * block`` bytes read."""
    if ctas < 1 or k < 1 or block < 32 or block % 32:
        raise ValueError(f"ctas ({ctas}) and k ({k}) must be positive and block ({block}) a multiple of 32")
    n = ctas * block
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n * k, dtype=np.float32)
    out = np.zeros(n, np.float32)
    return {
        "kernel": cold_burst,
        "grid": (ctas,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [a, out, k],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: a.reshape(k, n).astype(np.float64).sum(axis=0)},
        "rtol": 1e-5, "atol": 1e-4,
        "flops": n * k,
        "min_bytes": 4 * n * (k + 1),
    }
