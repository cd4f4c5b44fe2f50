"""Liger-Kernel's LayerNorm forward (``_layer_norm_forward_kernel``): one program per row, the whole row in one
block.

Each program loads the weight and bias rows and one row of X (fp16, padded to
``BLOCK_SIZE = next_power_of_2(n_cols)``), computes the mean and the masked variance in fp32 (two cross-warp
reductions), rstd with libdevice's ``rsqrt``, stores mean and rstd (fp16, one each per row) and
y = (x - mean) * rstd * w + b.

Source: https://github.com/linkedin/Liger-Kernel, src/liger_kernel/ops/layer_norm.py at commit
a5234dfc1d29db350a3a7d57a2671274a0a9d7da (tag v0.8.1).  BSD-2-Clause, Copyright 2024 LinkedIn Corporation.
The kernel is unchanged; only the imports are switched to the try/except convention (the source takes ``rsqrt``
from ``triton.language.extra.libdevice`` on Triton >= 3.0), and the host code of ``layer_norm_forward`` and
``calculate_settings`` are in ``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
    from triton.language.extra.libdevice import rsqrt
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl
    from gpusim.triton.language.extra.libdevice import rsqrt


@triton.jit
def _layer_norm_forward_kernel(
    Y_ptr,  # pointer to output, shape (n_rows, n_cols)
    Y_row_stride,  # stride of each row in output
    X_ptr,  # pointer to input, shape (n_rows, n_cols)
    X_row_stride,  # stride of each row in input
    W_ptr,  # pointer to weights, shape (n_cols,)
    W_row_stride,  # stride of each row in weights
    B_ptr,  # pointer to bias, shape (n_cols,)
    B_row_stride,  # stride of each row in bias
    Mean_ptr,  # pointer to mean, shape (n_rows,)
    Mean_row_stride,  # stride of each row in mean
    RSTD_ptr,  # pointer to rstd, shape (n_rows,)
    RSTD_row_stride,  # stride of each row in rstd
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    """
    References:
    https://arxiv.org/abs/1607.06450
    https://github.com/karpathy/llm.c/blob/master/doc/layernorm/layernorm.md
    """
    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    # Pre-load weights and bias in fp32 to avoid repeated conversions
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0.0)
    B_row = tl.load(B_ptr + col_offsets, mask=mask, other=0.0)
    W_f32 = W_row.to(tl.float32)
    B_f32 = B_row.to(tl.float32)

    # Calculate pointers for this row
    row_X_ptr = X_ptr + row_idx * X_row_stride
    row_Y_ptr = Y_ptr + row_idx * Y_row_stride
    row_Mean_ptr = Mean_ptr + row_idx * Mean_row_stride
    row_RSTD_ptr = RSTD_ptr + row_idx * RSTD_row_stride

    # Load input data and convert to fp32 for numerical stability
    X_row = tl.load(row_X_ptr + col_offsets, mask=mask, other=0.0)
    X_f32 = X_row.to(tl.float32)

    # Compute statistics in fp32 for numerical stability
    mean = tl.sum(X_f32, axis=0) / n_cols
    X_centered = X_f32 - mean
    # Apply mask to variance calculation to exclude contributions from masked elements
    X_centered_masked = tl.where(mask, X_centered, 0.0)
    var = tl.sum(X_centered_masked * X_centered_masked, axis=0) / n_cols
    rstd = rsqrt(var + eps)

    # Store statistics (convert back to original dtype only once)
    tl.store(row_Mean_ptr, mean.to(X_row.dtype))
    tl.store(row_RSTD_ptr, rstd.to(X_row.dtype))

    # Fused normalization and affine transformation
    # Y = (X - mean) * rstd * W + B = X_centered * rstd * W + B
    Y_f32 = X_centered * rstd * W_f32 + B_f32

    # Store output (single conversion back to original dtype)
    tl.store(row_Y_ptr + col_offsets, Y_f32.to(X_row.dtype), mask=mask)


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


def launch(n_rows: int = 300, n_cols: int = 4096, eps: float = 1e-6, seed: int = 0) -> dict:
    """fp16 X (n_rows, n_cols), fp16 W and B (n_cols) -> fp16 Y, Mean and RSTD."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n_rows, n_cols), dtype=np.float32) * 2 + 0.5).astype(np.float16)
    w = rng.uniform(0.5, 1.5, n_cols).astype(np.float16)
    b = rng.uniform(-0.5, 0.5, n_cols).astype(np.float16)
    y = np.zeros((n_rows, n_cols), np.float16)
    mean = np.zeros(n_rows, np.float16)
    rstd = np.zeros(n_rows, np.float16)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    def reference():
        xf = x.astype(np.float64)
        mu = xf.mean(axis=1)
        r = 1 / np.sqrt(((xf - mu[:, None]) ** 2).mean(axis=1) + eps)
        out = (xf - mu[:, None]) * r[:, None] * w.astype(np.float64) + b.astype(np.float64)
        return {0: out, 8: mu, 10: r}

    return {
        "kernel": _layer_norm_forward_kernel,
        "grid": (n_rows,),
        "args": [y, y.strides[0] // y.itemsize, x, x.strides[0] // x.itemsize, w, w.strides[0] // w.itemsize,
                 b, b.strides[0] // b.itemsize, mean, mean.strides[0] // mean.itemsize,
                 rstd, rstd.strides[0] // rstd.itemsize, n_cols, eps],
        "meta": {"BLOCK_SIZE": BLOCK_SIZE, "num_warps": num_warps},
        "outputs": [0, 8, 10],
        "reference": reference,
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 7 * n_rows * n_cols,
        "min_bytes": 2 * 2 * n_rows * n_cols + 2 * 2 * n_cols + 2 * 2 * n_rows,
    }
