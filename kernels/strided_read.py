"""Strided global reads: coalescing, or the lack of it.

Thread i reads ``a[i * stride]`` (fp32) and writes ``out[i]``.  With stride 1 a warp's 32 loads fall in one
128 B line: 4 sectors per request.  Stride 2 touches 8 sectors, 4 -> 16, and from stride 8 on every lane
needs its own 32 B sector: 32 sectors per request, 8x the DRAM traffic of the useful bytes.  Look at
``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / ..._requests_...`` and at DRAM bytes read.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def strided_read(a, out, stride):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i * stride]


def launch(n: int = 1 << 20, stride: int = 4, block: int = 256, seed: int = 0) -> dict:
    """``n`` output elements; the input holds ``n * stride`` floats."""
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n * stride, dtype=np.float32)
    out = np.zeros(n, np.float32)
    return {
        "kernel": strided_read,
        "grid": ((n + block - 1) // block,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [a, out, stride],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: a[::stride][:n].copy()},
        "rtol": 0.0, "atol": 0.0,
        "flops": 0,
        "min_bytes": 2 * 4 * n,           # the useful bytes; the hardware moves min(4*stride, 32) B per read
    }
