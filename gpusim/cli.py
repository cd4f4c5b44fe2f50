"""Command line: ``gpusim run FILE``, ``gpusim gpus``, ``gpusim validate ...``.

``gpusim run kernels/vector_add.py`` imports the file, calls its ``launch()`` (parameters with ``-p k=v``),
simulates every kernel it launches on the chosen GPU, checks the outputs against the file's numpy reference
and prints the report (``--json`` for machine-readable output).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import ctypes.util
import difflib
import importlib.util
import inspect
import json
import operator
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from . import compilers
from .errors import (EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED, EXIT_USER_ERROR, ISSUE_TRACKER, GpusimError,
                     KernelFileError, LaunchSpecError, UsageError)

_GPUSIM_DIR = os.path.dirname(os.path.abspath(__file__))
_LIB_DIRS = tuple({os.path.abspath(d) for d in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


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
        if a.startswith(_GPUSIM_DIR + os.sep):
            return None
        if a.startswith(_LIB_DIRS) or "site-packages" in a or "dist-packages" in a:
            continue
        return fn, fs.lineno or 0, fs.name             # another file of the user's (a helper module)
    return None


def _exc_text(exc: BaseException) -> str:
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def user_error(exc: BaseException, kernel_file: str) -> KernelFileError | None:
    """A KernelFileError naming the user's frame for an exception raised by the user's code, else None."""
    if isinstance(exc, SyntaxError) and exc.filename and os.path.exists(exc.filename):
        if os.path.abspath(exc.filename).startswith(_GPUSIM_DIR + os.sep):
            return None                                  # in gpusim's own source: a bug in gpusim
        what = "syntax error" if type(exc) is SyntaxError else type(exc).__name__
        return KernelFileError(f"{what}: {exc.msg}", file=_shown(exc.filename), line=exc.lineno or 0)
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
        if exc is None or isinstance(exc, (GpusimError, KeyboardInterrupt, SystemExit)) or \
                not isinstance(exc, Exception):
            return False
        err = user_error(exc, self.path)
        if err is None:
            return False
        raise err from exc


_NUMBA_CUDA_MODULES = ("numba.cuda", "numba.cuda.random", "numba.cuda.types", "numba.cuda.cg")


@contextlib.contextmanager
def _numba_cuda_is_gpusim():
    """Without a CUDA driver, numba-cuda's host API (``cuda.to_device``, ``create_xoroshiro128p_states``, eager
    signatures) cannot run, so a kernel file's ``from numba import cuda`` gets ``gpusim.cuda`` while it is imported,
    as ``NUMBA_ENABLE_CUDASIM=1`` hands it numba's own simulator.  With a driver, or without numba, nothing changes."""
    if ctypes.util.find_library("cuda") is not None or importlib.util.find_spec("numba") is None:
        yield
        return
    import numba
    from . import cuda as gcuda
    missing = object()
    saved = {k: sys.modules.get(k, missing) for k in _NUMBA_CUDA_MODULES}
    attr = numba.__dict__.get("cuda", missing)
    sys.modules.update({"numba.cuda": gcuda, "numba.cuda.random": gcuda.random, "numba.cuda.types": gcuda.types,
                        "numba.cuda.cg": gcuda.cg})
    numba.cuda = gcuda
    guard = _NoOtherNumbaCuda()
    sys.meta_path.insert(0, guard)
    try:
        yield
    finally:
        sys.meta_path.remove(guard)
        for k, v in saved.items():
            if v is missing:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        if attr is missing:
            numba.__dict__.pop("cuda", None)
        else:
            numba.cuda = attr


