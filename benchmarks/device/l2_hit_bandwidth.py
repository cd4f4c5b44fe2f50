"""How many bytes per clock do L2 hits deliver, and do concurrent reads of the same sectors by many SMs cost the L2
one lookup each? (run on a GPU; CI never runs it)

Every kernel runs 1056 CTAs of 256 threads (8 per SM on an H100: full occupancy) and reads ``reps`` times a
region of ``region`` bytes per CTA with 16-byte ``ld.global.cg`` loads (``__ldcg``: cached in L2 only, as
Triton's ``LDGSTS.E.BYPASS.128`` tile loads are), summing into one float per thread:

* ``distinct``:  CTA ``b`` reads its own region at ``b * region`` (footprint 1056 x region; no sector is read by two
  CTAs);
* ``shared``:    every CTA reads the same region from its start (many SMs ask for the same sectors at about the
  same time, as the CTAs of a tiled matmul ask for the same A and B tiles);
* ``staggered``: every CTA reads the same region, starting at a different offset (the same sectors, not at the
  same time);
* ``sm_groups_of_N_sms`` / ``sm_all_sms``: one CTA of 1024 threads per SM (shared memory reserved), reading a 64 KB
  region chosen by its SM id (``%smid >> log2 N``): SMs share a region by groups of N (1: none shared), or all
  share one -- whether the merging happens inside an SM or between SMs.

After a warm-up the footprints stay in the L2.  Under Nsight Compute (``ncu --clock-control none --metrics
gpc__cycles_elapsed.max,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_op_read.sum,
lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_op_read_hit_rate.pct``) the L1's sectors per clock say how
much the L2 delivered, and its read sectors against the L1's say whether concurrent reads of the same sectors
merge.  Without ncu it prints the median time per kernel (cupy events).

    python benchmarks/device/l2_hit_bandwidth.py OUT.json
"""
import json
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void rd(const float4* __restrict__ src, float* out, int region_f4, int reps, int mode) {
    int b = blockIdx.x, t = threadIdx.x;
    long long base = mode == 0 ? (long long)b * region_f4 : 0;
    int shift = mode == 2 ? (b * 97 * 256) % region_f4 : 0;
    float acc = 0.f;
    for (int r = 0; r < reps; ++r) {
        for (int i = t; i < region_f4; i += blockDim.x) {
            int j = i + shift;
            if (j >= region_f4) j -= region_f4;
            float4 v = __ldcg(src + base + j);
            acc += v.x + v.y + v.z + v.w;
        }
    }
    out[(long long)b * blockDim.x + t] = acc;
}
__device__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
// one CTA per SM (the launch reserves most of the shared memory): SMs share a region by groups of 2^g SMs
extern "C" __global__ void rd_sm(const float4* __restrict__ src, float* out, int* sms, int region_f4, int reps,
                                 int g) {
    extern __shared__ float pad[];
    unsigned s = smid();
    long long base = g < 0 ? 0 : (long long)(s >> g) * region_f4;
    float acc = 0.f;
    for (int r = 0; r < reps; ++r)
        for (int i = threadIdx.x; i < region_f4; i += blockDim.x) {
            float4 v = __ldcg(src + base + i);
            acc += v.x + v.y + v.z + v.w;
        }
    out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
    if (threadIdx.x == 0) sms[blockIdx.x] = s;
    if (acc == -1.f) pad[threadIdx.x] = acc;
}
"""
MODES = {"distinct": 0, "shared": 1, "staggered": 2}
GRID, BLOCK = 1056, 256


def main() -> int:
    mod = cp.RawModule(code=SRC)
    k = mod.get_function("rd")
    rows = []
    cases = [("distinct", 8192, 32), ("shared", 8192, 32), ("staggered", 8192, 32),
             ("distinct", 16384, 16), ("shared", 16384, 16), ("staggered", 16384, 16),
             ("shared", 65536, 4), ("staggered", 65536, 4)]
    src = cp.ones(max(GRID * 16384, 132 * 65536) // 4, dtype=cp.float32)
    out = cp.zeros(GRID * BLOCK, cp.float32)
    for mode, region, reps in cases:
        args = (src, out, np.int32(region // 16), np.int32(reps), np.int32(MODES[mode]))
        times = []
        for r in range(8):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            k((GRID,), (BLOCK,), args)
            e.record()
            e.synchronize()
            if r >= 2:
                times.append(cp.cuda.get_elapsed_time(s, e))
        nbytes = GRID * region * reps
        rows.append({"kernel": f"{mode}_r{region}", "mode": mode, "region_bytes": region, "reps": reps,
                     "grid": GRID, "block": BLOCK, "bytes_read": nbytes, "median_ms": float(np.median(times))})
        print(f"{mode:10s} region {region:6d} reps {reps:3d}: {rows[-1]['median_ms'] * 1000:8.1f} us "
              f"{nbytes / rows[-1]['median_ms'] / 1e6:8.1f} GB/s", flush=True)
    # one CTA of 1024 threads per SM (150 KB of shared memory reserved): SMs grouped by 2^g share a region
    k2 = mod.get_function("rd_sm")
    k2.max_dynamic_shared_size_bytes = 150 * 1024
    sms = cp.zeros(132, cp.int32)
    for g in (0, 1, 2, 4, -1):
        region, reps = 65536, 32
        args = (src, out, sms, np.int32(region // 16), np.int32(reps), np.int32(g))
        times = []
        for r in range(8):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            k2((132,), (1024,), args, shared_mem=150 * 1024)
            e.record()
            e.synchronize()
            if r >= 2:
                times.append(cp.cuda.get_elapsed_time(s, e))
        nbytes = 132 * region * reps
        name = "all_sms" if g < 0 else f"groups_of_{1 << g}_sms"
        rows.append({"kernel": f"sm_{name}", "mode": name, "region_bytes": region, "reps": reps, "grid": 132,
                     "block": 1024, "bytes_read": nbytes, "median_ms": float(np.median(times)),
                     "distinct_sms": int(len(set(sms.get().tolist())))})
        print(f"{name:16s} {rows[-1]['median_ms'] * 1000:8.1f} us {nbytes / rows[-1]['median_ms'] / 1e6:8.1f} GB/s "
              f"on {rows[-1]['distinct_sms']} SMs", flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump({"cases": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
