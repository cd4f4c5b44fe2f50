"""The on-disk cache of compiled results: one JSON file per (kernel source, specialization, options, compiler
versions, target), under ``$GPUSIM_CACHE_DIR/compile/``, else ``$XDG_CACHE_HOME/gpusim/compile/``, else
``~/.cache/gpusim/compile/``.  An entry that cannot be read back (truncated, edited, another schema) is treated as
absent: compiled again and rewritten.  Writes go to a temporary file renamed into place, so a reader never sees a
half-written entry.

``fingerprint(fn)`` hashes what a kernel's code depends on: its source, and for every global (or closure) name
its code uses, the value's fingerprint: the source of a function or JIT function it calls (recursively), the value
of a number, string or constant array, the name of a module."""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
import types
from pathlib import Path

import numpy as np

from ._result import Compiled


def cache_dir() -> Path:
    root = os.environ.get("GPUSIM_CACHE_DIR", "").strip()
    if root:
        return Path(root).expanduser() / "compile"
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "gpusim" / "compile"


def key(parts) -> str:
    """A hex digest of ``parts`` (JSON-able, with numpy dtypes and the like written as their str)."""
    text = json.dumps(parts, sort_keys=True, default=lambda o: _value_text(o, set()), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def path_of(k: str) -> Path:
    return cache_dir() / f"{k}.json"


def load(k: str) -> Compiled | None:
    p = path_of(k)
    try:
        text = p.read_text()
    except OSError:
        return None
    try:
        return Compiled.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None              # corrupt: compile again (store() overwrites it)


def store(k: str, res: Compiled, cubin: bytes | None = None) -> None:
    """Write an entry (and its cubin); a cache directory that cannot be written is not an error (the result is
    still used)."""
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        if cubin:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".cubin", dir=d)
            with os.fdopen(fd, "wb") as f:
                f.write(cubin)
            os.replace(tmp, d / f"{k}.cubin")
            res.cubin_file = str(d / f"{k}.cubin")
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
        with os.fdopen(fd, "w") as f:
            json.dump(res.to_json(), f, default=str)
        os.replace(tmp, path_of(k))
    except OSError:
        pass


# ---- what a kernel's code depends on --------------------------------------------------------------------------

def def_line(fn) -> int:
    """The line of ``fn``'s ``def`` in its file (after its decorators); its first line when unreadable."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return getattr(getattr(fn, "__code__", None), "co_firstlineno", 0)
    for i, ln in enumerate(lines):
        s = ln.lstrip()
        if s.startswith("def ") or s.startswith("async def "):
            return first + i
    return first


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names) | set(code.co_freevars)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _inner_function(v):
    """The Python function behind a JIT object (numba dispatcher, Triton JITFunction, gpusim kernel), or None."""
    for attr in ("py_func", "fn"):
        f = getattr(v, attr, None)
        for _ in range(4):
            if isinstance(f, types.FunctionType):
                return f
            f = getattr(f, "fn", None)
    return None


def _value_text(v, seen: set, depth: int = 0) -> str:
    if depth > 4:
        return type(v).__name__
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return repr(v)
    if isinstance(v, types.ModuleType):
        return "module:" + v.__name__
    if isinstance(v, np.dtype):
        return "dtype:" + str(v)
    if isinstance(v, (tuple, list)):
        return type(v).__name__ + "(" + ",".join(_value_text(x, seen, depth + 1) for x in v) + ")"
    if isinstance(v, types.FunctionType):
        return "fn:" + fingerprint(v, seen)
    inner = _inner_function(v)
    if inner is not None:
        return f"{type(v).__name__}:" + fingerprint(inner, seen)
    tname = type(v).__module__ + "." + type(v).__qualname__
    if hasattr(v, "dtype") and hasattr(v, "tobytes") and hasattr(v, "shape"):        # a numpy array or scalar
        try:
            return f"array:{v.dtype}:{tuple(getattr(v, 'shape', ()))}:" + hashlib.sha256(v.tobytes()).hexdigest()
        except (TypeError, ValueError, AttributeError):
            return tname
    if type(v).__name__ == "constexpr" and hasattr(v, "value"):
        return "constexpr:" + _value_text(v.value, seen, depth + 1)
    name = getattr(v, "name", None)
    if isinstance(name, str):                      # dtypes and numba types: by name
        return f"{tname}:{name}"
    qual = getattr(v, "__qualname__", None)
    if isinstance(qual, str):
        return f"{tname}:{getattr(v, '__module__', '')}.{qual}"
    return tname


def fingerprint(fn: types.FunctionType, seen: set | None = None) -> str:
    """sha256 of ``fn``'s source and of what the names its code uses refer to (recursively)."""
    seen = set() if seen is None else seen
    code = fn.__code__
    if code in seen:
        return "recursive:" + fn.__qualname__
    seen.add(code)
    h = hashlib.sha256()
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = repr((code.co_code, code.co_consts, code.co_names))
    h.update(src.encode())
    h.update(f"{code.co_filename}:{code.co_firstlineno}".encode())   # line numbers reach the SASS line table
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    for n in sorted(_names(code)):
        if n in cells:
            try:
                v = cells[n].cell_contents
            except ValueError:
                continue
        elif n in fn.__globals__:
            v = fn.__globals__[n]
        else:
            continue
        h.update(f"|{n}={_value_text(v, seen)}".encode())
    return h.hexdigest()
