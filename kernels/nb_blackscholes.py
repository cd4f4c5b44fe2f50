"""numba-cuda test suite: Black-Scholes option pricing (``black_scholes_cuda``, one option per thread, calling the
``cnd_cuda`` device function twice: exp, log, sqrt, a division and a polynomial in float64), exactly as the test
writes it, eager signatures included.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/cudapy/test_blackscholes.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel and its device function are unchanged (lifted from the test method to
module level, with the constants they close over as module globals, as the test defines them); only the imports
are switched and the host code is in ``launch()``: the test's ``blockdim = 512, 1`` and
``griddim = ceil(OPT_N / 512), 1``, its inputs (``randfloat`` over the same ranges, seeded here) and one launch
(the test: two identical launches).  The reference is the test's own numpy ``black_scholes``.
"""
import math

import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda import double, void
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda import double, void


RISKFREE = 0.02
VOLATILITY = 0.30

A1 = 0.31938153
A2 = -0.356563782
A3 = 1.781477937
A4 = -1.821255978
A5 = 1.330274429
RSQRT2PI = 0.39894228040143267793994605993438


def cnd(d):
    K = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    ret_val = (
        RSQRT2PI
        * np.exp(-0.5 * d * d)
        * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    )
    return np.where(d > 0, 1.0 - ret_val, ret_val)


def black_scholes(
    callResult,
    putResult,
    stockPrice,
    optionStrike,
    optionYears,
    Riskfree,
    Volatility,
):
    S = stockPrice
    X = optionStrike
    T = optionYears
    R = Riskfree
    V = Volatility
    sqrtT = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)
    d2 = d1 - V * sqrtT
    cndd1 = cnd(d1)
    cndd2 = cnd(d2)

    expRT = np.exp(-R * T)
    callResult[:] = S * cndd1 - X * expRT * cndd2
    putResult[:] = X * expRT * (1.0 - cndd2) - S * (1.0 - cndd1)


def randfloat(rand_var, low, high):
    return (1.0 - rand_var) * low + rand_var * high


@cuda.jit(double(double), device=True, inline="always")
def cnd_cuda(d):
    K = 1.0 / (1.0 + 0.2316419 * math.fabs(d))
    ret_val = (
        RSQRT2PI
        * math.exp(-0.5 * d * d)
        * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    )
    if d > 0:
        ret_val = 1.0 - ret_val
    return ret_val


@cuda.jit(
    void(
        double[:],
        double[:],
        double[:],
        double[:],
        double[:],
        double,
        double,
    )
)
def black_scholes_cuda(callResult, putResult, S, X, T, R, V):
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i >= S.shape[0]:
        return
    sqrtT = math.sqrt(T[i])
    d1 = (math.log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (
        V * sqrtT
    )
    d2 = d1 - V * sqrtT
    cndd1 = cnd_cuda(d1)
    cndd2 = cnd_cuda(d2)

    expRT = math.exp((-1.0 * R) * T[i])
    callResult[i] = S[i] * cndd1 - X[i] * expRT * cndd2
    putResult[i] = X[i] * expRT * (1.0 - cndd2) - S[i] * (1.0 - cndd1)


def launch(OPT_N: int = 400, seed: int = 0) -> dict:
    """The test's problem at ``OPT_N`` options (the test: 400), float64."""
    rng = np.random.default_rng(seed)
    stockPrice = randfloat(rng.random(OPT_N), 5.0, 30.0)
    optionStrike = randfloat(rng.random(OPT_N), 1.0, 100.0)
    optionYears = randfloat(rng.random(OPT_N), 0.25, 10.0)

    callResultNumba = np.zeros(OPT_N)
    putResultNumba = -np.ones(OPT_N)

    blockdim = 512, 1
    griddim = int(math.ceil(float(OPT_N) / blockdim[0])), 1

    def reference():
        callResultNumpy = np.zeros(OPT_N)
        putResultNumpy = -np.ones(OPT_N)
        black_scholes(callResultNumpy, putResultNumpy, stockPrice, optionStrike, optionYears, RISKFREE,
                      VOLATILITY)
        return {0: callResultNumpy, 1: putResultNumpy}

    return {
        "kernel": black_scholes_cuda,
        "grid": griddim,
        "block": blockdim,
        "shared_bytes": 0,
        "args": [callResultNumba, putResultNumba, stockPrice, optionStrike, optionYears, RISKFREE, VOLATILITY],
        "outputs": [0, 1],
        "reference": reference,
        "rtol": 1e-12, "atol": 1e-12,
        # per option: sqrt, log, 3 exp, 3 divisions and ~45 adds/multiplies (the two cnd polynomials)
        "flops": 60 * OPT_N,
        "min_bytes": 5 * 8 * OPT_N,
    }
