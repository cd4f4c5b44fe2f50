"""Tiled fp16 matrix multiply on tensor cores, in the style of the Triton tutorial (grouped program order).

Each program computes one BLOCK_M x BLOCK_N tile of C = A @ B, walking K in BLOCK_K steps: load an A tile and
a B tile (``num_stages`` of them in flight through shared memory), ``tl.dot`` them into an fp32 accumulator on
the tensor cores, and store the tile in fp16.  Programs are ordered in groups of GROUP_M tile rows so that
the tiles running at the same time share A rows and B columns in L2.

What to look at: sizes that are multiples of 16 (1408, 1536, 2048, 2064) let Triton prove 16-byte alignment
of every row and issue 16-byte vector loads; 1409 and 2049 break that specialization (the row stride is odd)
and the same kernel falls back to narrow loads, several times slower for one extra row.  1408 vs 1536 vs 2048
also cross wave boundaries (tiles / 132 SMs).  The K tail (K not a multiple of BLOCK_K) is masked with zeros.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # grouped ordering: walk GROUP_M tile rows down one tile column before moving right
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    first_m = group * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % programs_per_group) % rows_in_group
    pid_n = (pid % programs_per_group) // rows_in_group

    # rows/columns past the edge wrap around (their results are masked at the store)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kk * BLOCK_K
        a = tl.load(a_tile, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_tile = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c_tile, acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))


def launch(M: int = 512, N: int = 512, K: int = 512, BM: int = 128, BN: int = 128, BK: int = 64,
           num_warps: int = 8, num_stages: int = 3, GROUP_M: int = 8, seed: int = 0) -> dict:
    """C (M x N, fp16) = A (M x K, fp16) @ B (K x N, fp16), fp32 accumulation."""
    rng = np.random.default_rng(seed)
    scale = np.float32(K ** -0.25)          # keeps |C| around 1 whatever K is
    A = (rng.standard_normal((M, K), dtype=np.float32) * scale).astype(np.float16)
    B = (rng.standard_normal((K, N), dtype=np.float32) * scale).astype(np.float16)
    C = np.zeros((M, N), np.float16)
    e = A.itemsize
    return {
        "kernel": matmul_kernel,
        "grid": lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),),
        "args": [A, B, C, M, N, K,
                 A.strides[0] // e, A.strides[1] // e, B.strides[0] // e, B.strides[1] // e,
                 C.strides[0] // e, C.strides[1] // e],
        "meta": {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": GROUP_M,
                 "num_warps": num_warps, "num_stages": num_stages},
        "outputs": [2],
        "reference": lambda: {2: A.astype(np.float32) @ B.astype(np.float32)},
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 2 * M * N * K,
        "min_bytes": 2 * (M * K + K * N + M * N),
    }
