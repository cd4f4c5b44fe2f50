"""Hardware records: run the suite's kernels on a real GPU with the real front ends, and write JSON.

    python -m gpusim.validate.collect --timing --out timing.json      # check + do_bench, compile metadata
    python -m gpusim.validate.collect --ncu --out ncu.json            # Nsight Compute counters, one launch each
    python -m gpusim.validate.collect --micro --out micro.json        # calibration microbenchmarks
    python -m gpusim.validate.collect --micro --ncu --out micro_ncu.json
    python -m gpusim.validate.collect --cpu-check                     # the same harness on the CPU modes
    python -m gpusim.validate.collect --compile-check --out c.json    # compile every case for sm_90, no GPU

Every mode takes ``--cases REGEX`` and ``--shard i/n``.  Records are written after every case, so a run
stopped by a time limit keeps what it finished; ``--time-budget`` stops starting new cases in time.

The same kernel source that gpusim simulates runs here: numba-cuda kernels get numba device arrays, Triton
kernels get torch tensors, and the buffers a multi-kernel case passes between its steps are one device
buffer each (identity of the numpy array in the launch dict).  Each case is checked against its numpy
reference before it is timed; ``do_bench`` clears the L2 between runs (cold cache), as ncu does between
replay passes.

This module imports numpy, the standard library and the suite at import time, and torch / Triton /
numba-cuda only when a mode needs them: never simpy, plotly or the simulator.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

# numba-cuda registers an overload for np.row_stack, which numpy 2.5 removed: restore the alias first
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
# small grids are deliberate here (under-one-wave cases): no warning per launch configuration
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from . import ncu as ncu_tools
from . import suite

SCHEMA = "gpusim-hw-record/1"
MODULE = "gpusim.validate.collect"
MAX_STATIC_SHARED = 48 * 1024          # dynamic shared memory above this needs an explicit opt-in per kernel


# ================================================================================================ records

def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (Path,)):
        return str(o)
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    return repr(o)


class Record:
    """A JSON document rewritten atomically after every change, so an interrupted run keeps its cases."""

    def __init__(self, path: str | Path, mode: str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.data = {"schema": SCHEMA, "mode": mode,
                     "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "argv": sys.argv, "host": socket.gethostname(), "cases": {}}

    def save(self):
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=_jsonable))
        os.replace(tmp, self.path)


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


# ================================================================================================ environment

PACKAGES = ("numpy", "torch", "triton", "numba", "numba-cuda", "llvmlite", "cuda-python", "cuda-bindings",
            "cuda-core", "cupy-cuda13x", "cupy-cuda12x", "nvidia-ml-py")

SMI_FIELDS = ("name", "driver_version", "pci.bus_id", "vbios_version", "memory.total", "persistence_mode",
              "compute_mode", "mig.mode.current", "ecc.mode.current", "pstate", "temperature.gpu", "power.draw",
              "power.limit", "clocks.sm", "clocks.gr", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
              "clocks.applications.graphics", "clocks.applications.memory", "clocks.default_applications.graphics",
              "clocks_event_reasons.active", "clocks_throttle_reasons.active")


def nvidia_smi() -> dict:
    """One query per field (an unknown field name fails the whole query on some drivers)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {"error": "nvidia-smi not on PATH"}
    out = {}
    for f in SMI_FIELDS:
        try:
            r = subprocess.run([exe, f"--query-gpu={f}", "--format=csv,noheader"], capture_output=True, text=True,
                               timeout=30)
            if r.returncode == 0:
                out[f] = r.stdout.strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            out[f] = f"error: {e!r}"
    return out


