"""A sweep's spec: the TOML (or dict) of ``gpusim sweep`` read into axes -- GPU presets, config overrides, launch
parameters -- derived columns and plots, each value checked where it is written (file, line, key).  The spec's
format is in ``gpusim/sweeper.py``'s docstring; the sweep itself (points run, rows, plots) lives there."""
from __future__ import annotations

import ast
import difflib
import itertools
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import load_gpu, preset_names, schema
from .errors import ConfigError, UsageError

# ---- the spec ---------------------------------------------------------------------------------------------

SPEC_KEYS = {
    "kernel": "the kernel file (its launch() is simulated at every point)",
    "gpu": "GPU presets or .toml configs: a name or a list",
    "params": "launch() parameters: [params] name = value or [values]",
    "config": "config overrides: [config] \"section.param\" = value or [values]",
    "derived": "derived columns: [derived] name = \"expression over other columns\"",
    "plot": "the plot: {x, y, line, title, x_log, y_log}, or [[plot]] several",
    "out": "the output folder (default: <spec name>_sweep in the working directory)",
    "check": "compare outputs with the file's numpy reference (default true)",
}
#: columns every row has after the swept ones
RESULT_COLUMNS = ("status", "error", "cycles", "us", "kernels", "dram_bytes_read", "dram_bytes_write",
                  "occupancy_achieved_pct", "occupancy_limiter", "top_stall", "flops", "min_bytes", "tflops")
_UNIT_SUFFIX = {"kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30}
_PLOT_KEYS = ("x", "y", "line", "title", "x_log", "y_log")
_FUNCS = {"min": min, "max": max, "abs": abs, "sqrt": math.sqrt, "log": math.log, "log2": math.log2,
          "log10": math.log10, "exp": math.exp, "ceil": math.ceil, "floor": math.floor}


@dataclass
class Axis:
    """One column of the spec: ``gpu``, a config override ``l2.size_mb`` or a launch() parameter."""

    name: str
    kind: str                      # "gpu" | "config" | "param"
    values: list
    where: str                     # "spec.toml:7"
    target: tuple = ()             # config: (section, parameter, scale): the value times scale is set


@dataclass
class Spec:
    """A parsed sweep spec (``load_spec``)."""

    kernel: str                                  # absolute path of the kernel file
    axes: list[Axis]
    derived: dict[str, tuple[str, Any, str]]     # name -> (expression, parsed, where)
    plots: list[dict]
    out: str
    source: str = "<spec>"
    check: bool = True

    @property
    def swept(self) -> list[str]:
        return [a.name for a in self.axes]

    def points(self) -> list[dict[str, Any]]:
        """Every point, in order: {column: value} over the axes."""
        names = self.swept
        return [dict(zip(names, vals)) for vals in itertools.product(*(a.values for a in self.axes))]

    @property
    def columns(self) -> list[str]:
        return ["point", *self.swept, *RESULT_COLUMNS, *self.derived]


def _cell(v: Any) -> str:
    """A value as written in the CSV (floats in full: a row reads back as the same numbers)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return str(v)


def _locate(path: str | None, key: str, section: str | None = None) -> str:
    """'spec.toml:LINE' of ``key`` (in ``[section]`` when given: the header may be [section] or a dotted
    [section.sub]); just the path when not found, '<spec>' for a dict spec."""
    if not path:
        return "<spec>"
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return path
    leaf = key.split(".")[-1]
    pats = [re.compile(r"^\s*[\"']?" + re.escape(k) + r"[\"']?\s*=") for k in dict.fromkeys([key, leaf])]
    cur = None
    header_line = 0
    for i, ln in enumerate(lines, 1):
        m = re.match(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"']+)\s*\]\]?", ln)
        if m:
            cur = m.group(1).replace('"', "").replace("'", "")
            if section and cur == f"{section}.{key}":
                header_line = header_line or i
            continue
        in_sec = (section is None and cur is None) or (section is not None and cur is not None and
                                                       (cur == section or cur.startswith(section + ".")))
        if in_sec and any(p.match(ln) for p in pats):
            return f"{path}:{i}"
    return f"{path}:{header_line}" if header_line else path


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def _as_list(v: Any) -> list:
    return list(v) if isinstance(v, list) else [v]


def _config_target(key: str, where: str) -> tuple[str, str, int]:
    """(section, parameter, scale) of a config override key: ``l2.size_bytes`` or ``l2.size_mb`` (x 2**20)."""
    S = schema()
    if key.count(".") != 1:
        raise ConfigError(f"{where}: config override {key!r} must be 'section.parameter' (e.g. \"l2.size_mb\"); "
                          f"gpusim gpus -v h100 lists them", key=key)
    sec, par = key.split(".")
    if key in S:
        return sec, par, 1
    stem, _, suf = par.rpartition("_")
    if suf in _UNIT_SUFFIX and f"{sec}.{stem}_bytes" in S:
        return sec, f"{stem}_bytes", _UNIT_SUFFIX[suf]
    sections = sorted({k.split(".")[0] for k in S})
    if sec not in sections:
        near = difflib.get_close_matches(sec, sections, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"{where}: config override {key!r}: unknown section {sec!r}{hint}; sections: "
                          f"{', '.join(sections)}", key=key)
    names = [k.split(".")[1] for k in S if k.startswith(sec + ".")]
    extra = [n[:-5] + s for n in names if n.endswith("_bytes") for s in _UNIT_SUFFIX]
    near = difflib.get_close_matches(par, names + extra, n=1)
    hint = f" (did you mean '{sec}.{near[0]}'?)" if near else ""
    raise ConfigError(f"{where}: config override {key!r}: [{sec}] has no parameter {par!r}{hint}; "
                      f"gpusim gpus -v h100 lists them", key=key)


def _scaled(v: Any, scale: int, where: str, key: str) -> Any:
    if scale == 1:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{where}: {key} = {v!r}: expected a number", key=key)
    b = v * scale
    if b != int(b):
        raise ConfigError(f"{where}: {key} = {v!r} is not a whole number of bytes", key=key)
    return int(b)


def overrides_of(axes: list[Axis], point: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``GPUConfig.with_overrides`` arguments of a point."""
    out: dict[str, dict[str, Any]] = {}
    for a in axes:
        if a.kind == "config":
            sec, par, scale = a.target
            out.setdefault(sec, {})[par] = _scaled(point[a.name], scale, a.where, a.name)
    return out


class _Expr:
    """A derived column's expression: arithmetic over column names and a few math functions."""

    _NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Call, ast.Add,
              ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)

    def __init__(self, text: str, where: str):
        try:
            tree = ast.parse(str(text).strip(), mode="eval")
        except SyntaxError as e:
            raise UsageError(f"{where}: derived column expression {text!r} is not valid: {e.msg}") from None
        self.names: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, self._NODES):
                raise UsageError(f"{where}: derived column expression {text!r}: only arithmetic (+ - * / // % **),"
                                 f" numbers, column names and {', '.join(_FUNCS)}() are allowed")
            if isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                    raise UsageError(f"{where}: derived column expression {text!r}: calls may only be to "
                                     f"{', '.join(_FUNCS)}")
            elif isinstance(node, ast.Name) and node.id not in _FUNCS:
                self.names.add(node.id)
            elif isinstance(node, ast.Constant) and (isinstance(node.value, bool) or
                                                     not isinstance(node.value, (int, float))):
                raise UsageError(f"{where}: derived column expression {text!r}: {node.value!r} is not a number")
        self.code = compile(tree, "<derived>", "eval")
        self.text = text

    def __call__(self, row: dict[str, Any]) -> Any:
        env = {}
        for n in self.names:
            v = row.get(n)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)):
                return None
            env[n] = v
        try:
            return eval(self.code, {"__builtins__": {}, **_FUNCS}, env)   # noqa: S307 -- checked AST above
        except (ArithmeticError, ValueError):
            return None


