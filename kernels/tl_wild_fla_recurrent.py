"""flash-linear-attention's fused recurrent forward (``fused_recurrent_fwd_kernel``) as simple GLA runs it: a
gated linear-attention recurrence, one program per (value block, key block, sequence, head), looping over time.

Each program keeps a ``BK x BV`` fp32 state tile h in registers and walks the T steps of its sequence: load q_t,
k_t (a BK slice of the head's K) and v_t (a BV slice of V), decay the state by exp(g_t) (one scalar gate per head
and step: ``USE_G``), add the rank-1 update k_t v_t^T, and store o_t = sum_k h * (scale q_t) for its value block
(fp32, one partial per key block: the host sums the NK partials).  A long dependent loop with little work per
step: T sequential iterations of three small loads, a scalar load, the state update and one store.  The
``@triton.heuristics`` (no initial state, no final state, not varlen) and ``@triton.autotune`` (4 or 8 warps) of
the source are kept, but ``launch()`` calls the ``@triton.jit`` function under them
(``fused_recurrent_fwd_kernel.fn.fn``) with the heuristics' values and the autotuner's first config, 4 warps:
Triton's autotuner benchmarks its configs through the GPU driver, which Triton's CPU interpreter (the contract's CPU
mode) does not have, so the autotuned launch cannot run there.

Source: https://github.com/fla-org/flash-linear-attention, fla/ops/common/fused_recurrent.py (the kernel),
fla/ops/utils/op.py (``exp``, its default branch) and fla/utils/_compat.py, fla/utils/_config.py
(``autotune_cache_kwargs``) at commit bc3b101dcb713ddc5bd8924b66754eb68b5ccf89 (v0.5.2-47).  MIT License,
Copyright (c) 2023-2026 Songlin Yang, Yu Zhang, Zhiyuan Li.  The kernel and its decorators are unchanged; the
``exp`` helper is the source's default (``FLA_USE_FAST_OPS`` unset) branch moved out of its ``if`` to module
level; ``autotune_cache_kwargs`` is computed as the source does, from ``FLA_CACHE_RESULTS`` (default on);
the imports are switched to the try/except convention and the host code of ``fused_recurrent_fwd`` (called as
``fused_recurrent_simple_gla`` does: ``scale = K ** -0.5``) is in ``launch()``, which launches the first autotune
config (above).
"""
import inspect
import os

import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl

FLA_CACHE_RESULTS = os.getenv('FLA_CACHE_RESULTS', '1') == '1'
SUPPORTS_AUTOTUNE_CACHE = "cache_results" in inspect.signature(triton.autotune).parameters
autotune_cache_kwargs = {"cache_results": FLA_CACHE_RESULTS} if SUPPORTS_AUTOTUNE_CACHE else {}


@triton.jit
def exp(x): return tl.exp(x.to(tl.float32))


