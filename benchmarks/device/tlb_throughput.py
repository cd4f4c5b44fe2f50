"""Address-translation throughput (run on a GPU; CI never runs it): 2^20 warps each read one random 128 B line
(one float per lane) out of a footprint of 128 MiB .. 32 GiB, the lines drawn once (a permutation over the
footprint's lines, the first 2^20 taken), so every footprint moves the same 128 MiB of random lines and only the
number of 2 MiB pages they spread over changes (64 .. 16,384).  Time per launch (cupy events, median of 20 after
a 256 MB L2 flush each).  A translation bottleneck (page walks in flight, the L2 TLB's reach) would slow the
large footprints; the DRAM side is the same random-line pattern at every size.

    python benchmarks/device/tlb_throughput.py OUT.json
"""
import json
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void gather(const float* a, const long long* line_of_warp, float* out) {
    long long w = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    out[w * 32 + lane] = a[line_of_warp[w] * 32 + lane];
}
"""


def main() -> int:
    k = cp.RawKernel(SRC, "gather")
    n_warps = 1 << 20
    scratch = cp.empty(256 << 20, cp.uint8)
    out = cp.empty(n_warps * 32, cp.float32)
    rows = []
    for gib in (0.125, 0.5, 1, 2, 4, 8, 16, 32):
        foot = int(gib * (1 << 30))
        lines = foot // 128
        a = cp.empty(foot // 4, cp.float32)
        rng = np.random.default_rng(1)
        if lines > n_warps:
            pick = np.unique(rng.integers(0, lines, int(n_warps * 1.2)))
            rng.shuffle(pick)
            pick = pick[:n_warps]
        else:
            pick = rng.permutation(lines)[:n_warps]
        low = cp.asarray(pick.astype(np.int64))
        times = []
        for r in range(22):
            scratch.fill(r & 0xFF)
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            k((n_warps * 32 // 256,), (256,), (a, low, out))
            e.record()
            e.synchronize()
            if r >= 2:
                times.append(cp.cuda.get_elapsed_time(s, e))
        med = float(np.median(times))
        rows.append({"footprint_bytes": foot, "pages_2mib": foot >> 21, "warps": n_warps, "median_ms": med,
                     "gb_per_s_lines": n_warps * 128 / med / 1e6})
        print(f"{gib:7.3f} GiB {foot >> 21:6d} pages  {med * 1000:8.1f} us  {n_warps * 128 / med / 1e6:7.1f} GB/s",
              flush=True)
        del a, low
        cp.get_default_memory_pool().free_all_blocks()
    with open(sys.argv[1], "w") as f:
        json.dump({"cases": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
