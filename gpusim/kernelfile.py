"""The user's kernel file: importing it by path, its ``launch()`` parameters, and errors raised by its code.

A kernel file (kernels/README.md) is user code: an exception it raises becomes a KernelFileError naming its
file:line (``_UserCode``), while one raised inside gpusim stays an internal error.  ``-p key=value`` texts are
parsed (``parse_value``) and checked against ``launch()``'s signature (``launch_params``); typed values (from a
sweep spec) are checked by ``check_params``.  Used by the command line, sweeps and tuning.
"""
from __future__ import annotations

import ast
import difflib
import importlib.util
import inspect
import operator
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from .cuda.stand_in import numba_cuda_is_gpusim as _numba_cuda_is_gpusim
from .errors import GpusimError, KernelFileError, LaunchError, UsageError

_GPUSIM_DIR = os.path.dirname(os.path.abspath(__file__))
_LIB_DIRS = tuple({os.path.abspath(d) for d in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
#: the torch stand-in's dispatcher (bench.torch_cuda_is_host): an exception of torch's own passes through it
_TORCH_STAND_IN = os.path.join(_GPUSIM_DIR, "bench.py")


def _shown(path: str) -> str:
    """A path as the user would write it: relative to the working directory when under it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _user_frame(exc: BaseException, kernel_file: str) -> tuple[str, int, str] | None:
    """(file, line, function) of the frame of the user's code an exception was raised in, or None when it was
    raised in gpusim's own code.  Walks the traceback from the innermost frame out, passing over library
    frames (numpy, the standard library): the first frame in gpusim's package or in user code decides."""
    target = os.path.abspath(kernel_file)
    for fs in reversed(traceback.extract_tb(exc.__traceback__)):
        fn = fs.filename
        if not os.path.isabs(fn) and not os.path.exists(fn):
            continue                                  # <frozen ...>, <string>, Cython's "numpy/...pyx"
        a = os.path.abspath(fn)
        if a == target:
            return fn, fs.lineno or 0, fs.name
        if a == _TORCH_STAND_IN and fs.name in ("__torch_function__", "import_"):
            continue                    # torch's own call, or the script's import, passed through the torch stand-in
        if a.startswith(_GPUSIM_DIR + os.sep):
            return None
        if a.startswith(_LIB_DIRS) or "site-packages" in a or "dist-packages" in a:
            continue
        return fn, fs.lineno or 0, fs.name             # another file of the user's (a helper module)
    return None


def _calling_frame(exc: BaseException, kernel_file: str) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost frame of the user's code in the traceback of an exception gpusim raised: the
    line whose call led into gpusim (library frames, such as numba's decorators, passed over)."""
    found = None
    for fs in traceback.extract_tb(exc.__traceback__):
        fn = fs.filename
        if not os.path.isabs(fn) and not os.path.exists(fn):
            continue
        a = os.path.abspath(fn)
        if a.startswith(_GPUSIM_DIR + os.sep) or a.startswith(_LIB_DIRS) or "site-packages" in a \
                or "dist-packages" in a:
            continue
        found = (fn, fs.lineno or 0, fs.name)
    return found


def _located(msg: str) -> bool:
    """Does the message start with a ``file:line`` (or ``file``) of its own?"""
    head = msg.split(": ", 1)[0]
    return ".py" in head


def _exc_text(exc: BaseException) -> str:
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def user_error(exc: BaseException, kernel_file: str) -> KernelFileError | None:
    """A KernelFileError naming the user's frame for an exception raised by the user's code, else None (a
    kernel's own exception, raised on the host after a debug=True launch, is named by its KernelError)."""
    if isinstance(getattr(exc, "gpusim_kernel_raise", None), GpusimError):
        return exc.gpusim_kernel_raise
    if isinstance(exc, SyntaxError) and exc.filename and os.path.exists(exc.filename):
        if os.path.abspath(exc.filename).startswith(_GPUSIM_DIR + os.sep):
            return None                                  # in gpusim's own source: a bug in gpusim
        what = "syntax error" if type(exc) is SyntaxError else type(exc).__name__
        return KernelFileError(f"{what}: {exc.msg}", file=_shown(exc.filename), line=exc.lineno or 0)
    if isinstance(exc, ImportError) and getattr(exc, "gpusim_refusal", False):
        fr = _calling_frame(exc, kernel_file)          # a stand-in refused a module: the user's import line
    else:
        fr = _user_frame(exc, kernel_file)
    if fr is None:
        return None
    file, line, func = fr
    where = "at import" if func == "<module>" else f"in {func}()" if not func.startswith("<") else f"in {func}"
    return KernelFileError(f"{where}: {_exc_text(exc)}", file=_shown(file), line=line)


class _UserCode:
    """``with _UserCode(path):`` turns an exception raised by the kernel file's code into a KernelFileError
    naming its file:line (GpusimErrors pass through; exceptions raised in gpusim itself stay internal)."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, tp, exc, tb):
        if isinstance(exc, LaunchError) and not _located(str(exc)):
            fr = _calling_frame(exc, self.path)             # the user's line that made the refused launch
            where = f"{_shown(fr[0])}:{fr[1]}" if fr is not None else getattr(exc, "gpusim_where", "")
            if where:          # the script's launch line, else (Triton's OutOfResources) the kernel's
                exc.args = (f"{where}: {exc.args[0] if exc.args else ''}",) + exc.args[1:]
            return False
        if exc is None or isinstance(exc, (GpusimError, KeyboardInterrupt, SystemExit)) or \
                not isinstance(exc, Exception):
            return False
        err = user_error(exc, self.path)
        if err is None:
            return False
        raise err from exc





def load_kernel_file(path: str):
    """Import a kernel file by path as a module (its name derived from the file name).

    A syntax error or an exception raised while importing it is a KernelFileError naming file:line."""
    p = Path(path)
    if not p.exists():
        raise KernelFileError(f"kernel file {path!r} does not exist")
    if not p.is_file():
        raise KernelFileError(f"{path}: not a file (give a kernel file such as kernels/vector_add.py)")
    if p.suffix != ".py":
        raise KernelFileError(f"{path}: not a Python file (a kernel file is a .py file; see kernels/README.md)")
    name = "gpusim_kernel_" + p.stem
    spec = importlib.util.spec_from_file_location(name, p)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        with _UserCode(str(p)), _numba_cuda_is_gpusim():
            spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not callable(getattr(mod, "launch", None)):
        raise KernelFileError(f"{path}: defines no launch() function (see kernels/README.md for the convention)")
    return mod


# ---- -p key=value ---------------------------------------------------------------------------------------

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def _arith(node: ast.AST) -> Any:
    """Value of a constant arithmetic expression (``1 << 20``, ``2**24``, ``3*1024``); ValueError otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _arith(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _arith(node.left), _arith(node.right)
        if isinstance(node.op, ast.Pow) and abs(b) > 256 or isinstance(node.op, ast.LShift) and b > 256:
            raise ValueError("too large")
        return _OPS[type(node.op)](a, b)
    raise ValueError("not arithmetic")


def parse_value(text: str) -> Any:
    """A ``-p`` value: a Python literal (``4096``, ``1.5``, ``True``, ``'x'``, ``(64, 64)``), a constant
    arithmetic expression (``1 << 20``), or else the text itself as a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        return _arith(ast.parse(text.strip(), mode="eval").body)
    except (ValueError, SyntaxError, TypeError, ZeroDivisionError, OverflowError, MemoryError, RecursionError):
        return text


def _parse_params(items: list[str]) -> dict[str, str]:
    """``-p key=value`` items as {key: value text}; refuses malformed and repeated keys."""
    out: dict[str, str] = {}
    for it in items or []:
        if "=" not in it:
            raise UsageError(f"-p {it}: a parameter is given as key=value (e.g. -p n=4096)")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise UsageError(f"-p {it}: {k!r} is not a parameter name")
        if k in out:
            raise UsageError(f"-p {k}: given twice ({k}={out[k]} and {k}={v})")
        out[k] = v
    return out


_TYPE_NAMES = {"int": int, "float": float, "str": str, "bool": bool}


def _expected_type(p: inspect.Parameter) -> type | None:
    """The type a launch() parameter takes: its default's type, else its annotation when a plain type."""
    if p.default is not inspect.Parameter.empty and p.default is not None:
        return type(p.default)
    ann = p.annotation
    if isinstance(ann, str):
        return _TYPE_NAMES.get(ann.strip())
    return ann if ann in (int, float, str, bool) else None


def _coerce(name: str, text: str, value: Any, want: type | None, label: str | None = None) -> Any:
    """Check a parsed ``-p`` value against the type the parameter takes (converting int->float, 2.0->2).
    ``label`` names the value in the error (default ``-p name=text``)."""
    def bad(word: str):
        return UsageError(f"{label or f'-p {name}={text}'}: parameter {name} of launch() expects {word}, "
                          f"got {text!r}")
    if want is None:
        return value
    if want is bool:
        if isinstance(value, bool):
            return value
        low = text.strip().lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        raise bad("a bool (True or False)")
    if want is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise bad("an int")
    if want is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise bad("a float")
    if want is str:
        return value if isinstance(value, str) else text
    if want in (tuple, list):
        if isinstance(value, (tuple, list)):
            return want(value)
        raise bad(f"a {want.__name__} such as (64, 64)")
    return value


def launch_params(fn: Any, raw: dict[str, str], path: str) -> dict[str, Any]:
    """Check ``-p`` parameters against the signature of a kernel file's ``launch()`` and convert them to the
    types its defaults have.  Unknown names and wrong types are UsageErrors naming the file:line of launch()."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {k: parse_value(v) for k, v in raw.items()}
    line = getattr(getattr(fn, "__code__", None), "co_firstlineno", 0)
    where = f"{path}:{line}" if line else path
    params = {n: p for n, p in sig.parameters.items()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    out: dict[str, Any] = {}
    for k, text in raw.items():
        if k not in params:
            if takes_any:
                out[k] = parse_value(text)
                continue
            near = difflib.get_close_matches(k, list(params), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            takes = f"it takes: {', '.join(params)}" if params else "it takes no parameters"
            raise UsageError(f"{where}: no parameter {k!r} in launch(){hint}; {takes}")
        try:
            out[k] = _coerce(k, text, parse_value(text), _expected_type(params[k]))
        except UsageError as e:
            raise UsageError(f"{where}: {e}") from None
    return out


def _key_line(fn: Any, key: str) -> int:
    """The line in ``fn``'s source where the dict key ``key`` is written (its def line when not found)."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return getattr(getattr(fn, "__code__", None), "co_firstlineno", 0)
    if key:
        for i, ln in enumerate(lines):
            if f'"{key}"' in ln or f"'{key}'" in ln:
                return first + i
    return first


def check_params(fn: Any, values: dict[str, Any], where: Any) -> dict[str, Any]:
    """Check typed launch() parameters (from a sweep spec or a configs file, not ``-p`` texts) against the
    signature of ``fn`` and convert them as ``-p`` values are (int -> float, 2.0 -> 2, list -> tuple).
    ``where(name)`` is the location to name in an error ("spec.toml:7"); UsageError."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return dict(values)
    params = {n: p for n, p in sig.parameters.items()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    out: dict[str, Any] = {}
    for k, v in values.items():
        if k not in params:
            if takes_any:
                out[k] = v
                continue
            near = difflib.get_close_matches(k, list(params), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            takes = f"it takes: {', '.join(params)}" if params else "it takes no parameters"
            raise UsageError(f"{where(k)}: no parameter {k!r} in launch(){hint}; {takes}")
        text = v if isinstance(v, str) else repr(v)
        out[k] = _coerce(k, text, v, _expected_type(params[k]), label=f"{where(k)}: {k} = {text}")
    return out


def make_launch(mod: Any, params: dict[str, Any], path: str) -> dict:
    """Call a kernel file's ``launch(**params)`` and check the description it returns (``api.check_launch``):
    an exception in the file's code is a KernelFileError, a bad key a LaunchSpecError naming its file:line."""
    from .api import check_launch
    from .errors import LaunchSpecError
    with _UserCode(path):
        launch = mod.launch(**params)
    try:
        check_launch(launch)
    except LaunchSpecError as e:
        raise LaunchSpecError(f"{path}:{_key_line(mod.launch, e.key)}: {e}", key=e.key) from e
    return launch
