"""numba-cuda documentation example: a kernel taking a raw pointer (``add_one``, compiled eagerly for
``void(CPointer(uint8), uint32)`` and launched with the integer address of a device array), exactly as the
example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_cpointer.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level, with the ``sig``
its decorator uses as a module global); only the imports are switched and the host code is in ``launch()``:
x is reached only through its address: the launch dict names it in ``buffers`` for the output check.
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
    """``add_one[1, 32](x_ptr, x_len)`` on ``np.arange(10, dtype=np.uint8)``."""
    n = size
    x0 = np.arange(n, dtype=np.uint8)
    x = cuda.to_device(x0)
    # Obtain a pointer to the data from the (CUDA) Array Interface
    x_ptr = x.__cuda_array_interface__["data"][0]
    x_len = len(x)
    return {
        "kernel": add_one,
        "grid": (1,),
        "block": (32,),
        "shared_bytes": 0,
        "args": [x_ptr, x_len],
        "outputs": ["x"],
        "buffers": {"x": x},
        "reference": lambda: {"x": x0 + np.uint8(1)},
        "rtol": 0, "atol": 0,
        "flops": 0,
        "min_bytes": 2 * n,
    }
