"""Compute-bound loops, one per pipe: fp32 FMA, fp64 FMA, and the transcendentals sin and exp.

``op="fp32"`` / ``"fp64"``: every thread runs four independent FMA chains of ``iters`` steps (enough
independent work per warp to keep the pipe busy), so the kernel runs at the FMA throughput of its type: on
H100 128 fp32 FMA per clock per SM, 64 fp64.  ``op="sin"`` / ``"exp"``: a dependent chain of
``math.sin`` / ``math.exp`` on fp32, which numba-cuda compiles to libdevice's accurate ``sinf`` / ``expf``
(a range reduction and a polynomial on the FMA pipe, with MUFU ops on the SFU for exp): count the
instructions per call in ``smsp__inst_executed_pipe_*``.  Used to calibrate the simulator's pipe
throughputs and per-construct instruction costs.
"""
import math

import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def fma_chains(x, out, iters, a, b):
    # fp32 or fp64: the dtype of x and of the scalars a, b decides (numba compiles one version per type)
    i = cuda.grid(1)
    if i < x.size:
        v0 = x[i]
        v1 = v0 * a
        v2 = v0 + b
        v3 = v0 - b
        for _ in range(iters):
            v0 = v0 * a + b
            v1 = v1 * a + b
            v2 = v2 * a + b
            v3 = v3 * a + b
        out[i] = v0 + v1 + v2 + v3


@cuda.jit
def sin_chain(x, out, iters, a, b):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for _ in range(iters):
            v = math.sin(v) * a + b
        out[i] = v


@cuda.jit
def exp_chain(x, out, iters, a, b):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for _ in range(iters):
            v = math.exp(v * a) + b
        out[i] = v


OPS = ("fp32", "fp64", "sin", "exp")


def _reference(op, x, iters, a, b):
    if op in ("fp32", "fp64"):
        v0 = x.copy()
        v1 = (v0 * a).astype(x.dtype)
        v2 = (v0 + b).astype(x.dtype)
        v3 = (v0 - b).astype(x.dtype)
        for _ in range(iters):
            v0 = (v0 * a + b).astype(x.dtype)
            v1 = (v1 * a + b).astype(x.dtype)
            v2 = (v2 * a + b).astype(x.dtype)
            v3 = (v3 * a + b).astype(x.dtype)
        return v0.astype(np.float64) + v1 + v2 + v3
    v = x.copy()
    for _ in range(iters):
        if op == "sin":
            v = (np.sin(v) * a + b).astype(np.float32)
        else:
            v = (np.exp(v * a) + b).astype(np.float32)
    return v


def launch(op: str = "fp32", n: int = 1 << 16, iters: int = 64, block: int = 256, seed: int = 0) -> dict:
    """``op`` in ``OPS``; ``iters`` loop steps per thread (fp32/fp64: 4 FMAs a step)."""
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    rng = np.random.default_rng(seed)
    dtype = np.float64 if op == "fp64" else np.float32
    x = rng.uniform(0.1, 1.0, n).astype(dtype)
    out = np.zeros(n, dtype)
    if op in ("fp32", "fp64"):
        kernel, a, b, flops = fma_chains, dtype(0.999), dtype(0.001), 8 * n * iters
    elif op == "sin":
        kernel, a, b, flops = sin_chain, np.float32(0.9), np.float32(0.1), 3 * n * iters
    else:
        kernel, a, b, flops = exp_chain, np.float32(-0.5), np.float32(0.1), 3 * n * iters
    return {
        "kernel": kernel,
        "grid": ((n + block - 1) // block,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [x, out, iters, a, b],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: _reference(op, x, iters, a, b)},
        "rtol": 1e-4 if dtype == np.float32 else 1e-10, "atol": 1e-4 if dtype == np.float32 else 1e-12,
        "flops": flops,   # an FMA counts 2; sin/exp chain steps count 3 (the call as 1, plus the FMA or add+mul)
        "min_bytes": 2 * np.dtype(dtype).itemsize * n,
    }
