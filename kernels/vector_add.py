"""Vector add, fp32: the memory-bound streaming baseline.

Each thread reads two floats and writes one: 12 bytes of DRAM traffic per element and one FP32 add, so the
kernel runs at the DRAM bandwidth once there are enough waves of blocks.  Sweep ``n`` from 2^10 (a few blocks,
most SMs idle, time = launch latency + one DRAM round trip) to 2^26 (hundreds of waves, time = bytes / bandwidth)
and look at the achieved bandwidth, the waves per SM and sectors per request (4 per warp load: 128 B of fp32).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def launch(n: int = 1 << 20, block: int = 256, seed: int = 0) -> dict:
    """The default launch is small enough to simulate in seconds; parameters scale it."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    return {
        "kernel": vector_add,
        "grid": ((n + block - 1) // block,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [a, b, out],
        "meta": {},
        "outputs": [2],
        "reference": lambda: {2: a + b},
        "rtol": 1e-6, "atol": 1e-6,
        "flops": n,
        "min_bytes": 3 * 4 * n,
    }
