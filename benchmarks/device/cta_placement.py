"""Which SM does each CTA of a launch start on? (run on a GPU; CI never runs it)

A kernel writes ``%smid`` per CTA (and spins a little so that the first wave is resident at once), for grids of
1, 2 and 8 CTAs per SM worth of CTAs, and two CTA sizes.  The model's work distributor (``Engine.run``) places the
first wave from this: which CTA ids share an SM, and which share a TPC (SMs 2k and 2k+1).

    python benchmarks/device/cta_placement.py OUT.json
"""
import json
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void where(int* sm, long long* t0, int spin) {
    unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (threadIdx.x == 0) { sm[blockIdx.x] = s; t0[blockIdx.x] = t; }
    long long c = clock64();
    while (clock64() - c < spin) { }
}
"""


def main() -> int:
    k = cp.RawModule(code=SRC).get_function("where")
    rows = []
    for ctas, threads, smem in ((132, 256, 0), (264, 256, 0), (1056, 256, 0), (528, 512, 0), (264, 128, 100 * 1024),
                                (2112, 256, 0)):
        sm = cp.zeros(ctas, cp.int32)
        t0 = cp.zeros(ctas, cp.int64)
        if smem:
            k.max_dynamic_shared_size_bytes = smem
        for _ in range(3):
            k((ctas,), (threads,), (sm, t0, np.int32(200000)), shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        s = sm.get().tolist()
        t = t0.get()
        rows.append({"ctas": ctas, "threads": threads, "dyn_shared_bytes": smem, "smid": s,
                     "start_ns": (t - t.min()).tolist()})
        print(ctas, threads, smem, "first 24 CTAs on SMs", s[:24], flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump({"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "cases": rows}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