def sm_clock_mhz() -> float | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        r = subprocess.run([exe, "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"], capture_output=True,
                           text=True, timeout=30)
        return float(r.stdout.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def environment(gpu: bool = True) -> dict:
    env = {"python": sys.version.split()[0], "platform": platform.platform(), "packages": {}}
    for p in PACKAGES:
        try:
            env["packages"][p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            pass
    if not gpu:
        return env
    try:
        import torch
        env["torch_cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            env["gpu"] = {"name": p.name, "capability": f"{p.major}.{p.minor}",
                          "multiprocessors": p.multi_processor_count, "total_memory_bytes": p.total_memory,
                          "l2_cache_bytes": getattr(p, "L2_cache_size", None)}
    except Exception as e:                              # noqa: BLE001 - record, do not stop
        env["torch_error"] = repr(e)
    try:
        from numba import cuda
        dev = cuda.get_current_device()
        env["numba_device"] = {"name": dev.name.decode() if isinstance(dev.name, bytes) else dev.name,
                               "compute_capability": list(dev.compute_capability)}
        from numba.cuda.cudadrv.driver import driver
        env["cuda_driver_api_version"] = list(driver.get_version())
    except Exception as e:                              # noqa: BLE001
        env["numba_error"] = repr(e)
    env["nvidia_smi"] = nvidia_smi()
    return env


# ================================================================================================ launches

def kernel_frontend(kernel) -> str:
    mod = type(kernel).__module__
    if mod.startswith("numba"):
        return "numba"
    if mod.startswith("triton"):
        return "triton"
    raise TypeError(f"kernel {kernel!r} (type {type(kernel).__module__}.{type(kernel).__name__}) is neither a "
                    "numba-cuda nor a Triton kernel. The harness runs the real front ends only; did the kernel "
                    "file fall back to gpusim because importing numba/triton failed?")


def kernel_name(kernel) -> str:
    for attr in ("py_func", "fn"):
        f = getattr(kernel, attr, None)
        if f is not None and hasattr(f, "__name__"):
            return f.__name__
    return getattr(kernel, "__name__", repr(kernel))


def normalize(spec: dict, where: str):
    """(steps, outputs as (step, arg) pairs, reference) from a launch dict, per kernels/README.md."""
    if "steps" in spec:
        steps = spec["steps"]
        outputs = [tuple(o) for o in spec["outputs"]]
    else:
        steps = [{k: spec[k] for k in ("kernel", "grid", "block", "shared_bytes", "args", "meta") if k in spec}]
        outputs = [(0, int(o)) for o in spec["outputs"]]
    for i, st in enumerate(steps):
        missing = [k for k in ("kernel", "grid", "args") if k not in st]
        if missing:
            raise ValueError(f"{where}: step {i} lacks {missing}")
    for s, a in outputs:
        if not (0 <= s < len(steps) and 0 <= a < len(steps[s]["args"])):
            raise ValueError(f"{where}: output {(s, a)} names no argument")
    return steps, outputs, spec["reference"]


class Placer:
    """Puts a case's numpy arrays on the device once each: the same array in two steps is one buffer."""

    def __init__(self, frontend: str, device: str):
        self.frontend, self.device = frontend, device
        self._dev = {}            # id(numpy array) -> device buffer
        self._keep = []           # the numpy arrays, so their ids stay unique while we hold the buffers

    def arg(self, a):
        if isinstance(a, np.ndarray):
            if id(a) not in self._dev:
                self._keep.append(a)
                self._dev[id(a)] = self._to_device(np.ascontiguousarray(a))
            return self._dev[id(a)]
        if self.frontend == "triton" and isinstance(a, np.generic):
            return a.item()       # Triton types Python scalars; numba keeps numpy scalar types (fp32 constants)
        return a

    def _to_device(self, a):
        if self.frontend == "numba":
            from numba import cuda
            return cuda.to_device(a)
        import torch
        return torch.from_numpy(a.copy()).to(self.device)

    def fetch(self, a) -> np.ndarray:
        buf = self._dev[id(a)]
        if self.frontend == "numba":
            return buf.copy_to_host()
        return buf.detach().cpu().numpy()

    def buffers(self):
        return list(self._dev.values())


def _set_max_dynamic_shared(overload, nbytes: int) -> str:
    """Opt a numba kernel in to more than 48 KB of dynamic shared memory (numba-cuda does not do it itself)."""
    from numba import cuda
    from numba.cuda.cudadrv import driver as drv
    cufunc = overload._codelibrary.get_cufunc()
    dev_id = cuda.get_current_device().id
    errors = []
    binding = getattr(drv, "binding", None)
    attr_enum = getattr(getattr(binding, "CUfunction_attribute", None),
                        "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", None)
    if attr_enum is not None and hasattr(drv.driver, "cuKernelSetAttribute"):
        try:
            drv.driver.cuKernelSetAttribute(attr_enum, nbytes, cufunc.handle, dev_id)
            return "cuKernelSetAttribute"
        except Exception as e:                           # noqa: BLE001
            errors.append(f"cuKernelSetAttribute: {e!r}")
    if attr_enum is not None and hasattr(drv.driver, "cuFuncSetAttribute"):
        try:
            drv.driver.cuFuncSetAttribute(cufunc.handle, attr_enum, nbytes)
            return "cuFuncSetAttribute"
        except Exception as e:                           # noqa: BLE001
            errors.append(f"cuFuncSetAttribute: {e!r}")
    try:
        from numba.cuda.cudadrv import enums
        drv.driver.cuFuncSetAttribute(cufunc.handle, enums.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
        return "cuFuncSetAttribute(enums)"
    except Exception as e:                               # noqa: BLE001
        errors.append(f"cuFuncSetAttribute(enums): {e!r}")
    raise RuntimeError(f"could not allow {nbytes} B of dynamic shared memory: " + "; ".join(errors))


def numba_overload_info(overload) -> dict:
    info = {}
    for key, attr in (("regs_per_thread", "regs_per_thread"), ("static_shared_bytes", "shared_mem_per_block"),
                      ("local_bytes_per_thread", "local_mem_per_thread"), ("const_bytes", "const_mem_size"),
                      ("max_threads_per_block", "max_threads_per_block")):
        try:
            info[key] = getattr(overload, attr)
        except Exception as e:                           # noqa: BLE001
            info[key + "_error"] = repr(e)
    return info


_SASS_RX = re.compile(r"/\*[0-9a-fA-F]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def sass_histogram(sass: str) -> dict[str, int]:
    """Static SASS opcode counts (with modifiers) from cuobjdump/nvdisasm text."""
    hist: dict[str, int] = {}
    for m in _SASS_RX.finditer(sass):
        op = m.group(1)
        hist[op] = hist.get(op, 0) + 1
    return dict(sorted(hist.items(), key=lambda kv: -kv[1]))


def numba_sass(overload) -> str:
    try:
        return overload.inspect_sass()
    except Exception:                                    # noqa: BLE001 - nvdisasm missing: use Triton's cuobjdump
        from triton.tools.disasm import get_sass
        return get_sass(overload._codelibrary.get_cubin())


class PreparedCase:
    """A case's launch dict with its buffers on a device and one callable per kernel launch.

    ``device``: "cuda" (a GPU, real compilers) or "cpu" (numba's simulator / Triton's interpreter, which the
    caller must have enabled through the environment before importing numba or Triton).
    """

    def __init__(self, spec: dict, device: str, where: str = "case"):
        self.where = where
        self.device = device
        self.spec = spec
        self.steps, self.outputs, self.reference = normalize(spec, where)
        fronts = {kernel_frontend(st["kernel"]) for st in self.steps}
        if len(fronts) != 1:
            raise ValueError(f"{where}: mixes front ends {sorted(fronts)} across steps; not supported")
        self.frontend = fronts.pop()
        self.placer = Placer(self.frontend, device)
        self.kernels: list[dict] = []
        self._compiled: list = [None] * len(self.steps)
        self._overloads: list = [None] * len(self.steps)
        self.launchers = [self._make_launcher(i, st) for i, st in enumerate(self.steps)]

    # -- construction
    def _make_launcher(self, i: int, st: dict):
        args = [self.placer.arg(a) for a in st["args"]]
        kern = st["kernel"]
        info = {"step": i, "frontend": self.frontend, "kernel": kernel_name(kern)}
        self.kernels.append(info)
        if self.frontend == "numba":
            grid, block = st["grid"], st.get("block")
            if callable(grid) or block is None:
                raise ValueError(f"{self.where}: numba step {i} needs a tuple grid and a block")
            grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
            block = tuple(int(b) for b in (block if isinstance(block, (tuple, list)) else (block,)))
            shmem = int(st.get("shared_bytes", 0) or 0)
            info.update(grid=list(grid), block=list(block), dynamic_shared_bytes=shmem)
            if self.device == "cuda":
                spec_k = kern.specialize(*args)                 # compiles for these argument types now
                overload = next(iter(spec_k.overloads.values()))
                self._overloads[i] = overload
                info.update(numba_overload_info(overload))
                if shmem > MAX_STATIC_SHARED:
                    info["dynamic_shared_opt_in"] = _set_max_dynamic_shared(overload, shmem)
                cfg = spec_k[grid, block, 0, shmem]
            else:
                cfg = kern[grid, block, 0, shmem]
            return lambda: cfg(*args)
        meta = dict(st.get("meta") or {})
        grid = st["grid"]
        info.update(meta={k: v for k, v in meta.items()},
                    grid=None if callable(grid) else [int(g) for g in grid])

        def run():
            ret = kern[grid](*args, **meta)
            if self._compiled[i] is None and ret is not None:
                self._compiled[i] = ret
        return run

    # -- use
    def run(self):
        for f in self.launchers:
            f()

    def synchronize(self):
        if self.device != "cuda":
            return
        if self.frontend == "numba":
            from numba import cuda
            cuda.synchronize()
        else:
            import torch
            torch.cuda.synchronize()

    def kernel_names(self) -> list[str]:
        return [k["kernel"] for k in self.kernels]

    def compiled_info(self, sass: bool = False) -> list[dict]:
        """Per step: what the compiler produced (registers, shared memory, spills, warps, stages, SASS ops)."""
        out = []
        for i, info in enumerate(self.kernels):
            d = dict(info)
            if self.frontend == "triton" and self._compiled[i] is not None:
                ck = self._compiled[i]
                md = ck.metadata
                for key in ("num_warps", "num_stages", "num_ctas", "shared", "name", "maxnreg"):
                    if hasattr(md, key):
                        d["shared_bytes" if key == "shared" else key] = getattr(md, key)
                for key in ("n_regs", "n_spills", "n_max_threads"):
                    try:
                        d[key] = getattr(ck, key)
                    except Exception:                    # noqa: BLE001
                        pass
                if sass:
                    try:
                        d["sass_histogram"] = sass_histogram(ck.asm["sass"])
                    except Exception as e:               # noqa: BLE001
                        d["sass_error"] = repr(e)
            if self.frontend == "numba" and self._overloads[i] is not None and sass:
                try:
                    d["sass_histogram"] = sass_histogram(numba_sass(self._overloads[i]))
                except Exception as e:                   # noqa: BLE001
                    d["sass_error"] = repr(e)
            out.append(d)
        return out

    def check(self) -> dict:
        """Compare every output buffer with the numpy reference."""
        expected = self.reference()
        expected = {(k if isinstance(k, tuple) else (0, int(k))): v for k, v in expected.items()}
        rtol, atol = float(self.spec.get("rtol", 0.0)), float(self.spec.get("atol", 0.0))
        results, passed = [], True
        for key in self.outputs:
            if key not in expected:
                raise KeyError(f"{self.where}: reference() gives no value for output {key}")
            actual = self.placer.fetch(self.steps[key[0]]["args"][key[1]])
            r = compare(actual, expected[key], rtol, atol)
            r["output"] = list(key)
            passed &= r["passed"]
            results.append(r)
        return {"passed": bool(passed), "rtol": rtol, "atol": atol, "outputs": results}

    def close(self):
        self.launchers = []
        self.placer = None
        self._compiled = []
        self._overloads = []


def compare(actual, expected, rtol: float, atol: float) -> dict:
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        if a.size == e.size:
            e = e.reshape(a.shape)
        else:
            return {"passed": False, "error": f"shape {a.shape} != reference shape {e.shape}"}
    err = np.abs(a - e)
    tol = atol + rtol * np.abs(e)
    finite = bool(np.isfinite(a).all())
    bad = ~(err <= tol)                      # NaN counts as bad
    if not a.size:
        return {"passed": True, "all_finite": True, "n_bad": 0, "n": 0}
    err_f = np.where(np.isfinite(err), err, np.inf)
    worst = int(np.argmax(err_f - tol))
    rel = err_f / np.maximum(np.abs(e), 1e-30)

    def num(x):
        x = float(x)
        return x if np.isfinite(x) else None  # JSON has no inf/NaN: None, with all_finite False

    return {"passed": finite and not bad.any(), "all_finite": finite,
            "max_abs_err": num(err_f.max()), "max_rel_err": num(rel.max()),
            "n_bad": int(bad.sum()), "n": int(a.size),
            "worst_index": [int(i) for i in np.unravel_index(worst, a.shape)],
            "worst_actual": num(a.flat[worst]), "worst_expected": num(e.flat[worst])}


# ================================================================================================ GPU helpers

def free_gpu_memory():
    gc.collect()
    try:
        from numba import cuda
        cuda.current_context().deallocations.clear()
    except Exception:                                    # noqa: BLE001
        pass
    try:
        import torch
        torch.cuda.empty_cache()
    except Exception:                                    # noqa: BLE001
        pass


def profiler_range():
    """(start, stop) for the CUDA profiler range that ``ncu --profile-from-start off`` waits for."""
    try:
        import torch
        rt = torch.cuda.cudart()
        return rt.cudaProfilerStart, rt.cudaProfilerStop
    except Exception:                                    # noqa: BLE001
        from numba import cuda
        return cuda.profile_start, cuda.profile_stop


def kernel_device_times(run, synchronize, names: list[str], iters: int = 10) -> dict:
    """GPU-side duration of each kernel (CUPTI through torch.profiler), L2 flushed before every iteration.

    Unlike event timing this excludes the CPU launch overhead, which dominates small kernels.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    run()
    synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            flush.zero_()
            run()
        synchronize()
        torch.cuda.synchronize()
    events = []
    for e in prof.events():
        dev_type = str(getattr(e, "device_type", ""))
        if "CUDA" not in dev_type:
            continue
        if any(n in e.name for n in names):
            tr = e.time_range
            events.append((tr.start, tr.end - tr.start, e.name))
    events.sort()
    per_step: list[list[float]] = [[] for _ in names]
    k = 0                  # position in the expected launch sequence names * iters
    for _start, dur, name in events:
        if k >= len(names) * iters:
            break
        if names[k % len(names)] in name:
            per_step[k % len(names)].append(dur)
            k += 1
    out = {"iters": iters, "n_events": len(events),
           "per_step_median_us": [statistics.median(v) if v else None for v in per_step]}
    if all(per_step) and all(len(v) == iters for v in per_step):
        totals = [sum(v[k] for v in per_step) for k in range(iters)]
        out["total_median_us"] = statistics.median(totals)
    return out


# ================================================================================================ timing mode

def collect_device() -> str:
    """"cuda", or "cpu" when GPUSIM_COLLECT_DEVICE=cpu: the GPU modes then run on the CPU modes (numba's
    simulator / Triton's interpreter, enabled by the caller's environment) at the cases' tiny CPU sizes, with
    wall-clock timing.  Only for testing the harness's plumbing without a GPU."""
    device = os.environ.get("GPUSIM_COLLECT_DEVICE", "cuda")
    if device not in ("cuda", "cpu"):
        raise ValueError(f"GPUSIM_COLLECT_DEVICE must be 'cuda' or 'cpu', got {device!r}")
    if device == "cpu":
        from . import cpumodes
        cpumodes.patch_numba_cudasim()
        cpumodes.patch_triton_interpreter()
    return device


def _wall_times_ms(fn, reps: int = 3) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def run_timing(args) -> int:
    device = collect_device()
    if device == "cuda":
        import triton.testing
    rec = Record(args.out, "timing")
    cases = suite.select(args.cases, args.shard)
    skip = _done_cases(args.skip_done)
    rec.data["device_mode"] = device
    rec.data["env"] = environment(gpu=device == "cuda")
    rec.data["clocks_before"] = rec.data["env"].get("nvidia_smi", {})
    rec.data["do_bench"] = {"warmup_ms": 25, "rep_ms": 100, "statistic": "median of return_mode='all'",
                            "l2_flush": "triton clears a 256 MB buffer before every run (cold L2)"}
    rec.data["selection"] = {"cases": args.cases, "shard": args.shard, "n": len(cases)}
    rec.save()
    t_start = time.time()
    for n_done, case in enumerate(cases):
        if case.name in skip:
            continue
        entry = case.to_json()
        rec.data["cases"][case.name] = entry
        if time.time() - t_start > args.time_budget:
            entry["status"] = "skipped"
            entry["error"] = f"time budget of {args.time_budget:.0f} s used up"
            rec.save()
            continue
        log(f"timing {n_done + 1}/{len(cases)} {case.name}")
        t0 = time.time()
        prep = None
        try:
            spec = suite.load_case(case, suite.cpu_params(case) if device == "cpu" else None)
            entry["flops"], entry["min_bytes"] = spec.get("flops"), spec.get("min_bytes")
            prep = PreparedCase(spec, device, case.name)
            prep.run()
            prep.synchronize()
            entry["first_run_s"] = round(time.time() - t0, 3)
            entry["check"] = prep.check()
            entry["kernels"] = prep.compiled_info(sass=not args.no_sass)
            if device == "cuda":
                times = triton.testing.do_bench(prep.run, warmup=25, rep=100, return_mode="all")
            else:
                times = _wall_times_ms(prep.run)
            q = np.quantile(times, [0.2, 0.5, 0.8])
            entry["do_bench_ms"] = {"median": statistics.median(times), "min": min(times), "p20": float(q[0]),
                                    "p80": float(q[2]), "n": len(times)}
            if device == "cuda":
                try:
                    entry["device_time"] = kernel_device_times(prep.run, prep.synchronize, prep.kernel_names())
                except Exception as e:                   # noqa: BLE001
                    entry["device_time_error"] = repr(e)
            entry["status"] = "ok" if entry["check"]["passed"] else "mismatch"
        except Exception as e:                           # noqa: BLE001
            entry["status"] = "error"
            entry["error"] = f"{type(e).__name__}: {e}"
            entry["traceback"] = traceback.format_exc()[-4000:]
            log(f"  ERROR {entry['error'][:300]}")
        entry["wall_s"] = round(time.time() - t0, 3)
        if prep is not None:
            prep.close()
        del prep
        free_gpu_memory()
        rec.save()
        if entry.get("status") == "mismatch":
            log(f"  MISMATCH {json.dumps(entry['check']['outputs'], default=_jsonable)[:400]}")
    rec.data["clocks_after"] = nvidia_smi() if device == "cuda" else {}
    rec.data["wall_s"] = round(time.time() - t_start, 1)
    rec.save()
    return _summary(rec.data["cases"])


def _done_cases(path) -> set[str]:
    if not path:
        return set()
    data = json.loads(Path(path).read_text())
    return {k for k, v in data.get("cases", data.get("results", {})).items() if v.get("status") == "ok"}


def _summary(cases: dict) -> int:
    counts: dict[str, int] = {}
    for v in cases.values():
        counts[v.get("status", "?")] = counts.get(v.get("status", "?"), 0) + 1
    log("summary: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    bad = [k for k, v in cases.items() if v.get("status") not in ("ok", "skipped")]
    if bad:
        log("not ok: " + ", ".join(bad))
    return 0 if not bad else 1


# ================================================================================================ ncu mode

def _child_cmd(args, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", MODULE] + extra
    if args.cases:
        cmd += ["--cases", args.cases]
    if args.shard:
        cmd += ["--shard", args.shard]
    if args.micro:
        cmd += ["--micro"]
    if args.quick:
        cmd += ["--quick"]
    return cmd


def _ncu_base(ncu: str, metrics: list[str]) -> list[str]:
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
            "--metrics", ",".join(metrics)]


PROBE_SCRIPT = (
    "import torch\n"
    "x = torch.ones(1 << 20, device='cuda')\n"
    "torch.cuda.synchronize()\n"
    "torch.cuda.cudart().cudaProfilerStart()\n"
    "y = x * 2.0 + 1.0\n"
    "torch.cuda.synchronize()\n"
    "torch.cuda.cudart().cudaProfilerStop()\n"
)


def probe_metrics(ncu: str, metrics: list[str], workdir: Path, budget_s: float = 240) -> tuple[list[str], dict]:
    """Profile one small torch kernel with the metric list; drop metrics ncu rejects (named in its error
    output, else found by bisection).  Returns (accepted metrics, {dropped: reason})."""
    t0 = time.time()
    dropped: dict[str, str] = {}
    script = workdir / "ncu_probe.py"
    script.write_text(PROBE_SCRIPT)

    def attempt(ms: list[str]) -> tuple[bool, str]:
        r = subprocess.run(_ncu_base(ncu, ms) + [sys.executable, str(script)], capture_output=True, text=True,
                           timeout=300)
        text = r.stdout + r.stderr
        ok = r.returncode == 0 and "==ERROR==" not in text and "==PROF== Profiling" in text
        return ok, text

    ok, text = attempt(metrics)
    rounds = 0
    while not ok and rounds < 4:
        named = ncu_tools.metrics_named_in("\n".join(l for l in text.splitlines() if "ERROR" in l or "rror" in l),
                                           metrics)
        if not named:
            break
        for m in named:
            dropped[m] = "rejected by ncu in probe: " + next((l for l in text.splitlines() if m in l), "")[:300]
        metrics = [m for m in metrics if m not in named]
        ok, text = attempt(metrics)
        rounds += 1
    if ok:
        return metrics, dropped
    log("ncu probe failed without naming a metric; bisecting. ncu said: " + text[-1500:])
    # the whole list fails: find the bad ones by bisection (bounded by the time budget)
    good: list[str] = []

    def bisect(ms: list[str]):
        if time.time() - t0 > budget_s:
            for m in ms:
                dropped[m] = "untested: probe time budget used up"
            return
        ok, _ = attempt(ms)
        if ok:
            good.extend(ms)
        elif len(ms) == 1:
            dropped[ms[0]] = "probe fails with this metric"
        else:
            bisect(ms[:len(ms) // 2])
            bisect(ms[len(ms) // 2:])

    bisect(metrics)
    if not good:
        raise RuntimeError("ncu cannot profile even a torch kernel; last output:\n" + text[-3000:])
    return [m for m in metrics if m in good], dropped


def run_ncu(args) -> int:
    t_begin = time.time()
    out_path = Path(args.out)
    rec = Record(out_path, "ncu_micro" if args.micro else "ncu")
    work = Path(tempfile.mkdtemp(prefix="gpusim_ncu_"))
    stem = out_path.with_suffix("")
    raw_csv = stem.with_name(stem.name + "_raw.csv")
    log_path = stem.with_name(stem.name + "_ncu.log")
    rec.data["env"] = environment()
    ncu = ncu_tools.locate_ncu()
    info = rec.data["ncu"] = {"path": ncu, "version": ncu_tools.ncu_version(ncu)}
    log(f"ncu: {ncu} ({info['version'].splitlines()[-1] if info['version'] else '?'})")
    requested = list(ncu_tools.MICRO_METRICS if args.micro else ncu_tools.SUITE_METRICS)
    if args.metrics:
        requested = [m for m in args.metrics.split(",") if m]
    info["metrics_requested"] = requested
    known, qerr = ncu_tools.query_metric_names(ncu)
    info["query_metrics_count"] = len(known)
    if qerr:
        info["query_metrics_error"] = qerr
    metrics, dropped = ncu_tools.filter_metrics(requested, known)
    rec.save()
    log(f"metrics: {len(metrics)} kept after --query-metrics, {len(dropped)} dropped; probing")
    metrics, dropped_probe = probe_metrics(ncu, metrics, work)
    dropped.update(dropped_probe)
    info["metrics_used"] = metrics
    info["metrics_dropped"] = dropped
    rec.save()
    if dropped:
        log("dropped metrics: " + ", ".join(sorted(dropped)))

    manifest = work / "manifest.json"
    report = work / "report"
    # the child stops starting targets in time for the report import and this process to finish
    child_budget = max(30.0, args.time_budget - (time.time() - t_begin) - 45.0)
    cmd = (_ncu_base(ncu, metrics) + ["--export", str(report), "--force-overwrite"]
           + _child_cmd(args, ["--ncu-child", "--manifest", str(manifest), "--time-budget", f"{child_budget:.0f}"]))
    info["command"] = cmd
    rec.save()
    log("profiling: " + " ".join(cmd[:8]) + " ...")
    t0 = time.time()
    with open(log_path, "w") as lf:
        try:
            r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, timeout=child_budget + 90)
            info["returncode"] = r.returncode
        except subprocess.TimeoutExpired:
            info["returncode"] = "timeout"
    info["profile_wall_s"] = round(time.time() - t0, 1)
    info["log_tail"] = log_path.read_text(errors="replace")[-6000:]
    entries = json.loads(manifest.read_text())["entries"] if manifest.exists() else []
    rec.data["manifest"] = entries
    rep_file = next((p for p in (work / "report.ncu-rep", report) if p.exists()), None)
    rows, units = [], {}
    if rep_file is None:
        info["import_error"] = "ncu wrote no report"
    else:
        base_cmd = [ncu, "--import", str(rep_file), "--csv", "--page", "raw", "--print-units", "base"]
        imp = subprocess.run(base_cmd + ["--print-metric-name", "name"], capture_output=True, text=True, timeout=600)
        if imp.returncode != 0 or '"ID"' not in imp.stdout:     # an ncu without --print-metric-name
            imp = subprocess.run(base_cmd, capture_output=True, text=True, timeout=600)
        raw_csv.write_text(imp.stdout)
        info["raw_csv"] = raw_csv.name
        if imp.returncode != 0:
            info["import_error"] = imp.stderr[-3000:]
        try:
            rows, units = ncu_tools.parse_raw_csv(imp.stdout)
        except ValueError as e:
            info["import_error"] = f"{e}; stderr: {imp.stderr[-2000:]}"
    rec.data["units"] = units
    aligned = {a["name"]: a for a in ncu_tools.align(entries, rows)}
    for e in entries:
        entry = rec.data["cases"].setdefault(e["name"], {})
        if not args.micro:
            try:
                entry.update(suite.case_by_name(e["name"]).to_json())
            except KeyError:
                pass
        entry.update({k: v for k, v in e.items() if k not in ("name",)})
        a = aligned.get(e["name"], {"rows": [], "warnings": []})
        entry["kernels"] = [None if row is None else
                            {"ncu_id": row.get("ID"), "ncu_name": ncu_tools.kernel_name_of(row),
                             "grid": row.get("Grid Size"), "block": row.get("Block Size"),
                             "metrics": row["metrics"]} for row in a["rows"]]
        if a["warnings"]:
            entry["warnings"] = a["warnings"]
        if e.get("status") == "ok" and (not a["rows"] or any(r is None for r in a["rows"])):
            entry["status"] = "no_counters"
    if args.micro:
        from . import microbench
        rec.data["derived"] = microbench.derive_from_ncu(rec.data["cases"])
    rec.data["n_rows"] = len(rows)
    rec.save()
    shutil.rmtree(work, ignore_errors=True)
    log(f"ncu: {len(rows)} kernel rows for {len(entries)} entries in {info['profile_wall_s']} s")
    return _summary(rec.data["cases"])


def ncu_child(args) -> int:
    """Runs under ncu: every target is compiled and warmed outside the profiler range, then launched once
    inside it.  Writes the manifest (names and kernels, in launch order) after every target."""
    manifest = Path(args.manifest)
    device = collect_device()
    if device == "cpu":
        start = stop = (lambda: None)
    else:
        start, stop = profiler_range()
    if args.micro:
        from . import microbench
        targets = [(t.name, t.prepare, {"kind": t.kind, "params": t.params})
                   for t in microbench.select(args.cases, args.shard, quick=args.quick, for_ncu=True)]
    else:
        # on the CPU modes the cases run at their tiny CPU sizes
        targets = [(c.name, (lambda c=c: PreparedCase(
                        suite.load_case(c, suite.cpu_params(c) if device == "cpu" else None), device, c.name)), {})
                   for c in suite.select(args.cases, args.shard)]
    entries: list[dict] = []
    t_start = time.time()

    def save():
        tmp = manifest.with_name(manifest.name + ".tmp")
        tmp.write_text(json.dumps({"entries": entries}, default=_jsonable))
        os.replace(tmp, manifest)

    for name, prepare, extra in targets:
        e = {"name": name, "profiled": False, "status": "running", **extra}
        entries.append(e)
        if time.time() - t_start > args.time_budget:
            e["status"] = "skipped"
            e["error"] = f"time budget of {args.time_budget:.0f} s used up"
            save()
            continue
        log(f"ncu target {len(entries)}/{len(targets)} {name}")
        prep = None
        active = False
        try:
            prep = prepare()
            prep.run()
            prep.synchronize()
            prep.run()
            prep.synchronize()
            e["kernels"] = prep.kernel_names()
            start()
            active = True
            e["profiled"] = True
            t0 = time.time()
            prep.run()
            prep.synchronize()
            stop()
            active = False
            e["profile_s"] = round(time.time() - t0, 2)
            e["status"] = "ok"
        except Exception as ex:                          # noqa: BLE001
            if active:
                try:
                    stop()
                except Exception:                        # noqa: BLE001
                    pass
            e["status"] = "error"
            e["error"] = f"{type(ex).__name__}: {ex}"
            e["traceback"] = traceback.format_exc()[-3000:]
            log(f"  ERROR {e['error'][:300]}")
        if prep is not None and hasattr(prep, "close"):
            prep.close()
        del prep
        free_gpu_memory()
        save()
    return 0


# ================================================================================================ micro mode

def run_micro(args) -> int:
    from . import microbench
    rec = Record(args.out, "micro")
    rec.data["env"] = environment()
    rec.save()
    t_start = time.time()

    def on_result(name, result):
        rec.data["cases"][name] = result
        rec.save()

    microbench.run_timing(microbench.select(args.cases, args.shard, quick=args.quick), on_result,
                          time_budget=args.time_budget)
    rec.data["derived"] = microbench.derive_from_timing(rec.data["cases"])
    rec.data["clocks_after"] = nvidia_smi()
    rec.data["wall_s"] = round(time.time() - t_start, 1)
    rec.save()
    return _summary(rec.data["cases"])


# ================================================================================================ CPU modes

CPU_ENV = {"cuda": {"NUMBA_ENABLE_CUDASIM": "1"}, "triton": {"TRITON_INTERPRET": "1"}}


def cpu_targets(args) -> list[dict]:
    """What ``--cpu-check`` runs: the suite's cases at tiny sizes, or (``--defaults``) each kernel file's
    default launch with the file's tiny overrides."""
    if args.defaults:
        files = suite.KERNEL_FILES
        if args.cases:
            files = [f for f in files if re.search(args.cases, f)]
        return [{"name": Path(f).stem, "kernel_file": f, "params": dict(suite.CPU_PARAMS[f]),
                 "frontend": "triton" if Path(f).name.startswith("tl_") else "cuda"} for f in files]
    targets, seen = [], {}
    for c in suite.select(args.cases, args.shard):
        params = suite.cpu_params(c)
        key = (c.kernel_file, json.dumps(params, sort_keys=True, default=str))
        t = {"name": c.name, "kernel_file": c.kernel_file, "params": params, "frontend": c.frontend}
        if key in seen:
            t["same_as"] = seen[key]       # identical tiny launch: run once
        else:
            seen[key] = c.name
        targets.append(t)
    return targets


def run_cpu_check(args) -> int:
    targets = cpu_targets(args)
    out = Record(args.out or (Path(tempfile.gettempdir()) / "gpusim_cpu_check.json"), "cpu_check")
    out.data["env"] = environment(gpu=False)
    work = Path(tempfile.mkdtemp(prefix="gpusim_cpu_"))
    procs = []
    repo = str(suite.REPO_ROOT)
    for frontend in ("cuda", "triton"):
        group = [t for t in targets if t["frontend"] == frontend and "same_as" not in t]
        if not group:
            continue
        tfile, rfile = work / f"{frontend}_targets.json", work / f"{frontend}_results.json"
        tfile.write_text(json.dumps(group, default=str))
        env = dict(os.environ, **CPU_ENV[frontend])
        env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
        for other, variables in CPU_ENV.items():
            if other != frontend:
                for k in variables:
                    env.pop(k, None)
        cmd = [sys.executable, "-m", MODULE, "--cpu-child", str(tfile), "--out", str(rfile)]
        log(f"cpu-check: {len(group)} {frontend} launches in a child ({' '.join(f'{k}=1' for k in CPU_ENV[frontend])})")
        procs.append((frontend, rfile, subprocess.Popen(cmd, env=env, cwd=repo, stdout=subprocess.PIPE,
                                                         stderr=subprocess.STDOUT, text=True)))
    rc = 0
    results: dict[str, dict] = {}
    for frontend, rfile, p in procs:
        text, _ = p.communicate()
        if p.returncode not in (0, 1) or not rfile.exists():
            log(f"cpu-check child for {frontend} failed (rc={p.returncode}):\n{text[-4000:]}")
            rc = 2
        if rfile.exists():
            results.update(json.loads(rfile.read_text())["results"])
    for t in targets:
        r = dict(results.get(t.get("same_as", t["name"]), {"status": "error", "error": "no result from child"}))
        if "same_as" in t:
            r["same_as"] = t["same_as"]
        r.update(name=t["name"], kernel_file=t["kernel_file"], params=t["params"], frontend=t["frontend"])
        out.data["cases"][t["name"]] = r
    out.save()
    shutil.rmtree(work, ignore_errors=True)
    width = max((len(t["name"]) for t in targets), default=10)
    for name, r in out.data["cases"].items():
        extra = r.get("error", "")[:150] if r.get("status") != "ok" else \
            f"max_abs_err {max(((o.get('max_abs_err') or 0) for o in r['check']['outputs']), default=0):.3g}" \
            f"  {r.get('wall_s', 0):.2f}s" + (f"  (= {r['same_as']})" if "same_as" in r else "")
        print(f"{name:<{width}}  {r.get('status', '?'):<8}  {extra}")
    bad = _summary(out.data["cases"])
    log(f"cpu-check record: {out.path}")
    return rc or bad


def cpu_child(args) -> int:
    targets = json.loads(Path(args.cpu_child).read_text())
    from . import cpumodes
    patched = {}
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        patched["numba_cudasim"] = cpumodes.patch_numba_cudasim()
    if os.environ.get("TRITON_INTERPRET") == "1":
        patched["triton_interpreter"] = cpumodes.patch_triton_interpreter()
    results: dict[str, dict] = {}
    out = Path(args.out)

    def save():
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps({"patched": patched, "results": results}, default=_jsonable))
        os.replace(tmp, out)

    for t in targets:
        r = results[t["name"]] = {"status": "running"}
        t0 = time.time()
        prep = None
        try:
            module = suite.load_kernel_module(t["kernel_file"])
            spec = module.launch(**t["params"])
            prep = PreparedCase(spec, "cpu", t["name"])
            expected = {"cuda": "numba", "triton": "triton"}[t["frontend"]]
            if prep.frontend != expected:
                raise RuntimeError(f"{t['kernel_file']} ran on {prep.frontend}, expected {expected}")
            kinds = {type(st["kernel"]).__name__ for st in prep.steps}
            r["kernel_types"] = sorted(kinds)
            prep.run()
            r["check"] = prep.check()
            r["kernels"] = prep.kernel_names()
            r["status"] = "ok" if r["check"]["passed"] else "mismatch"
        except Exception as e:                           # noqa: BLE001
            r["status"] = "error"
            r["error"] = f"{type(e).__name__}: {e}"
            r["traceback"] = traceback.format_exc()[-3000:]
        r["wall_s"] = round(time.time() - t0, 3)
        if prep is not None:
            prep.close()
        save()
    save()
    return 0 if all(r["status"] == "ok" for r in results.values()) else 1


# ================================================================================================ compile check

class _FakeTritonDriver:
    """Lets Triton compile for a chosen GPU target on a machine without one (never launches)."""

    def __init__(self, arch: int):
        from triton.backends.compiler import GPUTarget
        self.target = GPUTarget("cuda", arch, 32)

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")


def _triton_bin(name: str) -> str:
    import triton
    p = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    if p.exists():
        return str(p)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} not found in Triton's package or on PATH")
    return found


def _cubin_info(cubin: bytes) -> dict:
    """Registers, shared / local memory and the SASS opcode histogram of a cubin (Triton's cuobjdump)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(cubin)
        res = subprocess.run([_triton_bin("cuobjdump"), "--dump-resource-usage", str(path)], capture_output=True,
                             text=True, timeout=300).stdout
        sass = subprocess.run([_triton_bin("cuobjdump"), "-sass", str(path)], capture_output=True, text=True,
                              timeout=300).stdout
    info: dict = {}
    for key, name in (("REG", "n_regs"), ("SHARED", "static_shared_bytes"), ("LOCAL", "local_bytes_per_thread"),
                      ("STACK", "stack_bytes")):
        m = re.search(rf"\b{key}:(\d+)", res)
        if m:
            info[name] = int(m.group(1))
    info["sass_histogram"] = sass_histogram(sass)
    return info


def _ptxas(ptx: str, arch: str) -> tuple[bytes, str]:
    """Assemble PTX for ``arch``; returns (cubin, ptxas -v report)."""
    with tempfile.TemporaryDirectory() as d:
        src, cubin = Path(d) / "k.ptx", Path(d) / "k.cubin"
        src.write_text(ptx)
        errors = []
        for ptxas in _ptxas_candidates():
            r = subprocess.run([ptxas, f"-arch={arch}", "-v", str(src), "-o", str(cubin)],
                               capture_output=True, text=True, timeout=300)
            if r.returncode == 0:
                return cubin.read_bytes(), " ".join(l.strip() for l in r.stderr.splitlines()
                                                    if "Used" in l or "spill" in l)
            errors.append(f"{ptxas}: {r.stderr.strip()[-600:]}")
        raise RuntimeError("no ptxas accepted the PTX (numba's NVVM may emit a newer PTX version than Triton's "
                           "ptxas reads; put a CUDA toolkit's bin/ on PATH or set CUDA_HOME):\n" + "\n".join(errors))


def _ptxas_candidates() -> list[str]:
    """CUDA toolkits' ptxas (newest first), then Triton's bundled one."""
    import glob
    found = []
    for p in ([os.path.join(os.environ[v], "bin", "ptxas") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
              + [shutil.which("ptxas") or ""]
              + sorted(glob.glob("/usr/local/cuda*/bin/ptxas"), key=lambda x: [int(n) for n in re.findall(r"\d+", x)],
                       reverse=True)):
        if p and os.access(p, os.X_OK) and p not in found:
            found.append(p)
    try:
        found.append(_triton_bin("ptxas"))
    except FileNotFoundError:
        pass
    return found


def run_compile_check(args) -> int:
    """Compile every selected case for sm_90 without a GPU: numba kernels through compile_ptx + ptxas, Triton
    kernels through Triton's own specialization and pipeline (a stand-in driver names the target).  Catches
    typing errors the CPU simulator never sees, and records registers / shared memory / SASS per kernel."""
    import torch  # noqa: F401  (Triton's binder wants torch tensors for pointer arguments)
    from numba import cuda, typeof
    from triton.runtime import driver as triton_driver
    triton_driver.set_active(_FakeTritonDriver(args.arch))
    rec = Record(args.out or (Path(tempfile.gettempdir()) / "gpusim_compile_check.json"), "compile_check")
    rec.data["env"] = environment(gpu=False)
    rec.data["arch"] = f"sm_{args.arch}"
    tools = rec.data["toolchain"] = {}
    for p in _ptxas_candidates():
        try:
            v = subprocess.run([p, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
            tools.setdefault("ptxas", []).append({"path": p, "version": v.splitlines()[-1] if v else ""})
        except OSError as e:
            tools.setdefault("ptxas", []).append({"path": p, "error": repr(e)})
    try:
        from numba.cuda.cudadrv.nvvm import NVVM
        tools["nvvm_version"] = list(NVVM().get_version())
    except Exception as e:                               # noqa: BLE001
        tools["nvvm_error"] = repr(e)
    rec.save()
    numba_cache: dict = {}
    for case in suite.select(args.cases, args.shard):
        entry = case.to_json()
        rec.data["cases"][case.name] = entry
        t0 = time.time()
        try:
            spec = suite.load_case(case)
            steps, _, _ = normalize(spec, case.name)
            kernels = []
            tensors: dict = {}
            for i, st in enumerate(steps):
                kern = st["kernel"]
                d = {"step": i, "kernel": kernel_name(kern)}
                if kernel_frontend(kern) == "numba":
                    sig = tuple(typeof(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else typeof(a)
                                for a in st["args"])
                    key = (id(kern), sig)
                    if key not in numba_cache:
                        ptx, _ = cuda.compile_ptx(kern.py_func, sig, cc=(args.arch // 10, args.arch % 10))
                        cubin, report = _ptxas(ptx, f"sm_{args.arch}")
                        numba_cache[key] = dict(_cubin_info(cubin), ptxas=report)
                    d.update(numba_cache[key])
                    d["signature"] = [str(s) for s in sig]
                    d["dynamic_shared_bytes"] = int(st.get("shared_bytes", 0) or 0)
                else:
                    targs = []
                    for a in st["args"]:
                        if isinstance(a, np.ndarray):
                            # an empty tensor of the right dtype: Triton only looks at dtype and alignment
                            tensors.setdefault(id(a), torch.empty(a.shape, dtype=getattr(torch, str(a.dtype))))
                            targs.append(tensors[id(a)])
                        else:
                            targs.append(a.item() if isinstance(a, np.generic) else a)
                    ck = kern.warmup(*targs, grid=(1,), **dict(st.get("meta") or {}))
                    md = ck.metadata
                    d.update(num_warps=md.num_warps, num_stages=md.num_stages, shared_bytes=md.shared)
                    d.update({k: v for k, v in _cubin_info(ck.asm["cubin"]).items() if k != "static_shared_bytes"})
                    if md.shared > args.max_shared:
                        raise RuntimeError(f"step {i} ({d['kernel']}) needs {md.shared} B of shared memory, "
                                           f"more than {args.max_shared} B per block")
                kernels.append(d)
            entry["kernels"] = kernels
            entry["status"] = "ok"
        except Exception as e:                           # noqa: BLE001
            entry["status"] = "error"
            entry["error"] = f"{type(e).__name__}: {e}"
            entry["traceback"] = traceback.format_exc()[-3000:]
        entry["wall_s"] = round(time.time() - t0, 2)
        rec.save()
        k = entry.get("kernels", [])
        log(f"{case.name:<32} {entry['status']:<6} " + (entry.get("error", "")[:200] if entry["status"] != "ok" else
            "; ".join(f"{x['kernel']}: regs {x.get('n_regs')} smem {x.get('shared_bytes', x.get('static_shared_bytes'))}"
                      + (f" spill {x['spill_store_bytes']}B" if x.get("spill_store_bytes") else "") for x in k)))
    return _summary(rec.data["cases"])


# ================================================================================================ CLI

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_argument_group("modes (one of --timing, --ncu, --micro, --micro --ncu, --cpu-check, --compile-check)")
    mode.add_argument("--timing", action="store_true", help="check outputs and time every case with do_bench")
    mode.add_argument("--ncu", action="store_true", help="profile every case once under ncu (one child process)")
    mode.add_argument("--micro", action="store_true", help="calibration microbenchmarks (with --ncu: their counters)")
    mode.add_argument("--cpu-check", action="store_true",
                      help="run the harness on the CPU modes (numba simulator, Triton interpreter) at tiny sizes")
    mode.add_argument("--compile-check", action="store_true", help="compile every case for --arch without a GPU")
    ap.add_argument("--out", help="JSON record to write (rewritten after every case)")
    ap.add_argument("--cases", help="regular expression on case names (re.search)")
    ap.add_argument("--shard", help="i/n: run every n-th selected case starting at the i-th (1-based)")
    ap.add_argument("--time-budget", type=float, default=480.0,
                    help="seconds after which no new case is started (default 480)")
    ap.add_argument("--skip-done", help="a previous timing record: skip its cases that are ok")
    ap.add_argument("--no-sass", action="store_true", help="timing: skip the SASS opcode histograms")
    ap.add_argument("--metrics", help="ncu: comma-separated metric list replacing the built-in one")
    ap.add_argument("--quick", action="store_true", help="micro: fewer sizes and repetitions")
    ap.add_argument("--defaults", action="store_true",
                    help="cpu-check: each kernel file's default launch (shrunk) instead of the suite's cases")
    ap.add_argument("--arch", type=int, default=90, help="compile-check: target compute capability (default 90)")
    ap.add_argument("--max-shared", type=int, default=232448,
                    help="compile-check: shared memory per block allowed (default 227 KB, H100)")
    # internal: children
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--manifest", help=argparse.SUPPRESS)
    ap.add_argument("--cpu-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.cpu_child:
        return cpu_child(args)
    if args.ncu_child:
        return ncu_child(args)
    chosen = [m for m in ("timing", "ncu", "micro", "cpu_check", "compile_check") if getattr(args, m)]
    if args.micro and args.ncu:
        chosen = ["ncu"]
    if len(chosen) != 1:
        ap.error("choose one mode: --timing, --ncu, --micro, --micro --ncu, --cpu-check or --compile-check")
    if chosen[0] in ("timing", "ncu", "micro") and not args.out:
        ap.error(f"--{chosen[0]} needs --out FILE")
    return {"timing": run_timing, "ncu": run_ncu, "micro": run_micro, "cpu_check": run_cpu_check,
            "compile_check": run_compile_check}[chosen[0]](args)


if __name__ == "__main__":
    sys.exit(main())
