"""Which lines does the L2 evict: how many dirty lines does a clean stream push out, and how many of a kernel's own
written lines are still dirty when it ends? (run on a GPU under Nsight Compute; CI never runs it)

Each case, in order, with the L2 left as the previous kernel left it (``--cache-control none``):

1. ``flush_r``: read a 512 MB buffer (the L2 then holds clean lines only);
2. a kernel that leaves dirty lines: ``dirty_w`` writes D bytes (whole lines), or a stream ``vadd`` (out = a + b,
   fp32, n elements: 8n bytes read, 4n written), ``copy`` (4n read, 4n written) or ``fill`` (4n written);
3. ``clean_r``: read F bytes of another buffer (clean lines, a few bytes written per CTA).

``dram__bytes_write.sum`` of ``clean_r`` is what it evicted of the dirty lines (2): for ``dirty_w`` against D and F,
the shape of the replacement (LRU writes back nothing until D + F passes the capacity, then all of D); for the
streams with F = 512 MB, how much of their output was still dirty when they ended.

    python benchmarks/device/l2_dirty_eviction.py OUT.json          # runs itself under ncu
    python benchmarks/device/l2_dirty_eviction.py --child PLAN.json   # (what ncu runs)

Writes {"cases": [{"kind", "dirty_bytes", "clean_bytes", "n", "second": {metric: value}, "clean": {...}}], "env"}.
Units: bytes.
"""
import csv
import io
import json
import os
import subprocess
import sys
import time

MB = 1 << 20
METRICS = ["dram__bytes_write.sum", "dram__bytes_read.sum", "lts__t_sectors_op_write.sum", "gpc__cycles_elapsed.max"]

SRC = r"""
extern "C" __global__ void flush_r(const float4* a, long long n4, float* sink) {
    float s = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
        float4 v = a[i]; s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.678f) sink[0] = s;
}
extern "C" __global__ void clean_r(const float4* a, long long n4, float* sink) {
    float s = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
        float4 v = a[i]; s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.678f) sink[0] = s;
}
extern "C" __global__ void dirty_w(float4* out, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
        out[i] = make_float4(1.f, 2.f, 3.f, (float)i);
}
extern "C" __global__ void vadd(const float* a, const float* b, float* out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
extern "C" __global__ void copy(const float* a, float* out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i];
}
extern "C" __global__ void fill(float* out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = 1.5f;
}
"""


def plan() -> list[dict]:
    cases = []
    for d in (2, 8, 16):
        for f in (8, 16, 20, 24, 28, 32, 40, 48, 64, 96):
            cases.append({"kind": "dirty_w", "dirty_bytes": d * MB, "clean_bytes": f * MB, "n": 0})
    for kind in ("vadd", "copy", "fill"):
        for p in (21, 22, 23, 24):
            cases.append({"kind": kind, "dirty_bytes": 0, "clean_bytes": 512 * MB, "n": 1 << p})
    return cases


def child(path: str) -> None:
    import cupy as cp
    cases = json.load(open(path))
    mod = cp.RawModule(code=SRC)
    k = {name: mod.get_function(name) for name in ("flush_r", "clean_r", "dirty_w", "vadd", "copy", "fill")}
    flush = cp.ones(512 * MB // 4, cp.float32)
    clean = cp.ones(512 * MB // 4, cp.float32)
    dirty = cp.zeros(64 * MB // 4, cp.float32)
    a = cp.ones(1 << 24, cp.float32)
    b = cp.ones(1 << 24, cp.float32)
    out = cp.zeros(1 << 24, cp.float32)
    sink = cp.zeros(4, cp.float32)
    grid = 132 * 8
    for c in cases:
        k["flush_r"]((grid,), (256,), (flush, cp.int64(flush.size // 4), sink))
        if c["kind"] == "dirty_w":
            k["dirty_w"]((grid,), (256,), (dirty, cp.int64(c["dirty_bytes"] // 16)))
        else:
            n = c["n"]
            blocks = (n + 255) // 256
            if c["kind"] == "vadd":
                k["vadd"]((blocks,), (256,), (a, b, out, cp.int64(n)))
            elif c["kind"] == "copy":
                k["copy"]((blocks,), (256,), (a, out, cp.int64(n)))
            else:
                k["fill"]((blocks,), (256,), (out, cp.int64(n)))
        k["clean_r"]((grid,), (256,), (clean, cp.int64(c["clean_bytes"] // 16), sink))
    cp.cuda.runtime.deviceSynchronize()


def main() -> None:
    if sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    out = sys.argv[1]
    cases = plan()
    plan_path = os.path.abspath(out + ".plan.json")
    json.dump(cases, open(plan_path, "w"))
    ncu = os.environ.get("NCU") or ("/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else "ncu")
    t0 = time.time()
    res = subprocess.run([ncu, "--cache-control", "none", "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
                          "--metrics", ",".join(METRICS), sys.executable, os.path.abspath(__file__), "--child",
                          plan_path], capture_output=True, text=True)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith('"')]
    if not lines:
        sys.exit(f"ncu gave no rows (rc {res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    rows = [r for r in rows if r.get("Kernel Name")]
    per = 3                                                 # flush, the dirtying kernel, clean_r
    if len(rows) < per * len(cases):
        sys.exit(f"expected {per * len(cases)} kernels, ncu profiled {len(rows)}")
    rows = rows[len(rows) - per * len(cases):]              # (cupy's own fills of the buffers come first)
    assert rows[0]["Kernel Name"].startswith("flush_r"), rows[0]["Kernel Name"]

    def val(r, m):
        v = r.get(m, "")
        try:
            return float(str(v).replace(",", ""))
        except ValueError:
            return None

    for i, c in enumerate(cases):
        second, clean = rows[per * i + 1], rows[per * i + 2]
        assert clean["Kernel Name"].startswith("clean_r"), clean["Kernel Name"]
        c["second"] = {m: val(second, m) for m in METRICS}
        c["clean"] = {m: val(clean, m) for m in METRICS}
    env = {"gpu": rows[0].get("device__attribute_display_name") or rows[0].get("Device Name"),
           "ncu_s": round(time.time() - t0, 1)}
    json.dump({"cases": cases, "env": env}, open(out, "w"), indent=1)
    for c in cases:
        print(f'{c["kind"]:8s} D {c["dirty_bytes"] / MB:5.0f} MB  n {c["n"]:>9d}  F {c["clean_bytes"] / MB:5.0f} MB  '
              f'second wr {c["second"]["dram__bytes_write.sum"] / MB:7.2f} MB  '
              f'clean wr {c["clean"]["dram__bytes_write.sum"] / MB:7.2f} MB')


if __name__ == "__main__":
    main()
