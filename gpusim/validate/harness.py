"""The device side of the hardware harness: a suite case prepared on a real GPU with the real front ends.

What every collection mode shares: the JSON record (``Record``), the host's environment (versions,
``nvidia-smi``, SM clock), a case's launch placed on the device (``PreparedCase``: numba device arrays for
numba-cuda kernels, torch tensors for Triton kernels, one device buffer per numpy array shared between
steps), the output check against the numpy reference (``compare``) and per-kernel device times (CUDA events
or torch's profiler).  A case whose kernel reaches arrays through a table of their addresses names them in its
launch dict's ``buffers``: the table (host addresses, ``ndarray.ctypes.data``) is rewritten to the device buffers'
addresses and outputs may be such names; Triton cases get a torch scratch allocator (``triton.set_allocator``)
for device-side tensor descriptors.  ``collect.py`` (the modes and the CLI) and ``microbench.py`` both build on it.

Imports numpy, the standard library and the suite at import time, and torch / Triton / numba-cuda only
when a function needs them: never simpy, plotly or the simulator.
"""
from __future__ import annotations

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
import time
from pathlib import Path

import numpy as np

# numba-cuda registers an overload for np.row_stack, which numpy 2.5 removed: restore the alias first
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
# small grids are deliberate here (under-one-wave cases): no warning per launch configuration
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")


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
    """(steps, outputs, reference) from a launch dict, per kernels/README.md.  An output is a (step, arg) pair, or
    the name of an array in the launch dict's ``buffers`` (one a kernel reaches only through a pointer table)."""
    if "steps" in spec:
        steps = spec["steps"]
        outputs = [o if isinstance(o, str) else tuple(o) for o in spec["outputs"]]
    else:
        steps = [{k: spec[k] for k in ("kernel", "grid", "block", "shared_bytes", "args", "meta") if k in spec}]
        outputs = [o if isinstance(o, str) else (0, int(o)) for o in spec["outputs"]]
    for i, st in enumerate(steps):
        missing = [k for k in ("kernel", "grid", "args") if k not in st]
        if missing:
            raise ValueError(f"{where}: step {i} lacks {missing}")
    buffers = spec.get("buffers") or {}
    for o in outputs:
        if isinstance(o, str):
            if o not in buffers:
                raise ValueError(f"{where}: output {o!r} is not a name in the launch dict's 'buffers'")
            continue
        s, a = o
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

    def _device_address(self, buf) -> int:
        if self.frontend == "numba":
            return int(buf.device_ctypes_pointer.value)
        return int(buf.data_ptr())

    def place_pointer_tables(self, steps: list[dict], buffers: dict) -> list[int]:
        """Pointer tables (tutorial 08's grouped GEMM): a 1-D int64 argument whose every entry is a host address
        inside one of the launch's arrays (``ndarray.ctypes.data`` of a ``buffers`` array or of an argument) is
        put on the device with each entry replaced by the same place in that array's device buffer.  The arrays
        are placed first.  Returns the positions (step, arg) of the tables found."""
        targets = [a for a in buffers.values() if isinstance(a, np.ndarray)]
        targets += [a for st in steps for a in st["args"] if isinstance(a, np.ndarray)]
        spans = []
        for t in targets:
            if t.flags.c_contiguous and t.nbytes:
                spans.append((t.ctypes.data, t.nbytes, t))
        found = []
        for i, st in enumerate(steps):
            for j, a in enumerate(st["args"]):
                if not (isinstance(a, np.ndarray) and a.ndim == 1 and a.size and a.dtype in (np.int64, np.uint64)):
                    continue
                hits = []
                for v in a.tolist():
                    hit = next(((t, v - lo) for lo, n, t in spans if t is not a and lo <= v < lo + n), None)
                    if hit is None:
                        break
                    hits.append(hit)
                if len(hits) != a.size:
                    continue                      # an ordinary int64 array
                if id(a) not in self._dev:
                    dev = np.array([self._device_address(self.arg(t)) + off for t, off in hits], a.dtype)
                    self._keep.append(a)
                    self._dev[id(a)] = self._to_device(dev)
                found.append((i, j))
        for t in buffers.values():              # arrays reached only through a table: on the device too
            if isinstance(t, np.ndarray):
                self.arg(t)
        return found

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
        self.buffers = dict(spec.get("buffers") or {})
        self.pointer_tables = self.placer.place_pointer_tables(self.steps, self.buffers) if self.buffers else []
        if self.frontend == "triton":
            _set_triton_allocator(device)
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
                try:
                    spec_k = kern.specialize(*args)             # compiles for these argument types now
                except RuntimeError:                            # an eager signature: compiled at the decorator
                    spec_k = kern
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
        expected = {(k if isinstance(k, (tuple, str)) else (0, int(k))): v for k, v in expected.items()}
        rtol, atol = float(self.spec.get("rtol", 0.0)), float(self.spec.get("atol", 0.0))
        results, passed = [], True
        for key in self.outputs:
            if key not in expected:
                raise KeyError(f"{self.where}: reference() gives no value for output {key}")
            arr = self.buffers[key] if isinstance(key, str) else self.steps[key[0]]["args"][key[1]]
            actual = self.placer.fetch(arr)
            r = compare(actual, expected[key], rtol, atol)
            r["output"] = key if isinstance(key, str) else list(key)
            passed &= r["passed"]
            results.append(r)
        return {"passed": bool(passed), "rtol": rtol, "atol": atol, "outputs": results}

    def close(self):
        self.launchers = []
        self.placer = None
        self._compiled = []
        self._overloads = []


def _set_triton_allocator(device: str) -> None:
    """Device-side tensor descriptors (``tl.make_tensor_descriptor``, tutorial 09) need global scratch memory that
    real Triton asks the host for through ``triton.set_allocator``: hand it torch memory on the case's device.
    Kernels without them never call it."""
    import triton
    if not hasattr(triton, "set_allocator"):
        return

    def alloc(size: int, alignment: int, stream):
        import torch
        return torch.empty(size, dtype=torch.int8, device=device)

    triton.set_allocator(alloc)


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
        cpumodes.patch_triton_interpreter_libdevice()
    return device


def _wall_times_ms(fn, reps: int = 3) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


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



def _child_cmd(args, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", MODULE] + extra
    if args.cases:
        cmd += ["--cases", args.cases]
    if args.shard:
        cmd += ["--shard", args.shard]
    if getattr(args, "suite", "main") != "main":
        cmd += ["--suite", args.suite]
    if args.micro:
        cmd += ["--micro"]
    if args.quick:
        cmd += ["--quick"]
    return cmd
