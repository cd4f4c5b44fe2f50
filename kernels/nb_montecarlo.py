"""numba-cuda documentation example: Monte Carlo integration (``mc_integrator_kernel``: one
``xoroshiro128p_uniform_float32`` draw per thread, evaluated by a ``@numba.jit`` CPU function called from the
kernel), exactly as the example writes it; the example's ``@cuda.reduce`` ``sum_reduce`` is defined too.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_montecarlo.py at
tag v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel, ``func`` and ``sum_reduce`` are unchanged (lifted from the test method to
module level); only the imports are switched and the host code (``mc_integrate``) is in ``launch()``.  The
example launches with ``mc_integrator_kernel.forall(nsamps)``; ``launch()`` gives the grid explicitly.  The
reduction ``sum_reduce(out) * factor`` is done with numpy on the kernel's output (a ``cuda.reduce`` object is not
a kernel a launch description can hold).

The reference replays xoroshiro128+ (numba's ``xoroshiro128p_next`` / ``uint64_to_unit_float32``) in numpy on
the generator states ``create_xoroshiro128p_states`` returned, and checks the first two states against numba's
SplitMix64 seeding and 2**64 jump.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import numba
    from numba import cuda
    from numba.cuda.random import (
        create_xoroshiro128p_states,
        xoroshiro128p_uniform_float32,
    )
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda as numba   # numba.jit: a function usable on the host and from kernels
    from gpusim import cuda
    from gpusim.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32


@cuda.jit
def mc_integrator_kernel(out, rng_states, lower_lim, upper_lim):
    """
    kernel to draw random samples and evaluate the function to
    be integrated at those sample values
    """
    size = len(out)

    gid = cuda.grid(1)
    if gid < size:
        # draw a sample between 0 and 1 on this thread
        samp = xoroshiro128p_uniform_float32(rng_states, gid)

        # normalize this sample to the limit range
        samp = samp * (upper_lim - lower_lim) + lower_lim

        # evaluate the function to be
        # integrated at the normalized
        # value of the sample
        y = func(samp)
        out[gid] = y


@cuda.reduce
def sum_reduce(a, b):
    return a + b


# define a function to integrate
@numba.jit
def func(x):
    return 1.0 / x


# ---- numpy xoroshiro128+ (numba.cuda.random) for the reference --------------------------------------------------
_M64 = (1 << 64) - 1


def _splitmix_state(seed):
    z = (seed + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    z ^= z >> 31
    return z, z


def _next(s0, s1):
    rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & _M64
    result = (s0 + s1) & _M64
    s1 ^= s0
    return result, rotl(s0, 55) ^ s1 ^ ((s1 << 14) & _M64), rotl(s1, 36)


def _jump(s0, s1):
    j0 = j1 = 0
    for word in (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922):
        for bit in range(64):
            if word >> bit & 1:
                j0 ^= s0
                j1 ^= s1
            _, s0, s1 = _next(s0, s1)
    return j0, j1


def xoroshiro_uniform_float32(states: np.ndarray) -> np.ndarray:
    """One ``xoroshiro128p_uniform_float32`` draw from each state (vectorized; the states are not advanced)."""
    s0 = states["s0"].astype(np.uint64)
    s1 = states["s1"].astype(np.uint64)
    result = s0 + s1
    return ((result >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))).astype(np.float32)


def host_states(rng_states) -> np.ndarray:
    s = rng_states.copy_to_host() if hasattr(rng_states, "copy_to_host") else np.array(rng_states)
    return np.array(s, copy=True)


def launch(nsamps: int = 4096, lower_lim=1, upper_lim=2, tpb: int = 128) -> dict:
    """``mc_integrate(lower_lim, upper_lim, nsamps)``'s kernel (the example: nsamps = 1000000, limits (1, 2) and (2, 3), seed 42)."""
    out = np.zeros(nsamps, dtype="float32")
    rng_states = create_xoroshiro128p_states(nsamps, seed=42)
    states0 = host_states(rng_states)
    # mc_integrate returns sum_reduce(out) * (upper_lim - lower_lim) / (nsamps - 1); the check is on out itself

    def reference():
        first = _splitmix_state(42)
        assert (int(states0["s0"][0]), int(states0["s1"][0])) == first, "state 0 is not SplitMix64(42)"
        if nsamps > 1:
            assert (int(states0["s0"][1]), int(states0["s1"][1])) == _jump(*first), "state 1 is not jump(state 0)"
        # the limits are integer (or float) kernel arguments: samp (float32) is promoted to float64
        samp = xoroshiro_uniform_float32(states0).astype(np.float64)
        samp = samp * (upper_lim - lower_lim) + lower_lim
        return {0: (1.0 / samp).astype(np.float32)}

    return {
        "kernel": mc_integrator_kernel,
        "grid": ((nsamps + tpb - 1) // tpb,),
        "block": (tpb,),
        "shared_bytes": 0,
        "args": [out, rng_states, lower_lim, upper_lim],
        "outputs": [0],
        "reference": reference,
        "rtol": 1e-6, "atol": 1e-6,
        "flops": 8 * nsamps,
        "min_bytes": 4 * nsamps + 16 * nsamps * 2,
    }
