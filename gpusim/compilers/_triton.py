"""Triton's own compiler, run on the host for the simulated GPU's target (no driver, no GPU).

The launch's arguments are specialized by Triton's binder itself (``create_function_from_signature``: pointers
and integers divisible by 16 get ``tt.divisibility``, an integer 1 becomes a constant, floats and bools are not
specialized) on stand-ins that carry what the binder reads: a pointer's dtype and device address, an integer's
value.  Then ``triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32), options=...)`` runs the whole
pipeline to a cubin; ``ptxas -v`` (Triton's own invocation, its log captured) gives registers, spills and stack;
``metadata.shared`` the shared memory the launch asks for.

A kernel whose globals hold gpusim's Triton (``from gpusim import triton``: no Triton installed when the file was
imported) is compiled with those names bound to the real Triton (``_rebind``)."""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import sys
import tempfile
import types

from ..errors import CompileError, CompilerUnavailable
from . import _cache, _sass, _tools
from ._displaced import real_modules
from ._result import Compiled

_STATE: dict = {}


def available() -> None:
    with real_modules("triton"):
        _available()


def _available() -> None:
    """Raise CompilerUnavailable (with the reason) when Triton cannot compile for CUDA here."""
    if "error" in _STATE:
        raise CompilerUnavailable(_STATE["error"])
    if "ok" in _STATE:
        return
    try:
        import triton  # noqa: F401
        from triton.backends.nvidia.compiler import CUDABackend  # noqa: F401
    except Exception as e:                                   # noqa: BLE001 - any import failure: not available
        _STATE["error"] = f"Triton is not importable ({type(e).__name__}: {e})"
        raise CompilerUnavailable(_STATE["error"]) from None
    try:
        ptxas = _ptxas()
    except Exception as e:                                   # noqa: BLE001 - Triton found no ptxas
        _STATE["error"] = f"Triton's ptxas is missing ({type(e).__name__}: {e})"
        raise CompilerUnavailable(_STATE["error"]) from None
    _STATE["ok"] = True
    _STATE["ptxas"] = ptxas


def _ptxas() -> tuple[str, str]:
    """(path, version) of the ptxas Triton runs (its wheel's, or ``TRITON_PTXAS_PATH``)."""
    from triton import knobs
    tool = knobs.nvidia.ptxas
    return tool.path, str(tool.version)


def version() -> str:
    import triton
    return triton.__version__


def arch_name(cap: tuple) -> str:
    cc = cap[0] * 10 + cap[1]
    return f"sm_{cc}{'a' if cc >= 90 else ''}"


def label(cap: tuple) -> str:
    return f"triton {version()}, {arch_name(cap)}"


def key_parts(req) -> dict:
    with real_modules("triton"):
        return _key_parts(req)


def _key_parts(req) -> dict:
    return {"frontend": "triton", "triton": version(), "cap": list(req.capability), "name": req.name,
            "source": _cache.fingerprint(req.fn), "params": req.params, "options": req.options,
            "jit": req.jit_options, "ptxas": list(_STATE.get("ptxas") or _ptxas()),
            "sass_schema": 2}


# ---- gpusim's Triton names -> Triton's --------------------------------------------------------------------------

def _real_module(name: str):
    if name == "gpusim.triton" or name.startswith("gpusim.triton."):
        real = "triton" + name[len("gpusim.triton"):]
        try:
            mod = importlib.import_module(real)
        except ImportError:
            return None
        return _language_with_core(mod) if real == "triton.language" else mod
    return None


def _language_with_core(tl):
    """gpusim's ``triton.language`` is also its ``.core`` and ``.standard`` (``from triton.language import core`` gives
    it): for Triton, a module with ``triton.language``'s names and then those of ``core`` and ``standard``
    (``core.get_int_dtype``, ``standard._log2``)."""
    merged = _STATE.get("language")
    if merged is None or merged[0] is not tl:
        m = types.ModuleType("triton.language")
        for owner in (tl.standard, tl.core, tl):
            m.__dict__.update({k: v for k, v in vars(owner).items() if not (k.startswith("__") and k.endswith("__"))})
        merged = _STATE["language"] = (tl, m)
    return merged[1]