class _NoOtherNumbaCuda:
    """While ``gpusim.cuda`` stands in for ``numba.cuda``, numba-cuda's other submodules are not importable (an
    ImportError, which a kernel file can catch, instead of numba-cuda's import redirector looping)."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("numba.cuda.") and name not in _NUMBA_CUDA_MODULES:
            raise ImportError(f"{name}: not available without a CUDA driver (gpusim.cuda stands in for numba.cuda)")
        return None


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


def _coerce(name: str, text: str, value: Any, want: type | None) -> Any:
    """Check a parsed ``-p`` value against the type the parameter takes (converting int->float, 2.0->2)."""
    def bad(word: str):
        return UsageError(f"-p {name}={text}: parameter {name} of launch() expects {word}, got {text!r}")
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


def cmd_run(a: argparse.Namespace) -> int:
    from .api import check_launch, check_outputs, simulate_launch
    from .config import load_gpu

    gpu = load_gpu(a.gpu)
    raw_params = _parse_params(a.param)
    mod = load_kernel_file(a.file)
    params = launch_params(mod.launch, raw_params, a.file)
    with _UserCode(a.file):
        launch = mod.launch(**params)
    try:
        check_launch(launch)
    except LaunchSpecError as e:
        raise LaunchSpecError(f"{a.file}:{_key_line(mod.launch, e.key)}: {e}", key=e.key) from e
    want_timeline = bool(a.html or a.trace)
    progress = None
    if not a.json and sys.stderr.isatty():
        from .progress import StepProgress
        progress = StepProgress("simulating")
    with _UserCode(a.file), compilers.use(a.compiler):
        reports = simulate_launch(launch, gpu, record_timeline=want_timeline, progress=progress)
        checks = check_outputs(launch) if "reference" in launch else []
    ok = all(c[2] for c in checks)
    if a.json:
        payload = {"file": a.file, "reports": [r.to_dict() for r in reports],
                   "outputs_match_reference": ok,
                   "checks": [{"output": str(k), "max_abs_error": e, "ok": o} for k, e, o in checks]}
        print(json.dumps(payload, indent=1, default=str))
    else:
        for r in reports:
            print(r)
            print()
        if len(reports) > 1:
            tot = sum(r.cycles for r in reports)
            print(f"{len(reports)} kernels, {tot:,.0f} cycles in all ({tot / gpu.chip.sm_clock_mhz:.2f} us)")
        for k, e, o in checks:
            print(f"output {k}: {'matches' if o else 'DOES NOT MATCH'} the numpy reference (max abs error {e:.3g})")
    if a.html:
        from .viz import write_html
        write_html(reports, a.html, gpu)
        print(f"wrote {a.html}", file=sys.stderr)
    if a.trace:
        from .viz import write_chrome_trace
        write_chrome_trace(reports, a.trace)
        print(f"wrote {a.trace}", file=sys.stderr)
    return 0 if ok else 1


def cmd_gpus(a: argparse.Namespace) -> int:
    from .config import load_gpu, preset_names, schema
    detail = load_gpu(a.verbose) if a.verbose else None     # a bad file fails before anything is printed
    for name in preset_names():
        g = load_gpu(name)
        print(f"{name:<9} {g.name:<26} {g.chip.sm_count:>4} SMs  {g.chip.sm_clock_mhz:>5.0f} MHz  "
              f"L2 {g.l2.size_bytes / 2**20:>4.0f} MB  DRAM {g.dram.kind} {g.dram.peak_bandwidth_gbps:>5.0f} GB/s")
    if detail is not None:
        g = detail
        S = schema()
        print(f"\n{a.verbose}: {g.name}")
        for k, src in sorted(g.sources.items()):
            sec, par = k.split(".", 1)
            unit = S[k].unit if S[k].unit not in ("text", "flag") else ""
            print(f"  {k:<40} {getattr(getattr(g, sec), par)!s:<30} {unit:<18} {src}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is a UsageError (one line, exit status 2) like every other mistake."""

    def error(self, message: str):
        sub = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""
        raise UsageError(f"{sub}{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpusim", description="Simulate GPU kernels on a modelled GPU.",
                epilog="exit status: 0 done (run: outputs match the reference), 1 run: an output differs from the "
                       "numpy reference, 2 a mistake in the input (one line 'gpusim: error: ...'), 3 an internal "
                       "error (a bug in gpusim; the traceback follows), 130 interrupted.")
    p.add_argument("--debug", action="store_true",
                   help="on an error, also print the Python traceback (or set GPUSIM_DEBUG=1)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="simulate the launch() of a kernel file and print its report")
    r.add_argument("file")
    r.add_argument("--gpu", default="h100", help="preset name (gpusim gpus) or a .toml config file")
    r.add_argument("-p", "--param", action="append", default=[], help="launch() parameter, key=value")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--html", metavar="FILE", help="write a self-contained HTML page with timeline and plots")
    r.add_argument("--trace", metavar="FILE", help="write the warp timeline as a Chrome trace (Perfetto)")
    r.add_argument("--compiler", choices=compilers.MODES, default=None,
                   help="registers / shared memory from the real compiler (Triton, numba-cuda + ptxas) or gpusim's "
                        "built-in estimate: auto (real when installed, default; or $GPUSIM_COMPILER), builtin, real")
    r.set_defaults(fn=cmd_run)
    g = sub.add_parser("gpus", help="list the GPU presets")
    g.add_argument("-v", "--verbose", metavar="PRESET",
                   help="show every parameter of PRESET (a name or a .toml file) with its unit and source")
    g.set_defaults(fn=cmd_gpus)
    try:
        from .validate.cli import add_parser as add_validate
        add_validate(sub)
    except ImportError:
        pass
    _add_debug(p)
    return p


def _add_debug(p: argparse.ArgumentParser) -> None:
    """``--debug`` after a subcommand too (``gpusim run --debug FILE``), without overriding one given before."""
    for act in p._actions:
        if isinstance(act, argparse._SubParsersAction):
            for sp in act.choices.values():
                if not any("--debug" in x.option_strings for x in sp._actions):
                    sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                    help=argparse.SUPPRESS)
                _add_debug(sp)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def main(argv: list[str] | None = None) -> int:
    """The ``gpusim`` command.  Exit status: see gpusim.errors (EXIT_*)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("GPUSIM_DEBUG", "").strip() not in ("", "0") or "--debug" in argv
    try:
        a = build_parser().parse_args(argv)
        debug = debug or getattr(a, "debug", False)
        return a.fn(a)
    except GpusimError as e:
        if debug:
            traceback.print_exc()
        print(f"gpusim: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("gpusim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:                            # gpusim ... | head
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as e:  # noqa: BLE001 -- anything else is a bug in gpusim
        print(f"gpusim: internal error ({_one_line(_exc_text(e))}): this is a bug in gpusim, not in your input; "
              f"please report it at {ISSUE_TRACKER} with the command line and the traceback below",
              file=sys.stderr)
        traceback.print_exc()
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
