"""numba-cuda's compiler, run on the host for the simulated GPU's compute capability (no driver, no GPU).

``numba.cuda.compile_ptx(kernel, argtypes, cc=..., lineinfo=True)`` types and lowers the kernel with NVVM (the
argument types numba's dispatcher would infer at launch: arrays by dtype, ndim and layout, Python ints int64,
floats float64), then the host's ``ptxas -v`` (a CUDA toolkit's, or Triton's bundled one when it reads the PTX
ISA NVVM emits) assembles it for ``sm_XY``: registers, static shared memory, stack and spills from its log.  On a
GPU numba hands the PTX to the driver's JIT instead, which is the same ptxas of the driver's CUDA version.

A kernel imported under ``gpusim run`` without a CUDA driver has ``gpusim.cuda`` where its source says
``numba.cuda`` (``cuda.stand_in.numba_cuda_is_gpusim``); it is compiled with those names bound to the real numba-cuda
(``_rebind``), its ``@cuda.jit(device=True)`` helpers recompiled as numba device functions."""
from __future__ import annotations

import contextlib
import importlib
import re
import types

import numpy as np

from ..errors import CompileError, CompilerUnavailable
from . import _cache, _sass, _tools
from ._displaced import real_modules
from ._result import Compiled

_STATE: dict = {}


def available() -> None:
    with real_modules("numba.cuda"):
        _available()


def _available() -> None:
    if "error" in _STATE:
        raise CompilerUnavailable(_STATE["error"])
    if "ok" in _STATE:
        return
    try:
        from numba import cuda  # noqa: F401
        from numba.cuda import compile_ptx  # noqa: F401
    except Exception as e:                                   # noqa: BLE001 - any import failure: not available
        _STATE["error"] = f"numba-cuda is not importable ({type(e).__name__}: {e})"
        raise CompilerUnavailable(_STATE["error"]) from None
    if (getattr(cuda, "__name__", "") or "").startswith("gpusim"):
        raise CompilerUnavailable("numba.cuda is gpusim.cuda at this moment (a kernel file is being imported)")
    if not _tools.candidates("ptxas"):
        _STATE["error"] = "ptxas not found (install a CUDA toolkit and put its bin/ on PATH or set CUDA_HOME)"
        raise CompilerUnavailable(_STATE["error"])
    _STATE["ok"] = True


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("numba-cuda")
    except Exception:                                        # noqa: BLE001
        import numba_cuda
        return getattr(numba_cuda, "__version__", "?")


def arch_name(cap: tuple) -> str:
    return f"sm_{cap[0]}{cap[1]}"


def key_parts(req) -> dict:
    with real_modules("numba.cuda"):
        return _key_parts(req)


def _key_parts(req) -> dict:
    return {"frontend": "cuda", "numba-cuda": _version(), "cap": list(req.capability), "name": req.name,
            "source": _cache.fingerprint(req.py_func), "argtypes": req.argtypes, "options": req.options,
            "ptxas": [(p, _tools.version(p)) for p in _tools.candidates("ptxas")], "sass_schema": 2}


# ---- gpusim.cuda names -> numba.cuda --------------------------------------------------------------------------

def _numba_module(name: str):
    if name == "gpusim.cuda" or name.startswith("gpusim.cuda."):
        real = "numba.cuda" + name[len("gpusim.cuda"):]
        try:
            return importlib.import_module(real)
        except ImportError:
            return None
    return None


_DEVICE: dict = {}

#: ``numba.cuda``'s submodules a kernel reaches as attributes of ``cuda`` (``cuda.random.xoroshiro128p_*``): the
#: script imported them under the stand-in (``from numba.cuda.random import ...`` gave gpusim's), so the real
#: package never got them as attributes; they are imported before it compiles the kernel.
_SUBMODULES = ("random",)


def _with_submodules(m):
    if getattr(m, "__name__", "") == "numba.cuda":
        for sub in _SUBMODULES:
            if sub not in m.__dict__:
                importlib.import_module(f"numba.cuda.{sub}")
    return m


