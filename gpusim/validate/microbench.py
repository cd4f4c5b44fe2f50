"""Calibration microbenchmarks for the H100 preset: latencies, bandwidths, throughputs, granularity, overhead.

Each benchmark is a :class:`Micro` target: ``prepare()`` puts its buffers on the GPU and returns an object that
launches its kernel(s) (the ncu child profiles one launch of it), ``measure()`` times it.  Run them with
``python -m gpusim.validate.collect --micro --out FILE`` (CUDA-event / do_bench timings) and
``--micro --ncu --out FILE`` (the same launches under Nsight Compute: cycles, DRAM bytes, instructions).

* pointer chase (one thread, ``j = next[j]``) over a random cyclic permutation that fits shared memory,
  L1, L2, or only DRAM: latency per hop = (time(h2 hops) - time(h1 hops)) / (h2 - h1).  The first h1 hops
  include a full pass over the chain for the cached levels (warm-up) and cancel in the difference.  A hop is a
  load plus its 64-bit address arithmetic, as numba-cuda compiles ``next[j]`` (a few cycles of the total).
* streaming copy / read / write of 1 GiB: DRAM bandwidth (bytes read + written per second).
* FP32 / FP64 FMA and SFU (fast ``sin``, MUFU) throughput: 8 independent chains per thread, full occupancy.
* tensor cores: torch.matmul fp16 / bf16 8192^3 and the suite's Triton matmul at 8192^3.
* DRAM access granularity: one 4-byte read per 4 / 32 / 64 / 128 / 256 bytes (ncu: DRAM bytes per element).
* launch overhead: an empty numba kernel and an empty Triton kernel (GPU time and CPU launch rate).
"""
from __future__ import annotations

import math
import re
import statistics
import time

import numpy as np

if not hasattr(np, "row_stack"):          # numba-cuda and numpy 2.5
    np.row_stack = np.vstack

from numba import cuda

from . import suite

# the chase kernels live in kernels/pointer_chase.py (also simulated by `gpusim validate calibrate`)
_chase_mod = suite.load_kernel_module(suite.KERNELS_DIR / "pointer_chase.py")
chase_global, chase_shared, chase_chain = _chase_mod.chase_global, _chase_mod.chase_shared, _chase_mod.chase_chain

GiB = 1 << 30


# ================================================================================================ kernels

@cuda.jit
def copy_kernel(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i]


@cuda.jit
def read_kernel(a, out):
    i = cuda.grid(1)
    if i < a.size:
        v = a[i]
        if v != v:                 # never true for the finite input: the load cannot be removed
            out[0] = v


@cuda.jit
def write_kernel(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = value


@cuda.jit
def gather_kernel(a, out, stride):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i * stride]


@cuda.jit
def fma8_kernel(x, out, iters, a, b):
    i = cuda.grid(1)
    if i < x.size:
        v0 = x[i]
        v1 = v0 + b
        v2 = v0 - b
        v3 = v0 * a
        v4 = v1 * a
        v5 = v2 * a
        v6 = v3 + b
        v7 = v4 + b
        for _ in range(iters):
            v0 = v0 * a + b
            v1 = v1 * a + b
            v2 = v2 * a + b
            v3 = v3 * a + b
            v4 = v4 * a + b
            v5 = v5 * a + b
            v6 = v6 * a + b
            v7 = v7 * a + b
        out[i] = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7


@cuda.jit(fastmath=True)
def sfu8_kernel(x, out, iters):
    # fastmath: math.sin -> sin.approx.f32 (MUFU.SIN on the SFU / XU pipe)
    i = cuda.grid(1)
    if i < x.size:
        v0 = x[i]
        v1 = v0 + np.float32(0.1)
        v2 = v0 + np.float32(0.2)
        v3 = v0 + np.float32(0.3)
        v4 = v0 + np.float32(0.4)
        v5 = v0 + np.float32(0.5)
        v6 = v0 + np.float32(0.6)
        v7 = v0 + np.float32(0.7)
        for _ in range(iters):
            v0 = math.sin(v0)
            v1 = math.sin(v1)
            v2 = math.sin(v2)
            v3 = math.sin(v3)
            v4 = math.sin(v4)
            v5 = math.sin(v5)
            v6 = math.sin(v6)
            v7 = math.sin(v7)
        out[i] = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7


@cuda.jit
def empty_kernel():
    pass


