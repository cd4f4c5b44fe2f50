"""When each warp of a one-wave compute kernel starts and ends on its SM (run on a GPU; CI never runs it).

Every thread loads one float, runs a chain of ``iters`` dependent FMAs (``ilp`` independent chains when asked),
stores one float; lane 0 of each warp writes its SM (``%smid``), its warp slot and ``clock64`` at the kernel's
first and last instruction.  The question is the one achieved occupancy asks: are an SM's warps resident together
to the end (all finish at about the same time), or do the older ones finish first (a scheduler that favours the
oldest warps) so that the SM runs thinned out for the rest of the kernel?  Grids of one wave (CTAs per SM x SMs, or
a little less), of three waves, and block sizes 128-1024.  Also the kernel's duration (CUDA events, median of 7).

    python benchmarks/device/warp_lifetimes.py OUT.json

Writes {"cases": [{"name", "block", "grid", "iters", "ilp", "time_us", "sm_clock_mhz", "summary", "sms"}], "env"}.
Per case, ``summary`` over all SMs: ``occupancy_pct`` (the warp-cycles of the SM's warps over its active span x
its most resident warps, the achieved occupancy the SM saw), ``lifetime_cycles`` (mean warp lifetime),
``span_cycles`` (mean SM span, first start to last end), ``end_spread`` (last end - first end of the SM's first
wave of warps, over the span), ``rank_corr`` (Spearman correlation of start order and end order within an SM: 1
when the oldest warps finish first).  ``sms``: per warp (start, end) of SMs 0-3, cycles from the SM's first start.
Units: SM clock cycles (clock64); time in microseconds.
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
template <int ILP>
__device__ void body(const float* x, float* out, int iters, float a, float b, long long* rec) {
    long long t0 = clock64();
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[ILP];
#pragma unroll
    for (int j = 0; j < ILP; j++) v[j] = x[i] + j;
    for (int k = 0; k < iters; k++) {
#pragma unroll
        for (int j = 0; j < ILP; j++) v[j] = v[j] * a + b;
    }
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < ILP; j++) s += v[j];
    out[i] = s;
    long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) {
        int w = i >> 5;
        rec[3 * w] = smid;
        rec[3 * w + 1] = t0;
        rec[3 * w + 2] = t1;
    }
}
extern "C" __global__ void chain1(const float* x, float* out, int it, float a, float b, long long* r) {
    body<1>(x, out, it, a, b, r);
}
extern "C" __global__ void chain4(const float* x, float* out, int it, float a, float b, long long* r) {
    body<4>(x, out, it, a, b, r);
}
"""


def summarize(rec: np.ndarray, per_sm_max: int) -> tuple[dict, dict]:
    sm, t0, t1 = rec[:, 0], rec[:, 1].astype(np.float64), rec[:, 2].astype(np.float64)
    occ, life, span, spread, corr = [], [], [], [], []
    detail = {}
    for s in np.unique(sm):
        m = sm == s
        a, b = t0[m], t1[m]
        base = a.min()
        a, b = a - base, b - base
        sp = b.max()
        occ.append((b - a).sum() / (sp * per_sm_max))
        life.append((b - a).mean())
        span.append(sp)
        first = np.argsort(a)[:per_sm_max]
        spread.append((b[first].max() - b[first].min()) / sp)
        if len(a) > 2:
            ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
            corr.append(float(np.corrcoef(ra, rb)[0, 1]))
        if int(s) < 4:
            o = np.argsort(a)
            detail[str(int(s))] = [[int(a[k]), int(b[k])] for k in o]
    summary = {"occupancy_pct": 100 * float(np.mean(occ)), "lifetime_cycles": float(np.mean(life)),
               "span_cycles": float(np.mean(span)), "end_spread": float(np.mean(spread)),
               "rank_corr": float(np.mean(corr)) if corr else None, "n_sms": int(len(np.unique(sm)))}
    return summary, detail


def main() -> int:
    out_path = sys.argv[1]
    mod = cp.RawModule(code=SRC, options=("-std=c++14",))
    props = cp.cuda.runtime.getDeviceProperties(0)
    n_sm = props["multiProcessorCount"]
    cases = []
    a, b = np.float32(0.999), np.float32(0.001)
    # (name, block, CTAs per SM resident, waves or a CTA count, iters, ilp)
    plan = [("w1_b256_i64", 256, 8, 1.0, 64, 1), ("w1_b256_i256", 256, 8, 1.0, 256, 1),
            ("w1_b256_i1024", 256, 8, 1.0, 1024, 1), ("g1024_b256_i64", 256, 8, 1024, 64, 1),
            ("g1024_b256_i512", 256, 8, 1024, 512, 1),
            ("w1_b128_i256", 128, 16, 1.0, 256, 1), ("w1_b1024_i256", 1024, 2, 1.0, 256, 1),
            ("w1_b256_i256_ilp4", 256, 8, 1.0, 256, 4), ("w3_b256_i256", 256, 8, 3.0, 256, 1),
            ("w1_b64_i256_half", 64, 32, 0.5, 256, 1)]
    for name, block, per_sm, waves, iters, ilp in plan:
        grid = int(waves) if waves > 16 else int(round(waves * per_sm * n_sm))
        n = grid * block
        x = cp.random.standard_normal(n, dtype=cp.float32)
        out = cp.zeros(n, cp.float32)
        rec = cp.zeros(3 * (n // 32), cp.int64)
        k = mod.get_function(f"chain{ilp}")
        args = (x, out, np.int32(iters), a, b, rec)
        for _ in range(3):
            k((grid,), (block,), args)
        cp.cuda.Device().synchronize()
        ts = []
        for _ in range(7):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            k((grid,), (block,), args)
            e1.record()
            e1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1000)
        r = rec.get().reshape(-1, 3)
        summary, detail = summarize(r, per_sm * block // 32)
        clk = cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrClockRate, 0) / 1000
        cases.append({"name": name, "block": block, "grid": grid, "iters": iters, "ilp": ilp,
                      "ctas_per_sm": per_sm, "time_us": float(np.median(ts)), "sm_clock_mhz": clk,
                      "summary": summary, "sms": detail})
        print(name, grid, round(float(np.median(ts)), 2), {k2: (round(v, 3) if isinstance(v, float) else v)
                                                           for k2, v in summary.items()}, flush=True)
    env = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "cupy": cp.__version__,
           "sms": n_sm}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
