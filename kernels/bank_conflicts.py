"""Shared-memory bank conflicts: strided reads of a shared array.

Shared memory has 32 banks of 4 bytes; word w lives in bank w % 32.  Each thread reads
``sh[(tid * stride + 32 * r) % SIZE]`` for r = 0 .. reps-1 and sums what it read.  The ``32 * r`` term moves
every lane by whole rows of banks, so each iteration is a fresh load (the compiler cannot hoist it out of the
loop) with the same bank pattern: lanes l and l' collide when ``(l - l') * stride`` is a multiple of 32.  A
warp's load needs gcd(stride, 32) wavefronts: stride 1 -> 1 (conflict-free), 2 -> 2, ..., 32 -> 32 (all
lanes in bank 0), and 33 -> 1 again (the padding trick).  ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum``
counts the extra wavefronts: about reps * warps * (gcd(stride, 32) - 1).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda

SIZE = 4096          # words of shared memory (16 KB); a power of two and a multiple of 32


@cuda.jit
def bank_conflicts(src, out, stride, reps):
    sh = cuda.shared.array(SIZE, np.float32)
    t = cuda.threadIdx.x
    for k in range(t, SIZE, cuda.blockDim.x):
        sh[k] = src[k]
    cuda.syncthreads()
    base = t * stride
    s = np.float32(0.0)
    for r in range(reps):
        s += sh[(base + r * 32) & (SIZE - 1)]
    out[cuda.grid(1)] = s


def _reference(src, stride, reps, blocks, block):
    t = np.arange(block)
    idx = (t[:, None] * stride + 32 * np.arange(reps)[None, :]) & (SIZE - 1)
    per_thread = src.astype(np.float64)[idx].sum(axis=1)
    return np.tile(per_thread, blocks)


def launch(stride: int = 32, reps: int = 256, blocks: int = 132, block: int = 256, seed: int = 0) -> dict:
    """``stride`` in 4-byte words (1..32 and 33); ``reps`` shared loads per thread; one output per thread."""
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    if block % 32 or block > 1024:
        raise ValueError(f"block must be a multiple of 32 and at most 1024, got {block}")
    rng = np.random.default_rng(seed)
    src = (rng.random(SIZE, dtype=np.float32) + np.float32(0.5)).astype(np.float32)
    out = np.zeros(blocks * block, np.float32)
    return {
        "kernel": bank_conflicts,
        "grid": (blocks,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [src, out, stride, reps],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: _reference(src, stride, reps, blocks, block)},
        "rtol": 1e-4, "atol": 1e-4,
        "flops": blocks * block * reps,
        "min_bytes": 4 * SIZE + 4 * blocks * block,
    }