# ================================================================================================ helpers

def sm_count() -> int:
    return cuda.get_current_device().MULTIPROCESSOR_COUNT


def event_times_ms(fn, reps: int = 5) -> list[float]:
    """Per-launch GPU time with CUDA events on the default stream (no L2 flush; one warm-up launch)."""
    fn()
    cuda.synchronize()
    out = []
    for _ in range(reps):
        start, stop = cuda.event(timing=True), cuda.event(timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(cuda.event_elapsed_time(start, stop))
    return out


def bench_ms(fn) -> dict:
    """triton.testing.do_bench (L2 cleared before every run), median and spread."""
    import triton.testing
    times = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="all")
    q = np.quantile(times, [0.2, 0.8])
    return {"median_ms": statistics.median(times), "min_ms": min(times), "p20_ms": float(q[0]),
            "p80_ms": float(q[1]), "n": len(times)}


class Launches:
    """What ``prepare()`` returns: buffers on the GPU and the launches of one measurement."""

    def __init__(self, launches, names, buffers=(), info=None):
        self._launches = launches
        self._names = names
        self.buffers = list(buffers)
        self.info = info or {}

    def run(self):
        for f in self._launches:
            f()

    def synchronize(self):
        cuda.synchronize()
        try:
            import torch
            torch.cuda.synchronize()
        except Exception:                                # noqa: BLE001
            pass

    def kernel_names(self) -> list[str]:
        return list(self._names)

    def close(self):
        self._launches = []
        self.buffers = []


class Micro:
    """A named microbenchmark: ``prepare()`` for one launch (ncu), ``measure()`` for timing."""

    def __init__(self, name: str, kind: str, params: dict, prepare, measure, quick: bool = True):
        self.name, self.kind, self.params = name, kind, params
        self.prepare = prepare
        self._measure = measure
        self.quick = quick            # part of --quick runs
        self.ncu = True               # has a kernel that ncu can profile

    def measure(self) -> dict:
        return self._measure()


# ================================================================================================ benchmarks

CHASE_LEVELS = [
    # name, footprint, stride (bytes), storage, h1, h2, in quick mode
    ("shared", 16 * 1024, 4, "shared", 2000, 20000, True),
    ("l1", 16 * 1024, 128, "global", 2000, 20000, True),
    ("l2", 4 * 1024 * 1024, 128, "global", 40000, 80000, True),
    ("l2_24mb", 24 * 1024 * 1024, 128, "global", 200000, 240000, False),
    ("dram", 1 * GiB, 128, "global", 10000, 30000, True),
]


def _chase(level: str, footprint: int, stride: int, storage: str, hops: int) -> Micro:
    def prepare():
        nxt, start, m = chase_chain(footprint, stride)
        d_nxt = cuda.to_device(nxt)
        d_out = cuda.device_array(1, np.uint32)
        s = np.uint32(start)
        if storage == "shared":
            cfg = chase_shared[1, 256, 0, footprint]
            name = "chase_shared"
        else:
            cfg = chase_global[1, 32]
            name = "chase_global"
        return Launches([lambda: cfg(d_nxt, s, hops, d_out)], [name], [d_nxt, d_out],
                        {"cycle_length": m, "start": start})

    def measure():
        p = prepare()
        times = event_times_ms(p.run)
        res = {"kernel_ms": statistics.median(times), "times_ms": times, **p.info}
        p.close()
        return res

    return Micro(f"chase_{level}_h{hops}", "chase",
                 {"level": level, "footprint_bytes": footprint, "stride_bytes": stride, "storage": storage,
                  "hops": hops}, prepare, measure)


