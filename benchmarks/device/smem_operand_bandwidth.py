"""What the shared-memory data path costs the tensor cores and the LDS instructions (run on a GPU; CI never runs it).

Part ``wgmma`` (no profiler): a Triton program loads an M x K (A) and a K x N (B) fp16 tile once, then runs ``ITERS``
dots on them into one fp32 accumulator, reading ``%clock64`` around the loop.  With ``rs = 0`` both operands stay in
shared memory (``HGMMA ... gdesc``, "SS"); with ``rs = 1`` A is computed in the loop (``a * scale``) and comes from
registers ("RS").  Each case runs ``ctas`` CTAs per SM on all 132 SMs (an SM's warpgroups share its tensor pipe):
the dense FLOP per SM clock (resident CTAs x a CTA's FLOP over its clocks, ``flop_per_clk_per_sm``; the slowest CTA's
clocks give the SM's throughput) against the tensor peak (4096 fp16 FLOP/clk/SM) shows whether the shared-memory
reads of the operands -- A (64 x 16 x 2 B per wgmma and warpgroup) and B (N x 16 x 2 B) -- hold the tensor core back.

Part ``lds`` (under Nsight Compute): a CUDA kernel (cupy) in which each lane of a warp loads ``width`` bytes from
shared memory at ``width * (lane % q) + stride * (lane // q)`` in a loop;
``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum`` over ``smsp__sass_inst_executed_op_shared_ld.sum`` is the
wavefronts one such instruction costs (a broadcast of a few words to many lanes, as an MMA layout's column vector is
read, included).

    python benchmarks/device/smem_operand_bandwidth.py OUT.json           # the lds part under ncu, then wgmma
    python benchmarks/device/smem_operand_bandwidth.py --child PLAN.json MODE   # (what it runs: lds | wgmma)

``WGMMA_LIMIT_S`` bounds the wgmma part (Triton compiles every case; tens of seconds each on a cold cache); the cases
done by then are kept.  Writes {"wgmma": [{M, N, K, num_warps, rs, ctas, iters, grid, registers, shared_bytes,
resident, cta_cycles_median, cta_cycles_max, ms, flop_per_clk_per_sm}], "lds": [{width, q, stride, metrics,
wavefronts_per_inst}], "env"}.  Units: cycles are SM clocks, bytes.
"""
import csv
import io
import json
import os
import subprocess
import sys
import time

ITERS = 256
SMS = 132
LDS_METRICS = ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "gpc__cycles_elapsed.max"]

LDS_SRC = r"""
extern "C" __global__ void lds_pattern(float* out, int width, int q, int stride, int iters, int zero) {
    extern __shared__ __align__(16) unsigned char sm[];
    for (int i = threadIdx.x; i < 12288; i += blockDim.x) ((float*)sm)[i] = (float)i;
    __syncthreads();
    int lane = threadIdx.x & 31;
    unsigned base = (unsigned)__cvta_generic_to_shared(sm) + width * (lane % q) + stride * (lane / q);
    float s = 0.f;
    for (int it = 0; it < iters; ++it) {
        unsigned a = base + (it & zero);
        if (width == 4) {
            float x; asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(a)); s += x;
        } else if (width == 8) {
            float x, y; asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(a)); s += x + y;
        } else {
            float x, y, z, w;
            asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "r"(a));
            s += x + y + z + w;
        }
    }
    if (s == 1234.5f) out[threadIdx.x] = s;
}
"""

LDS_CASES = [  # (width, q, stride): lanes in groups of q read q consecutive words; groups `stride` bytes apart
    (4, 32, 0), (4, 4, 0), (4, 8, 0), (4, 1, 4),
    (8, 32, 0), (8, 16, 0), (8, 8, 0), (8, 4, 0), (8, 2, 0), (8, 1, 0), (8, 1, 8), (8, 4, 32), (8, 4, 256),
    (8, 4, 64), (16, 32, 0), (16, 4, 0), (16, 8, 0), (16, 1, 0),
]


def plan() -> dict:
    mm = []
    for (m, w) in ((128, 8), (64, 8), (64, 4)):
        for n in (16, 32, 64, 128, 256):
            if m == 64 and w == 8 and n < 32:
                continue
            for rs in (0, 1):
                for ctas in (1, 4):
                    mm.append({"M": m, "N": n, "K": 64, "num_warps": w, "rs": rs, "ctas": ctas, "iters": ITERS,
                               "grid": SMS * ctas})
    lds = [{"width": a, "q": b, "stride": c, "iters": 4096} for a, b, c in LDS_CASES]
    return {"wgmma": mm, "lds": lds}


