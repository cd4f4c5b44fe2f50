"""numba-cuda documentation example: grid synchronization (``sequential_rows``, compiled eagerly for the signature
``(int32[:, ::1],)``: each row of a matrix computed from the previous one, ``cuda.cg.this_grid().sync()`` between
rows), exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_cg.py at tag v0.30.4
(the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA CORPORATION &
AFFILIATES.  The kernel is unchanged (lifted from the test method to module level, with the ``sig`` its decorator
uses as a module global); only the imports are switched and the host code is in ``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda import int32
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda import int32

sig = (int32[:, ::1],)


@cuda.jit(sig)
def sequential_rows(M):
    col = cuda.grid(1)
    g = cuda.cg.this_grid()

    rows = M.shape[0]
    cols = M.shape[1]

    for row in range(1, rows):
        opposite = cols - col - 1
        # Each row's elements are one greater than the previous row
        M[row, col] = M[row - 1, opposite] + 1
        # Wait until all threads have written their column element,
        # and that the write is visible to all other threads
        g.sync()


def launch(size: int = 64, blockdim: int = 32) -> dict:
    """``sequential_rows[griddim, blockdim](A)`` on a size x size int32 matrix (the example: 1024 x 1024).  The example
    first checks ``sequential_rows.overloads[sig].max_cooperative_grid_blocks(blockdim)`` (a test guard)."""
    n = size
    # Empty input data
    A = np.zeros((n, n), dtype=np.int32)
    griddim = A.shape[1] // blockdim
    return {
        "kernel": sequential_rows,
        "grid": (griddim,),
        "block": (blockdim,),
        "shared_bytes": 0,
        "args": [A],
        "outputs": [0],
        "reference": lambda: {0: np.tile(np.arange(n, dtype=np.int32), (n, 1)).T},
        "rtol": 0, "atol": 0,
        "flops": n * n,
        "min_bytes": 2 * 4 * n * n,
    }
