"""Pointer chasing: one thread follows ``j = next[j]`` around a random cycle -- memory latency laid bare.

Every load's address is the previous load's value, so nothing overlaps: each hop costs one full load-to-use
latency of the level the chain lives in (shared memory, L1, L2 or DRAM) plus the address arithmetic numba
emits for ``next[j]``.  The calibration microbenchmarks (``gpusim/validate/microbench.py``) run these kernels
on the H100 and ``gpusim validate calibrate`` fits the preset's latencies so the simulated chase matches.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def chase_global(nxt, start, hops, out):
    if cuda.grid(1) == 0:
        j = start
        for _ in range(hops):
            j = nxt[j]
        out[0] = j


@cuda.jit
def chase_shared(nxt, start, hops, out):
    sh = cuda.shared.array(0, np.uint32)
    for k in range(cuda.threadIdx.x, nxt.size, cuda.blockDim.x):
        sh[k] = nxt[k]
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        j = start
        for _ in range(hops):
            j = sh[j]
        out[0] = j


def chase_chain(footprint_bytes: int, stride_bytes: int, seed: int = 0):
    """A uint32 array of footprint_bytes / 4 words in which the words at multiples of ``stride_bytes`` form one
    random cycle (each holds the index of the next).  Returns (array, start index, cycle length)."""
    step = stride_bytes // 4
    m = footprint_bytes // stride_bytes
    rng = np.random.default_rng(seed)
    pos = np.arange(m, dtype=np.int64) * step
    order = rng.permutation(m)
    nxt = np.zeros(footprint_bytes // 4, np.uint32)
    nxt[pos[order]] = pos[np.roll(order, -1)].astype(np.uint32)
    return nxt, int(pos[order[0]]), m


def launch(level: str = "l1", hops: int = 2000, footprint: int = 16 * 1024, stride: int = 128) -> dict:
    """``level="shared"`` chases in shared memory (footprint <= 48 KB), anything else in global memory."""
    nxt, start, m = chase_chain(footprint, stride)
    out = np.zeros(1, np.uint32)
    j = start
    idx = nxt.astype(np.int64)
    for _ in range(hops % m):                       # the cycle repeats every m hops
        j = int(idx[j])
    shared = level == "shared"
    return {
        "kernel": chase_shared if shared else chase_global,
        "grid": (1,), "block": (256,) if shared else (32,),
        "shared_bytes": footprint if shared else 0,
        "args": [nxt, np.uint32(start), hops, out],
        "meta": {}, "outputs": [3],
        "reference": lambda: {3: np.array([j], np.uint32)},
        "rtol": 0, "atol": 0, "flops": 0, "min_bytes": 4 * hops,
    }