_JITTED: dict = {}
#: the functions ``jit_of`` is rebinding now: a global naming one of them again is left as it is
_IN_PROGRESS: set = set()


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 into a scratch file while Triton compiles: a crash in one of its MLIR passes prints the pass
    pipeline and an IR reproducer there (~150 lines) before the Python exception that says it failed."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):     # a stderr without a descriptor (captured): nothing to quiet
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)


def _rebind(v):
    """A global of a kernel, as real Triton needs it."""
    import triton
    import triton.language as tl
    if isinstance(v, types.ModuleType):
        m = _real_module(v.__name__)
        return m if m is not None else v
    mod = type(v).__module__ or ""
    if not mod.startswith("gpusim.triton") and not (getattr(v, "__module__", "") or "").startswith("gpusim.triton"):
        return v
    if mod == "gpusim.triton._stdlib" or type(v).__name__ == "ConstexprFunction":
        # Triton's standard-library helpers (``_log2``, ``_sum_combine`` ...) by name; a script's own
        # ``@triton.constexpr_function`` wrapped by the real one
        name = getattr(v, "__name__", "")
        for owner in (tl.standard, tl.core):
            if name and hasattr(owner, name):
                return getattr(owner, name)
        if type(v).__name__ == "ConstexprFunction":
            return triton.constexpr_function(v.fn)
    if getattr(v, "_gpusim_frontend", None) == "triton" and hasattr(v, "fn"):      # a gpusim @triton.jit helper
        inner = v
        while hasattr(inner, "fn") and not isinstance(inner, types.FunctionType):
            inner = inner.fn
        if inner in _IN_PROGRESS:
            # a helper named in its own code object only as an attribute (fla's ``def exp(x): return
            # tl.exp(x)``): Triton's code generator never looks that name up (and refuses a recursive call)
            return v
        return jit_of(inner, {})
    if type(v).__name__ == "constexpr" and hasattr(v, "value"):
        return tl.constexpr(v.value)
    if type(v).__name__ in ("dtype", "pointer_type") and isinstance(getattr(v, "name", None), str):
        return _dtype(v.name)
    ld = getattr(v, "_gpusim_libdevice", None)
    if ld:                                   # a libdevice function imported by name (``from ...libdevice import tanh``)
        for m in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice"):
            try:
                real = importlib.import_module(m)
            except ImportError:
                continue
            if hasattr(real, ld):
                return getattr(real, ld)
    name = getattr(v, "__name__", None)
    owner = _real_module(getattr(v, "__module__", "") or "")
    if name and owner is not None and hasattr(owner, name):
        return getattr(owner, name)
    if name and hasattr(tl, name):
        return getattr(tl, name)
    if name and hasattr(triton, name):
        return getattr(triton, name)
    if name and name.endswith("_") and hasattr(tl, name.rstrip("_")):      # abs_: tl.abs (libdevice.fabs)
        return getattr(tl, name.rstrip("_"))
    return v


def _annotation_names(fn) -> set[str]:
    """Names the annotations of ``fn``'s parameters and local variables use (``M: ce`` after ``from
    triton.language.core import constexpr as ce``) and its parameters' default values (``mode: tl.constexpr =
    MODE_SUM``, Liger's reduction modes): Triton's code generator looks them up as globals, and Python's code
    object does not name them."""
    import ast
    import inspect
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set()
    out = set()
    for node in ast.walk(tree):
        ann = node.annotation if isinstance(node, (ast.arg, ast.AnnAssign)) else None
        if ann is not None:
            out |= {n.id for n in ast.walk(ann) if isinstance(n, ast.Name)}
        if isinstance(node, ast.arguments):
            for d in [*node.defaults, *node.kw_defaults]:
                if d is not None:
                    out |= {n.id for n in ast.walk(d) if isinstance(n, ast.Name)}
    return out


