"""Shared-memory tiled fp32 matrix multiply (TILE = 16, 16 x 16 thread blocks, two barriers per tile).

Each block walks the k dimension one 16-wide tile at a time: every thread loads one element of the A tile
and one of the B tile into shared memory, the block synchronizes, each thread does 16 FMAs out of shared
memory, and the block synchronizes again before the tiles are overwritten.  Global loads drop 16-fold
compared with ``matmul_naive``; the price is two ``syncthreads`` per tile (look at the barrier stalls) and
shared-memory traffic (conflict-free: a row of sA is a broadcast, a row of sB is 16 consecutive words).
Sizes that are not multiples of 16 are handled by zero-filling the tile edges.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda

TILE = 16


@cuda.jit
def matmul_tiled(A, B, C):
    sA = cuda.shared.array((TILE, TILE), np.float32)
    sB = cuda.shared.array((TILE, TILE), np.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    n_k = A.shape[1]
    s = np.float32(0.0)
    for t in range((n_k + TILE - 1) // TILE):
        ka = t * TILE + tx
        if row < A.shape[0] and ka < n_k:
            sA[ty, tx] = A[row, ka]
        else:
            sA[ty, tx] = np.float32(0.0)
        kb = t * TILE + ty
        if kb < n_k and col < B.shape[1]:
            sB[ty, tx] = B[kb, col]
        else:
            sB[ty, tx] = np.float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            s += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = s


def launch(n: int = 256, seed: int = 0) -> dict:
    """C = A @ B for n x n fp32 matrices, on TILE x TILE thread blocks."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    C = np.zeros((n, n), np.float32)
    g = (n + TILE - 1) // TILE
    return {
        "kernel": matmul_tiled,
        "grid": (g, g),
        "block": (TILE, TILE),
        "shared_bytes": 0,
        "args": [A, B, C],
        "meta": {},
        "outputs": [2],
        "reference": lambda: {2: A.astype(np.float64) @ B.astype(np.float64)},
        "rtol": 1e-4, "atol": 2e-5 * n,
        "flops": 2 * n ** 3,
        "min_bytes": 3 * 4 * n * n,
    }
