"""L2 near/far latency microbenchmark (run on a GPU; CI never runs it).  The H100's L2 is two partitions; an SM
reaches the other partition's slices over a fabric.  Question: once an SM of partition A has read a line, does a
later read from partition B pay a far latency, and does a second read from B (or any read from A) pay only the
near one -- i.e. does a partition keep a copy of the far lines it reads?

Per case: one thread of a CTA pinned to SM ``s0`` (by %smid; other CTAs exit) reads every line of a 1 MB region
(a random cyclic chase, one line per hop), after a 256 MB read flush; then one thread on SM ``s1`` chases the same
cycle twice and records ``clock64`` per hop.  The first pass's per-hop cycles are bimodal when half the lines
are far for ``s1``; the second pass shows what a partition keeps.

    python benchmarks/device/l2_partition_latency.py OUT.json

Writes {"cases": [{"s0", "s1", "first": [percentiles], "second": [...], "first_hist", ...}], "env"}.  Needs cupy.
Units: SM clock cycles per hop (one dependent 8-byte load and the clock reads).
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void pinned_chase(const unsigned long long* buf, unsigned long long start, int hops,
                                        int passes, int target, int* flag, long long* lat) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (smid != (unsigned)target || threadIdx.x != 0) return;
    if (atomicCAS(flag, 0, 1) != 0) return;
    __shared__ volatile unsigned long long sink[1];
    unsigned long long p = start;
    for (int r = 0; r < passes; r++)
        for (int i = 0; i < hops; i++) {
            long long t0 = clock64();
            p = buf[p];
            sink[0] = p;                                   // in-order issue: waits for the load
            long long t1 = clock64();
            if (lat) lat[(long long)r * hops + i] = t1 - t0;
        }
    if (p == 0xFFFFFFFFFFFFFFFFull) flag[1] = 1;
}
"""


def main() -> int:
    out_path = sys.argv[1]
    k = cp.RawKernel(SRC, "pinned_chase")
    n_sm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    lines = 8192                                          # 1 MB at 128 B per slot
    words = 16                                            # 8-byte words per 128 B line
    rng = np.random.default_rng(1)
    order = rng.permutation(lines)
    nxt = np.empty(lines, np.int64)
    nxt[order] = np.roll(order, -1)
    host = np.zeros(lines * words, np.uint64)
    host[np.arange(lines) * words] = (nxt * words).astype(np.uint64)
    buf = cp.asarray(host)
    scratch = cp.empty(256 << 20, cp.uint8)
    flag = cp.zeros(2, cp.int32)
    lat = cp.zeros(2 * lines, cp.int64)
    start = np.uint64(order[0] * words)

    def chase(target, passes, record):
        flag.fill(0)
        k((4 * n_sm,), (32,), (buf, start, np.int32(lines), np.int32(passes), np.int32(target), flag,
                              lat if record else np.uint64(0)))
        cp.cuda.Device().synchronize()
        assert int(flag.get()[0]) == 1, f"no CTA ran on SM {target}"

    cases = []
    s0 = 0
    for s1 in [0, 1, 2, 3] + list(range(4, n_sm, 4)):
        int(scratch.sum())
        cp.cuda.Device().synchronize()
        chase(s0, 1, False)
        chase(s1, 2, True)
        v = lat.get().astype(float)
        first, second = v[:lines], v[lines:]
        pct = [5, 25, 50, 75, 95]
        hist, edges = np.histogram(first, bins=np.arange(0, 1200, 20))
        cases.append({"s0": s0, "s1": s1, "first_pct": [float(np.percentile(first, p)) for p in pct],
                      "second_pct": [float(np.percentile(second, p)) for p in pct],
                      "first_mean": float(first.mean()), "second_mean": float(second.mean()),
                      "first_hist": hist.tolist(), "hist_edges": edges.tolist()})
        c = cases[-1]
        print(s1, [round(x) for x in c["first_pct"]], [round(x) for x in c["second_pct"]], flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"gpu": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "cupy": cp.__version__,
           "percentiles": [5, 25, 50, 75, 95], "lines": lines,
           "method": "1 MB region read by one thread on SM s0 after a 256 MB read flush, then chased twice by "
                     "one thread on SM s1 with clock64 around every hop"}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
