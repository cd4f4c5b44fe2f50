"""The CUDA binary tools on the host: finding ``ptxas`` / ``cuobjdump`` / ``nvdisasm`` (a CUDA toolkit's or the ones
Triton's wheel bundles), assembling PTX, and reading back resources (``ptxas -v``, ``cuobjdump -res-usage``) and
the SASS with its source lines (``nvdisasm -g``)."""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import CompilerUnavailable

TIMEOUT_S = 300


@functools.lru_cache(maxsize=None)
def triton_bin_dir() -> Path | None:
    """Triton's bundled CUDA tools (``triton/backends/nvidia/bin``), found without importing Triton."""
    import importlib.util
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "backends" / "nvidia" / "bin"
        if p.is_dir():
            return p
    return None


def _version_key(path: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", path)]


def wheel_bin_dirs() -> list[Path]:
    """The ``bin`` folders of NVIDIA's pip CUDA wheels (``nvidia/cu13/bin`` of ``nvidia-cuda-nvcc``, which
    ``cuda-toolkit[nvcc]`` installs beside the NVVM that numba-cuda compiles with), newest first."""
    import importlib.util
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    out = []
    for loc in spec.submodule_search_locations:
        out += [Path(p) for p in glob.glob(os.path.join(loc, "cu*", "bin")) + glob.glob(os.path.join(loc, "cuda_nvcc", "bin"))]
    return sorted(out, key=lambda p: _version_key(str(p)), reverse=True)


@functools.lru_cache(maxsize=None)
def candidates(name: str) -> tuple[str, ...]:
    """Executables called ``name``: CUDA_HOME / CUDA_PATH, the pip CUDA wheels' (the same release as the NVVM
    beside them), PATH, /usr/local/cuda* (newest first), then Triton's."""
    found: list[str] = []
    paths = [os.path.join(os.environ[v], "bin", name) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    paths += [str(d / name) for d in wheel_bin_dirs()]
    paths.append(shutil.which(name) or "")
    paths += sorted(glob.glob(f"/usr/local/cuda*/bin/{name}"), key=_version_key, reverse=True)
    tb = triton_bin_dir()
    if tb is not None:
        paths.append(str(tb / name))
    for p in paths:
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            real = os.path.realpath(p)
            if real not in found:
                found.append(real)
    return tuple(found)


def tool(name: str) -> str:
    c = candidates(name)
    if not c:
        raise CompilerUnavailable(f"{name} not found (install a CUDA toolkit and put its bin/ on PATH or set "
                                  f"CUDA_HOME, or pip install triton, whose wheel bundles it)")
    return c[0]


@functools.lru_cache(maxsize=None)
def version(path: str) -> str:
    """``ptxas --version``'s release, e.g. ``13.0`` ('' when it does not say)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else ""


def assemble(ptx: str, arch: str, extra: list[str] | None = None) -> tuple[bytes, str, str]:
    """PTX to a cubin with the first ``ptxas`` that accepts it (a toolkit's ptxas may read a newer PTX ISA than
    Triton's bundled one).  Returns (cubin, ptxas -v log, the ptxas used)."""
    errors = []
    with tempfile.TemporaryDirectory(prefix="gpusim-ptxas-") as d:
        src, out = Path(d) / "k.ptx", Path(d) / "k.cubin"
        src.write_text(ptx)
        for p in candidates("ptxas"):
            cmd = [p, f"-arch={arch}", "-v", "-lineinfo", *(extra or []), str(src), "-o", str(out)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
            except (OSError, subprocess.SubprocessError) as e:
                errors.append(f"{p}: {e}")
                continue
            if r.returncode != 0 and "Unresolved extern function" in r.stderr:
                # calls into a device library the linker adds (cudadevrt's grid sync): compile relocatable
                # (``-c``), as the code is before numba's link step; its resources are the kernel's
                r = subprocess.run(cmd[:-2] + ["-c", "-o", str(out)], capture_output=True, text=True,
                                   timeout=TIMEOUT_S)
            if r.returncode == 0:
                return out.read_bytes(), r.stderr + r.stdout, p
            errors.append(f"{p} (CUDA {version(p) or '?'}): {_last_error(r.stderr)}")
    if not errors:
        raise CompilerUnavailable("ptxas not found (install a CUDA toolkit and put its bin/ on PATH or set CUDA_HOME)")
    raise CompilerUnavailable("no ptxas accepted the PTX: " + "; ".join(errors))


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()]
    return (errs or lines or ["(no message)"])[0][:300]


# ---- ptxas -v ---------------------------------------------------------------------------------------------------

_FN_RX = re.compile(r"(?:Compiling (entry )?function|Function properties for) '?([\w$.]+)'?")
_STACK_RX = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RX = re.compile(r"Used (\d+) registers")
_BARRIERS_RX = re.compile(r"used (\d+) barriers")
_SMEM_RX = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> dict:
    """Resources of the entry function in a ``ptxas -v`` log: registers, barriers, smem (static shared bytes),
    stack, spill stores / loads (bytes per thread).  Raises ValueError when the log holds no entry function."""
    funcs: dict[str, dict] = {}
    entry = None
    cur = None
    for line in log.splitlines():
        m = _FN_RX.search(line)
        if m:
            cur = m.group(2)
            funcs.setdefault(cur, {})
            if m.group(1):
                entry = cur
            continue
        if cur is None:
            continue
        m = _STACK_RX.search(line)
        if m:
            funcs[cur].update(stack_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)),
                              spill_load_bytes=int(m.group(3)))
            continue
        m = _USED_RX.search(line)
        if m:
            b, sm = _BARRIERS_RX.search(line), _SMEM_RX.search(line)
            funcs[cur].update(registers=int(m.group(1)), barriers=int(b.group(1)) if b else 0,
                              smem=int(sm.group(1)) if sm else 0)
    if entry is None or "registers" not in funcs.get(entry, {}):
        raise ValueError("no entry function with a register count in the ptxas log")
    out = {"stack_bytes": 0, "spill_store_bytes": 0, "spill_load_bytes": 0}
    out.update(funcs[entry])
    return out


# ---- cuobjdump / nvdisasm -----------------------------------------------------------------------------------------

def resource_usage(cubin: bytes) -> dict:
    """``cuobjdump --dump-resource-usage`` of a cubin: REG, SHARED (on sm_80+ it includes the 1 KB the system
    reserves per CTA when the kernel uses shared memory), LOCAL, STACK per function, for cross-checks."""
    with tempfile.TemporaryDirectory(prefix="gpusim-cubin-") as d:
        p = Path(d) / "k.cubin"
        p.write_bytes(cubin)
        out = subprocess.run([tool("cuobjdump"), "--dump-resource-usage", str(p)], capture_output=True, text=True,
                             timeout=TIMEOUT_S).stdout
    info: dict = {}
    for k in ("REG", "SHARED", "LOCAL", "STACK"):
        m = re.search(rf"\b{k}:(\d+)", out)
        if m:
            info[k] = int(m.group(1))
    return info


def disassemble(cubin: bytes) -> str:
    """The SASS with source-line comments (``nvdisasm -g -c``); '' when nvdisasm is missing or fails."""
    c = candidates("nvdisasm")
    if not c:
        return ""
    with tempfile.TemporaryDirectory(prefix="gpusim-cubin-") as d:
        p = Path(d) / "k.cubin"
        p.write_bytes(cubin)
        try:
            r = subprocess.run([c[0], "-g", "-c", str(p)], capture_output=True, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.SubprocessError):
            return ""
    return r.stdout if r.returncode == 0 else ""
