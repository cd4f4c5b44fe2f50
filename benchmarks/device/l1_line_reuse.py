"""L1 throughput of back-to-back gathers over the same lines (run on a GPU; CI never runs it).  Each warp of one
CTA issues ``k`` independent 2-byte loads per iteration, every one a 32-line gather (lane ``l`` in line ``l``):
either all ``k`` over the same 32 lines (a tile's columns read one instruction at a time, as Triton loads a tile
whose rows are not 16-byte aligned) or over ``k`` different sets of 32 lines.  32 warps keep the L1 busy;
``clock64`` around the timed iterations gives L1 cycles per gather.

    python benchmarks/device/l1_line_reuse.py OUT.json

Writes {"cases": [{"k", "same_lines", "warps", "cycles_per_iter", "lines_per_clk"}], "env"}.  Needs cupy.
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
template <int K, bool SAME>
__device__ void body(const unsigned short* a, int iters, long long* out) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const unsigned per_line = 64;                              // 2-byte words per 128 B line
    unsigned base = (unsigned)w * 32u * K * per_line + lane * per_line;
    unsigned idx = 0, acc = 0;
    for (int i = 0; i < 4 + iters; i++) {
        if (i == 4) { __syncwarp(); out[w] = clock64(); }
        unsigned s = 0;
#pragma unroll
        for (int k = 0; k < K; k++)
            s += a[base + (SAME ? (unsigned)k : (unsigned)k * 32u * per_line) + idx];
        idx = s & 1u;                                          // 0: the next iteration depends on this one
        acc += s;
    }
    long long t1 = clock64();
    if (lane == 0) out[w] = t1 - out[w];
    if (acc == 12345u) out[1023] = acc;
}
#define K_(n) \
extern "C" __global__ void same##n(const unsigned short* a, int it, long long* o) { body<n, true>(a, it, o); } \
extern "C" __global__ void diff##n(const unsigned short* a, int it, long long* o) { body<n, false>(a, it, o); }
K_(1) K_(2) K_(4) K_(8) K_(16)

// one 32-line gather per iteration, lane l in line l * stride (2-byte words; each warp its own region)
extern "C" __global__ void strided(const unsigned short* a, int stride, int region, int iters, long long* out) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned base = (unsigned)w * (unsigned)region * 64u + (unsigned)lane * (unsigned)stride * 64u;
    unsigned idx = 0;
    long long t0 = 0;
    for (int i = 0; i < 4 + iters; i++) {
        if (i == 4) { __syncwarp(); t0 = clock64(); }
        idx = a[base + idx];
    }
    long long t1 = clock64();
    if (lane == 0) out[w] = t1 - t0;
    if (idx == 12345u) out[1023] = idx;
}
"""


def main() -> int:
    out_path = sys.argv[1]
    mod = cp.RawModule(code=SRC)
    iters = 256
    a = cp.zeros(32 * 32 * 16 * 64 + 64, cp.uint16)          # 32 warps x 16 x 32 lines (64 MiB at most)
    out = cp.zeros(1024, cp.int64)
    cases = []
    for k in (1, 2, 4, 8, 16):
        for same in (True, False):
            f = mod.get_function(("same" if same else "diff") + str(k))
            # different lines: 8 warps and k <= 4, so that the 8 x k x 32 lines (128 KB) stay in the L1
            if not same and k > 4:
                continue
            for warps in ((8, 32) if same else (8,)):
                best = None
                for _ in range(3):
                    f((1,), (32 * warps,), (a, np.int32(iters), out))
                    cp.cuda.Device().synchronize()
                    c = float(np.mean(out.get()[:warps])) / iters
                    best = c if best is None else min(best, c)
                lines = warps * k * 32
                cases.append({"k": k, "same_lines": same, "warps": warps, "cycles_per_iter": best,
                              "gathers_per_clk": warps * k / best, "lines_per_clk": lines / best})
                print(k, same, warps, round(best, 1), round(lines / best, 2), flush=True)
    # the lines' spacing: one gather of 32 lines per iteration, 16 warps (their regions apart by 4 KB lines)
    fs = mod.get_function("strided")
    big = cp.zeros(16 * 4200 * 64 + 64, cp.uint16)
    for stride in (1, 2, 3, 4, 5, 8, 16, 22, 32, 33, 64, 65, 128):
        warps = 16
        region = 32 * stride + 1
        best = None
        for _ in range(3):
            fs((1,), (32 * warps,), (big, np.int32(stride), np.int32(region), np.int32(iters), out))
            cp.cuda.Device().synchronize()
            c = float(np.mean(out.get()[:warps])) / iters
            best = c if best is None else min(best, c)
        cases.append({"stride_lines": stride, "warps": warps, "cycles_per_iter": best,
                      "lines_per_clk": warps * 32 / best})
        print("stride", stride, round(best, 1), round(warps * 32 / best, 2), flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "cupy": cp.__version__,
           "method": "clock64 around 256 iterations of k independent 32-line 2-byte gathers per warp, one CTA; "
                     "best of 3 launches"}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
