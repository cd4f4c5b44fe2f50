"""Seeded dropout: the keep mask is drawn in the kernel from (seed, element index), never stored.

Written for gpusim after the pattern of Triton's tutorial 04 (low-memory dropout, triton 3.6); the code is this
project's own.

Each program handles BLOCK consecutive elements: ``tl.rand(seed, offsets)`` draws one Philox 4x32-10 uniform
per element (a function of the seed and the element's index only, so the same seed drops the same elements in
the backward pass without a stored mask), keeps the element where the draw exceeds ``p`` and scales the kept
ones by 1 / (1 - p).  8 bytes of DRAM traffic per fp32 element (read x, write y) and about 30 integer
multiply-adds of Philox rounds: a memory-bound stream whose integer pipe load shows in the report.

The reference is exact: the same Philox counter-based generator in numpy (``_philox_uniform`` below: Triton's
key = (seed low 32 bits, seed high 32 bits), counters = (index, 0, 0, 0), ten rounds, first output word to a
float in [0, 1)), so the keep mask must match element for element.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def seeded_dropout_kernel(x_ptr, y_ptr, n, p, seed, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    inside = idx < n
    x = tl.load(x_ptr + idx, mask=inside)
    u = tl.rand(seed, idx)                      # uniform in [0, 1), from (seed, idx) only
    y = tl.where(u > p, x / (1 - p), 0.0)
    tl.store(y_ptr + idx, y, mask=inside)


def _philox_uniform(seed: int, idx: np.ndarray) -> np.ndarray:
    """Triton's ``tl.rand(seed, idx)`` for int32 indices, in numpy: Philox 4x32 with 10 rounds on the counters
    (idx, 0, 0, 0) and the key (seed & 0xFFFFFFFF, seed >> 32), the first word mapped to fp32 in [0, 1)."""
    mul_a, mul_b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)       # the round multipliers
    weyl_a, weyl_b = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)      # the key increments
    c0 = idx.astype(np.uint32)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0 = np.uint32(seed & 0xFFFFFFFF)
    k1 = np.uint32((seed >> 32) & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for _ in range(10):
            prod_a = mul_a * c0.astype(np.uint64)           # 32 x 32 -> 64-bit products: high and low words
            prod_b = mul_b * c2.astype(np.uint64)
            c0, c1, c2, c3 = ((prod_b >> np.uint64(32)).astype(np.uint32) ^ c1 ^ k0, prod_b.astype(np.uint32),
                              (prod_a >> np.uint64(32)).astype(np.uint32) ^ c3 ^ k1, prod_a.astype(np.uint32))
            k0 = k0 + weyl_a
            k1 = k1 + weyl_b
    signed = c0.view(np.int32).astype(np.int64)
    signed = np.where(signed < 0, -signed - 1, signed)                 # fold the sign: 31 random bits
    return signed.astype(np.float32) * np.float32(4.6566127342e-10)   # times 2^-31, in fp32


def launch(n: int = 1 << 20, p: float = 0.5, seed: int = 1234, BLOCK: int = 1024, num_warps: int = 4,
           data_seed: int = 0) -> dict:
    """y = dropout(x) for n fp32 elements, drop probability p, Philox seed ``seed``."""
    rng = np.random.default_rng(data_seed)
    x = rng.standard_normal(n, dtype=np.float32)
    y = np.zeros(n, np.float32)

    def reference():
        keep = _philox_uniform(seed, np.arange(n, dtype=np.int64)) > np.float32(p)
        return {1: np.where(keep, x / (np.float32(1) - np.float32(p)), np.float32(0))}

    return {
        "kernel": seeded_dropout_kernel,
        "grid": lambda meta: (triton.cdiv(n, meta["BLOCK"]),),
        "args": [x, y, n, p, seed],
        "meta": {"BLOCK": BLOCK, "num_warps": num_warps},
        "outputs": [1],
        "reference": reference,
        "rtol": 1e-6, "atol": 0.0,              # a wrongly kept or dropped element is off by |x| / (1 - p)
        "flops": 2 * n,                         # the compare and the scaling
        "min_bytes": 2 * 4 * n,
    }