@triton.heuristics({
    'USE_INITIAL_STATE': lambda args: args['h0'] is not None,
    'STORE_FINAL_STATE': lambda args: args['ht'] is not None,
    'IS_VARLEN': lambda args: args['cu_seqlens'] is not None,
})
@triton.autotune(
    configs=[
        triton.Config({}, num_warps=num_warps)
        for num_warps in [4, 8]
    ],
    key=['BK', 'BV', 'USE_G', 'USE_G_GAMMA', 'USE_GK', 'USE_GV', 'STATE_V_FIRST'],
    **autotune_cache_kwargs,
)
@triton.jit(do_not_specialize=['B', 'T'])
def fused_recurrent_fwd_kernel(
    q,
    k,
    v,
    g,
    g_gamma,
    gk,
    gv,
    o,
    h0,
    ht,
    cu_seqlens,
    scale,
    B,
    T,
    H: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BK: tl.constexpr,
    BV: tl.constexpr,
    REVERSE: tl.constexpr,
    USE_G: tl.constexpr,
    USE_G_GAMMA: tl.constexpr,
    USE_GK: tl.constexpr,
    USE_GV: tl.constexpr,
    USE_INITIAL_STATE: tl.constexpr,
    STORE_FINAL_STATE: tl.constexpr,
    IS_VARLEN: tl.constexpr,
    STATE_V_FIRST: tl.constexpr = False,
):
    pid = tl.program_id(0)
    NV, NK = tl.cdiv(V, BV), tl.cdiv(K, BK)
    i_v, i_k, i_nh = (pid % NV).to(tl.int64), ((pid // NV) % NK).to(tl.int64), (pid // (NV * NK)).to(tl.int64)
    i_n, i_h = i_nh // H, i_nh % H

    all = B * T
    if IS_VARLEN:
        bos, eos = tl.load(cu_seqlens + i_n).to(tl.int64), tl.load(cu_seqlens + i_n + 1).to(tl.int64)
        T = eos - bos
    else:
        bos, eos = i_n * T, i_n * T + T

    o_k = i_k * BK + tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    p_q = q + (bos + ((T-1) if REVERSE else 0)) * H*K + i_h * K + o_k
    p_k = k + (bos + ((T-1) if REVERSE else 0)) * H*K + i_h * K + o_k
    p_v = v + (bos + ((T-1) if REVERSE else 0)) * H*V + i_h * V + o_v
    p_o = o + ((i_k * all + bos) + ((T-1) if REVERSE else 0)) * H*V + i_h * V + o_v
    if USE_G:
        p_g = g + (bos + ((T-1) if REVERSE else 0)) * H + i_h
    if USE_GK:
        p_gk = gk + (bos + ((T-1) if REVERSE else 0)) * H*K + i_h * K + o_k
    if USE_GV:
        p_gv = gv + (bos + ((T-1) if REVERSE else 0)) * H*V + i_h * V + o_v
    if USE_G_GAMMA:
        b_g_gamma = tl.load(g_gamma + i_h)

    m_k = o_k < K
    m_v = o_v < V
    if STATE_V_FIRST:
        m_h = m_v[:, None] & m_k[None, :]
        b_h = tl.zeros([BV, BK], dtype=tl.float32)
    else:
        m_h = m_k[:, None] & m_v[None, :]
        b_h = tl.zeros([BK, BV], dtype=tl.float32)

    if USE_INITIAL_STATE:
        if STATE_V_FIRST:
            p_h0 = h0 + i_nh * K*V + o_v[:, None] * K + o_k[None, :]
        else:
            p_h0 = h0 + i_nh * K*V + o_k[:, None] * V + o_v[None, :]
        b_h += tl.load(p_h0, mask=m_h, other=0).to(tl.float32)

    for _ in range(0, T):
        b_q = tl.load(p_q, mask=m_k, other=0).to(tl.float32) * scale
        b_k = tl.load(p_k, mask=m_k, other=0).to(tl.float32)
        b_v = tl.load(p_v, mask=m_v, other=0).to(tl.float32)
        if USE_G:
            b_g = tl.load(p_g).to(tl.float32)
            b_h = b_h * exp(b_g)
        if USE_G_GAMMA:
            b_h = b_h * exp(b_g_gamma)
        if USE_GK:
            b_gk = tl.load(p_gk, mask=m_k, other=0).to(tl.float32)
            if STATE_V_FIRST:
                b_h = b_h * exp(b_gk[None, :])
            else:
                b_h = b_h * exp(b_gk[:, None])
        if USE_GV:
            b_gv = tl.load(p_gv, mask=m_v, other=0).to(tl.float32)
            if STATE_V_FIRST:
                b_h = b_h * exp(b_gv[:, None])
            else:
                b_h = b_h * exp(b_gv[None, :])
        if STATE_V_FIRST:
            b_h += b_v[:, None] * b_k[None, :]
            b_o = tl.sum(b_h * b_q[None, :], axis=1)
        else:
            b_h += b_k[:, None] * b_v[None, :]
            b_o = tl.sum(b_h * b_q[:, None], axis=0)
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), mask=m_v)
        p_q += (-1 if REVERSE else 1) * H*K
        p_k += (-1 if REVERSE else 1) * H*K
        p_v += (-1 if REVERSE else 1) * H*V
        p_o += (-1 if REVERSE else 1) * H*V
        if USE_G:
            p_g += (-1 if REVERSE else 1) * H
        if USE_GK:
            p_gk += (-1 if REVERSE else 1) * H*K
        if USE_GV:
            p_gv += (-1 if REVERSE else 1) * H*V

    if STORE_FINAL_STATE:
        if STATE_V_FIRST:
            p_ht = ht + i_nh * K*V + o_v[:, None] * K + o_k[None, :]
        else:
            p_ht = ht + i_nh * K*V + o_k[:, None] * V + o_v[None, :]
        tl.store(p_ht, b_h.to(p_ht.dtype.element_ty), mask=m_h)

