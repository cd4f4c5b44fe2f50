"""Liger-Kernel's GEGLU forward (``_geglu_tanh_forward_kernel``): c = gelu_tanh(a) * b, one program per row.

Each program loads one row of a (upcast to fp32) and b (fp16), computes the tanh form of GELU,
0.5 * a * (1 + tanh(sqrt(2/pi) * (a + 0.044715 a^3))) with libdevice's ``tanh``, and stores
(gelu(a) cast to fp16) * b.  Rows padded to ``BLOCK_SIZE = next_power_of_2(n_cols)``; ``n_cols`` is a constexpr.

Source: https://github.com/linkedin/Liger-Kernel, src/liger_kernel/ops/geglu.py at commit
a5234dfc1d29db350a3a7d57a2671274a0a9d7da (tag v0.8.1).  BSD-2-Clause, Copyright 2024 LinkedIn Corporation.
The kernel is unchanged; only the imports are switched to the try/except convention (the source takes ``tanh``
from ``triton.language.extra.libdevice`` on Triton >= 3.0), and the host code of ``geglu_forward`` and
``calculate_settings`` are in ``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
    from triton.language.extra.libdevice import tanh
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl
    from gpusim.triton.language.extra.libdevice import tanh


@triton.jit
def _geglu_tanh_forward_kernel(a, b, c, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)

    # locate start index
    a += program_id * stride
    b += program_id * stride
    c += program_id * stride

    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b + col_offsets, mask=mask, other=0)

    # tanh approximation form of GELU is computed with:
    # 0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a^3)))
    sqrt_2_over_pi = 0.7978845608028654  # sqrt(2 / pi)
    a_cubed = a_row * a_row * a_row
    tanh_arg = sqrt_2_over_pi * (a_row + 0.044715 * a_cubed)
    tanh_result = tanh(tanh_arg)
    geglu_a = 0.5 * a_row * (1 + tanh_result)
    c_row = geglu_a.cast(b_row.dtype) * b_row
    tl.store(c + col_offsets, c_row, mask=mask)


def calculate_settings(n):
    """Liger's ``calculate_settings`` (src/liger_kernel/ops/utils.py; CUDA branch): BLOCK_SIZE and num_warps."""
    MAX_FUSED_SIZE = 65536
    BLOCK_SIZE = triton.next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(f"n = {n} exceeds the recommended Triton blocksize = {MAX_FUSED_SIZE}.")
    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


def launch(n_rows: int = 256, n_cols: int = 4096, seed: int = 0) -> dict:
    """fp16 a, b (n_rows, n_cols) -> fp16 c = gelu_tanh(a) * b."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((n_rows, n_cols), dtype=np.float32) * 2).astype(np.float16)
    b = rng.standard_normal((n_rows, n_cols), dtype=np.float32).astype(np.float16)
    c = np.zeros((n_rows, n_cols), np.float16)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    def reference():
        x = a.astype(np.float64)
        g = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
        return {2: g * b.astype(np.float64)}

    return {
        "kernel": _geglu_tanh_forward_kernel,
        "grid": (n_rows,),
        "args": [a, b, c, c.strides[0] // c.itemsize],
        "meta": {"n_cols": n_cols, "BLOCK_SIZE": BLOCK_SIZE, "num_warps": num_warps},
        "outputs": [2],
        "reference": reference,
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 10 * n_rows * n_cols,
        "min_bytes": 3 * 2 * n_rows * n_cols,
    }
