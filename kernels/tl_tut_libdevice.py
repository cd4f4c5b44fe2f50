"""Elementwise arcsine through libdevice: a math function ``tl`` does not have, called from CUDA's libdevice.

Written for gpusim after the pattern of Triton's tutorial 07 (libdevice (tl.extra.libdevice) function, triton
3.6); the code is this project's own.

``libdevice.asin`` is a call into ``__nv_asinf``: a polynomial with a square root on the outer interval, a few
dozen FP32 instructions per element.  At 8 bytes of DRAM traffic per element that is still below the H100's
ridge point, so the kernel streams; its arithmetic shows in the instruction mix and the issue slots.
The import is the one Triton users write (``from triton.language.extra import libdevice``), with gpusim's module
of the same path as the fallback.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl
    from gpusim.triton.language.extra import libdevice


@triton.jit
def asin_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    x = tl.load(x_ptr + offs, mask=live)
    tl.store(y_ptr + offs, libdevice.asin(x), mask=live)


def launch(n: int = 1 << 20, BLOCK: int = 1024, num_warps: int = 4, seed: int = 0) -> dict:
    """y = asin(x) for n fp32 x uniform in (-1, 1)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    return {
        "kernel": asin_kernel,
        "grid": lambda meta: (triton.cdiv(n, meta["BLOCK"]),),
        "args": [x, y, n],
        "meta": {"BLOCK": BLOCK, "num_warps": num_warps},
        "outputs": [1],
        "reference": lambda: {1: np.arcsin(x.astype(np.float64))},
        "rtol": 1e-6, "atol": 1e-7,             # __nv_asinf: within 2 ulp
        "flops": n,                             # one function evaluation per element
        "min_bytes": 2 * 4 * n,
    }
