"""How much of a footprint read again does the L2 keep: the L2's capacity and replacement for reuse (run on a GPU
under Nsight Compute; CI never runs it).

An LRU of capacity C keeps all of a footprint F read twice when F <= C and none of it when F > C (each line is
evicted just before its reuse); a random replacement keeps a share that falls off gradually.  Each case, in order,
with the L2 left as the previous kernel left it (``--cache-control none``):

* ``read2``: read a 512 MB buffer (flush), read F bytes (grid-stride, float4), read the same F bytes again:
  ``dram__bytes_read`` of the second read is what the L2 lost of F;
* ``own_r``: flush, then one kernel in which each CTA reads its own F / CTAs slice ``passes`` times (each SM
  rereads only lines of its own, as register spills do with a warp's local-memory frame): DRAM bytes read
  beyond F are what the passes after the first missed;
* ``own_rw``: the same, each pass reading and writing its slice (read-modify-write of whole lines): DRAM bytes
  written and read tell how the dirty lines are kept;
* ``all_r``: flush, then one kernel of one 1,024-thread CTA per SM in which every CTA reads all of F ``passes``
  times (``ld.global.cg``: no L1), as the tiles of a matmul's operands are read by many SMs: every line is read from
  both L2 partitions, so a partition that keeps a copy of the far lines it reads holds each line twice.

    python benchmarks/device/l2_reuse.py OUT.json          # runs itself under ncu
    python benchmarks/device/l2_reuse.py OUT.json all_r    # only these kinds (comma-separated)
    python benchmarks/device/l2_reuse.py --child PLAN.json   # (what ncu runs)

Writes {"cases": [{"kind", "bytes", "passes", "kernels": [{metric: value} of each kernel after the flush]}],
"env"}.  Units: bytes.
"""
import csv
import io
import json
import os
import subprocess
import sys
import time

MB = 1 << 20
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
           "lts__t_sector_hit_rate.pct", "gpc__cycles_elapsed.max"]
GRID, BLOCK, PASSES = 132 * 8, 256, 8
FOOTPRINTS_MB = (8, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 80, 96, 128)

SRC = r"""
extern "C" __global__ void flush_r(const float4* a, long long n4, float* sink) {
    float s = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
        float4 v = a[i]; s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.678f) sink[0] = s;
}
extern "C" __global__ void own_r(const float4* a, long long per_cta4, int passes, float* sink) {
    const float4* p = a + blockIdx.x * per_cta4;
    float s = 0.f;
    for (int k = 0; k < passes; ++k)
        for (long long i = threadIdx.x; i < per_cta4; i += blockDim.x) { float4 v = p[i]; s += v.x + v.y + v.z + v.w; }
    if (s == 12345.678f) sink[0] = s;
}
extern "C" __global__ void all_r(const float4* a, long long n4, int passes, float* sink) {
    float s = 0.f;
    for (int k = 0; k < passes; ++k)
        for (long long i = threadIdx.x; i < n4; i += blockDim.x) { float4 v = __ldcg(a + i); s += v.x + v.y + v.z + v.w; }
    if (s == 12345.678f) sink[0] = s;
}
extern "C" __global__ void own_rw(float4* a, long long per_cta4, int passes) {
    float4* p = a + blockIdx.x * per_cta4;
    for (int k = 0; k < passes; ++k)
        for (long long i = threadIdx.x; i < per_cta4; i += blockDim.x) { float4 v = p[i]; v.x += 1.f; p[i] = v; }
}
"""


def plan(kinds=("read2", "own_r", "own_rw")) -> list[dict]:
    cases = []
    for kind in kinds:
        for f in FOOTPRINTS_MB:
            cases.append({"kind": kind, "bytes": f * MB, "passes": 2 if kind == "read2" else PASSES})
    return cases


def child(path: str) -> None:
    import cupy as cp
    cases = json.load(open(path))
    mod = cp.RawModule(code=SRC)
    k = {name: mod.get_function(name) for name in ("flush_r", "own_r", "own_rw", "all_r")}
    flush = cp.ones(512 * MB // 4, cp.float32)
    buf = cp.ones(max(FOOTPRINTS_MB) * MB // 4, cp.float32)
    sink = cp.zeros(4, cp.float32)
    for c in cases:
        k["flush_r"]((GRID,), (BLOCK,), (flush, cp.int64(flush.size // 4), sink))
        n4 = c["bytes"] // 16
        if c["kind"] == "read2":
            for _ in range(2):
                k["flush_r"]((GRID,), (BLOCK,), (buf, cp.int64(n4), sink))
        elif c["kind"] == "all_r":
            n_sm = cp.cuda.Device().attributes["MultiProcessorCount"]
            k["all_r"]((n_sm,), (1024,), (buf, cp.int64(n4), cp.int32(PASSES), sink))
        elif c["kind"] == "own_r":
            k["own_r"]((GRID,), (BLOCK,), (buf, cp.int64(n4 // GRID), cp.int32(PASSES), sink))
        else:
            k["own_rw"]((GRID,), (BLOCK,), (buf, cp.int64(n4 // GRID), cp.int32(PASSES)))
    cp.cuda.runtime.deviceSynchronize()


def main() -> None:
    if sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    out = sys.argv[1]
    cases = plan(tuple(sys.argv[2].split(","))) if len(sys.argv) > 2 else plan()
    plan_path = os.path.abspath(out + ".plan.json")
    json.dump(cases, open(plan_path, "w"))
    ncu = os.environ.get("NCU") or ("/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else "ncu")
    t0 = time.time()
    res = subprocess.run([ncu, "--cache-control", "none", "--clock-control", "none", "--csv", "--page", "raw",
                          "--print-units", "base", "--metrics", ",".join(METRICS), sys.executable,
                          os.path.abspath(__file__), "--child", plan_path], capture_output=True, text=True)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith('"')]
    if not lines:
        sys.exit(f"ncu gave no rows (rc {res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines))) if r.get("Kernel Name")]
    per = [3 if c["kind"] == "read2" else 2 for c in cases]
    if len(rows) < sum(per):
        sys.exit(f"expected {sum(per)} kernels, ncu profiled {len(rows)}")
    rows = rows[len(rows) - sum(per):]                      # (cupy's own fills of the buffers come first)

    def val(r, m):
        try:
            return float(str(r.get(m, "")).replace(",", ""))
        except ValueError:
            return None

    i = 0
    for c, n in zip(cases, per):
        assert rows[i]["Kernel Name"].startswith("flush_r"), rows[i]["Kernel Name"]
        c["kernels"] = [{m: val(r, m) for m in METRICS} for r in rows[i + 1:i + n]]
        i += n
    env = {"gpu": rows[0].get("device__attribute_display_name") or rows[0].get("Device Name"),
           "ncu_s": round(time.time() - t0, 1), "grid": GRID, "block": BLOCK}
    json.dump({"cases": cases, "env": env}, open(out, "w"), indent=1)
    for c in cases:
        last = c["kernels"][-1]
        print(f'{c["kind"]:7s} F {c["bytes"] / MB:5.0f} MB x{c["passes"]}  DRAM read {last["dram__bytes_read.sum"] / MB:8.2f} MB'
              f'  written {last["dram__bytes_write.sum"] / MB:8.2f} MB  L2 hit {last["lts__t_sector_hit_rate.pct"]:5.1f}%')


if __name__ == "__main__":
    main()
