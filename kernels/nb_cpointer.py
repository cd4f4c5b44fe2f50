"""numba-cuda documentation example: a kernel taking a raw pointer (``add_one``, compiled eagerly for
``void(CPointer(uint8), uint32)`` and launched with the integer address of a device array), exactly as the
example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_cpointer.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level, with the ``sig``
its decorator uses as a module global); only the imports are switched and the host code is in ``launch()``:
``x.__cuda_array_interface__["data"][0]`` becomes the numpy array's address ``x.__array_interface__["data"][0]``.

x is reached only through its address: ``indirect_outputs`` / ``indirect_reference`` carry it (gpusim's
check_outputs does not read these keys).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda import types
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda import types

# The first kernel argument is a pointer to a uint8 array.
# The second argument holds the length as a uint32.
# The return type of a kernel is always void.
sig = types.void(types.CPointer(types.uint8), types.uint32)


@cuda.jit(sig)
def add_one(x, n):
    i = cuda.grid(1)
    if i < n:
        x[i] += 1


def launch(size: int = 10) -> dict:
    n = size
    """``add_one[1, 32](x_ptr, x_len)`` on ``np.arange(10, dtype=np.uint8)``."""
    x = np.arange(n, dtype=np.uint8)
    x0 = x.copy()
    # Obtain a pointer to the data from the (CUDA) Array Interface
    x_ptr = x.__array_interface__["data"][0]
    x_len = len(x)
    return {
        "kernel": add_one,
        "grid": (1,),
        "block": (32,),
        "shared_bytes": 0,
        "args": [x_ptr, x_len],
        "outputs": [],
        "reference": lambda: {},
        "indirect_outputs": {"x": x},
        "indirect_reference": lambda: {"x": x0 + np.uint8(1)},
        "rtol": 0, "atol": 0,
        "flops": 0,
        "min_bytes": 2 * n,
    }
