"""numba-cuda documentation example: CPU/GPU compatibility (``business_logic``, a ``@numba.jit`` function, called
from the kernel ``f``), exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_cpu_gpu_compat.py at
tag v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  ``business_logic`` and the kernel are unchanged (lifted from the test method to module
level); only the imports are switched and the host code is in ``launch()``.  The example launches with
``f.forall(len(X))``; ``launch()`` gives that grid explicitly.
"""
from math import pi

import numpy as np

try:                                   # the real front end when it is installed ...
    import numba
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda as numba   # numba.jit: a function usable on the host and from kernels
    from gpusim import cuda


@numba.jit
def business_logic(x, y, z):
    return 4 * z * (2 * x - (4 * y) / 2 * pi)


@cuda.jit
def f(res, xarr, yarr, zarr):
    tid = cuda.grid(1)
    if tid < len(xarr):
        # The function decorated with numba.jit may be directly reused
        res[tid] = business_logic(xarr[tid], yarr[tid], zarr[tid])


def launch(tpb: int = 128) -> dict:
    """The example's data: X = [1, 10, 234], Y = [2, 2, 4014], Z = [3, 14, 2211] (int64), results float64."""
    X = np.array([1, 10, 234])
    Y = np.array([2, 2, 4014])
    Z = np.array([3, 14, 2211])
    results = np.array([0.0, 0.0, 0.0])
    # [-126.79644737231007, 416.28324559588634, -218912930.2987788]
    expect = lambda: np.array([4 * z * (2 * x - (4 * y) / 2 * pi) for x, y, z in zip(X.tolist(), Y.tolist(),
                                                                                      Z.tolist())])
    return {
        "kernel": f,
        "grid": ((len(X) + tpb - 1) // tpb,),
        "block": (tpb,),
        "shared_bytes": 0,
        "args": [results, X, Y, Z],
        "outputs": [0],
        "reference": lambda: {0: expect()},
        "rtol": 0, "atol": 0,          # the example's np.testing.assert_equal
        "flops": 6 * len(X),
        "min_bytes": 4 * 8 * len(X),
    }