def _rebind(name: str, v):
    """A global of a kernel, as numba-cuda needs it (by the name the kernel uses)."""
    from numba import cuda
    from numba import types as nbt
    if isinstance(v, types.ModuleType):
        m = _numba_module(v.__name__)
        if m is None and v.__name__ == "numba":         # ``import numba as nb`` ... ``nb.cuda.random.xoroshiro*``
            _with_submodules(importlib.import_module("numba.cuda"))
        return _with_submodules(m) if m is not None else v
    tmod = type(v).__module__ or ""
    vmod = getattr(v, "__module__", "") or ""
    if not (tmod.startswith("gpusim.cuda") or vmod.startswith("gpusim.cuda")):
        return _cpu_dispatcher(v)
    if getattr(v, "_gpusim_frontend", None) == "cuda" and isinstance(getattr(v, "py_func", None), types.FunctionType):
        if getattr(v, "device", False):
            return device_function(v.py_func, getattr(v, "options", {}) or {}, signature=_scalar_signature(v))
        return kernel_function(v.py_func, getattr(v, "options", {}) or {})   # a kernel the kernel calls
    ext = getattr(v, "_gpusim_extern", None)
    if ext is not None:                                  # cuda.declare_device(name, sig, link=...)
        return cuda.declare_device(ext[0], ext[1], link=ext[2])
    tname = type(v).__name__
    if tname == "Scalar" and isinstance(getattr(v, "name", None), str):
        return getattr(nbt, "boolean" if v.name == "bool" else v.name)
    owners = [_numba_module(vmod) if vmod else None, _numba_module(tmod)]
    for mod in ("numba.cuda.random", "numba.cuda", "numba.cuda.cg"):
        owners.append(importlib.import_module(mod))
    for attr in (name, getattr(v, "__name__", None)):
        if not attr:
            continue
        for o in owners:
            if o is not None and hasattr(o, attr):
                return getattr(o, attr)
    return v


def _cpu_dispatcher(v):
    """An ``@numba.njit`` function a kernel calls (numba-cuda compiles it for the GPU): the real dispatcher, or one
    rebuilt over numba-cuda's names where its code names gpusim.cuda's (``cuda.popc`` in an njit helper)."""
    if type(v).__name__ != "CPUDispatcher" or not isinstance(getattr(v, "py_func", None), types.FunctionType):
        return v
    d = _DEVICE.get((v, "njit"))
    if d is None:
        _DEVICE[(v, "njit")] = v                         # a recursive reference meanwhile: the dispatcher itself
        fn = rebuilt(v.py_func)
        if fn is v.py_func:
            d = v
        else:
            import numba
            opts = getattr(v, "targetoptions", {}) or {}
            d = numba.njit(**{k: x for k, x in opts.items() if k in ("fastmath", "inline")})(fn)
        _DEVICE[(v, "njit")] = d
    return d


def rebuilt(fn: types.FunctionType) -> types.FunctionType:
    """``fn`` with its gpusim.cuda globals and closure variables (a kernel built by a factory, as ``cuda.reduce``'s)
    bound to numba-cuda's (``fn`` itself when it has none)."""
    names = [n for n in _cache._names(fn.__code__) if n in fn.__globals__]
    g = None
    for n in names:
        v = fn.__globals__[n]
        nv = _rebind(n, v)
        if nv is not v:
            if g is None:
                g = dict(fn.__globals__)
            g[n] = nv
    cells = fn.__closure__
    if cells:
        new = []
        for n, c in zip(fn.__code__.co_freevars, cells):
            try:
                v = c.cell_contents
            except ValueError:                           # not bound yet
                new.append(c)
                continue
            nv = _rebind(n, v)
            new.append(c if nv is v else types.CellType(nv))
        if any(a is not b for a, b in zip(new, cells)):
            cells = tuple(new)
    if g is None and cells is fn.__closure__:
        return fn
    f = types.FunctionType(fn.__code__, g if g is not None else fn.__globals__, fn.__name__, fn.__defaults__, cells)
    f.__kwdefaults__ = fn.__kwdefaults__
    f.__module__ = fn.__module__
    f.__qualname__ = fn.__qualname__
    return f


def _scalar_signature(v) -> str | None:
    """The one signature a device function was declared with, as numba parses it, when its types are scalars
    (numba converts a call's arguments to them); else None."""
    sigs = getattr(v, "signatures", None)
    if not isinstance(sigs, list) or len(sigs) != 1:
        return None
    sig = sigs[0]
    ts = [getattr(sig, "return_type", None)] + list(getattr(sig, "args", None) or ())
    if any(type(t).__name__ not in ("Scalar", "NoneType") for t in ts):
        return None
    names = ["boolean" if t.name == "bool" else t.name for t in ts]
    return f"{names[0]}({', '.join(names[1:])})"


