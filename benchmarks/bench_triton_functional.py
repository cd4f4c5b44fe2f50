"""Functional execution of tile kernels: gpusim.triton against Triton's interpreter, side by side.

    python benchmarks/bench_triton_functional.py                 # vector add over 2^24 elements
    python benchmarks/bench_triton_functional.py --n 22 --trace  # 2^22, and gpusim's functional+trace time too

The same kernel file (``kernels/tl_vector_add.py``, a real ``@triton.jit`` kernel) runs under
``TRITON_INTERPRET=1`` in a child process (Triton picks its mode at import; only the launch is timed, not the
import) and under gpusim in this process (``gpusim.triton.run_launch``: values only).  Both results are checked
against the numpy reference.  The bar of issue 3: gpusim at least 20x faster.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

_CHILD = r"""
import importlib.util, json, sys, time
import numpy as np, torch
spec = importlib.util.spec_from_file_location("kfile", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
L = m.launch(**json.loads(sys.argv[2]))
args = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in L["args"]]
t0 = time.perf_counter()
L["kernel"][L["grid"]](*args, **L["meta"])
dt = time.perf_counter() - t0
ok = all(np.allclose(L["args"][k], v, rtol=L["rtol"], atol=L["atol"]) for k, v in L["reference"]().items())
print(json.dumps({"seconds": dt, "ok": bool(ok)}))
"""


def load(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("kfile", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def run_gpusim(path, kw, trace: bool):
    from gpusim.triton import run_launch, trace_launch
    L = load(path).launch(**kw)
    t0 = time.perf_counter()
    if trace:
        trace_launch(L["kernel"], L["grid"], L["args"], L["meta"])
    else:
        run_launch(L["kernel"], L["grid"], L["args"], L["meta"])
    dt = time.perf_counter() - t0
    ok = all(np.allclose(L["args"][k], v, rtol=L["rtol"], atol=L["atol"]) for k, v in L["reference"]().items())
    return dt, ok


def run_interpreter(path, kw, timeout):
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, "-c", _CHILD, path, json.dumps(kw)], env=env, capture_output=True,
                       text=True, timeout=timeout, cwd=ROOT)
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["seconds"], r["ok"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=24, help="log2 of the vector length (default 24)")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--trace", action="store_true", help="also time gpusim's functional execution + trace")
    ap.add_argument("--timeout", type=float, default=3600)
    a = ap.parse_args()
    path = os.path.join(ROOT, "kernels", "tl_vector_add.py")
    kw = {"n": 1 << a.n, "dtype": a.dtype}
    programs = -(-(1 << a.n) // 1024)
    g, g_ok = run_gpusim(path, kw, trace=False)
    rows = [("gpusim.triton (functional)", g, g_ok)]
    if a.trace:
        t, t_ok = run_gpusim(path, kw, trace=True)
        rows.append(("gpusim.triton (functional + trace)", t, t_ok))
    i, i_ok = run_interpreter(path, kw, a.timeout)
    rows.append(("TRITON_INTERPRET=1", i, i_ok))
    print(f"vector add, n = 2^{a.n} {a.dtype}, BLOCK 1024 ({programs} programs)")
    print(f"{'front end':<36} {'seconds':>9} {'us/program':>11} {'correct':>8}")
    for name, s, ok in rows:
        print(f"{name:<36} {s:>9.3f} {s / programs * 1e6:>11.1f} {str(ok):>8}")
    print(f"speed-up of gpusim over the interpreter: {i / g:.0f}x (bar: >= 20x)")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