def _global_names(fn) -> set[str]:
    return _cache._names(fn.__code__) | _annotation_names(fn)


def _needs_rebind(fn) -> bool:
    code_names = _global_names(fn)
    for n in code_names:
        v = fn.__globals__.get(n)
        if v is None:
            continue
        mod = v.__name__ if isinstance(v, types.ModuleType) else (type(v).__module__ or "")
        if mod.startswith("gpusim.triton") or (getattr(v, "__module__", "") or "").startswith("gpusim.triton"):
            return True
    return False


def jit_of(fn, jit_options: dict):
    """A real ``triton.JITFunction`` of ``fn`` (its gpusim Triton globals rebound), made once per function."""
    import triton
    key = (fn, tuple(sorted((k, repr(v)) for k, v in jit_options.items())))
    jf = _JITTED.get(key)
    if jf is None:
        f = fn
        if _needs_rebind(fn):
            g = dict(fn.__globals__)
            _IN_PROGRESS.add(fn)
            try:
                for n in _global_names(fn):
                    if n in g:
                        g[n] = _rebind(g[n])
            finally:
                _IN_PROGRESS.discard(fn)
            defaults = tuple(_rebind(d) for d in fn.__defaults__) if fn.__defaults__ else fn.__defaults__
            f = types.FunctionType(fn.__code__, g, fn.__name__, defaults, fn.__closure__)
            f.__kwdefaults__ = ({k: _rebind(d) for k, d in fn.__kwdefaults__.items()} if fn.__kwdefaults__
                                else fn.__kwdefaults__)
            f.__annotations__ = {k: _rebind(a) for k, a in (getattr(fn, "__annotations__", {}) or {}).items()}
            f.__module__ = fn.__module__
            f.__qualname__ = fn.__qualname__
            f.__doc__ = fn.__doc__
        jf = triton.jit(f, **{k: v for k, v in jit_options.items() if v is not None})
        _JITTED[key] = jf
    return jf


def _dtype(name: str):
    import triton.language as tl
    return tl.dtype(name)


class _Pointer:
    """What Triton's binder reads of a tensor argument: its dtype and its address (alignment)."""

    def __init__(self, dtype, address: int):
        self.dtype = dtype
        self._address = int(address)

    def data_ptr(self) -> int:
        return self._address


def _stand_in(p):
    kind = p[0]
    if kind == "ptr":
        return _Pointer(_dtype(p[1]), p[2])
    if kind == "desc":
        from triton.tools.tensor_descriptor import TensorDescriptor
        _, dt, addr, shape, strides, block, padding = p
        return TensorDescriptor(_Pointer(_dtype(dt), addr), list(shape), list(strides), list(block),
                                padding=padding or "zero")
    if kind in ("int", "float", "bool"):
        return p[1]
    if kind == "none":
        return None
    if kind == "constexpr":
        v = p[1]
        if isinstance(v, (tuple, list)) and len(v) == 2 and v[0] == "dtype":
            return _dtype(v[1])
        return v
    raise ValueError(f"unknown parameter kind {kind!r}")


# ---- compile ---------------------------------------------------------------------------------------------------

def compile(req) -> tuple[Compiled, bytes]:
    with real_modules("triton"):
        return _compile(req)


