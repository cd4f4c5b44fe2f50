"""``collect --compile-check``: every suite case compiled for sm_90 by the real compilers on a host without a GPU
(Triton's wheel to a cubin, numba-cuda to PTX then ``ptxas``), with registers, shared memory and spills read
back by ``cuobjdump -res-usage``: the compiler oracle behind the register and instruction estimates."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
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

from . import suite
from .harness import Record, _summary, environment, kernel_frontend, kernel_name, log, normalize, sass_histogram

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
    for case in suite.select(args.cases, args.shard, suite.SUITES[getattr(args, "suite", "main")]):
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
