"""numba-cuda documentation example: shared-memory tiled matrix multiplication (``fast_matmul``, TPB = 16),
exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_matmul.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test function to module level, with the
``TPB`` it closes over as a module global); only the imports are switched and the host code is in
``launch()``.  ``square=False`` is the example's non-square case (5 x 23 times 23 x 7, grid sized from the
larger extents).
"""
import math

import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda import float32
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda import float32

# Controls threads per block and shared memory usage.
# The computation will be done on blocks of TPBxTPB elements.
# TPB should not be larger than 32 in this example
TPB = 16


@cuda.jit
def fast_matmul(A, B, C):
    """
    Perform matrix multiplication of C = A * B using CUDA shared memory.

    Reference: https://stackoverflow.com/a/64198479/13697228 by @RobertCrovella
    """
    # Define an array in the shared memory
    # The size and type of the arrays must be known at compile time
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)

    x, y = cuda.grid(2)

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x  # blocks per grid

    # Each thread computes one element in the result matrix.
    # The dot product is chunked into dot products of TPB-long vectors.
    tmp = float32(0.0)
    for i in range(bpg):
        # Preload data into shared memory
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]

        # Wait until all threads finish preloading
        cuda.syncthreads()

        # Computes partial product on the shared memory
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]

        # Wait until all threads finish computing
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


def launch(size: int = 32, square: bool = True, seed: int = 0) -> dict:
    """Square: random size x size (the example: 4 x 4); non-square: the example's 5 x 23 @ 23 x 7 (exact integers)."""
    rng = np.random.default_rng(seed)
    n = size
    if square:
        x_h = rng.random((n, n))
        y_h = rng.random((n, n))
        z_h = np.zeros([n, n])
        threadsperblock = (TPB, TPB)
        blockspergrid_x = math.ceil(z_h.shape[0] / threadsperblock[0])
        blockspergrid_y = math.ceil(z_h.shape[1] / threadsperblock[1])
    else:
        x_h = np.arange(115).reshape([5, 23])
        y_h = np.ones([23, 7])
        z_h = np.zeros([5, 7])
        threadsperblock = (TPB, TPB)
        grid_y_max = max(x_h.shape[0], y_h.shape[0])
        grid_x_max = max(x_h.shape[1], y_h.shape[1])
        blockspergrid_x = math.ceil(grid_x_max / threadsperblock[0])
        blockspergrid_y = math.ceil(grid_y_max / threadsperblock[1])
    blockspergrid = (blockspergrid_x, blockspergrid_y)
    M, K = x_h.shape
    N = y_h.shape[1]
    return {
        "kernel": fast_matmul,
        "grid": blockspergrid,
        "block": threadsperblock,
        "shared_bytes": 0,
        "args": [x_h, y_h, z_h],
        "outputs": [2],
        # the kernel accumulates in float32 (tmp = float32(0.0); shared tiles are float32)
        "reference": lambda: {2: x_h.astype(np.float32) @ y_h.astype(np.float32)},
        "rtol": 1e-5, "atol": 1e-5,
        "flops": 2 * M * N * K,
        "min_bytes": 8 * (M * K + K * N + M * N),
    }
