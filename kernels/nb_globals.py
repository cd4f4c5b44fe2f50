"""numba-cuda documentation example: global variables captured as constants (``compute_totals`` reads the module
globals ``TAX_RATE`` and ``PRICES``, which numba freezes into the kernel when it compiles), exactly as the example
writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_globals.py
(test_ex_globals_constant_capture) at tag v0.30.4 (the text of the installed numba-cuda 0.30.4 package).
BSD-2-Clause, Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test
method to module level, with the globals it reads); only the import is switched and the host code is in
``launch()``.  The example's second launch (after reassigning TAX_RATE and PRICES, which must not change the
result) is a host-side change between launches that a launch description cannot express; one launch is made.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda

TAX_RATE = 0.08
PRICES = np.array([10.0, 25.0, 5.0, 15.0, 30.0], dtype=np.float64)


@cuda.jit
def compute_totals(quantities, totals):
    i = cuda.grid(1)
    if i < totals.size:
        totals[i] = quantities[i] * PRICES[i] * (1 + TAX_RATE)


def launch() -> dict:
    """``compute_totals[1, 32](d_quantities, d_totals)``."""
    d_quantities = np.array([1, 2, 3, 4, 5], dtype=np.float64)
    d_totals = np.zeros(5, dtype=np.float64)
    return {
        "kernel": compute_totals,
        "grid": (1,),
        "block": (32,),
        "shared_bytes": 0,
        "args": [d_quantities, d_totals],
        "outputs": [1],
        "reference": lambda: {1: np.array([10.8, 54.0, 16.2, 64.8, 162.0])},
        "rtol": 1e-7, "atol": 0,       # the example's np.testing.assert_allclose
        "flops": 15,
        "min_bytes": 2 * 8 * 5,
    }
