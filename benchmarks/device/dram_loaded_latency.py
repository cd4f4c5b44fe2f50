"""DRAM latency under load (run on a GPU; CI never runs it): one thread chases pointers through DRAM while the
other SMs stream, and the chase's cycles per hop are read with ``clock64`` -- the loaded-latency curve (latency
against the bandwidth the rest of the chip draws), as memory-system papers draw it.

Block 0's thread 0 chases a single random cycle through ``SLOTS`` slots spread over 1 GiB (one 8-byte slot per
128 KiB, so every hop misses the L2 and opens a DRAM row of its own).  Blocks 1..S stream ``float4`` loads (and,
in ``copy`` mode, stores of the same) in a grid-stride loop over a 2 GiB buffer, ``ilp`` independent loads per
thread per iteration, ``warps`` warps per block; S = 132 x ``per_sm``.  Each stream block records its bytes and
its ``%globaltimer`` span; the chase records its own, so a case is kept only if the chase ran inside the stream.

    python benchmarks/device/dram_loaded_latency.py OUT.json

Writes {"cases": [{"mode", "warps", "per_sm", "ilp", "stream_gbps", "stream_bytes", "hops",
"cycles_per_hop", "ns_per_hop", "chase_inside_stream"}], "env"}.  Needs cupy.  Units: SM clock cycles (clock64), GB/s (1e9 B/s).
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
extern "C" __global__ void loaded(const unsigned long long* chase, unsigned long long start, int hops,
                                  const float4* src, float4* dst, long long n4, int iters, int ilp, int copy,
                                  long long* chase_out, unsigned long long* stream_out, float* sink) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            unsigned long long p = start;
            unsigned long long g0 = gtimer();
            long long t0 = clock64();
            for (int i = 0; i < hops; i++) p = chase[p];
            long long t1 = clock64();
            unsigned long long g1 = gtimer();
            chase_out[0] = t1 - t0; chase_out[1] = (long long)g0; chase_out[2] = (long long)g1;
            chase_out[3] = (long long)p;
        }
        return;
    }
    long long nthreads = (long long)(gridDim.x - 1) * blockDim.x;
    long long tid = (long long)(blockIdx.x - 1) * blockDim.x + threadIdx.x;
    unsigned long long g0 = gtimer();
    float acc = 0.f;
    long long pos = tid;
    for (int it = 0; it < iters; it++) {
        float4 v[8];
        #pragma unroll
        for (int j = 0; j < 8; j++) if (j < ilp) v[j] = src[(pos + j * nthreads) % n4];
        #pragma unroll
        for (int j = 0; j < 8; j++) if (j < ilp) {
            if (copy) dst[(pos + j * nthreads) % n4] = v[j];
            else acc += v[j].x + v[j].y + v[j].z + v[j].w;
        }
        pos += (long long)ilp * nthreads;
    }
    if (acc == 12345.f) sink[0] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long g1 = gtimer();
        stream_out[3 * (blockIdx.x - 1)] = g0;
        stream_out[3 * (blockIdx.x - 1) + 1] = g1;
        stream_out[3 * (blockIdx.x - 1) + 2] = (unsigned long long)iters * ilp * blockDim.x * 16ull * (copy ? 2 : 1);
    }
}
"""

SLOTS = 8192
SLOT_STRIDE = 128 << 10           # bytes between slots (1 GiB / 8192)


def main() -> int:
    out_path = sys.argv[1]
    kern = cp.RawKernel(SRC, "loaded")
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    words = SLOT_STRIDE // 8
    order = np.random.default_rng(7).permutation(SLOTS)
    nxt = np.empty(SLOTS, np.int64)
    nxt[order] = np.roll(order, -1)
    chase = cp.zeros(SLOTS * words, cp.uint64)
    chase[cp.asarray(np.arange(SLOTS) * words)] = cp.asarray((nxt * words).astype(np.uint64))
    start = np.uint64(order[0] * words)
    n4 = (2 << 30) // 16
    src = cp.ones(n4 * 4, cp.float32).view(cp.float32)
    dst = cp.zeros(n4 * 4, cp.float32)
    scratch = cp.empty(256 << 20, cp.uint8)
    sink = cp.zeros(1, cp.float32)
    chase_out = cp.zeros(4, cp.int64)

    def launch(warps, per_sm, ilp, copy, iters, hops):
        S = sms * per_sm
        stream_out = cp.zeros(3 * max(S, 1), cp.uint64)
        scratch.fill(1)                                   # flush the L2 (the chase's slots are cold)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        kern((1 + S,), (32 * warps,), (chase, start, np.int32(hops), src, dst, np.int64(n4), np.int32(iters),
                                       np.int32(ilp), np.int32(copy), chase_out, stream_out, sink))
        cp.cuda.Device().synchronize()
        wall = time.perf_counter() - t0
        c = chase_out.get()
        s = stream_out.get().reshape(-1, 3)[:S] if S else np.zeros((0, 3), np.uint64)
        return c, s, wall

    cases = []
    t_start = time.time()
    # the chase alone (no stream blocks: per_sm 0) at two hop counts
    for hops in (1024, 4096):
        c, _, _ = launch(1, 0, 1, 0, 0, hops)
        cases.append({"mode": "idle", "warps": 0, "per_sm": 0, "ilp": 0, "stream_gbps": 0.0, "stream_bytes": 0,
                      "hops": hops, "cycles_per_hop": float(c[0]) / hops,
                      "ns_per_hop": float(c[2] - c[1]) / hops, "chase_inside_stream": True})
        print(f"idle hops {hops}: {float(c[0]) / hops:.1f} cycles/hop", flush=True)
    hops = 2048
    for copy in (0, 1):
        for per_sm in (1, 2):
            for warps in (1, 2, 4, 8, 16, 32):
                if warps * per_sm > 64:
                    continue
                for ilp in (1, 4):
                    # size the stream to outlast the chase: a trial launch measures its rate
                    iters = 64
                    for _ in range(3):
                        c, s, _ = launch(warps, per_sm, ilp, copy, iters, 64)
                        span_ns = float(s[:, 1].max() - s[:, 0].min())
                        chase_ns = 2048 * 600.0                  # ~600 ns a hop at worst
                        if span_ns > 1.3 * chase_ns:
                            break
                        iters = int(iters * 1.5 * chase_ns / max(span_ns, 1.0)) + 1
                    c, s, _ = launch(warps, per_sm, ilp, copy, iters, hops)
                    g0, g1 = int(s[:, 0].min()), int(s[:, 1].max())
                    nbytes = int(s[:, 2].sum())
                    gbps = nbytes / max(g1 - g0, 1)
                    inside = bool(c[1] >= g0 and c[2] <= g1)
                    r = {"mode": "copy" if copy else "read", "warps": warps, "per_sm": per_sm, "ilp": ilp,
                         "stream_gbps": round(gbps, 2), "stream_bytes": nbytes, "hops": hops,
                         "cycles_per_hop": float(c[0]) / hops, "ns_per_hop": float(c[2] - c[1]) / hops,
                         "chase_inside_stream": inside}
                    cases.append(r)
                    print(f"{r['mode']:4s} warps {warps:2d} x {per_sm} ilp {ilp}: {gbps:7.1f} GB/s  "
                          f"{r['cycles_per_hop']:7.1f} cycles/hop  inside {inside}", flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
           "sms": sms, "wall_s": round(time.time() - t_start, 1)}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