def _stream(kind: str, n: int) -> Micro:
    def prepare():
        import torch
        sms = sm_count()
        a = np.ones(n, np.float32)
        blocks = (n + 255) // 256
        if kind == "copy_numba":
            d_a, d_o = cuda.to_device(a), cuda.device_array(n, np.float32)
            cfg = copy_kernel[blocks, 256]
            return Launches([lambda: cfg(d_a, d_o)], ["copy_kernel"], [d_a, d_o], {"bytes": 8 * n})
        if kind == "read_numba":
            d_a, d_o = cuda.to_device(a), cuda.device_array(1, np.float32)
            cfg = read_kernel[blocks, 256]
            return Launches([lambda: cfg(d_a, d_o)], ["read_kernel"], [d_a, d_o], {"bytes": 4 * n})
        if kind == "write_numba":
            d_o = cuda.device_array(n, np.float32)
            cfg = write_kernel[blocks, 256]
            v = np.float32(1.5)
            return Launches([lambda: cfg(d_o, v)], ["write_kernel"], [d_o], {"bytes": 4 * n})
        if kind == "copy_torch":
            src = torch.from_numpy(a).cuda()
            dst = torch.empty_like(src)
            # a device-to-device cudaMemcpy, not a kernel: timed here, invisible to ncu (ncu=False below)
            return Launches([lambda: dst.copy_(src)], [""], [src, dst], {"bytes": 8 * n, "sms": sms})
        raise ValueError(kind)

    def measure():
        p = prepare()
        r = bench_ms(p.run)
        r["bytes"] = p.info["bytes"]
        r["GB_per_s"] = p.info["bytes"] / (r["median_ms"] * 1e-3) / 1e9
        p.close()
        return r

    m = Micro(f"stream_{kind}", "stream", {"kind": kind, "n": n}, prepare, measure)
    m.ncu = kind != "copy_torch"
    return m


def _compute(kind: str, iters: int, waves: int = 4) -> Micro:
    def prepare():
        sms = sm_count()
        threads = 256
        blocks = sms * 8 * waves                    # 8 blocks of 256 = 2048 threads per SM per wave
        n = blocks * threads
        rng = np.random.default_rng(0)
        if kind == "sfu":
            x = rng.uniform(0.1, 1.0, n).astype(np.float32)
            d_x, d_o = cuda.to_device(x), cuda.device_array(n, np.float32)
            cfg = sfu8_kernel[blocks, threads]
            return Launches([lambda: cfg(d_x, d_o, iters)], ["sfu8_kernel"], [d_x, d_o],
                            {"ops": 8 * iters * n, "op": "sin.approx", "sms": sms})
        dt = np.float64 if kind == "fp64" else np.float32
        x = rng.uniform(0.1, 1.0, n).astype(dt)
        d_x, d_o = cuda.to_device(x), cuda.device_array(n, dt)
        a, b = dt(0.999), dt(0.001)
        cfg = fma8_kernel[blocks, threads]
        return Launches([lambda: cfg(d_x, d_o, iters, a, b)], ["fma8_kernel"], [d_x, d_o],
                        {"ops": 8 * iters * n, "op": f"{kind} FMA", "sms": sms})

    def measure():
        p = prepare()
        r = bench_ms(p.run)
        ops = p.info["ops"]
        r.update(ops=ops, op=p.info["op"], ops_per_s=ops / (r["median_ms"] * 1e-3))
        r["ops_per_clk_per_sm_at_smi_clock"] = _per_clk_per_sm(r["ops_per_s"], p.info["sms"])
        p.close()
        return r

    return Micro(f"compute_{kind}", "compute", {"kind": kind, "iters": iters, "waves": waves}, prepare, measure)


def _per_clk_per_sm(rate: float, sms: int):
    from .harness import sm_clock_mhz
    mhz = sm_clock_mhz()
    return None if not mhz else rate / (mhz * 1e6) / sms


def _tensor(kind: str, n: int = 8192) -> Micro:
    def prepare():
        import torch
        if kind in ("torch_fp16", "torch_bf16"):
            dt = torch.float16 if kind == "torch_fp16" else torch.bfloat16
            g = torch.Generator(device="cuda").manual_seed(0)
            a = torch.randn(n, n, device="cuda", dtype=dt, generator=g)
            b = torch.randn(n, n, device="cuda", dtype=dt, generator=g)
            c = torch.empty(n, n, device="cuda", dtype=dt)
            # cuBLAS picks the kernel (its name is not ours): "" matches whatever kernel ncu sees
            return Launches([lambda: torch.matmul(a, b, out=c)], [""], [a, b, c], {"flops": 2 * n ** 3})
        from .harness import PreparedCase
        mod = suite.load_kernel_module("kernels/tl_matmul.py")
        bm, bn, bk, w, st = suite.MM_CONFIGS["128x128x64"]
        spec = mod.launch(M=n, N=n, K=n, BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=st, GROUP_M=8)
        prep = PreparedCase(spec, "cuda", f"tensor_{kind}")
        A, B, C = spec["args"][:3]
        prep.info = {"flops": 2 * n ** 3, "check": lambda: _check_rows(prep, A, B, C)}
        return prep

    def measure():
        p = prepare()
        p.run()
        p.synchronize()
        r = bench_ms(p.run)
        r["flops"] = p.info["flops"]
        r["TFLOP_per_s"] = p.info["flops"] / (r["median_ms"] * 1e-3) / 1e12
        if "check" in p.info:
            r["check_first_64_rows"] = p.info["check"]()
        p.close()
        return r

    return Micro(f"tensor_{kind}_{n}", "tensor", {"kind": kind, "n": n}, prepare, measure)


