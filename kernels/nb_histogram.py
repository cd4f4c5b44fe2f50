"""numba-examples: a 1-D histogram with global atomics (``histogram``: a grid-stride loop, each element's bin
from the ``@numba.jit`` CPU function ``compute_bin`` -- which numba-cuda compiles for the device -- and one
``cuda.atomic.add`` on the bin's int32 counter), exactly as the example writes it.

Source: https://github.com/numba/numba-examples, examples/density_estimation/histogram/gpu.py at commit
c423f5419a459f5ab8874fda6d39bb5ea05d04b2.  BSD-2-Clause, Copyright (c) 2017, Numba.  The kernel and
``compute_bin`` are unchanged; only the imports are switched and the host code (``numba_gpu_histogram``) is in
``launch()``: the example finds the data's min and max with its ``min_max`` kernel first (``kernels/nb_minmax.py``);
here numpy gives them, then ``histogram[64, 64]`` as the example launches it (``blocks`` other than 64 are this
suite's, to fill the GPU).  The inputs are the benchmark's (``impl.py``'s ``input_generator``: normal(0, 5),
float32 or float64, 10 or 1000 bins).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import numba
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda as numba   # numba.jit: a function usable on the host and from kernels
    from gpusim import cuda


@numba.jit(nopython=True)
def compute_bin(x, n, xmin, xmax):
    # special case to mirror NumPy behavior for last bin
    if x == xmax:
        return n - 1 # a_max always in last bin

    # SPEEDTIP: Remove the float64 casts if you don't need to exactly reproduce NumPy
    bin = np.int32(n * (np.float64(x) - np.float64(xmin)) / (np.float64(xmax) - np.float64(xmin)))

    if bin < 0 or bin >= n:
        return None
    else:
        return bin

@cuda.jit
def histogram(x, xmin, xmax, histogram_out):
    nbins = histogram_out.shape[0]
    bin_width = (xmax - xmin) / nbins

    start = cuda.grid(1)
    stride = cuda.gridsize(1)

    for i in range(start, x.shape[0], stride):
        # note that calling a numba.jit function from CUDA automatically
        # compiles an equivalent CUDA device function!
        bin_number = compute_bin(x[i], nbins, xmin, xmax)

        if bin_number >= 0 and bin_number < histogram_out.shape[0]:
            cuda.atomic.add(histogram_out, bin_number, 1)


def histogram_reference(a, bins, a_min, a_max):
    """numpy: ``compute_bin``'s arithmetic (float64) for every element, counted."""
    x = a.astype(np.float64)
    b = (bins * (x - np.float64(a_min)) / (np.float64(a_max) - np.float64(a_min))).astype(np.int32)
    b[x == a_max] = bins - 1
    b = b[(b >= 0) & (b < bins)]
    return np.bincount(b, minlength=bins).astype(np.int32)


def launch(n: int = 100_000, bins: int = 1000, dtype: str = "float32", blocks: int = 64, threads: int = 64,
           seed: int = 0) -> dict:
    """``numba_gpu_histogram(a, bins)``'s histogram launch on ``n`` normal(0, 5) values."""
    rng = np.random.default_rng(seed)
    a = rng.normal(loc=0.0, scale=5.0, size=n).astype(dtype)
    a_min, a_max = a.min(), a.max()          # the example: its min_max kernel
    histogram_out = np.zeros(shape=(bins,), dtype=np.int32)
    return {
        "kernel": histogram,
        "grid": (blocks,),
        "block": (threads,),
        "shared_bytes": 0,
        "args": [a, a_min, a_max, histogram_out],
        "outputs": [3],
        "reference": lambda: {3: histogram_reference(a, bins, a_min, a_max)},
        "rtol": 0, "atol": 0,
        "flops": 4 * n,
        "min_bytes": a.itemsize * n + 4 * bins,
    }
