"""Kernels of tests/test_cuda_numba_compat.py that run unchanged on gpusim and under numba's CUDA simulator.

``GPUSIM_TEST_FRONTEND=numba`` (set by the contract tests' subprocess, with ``NUMBA_ENABLE_CUDASIM=1``) binds
numba's ``cuda`` and ``cuda.random``; otherwise gpusim's.
"""
import os

import numpy as np

if os.environ.get("GPUSIM_TEST_FRONTEND") == "numba":
    from numba import cuda
    from numba.cuda.random import (create_xoroshiro128p_states, xoroshiro128p_next, xoroshiro128p_normal_float32,
                                   xoroshiro128p_normal_float64, xoroshiro128p_uniform_float32,
                                   xoroshiro128p_uniform_float64)
else:
    from gpusim import cuda
    from gpusim.cuda.random import (create_xoroshiro128p_states, xoroshiro128p_next, xoroshiro128p_normal_float32,
                                    xoroshiro128p_normal_float64, xoroshiro128p_uniform_float32,
                                    xoroshiro128p_uniform_float64)

DRAWS = 3


@cuda.jit
def rng_draws(states, u32, u64, nxt, n32, n64):
    """Each thread draws DRAWS of each kind from its own generator (in a loop, as a kernel would)."""
    i = cuda.grid(1)
    if i < states.shape[0]:
        for k in range(DRAWS):
            u32[i, k] = xoroshiro128p_uniform_float32(states, i)
            u64[i, k] = xoroshiro128p_uniform_float64(states, i)
            nxt[i, k] = xoroshiro128p_next(states, i)
            n32[i, k] = xoroshiro128p_normal_float32(states, i)
            n64[i, k] = xoroshiro128p_normal_float64(states, i)


@cuda.jit
def grid_two_phase(a, out):
    """Phase 1 writes a[i]; after the grid barrier each thread reads the element one block further on (another
    CTA's write when there are several blocks)."""
    i = cuda.grid(1)
    g = cuda.cg.this_grid()
    n = cuda.gridsize(1)
    a[i] = 3 * i + 1
    g.sync()
    out[i] = a[(i + cuda.blockDim.x) % n]


def rng_launch(n=64, block=32, seed=1234, subsequence_start=0):
    states = create_xoroshiro128p_states(n, seed=seed, subsequence_start=subsequence_start)
    init = states.copy_to_host()
    outs = [np.zeros((n, DRAWS), np.float32), np.zeros((n, DRAWS), np.float64), np.zeros((n, DRAWS), np.uint64),
            np.zeros((n, DRAWS), np.float32), np.zeros((n, DRAWS), np.float64)]
    rng_draws[(n + block - 1) // block, block](states, *outs)
    return init, states.copy_to_host(), outs
