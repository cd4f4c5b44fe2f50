"""Grouped GEMM: several independent fp16 matrix products in one persistent launch, found through pointer tables.

Written for gpusim after the pattern of Triton's tutorial 08 (grouped GEMM, triton 3.6); the code is this
project's own.

G products C_g = A_g @ B_g of different shapes, each in its own allocation.  The kernel gets their base addresses
as int64 tables (``a_ptrs``, ``b_ptrs``, ``c_ptrs``: the device addresses, cast back to pointers with
``.to(tl.pointer_type(tl.float16))``), the shapes (m, n, k per group) and the row pitches (lda, ldb, ldc).  The
BLOCK_M x BLOCK_N output tiles of all groups are numbered one after another, group by group, and dealt round-robin
to NUM_SM persistent programs (one per SM on an H100): program p computes tiles p, p + NUM_SM, p + 2 NUM_SM, ...
of the whole list, so small groups share the machine instead of each taking a launch.

The deal is written as the tutorial writes it (a ``while`` over the program's next tile, per group).  An earlier
version computed each group's first tile in a ``for`` loop, ``(pid + NUM_SM - dealt % NUM_SM) % NUM_SM`` with
``dealt`` carried by the group loop: Triton 3.6 miscompiles that (between TTIR and TTGIR ``dealt % NUM_SM`` is
folded to 0), so on the GPU programs 0..15 computed every group's tiles and the rest idled; the outputs were still
right, the time 3-4x longer (DEVIATIONS.md).

A pointer or a size loaded from memory tells the compiler nothing about its alignment: without hints the tile
loads stay 2 bytes wide (on an H100 the kernel without its hints ran 4 to 7 times slower).  The host
allocates each matrix on its own (256-byte aligned) and keeps every n, k and pitch a multiple of 8 elements; the
kernel says so with ``tl.multiple_of`` on the values it loads, so that addresses and the k and n masks allow
16-byte vector accesses.

Host side: the tables hold ``ndarray.ctypes.data`` of each matrix (gpusim maps host addresses to the device
addresses it gives the arrays; the hardware harness rewrites a table's entries to the device buffers' addresses),
and the matrices reached only through a table are named in the launch dict's ``buffers``.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def grouped_gemm_kernel(a_ptrs, b_ptrs, c_ptrs, shapes, pitches, n_groups,
                        NUM_SM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)                          # this program's next tile in the whole list
    first = 0                                        # the group's first tile in the whole list
    for g in range(n_groups):
        # values loaded from memory tell the compiler nothing: the host's promises (16-byte aligned bases, n, k and
        # the pitches multiples of 8 elements) as hints, so that tile accesses and their masks are 16 bytes wide
        m = tl.load(shapes + 3 * g)
        n = tl.multiple_of(tl.load(shapes + 3 * g + 1), 8)
        k = tl.multiple_of(tl.load(shapes + 3 * g + 2), 8)
        lda = tl.multiple_of(tl.load(pitches + 3 * g), 8)
        ldb = tl.multiple_of(tl.load(pitches + 3 * g + 1), 8)
        ldc = tl.multiple_of(tl.load(pitches + 3 * g + 2), 8)
        a = tl.multiple_of(tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16)), 16)
        b = tl.multiple_of(tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16)), 16)
        c = tl.multiple_of(tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16)), 16)
        cols_of_tiles = tl.cdiv(n, BLOCK_N)
        n_tiles = tl.cdiv(m, BLOCK_M) * cols_of_tiles
        # this program's tiles of the group: tile, tile + NUM_SM, ... while they fall in the group
        while tile >= first and tile < first + n_tiles:
            t = tile - first
            rows = (t // cols_of_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = (t % cols_of_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, k, BLOCK_K):
                ks = k0 + tl.arange(0, BLOCK_K)
                a_tile = tl.load(a + rows[:, None] * lda + ks[None, :],
                                 mask=(rows[:, None] < m) & (ks[None, :] < k), other=0.)
                b_tile = tl.load(b + ks[:, None] * ldb + cols[None, :],
                                 mask=(ks[:, None] < k) & (cols[None, :] < n), other=0.)
                acc = tl.dot(a_tile, b_tile, acc)
            tl.store(c + rows[:, None] * ldc + cols[None, :], acc.to(tl.float16),
                     mask=(rows[:, None] < m) & (cols[None, :] < n))
            tile += NUM_SM
        first = first + n_tiles


def launch(shapes: tuple = ((512, 512, 512), (256, 768, 384), (640, 256, 512), (128, 128, 1024)),
           NUM_SM: int = 132, BM: int = 128, BN: int = 128, BK: int = 32, num_warps: int = 8,
           num_stages: int = 3, seed: int = 0) -> dict:
    """One (m, n, k) per group (n and k multiples of 8: 16-byte rows); NUM_SM persistent programs (132: the H100
    SXM's SM count)."""
    bad = [s for s in shapes if s[1] % 8 or s[2] % 8]
    if bad:
        raise ValueError(f"n and k must be multiples of 8 (16-byte rows, which the kernel promises the compiler): {bad}")
    rng = np.random.default_rng(seed)
    A, B, C = [], [], []
    for m, n, k in shapes:
        scale = np.float32(k ** -0.25)
        A.append((rng.standard_normal((m, k), dtype=np.float32) * scale).astype(np.float16))
        B.append((rng.standard_normal((k, n), dtype=np.float32) * scale).astype(np.float16))
        C.append(np.zeros((m, n), np.float16))
    a_ptrs = np.array([x.ctypes.data for x in A], np.int64)
    b_ptrs = np.array([x.ctypes.data for x in B], np.int64)
    c_ptrs = np.array([x.ctypes.data for x in C], np.int64)
    dims = np.array(shapes, np.int32).reshape(-1)
    pitches = np.array([[x.shape[1], y.shape[1], z.shape[1]] for x, y, z in zip(A, B, C)], np.int32).reshape(-1)
    G = len(shapes)
    names = [f"{t}{g}" for t in "abc" for g in range(G)]
    tiles = sum(triton.cdiv(m, BM) * triton.cdiv(n, BN) for m, n, _ in shapes)
    return {
        "kernel": grouped_gemm_kernel,
        "grid": (min(NUM_SM, tiles),),
        "args": [a_ptrs, b_ptrs, c_ptrs, dims, pitches, G],
        "meta": {"NUM_SM": NUM_SM, "BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "num_warps": num_warps,
                 "num_stages": num_stages},
        "buffers": dict(zip(names, A + B + C)),
        "outputs": [f"c{g}" for g in range(G)],
        "reference": lambda: {f"c{g}": A[g].astype(np.float32) @ B[g].astype(np.float32) for g in range(G)},
        "rtol": 1e-2, "atol": 1e-2,
        "flops": sum(2 * m * n * k for m, n, k in shapes),
        "min_bytes": sum(2 * (m * k + k * n + m * n) for m, n, k in shapes),
    }
