"""Liger-Kernel's rotary position embedding (``_triton_rope``, forward): q and k rotated in place, one program per
token.

Program ``pid`` handles token (batch pid // seq_len, position pid % seq_len): it loads the left half of that
position's cos and sin rows, then the left and right halves of every head of q (a ``pad_n_qh x pad_hd // 2``
tile: head stride ``hd``, so a 2-D strided access padded in both dimensions when the head count or head dim is
not a power of two) and of k, and stores [x1 cos - x2 sin, x2 cos + x1 sin] back over q and k.  q, k, cos and
sin are fp16 (HF Llama passes cos/sin in the activations' dtype), so the arithmetic is fp16.

Source: https://github.com/linkedin/Liger-Kernel, src/liger_kernel/ops/rope.py at commit
a5234dfc1d29db350a3a7d57a2671274a0a9d7da (tag v0.8.1).  BSD-2-Clause, Copyright 2024 LinkedIn Corporation.
The kernel is unchanged; only the imports are switched to the try/except convention and the host code of
``rope_forward`` (q, k already in the (bsz, seq_len, heads, head_dim) layout it makes contiguous) is in
``launch()``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def _triton_rope(
    q_ptr,
    q_row_stride,
    k_ptr,
    k_row_stride,
    cos,
    cos_row_stride,
    sin,
    sin_row_stride,
    sl,
    bs: tl.constexpr,
    cos_bs: tl.constexpr,
    n_qh: tl.constexpr,
    n_kh: tl.constexpr,
    hd: tl.constexpr,
    pad_n_qh: tl.constexpr,
    pad_n_kh: tl.constexpr,
    pad_hd: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    BACKWARD_PASS: tl.constexpr = False,
):
    # q size: (bsz, seq_len, num_q_heads, head_dim)
    # q stride: (seq_len * num_q_heads * head_dim, num_q_heads * head_dim, head_dim, 1)
    # k size: (bsz, seq_len, num_kv_heads, head_dim)
    # k stride: (seq_len * num_kv_heads * head_dim, num_kv_heads * head_dim, head_dim, 1)

    # cos size: (1, seq_len, head_dim) or (bsz, seq_len, head_dim)
    # stride: (seq_len * head_dim, head_dim, 1)
    pid = tl.program_id(0).to(tl.int64)

    # locate start address
    q_ptr = q_ptr + pid * q_row_stride
    k_ptr = k_ptr + pid * k_row_stride

    # ####################################################################
    # get the cos(mθ_{i...d/2}) and sin(mθ_{i...d/2}) for token position
    # m of this program instance
    # ####################################################################

    # 1. program instances are laid out in a 1D vector of size bsz * seq_len, which
    # effectively represents a 2D grid of size [bsz, seq_len] with seq_len dimension
    # being the fastest changing dimension. Thus we can simply do pid // sl to get the batch index
    # and pid % sl to get the sequence index.
    # 2. We only need the left half of cos and sin matrix because the right half is just
    # a clone of the left half.
    batch_idx = pid // sl
    cos_row_idx = pid % sl
    cos = cos + tl.where(
        cos_bs == 1,
        cos_row_idx * cos_row_stride,
        batch_idx * (sl * cos_row_stride) + cos_row_idx * cos_row_stride,
    )
    sin = sin + tl.where(
        cos_bs == 1,
        cos_row_idx * sin_row_stride,
        batch_idx * (sl * sin_row_stride) + cos_row_idx * sin_row_stride,
    )

    cos_offsets = tl.arange(0, pad_hd // 2)
    cos_mask = cos_offsets < hd // 2
    cos_row = tl.load(cos + cos_offsets, mask=cos_mask, other=0)
    sin_row = tl.load(sin + cos_offsets, mask=cos_mask, other=0)

    # ####################################################################
    # Load the left and right half of q and k for the current
    # program instance (i.e. for the current token) separately
    # ####################################################################
    # left half of the head
    first_half_q_offsets = tl.arange(0, pad_n_qh)[:, None] * hd + tl.arange(0, pad_hd // 2)[None, :]
    first_half_k_offsets = tl.arange(0, pad_n_kh)[:, None] * hd + tl.arange(0, pad_hd // 2)[None, :]
    first_q_mask = (tl.arange(0, pad_n_qh)[:, None] < n_qh) & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2)
    first_k_mask = (tl.arange(0, pad_n_kh)[:, None] < n_kh) & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2)
    q_tile_1 = tl.load(q_ptr + first_half_q_offsets, mask=first_q_mask, other=0).to(sin_row.dtype)
    k_tile_1 = tl.load(k_ptr + first_half_k_offsets, mask=first_k_mask, other=0).to(sin_row.dtype)

    # right half of the head
    second_half_q_offsets = first_half_q_offsets + (hd // 2)
    second_half_k_offsets = first_half_k_offsets + (hd // 2)
    second_q_mask = first_q_mask
    second_k_mask = first_k_mask
    q_tile_2 = tl.load(q_ptr + second_half_q_offsets, mask=second_q_mask, other=0).to(sin_row.dtype)
    k_tile_2 = tl.load(k_ptr + second_half_k_offsets, mask=second_k_mask, other=0).to(sin_row.dtype)

    if not BACKWARD_PASS:
        # y = [x1, x2] * [cos, cos] + [-x2, x1] * [sin, sin]
        new_q_tile_1 = q_tile_1 * cos_row - q_tile_2 * sin_row
        tl.store(q_ptr + first_half_q_offsets, new_q_tile_1, mask=first_q_mask)
        new_q_tile_2 = q_tile_2 * cos_row + q_tile_1 * sin_row
        tl.store(q_ptr + second_half_q_offsets, new_q_tile_2, mask=second_q_mask)

        new_k_tile_1 = k_tile_1 * cos_row - k_tile_2 * sin_row
        tl.store(k_ptr + first_half_k_offsets, new_k_tile_1, mask=first_k_mask)
        new_k_tile_2 = k_tile_2 * cos_row + k_tile_1 * sin_row
        tl.store(k_ptr + second_half_k_offsets, new_k_tile_2, mask=second_k_mask)
    else:
        # with some math, we can get:
        # dy = [dx1, dx2] * [cos, cos] + [-dx2, dx1] * [-sin, -sin]
        new_q_tile_1 = q_tile_1 * cos_row + q_tile_2 * sin_row
        tl.store(q_ptr + first_half_q_offsets, new_q_tile_1, mask=first_q_mask)
        new_q_tile_2 = q_tile_2 * cos_row - q_tile_1 * sin_row
        tl.store(q_ptr + second_half_q_offsets, new_q_tile_2, mask=second_q_mask)

        new_k_tile_1 = k_tile_1 * cos_row + k_tile_2 * sin_row
        tl.store(k_ptr + first_half_k_offsets, new_k_tile_1, mask=first_k_mask)
        new_k_tile_2 = k_tile_2 * cos_row - k_tile_1 * sin_row
        tl.store(k_ptr + second_half_k_offsets, new_k_tile_2, mask=second_k_mask)


def _rotate(x, cos, sin):
    """HF's apply_rotary_pos_emb on (bsz, seq, heads, hd) in float64: x * cos + rotate_half(x) * sin."""
    h = x.shape[-1] // 2
    c, s = cos[:, :, None, :], sin[:, :, None, :]
    rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    return x * c + rot * s