def _check_rows(prep, A, B, C, rows: int = 64) -> dict:
    from .harness import compare
    got = prep.placer.fetch(C)[:rows]
    return compare(got, A[:rows].astype(np.float32) @ B.astype(np.float32), 1e-2, 1e-2)


def _granularity(stride_bytes: int, n: int = 1 << 22) -> Micro:
    stride = stride_bytes // 4

    def prepare():
        d_a, d_o = cuda.to_device(np.ones(n * stride, np.float32)), cuda.device_array(n, np.float32)
        cfg = gather_kernel[(n + 255) // 256, 256]
        return Launches([lambda: cfg(d_a, d_o, stride)], ["gather_kernel"], [d_a, d_o], {"elements": n})

    def measure():
        p = prepare()
        r = bench_ms(p.run)
        r["ns_per_element"] = r["median_ms"] * 1e6 / n
        p.close()
        return r

    return Micro(f"granularity_{stride_bytes}B", "granularity", {"stride_bytes": stride_bytes, "elements": n},
                 prepare, measure)


def _launch(kind: str) -> Micro:
    def prepare():
        if kind == "numba":
            cfg = empty_kernel[1, 32]
            return Launches([lambda: cfg()], ["empty_kernel"])
        import torch
        import triton

        @triton.jit
        def empty_triton_kernel(x_ptr):
            pass

        x = torch.empty(16, device="cuda")
        return Launches([lambda: empty_triton_kernel[(1,)](x)], ["empty_triton_kernel"], [x])

    def measure():
        p = prepare()
        r = bench_ms(p.run)
        p.run()
        p.synchronize()
        k = 2000
        t0 = time.perf_counter()
        for _ in range(k):
            p.run()
        t_issue = time.perf_counter() - t0
        p.synchronize()
        r["cpu_us_per_launch"] = t_issue / k * 1e6
        r["wall_us_per_launch_incl_sync"] = (time.perf_counter() - t0) / k * 1e6
        p.close()
        return r

    return Micro(f"launch_empty_{kind}", "launch", {"kind": kind}, prepare, measure)


def all_micro() -> list[Micro]:
    out = []
    for level, fp, stride, storage, h1, h2, quick in CHASE_LEVELS:
        for h in (h1, h2):
            m = _chase(level, fp, stride, storage, h)
            m.quick = quick
            out.append(m)
    out += [_stream(k, 1 << 27) for k in ("copy_numba", "read_numba", "write_numba", "copy_torch")]
    out += [_compute("fp32", 2048), _compute("fp64", 1024), _compute("sfu", 256)]
    out += [_tensor("torch_fp16"), _tensor("torch_bf16"), _tensor("triton_fp16")]
    out += [_granularity(b) for b in (4, 32, 64, 128, 256)]
    out += [_launch("numba"), _launch("triton")]
    return out


def select(pattern: str | None = None, shard: str | None = None, quick: bool = False,
           for_ncu: bool = False) -> list[Micro]:
    ms = [m for m in all_micro() if (m.quick or not quick) and (m.ncu or not for_ncu)]
    if pattern:
        rx = re.compile(pattern)
        ms = [m for m in ms if rx.search(m.name)]
    return suite.select(None, shard, ms) if shard else ms


def run_timing(micros: list[Micro], on_result, time_budget: float = 480.0):
    import traceback
    from .harness import free_gpu_memory, log, sm_clock_mhz
    t_start = time.time()
    for m in micros:
        res = {"kind": m.kind, "params": m.params}
        if time.time() - t_start > time_budget:
            res.update(status="skipped", error=f"time budget of {time_budget:.0f} s used up")
            on_result(m.name, res)
            continue
        log(f"micro {m.name}")
        t0 = time.time()
        try:
            res.update(m.measure())
            res["sm_clock_mhz_after"] = sm_clock_mhz()
            res["status"] = "ok"
            chk = res.get("check_first_64_rows")
            if chk is not None and not chk.get("passed"):
                res["status"] = "mismatch"
        except Exception as e:                           # noqa: BLE001
            res.update(status="error", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc()[-3000:])
            log(f"  ERROR {res['error'][:300]}")
        res["wall_s"] = round(time.time() - t0, 2)
        free_gpu_memory()
        on_result(m.name, res)


def _chase_pairs(results: dict) -> dict:
    pairs: dict = {}
    for level, fp, stride, storage, h1, h2, _ in CHASE_LEVELS:
        a, b = results.get(f"chase_{level}_h{h1}"), results.get(f"chase_{level}_h{h2}")
        if a and b and a.get("status") == "ok" and b.get("status") == "ok":
            pairs[level] = (a, b, h2 - h1, fp, stride)
    return pairs


def derive_from_timing(results: dict) -> dict:
    out: dict = {"chase": {}}
    for level, (a, b, dh, fp, stride) in _chase_pairs(results).items():
        ns = (b["kernel_ms"] - a["kernel_ms"]) * 1e6 / dh
        mhz = b.get("sm_clock_mhz_after")
        out["chase"][level] = {"ns_per_hop": ns, "cycles_per_hop_at_smi_clock": ns * mhz * 1e-3 if mhz else None,
                               "sm_clock_mhz": mhz, "footprint_bytes": fp, "stride_bytes": stride}
    for name, r in results.items():
        if r.get("status") != "ok":
            continue
        if r.get("kind") == "stream":
            out.setdefault("stream_GB_per_s", {})[name] = r.get("GB_per_s")
        elif r.get("kind") == "compute":
            out.setdefault("compute", {})[name] = {"ops_per_s": r.get("ops_per_s"),
                                                   "ops_per_clk_per_sm": r.get("ops_per_clk_per_sm_at_smi_clock")}
        elif r.get("kind") == "tensor":
            out.setdefault("tensor_TFLOP_per_s", {})[name] = r.get("TFLOP_per_s")
        elif r.get("kind") == "granularity":
            out.setdefault("granularity_ns_per_element", {})[name] = r.get("ns_per_element")
        elif r.get("kind") == "launch":
            out.setdefault("launch", {})[name] = {"gpu_ms_median": r.get("median_ms"),
                                                  "cpu_us_per_launch": r.get("cpu_us_per_launch")}
    return out


def _metric(entry: dict, name: str, k: int = 0):
    ks = entry.get("kernels") or []
    if k < len(ks) and ks[k]:
        return ks[k]["metrics"].get(name)
    return None


def derive_from_ncu(entries: dict) -> dict:
    """Cycles per hop from gpc__cycles_elapsed.max of the two hop counts; DRAM bytes per gathered element."""
    out: dict = {"chase": {}, "granularity_dram_bytes_per_element": {}, "kernel_us": {}}
    for level, fp, stride, storage, h1, h2, _ in CHASE_LEVELS:
        a, b = entries.get(f"chase_{level}_h{h1}"), entries.get(f"chase_{level}_h{h2}")
        if not a or not b:
            continue
        ca, cb = _metric(a, "gpc__cycles_elapsed.max"), _metric(b, "gpc__cycles_elapsed.max")
        if isinstance(ca, (int, float)) and isinstance(cb, (int, float)):
            out["chase"][level] = {"cycles_per_hop": (cb - ca) / (h2 - h1),
                                   "l2_hit_rate_pct_h2": _metric(b, "lts__t_sector_hit_rate.pct"),
                                   "l1_hit_rate_pct_h2": _metric(b, "l1tex__t_sector_hit_rate.pct"),
                                   "sm_hz": _metric(b, "sm__cycles_elapsed.avg.per_second")}
    for name, e in entries.items():
        t = _metric(e, "gpu__time_duration.sum")
        if isinstance(t, (int, float)):
            out["kernel_us"][name] = t / 1e3            # base unit: ns
        if name.startswith("granularity_"):
            rd = _metric(e, "dram__bytes_read.sum")
            n = (e.get("params") or {}).get("elements", 1 << 22)
            if isinstance(rd, (int, float)):
                out["granularity_dram_bytes_per_element"][name] = rd / n
    return out