def device_function(py_func, options: dict, device: bool = True, signature: str | None = None):
    d = _DEVICE.get((py_func, device, signature))
    if d is None:
        from numba import cuda
        opts = {k: v for k, v in options.items() if k in ("fastmath", "inline", "forceinline", "opt", "debug",
                                                          "lineinfo")}
        jit = cuda.jit(signature, device=device, **opts) if signature else cuda.jit(device=device, **opts)
        d = _DEVICE[(py_func, device, signature)] = jit(rebuilt(py_func))
    return d


def kernel_function(py_func, options: dict):
    """A ``@cuda.jit`` kernel another kernel calls: numba-cuda compiles the call as a call of a device function
    (its dispatcher, not ``device=True``, is what the caller's global names)."""
    return device_function(py_func, options, device=False)


# ---- argument types ----------------------------------------------------------------------------------------------

def _stand_in(t):
    """A host value numba's ``typeof`` gives the wanted type for (arrays by dtype, ndim, layout)."""
    kind = t[0]
    if kind == "array":
        _, dt, ndim, layout = t[:4]
        dt = np.dtype(dt)
        if ndim == 0:
            return np.empty((), dt)
        base = np.empty((3,) * ndim, dt)
        if layout == "C":
            return base
        if layout == "F":
            return np.asfortranarray(base)
        return base[(slice(None, None, 2),) * ndim]
    if kind == "scalar":
        dt = np.dtype(t[1])
        if dt.names is not None:
            return np.zeros(1, dt)[0]
        return dt.type(0)
    if kind == "tuple":
        items = tuple(_stand_in(x) for x in t[1])
        return tuple.__new__(t[2], items) if len(t) > 2 else items       # a namedtuple: of its class
    raise ValueError(f"no stand-in for {kind!r}")


def numba_type(t):
    import numba
    from numba import types as nbt
    if t[0] == "numba":
        return t[1]
    if t[0] == "tuple" and any(x[0] in ("numba", "cpointer") for x in t[1]):
        return nbt.BaseTuple.from_types([numba_type(x) for x in t[1]], t[2] if len(t) > 2 else None)
    if t[0] == "cpointer":
        return nbt.CPointer(numba.from_dtype(np.dtype(t[1])))
    ty = numba.typeof(_stand_in(t))
    if t[0] == "array" and len(t) > 4 and t[4]:          # read-only
        ty = ty.copy(readonly=True)
    return ty


# ---- compile -----------------------------------------------------------------------------------------------------

def compile(req) -> tuple[Compiled, bytes]:
    """(the result, the cubin)."""
    with real_modules("numba.cuda"):
        return _compile(req)