def _compile(req) -> tuple[Compiled, bytes]:
    """(the result, the cubin)."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.compiler import ASTSource
    from triton.runtime.jit import create_function_from_signature

    cap = tuple(req.capability)
    target = GPUTarget("cuda", cap[0] * 10 + cap[1], 32)
    backend = CUDABackend(target)
    where = {"file": req.file, "line": req.line, "kernel": req.name}
    try:
        jf = jit_of(req.fn, req.jit_options)
        binder = create_function_from_signature(jf.signature, jf.params, backend)
        args = [_stand_in(p) for p in req.params]
        # a kernel parameter named as a launch option (tutorial 02's ``num_stages: tl.constexpr``) takes the value,
        # as Triton's launcher binds it: the option keeps its default
        names = {p.name for p in jf.params}
        opts = {k: v for k, v in req.options.items() if k not in names}
        bound, specialization, options = binder(*args, **opts)
        options, signature, constexprs, attrs = jf._pack_args(backend, opts, bound, specialization, options)
    except CompilerUnavailable:
        raise
    except Exception as e:                                   # noqa: BLE001 - Triton's binder refused the launch
        raise CompileError(f"Triton {version()} cannot specialize this launch: {type(e).__name__}: {_one_line(e)}",
                           **where) from None
    log = io.StringIO()
    try:
        with knobs.compilation.scope(), knobs.nvidia.scope(), contextlib.redirect_stdout(log), _quiet_stderr():
            knobs.compilation.always_compile = True       # run ptxas (and capture its -v log) even on Triton's hit
            knobs.nvidia.dump_ptxas_log = True
            ck = triton.compile(ASTSource(jf, signature, constexprs, attrs), target=target,
                                options=options.__dict__)
    except Exception as e:                                   # noqa: BLE001 - Triton rejected the kernel
        file, line, msg = _located(e, req)
        raise CompileError(f"Triton {version()} ({arch_name(cap)}) rejects the kernel: {msg}", file=file, line=line,
                           kernel=req.name) from None
    try:
        res = _tools.parse_ptxas_log(log.getvalue())
    except ValueError:
        ru = _tools.resource_usage(ck.asm["cubin"])          # no log (an older Triton): read the cubin
        res = {"registers": ru.get("REG", 0), "stack_bytes": ru.get("STACK", 0)}
    md = ck.metadata
    sass = _sass.summarize(_tools.disassemble(ck.asm["cubin"]), req.file)
    sig = {k: v for k, v in signature.items()}
    sig["divisibility_16"] = sorted(jf.arg_names[k[0]] for k, v in attrs.items()
                                    if any(a[0] == "tt.divisibility" and a[1] == 16 for a in v))
    sig["constants"] = sorted(jf.arg_names[k[0]] for k in constexprs)
    out = Compiled(compiler=label(cap), frontend="triton", kernel=req.name, arch=arch_name(cap),
                   registers=int(res["registers"]), shared_bytes=int(md.shared),
                   stack_bytes=int(res.get("stack_bytes", 0)), spill_store_bytes=int(res.get("spill_store_bytes", 0)),
                   spill_load_bytes=int(res.get("spill_load_bytes", 0)), barriers=int(res.get("barriers", 0)),
                   num_warps=int(md.num_warps), num_stages=int(md.num_stages), signature=sig,
                   ptxas_log=log.getvalue()[-4000:], sass=sass)
    return out, ck.asm["cubin"]


def _one_line(e) -> str:
    return " ".join(str(e).split())[:600]


def _located(e, req) -> tuple[str, int, str]:
    """(file, line, message) of a Triton compilation error.  Triton's CompilationError carries the AST node of the
    failing construct, its ``lineno`` counted from the kernel's ``def`` line (Triton parses the source from
    there; an error in a helper it calls is re-raised at the call in the kernel), and the message."""
    file, line = req.file, req.line
    lineno = getattr(getattr(e, "node", None), "lineno", None)
    if isinstance(lineno, int):
        line = req.line + lineno - 1 if req.line else lineno
    msg = getattr(e, "error_message", None) or ""
    inner, seen = e, 0
    while not msg and seen < 16:                 # an error in a called helper: the message is on the inner error
        inner = inner.__cause__ or inner.__context__
        seen += 1
        if inner is None:
            break
        msg = getattr(inner, "error_message", None) or ("" if hasattr(inner, "node") else _one_line(inner))
        if msg:
            msg = f"in a function it calls: {msg}"
    if not msg:
        text = str(e)
        m = re.search(r"(?m)^\s*(?:error|Error):?\s*(.+)$", text)
        msg = m.group(1) if m else (text.strip().splitlines()[-1] if text.strip() else type(e).__name__)
    return file, line, f"{type(e).__name__}: {_one_line(msg)}"
