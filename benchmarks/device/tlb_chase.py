"""Address-translation microbenchmark (run on a GPU; CI never runs it): one thread chases pointers through a
buffer, one slot per ``stride`` bytes, in a random cyclic order over ``pages`` slots, and reads ``clock64`` around
each pass.  Pass 1 runs on a cold L2 (the slots were written by a scatter kernel on other SMs before a 256 MB flush);
passes 2+ run warm (every line of the chase sits in the L2 when the slots are few enough), so their cycles per hop
are the L2 hit latency plus what translation costs once the pages outgrow a TLB's reach.

    python benchmarks/device/tlb_chase.py OUT.json

Writes {"cases": [{"stride", "slots", "footprint_bytes", "cold_cycles_per_hop", "warm_cycles_per_hop"}], "env"}.
Needs cupy.  Units: SM clock cycles (clock64), bytes.
"""
import json
import sys
import time

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void chase(const unsigned long long* buf, unsigned long long start, int hops, int warm_passes,
                                 long long* out) {
    unsigned long long p = start;
    long long t0 = clock64();
    for (int i = 0; i < hops; i++) p = buf[p];
    long long t1 = clock64();
    for (int r = 0; r < warm_passes; r++)
        for (int i = 0; i < hops; i++) p = buf[p];
    long long t2 = clock64();
    out[0] = t1 - t0; out[1] = t2 - t1; out[2] = (long long)p;
}
"""


def run(kernel, stride: int, slots: int, warm_passes: int, flush) -> dict:
    words = stride // 8
    total_words = words * slots
    order = np.random.default_rng(slots + stride).permutation(slots)
    nxt = np.empty(slots, np.int64)
    nxt[order] = np.roll(order, -1)                      # a single cycle through every slot
    buf = cp.empty(total_words, cp.uint64)               # only the slots are ever read
    buf[cp.asarray(np.arange(slots) * words)] = cp.asarray((nxt * words).astype(np.uint64))
    out = cp.zeros(3, cp.int64)
    flush()
    kernel((1,), (1,), (buf, np.uint64(order[0] * words), np.int32(slots), np.int32(warm_passes), out))
    cp.cuda.Device().synchronize()
    o = out.get()
    del buf
    cp.get_default_memory_pool().free_all_blocks()
    return {"stride": stride, "slots": slots, "footprint_bytes": stride * slots,
            "cold_cycles_per_hop": float(o[0]) / slots, "warm_cycles_per_hop": float(o[1]) / (slots * warm_passes)}


def main() -> int:
    out_path = sys.argv[1]
    kernel = cp.RawKernel(SRC, "chase")
    scratch = cp.empty(256 << 20, cp.uint8)

    def flush():
        scratch.fill(1)
        cp.cuda.Device().synchronize()

    cases = []
    t0 = time.time()
    plan = [(2 << 20, n) for n in (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
                                   3072, 4096, 6144, 8192, 12288, 16384)]
    plan += [(64 << 10, n) for n in (16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384)]
    plan += [(4 << 10, n) for n in (1024, 4096, 16384)]
    for stride, slots in plan:
        if stride * slots > 32 << 30:
            continue
        warm = max(2, 8192 // slots)
        run(kernel, stride, min(slots, 64), 2, flush)       # warm the module
        r = run(kernel, stride, slots, warm, flush)
        cases.append(r)
        print(f"stride {stride >> 10:6d} KiB slots {slots:6d} footprint {r['footprint_bytes'] / 2**30:7.3f} GiB  cold "
              f"{r['cold_cycles_per_hop']:8.1f}  warm {r['warm_cycles_per_hop']:8.1f}", flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    env = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
           "l2_bytes": props.get("l2CacheSize"), "wall_s": round(time.time() - t0, 1)}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
