"""L1 data-bank microbenchmark for half-warp row gathers (run on a GPU; CI never runs it).

The access of a numba ``cuda.grid(2)`` kernel with 16 x 16 blocks that reads ``A[i, k]`` (i from threadIdx.x):
the 16 lanes of each half-warp read one element in 16 rows ``stride`` bytes apart, and the two half-warps (two
values of threadIdx.y) read the same 16 addresses (``mode`` bcast), the next element of each row (split), or 16
other rows (rows32).  Each warp of one CTA runs a chain of dependent loads (the next index adds the value just
loaded, which is 0), always the same lines (L1 hits after the warm-up); ``clock64`` around the timed loop gives
cycles per load.  One warp gives the latency; 8-32 warps the L1's throughput once it binds (cycles per load per
warp x warps = L1 cycles per request).  ``shared``: every warp reads the same rows (as the warps of one CTA of the
matmul do), else each warp its own.

    python benchmarks/device/l1_wide_lanes.py OUT.json

Then the same bcast requests with L1 misses: the column advances ``adv`` elements per load, so a new sector comes
from the L2 every 32 / (width x adv) loads (1 at adv 32 / width: every load misses its 16 sectors).

Writes {"cases": [{"width", "stride", "mode", "shared", "warps", "cycles_per_load"[, "adv"]}], "env"}.  Needs cupy.
Units: SM clock cycles (clock64), bytes.
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
__device__ unsigned to_u(unsigned v) { return v; }
__device__ unsigned to_u(unsigned long long v) { return (unsigned)(v ^ (v >> 32)); }
template <typename T>
__device__ void body(const T* a, int stride, int mode, int shared, int iters, int adv, long long* out) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int tx = lane & 15, ty = lane >> 4;
    int row = (mode == 2) ? lane : tx;
    int col = (mode == 1) ? ty : 0;
    size_t base = shared ? 0 : (size_t)w * 32 * (size_t)stride;
    size_t off = base + (size_t)row * stride + col;
    unsigned idx = 0;
    for (int i = 0; i < 4; i++) { idx = to_u(a[off + idx]); }
    __syncthreads();
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) { idx = to_u(a[off + (size_t)i * adv + idx]); }
    long long t1 = clock64();
    if (lane == 0) out[w] = t1 - t0;
    if (idx == 12345u) out[1023] = idx;
}
extern "C" __global__ void w4(const unsigned* a, int s, int m, int sh, int it, int adv, long long* o) { body<unsigned>(a, s, m, sh, it, adv, o); }
extern "C" __global__ void w8(const unsigned long long* a, int s, int m, int sh, int it, int adv, long long* o) { body<unsigned long long>(a, s, m, sh, it, adv, o); }
"""

MODES = {"bcast": 0, "split": 1, "rows32": 2}


def main() -> int:
    out_path = sys.argv[1]
    mod = cp.RawModule(code=SRC, options=("-std=c++14",))
    iters = 256
    a = cp.zeros(64 << 20, cp.uint8)                        # 64 MB of zeros: every index stays 0
    out = cp.zeros(1024, cp.int64)
    cases = []
    for width in (4, 8):
        kern = mod.get_function(f"w{width}")
        for stride_bytes in (1024, 1032, 1040, 1000, 2000, 4096, 512):
            stride = stride_bytes // width
            for mode, m in MODES.items():
                for shared in (0, 1):
                    for warps in (1, 4, 8, 16, 32):
                        res = []
                        for _ in range(3):
                            out.fill(0)
                            kern((1,), (32 * warps,), (a, np.int32(stride), np.int32(m), np.int32(shared),
                                                       np.int32(iters), np.int32(0), out))
                            cp.cuda.Device().synchronize()
                            res.append(float(np.mean(out.get()[:warps])) / iters)
                        cases.append({"width": width, "stride": stride_bytes, "mode": mode, "shared": shared,
                                      "warps": warps, "iters": iters, "cycles_per_load": min(res)})
                        print(width, stride_bytes, mode, shared, warps, round(min(res), 1), flush=True)
    # with L1 misses: the column advances ``adv`` elements per load (a new sector every 32 / (width x adv) loads), so
    # the rows' lines come from the L2 (the previous launch of the same case left them there; best of 3)
    for width in (4, 8):
        kern = mod.get_function(f"w{width}")
        for stride_bytes in (1024, 2000, 1032):
            stride = stride_bytes // width
            for adv in (1, 32 // width, 128 // width):
                for shared in (0, 1):
                    for warps in (1, 8, 16, 32):
                        res = []
                        for _ in range(3):
                            out.fill(0)
                            kern((1,), (32 * warps,), (a, np.int32(stride), np.int32(0), np.int32(shared),
                                                       np.int32(iters), np.int32(adv), out))
                            cp.cuda.Device().synchronize()
                            res.append(float(np.mean(out.get()[:warps])) / iters)
                        cases.append({"width": width, "stride": stride_bytes, "mode": "bcast", "shared": shared,
                                      "warps": warps, "iters": iters, "adv": adv, "cycles_per_load": min(res)})
                        print(width, stride_bytes, "adv", adv, shared, warps, round(min(res), 1), flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "cupy": cp.__version__,
           "method": "clock64 around 256 dependent loads per warp, one CTA; best of 3 launches"}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
