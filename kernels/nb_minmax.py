"""numba-examples: the min and max of an array with float atomics (``min_max``: a grid-stride loop keeping a
per-thread min and max, then one ``cuda.atomic.min`` and one ``cuda.atomic.max`` per thread on a two-element
array: every thread of the grid contends for the same two addresses), exactly as the example writes it.

Source: https://github.com/numba/numba-examples, examples/density_estimation/histogram/gpu.py at commit
c423f5419a459f5ab8874fda6d39bb5ea05d04b2.  BSD-2-Clause, Copyright (c) 2017, Numba.  The kernel and
``dtype_min_max`` are unchanged; only the import is switched and the host code (``numba_gpu_histogram``'s first
step) is in ``launch()``: ``min_max_array`` seeded with the dtype's (max, min) and ``min_max[64, 64]`` as the
example launches it (``blocks`` other than 64 are this suite's, to fill the GPU).  The inputs are the benchmark's
(``impl.py``'s ``input_generator``: normal(0, 5), float32 or float64).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def min_max(x, min_max_array):
    nelements = x.shape[0]

    start = cuda.grid(1)
    stride = cuda.gridsize(1)

    # Array already seeded with starting values appropriate for x's dtype
    # Not a problem if this array has already been updated
    local_min = min_max_array[0]
    local_max = min_max_array[1]

    for i in range(start, x.shape[0], stride):
        element = x[i]
        local_min = min(element, local_min)
        local_max = max(element, local_max)

    # Now combine each thread local min and max
    cuda.atomic.min(min_max_array, 0, local_min)
    cuda.atomic.max(min_max_array, 1, local_max)


def dtype_min_max(dtype):
    '''Get the min and max value for a numeric dtype'''
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
    else:
        info = np.finfo(dtype)
    return info.min, info.max


def launch(n: int = 100_000, dtype: str = "float32", blocks: int = 64, threads: int = 64, seed: int = 0) -> dict:
    """``numba_gpu_histogram``'s ``min_max`` launch on ``n`` normal(0, 5) values."""
    rng = np.random.default_rng(seed)
    a = rng.normal(loc=0.0, scale=5.0, size=n).astype(dtype)
    ### Find min and max value in array
    dtype_min, dtype_max = dtype_min_max(a.dtype)
    # Put them in the array in reverse order so that they will be replaced by the first element in the array
    min_max_array = np.array([dtype_max, dtype_min], dtype=a.dtype)
    return {
        "kernel": min_max,
        "grid": (blocks,),
        "block": (threads,),
        "shared_bytes": 0,
        "args": [a, min_max_array],
        "outputs": [1],
        "reference": lambda: {1: np.array([a.min(), a.max()], dtype=a.dtype)},
        "rtol": 0, "atol": 0,
        "flops": 2 * n,
        "min_bytes": a.itemsize * n,
    }
