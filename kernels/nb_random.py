"""numba-cuda documentation example: random numbers on a 3-D grid (``random_3d``: strided loops over a 3-D array,
each thread drawing ``xoroshiro128p_uniform_float32`` values from its own generator), exactly as the example
writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_random.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level); only the
imports are switched and the host code is in ``launch()``.  The reference replays each thread's draws in numpy
(xoroshiro128+ from the states ``create_xoroshiro128p_states`` returned).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda.random import (
        create_xoroshiro128p_states,
        xoroshiro128p_uniform_float32,
    )
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32


@cuda.jit
def random_3d(arr, rng_states):
    # Per-dimension thread indices and strides
    startx, starty, startz = cuda.grid(3)
    stridex, stridey, stridez = cuda.gridsize(3)

    # Linearized thread index
    tid = (startz * stridey * stridex) + (starty * stridex) + startx

    # Use strided loops over the array to assign a random value to each entry
    for i in range(startz, arr.shape[0], stridez):
        for j in range(starty, arr.shape[1], stridey):
            for k in range(startx, arr.shape[2], stridex):
                arr[i, j, k] = xoroshiro128p_uniform_float32(
                    rng_states, tid
                )


def _replay(states0, X, Y, Z, block, grid):
    """numpy twin of random_3d: each thread's draws, in its loop order."""
    M64 = (1 << 64) - 1
    rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & M64
    bx, by, bz = block
    stridex, stridey, stridez = bx * grid[0], by * grid[1], bz * grid[2]
    out = np.zeros((X, Y, Z), np.float32)
    for startz in range(stridez):
        for starty in range(stridey):
            for startx in range(stridex):
                tid = (startz * stridey * stridex) + (starty * stridex) + startx
                s0, s1 = int(states0["s0"][tid]), int(states0["s1"][tid])
                for i in range(startz, X, stridez):
                    for j in range(starty, Y, stridey):
                        for k in range(startx, Z, stridex):
                            r = (s0 + s1) & M64
                            s1 ^= s0
                            s0, s1 = rotl(s0, 55) ^ s1 ^ ((s1 << 14) & M64), rotl(s1, 36)
                            out[i, j, k] = np.float32((r >> 11) * (1.0 / (1 << 53)))
    return out


def launch(X: int = 20, Y: int = 18, Z: int = 22, block=(4, 4, 4), grid=(2, 2, 2), seed: int = 1) -> dict:
    """``random_3d[(gx, gy, gz), (bx, by, bz)](arr, rng_states)`` (the example: 701 x 900 x 719 with 8^3 blocks
    on a 16^3 grid)."""
    bx, by, bz = block
    gx, gy, gz = grid
    # Total number of threads
    nthreads = bx * by * bz * gx * gy * gz
    # Initialize a state for each thread
    rng_states = create_xoroshiro128p_states(nthreads, seed=seed)
    states0 = rng_states.copy_to_host() if hasattr(rng_states, "copy_to_host") else np.array(rng_states)
    states0 = np.array(states0, copy=True)
    arr = np.zeros((X, Y, Z), dtype=np.float32)
    return {
        "kernel": random_3d,
        "grid": (gx, gy, gz),
        "block": (bx, by, bz),
        "shared_bytes": 0,
        "args": [arr, rng_states],
        "outputs": [0],
        "reference": lambda: {0: _replay(states0, X, Y, Z, block, grid)},
        "rtol": 0, "atol": 0,
        "flops": 4 * X * Y * Z,
        "min_bytes": 4 * X * Y * Z + 32 * nthreads,
    }
