"""Naive fp32 matrix multiply: one thread per output element, every operand straight from global memory.

Thread (row, col) reads row ``row`` of A and column ``col`` of B: 2 n loads for 2 n flops.  Across a warp
(consecutive ``col``) the B loads are coalesced and the A loads are one broadcast address, so the kernel
lives on L1/L2 hits; compare with ``matmul_tiled`` which stages 16 x 16 tiles in shared memory and cuts
global loads 16-fold.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def matmul_naive(A, B, C):
    col, row = cuda.grid(2)            # x runs along columns: neighbouring threads, neighbouring columns
    if row < C.shape[0] and col < C.shape[1]:
        s = np.float32(0.0)
        for k in range(A.shape[1]):
            s += A[row, k] * B[k, col]
        C[row, col] = s


def launch(n: int = 256, block: int = 16, seed: int = 0) -> dict:
    """C = A @ B for n x n fp32 matrices, on ``block`` x ``block`` thread blocks."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    C = np.zeros((n, n), np.float32)
    g = (n + block - 1) // block
    return {
        "kernel": matmul_naive,
        "grid": (g, g),
        "block": (block, block),
        "shared_bytes": 0,
        "args": [A, B, C],
        "meta": {},
        "outputs": [2],
        "reference": lambda: {2: A.astype(np.float64) @ B.astype(np.float64)},
        "rtol": 1e-4, "atol": 2e-5 * n,
        "flops": 2 * n ** 3,
        "min_bytes": 3 * 4 * n * n,
    }
