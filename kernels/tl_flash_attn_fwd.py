"""FlashAttention-2 forward: attention without ever writing the N x N score matrix to memory.

One program owns BLOCK_M query rows of one (batch, head).  It keeps its Q tile in registers and streams the
keys and values in BLOCK_N blocks: S = Q K^T on the tensor cores, an online softmax (running row max ``m`` and
row sum ``l``, the accumulator rescaled by exp2(m_old - m_new) whenever the max grows), then acc += P V on the
tensor cores.  Scores are kept in base-2 units: ``qk_scale = sm_scale * log2(e)`` is folded in once, so every
exponential is a single ``exp2``.  At the end O = acc / l and the row's log-sum-exp ``M = m + log2(l)`` (base 2)
is stored for the backward pass.  DRAM traffic is Q, K, V read (K and V once per query block), O written:
linear in N_CTX, against the quadratic traffic of ``tl_attention_naive``.

Causal: query block i only needs key blocks 0..i.  Blocks left of the diagonal run unmasked; the diagonal
block runs with the mask (``STAGE`` 1 and 2 below), so causal attention does about half the work.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _attn_fwd_blocks(acc, l_i, m_i, q, k_head, v_head, stride_n, offs_m, offs_n, offs_d, qk_scale,
                     lo, hi, DIAGONAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """Stream key/value blocks [lo, hi) through the online softmax; ``DIAGONAL`` applies the causal mask."""
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        kT = tl.load(k_head + cols[None, :] * stride_n + offs_d[:, None])      # (HEAD_DIM, BLOCK_N)
        s = tl.dot(q, kT) * qk_scale                                            # scores in base-2 units
        if DIAGONAL:
            s = tl.where(offs_m[:, None] >= cols[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_head + cols[:, None] * stride_n + offs_d[None, :])       # (BLOCK_N, HEAD_DIM)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(Q, K, V, O, M, sm_scale, stride_z, stride_h, stride_n, H, N_CTX,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    head = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)

    q = tl.load(Q + head + offs_m[:, None] * stride_n + offs_d[None, :])     # (BLOCK_M, HEAD_DIM), kept
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634                                  # log2(e)

    if CAUSAL:
        # stage 1: the key blocks strictly left of the diagonal need no mask
        acc, l_i, m_i = _attn_fwd_blocks(acc, l_i, m_i, q, K + head, V + head, stride_n, offs_m, offs_n,
                                         offs_d, qk_scale, 0, start_m * BLOCK_M, False, BLOCK_N)
        # stage 2: the diagonal block, masked
        acc, l_i, m_i = _attn_fwd_blocks(acc, l_i, m_i, q, K + head, V + head, stride_n, offs_m, offs_n,
                                         offs_d, qk_scale, start_m * BLOCK_M, (start_m + 1) * BLOCK_M,
                                         True, BLOCK_N)
    else:
        acc, l_i, m_i = _attn_fwd_blocks(acc, l_i, m_i, q, K + head, V + head, stride_n, offs_m, offs_n,
                                         offs_d, qk_scale, 0, N_CTX, False, BLOCK_N)

    tl.store(M + off_hz * N_CTX + offs_m, m_i + tl.math.log2(l_i))
    tl.store(O + head + offs_m[:, None] * stride_n + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


def reference_forward(q, k, v, causal, sm_scale, rows_per_chunk=1024):
    """fp32 attention of fp16 inputs, one head at a time: returns O (fp32) and M (base-2 log-sum-exp)."""
    Z, H, N, D = q.shape
    o = np.empty((Z, H, N, D), np.float32)
    lse2 = np.empty((Z * H, N), np.float32)
    for z in range(Z):
        for h in range(H):
            qh = q[z, h].astype(np.float32)
            kh = k[z, h].astype(np.float32)
            vh = v[z, h].astype(np.float32)
            for r0 in range(0, N, rows_per_chunk):
                r1 = min(N, r0 + rows_per_chunk)
                s = (qh[r0:r1] @ kh.T) * np.float32(sm_scale)
                if causal:
                    s = np.where(np.arange(r0, r1)[:, None] >= np.arange(N)[None, :], s, -np.inf)
                mx = s.max(axis=1, keepdims=True)
                p = np.exp(s - mx)
                den = p.sum(axis=1, keepdims=True)
                o[z, h, r0:r1] = (p @ vh) / den
                lse2[z * H + h, r0:r1] = (mx[:, 0] + np.log(den[:, 0])) * LOG2E
    return o, lse2


def make_qkv(Z, H, N_CTX, HEAD_DIM, seed):
    rng = np.random.default_rng(seed)
    shape = (Z, H, N_CTX, HEAD_DIM)
    return tuple(rng.standard_normal(shape, dtype=np.float32).astype(np.float16) for _ in range(3))


def launch(Z: int = 1, H: int = 4, N_CTX: int = 1024, HEAD_DIM: int = 64, causal: bool = False,
           BLOCK_M: int = 128, BLOCK_N: int = 64, num_warps: int = 0, num_stages: int = 3,
           seed: int = 0) -> dict:
    """Q, K, V, O: (Z, H, N_CTX, HEAD_DIM) fp16; M: (Z*H, N_CTX) fp32.  ``num_warps=0``: 4 for d=64, 8 for d=128."""
    if HEAD_DIM not in (16, 32, 64, 128, 256):
        raise ValueError(f"HEAD_DIM must be a power of two in 16..256, got {HEAD_DIM}")
    if N_CTX % BLOCK_M or N_CTX % BLOCK_N or BLOCK_M % BLOCK_N:
        raise ValueError(f"N_CTX ({N_CTX}) must be a multiple of BLOCK_M ({BLOCK_M}) and BLOCK_N ({BLOCK_N}),"
                         f" and BLOCK_M a multiple of BLOCK_N")
    q, k, v = make_qkv(Z, H, N_CTX, HEAD_DIM, seed)
    o = np.zeros_like(q)
    m = np.zeros((Z * H, N_CTX), np.float32)
    sm_scale = HEAD_DIM ** -0.5
    e = q.itemsize
    ref = {}

    def reference():
        if not ref:
            ref["o"], ref["m"] = reference_forward(q, k, v, causal, sm_scale)
        return {3: ref["o"], 4: ref["m"]}

    pairs = N_CTX * N_CTX // (2 if causal else 1)
    return {
        "kernel": attn_fwd_kernel,
        "grid": (N_CTX // BLOCK_M, Z * H),
        "args": [q, k, v, o, m, sm_scale, q.strides[0] // e, q.strides[1] // e, q.strides[2] // e, H, N_CTX],
        "meta": {"HEAD_DIM": HEAD_DIM, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "CAUSAL": causal,
                 "num_warps": num_warps or (4 if HEAD_DIM <= 64 else 8), "num_stages": num_stages},
        "outputs": [3, 4],
        "reference": reference,
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 4 * Z * H * pairs * HEAD_DIM,
        "min_bytes": 4 * Z * H * N_CTX * HEAD_DIM * 2 + Z * H * N_CTX * 4,
    }
