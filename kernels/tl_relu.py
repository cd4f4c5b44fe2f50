"""Lower precision: ReLU over fp32 vs fp16 (or bf16) tensors.

One program per ``BLOCK`` elements: load, ``max(x, 0)``, store.  The arithmetic is trivial and the kernel is
memory-bound, so halving the bytes per element (fp32 -> fp16) halves the DRAM traffic and, at sizes that
stream from DRAM, about halves the time: the lecture's case for low precision on bandwidth-bound work.
Each thread moves 16 bytes per access in both precisions (4 fp32 or 8 fp16 values).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0).to(x.dtype), mask=mask)


DTYPES = ("float32", "float16")


def launch(n: int = 1 << 20, dtype: str = "float32", BLOCK: int = 1024, num_warps: int = 4,
           seed: int = 0) -> dict:
    """``dtype``: "float32" or "float16"."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32).astype(dtype)
    y = np.zeros(n, dtype)
    item = np.dtype(dtype).itemsize
    return {
        "kernel": relu_kernel,
        "grid": lambda meta: (triton.cdiv(n, meta["BLOCK"]),),
        "args": [x, y, n],
        "meta": {"BLOCK": BLOCK, "num_warps": num_warps},
        "outputs": [1],
        "reference": lambda: {1: np.maximum(x, 0).astype(dtype)},
        "rtol": 0.0, "atol": 0.0,
        "flops": n,
        "min_bytes": 2 * item * n,
    }
