"""Row-wise sort, top-k and scans: the bitonic network and the scan tree Triton's standard library builds.

One program per row of an R x N fp32 matrix (N a power of two).  ``op="sort"``: ``tl.sort`` (ascending);
``op="topk"``: ``tl.topk(x, K)``, the K largest in descending order; ``op="cumsum"``: ``tl.cumsum``;
``op="linrec"``: the first-order linear recurrence h_i = a_i * h_{i-1} + b_i as ``tl.associative_scan`` over the
pairs (a, b) with a combine function that is not commutative -- the scan of a selective state-space layer.
A sort of N elements runs log2(N) (log2(N) + 1) / 2 compare-and-swap rounds: its partners are lanes of the same
warp (shuffles), other warps (shared memory and barriers) or the thread's own registers; a scan shuffles each
element up five times.  Compare the instructions and cycles per row as N grows.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def _linear(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@triton.jit
def sort_rows(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(y_ptr + offs, tl.sort(tl.load(x_ptr + offs)))


@triton.jit
def topk_rows(x_ptr, y_ptr, N: tl.constexpr, K: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    tl.store(y_ptr + row * K + tl.arange(0, K), tl.topk(x, K))


@triton.jit
def cumsum_rows(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0))


@triton.jit
def linrec_rows(a_ptr, b_ptr, h_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    _, h = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 0, _linear)
    tl.store(h_ptr + offs, h)


def _linrec_reference(a, b):
    h = np.zeros_like(a, dtype=np.float64)
    acc = np.zeros(a.shape[0])
    for i in range(a.shape[1]):
        acc = a[:, i] * acc + b[:, i]
        h[:, i] = acc
    return h


def launch(op: str = "sort", R: int = 256, N: int = 1024, K: int = 16, num_warps: int = 4, seed: int = 0) -> dict:
    """``op`` in sort / topk / cumsum / linrec over R rows of N fp32 (N and K powers of two)."""
    if op not in ("sort", "topk", "cumsum", "linrec"):
        raise ValueError(f"op must be sort, topk, cumsum or linrec, got {op!r}")
    if N & (N - 1) or K & (K - 1) or K > N:
        raise ValueError(f"N ({N}) and K ({K}) must be powers of two with K <= N")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((R, N), dtype=np.float32)
    meta = {"N": N, "num_warps": num_warps}
    common = {"grid": (R,), "rtol": 1e-5, "atol": 1e-5, "min_bytes": 2 * 4 * R * N}
    if op == "sort":
        y = np.zeros_like(x)
        return {**common, "kernel": sort_rows, "args": [x, y], "meta": meta, "outputs": [1],
                "reference": lambda: {1: np.sort(x, axis=1)}, "flops": 0}
    if op == "topk":
        y = np.zeros((R, K), np.float32)
        return {**common, "kernel": topk_rows, "args": [x, y], "meta": {**meta, "K": K}, "outputs": [1],
                "reference": lambda: {1: -np.sort(-x, axis=1)[:, :K]}, "flops": 0,
                "min_bytes": 4 * R * (N + K)}
    if op == "cumsum":
        y = np.zeros_like(x)
        return {**common, "kernel": cumsum_rows, "args": [x, y], "meta": meta, "outputs": [1],
                "reference": lambda: {1: np.cumsum(x.astype(np.float64), axis=1)}, "flops": R * N,
                "rtol": 1e-4, "atol": 1e-3}
    a = rng.uniform(0.5, 1.0, (R, N)).astype(np.float32)
    h = np.zeros_like(x)
    return {**common, "kernel": linrec_rows, "args": [a, x, h], "meta": meta, "outputs": [2],
            "reference": lambda: {2: _linrec_reference(a, x)}, "flops": 3 * R * N, "rtol": 1e-4, "atol": 1e-4,
            "min_bytes": 3 * 4 * R * N}
