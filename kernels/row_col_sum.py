"""Row walk vs column walk of an n x n fp32 matrix: the lecture's coalescing example.

Both kernels give one thread per output.  In ``row_sum`` thread i walks row i: at every step the 32 lanes of
a warp read 32 different rows, n * 4 bytes apart, so each load instruction touches 32 sectors (uncoalesced).
In ``col_sum`` thread j walks column j: at every step the warp reads 32 neighbouring floats of one row, a
single 128 B line (coalesced, 4 sectors).  Same arithmetic, same bytes of the matrix; the column walk is
several times faster.  Compare sectors per request and L1/L2 hit rates (the row walk reuses each line over
later iterations only if it survives in L1).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def row_sum(m, out):
    i = cuda.grid(1)                   # this thread's row
    if i < out.size:
        s = np.float32(0.0)
        for j in range(m.shape[1]):
            s += m[i, j]
        out[i] = s


@cuda.jit
def col_sum(m, out):
    j = cuda.grid(1)                   # this thread's column
    if j < out.size:
        s = np.float32(0.0)
        for i in range(m.shape[0]):
            s += m[i, j]
        out[j] = s


def launch(n: int = 1024, walk: str = "row", block: int = 128, seed: int = 0) -> dict:
    """``walk="row"``: each thread sums a row (uncoalesced); ``walk="col"``: a column (coalesced)."""
    if walk not in ("row", "col"):
        raise ValueError(f"walk must be 'row' or 'col', got {walk!r}")
    rng = np.random.default_rng(seed)
    m = (rng.random((n, n), dtype=np.float32) + np.float32(0.5)).astype(np.float32)   # in [0.5, 1.5): no cancellation
    out = np.zeros(n, np.float32)
    axis = 1 if walk == "row" else 0
    return {
        "kernel": row_sum if walk == "row" else col_sum,
        "grid": ((n + block - 1) // block,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [m, out],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: m.astype(np.float64).sum(axis=axis)},
        "rtol": 1e-4, "atol": 1e-4,
        "flops": n * n,
        "min_bytes": 4 * n * n + 4 * n,
    }