def _compile(req) -> tuple[Compiled, bytes]:
    from numba import cuda
    cap = tuple(req.capability)
    opts = dict(req.options)
    maxreg = opts.pop("max_registers", None)
    kw = {k: v for k, v in opts.items() if k in ("fastmath", "opt", "debug") and v is not None}
    try:
        sig = tuple(numba_type(t) for t in req.argtypes)
    except Exception as e:                                   # noqa: BLE001
        raise CompileError(f"numba-cuda cannot type the launch's arguments: {type(e).__name__}: {e}",
                           file=req.file, line=req.line, kernel=req.name) from None
    try:
        with _target_device(cap):
            try:
                ptx, _ = cuda.compile_ptx(rebuilt(req.py_func), sig, cc=cap, lineinfo=True, **kw)
            except RuntimeError as e:
                # debug info (NUMBA_CUDA_DEBUGINFO=1, debug=True) keeps each device function in a PTX module of its
                # own, which compile_ptx does not return (the driver links them at launch): the registers are read
                # off the build without debug info
                if "multiple PTX files" not in str(e) or kw.get("debug") is False:
                    raise
                kw["debug"] = False
                ptx, _ = cuda.compile_ptx(rebuilt(req.py_func), sig, cc=cap, lineinfo=True, **kw)
    except Exception as e:                                   # noqa: BLE001 - numba rejected it, or a library is missing
        text = str(e)
        if type(e).__name__ in ("DynamicLibNotFoundError", "NvvmSupportError", "CudaSupportError", "NvrtcSupportError") \
                or "libnvrtc" in text or "libNVVM" in text or "libnvvm" in text:
            m = re.search(r'Failure finding "([^"]+)"', text)
            what = f"{m.group(1)} not found" if m else f"{type(e).__name__}: {_one_line(text)[:300]}"
            raise CompilerUnavailable(f"numba-cuda cannot run its compiler here: {what} (numba-cuda needs libnvvm "
                                      f"and libnvrtc: pip install numba-cuda[cu12] or [cu13], or a CUDA toolkit's "
                                      f"lib/ on LD_LIBRARY_PATH)") from None
        file, line = _numba_location(text, req, e.__traceback__)
        raise CompileError(f"numba-cuda {_version()} ({arch_name(cap)}) rejects the kernel: {type(e).__name__}: "
                           f"{_first_lines(text)}", file=file, line=line, kernel=req.name) from None
    extra = [f"--maxrregcount={int(maxreg)}"] if maxreg else []
    cubin, log, ptxas = _tools.assemble(ptx, arch_name(cap), extra)
    try:
        res = _tools.parse_ptxas_log(log)
    except ValueError:
        raise CompilerUnavailable(f"{ptxas} -v printed no resource usage for the kernel") from None
    sass = _sass.summarize(_tools.disassemble(cubin), req.file)
    out = Compiled(compiler=f"numba-cuda {_version()} + ptxas {_tools.version(ptxas) or '?'}, {arch_name(cap)}",
                   frontend="cuda", kernel=req.name, arch=arch_name(cap), registers=int(res["registers"]),
                   shared_bytes=int(res.get("smem", 0)), stack_bytes=int(res.get("stack_bytes", 0)),
                   spill_store_bytes=int(res.get("spill_store_bytes", 0)),
                   spill_load_bytes=int(res.get("spill_load_bytes", 0)), barriers=int(res.get("barriers", 0)),
                   signature={"argtypes": [str(s) for s in sig], "ptxas": ptxas}, ptxas_log=log[-4000:], sass=sass)
    return out, cubin


class _TargetDevice:
    def __init__(self, cap):
        self.compute_capability = tuple(cap)


@contextlib.contextmanager
def _target_device(cap):
    """numba-cuda compiles a device function the kernel calls (``@cuda.jit(device=True)``, the ``cuda.random``
    generators) for ``get_current_device().compute_capability``, a driver query; while gpusim compiles for the
    simulated GPU's capability, that query answers with it (no driver needed, and the kernel and its device
    functions are built for the same target)."""
    import numba.cuda.dispatcher as disp
    saved = disp.__dict__.get("get_current_device")
    disp.get_current_device = lambda: _TargetDevice(cap)
    try:
        yield
    finally:
        if saved is not None:
            disp.get_current_device = saved


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _first_lines(text: str) -> str:
    """numba's typing errors: the message without the traceback-like location blocks."""
    keep = []
    for ln in str(text).splitlines():
        s = ln.strip()
        if not s or s.startswith(("File ", "During:", "^", "<source")) or set(s) <= {"^", "-", " "}:
            continue
        keep.append(s)
    return " ".join(keep)[:600] or "(no message)"


def _numba_location(text: str, req, tb=None) -> tuple[str, int]:
    """Where in the kernel's file numba failed: the last ``File "...", line N`` of its message in that file, else
    the innermost ``loc`` (numba's ``ir.Loc``) of the typing step that raised (numba-cuda 0.30 raises some typing
    errors without adding their location to the message), else the kernel's def line."""
    def ours(f) -> bool:
        return bool(req.file) and isinstance(f, str) and (f == req.file or f.rsplit("/", 1)[-1] ==
                                                         req.file.rsplit("/", 1)[-1])
    hits = re.findall(r'File "([^"]+)", line (\d+)', text)
    for f, ln in reversed(hits):
        if ours(f):
            return req.file, int(ln)
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for fr in reversed(frames):
        for v in list(fr.f_locals.values()):
            loc = v if type(v).__name__ == "Loc" else getattr(v, "loc", None)
            line = getattr(loc, "line", None)
            if isinstance(line, int) and line > 0 and ours(getattr(loc, "filename", None)):
                return req.file, line
    return req.file, req.line
