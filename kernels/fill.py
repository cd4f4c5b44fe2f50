"""Store-only stream: DRAM write-back.

Thread i writes ``out[i] = value + i`` (fp32) and reads nothing from global memory.  Every 32 B sector is
fully written, so the L2 needs no read of the old line (no fill-on-write); what reaches DRAM is the dirty
lines the L2 evicts, plus, when the kernel ends, whatever is still dirty there (written back later, after the
kernel, once the footprint is under the L2's size).  Look at ``dram__bytes_write.sum`` against ``4 * n`` and at
``dram__bytes_read.sum`` (near zero).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def fill(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = value + i


def launch(n: int = 1 << 20, block: int = 256, value: float = 0.5) -> dict:
    """``n`` fp32 elements written (``4 n`` bytes), ``n / block`` blocks."""
    out = np.full(n, np.nan, np.float32)
    return {
        "kernel": fill,
        "grid": ((n + block - 1) // block,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [out, np.float32(value)],
        "meta": {},
        "outputs": [0],
        # float32 + int64 is a float64 add in numba (then rounded once to float32 by the store)
        "reference": lambda: {0: (np.float64(np.float32(value)) + np.arange(n, dtype=np.float64)).astype(np.float32)},
        "rtol": 0.0, "atol": 0.0,
        "flops": n,
        "min_bytes": 4 * n,
    }
