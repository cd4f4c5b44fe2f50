"""Recomputation: three stacked sigmoids, forward and backward, storing activations vs recomputing them.

y = s(s(s(x))) with s the logistic sigmoid; the backward pass needs dx = dy * y(1-y) * a2(1-a2) * a1(1-a1)
with a1 = s(x), a2 = s(a1).  ``mode="store"``: the forward kernel writes a1, a2 and y, and the backward
kernel reads them back with dy (fp32: 4 B in + 12 B out, then 16 B in + 4 B out per element: 36 B).
``mode="recompute"``: the forward kernel writes only y, and the backward kernel reads x and dy and computes
a1, a2, y again in registers (4 + 4, then 8 + 4: 20 B per element) -- three more exponentials per element,
which a memory-bound kernel gets for free.  The lecture's point: trade FLOPs for memory traffic.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def fwd_store_kernel(x_ptr, a1_ptr, a2_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    a1 = tl.sigmoid(x)
    a2 = tl.sigmoid(a1)
    y = tl.sigmoid(a2)
    tl.store(a1_ptr + offs, a1, mask=mask)
    tl.store(a2_ptr + offs, a2, mask=mask)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def bwd_store_kernel(a1_ptr, a2_ptr, y_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a1 = tl.load(a1_ptr + offs, mask=mask)
    a2 = tl.load(a2_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    dy = tl.load(dy_ptr + offs, mask=mask)
    dx = dy * (y * (1.0 - y)) * (a2 * (1.0 - a2)) * (a1 * (1.0 - a1))
    tl.store(dx_ptr + offs, dx, mask=mask)


@triton.jit
def fwd_recompute_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.sigmoid(tl.sigmoid(tl.sigmoid(x)))
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def bwd_recompute_kernel(x_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    dy = tl.load(dy_ptr + offs, mask=mask)
    a1 = tl.sigmoid(x)
    a2 = tl.sigmoid(a1)
    y = tl.sigmoid(a2)
    dx = dy * (y * (1.0 - y)) * (a2 * (1.0 - a2)) * (a1 * (1.0 - a1))
    tl.store(dx_ptr + offs, dx, mask=mask)


MODES = ("store", "recompute")


def _sig(v):
    return (1.0 / (1.0 + np.exp(-v.astype(np.float64)))).astype(np.float32)


def launch(n: int = 1 << 20, mode: str = "store", BLOCK: int = 1024, num_warps: int = 4, seed: int = 0) -> dict:
    """fp32 x and dy; two kernels (forward, backward) either way; outputs y and dx."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    dy = rng.standard_normal(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    dx = np.zeros(n, np.float32)
    meta = {"BLOCK": BLOCK, "num_warps": num_warps}

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK"]),)

    def reference():
        a1 = _sig(x)
        a2 = _sig(a1)
        ry = _sig(a2)
        rdx = dy * (ry * (1 - ry)) * (a2 * (1 - a2)) * (a1 * (1 - a1))
        return {(0, out_y): ry, (1, out_dx): rdx.astype(np.float32)}

    if mode == "store":
        a1, a2 = np.zeros(n, np.float32), np.zeros(n, np.float32)
        steps = [{"kernel": fwd_store_kernel, "grid": grid, "args": [x, a1, a2, y, n], "meta": meta},
                 {"kernel": bwd_store_kernel, "grid": grid, "args": [a1, a2, y, dy, dx, n], "meta": meta}]
        out_y, out_dx = 3, 4
    else:
        steps = [{"kernel": fwd_recompute_kernel, "grid": grid, "args": [x, y, n], "meta": meta},
                 {"kernel": bwd_recompute_kernel, "grid": grid, "args": [x, dy, dx, n], "meta": meta}]
        out_y, out_dx = 1, 2
    return {
        "steps": steps,
        "outputs": [(0, out_y), (1, out_dx)],
        "reference": reference,
        "rtol": 1e-5, "atol": 1e-6,
        "flops": n * (3 * 4 + 10) if mode == "store" else n * (6 * 4 + 10),
        "min_bytes": 4 * n * (9 if mode == "store" else 5),
    }