def child(path: str, mode: str) -> None:
    if mode == "lds":
        _lds(json.load(open(path)))
        return
    import numpy as np
    np.row_stack = getattr(np, "row_stack", np.vstack)
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def mma_loop(A, B, C, T, scale, ITERS: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                 RS: tl.constexpr):
        pid = tl.program_id(0)
        rm = tl.arange(0, M)
        rn = tl.arange(0, N)
        rk = tl.arange(0, K)
        a = tl.load(A + rm[:, None] * K + rk[None, :])
        b = tl.load(B + rk[:, None] * N + rn[None, :])
        acc = tl.zeros((M, N), dtype=tl.float32)
        t0 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        for i in range(ITERS):
            if RS:
                acc = tl.dot((a * scale).to(tl.float16), b, acc)
            else:
                acc = tl.dot(a, b, acc)
        tl.store(C + pid * M * N + rm[:, None] * N + rn[None, :], acc)
        t1 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        tl.store(T + pid, t1 - t0)

    p = json.load(open(path))
    A = torch.randn(128 * 64, device="cuda", dtype=torch.float16)
    B = torch.randn(64 * 256, device="cuda", dtype=torch.float16)
    C = torch.empty(SMS * 4 * 128 * 256, device="cuda", dtype=torch.float32)
    T = torch.zeros(SMS * 4, device="cuda", dtype=torch.int64)
    done = []
    for c in (p["wgmma"] if mode == "wgmma" else []):
        kw = dict(ITERS=c["iters"], M=c["M"], N=c["N"], K=c["K"], RS=c["rs"], num_warps=c["num_warps"], num_stages=2)
        for _ in range(3):                                       # warm-up (and compile)
            ck = mma_loop[(c["grid"],)](A, B, C, T, 1.0, **kw)
        c["registers"] = ck.n_regs
        c["shared_bytes"] = ck.metadata.shared
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        mma_loop[(c["grid"],)](A, B, C, T, 1.0, **kw)
        e1.record()
        torch.cuda.synchronize()
        t = T[:c["grid"]].double()
        c["cta_cycles_max"] = float(t.max())
        c["cta_cycles_median"] = float(t.median())
        c["ms"] = e0.elapsed_time(e1)
        # CTAs resident at once on an SM share its tensor pipe: per SM, resident x the CTA's FLOP in its cycles
        warps = 64 // c["num_warps"]
        by_regs = 65536 // (((c["registers"] * 32 + 255) // 256) * 256 * c["num_warps"])
        by_smem = (228 * 1024) // (c["shared_bytes"] + 1024)
        c["resident"] = max(1, min(c["ctas"], warps, by_regs, by_smem))
        c["flop_per_clk_per_sm"] = 2 * c["M"] * c["N"] * c["K"] * c["iters"] * c["resident"] / c["cta_cycles_max"]
        print(f'M {c["M"]:3d} N {c["N"]:3d} w {c["num_warps"]} {"RS" if c["rs"] else "SS"} ctas/SM {c["ctas"]} (resident {c["resident"]}, {c["registers"]} regs)  '
              f'{c["flop_per_clk_per_sm"]:7.0f} FLOP/clk/SM  CTA cycles {c["cta_cycles_median"]:.0f}..'
              f'{c["cta_cycles_max"]:.0f}  {c["ms"]:.3f} ms', flush=True)
        done.append(c)
        json.dump(done, open(path + ".wgmma.json", "w"), indent=1)   # after every case: a cut-off run keeps them


def _lds(p: dict) -> None:
    import cupy as cp
    mod = cp.RawModule(code=LDS_SRC)
    f = mod.get_function("lds_pattern")
    f.max_dynamic_shared_size_bytes = 49152
    out = cp.zeros(256, cp.float32)
    for c in p["lds"]:
        f((SMS,), (256,), (out, cp.int32(c["width"]), cp.int32(c["q"]), cp.int32(c["stride"]),
                           cp.int32(c["iters"]), cp.int32(0)), shared_mem=49152)
    cp.cuda.runtime.deviceSynchronize()


def main() -> None:
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    out = sys.argv[1]
    p = plan()
    plan_path = os.path.abspath(out + ".plan.json")
    json.dump(p, open(plan_path, "w"))
    t0 = time.time()
    ncu = os.environ.get("NCU") or ("/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else "ncu")
    res = subprocess.run([ncu, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
                          "-k", "regex:lds_pattern", "--metrics", ",".join(LDS_METRICS), sys.executable,
                          os.path.abspath(__file__), "--child", plan_path, "lds"], capture_output=True, text=True)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith('"')]
    if not lines:
        sys.exit(f"ncu gave no rows (rc {res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines))) if r.get("Kernel Name")]
    lds_rows = [r for r in rows if r["Kernel Name"].startswith("lds_pattern")]
    if len(lds_rows) != len(p["lds"]):
        sys.exit(f"expected {len(p['lds'])} kernels, ncu profiled {len(lds_rows)}\n{res.stderr[-3000:]}")

    def val(r, m):
        try:
            return float(str(r.get(m, "")).replace(",", ""))
        except ValueError:
            return None

    for c, r in zip(p["lds"], lds_rows):
        c["metrics"] = {m: val(r, m) for m in LDS_METRICS}
        n = c["metrics"]["smsp__sass_inst_executed_op_shared_ld.sum"] or 1
        c["wavefronts_per_inst"] = c["metrics"]["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] / n
    p["env"] = {"gpu": rows[0].get("device__attribute_display_name") or rows[0].get("Device Name"),
                "wgmma_timing": "in-kernel %clock64 around the dot loop, per CTA (no profiler)",
                "s": round(time.time() - t0, 1)}
    for c in p["lds"]:
        print(f'LDS width {c["width"]:2d} q {c["q"]:2d} stride {c["stride"]:3d}: '
              f'{c["wavefronts_per_inst"]:.2f} wavefronts/inst', flush=True)
    # the wgmma part (Triton compiles each case: tens of seconds each on a cold cache); WGMMA_LIMIT_S cuts it short
    try:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", plan_path, "wgmma"],
                       timeout=float(os.environ.get("WGMMA_LIMIT_S", "3600")))
    except subprocess.TimeoutExpired:
        pass
    if os.path.exists(plan_path + ".wgmma.json"):
        p["wgmma"] = json.load(open(plan_path + ".wgmma.json"))
    p["env"]["s"] = round(time.time() - t0, 1)
    json.dump(p, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
