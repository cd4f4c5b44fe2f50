"""numba-cuda documentation example: calling a foreign CUDA C++ device function (``multiply_vectors`` calls
``mul``, declared with ``cuda.declare_device("mul_f32_f32", "float32(float32, float32)", link=functions.cu)``),
exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_ffi.py
(test_ex_linking_cu) at tag v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause,
Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to
module level, with the ``mul`` it calls); only the import is switched and the host code is in ``launch()``.
``functions.cu`` is the one shipped with an installed numba-cuda (numba/cuda/tests/doc_examples/ffi/); the
example's other two cases (``ffi.from_buffer`` with ``sum_reduce``, ``saxpy`` with extra include paths) follow the
same pattern and are left out.
"""
import os

import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


def _functions_cu() -> str:
    try:
        import numba.cuda.tests.doc_examples as ex
        basedir = os.path.dirname(os.path.abspath(ex.__file__))
    except ImportError:
        basedir = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(basedir, "ffi", "functions.cu")


# Path to the source containing the foreign function
functions_cu = _functions_cu()

# Declaration of the foreign function
mul = cuda.declare_device(
    "mul_f32_f32", "float32(float32, float32)", link=functions_cu
)


@cuda.jit
def multiply_vectors(r, x, y):
    i = cuda.grid(1)

    if i < len(r):
        r[i] = mul(x[i], y[i])


def launch(N: int = 32, seed: int = 1) -> dict:
    """``multiply_vectors[1, 32](r, x, y)`` on 32 random float32 pairs."""
    rng = np.random.default_rng(seed)
    x = rng.random(N).astype(np.float32)
    y = rng.random(N).astype(np.float32)
    r = np.zeros_like(x)
    return {
        "kernel": multiply_vectors,
        "grid": ((N + 31) // 32,),
        "block": (32,),
        "shared_bytes": 0,
        "args": [r, x, y],
        "outputs": [0],
        "reference": lambda: {0: x * y},
        "rtol": 0, "atol": 0,          # the example's np.testing.assert_array_equal
        "flops": N,
        "min_bytes": 3 * 4 * N,
    }
