"""numba-cuda test suite: one time step of a Monte Carlo path simulation (``step``: geometric Brownian motion,
``paths[i] = last[i] * exp(c0 * dt + c1 * normdist[i])``, one path per thread, float64), exactly as the test
writes it, its string signature included.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/cudapy/test_montecarlo.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level); only the import
is switched.  The test only compiles it and has no host code: ``launch()`` is this suite's, one thread per path
with ``cuda.grid(1)``'s usual 1-D launch (``tpb`` threads per block, as many blocks as needed); the model's
parameters are this suite's choice (S0 about 100, r = 0.05, sigma = 0.2, dt = 0.01: c0 = r - sigma^2 / 2,
c1 = sigma * sqrt(dt)).
"""
import math

import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit(
    "void(double[:], double[:], double, double, double, double[:])"
)
def step(last, paths, dt, c0, c1, normdist):
    i = cuda.grid(1)
    if i >= paths.shape[0]:
        return
    noise = normdist[i]
    paths[i] = last[i] * math.exp(c0 * dt + c1 * noise)


def launch(npaths: int = 10_000, tpb: int = 256, seed: int = 0) -> dict:
    """One step of ``npaths`` paths."""
    rng = np.random.default_rng(seed)
    S0, r, sigma, dt = 100.0, 0.05, 0.2, 1.0 / 100
    c0 = r - 0.5 * sigma ** 2
    c1 = sigma * math.sqrt(dt)
    last = S0 * np.exp(rng.normal(0.0, 0.05, npaths))
    paths = np.zeros(npaths)
    normdist = rng.standard_normal(npaths)
    return {
        "kernel": step,
        "grid": ((npaths + tpb - 1) // tpb,),
        "block": (tpb,),
        "shared_bytes": 0,
        "args": [last, paths, dt, c0, c1, normdist],
        "outputs": [1],
        "reference": lambda: {1: last * np.exp(c0 * dt + c1 * normdist)},
        "rtol": 1e-13, "atol": 0,
        "flops": 4 * npaths,
        "min_bytes": 3 * 8 * npaths,
    }
