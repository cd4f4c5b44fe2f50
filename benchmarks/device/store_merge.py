"""Do a warp's narrow stores to the same sectors reach the L2 as one write? (run on a GPU; CI never runs it)

Every kernel writes the same 16 B per thread over ``n`` threads (16 n bytes in all), in different instruction
shapes:

* ``v128``:     one STG.E.128 per thread (full sectors: the baseline);
* ``s32x4``:    four STG.E.32 at offsets 0, 4, 8, 12 back to back (Triton's unvectorized store of 4 elements);
* ``s64x2``:    two STG.E.64 at offsets 0 and 8 back to back (a 16 B record written field by field);
* ``s32x4_gap``: as ``s32x4`` with a chain of ~64 dependent FMAs between the stores (the same sectors, later);
* ``s32x4_far``: four STG.E.32 whose lanes are 4 B apart (each instruction writes whole sectors: 4 x v32 lines).

Under Nsight Compute (``ncu --metrics lts__t_sectors_op_write.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,
gpc__cycles_elapsed.max ...``) the L2's write sectors against the L1's store sectors say whether partial-sector
stores merge before the L2.  Without ncu it prints the median time per kernel (cupy events).

    python benchmarks/device/store_merge.py OUT.json [n]
"""
import json
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void v128(float4* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) out[t] = make_float4(t, t + 1, t + 2, t + 3);
}
extern "C" __global__ void s32x4(float* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        volatile float* o = out + 4 * (long long)t;
        o[0] = t; o[1] = t + 1; o[2] = t + 2; o[3] = t + 3;
    }
}
extern "C" __global__ void s64x2(double* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        volatile double* o = out + 2 * (long long)t;
        o[0] = t; o[1] = t + 1;
    }
}
extern "C" __global__ void s32x4_gap(float* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        volatile float* o = out + 4 * (long long)t;
        float x = t;
        #pragma unroll 1
        for (int j = 0; j < 4; ++j) {
            for (int k = 0; k < 64; ++k) x = x * 1.0001f + 0.5f;
            o[j] = x;
        }
    }
}
extern "C" __global__ void s32x4_far(float* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        int w = t >> 5, l = t & 31;
        volatile float* o = out + 128 * (long long)w + l;
        o[0] = t; o[32] = t + 1; o[64] = t + 2; o[96] = t + 3;
    }
}
"""
KERNELS = ("v128", "s32x4", "s64x2", "s32x4_gap", "s32x4_far")


def main() -> int:
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
    mod = cp.RawModule(code=SRC)
    out = cp.zeros(4 * n, cp.float32)
    rows = []
    for name in KERNELS:
        k = mod.get_function(name)
        times = []
        for r in range(12):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            k(((n + 255) // 256,), (256,), (out, np.int32(n)))
            e.record()
            e.synchronize()
            if r >= 2:
                times.append(cp.cuda.get_elapsed_time(s, e))
        rows.append({"kernel": name, "n": n, "bytes": 16 * n, "median_ms": float(np.median(times))})
        print(f"{name:10s} {rows[-1]['median_ms'] * 1000:8.1f} us", flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump({"cases": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
