"""numba-cuda documentation example: a global device array captured by pointer (``compute_totals`` reads the
module global ``PRICES``, a device array: the kernel sees its current contents at each launch), exactly as the
example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_globals.py
(test_ex_globals_device_array_capture) at tag v0.30.4 (the text of the installed numba-cuda 0.30.4 package).
BSD-2-Clause, Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test
method to module level, with the global it reads); only the import is switched and the host code is in
``launch()``, which updates PRICES in place (``copy_to_device``) before the launch, as the example does before
its second launch.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda

# Global device array - pointer is captured, not data
PRICES = cuda.to_device(
    np.array([10.0, 25.0, 5.0, 15.0, 30.0], dtype=np.float32)
)


@cuda.jit
def compute_totals(quantities, totals):
    i = cuda.grid(1)
    if i < totals.size:
        totals[i] = quantities[i] * PRICES[i]


def launch() -> dict:
    """``PRICES.copy_to_device(...)`` then ``compute_totals[1, 32](d_quantities, d_totals)``."""
    d_quantities = np.array([1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32)
    d_totals = np.zeros(5, dtype=np.float32)
    # Mutate the device array in-place
    PRICES.copy_to_device(
        np.array([20.0, 50.0, 10.0, 30.0, 60.0], dtype=np.float32)
    )
    return {
        "kernel": compute_totals,
        "grid": (1,),
        "block": (32,),
        "shared_bytes": 0,
        "args": [d_quantities, d_totals],
        "outputs": [1],
        "reference": lambda: {1: np.array([20.0, 50.0, 10.0, 30.0, 60.0], dtype=np.float32)},
        "rtol": 1e-7, "atol": 0,
        "flops": 5,
        "min_bytes": 3 * 4 * 5,
    }
