"""FlashAttention backward with recomputation: three kernels, no N x N matrix in memory.

Given Q, K, V, the forward output O, its base-2 log-sum-exp M (see ``tl_flash_attn_fwd``) and dO:

1. ``attn_bwd_preprocess``: delta_i = sum_d dO_id * O_id, one value per query row.
2. ``attn_bwd_dkdv``: one program per BLOCK_N keys of one head keeps K_j, V_j and the dK_j, dV_j accumulators
   on chip and streams every query block i: P^T = exp2(K_j Q_i^T * qk_scale - M_i) is *recomputed*,
   dV_j += P^T dO_i, dP^T = V_j dO_i^T, dS^T = P^T * (dP^T - delta_i), dK_j += dS^T Q_i.
3. ``attn_bwd_dq``: one program per BLOCK_M queries streams every key block: dQ_i += dS K_j.

Five tensor-core products per (query block, key block) pair where the forward needs two, and every score is
recomputed twice (once for dK/dV, once for dQ): the price of never storing P.  Non-causal.
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
def attn_bwd_preprocess(O, DO, Delta, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    off_hz = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    at = off_hz * N_CTX * HEAD_DIM + rows[:, None] * HEAD_DIM + offs_d[None, :]
    o = tl.load(O + at).to(tl.float32)
    do = tl.load(DO + at).to(tl.float32)
    tl.store(Delta + off_hz * N_CTX + rows, tl.sum(o * do, axis=1))


@triton.jit
def attn_bwd_dkdv(Q, K, V, DO, M, Delta, DK, DV, sm_scale, N_CTX,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off_hz = tl.program_id(1)
    head = off_hz * N_CTX * HEAD_DIM
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)          # this program's keys
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    kv_at = head + cols[:, None] * HEAD_DIM + offs_d[None, :]
    k = tl.load(K + kv_at)                                               # (BLOCK_N, HEAD_DIM)
    v = tl.load(V + kv_at)
    dk = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    for start_m in range(0, N_CTX, BLOCK_M):
        rows = start_m + offs_m
        q_at = head + rows[:, None] * HEAD_DIM + offs_d[None, :]
        q = tl.load(Q + q_at)                                            # (BLOCK_M, HEAD_DIM)
        do = tl.load(DO + q_at)
        m = tl.load(M + off_hz * N_CTX + rows)
        delta = tl.load(Delta + off_hz * N_CTX + rows)
        pT = tl.math.exp2(tl.dot(k, tl.trans(q)) * qk_scale - m[None, :])   # (BLOCK_N, BLOCK_M)
        dv = tl.dot(pT.to(tl.float16), do, dv)
        dpT = tl.dot(v, tl.trans(do))
        dsT = pT * (dpT - delta[None, :])
        dk = tl.dot(dsT.to(tl.float16), q, dk)
    tl.store(DK + kv_at, (dk * sm_scale).to(tl.float16))
    tl.store(DV + kv_at, dv.to(tl.float16))


@triton.jit
def attn_bwd_dq(Q, K, V, DO, M, Delta, DQ, sm_scale, N_CTX,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off_hz = tl.program_id(1)
    head = off_hz * N_CTX * HEAD_DIM
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)          # this program's queries
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_at = head + rows[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(Q + q_at)
    do = tl.load(DO + q_at)
    m = tl.load(M + off_hz * N_CTX + rows)
    delta = tl.load(Delta + off_hz * N_CTX + rows)
    dq = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    for start_n in range(0, N_CTX, BLOCK_N):
        kv_at = head + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(K + kv_at)
        v = tl.load(V + kv_at)
        p = tl.math.exp2(tl.dot(q, tl.trans(k)) * qk_scale - m[:, None])    # (BLOCK_M, BLOCK_N)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(tl.float16), k, dq)
    tl.store(DQ + q_at, (dq * sm_scale).to(tl.float16))


def _forward(q, k, v, sm_scale):
    """fp32 forward of fp16 inputs: O (fp32) and the base-2 log-sum-exp per row."""
    qf, kf, vf = (t.astype(np.float32) for t in (q, k, v))
    s = np.einsum("zhmd,zhnd->zhmn", qf, kf) * np.float32(sm_scale)
    mx = s.max(axis=-1, keepdims=True)
    p = np.exp(s - mx)
    den = p.sum(axis=-1, keepdims=True)
    o = np.einsum("zhmn,zhnd->zhmd", p / den, vf)
    return o, ((mx + np.log(den))[..., 0] * LOG2E).astype(np.float32)


def _backward(q, k, v, o, do, sm_scale):
    """Exact gradients in fp32 (the probabilities recomputed from scratch), delta from the fp16 O."""
    qf, kf, vf, of, dof = (t.astype(np.float32) for t in (q, k, v, o, do))
    s = np.einsum("zhmd,zhnd->zhmn", qf, kf) * np.float32(sm_scale)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    dv = np.einsum("zhmn,zhmd->zhnd", p, dof)
    dp = np.einsum("zhmd,zhnd->zhmn", dof, vf)
    delta = (of * dof).sum(axis=-1)
    ds = p * (dp - delta[..., None])
    dq = np.einsum("zhmn,zhnd->zhmd", ds, kf) * np.float32(sm_scale)
    dk = np.einsum("zhmn,zhmd->zhnd", ds, qf) * np.float32(sm_scale)
    return delta, dq, dk, dv


def launch(Z: int = 1, H: int = 2, N_CTX: int = 512, HEAD_DIM: int = 64, BLOCK_M: int = 64, BLOCK_N: int = 64,
           num_warps: int = 4, num_stages: int = 2, seed: int = 0) -> dict:
    """Q, K, V, O, dO, dQ, dK, dV: contiguous (Z, H, N_CTX, HEAD_DIM) fp16; M, delta: (Z*H, N_CTX) fp32."""
    if N_CTX % BLOCK_M or N_CTX % BLOCK_N:
        raise ValueError(f"N_CTX ({N_CTX}) must be a multiple of BLOCK_M ({BLOCK_M}) and BLOCK_N ({BLOCK_N})")
    rng = np.random.default_rng(seed)
    shape = (Z, H, N_CTX, HEAD_DIM)
    q, k, v, do = (rng.standard_normal(shape, dtype=np.float32).astype(np.float16) for _ in range(4))
    sm_scale = HEAD_DIM ** -0.5
    o32, m = _forward(q, k, v, sm_scale)     # the forward's outputs, as the forward kernel would have stored them
    o = o32.astype(np.float16)
    m = m.reshape(Z * H, N_CTX)
    delta = np.zeros((Z * H, N_CTX), np.float32)
    dq, dk, dv = (np.zeros(shape, np.float16) for _ in range(3))
    ref = {}

    def reference():
        if not ref:
            d, rq, rk, rv = _backward(q, k, v, o, do, sm_scale)
            ref.update({(0, 2): d.reshape(Z * H, N_CTX), (1, 6): rk, (1, 7): rv, (2, 6): rq})
        return ref

    meta = {"HEAD_DIM": HEAD_DIM, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N,
            "num_warps": num_warps, "num_stages": num_stages}
    pairs = Z * H * N_CTX * N_CTX
    return {
        "steps": [
            {"kernel": attn_bwd_preprocess, "grid": (N_CTX // BLOCK_M, Z * H),
             "args": [o, do, delta, N_CTX],
             "meta": {"HEAD_DIM": HEAD_DIM, "BLOCK_M": BLOCK_M, "num_warps": num_warps}},
            {"kernel": attn_bwd_dkdv, "grid": (N_CTX // BLOCK_N, Z * H),
             "args": [q, k, v, do, m, delta, dk, dv, sm_scale, N_CTX], "meta": meta},
            {"kernel": attn_bwd_dq, "grid": (N_CTX // BLOCK_M, Z * H),
             "args": [q, k, v, do, m, delta, dq, sm_scale, N_CTX], "meta": meta},
        ],
        "outputs": [(0, 2), (1, 6), (1, 7), (2, 6)],
        "reference": reference,
        "rtol": 2e-2, "atol": 2e-2,
        "flops": 2 * 7 * pairs * HEAD_DIM,       # dkdv: 4 products, dq: 3 products of 2*d flops per pair
        "min_bytes": 2 * Z * H * N_CTX * HEAD_DIM * 8 + 4 * Z * H * N_CTX * 2,
    }
