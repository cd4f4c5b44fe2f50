"""Kernel fusion: sin(x)^2 + cos(x)^2 in one kernel vs the unfused sequence of five kernels.

``fused=True``: one kernel loads x once, computes everything in registers and stores y once: 2 bytes in and
2 bytes out per element (fp16 in memory, fp32 arithmetic).  ``fused=False``: what eager execution of
``torch.sin(x)**2 + torch.cos(x)**2`` does, five kernels (sin, cos, square, square, add), each reading its
inputs from DRAM and writing its result back: 8 fp16 reads and 5 writes per element, 6.5x the traffic
and five launches.  Both are memory-bound, so the time ratio follows the byte ratio.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def sincos_fused_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    s = tl.sin(x)
    c = tl.cos(x)
    tl.store(y_ptr + offs, (s * s + c * c).to(tl.float16), mask=mask)


@triton.jit
def sin_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, tl.sin(x).to(tl.float16), mask=mask)


@triton.jit
def cos_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, tl.cos(x).to(tl.float16), mask=mask)


@triton.jit
def square_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * x).to(tl.float16), mask=mask)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + y).to(tl.float16), mask=mask)


def _f16(v):
    return np.asarray(v, np.float32).astype(np.float16)


def launch(n: int = 1 << 20, fused: bool = True, BLOCK: int = 1024, num_warps: int = 4, seed: int = 0) -> dict:
    """fp16 x in [-pi, pi); y = sin(x)^2 + cos(x)^2 (about 1) in fp16."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-np.pi, np.pi, n).astype(np.float16)
    meta = {"BLOCK": BLOCK, "num_warps": num_warps}

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK"]),)

    xf = x.astype(np.float32)
    common = {"rtol": 0.0, "atol": 2e-3, "flops": 5 * n}
    if fused:
        y = np.zeros(n, np.float16)
        return {
            "kernel": sincos_fused_kernel, "grid": grid, "args": [x, y, n], "meta": meta,
            "outputs": [1],
            "reference": lambda: {1: _f16(np.sin(xf) ** 2 + np.cos(xf) ** 2)},
            "min_bytes": 2 * 2 * n, **common,
        }
    s, c, s2, c2, y = (np.zeros(n, np.float16) for _ in range(5))

    def reference():
        # every intermediate is rounded to fp16 in memory, as the unfused kernels do
        rs, rc = _f16(np.sin(xf)), _f16(np.cos(xf))
        rs2, rc2 = _f16(rs.astype(np.float32) ** 2), _f16(rc.astype(np.float32) ** 2)
        return {(4, 2): _f16(rs2.astype(np.float32) + rc2.astype(np.float32))}

    return {
        "steps": [
            {"kernel": sin_kernel, "grid": grid, "args": [x, s, n], "meta": meta},
            {"kernel": cos_kernel, "grid": grid, "args": [x, c, n], "meta": meta},
            {"kernel": square_kernel, "grid": grid, "args": [s, s2, n], "meta": meta},
            {"kernel": square_kernel, "grid": grid, "args": [c, c2, n], "meta": meta},
            {"kernel": add_kernel, "grid": grid, "args": [s2, c2, y, n], "meta": meta},
        ],
        "outputs": [(4, 2)],
        "reference": reference,
        "min_bytes": 2 * 2 * n, **common,
    }
