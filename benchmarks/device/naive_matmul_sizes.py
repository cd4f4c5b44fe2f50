"""numba-cuda's documentation matmul (kernels/nb_matmul.py, one thread per output, a loop over k) timed at many
sizes, float64 as the example and float32 (run on a GPU; CI never runs it).  Event timing: the median of 30
launches (7 batches of 20 back to back, per launch; launches shorter than numba's host overhead measure
that overhead instead) after 5 warm-up launches; the kernel's inputs stay in the L2 between launches for sizes up to ~1000
(what the L2-resident steady state of the loop measures), so compare with gpusim's time for the same launch.

    python benchmarks/device/naive_matmul_sizes.py OUT.json

Writes {"cases": [{"dtype", "size", "grid", "block", "time_us"}], "env"}.  Needs numba-cuda.  Units: µs.
"""
import json
import math
import os
import sys
import time

import numpy as np

np.row_stack = np.vstack                                    # numba-cuda on numpy 2.5
from numba import cuda                                      # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from kernels.nb_matmul import matmul                        # noqa: E402  (numba-cuda's example, unchanged)


def main() -> int:
    out_path = sys.argv[1]
    cases = []
    for dtype in ("float64", "float32"):
        for n in (64, 128, 192, 250, 256, 384, 500, 512, 768):
            rng = np.random.default_rng(0)
            a = cuda.to_device(rng.random((n, n)).astype(dtype))
            b = cuda.to_device(rng.random((n, n)).astype(dtype))
            c = cuda.device_array((n, n), dtype=dtype)
            grid = (math.ceil(n / 16), math.ceil(n / 16))
            for _ in range(5):
                matmul[grid, (16, 16)](a, b, c)
            cuda.synchronize()
            times = []
            for _ in range(7):                              # 20 launches back to back between two events: the
                e0, e1 = cuda.event(), cuda.event()         # GPU's queue stays full once a launch outlasts the host's
                e0.record()                                 # launch overhead (~20-50 us for numba-cuda)
                for _ in range(20):
                    matmul[grid, (16, 16)](a, b, c)
                e1.record()
                e1.synchronize()
                times.append(cuda.event_elapsed_time(e0, e1) * 1000.0 / 20)
            ref = a.copy_to_host() @ b.copy_to_host()
            ok = bool(np.allclose(c.copy_to_host(), ref, rtol=1e-3 if dtype == "float32" else 1e-9))
            cases.append({"dtype": dtype, "size": n, "grid": list(grid), "block": [16, 16],
                          "time_us": float(np.median(times)), "time_us_min": float(min(times)), "ok": ok})
            print(dtype, n, round(float(np.median(times)), 2), ok, flush=True)
    env = {"gpu": cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes)
           else str(cuda.get_current_device().name), "date": time.strftime("%Y-%m-%d"),
           "method": "cuda events around 20 launches back to back, median of 7 batches after 5 warm-up launches"}
    with open(out_path, "w") as f:
        json.dump({"cases": cases, "env": env}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
