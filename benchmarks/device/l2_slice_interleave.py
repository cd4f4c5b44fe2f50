"""Do neighbouring 128 B lines share an L2 slice?  Hot-spot atomics on two lines ``d`` lines apart (run on a GPU; CI
never runs it).

Every kernel runs 1056 CTAs of 256 threads; each thread does ``iters`` int32 ``atomicAdd``s (results unused: RED)
to one of two words: lanes of even index to word 0, odd to word ``32 * d`` (``d`` lines further).  With both lines
on one slice the slice's atomic unit takes all the adds (about twice the time of two slices, and
``lts__t_sectors_op_red.max`` about the whole sum); on two slices, each takes half.  ``d = 0``: both words in one
line (one slice, the reference).  Prints the median time per kernel (cupy events) and writes them to OUT.json; under
Nsight Compute (``NCU_ONCE=1``: each kernel launched once; ``--metrics gpc__cycles_elapsed.max,
lts__t_sectors_op_red.sum,lts__t_sectors_op_red.max``) the slice counters say where the sectors went.

    python benchmarks/device/l2_slice_interleave.py OUT.json
"""
import json
import os
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void hot2(int* a, int off, int iters) {
    int w = (threadIdx.x & 1) ? off : 0;
    for (int r = 0; r < iters; ++r) atomicAdd(a + w, 1);
}
"""
GRID, BLOCK, ITERS = 1056, 256, 16
DISTANCES = (0, 1, 2, 3, 4, 8, 16, 32, 64, 128)


def main() -> int:
    k = cp.RawModule(code=SRC).get_function("hot2")
    once = os.environ.get("NCU_ONCE") == "1"
    a = cp.zeros(32 * 1024, cp.int32)
    rows = []
    for d in DISTANCES:
        off = np.int32(32 * d if d else 1)
        times = []
        for r in range(1 if once else 8):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            k((GRID,), (BLOCK,), (a, off, np.int32(ITERS)))
            e.record()
            e.synchronize()
            if once or r >= 2:
                times.append(cp.cuda.get_elapsed_time(s, e))
        rows.append({"kernel": f"hot2_d{d}", "lines_apart": d, "adds": GRID * BLOCK * ITERS,
                     "median_ms": float(np.median(times))})
        print(f"d={d:4d} lines apart: {rows[-1]['median_ms'] * 1000:8.1f} us", flush=True)
    if not once:
        with open(sys.argv[1], "w") as f:
            json.dump({"cases": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
