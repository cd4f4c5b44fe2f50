"""numba-cuda documentation example: shared-memory tree reduction in one block (``array_sum``), exactly as the
example writes it: 1024 int64 values summed into ``data[0]``.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_reduction.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level, with the
``nelem`` it closes over as a module global: the shared array's size, fixed at 1024 as in the example); only
the imports are switched and the host code is in ``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda.types import int32
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda.types import int32

nelem = 1024                           # len(a): the shared array's size (a compile-time constant of the kernel)


@cuda.jit
def array_sum(data):
    tid = cuda.threadIdx.x
    size = len(data)
    if tid < size:
        i = cuda.grid(1)

        # Declare an array in shared memory
        shr = cuda.shared.array(nelem, int32)
        shr[tid] = data[i]

        # Ensure writes to shared memory are visible
        # to all threads before reducing
        cuda.syncthreads()

        s = 1
        while s < cuda.blockDim.x:
            if tid % (2 * s) == 0:
                # Stride by `s` and add
                shr[tid] += shr[tid + s]
            s *= 2
            cuda.syncthreads()

        # After the loop, the zeroth  element contains the sum
        if tid == 0:
            data[tid] = shr[tid]


def launch() -> dict:
    """``array_sum[1, nelem](a)`` on ``np.arange(1024)`` (int64; the shared array is int32, as in the example)."""
    a = np.arange(nelem)
    expect = a.copy()
    expect[0] = sum(np.arange(nelem))  # 523776
    return {
        "kernel": array_sum,
        "grid": (1,),
        "block": (nelem,),
        "shared_bytes": 0,
        "args": [a],
        "outputs": [0],
        "reference": lambda: {0: expect},
        "rtol": 0, "atol": 0,
        "flops": nelem,
        "min_bytes": 8 * nelem,
    }
