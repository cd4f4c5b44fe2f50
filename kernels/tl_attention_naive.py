"""Naive attention as three kernels, the score matrix round-tripping through DRAM.

1. ``bmm_kernel``: S = (Q K^T) * sm_scale, an N x N fp16 matrix per head, written to DRAM.
2. ``softmax_rows_kernel``: P = softmax(S) row by row, read and written back (fp16).
3. ``bmm_kernel``: O = P V.

The arithmetic is that of ``tl_flash_attn_fwd``, but S and P cost 2 * N^2 * 2 bytes written and as much read
per head: quadratic DRAM traffic where FlashAttention's is linear in N.  Compare DRAM bytes and time with the
FlashAttention case of the same shape.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
               stride_cb, stride_cm, stride_cn, scale,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[b] = scale * A[b] @ B[b] (fp16 in, fp32 accumulate, stored as C's type); program (tile, batch)."""
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    batch = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + batch * stride_ab + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + batch * stride_bb + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kk * BLOCK_K
        a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_tile, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    c_tile = c_ptr + batch * stride_cb + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_tile, (acc * scale).to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def softmax_rows_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    p = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, (p / tl.sum(p, axis=0)).to(tl.float16), mask=mask)


def _reference(q, k, v, sm_scale):
    """The same three steps in numpy, S and P rounded to fp16 as they are in DRAM."""
    qf, kf, vf = (t.astype(np.float32) for t in (q, k, v))
    s = (np.einsum("bmd,bnd->bmn", qf, kf) * np.float32(sm_scale)).astype(np.float16).astype(np.float32)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = (p / p.sum(axis=-1, keepdims=True)).astype(np.float16).astype(np.float32)
    return np.einsum("bmn,bnd->bmd", p, vf)


def launch(Z: int = 1, H: int = 4, N_CTX: int = 1024, HEAD_DIM: int = 64, BM: int = 128, BN: int = 128,
           BK: int = 64, num_warps: int = 8, num_stages: int = 3, softmax_warps: int = 0, seed: int = 0) -> dict:
    """Q, K, V, O: (Z*H, N_CTX, HEAD_DIM) fp16 (the layout of the FlashAttention case, heads flattened)."""
    rng = np.random.default_rng(seed)
    B = Z * H
    shape = (B, N_CTX, HEAD_DIM)
    q, k, v = (rng.standard_normal(shape, dtype=np.float32).astype(np.float16) for _ in range(3))
    s = np.zeros((B, N_CTX, N_CTX), np.float16)
    p = np.zeros((B, N_CTX, N_CTX), np.float16)
    o = np.zeros(shape, np.float16)
    sm_scale = HEAD_DIM ** -0.5
    block = triton.next_power_of_2(N_CTX)
    sw = softmax_warps or (16 if block >= 4096 else 8 if block >= 2048 else 4)
    mm_meta = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "num_warps": num_warps, "num_stages": num_stages}
    bn_pv = min(BN, HEAD_DIM)                       # O = P V is only HEAD_DIM wide
    pv_meta = dict(mm_meta, BLOCK_N=bn_pv)

    def st(x):
        return [d // x.itemsize for d in x.strides]

    qs, ks, vs, ss, ps, os_ = st(q), st(k), st(v), st(s), st(p), st(o)
    return {
        "steps": [
            # S = scale * Q @ K^T: B operand is K read through transposed strides
            {"kernel": bmm_kernel,
             "grid": (triton.cdiv(N_CTX, BM) * triton.cdiv(N_CTX, BN), B),
             "args": [q, k, s, N_CTX, N_CTX, HEAD_DIM, qs[0], qs[1], qs[2], ks[0], ks[2], ks[1],
                      ss[0], ss[1], ss[2], sm_scale],
             "meta": mm_meta},
            {"kernel": softmax_rows_kernel, "grid": (B * N_CTX,), "args": [p, s, N_CTX],
             "meta": {"BLOCK": block, "num_warps": sw}},
            # O = P @ V
            {"kernel": bmm_kernel,
             "grid": (triton.cdiv(N_CTX, BM) * triton.cdiv(HEAD_DIM, bn_pv), B),
             "args": [p, v, o, N_CTX, HEAD_DIM, N_CTX, ps[0], ps[1], ps[2], vs[0], vs[1], vs[2],
                      os_[0], os_[1], os_[2], 1.0],
             "meta": pv_meta},
        ],
        "outputs": [(2, 2)],
        "reference": lambda: {(2, 2): _reference(q, k, v, sm_scale)},
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 4 * B * N_CTX * N_CTX * HEAD_DIM,
        "min_bytes": 2 * B * (4 * N_CTX * HEAD_DIM + 4 * N_CTX * N_CTX),
    }
