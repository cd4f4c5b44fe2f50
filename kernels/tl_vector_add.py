"""Vector add as a Triton tile program: each program adds one BLOCK-wide slice.

The Triton counterpart of ``vector_add.py``: one program per ``BLOCK`` elements, a masked load of each input,
one add, a masked store.  Because ``n`` and the pointers are divisible by 16, Triton specializes the kernel and
each thread moves 16 bytes per access (``ld.global.v4``): fewer, wider memory instructions than the
one-element-per-thread CUDA version, same DRAM bytes.  fp16 by default (``dtype="float32"`` for the fp32 one).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def launch(n: int = 1 << 20, dtype: str = "float16", BLOCK: int = 1024, num_warps: int = 4,
           seed: int = 0) -> dict:
    """``dtype``: "float16" or "float32"."""
    if dtype not in ("float16", "float32"):
        raise ValueError(f"dtype must be 'float16' or 'float32', got {dtype!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32).astype(dtype)
    y = rng.standard_normal(n, dtype=np.float32).astype(dtype)
    out = np.zeros(n, dtype)
    item = np.dtype(dtype).itemsize
    return {
        "kernel": add_kernel,
        "grid": lambda meta: (triton.cdiv(n, meta["BLOCK"]),),
        "args": [x, y, out, n],
        "meta": {"BLOCK": BLOCK, "num_warps": num_warps},
        "outputs": [2],
        "reference": lambda: {2: (x + y)},     # numpy adds fp16 in fp16 with one rounding, as the GPU does
        "rtol": 1e-3 if dtype == "float16" else 1e-6, "atol": 1e-3 if dtype == "float16" else 1e-6,
        "flops": n,
        "min_bytes": 3 * item * n,
    }