def _reference(q, k, v, g, scale, BK):
    """The recurrence in float64, vectorized over batch and heads; o split into its NK key-block partials."""
    B, T, H, K = k.shape
    V = v.shape[-1]
    NK = -(-K // BK)
    qf, kf, vf, gf = (a.astype(np.float64) for a in (q, k, v, g))
    o = np.zeros((NK, B, T, H, V))
    h = np.zeros((B, H, K, V))
    for t in range(T):
        h = h * np.exp(gf[:, t])[:, :, None, None] + kf[:, t, :, :, None] * vf[:, t, :, None, :]
        qs = qf[:, t] * scale
        for i in range(NK):
            sl = slice(i * BK, (i + 1) * BK)
            o[i, :, t] = np.einsum("bhk,bhkv->bhv", qs[:, :, sl], h[:, :, sl])
    return o


def launch(B: int = 2, T: int = 256, H: int = 8, K: int = 128, V: int = 128, seed: int = 0) -> dict:
    """fp16 q, k (B, T, H, K), v (B, T, H, V), fp32 log-decay g (B, T, H) -> fp32 o partials (NK, B, T, H, V)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, T, H, K), dtype=np.float32).astype(np.float16)
    k = (rng.standard_normal((B, T, H, K), dtype=np.float32) * K ** -0.5).astype(np.float16)
    v = rng.standard_normal((B, T, H, V), dtype=np.float32).astype(np.float16)
    g = np.log(rng.uniform(0.9, 1.0, (B, T, H))).astype(np.float32)      # log of a per-step decay
    scale = K ** -0.5
    N = B
    BK, BV = min(triton.next_power_of_2(K), 64), min(triton.next_power_of_2(V), 64)
    NK, NV = triton.cdiv(K, BK), triton.cdiv(V, BV)
    o = np.zeros((NK, B, T, H, V), np.float32)
    grid = (NV * NK * N * H,)
    return {
        "kernel": fused_recurrent_fwd_kernel.fn.fn,       # the @triton.jit under @heuristics and @autotune
        "grid": grid,
        # q, k, v, g, g_gamma, gk, gv, o, h0, ht, cu_seqlens, scale, B, T
        "args": [q, k, v, g, None, None, None, o, None, None, None, scale, B, T],
        "meta": {"H": H, "K": K, "V": V, "BK": BK, "BV": BV, "USE_G": True, "USE_G_GAMMA": False,
                 "USE_GK": False, "USE_GV": False, "REVERSE": False, "STATE_V_FIRST": False,
                 # what @triton.heuristics computes (h0, ht, cu_seqlens are None), @triton.autotune's first config
                 "USE_INITIAL_STATE": False, "STORE_FINAL_STATE": False, "IS_VARLEN": False, "num_warps": 4},
        "outputs": [7],
        "reference": lambda: {7: _reference(q, k, v, g, scale, BK)},
        "rtol": 1e-3, "atol": 1e-3,
        "flops": 4 * B * T * H * K * V,
        "min_bytes": 2 * B * T * H * (2 * K + V) + 4 * B * T * H + 4 * NK * B * T * H * V,
    }
