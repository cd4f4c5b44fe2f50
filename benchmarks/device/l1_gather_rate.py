"""L1 gather throughput microbenchmark (run on a GPU; CI never runs it): how many 128 B lines per clock the
L1TEX stage takes from warps whose 32 lanes touch ``lines`` different lines each (L1 hits), as a function of
element width, of whether the warps' loads depend on each other (one load in flight per warp, as
``divergent_load.py``, ``dep`` 1) or are independent (8 loads in flight per warp, ``dep`` 0: the 8 read other
words of the same lines, as a tile's 2-byte elements loaded one instruction each; ``dep`` 2: 8 sets of lines), and of whether the warps of a CTA read
the same lines (``shared``: the gather of a tile row that every warp of the CTA reads, as a matmul's B column
walk) or lines of their own.

Lane ``l`` reads ``width`` bytes at byte ``(l // lines) * width`` of line ``l % lines`` of a set of ``lines``
lines (its own, or the CTA's with ``shared``); its 8 loads per round read 8 different words of each line (``(l //
lines + s) % (128 / width)``), all read once before timing (L1 hits).
One CTA per SM on every SM; ``clock64`` around the timed loop per warp.

    python benchmarks/device/l1_gather_rate.py OUT.json

Measured on an H200 (GH100, the H100's SM; records/h200/l1_gather_rate.json, 2026-11-28): 1.0 line per clock
for 2- and 4-byte lanes and 0.5 for 8-byte lanes over 4-16 lines (one data-bank phase per half-warp), whether the
loads depend on each other or not, and whether they read the lines of the previous load or others, or share
lines across warps.  (Without the volatile asm, nvcc merges each pair of neighbouring loads into one twice as
wide, which looked like 2 lines per clock.)

Writes {"cases": [{"width", "lines", "warps", "dep", "shared", "iters", "cycles_per_load"}], "env"}; needs cupy.
``cycles_per_load``: cycles per load instruction of one warp (mean over warps and SMs); lines per clock per SM
= warps x lines / cycles_per_load.  Units: SM clock cycles.
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
// one LDG per access, as written: volatile asm, so the compiler neither merges neighbouring loads into wider ones
// nor hoists them out of the loop
__device__ __forceinline__ unsigned ld(const unsigned short* p) {
    unsigned short v; asm volatile("ld.global.ca.u16 %0, [%1];" : "=h"(v) : "l"(p)); return v; }
__device__ __forceinline__ unsigned ld(const unsigned* p) {
    unsigned v; asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p)); return v; }
__device__ __forceinline__ unsigned ld(const uint2* p) {
    unsigned x, y; asm volatile("ld.global.ca.v2.u32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "l"(p)); return x ^ y; }
#define to_u(x) ld(&(x))
template <typename T>
__device__ void body(const T* a, int lines, int dep, int shared, int iters, long long* out) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const unsigned per_line = 128 / sizeof(T);
    unsigned line = (unsigned)(lane % lines), first = (unsigned)(lane / lines);
    unsigned base = (shared ? 0u : (unsigned)w * 32u * per_line) + line * per_line;
    unsigned idx = 0, acc = 0;
    for (unsigned s = 0; s < 8; s++) acc += to_u(a[base + (first + s) % per_line]);     // warm: L1 hits after
    if (dep == 2)
        for (unsigned s = 0; s < 8; s++) acc += to_u(a[(unsigned)w * 8u * 32u * per_line + line * per_line
                                                        + first % per_line + s * 32u * per_line]);
    __syncthreads();
    long long t0 = clock64();
    if (dep) {
        for (int i = 0; i < iters; i++) idx = to_u(a[base + (first + (unsigned)(i & 7)) % per_line + idx]);
    } else if (dep == 2) {                                    // independent, each of the 8 on lines of its own
        unsigned b2 = (unsigned)w * 8u * 32u * per_line + line * per_line + first % per_line;
        for (int i = 0; i < iters; i += 8) {
            unsigned z = ((unsigned)i >> 24) & 1u;
            #pragma unroll
            for (unsigned s = 0; s < 8; s++) acc += to_u(a[b2 + s * 32u * per_line + z]);
        }
    } else {
        for (int i = 0; i < iters; i += 8) {
            unsigned z = ((unsigned)i >> 24) & 1u;            // 0, unknown to the compiler: no hoisting
            #pragma unroll
            for (unsigned s = 0; s < 8; s++) acc += to_u(a[base + (first + s) % per_line + z]);
        }
    }
    long long t1 = clock64();
    if (lane == 0) out[blockIdx.x * 32 + w] = t1 - t0;
    if ((idx ^ acc) == 12345u) out[gridDim.x * 32 + 1] = idx + acc;
}
extern "C" __global__ void g2(const unsigned short* a, int l, int d, int s, int it, long long* o) { body<unsigned short>(a, l, d, s, it, o); }
extern "C" __global__ void g4(const unsigned* a, int l, int d, int s, int it, long long* o) { body<unsigned>(a, l, d, s, it, o); }
extern "C" __global__ void g8(const uint2* a, int l, int d, int s, int it, long long* o) { body<uint2>(a, l, d, s, it, o); }
"""


def main() -> int:
    out_path = sys.argv[1]
    mod = cp.RawModule(code=SRC, options=("-std=c++14",))
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    a = cp.zeros(32 * 8 * 32 * 128 // 4 + 64, cp.uint32)       # 32 warps x 8 sets x 32 lines x 128 B
    out = cp.zeros(sms * 32 + 8, cp.int64)
    iters = 512
    cases = []
    for width in (2, 4, 8):
        k = mod.get_function(f"g{width}")
        for _ in range(2):
            k((sms,), (128,), (a, np.int32(8), np.int32(0), np.int32(0), np.int32(iters), out))
        for lines in (1, 4, 8, 16, 32):
            for warps in (4, 8, 16, 32):
                for dep in (1, 0, 2):
                    for shared in ((0, 1) if dep < 2 else (0,)):
                        if dep == 2 and warps * lines * 8 * 128 > 128 * 1024:
                            continue                        # the 8 line sets of all warps must fit in L1
                        res = []
                        for _ in range(3):
                            out.fill(0)
                            k((sms,), (32 * warps,), (a, np.int32(lines), np.int32(dep), np.int32(shared),
                                                     np.int32(iters), out))
                            cp.cuda.Device().synchronize()
                            o = out.get()[:sms * 32].reshape(sms, 32)[:, :warps].astype(float) / iters
                            res.append(float(o.mean()))
                        c = {"width": width, "lines": lines, "warps": warps, "dep": dep, "shared": shared,
                             "iters": iters, "cycles_per_load": min(res)}
                        cases.append(c)
                        print(width, lines, warps, dep, shared, round(min(res), 1),
                              "lines/clk %.2f" % (warps * lines / min(res)), flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "cupy": cp.__version__,
           "sms": sms, "method": "clock64 around 512 loads per warp, one CTA per SM on every SM; best of 3 launches"}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
