"""numba-cuda documentation example: naive matrix multiplication (``matmul``), exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_matmul.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test function to module level); only the
imports are switched and the host code is in ``launch()``.
"""
import math

import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda import float32
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda import float32


@cuda.jit
def matmul(A, B, C):
    """Perform square matrix multiplication of C = A * B."""
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        tmp = 0.0
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        C[i, j] = tmp


def launch(size: int = 32, seed: int = 0) -> dict:
    """The example runs it on 4 x 4 (``arange(16)`` times ones); the default here is a random size x size (float64)."""
    n = size
    rng = np.random.default_rng(seed)
    x_h = rng.random((n, n))
    y_h = rng.random((n, n))
    z_h = np.zeros([n, n])
    threadsperblock = (16, 16)
    blockspergrid_x = math.ceil(z_h.shape[0] / threadsperblock[0])
    blockspergrid_y = math.ceil(z_h.shape[1] / threadsperblock[1])
    blockspergrid = (blockspergrid_x, blockspergrid_y)
    return {
        "kernel": matmul,
        "grid": blockspergrid,
        "block": threadsperblock,
        "shared_bytes": 0,
        "args": [x_h, y_h, z_h],
        "outputs": [2],
        "reference": lambda: {2: x_h @ y_h},
        "rtol": 1e-12, "atol": 1e-12,
        "flops": 2 * n ** 3,
        "min_bytes": 3 * 8 * n * n,
    }
