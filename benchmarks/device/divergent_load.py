"""Divergent-load microbenchmark (run on a GPU; CI never runs it): the latency and throughput of a warp's global
load as a function of how many 128 B lines (and 32 B sectors per line) its 32 lanes touch, at each level of the
hierarchy.  Each warp of one CTA runs a chain of dependent loads (the next address adds the value just loaded,
which is 0), so one load is in flight per warp; ``clock64`` around the timed iterations gives cycles per load.

Lane ``l`` reads 4 bytes of line ``l % lines`` of the request, sector ``(l // lines) % sectors``.  Levels:

* ``l1``: the same lines every iteration (L1 hits after the warm-up pass);
* ``l2_cg``: the same lines every iteration through ``ld.global.cg`` (L2 hits, L1 bypassed);
* ``l2_via_l1``: new lines every iteration over a region the warp read once before (L1 misses, L2 hits);
* ``dram``: new lines every iteration over a region last touched before a 256 MB flush (L2 misses).

Warps read disjoint regions.  ``warps`` = 1 gives the latency of one request; more warps on the SM give the
L1TEX stage's throughput (lines per clock) once it binds.

    python benchmarks/device/divergent_load.py OUT.json

Writes {"cases": [{"level", "lines", "sectors", "warps", "iters", "cycles_per_load"}], "env"}.  Needs cupy.
Units: SM clock cycles (clock64).
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void dload(unsigned* a, int lines, int sectors, int level, int iters, int region_lines,
                                 long long* out) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned lj = lane % lines, sj = (lane / lines) % sectors, ej = (lane / (lines * sectors)) % 8;
    unsigned off = lj * 32 + sj * 8 + ej;                  // words: 32 per line, 8 per sector
    unsigned base0 = (unsigned)w * (unsigned)region_lines * 32u;
    unsigned idx = 0;
    int advance = (level >= 2);
    // warm-up pass (for l2_via_l1: the whole region once, so its lines sit in the L2)
    int warm = (level == 2) ? iters : 4;
    for (int i = 0; i < warm; i++) {
        unsigned b = base0 + (advance ? (unsigned)i * lines * 32u : 0u);
        idx = (level == 1) ? __ldcg(a + b + off + idx) : a[b + off + idx];
    }
    if (level == 2) {                                       // evict the region from the L1: read 512 KB elsewhere
        unsigned far = (unsigned)(gridDim.x * blockDim.x / 32) * region_lines * 32u + base0;
        for (int i = 0; i < 4096; i++) idx += a[far + (unsigned)i * 32u + (lane & 31) + idx];
    }
    __syncwarp();
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) {
        unsigned b = base0 + (advance ? (unsigned)i * lines * 32u : 0u);
        idx = (level == 1) ? __ldcg(a + b + off + idx) : a[b + off + idx];
    }
    long long t1 = clock64();
    if (lane == 0) out[w] = t1 - t0;
    if (idx == 12345u) out[1023] = idx;
}
"""
LEVELS = {"l1": 0, "l2_cg": 1, "l2_via_l1": 2, "dram": 3}

# L1 hits by element width: lane l reads ``width`` bytes at byte ``(l // lines) * width`` of line ``l % lines``
SRC_W = r"""
__device__ unsigned to_u(unsigned short v) { return v; }
__device__ unsigned to_u(unsigned v) { return v; }
__device__ unsigned to_u(uint2 v) { return v.x ^ v.y; }
__device__ unsigned to_u(uint4 v) { return v.x ^ v.w; }
template <typename T>
__device__ void body(const T* a, int lines, int iters, int region_lines, long long* out) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int per_line = 128 / sizeof(T);
    unsigned off = (lane % lines) * per_line + (lane / lines) % per_line;
    unsigned base = (unsigned)w * (unsigned)region_lines * per_line;
    unsigned idx = 0;
    for (int i = 0; i < 4; i++) { idx = to_u(a[base + off + idx]); }
    __syncwarp();
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) { idx = to_u(a[base + off + idx]); }
    long long t1 = clock64();
    if (lane == 0) out[w] = t1 - t0;
    if (idx == 12345u) out[1023] = idx;
}
extern "C" __global__ void w2(const unsigned short* a, int l, int it, int r, long long* o) { body<unsigned short>(a, l, it, r, o); }
extern "C" __global__ void w4(const unsigned* a, int l, int it, int r, long long* o) { body<unsigned>(a, l, it, r, o); }
extern "C" __global__ void w8(const uint2* a, int l, int it, int r, long long* o) { body<uint2>(a, l, it, r, o); }
extern "C" __global__ void w16(const uint4* a, int l, int it, int r, long long* o) { body<uint4>(a, l, it, r, o); }
"""


def main() -> int:
    out_path = sys.argv[1]
    k = cp.RawKernel(SRC, "dload")
    iters = 256
    region_lines = iters * 32 + 64                          # a warp's lines at 32 lines per request
    max_warps = 32
    words = (max_warps * region_lines + 4096 + 64) * 32 * 2
    a = cp.zeros(words, cp.uint32)
    scratch = cp.empty(256 << 20, cp.uint8)
    out = cp.zeros(1024, cp.int64)
    cases = []

    def go(level, lines, sectors, warps, flush):
        if flush:
            int(scratch.sum())                              # a read flush: the L2 holds clean lines of scratch
        cp.cuda.Device().synchronize()
        out.fill(0)
        k((1,), (32 * warps,), (a, np.int32(lines), np.int32(sectors), np.int32(LEVELS[level]), np.int32(iters),
                                np.int32(region_lines), out))
        cp.cuda.Device().synchronize()
        cyc = out.get()[:warps].astype(float) / iters
        return {"level": level, "lines": lines, "sectors": sectors, "warps": warps, "iters": iters,
                "cycles_per_load": float(np.mean(cyc)), "cycles_per_load_max": float(np.max(cyc))}

    for _ in range(3):                                      # warm-up (module load, clocks)
        go("l1", 1, 1, 1, False)
    for level, warp_list in (("l1", (1, 2, 4, 8, 16, 32)), ("l2_cg", (1, 4, 16)), ("l2_via_l1", (1, 4, 16)),
                             ("dram", (1, 4, 16))):
        for lines in (1, 2, 4, 8, 16, 32):
            for sectors in (1, 2, 4):
                if lines * sectors > 32:
                    continue
                for warps in warp_list:
                    reps = [go(level, lines, sectors, warps, level == "dram") for _ in range(3)]
                    best = min(reps, key=lambda r: r["cycles_per_load"])
                    cases.append(best)
                    print(level, lines, sectors, warps, round(best["cycles_per_load"], 1), flush=True)
    mod = cp.RawModule(code=SRC_W, options=("-std=c++14",))
    for width in (2, 4, 8, 16):
        kw = mod.get_function(f"w{width}")
        for lines in (1, 4, 8, 16, 32):
            for warps in (1, 4, 32):
                res = []
                for _ in range(3):
                    out.fill(0)
                    kw((1,), (32 * warps,), (a, np.int32(lines), np.int32(iters), np.int32(32), out))
                    cp.cuda.Device().synchronize()
                    res.append(float(np.mean(out.get()[:warps])) / iters)
                cases.append({"level": "l1_width", "width": width, "lines": lines, "sectors": 0, "warps": warps,
                              "iters": iters, "cycles_per_load": min(res)})
                print("l1_width", width, lines, warps, round(min(res), 1), flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "cupy": cp.__version__,
           "method": "clock64 around 256 dependent loads per warp, one CTA; best of 3 launches"}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
