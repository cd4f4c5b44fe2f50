"""numba-cuda's library transpose (``numba.cuda.kernels.transpose.transpose``'s ``kernel``): one 32 x 32 thread
block per tile, the tile staged through a padded (32 x 33) shared array so the column-wise read back is free of
bank conflicts -- the algorithm of NVIDIA's "efficient matrix transpose" blog post -- exactly as the library
writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/kernels/transpose.py at tag v0.30.4 (the text
of the installed numba-cuda 0.30.4 package), exercised by numba_cuda/numba/cuda/tests/cudapy/test_transpose.py.
BSD-2-Clause, Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from
``transpose()`` to module level); the values it closes over are module globals with the values ``transpose()``
computes on a device whose ``MAX_THREADS_PER_BLOCK`` is 1024 (every CUDA GPU since Fermi): ``tile_width =
tile_height = 32``, ``tile_shape = (32, 33)``, and ``dt`` the float64 numba type (``nps.from_dtype`` of the
test's float64 arrays).  Only the imports are switched and the host code is in ``launch()``: ``transpose()``'s
``blocks = int(b.shape[0] / tile_height + 1), int(b.shape[1] / tile_width + 1)`` (always one block more per
axis) and ``threads = tile_height, tile_width``; the input is the test's ``arange(rows * cols).reshape(cols,
rows)``.
"""
import math

import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda import float64
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda import float64

dt = float64                           # nps.from_dtype(a.dtype) for the float64 arrays
tpb = 1024                             # driver.get_device().MAX_THREADS_PER_BLOCK
# we need to factor available threads into x and y axis
tile_width = int(math.pow(2, math.log(tpb, 2) / 2))
tile_height = int(tpb / tile_width)

tile_shape = (tile_height, tile_width + 1)


@cuda.jit
def kernel(input, output):
    tile = cuda.shared.array(shape=tile_shape, dtype=dt)

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x * cuda.blockDim.x
    by = cuda.blockIdx.y * cuda.blockDim.y
    x = by + tx
    y = bx + ty

    if by + ty < input.shape[0] and bx + tx < input.shape[1]:
        tile[ty, tx] = input[by + ty, bx + tx]
    cuda.syncthreads()
    if y < output.shape[0] and x < output.shape[1]:
        output[y, x] = tile[tx, ty]


def launch(rows: int = 1025, cols: int = 512) -> dict:
    """``transpose(a, b)`` of the test's ``a = arange(rows * cols).reshape(cols, rows)`` (float64) into ``b``
    (rows x cols); the default is the test's largest float64 variant."""
    a = np.arange(rows * cols, dtype=np.float64).reshape(cols, rows)
    b = np.zeros(rows * cols, dtype=np.float64).reshape(rows, cols)
    # one block per tile, plus one for remainders
    blocks = int(b.shape[0] / tile_height + 1), int(b.shape[1] / tile_width + 1)
    # one thread per tile element
    threads = tile_height, tile_width
    return {
        "kernel": kernel,
        "grid": blocks,
        "block": threads,
        "shared_bytes": 0,
        "args": [a, b],
        "outputs": [1],
        "reference": lambda: {1: a.transpose().copy()},
        "rtol": 0, "atol": 0,
        "flops": 0,
        "min_bytes": 2 * 8 * rows * cols,
    }
