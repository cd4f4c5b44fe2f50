"""Persistent fp16 matrix multiply: at most one program per SM, each looping over output tiles.

Written for gpusim after the pattern of Triton's tutorial 09 (persistent matmul, triton 3.6); the code is this
project's own.

C (M x N) = A (M x K) @ B (K x N), fp32 accumulation on the tensor cores, BLOCK_M x BLOCK_N output tiles.  The
grid is min(NUM_SMS, tiles) programs; program p takes tiles p, p + NUM_SMS, p + 2 NUM_SMS, ...
(``tl.range(start, num_tiles, NUM_SMS)``), each mapped to a (row, column) tile in groups of GROUP_M tile rows so
that the tiles in flight at once share rows of A and columns of B in L2.  Against the one-program-per-tile
``tl_matmul``: no tail of a partial wave of CTAs (the last round of tiles is simply shorter on some SMs), but also
no second CTA per SM to hide one tile's epilogue behind another's main loop.

``descriptor=True``: the same schedule with the tiles moved by tensor descriptors built in the kernel
(``tl.make_tensor_descriptor``; on Hopper TMA bulk copies into shared memory, out-of-bounds parts of a box read as
zeros and are not written).  Real Triton needs a global scratch allocator for device-side descriptors
(``triton.set_allocator``, e.g. ``lambda size, align, stream: torch.empty(size, dtype=torch.int8,
device="cuda")``); the hardware harness sets one, gpusim needs none.  TMA wants 16-byte aligned row pitches:
K and N must be multiples of 8 there.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def _tile_coords(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """Tile number -> (tile row, tile column), walking GROUP_M tile rows down a tile column before moving right."""
    per_group = GROUP_M * tiles_n
    first_row = (tile // per_group) * GROUP_M
    rows_here = min(tiles_m - first_row, GROUP_M)
    tm = first_row + (tile % per_group) % rows_here
    tn = (tile % per_group) // rows_here
    return tm, tn


@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                             stride_cm, stride_cn, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        tm, tn = _tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
        # rows/columns past the edge wrap around to valid ones (their results are not stored)
        rm_in = rm % M
        rn_in = rn % N
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(k_steps):
            ks = kk * BLOCK_K + rk
            a = tl.load(a_ptr + rm_in[:, None] * stride_am + ks[None, :] * stride_ak, mask=ks[None, :] < K,
                        other=0.)
            b = tl.load(b_ptr + ks[:, None] * stride_bk + rn_in[None, :] * stride_bn, mask=ks[:, None] < K,
                        other=0.)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def persistent_matmul_desc_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # row-major A, B, C: descriptors over the whole matrices, one box per tile and k step
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        tm, tn = _tile_coords(tile, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(k_steps):
            a = a_desc.load([tm * BLOCK_M, kk * BLOCK_K])          # zero-filled past M and K
            b = b_desc.load([kk * BLOCK_K, tn * BLOCK_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([tm * BLOCK_M, tn * BLOCK_N], acc.to(tl.float16))   # clipped at M and N


def launch(M: int = 512, N: int = 512, K: int = 512, descriptor: bool = False, NUM_SMS: int = 132,
           BM: int = 128, BN: int = 128, BK: int = 64, GROUP_M: int = 8, num_warps: int = 8,
           num_stages: int = 3, seed: int = 0) -> dict:
    """C = A @ B (fp16, fp32 accumulation) on min(NUM_SMS, tiles) programs (132: the H100 SXM's SM count)."""
    rng = np.random.default_rng(seed)
    scale = np.float32(K ** -0.25)          # keeps |C| around 1 whatever K is
    A = (rng.standard_normal((M, K), dtype=np.float32) * scale).astype(np.float16)
    B = (rng.standard_normal((K, N), dtype=np.float32) * scale).astype(np.float16)
    C = np.zeros((M, N), np.float16)
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    meta = {"NUM_SMS": NUM_SMS, "BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": GROUP_M,
            "num_warps": num_warps, "num_stages": num_stages}
    if descriptor:
        kernel, args = persistent_matmul_desc_kernel, [A, B, C, M, N, K]
    else:
        e = A.itemsize
        kernel = persistent_matmul_kernel
        args = [A, B, C, M, N, K, A.strides[0] // e, A.strides[1] // e, B.strides[0] // e, B.strides[1] // e,
                C.strides[0] // e, C.strides[1] // e]
    return {
        "kernel": kernel,
        "grid": (min(NUM_SMS, tiles),),
        "args": args,
        "meta": meta,
        "outputs": [2],
        "reference": lambda: {2: A.astype(np.float32) @ B.astype(np.float32)},
        "rtol": 1e-2, "atol": 1e-2,
        "flops": 2 * M * N * K,
        "min_bytes": 2 * (M * K + K * N + M * N),
    }