def launch(batch_size: int = 2, seq_len: int = 512, n_q_head: int = 32, n_kv_head: int = 8, head_dim: int = 128,
           seed: int = 0) -> dict:
    """fp16 q (bsz, seq, n_q_head, head_dim) and k (bsz, seq, n_kv_head, head_dim), fp16 cos/sin (1, seq,
    head_dim) of Llama's frequencies; q and k are rotated in place."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch_size, seq_len, n_q_head, head_dim), dtype=np.float32).astype(np.float16)
    k = rng.standard_normal((batch_size, seq_len, n_kv_head, head_dim), dtype=np.float32).astype(np.float16)
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    freqs = np.outer(np.arange(seq_len, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)[None]                  # (1, seq_len, head_dim)
    cos, sin = np.cos(emb).astype(np.float16), np.sin(emb).astype(np.float16)
    q0, k0 = q.astype(np.float64), k.astype(np.float64)

    pad_hd = triton.next_power_of_2(head_dim)
    pad_n_q_head = triton.next_power_of_2(n_q_head)
    pad_n_kv_head = triton.next_power_of_2(n_kv_head)
    BLOCK_SIZE = max(pad_n_q_head, pad_n_kv_head)
    n_row = batch_size * seq_len
    cos_batch_size = cos.shape[0]

    def reference():
        c, s = cos.astype(np.float64), sin.astype(np.float64)
        return {0: _rotate(q0, c, s), 2: _rotate(k0, c, s)}

    return {
        "kernel": _triton_rope,
        "grid": (n_row,),
        "args": [q, q.strides[1] // q.itemsize, k, k.strides[1] // k.itemsize, cos, cos.strides[-2] // cos.itemsize,
                 sin, sin.strides[-2] // sin.itemsize, seq_len],
        "meta": {"bs": batch_size, "cos_bs": cos_batch_size, "n_qh": n_q_head, "n_kh": n_kv_head, "hd": head_dim,
                 "pad_n_qh": pad_n_q_head, "pad_n_kh": pad_n_kv_head, "pad_hd": pad_hd,
                 "BLOCK_SIZE": BLOCK_SIZE, "BACKWARD_PASS": False},
        "outputs": [0, 2],
        "reference": reference,
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 3 * n_row * (n_q_head + n_kv_head) * head_dim,
        "min_bytes": 2 * 2 * n_row * (n_q_head + n_kv_head) * head_dim + 2 * 2 * seq_len * head_dim,
    }
