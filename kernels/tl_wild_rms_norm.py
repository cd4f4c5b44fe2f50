"""Liger-Kernel's RMSNorm forward (``_rms_norm_forward_kernel``): one program per row, the whole row in one block.

Each program loads one row of X (fp16, padded to ``BLOCK_SIZE = next_power_of_2(n_cols)``) and the weight row,
computes rstd = 1 / sqrt(mean(x^2) + eps) in fp32 (Llama casting mode: x in fp32 for the statistics, the
normalized row cast back to fp16 before the weight multiply), stores rstd (one fp32 per row) and
y = (x * rstd) * (offset + w).  One cross-warp reduction per row.

Source: https://github.com/linkedin/Liger-Kernel, src/liger_kernel/ops/rms_norm.py at commit
a5234dfc1d29db350a3a7d57a2671274a0a9d7da (tag v0.8.1).  BSD-2-Clause, Copyright 2024 LinkedIn Corporation
(the file notes that a line is based on Unsloth, Apache-2.0).  The kernel and the ``_CASTING_MODE_*`` constants
are unchanged; only the imports are switched to the try/except convention (the source picks ``rsqrt`` from
``triton.language.extra.libdevice``), and the host code of ``rms_norm_forward`` (row kernel: BLOCK_SIZE > 256)
and ``calculate_settings`` are in ``launch()``.
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


_CASTING_MODE_NONE: tl.constexpr = tl.constexpr(-1)
_CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(0)
_CASTING_MODE_GEMMA: tl.constexpr = tl.constexpr(1)


@triton.jit
def _rms_norm_forward_kernel(
    Y_ptr,
    Y_row_stride,
    X_ptr,
    X_row_stride,
    W_ptr,
    W_row_stride,
    RSTD_ptr,
    RSTD_row_stride,
    n_cols,
    eps,
    offset,
    casting_mode: tl.constexpr,  # constexpr so the `if` blocks can be optimized out
    elementwise_affine: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    """
    y_i = (x_i / (RMS)) * (offset + wi), RMS = sqrt(sum(x_i^2) / N)

    Reference:
    1. https://triton-lang.org/main/getting-started/tutorials/05-layer-norm.html
    2. https://github.com/unslothai/unsloth/blob/fd753fed99ed5f10ef8a9b7139588d9de9ddecfb/unsloth/kernels/rms_layernorm.py#L22
    3. https://arxiv.org/pdf/1910.07467
    """

    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    y_base = Y_ptr + row_idx * Y_row_stride
    x_base = X_ptr + row_idx * X_row_stride
    rstd_base = RSTD_ptr + row_idx * RSTD_row_stride

    X_row = tl.load(x_base + col_offsets, mask=mask, other=0)
    X_row_dtype = X_row.dtype
    if elementwise_affine:
        W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)

    # On Llama, only rstd is computed on fp32
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(tl.float32)

    # Gemma computes everything on fp32, and then casts back the output to the original dtype
    if casting_mode == _CASTING_MODE_GEMMA:
        if elementwise_affine:
            W_row = W_row.to(tl.float32)
        X_row = X_row.to(tl.float32)

    if casting_mode == _CASTING_MODE_NONE:
        eps = eps.to(X_row_dtype)
        offset = offset.to(X_row_dtype)

    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = rsqrt(mean_square + eps)

    # We can save time by caching rms with minimal memory overhead
    # because rms is much smaller compared to X_row, as rms is for each row.
    # However, on the computation side, it can save 4 operations (*, sum, /, sqrt).
    tl.store(rstd_base, rstd)

    X_row = X_row * rstd

    # On Llama, the multiplication with the weight is done on the original dtype
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(X_row_dtype)

    if elementwise_affine:
        Y_row = X_row * (offset + W_row)
    else:
        Y_row = X_row

    if casting_mode == _CASTING_MODE_GEMMA:
        Y_row = Y_row.to(X_row_dtype)

    tl.store(y_base + col_offsets, Y_row, mask=mask)


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


def launch(n_rows: int = 300, n_cols: int = 4096, eps: float = 1e-6, offset: float = 0.0, seed: int = 0) -> dict:
    """fp16 X (n_rows, n_cols), fp16 W (n_cols) -> fp16 Y and fp32 RSTD (Llama casting mode, the default)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_rows, n_cols), dtype=np.float32).astype(np.float16)
    w = rng.uniform(0.5, 1.5, n_cols).astype(np.float16)
    y = np.zeros((n_rows, n_cols), np.float16)
    rstd = np.zeros(n_rows, np.float32)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    def reference():
        xf = x.astype(np.float64)
        r = 1 / np.sqrt((xf * xf).mean(axis=1) + eps)
        return {0: (xf * r[:, None]) * (offset + w.astype(np.float64)), 6: r}

    return {
        "kernel": _rms_norm_forward_kernel,
        "grid": (n_rows,),
        "args": [y, y.strides[0] // y.itemsize, x, x.strides[0] // x.itemsize, w, w.strides[0] // w.itemsize,
                 rstd, rstd.strides[0] // rstd.itemsize, n_cols, eps, offset],
        "meta": {"casting_mode": 0, "elementwise_affine": True, "BLOCK_SIZE": BLOCK_SIZE, "num_warps": num_warps},
        "outputs": [0, 6],
        "reference": reference,
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 4 * n_rows * n_cols,
        "min_bytes": 2 * 2 * n_rows * n_cols + 2 * n_cols + 4 * n_rows,
    }
