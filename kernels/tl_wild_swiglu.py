"""Liger-Kernel's SwiGLU forward (``_swiglu_forward_kernel``): c = silu(a) * b, one program per row.

Each program loads one row of the gate a (upcast to fp32 for the sigmoid, times ``gate_multiplier``) and of the
up projection b (fp16), and stores c = (silu(a) cast to fp16) * b: an elementwise gated activation over rows
padded to ``BLOCK_SIZE = next_power_of_2(n_cols)`` (``n_cols`` is a constexpr in the source, so each width is
its own compile).  Two fp16 reads and one write per element, no reductions.

Source: https://github.com/linkedin/Liger-Kernel, src/liger_kernel/ops/swiglu.py at commit
a5234dfc1d29db350a3a7d57a2671274a0a9d7da (tag v0.8.1).  BSD-2-Clause, Copyright 2024 LinkedIn Corporation.
The kernel and its ``silu`` helper are unchanged; only the imports are switched to the try/except convention
and the host code of ``swiglu_forward`` (the one-row path it takes off Blackwell) and ``calculate_settings``
are in ``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)



@triton.jit
def _swiglu_forward_kernel(
    a_ptr, b_ptr, c_ptr, stride, gate_multiplier, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr
):
    program_id = tl.program_id(0).to(tl.int64)

    # locate start index
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride

    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    # sigmoid requires type float32
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32) * gate_multiplier
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = silu(a_row).cast(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


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


def launch(n_rows: int = 256, n_cols: int = 4096, gate_multiplier: float = 1.0, seed: int = 0) -> dict:
    """fp16 a, b (n_rows, n_cols) -> fp16 c = silu(a * gate_multiplier) * b."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((n_rows, n_cols), dtype=np.float32) * 2).astype(np.float16)
    b = rng.standard_normal((n_rows, n_cols), dtype=np.float32).astype(np.float16)
    c = np.zeros((n_rows, n_cols), np.float16)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    def reference():
        g = a.astype(np.float64) * gate_multiplier
        return {2: g / (1 + np.exp(-g)) * b.astype(np.float64)}

    return {
        "kernel": _swiglu_forward_kernel,
        "grid": (n_rows,),
        "args": [a, b, c, c.strides[0] // c.itemsize, float(gate_multiplier)],
        "meta": {"n_cols": n_cols, "BLOCK_SIZE": BLOCK_SIZE, "num_warps": num_warps},
        "outputs": [2],
        "reference": reference,
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 6 * n_rows * n_cols,
        "min_bytes": 3 * 2 * n_rows * n_cols,
    }
