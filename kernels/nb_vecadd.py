"""numba-cuda documentation example: vector addition (``f``), the kernel exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_vecadd.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level); only the
import is switched (numba when installed, else gpusim) and the host code is in ``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def f(a, b, c):
    # like threadIdx.x + (blockIdx.x * blockDim.x)
    tid = cuda.grid(1)
    size = len(c)

    if tid < size:
        c[tid] = a[tid] + b[tid]


def launch(N: int = 10000, nthreads: int = 256, seed: int = 1) -> dict:
    """The example's ``f[nblocks, nthreads](a, b, c)`` on ``np.random.random(N)`` vectors (float64; the example
    uses N = 100000)."""
    rng = np.random.default_rng(seed)
    a = rng.random(N)
    b = rng.random(N)
    c = np.zeros_like(a)
    # Enough blocks to cover the entire vector depending on its length
    nblocks = (len(a) // nthreads) + 1
    return {
        "kernel": f,
        "grid": (nblocks,),
        "block": (nthreads,),
        "shared_bytes": 0,
        "args": [a, b, c],
        "outputs": [2],
        "reference": lambda: {2: a + b},
        "rtol": 0, "atol": 0,          # the example's np.testing.assert_equal
        "flops": N,
        "min_bytes": 3 * 8 * N,
    }