def load_spec(spec: "str | os.PathLike | dict", out: str | None = None) -> Spec:
    """Read and check a sweep spec (a TOML file or the same as a dict); every mistake is a one-line
    GpusimError naming the spec file and line.  The kernel file is imported to check the parameters."""
    from .kernelfile import check_params, load_kernel_file
    if isinstance(spec, dict):
        raw, path, base = spec, None, Path.cwd()
        source = "<spec>"
    else:
        path = os.fspath(spec)
        p = Path(path)
        if not p.is_file():
            raise UsageError(f"sweep spec {path!r} does not exist" if not p.exists() else f"{path}: not a file")
        try:
            with open(p, "rb") as f:
                raw = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise UsageError(f"{path}: not valid TOML: {e}") from None
        base, source = p.resolve().parent, path
    loc = lambda key, section=None: _locate(path, key, section)   # noqa: E731
    for k in raw:
        if k not in SPEC_KEYS:
            near = difflib.get_close_matches(k, list(SPEC_KEYS), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise UsageError(f"{loc(k)}: unknown key {k!r} in the sweep spec{hint}; keys: {', '.join(SPEC_KEYS)}")
    if "kernel" not in raw or not isinstance(raw["kernel"], str):
        raise UsageError(f"{source}: the sweep spec needs kernel = \"path/to/kernel.py\" (the file whose launch() "
                         f"is swept)")
    kpath = Path(raw["kernel"])
    kpath = kpath if kpath.is_absolute() else base / kpath
    if not kpath.exists():
        raise UsageError(f"{loc('kernel')}: kernel file {raw['kernel']!r} does not exist (looked at {kpath})")
    mod = load_kernel_file(str(kpath))
    axes: list[Axis] = []
    gpus = _as_list(raw.get("gpu", "h100"))
    if not gpus or not all(isinstance(g, str) for g in gpus):
        raise UsageError(f"{loc('gpu')}: gpu must be a preset name or a list of them ({', '.join(preset_names())})"
                         f" or .toml config paths")
    gpus = [g if g.lower() in preset_names() or not g.endswith(".toml") or Path(g).is_absolute()
            else str(base / g) for g in gpus]
    axes.append(Axis("gpu", "gpu", gpus, loc("gpu")))
    for sec in ("params", "config", "derived"):
        if sec in raw and not isinstance(raw[sec], dict):
            raise UsageError(f"{loc(sec)}: {sec} must be a table [{sec}] ({SPEC_KEYS[sec]})")
    for key, v in _flatten(raw.get("config", {})).items():
        where = loc(key, "config")
        target = _config_target(key, where)
        vals = _as_list(v)
        if not vals:
            raise UsageError(f"{where}: {key} = []: give at least one value")
        axes.append(Axis(key, "config", vals, where, target))
    params = raw.get("params", {})
    for key, v in params.items():
        if isinstance(v, dict):
            raise UsageError(f"{loc(key, 'params')}: [params] {key} must be a value or a list of values")
        vals = _as_list(v)
        if not vals:
            raise UsageError(f"{loc(key, 'params')}: {key} = []: give at least one value")
        axes.append(Axis(key, "param", vals, loc(key, "params")))
    seen: dict[str, str] = {}
    for a in axes:
        if a.name in seen or a.name in RESULT_COLUMNS or a.name == "point":
            raise UsageError(f"{a.where}: column {a.name!r} is given twice or is a result column's name")
        seen[a.name] = a.where
        cells = [_cell(v) for v in a.values]
        dup = next((v for i, v in enumerate(cells) if v in cells[:i]), None)
        if dup is not None:
            raise UsageError(f"{a.where}: {a.name} lists {dup} twice (each point is kept once, by its values)")
    # launch() parameters: each value checked against the signature (names, types), converted like -p values
    by_where = {a.name: a.where for a in axes if a.kind == "param"}
    for a in axes:
        if a.kind == "param":
            a.values = [check_params(mod.launch, {a.name: v}, lambda k: by_where[k])[a.name] for v in a.values]
    # every GPU with every combination of overrides must be a valid config (ranges, rules between parameters)
    cfg_axes = [a for a in axes if a.kind == "config"]
    for g in gpus:
        try:
            cfg = load_gpu(g)
        except ConfigError as e:
            raise ConfigError(f"{loc('gpu')}: {e}", key=e.key) from None
        for combo in itertools.product(*(a.values for a in cfg_axes)):
            point = dict(zip([a.name for a in cfg_axes], combo))
            try:
                cfg.with_overrides(**overrides_of(cfg_axes, point))
            except ConfigError as e:
                bad = next((a for a in cfg_axes if a.target[0] + "." + a.target[1] == e.key), cfg_axes[0])
                msg = str(e).replace("with_overrides(): ", "")
                raise ConfigError(f"{bad.where}: on {g} with {_label(point)}: {msg}", key=e.key) from None
    derived: dict[str, tuple[str, Any, str]] = {}
    known = ["point", *seen, *RESULT_COLUMNS]
    for name, text in raw.get("derived", {}).items():
        where = loc(name, "derived")
        if not isinstance(text, str):
            raise UsageError(f"{where}: derived column {name} must be an expression in quotes, got {text!r}")
        if name in known:
            raise UsageError(f"{where}: derived column {name!r} has the name of another column")
        ex = _Expr(text, where)
        for n in sorted(ex.names):
            if n not in known:
                near = difflib.get_close_matches(n, known, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise UsageError(f"{where}: derived column {name}: no column {n!r}{hint}; columns: {', '.join(known)}")
        derived[name] = (text, ex, where)
        known.append(name)
    plots = raw.get("plot", [])
    plots = [plots] if isinstance(plots, dict) else plots
    if not isinstance(plots, list) or not all(isinstance(p, dict) for p in plots):
        raise UsageError(f"{loc('plot')}: plot must be a table {{x = ..., y = ...}} or [[plot]] tables")
    swept_multi = [a.name for a in axes if len(a.values) > 1]
    checked = []
    for p in plots:
        where = loc("x", "plot")
        for k in p:
            if k not in _PLOT_KEYS:
                raise UsageError(f"{loc(k, 'plot')}: unknown plot key {k!r}; keys: {', '.join(_PLOT_KEYS)}")
        for k in ("x", "y"):
            if k not in p:
                raise UsageError(f"{where}: a plot needs {k} = \"column\"")
        line = p.get("line", "config")
        lines = _as_list(line)
        for c in [p["x"], *_as_list(p["y"]), *lines]:
            if c == "config" and c in lines:
                continue
            if c not in known:
                near = difflib.get_close_matches(str(c), known, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise UsageError(f"{where}: plot column {c!r} is not a column{hint}; columns: {', '.join(known)}")
        if lines == ["config"]:
            lines = [n for n in swept_multi if n != p["x"]]
        checked.append({**p, "line": lines, "y": _as_list(p["y"])})
    out_dir = out or raw.get("out")
    if out_dir is None:
        out_dir = f"{Path(source).stem if path else 'sweep'}_sweep"
    elif out is None and not os.path.isabs(out_dir):
        out_dir = str(base / out_dir)
    check = raw.get("check", True)
    if not isinstance(check, bool):
        raise UsageError(f"{loc('check')}: check must be true or false")
    return Spec(str(kpath), axes, derived, checked, out_dir, source, check)


def _label(point: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())
