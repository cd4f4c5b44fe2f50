"""numba-cuda documentation example: a kernel calling a NumPy ufunc on whole arrays (``f``: ``np.sin(x, r)``,
launched as one thread), exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_ufunc.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level); only the
import is switched and the host code is in ``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def f(r, x):
    # Compute sin(x) with result written to r
    np.sin(x, r)


def launch(size: int = 10) -> dict:
    n = size
    """``f[1, 1](r, x)`` on ``np.arange(10, dtype=np.float32) - 5``."""
    # Declare input and output arrays
    x = np.arange(n, dtype=np.float32) - n // 2
    r = np.zeros_like(x)
    return {
        "kernel": f,
        "grid": (1,),
        "block": (1,),
        "shared_bytes": 0,
        "args": [r, x],
        "outputs": [0],
        "reference": lambda: {0: np.sin(x)},
        "rtol": 1e-6, "atol": 1e-6,    # the example's np.testing.assert_allclose (rtol 1e-7) on float32
        "flops": n,
        "min_bytes": 2 * 4 * n,
    }
