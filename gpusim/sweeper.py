"""Parameter sweeps: one kernel file's ``launch()`` simulated over a product of parameters, GPU presets and
config overrides, written as a table (CSV, Parquet when pyarrow is installed) and plotted (plotly HTML).

    gpusim sweep matmul.toml [--jobs N] [--dask ADDRESS|local] [--out DIR]
    gpusim.sweep("matmul.toml", jobs=2)          # -> SweepResult (rows, columns, paths)

A spec (TOML; relative paths are relative to the spec file)::

    kernel = "../kernels/tl_matmul.py"
    gpu = ["h100", "h200"]                      # presets or .toml configs (default "h100")
    [params]                                    # launch() parameters: a value, or a list of values to sweep
    M = [256, 512, 1024]
    BM = [64, 128]
    num_warps = 4
    [config]                                    # config overrides "section.param" (gpusim gpus -v lists them)
    "l2.size_mb" = [25, 50]                     # a *_bytes parameter may be given in kb / mb / gb (KiB / MiB / GiB)
    [derived]                                   # more columns: arithmetic over the other columns
    gbps_min = "min_bytes / us / 1e3"
    [plot]                                      # or [[plot]] several times
    x = "M"
    y = "tflops"
    line = "config"                             # a column, a list of columns, or "config": every other swept column

Every point is the product of all the lists, ``gpu`` first, then ``[config]``, then ``[params]`` in the order
written; its index is its place in that product.  A point runs ``launch(**params)`` afresh (inputs are made by
the file, from its seed), simulates every kernel it launches on the preset with the overrides, and checks the
outputs against the file's numpy reference.  Its row holds the swept values and: ``status`` (ok | mismatch |
error), ``error`` (one line), ``cycles`` and ``us`` (all kernels of the launch), ``kernels``, ``dram_bytes_read``
/ ``dram_bytes_write``, ``occupancy_achieved_pct`` (time-weighted over the kernels), ``occupancy_limiter`` and
``top_stall`` (of the longest kernel), ``flops`` and ``min_bytes`` (from the launch dict, when it gives them)
and ``tflops`` = flops / time.  A failing point is recorded in its row and the sweep goes on.

Rows are appended to ``DIR/sweep.csv`` as points finish; a sweep started again over the same DIR skips the
points already there (by their swept values) and runs the rest.  At the end the CSV is rewritten in point order.
Points run in a process pool (``jobs``, default all cores) or on a Dask distributed cluster (``dask``: a
scheduler address, or "local" for a LocalCluster of ``jobs`` worker processes); a row is the same whichever
runs it (simulations are deterministic).  Host seconds are not in the table for that reason.
"""
from __future__ import annotations

import contextlib
import ast
import csv
import difflib
import io
import itertools
import math
import os
import re
import sys
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import GPUConfig, load_gpu, preset_names, schema
from .errors import ConfigError, GpusimError, UsageError

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


# ---- one point --------------------------------------------------------------------------------------------

_MODULES: dict[str, Any] = {}
_LOCK = threading.Lock()          # one simulation at a time per process (the front ends keep global state)


def _module(path: str, source: str | None):
    """The kernel file, imported once per process and text (an edited file is imported again).  A worker on
    another host that lacks the file (or has a different one) imports the text shipped with the task instead."""
    from .kernelfile import load_kernel_file
    try:
        on_disk = Path(path).read_text(encoding="utf-8")
    except OSError:
        on_disk = None
    text = source if source is not None else on_disk
    key = (path, hash(text))
    mod = _MODULES.get(key)
    if mod is not None:
        return mod
    here = path
    if text is not None and on_disk != text:
        import tempfile
        d = tempfile.mkdtemp(prefix="gpusim_sweep_")
        here = os.path.join(d, os.path.basename(path))
        Path(here).write_text(text, encoding="utf-8")
    mod = _MODULES[key] = load_kernel_file(here)
    return mod


def _forget_tuning(mod) -> None:
    """Autotuners cache the config chosen per key; a point on another GPU must tune afresh (as in its own
    process), so every point starts with empty caches."""
    from .triton._autotune import forget
    for v in list(vars(mod).values()):
        if (type(v).__module__ or "").startswith(("triton", "gpusim.triton")):
            forget(v)


def _one_line(text: str) -> str:
    return " ".join(p.strip() for p in str(text).splitlines() if p.strip())


def run_point(task: dict) -> dict:
    """Simulate one point (a task made by ``_tasks``) and return its row (without derived columns).  Never
    raises for a failing point: its error is in the row."""
    with _LOCK:
        return _run_point(task)


def _run_point(task: dict) -> dict:
    # simulated device addresses (first fit among the live allocations) as in a fresh process: a point's row is
    # then the same run serially, in a pool's worker or on Dask, whatever earlier points or the caller still hold
    # (the addresses hash to L2 slices and DRAM channels)
    from .api import fresh_addresses
    with fresh_addresses():
        return _simulate_point(task)


def _simulate_point(task: dict) -> dict:
    from .api import check_outputs, simulate_launch
    from .kernelfile import make_launch, user_error
    row: dict[str, Any] = {"point": task["index"], **task["values"]}
    row.update({c: None for c in RESULT_COLUMNS})
    path = task["kernel"]
    try:
        cfg = load_gpu(task["gpu"])
        if task["overrides"]:
            cfg = cfg.with_overrides(**task["overrides"])
        mod = _module(path, task.get("source"))
        _forget_tuning(mod)
        launch = make_launch(mod, task["params"], path)
        from .kernelfile import _UserCode
        with _UserCode(path):
            reports = simulate_launch(launch, cfg)
            checks = check_outputs(launch) if task["check"] and "reference" in launch else []
        _fill(row, reports, launch, cfg)
        bad = [(k, e) for k, e, ok in checks if not ok]
        row["status"] = "mismatch" if bad else "ok"
        if bad:
            row["error"] = "; ".join(f"output {k} differs from the numpy reference (max abs error {e:.3g})"
                                     for k, e in bad)
    except Exception as e:  # noqa: BLE001 -- a failing point is recorded, the sweep goes on
        if isinstance(e, GpusimError):
            msg = str(e)
        else:
            ue = user_error(e, path)
            msg = str(ue) if ue is not None else f"internal error (a bug in gpusim): {type(e).__name__}: {e}"
        row["status"] = "error"
        row["error"] = _one_line(msg)[:500]
    return row


def _fill(row: dict, reports: list, launch: dict, cfg: GPUConfig) -> None:
    cycles = sum(float(r.cycles) for r in reports)
    row["cycles"] = int(round(cycles))
    row["us"] = cycles / cfg.chip.sm_clock_mhz
    row["kernels"] = len(reports)
    row["dram_bytes_read"] = int(sum(r["dram_bytes_read"] for r in reports))
    row["dram_bytes_write"] = int(sum(r["dram_bytes_write"] for r in reports))
    w = sum(float(r.cycles) for r in reports) or 1.0
    row["occupancy_achieved_pct"] = sum(float(r["occupancy_achieved_pct"]) * float(r.cycles) for r in reports) / w
    longest = max(reports, key=lambda r: r.cycles)
    row["occupancy_limiter"] = longest["occupancy_limiter"]
    stalls = [(m.value, k[6:]) for k, m in longest.metrics.items()
              if k.startswith("stall_") and k != "stall_selected" and m.value > 0]
    row["top_stall"] = max(stalls)[1] if stalls else None
    row["flops"] = launch.get("flops")
    row["min_bytes"] = launch.get("min_bytes")
    if row["flops"] is not None and row["us"]:
        row["tflops"] = float(row["flops"]) / row["us"] * 1e-6


def _tasks(spec: Spec, todo: list[int], points: list[dict], ship_source: bool) -> list[dict]:
    source = Path(spec.kernel).read_text(encoding="utf-8") if ship_source else None
    out = []
    for i in todo:
        pt = points[i]
        out.append({"index": i, "values": pt, "kernel": spec.kernel, "gpu": pt["gpu"],
                    "overrides": overrides_of(spec.axes, pt),
                    "params": {a.name: pt[a.name] for a in spec.axes if a.kind == "param"},
                    "check": spec.check, "source": source})
    return out


# ---- the table --------------------------------------------------------------------------------------------

def _cell(v: Any) -> str:
    """A value as written in the CSV (floats in full: a row reads back as the same numbers)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return str(v)


def _parse_cell(s: str) -> Any:
    if s == "":
        return None
    if s in ("True", "False"):
        return s == "True"
    for t in (int, float):
        try:
            return t(s)
        except ValueError:
            pass
    return s


def _key(spec: Spec, row: dict) -> tuple:
    return tuple(_cell(row[n]) if not isinstance(row[n], str) else row[n] for n in spec.swept)


def _read_done(spec: Spec, csv_path: Path) -> dict[tuple, dict]:
    """Rows already in the CSV, by key.  A last line cut by an interruption is dropped (the file is truncated
    to its last whole line)."""
    if not csv_path.exists() or csv_path.stat().st_size == 0:
        return {}
    text = csv_path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
        csv_path.write_text(text, encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    header = next(csv.reader(io.StringIO(text)), [])
    need = ["point", *spec.swept, *RESULT_COLUMNS]
    if header[:len(need)] != need:
        raise UsageError(f"{csv_path}: its columns ({', '.join(header)}) are not this sweep's "
                         f"({', '.join(need)}): it was written by another spec; give another --out or remove it")
    done = {}
    for r in rows:
        if any(r.get(c) is None for c in need):
            continue                                 # a torn row
        done[tuple(r[n] for n in spec.swept)] = {c: _parse_cell(r[c]) for c in need}
    return done


def _write_csv(path: Path, columns: list[str], rows: list[dict]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in columns])
    os.replace(tmp, path)


def _write_parquet(path: Path, columns: list[str], rows: list[dict]) -> Path | None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    data = {}
    for c in columns:
        vals = [r.get(c) for r in rows]
        kinds = {type(v) for v in vals if v is not None}
        if kinds and not kinds <= {int, float} and not kinds == {bool}:
            vals = [None if v is None else str(v) for v in vals]     # a mixed column as text
        data[c] = vals
    pq.write_table(pa.table(data), path)
    return path


# ---- the plot ---------------------------------------------------------------------------------------------

def figures(result: "SweepResult") -> list:
    """The spec's plots as plotly figures: ``y`` against ``x``, one line per value of the ``line`` columns."""
    import plotly.graph_objects as go
    figs = []
    for p in result.spec.plots:
        fig = go.Figure()
        x, lines = p["x"], p["line"]
        for y in p["y"]:
            groups: dict[tuple, list[dict]] = {}
            for r in result.rows:
                groups.setdefault(tuple(r.get(c) for c in lines), []).append(r)
            for key, rs in groups.items():
                pts = sorted(((r[x], r.get(y)) for r in rs if r.get(x) is not None), key=lambda t: _sortable(t[0]))
                name = ", ".join(f"{c}={v}" for c, v in zip(lines, key)) or y
                if len(p["y"]) > 1:
                    name = f"{y}: {name}" if lines else y
                fig.add_trace(go.Scatter(x=[a for a, _ in pts], y=[b for _, b in pts], mode="lines+markers",
                                         name=name, connectgaps=False))
        ylab = p["y"][0] if len(p["y"]) == 1 else ", ".join(p["y"])
        fig.update_layout(title=p.get("title") or f"{ylab} vs {x} ({Path(result.spec.kernel).name})",
                          xaxis_title=x, yaxis_title=ylab, template="plotly_white",
                          xaxis_type="log" if p.get("x_log") else None, yaxis_type="log" if p.get("y_log") else None)
        figs.append(fig)
    return figs


def _sortable(v):
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def write_plots(result: "SweepResult", path: Path) -> Path | None:
    figs = figures(result)
    if not figs:
        return None
    import plotly.io as pio
    parts = [pio.to_html(f, full_html=False, include_plotlyjs=(i == 0), include_mathjax=False)
             for i, f in enumerate(figs)]
    title = f"gpusim sweep: {Path(result.spec.kernel).name}"
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
                    f"<h3>{title}</h3>{''.join(parts)}</body></html>", encoding="utf-8")
    return path


# ---- running ----------------------------------------------------------------------------------------------

@dataclass
class SweepResult:
    """What a sweep produced: its rows in point order (typed values), the files written, what it ran."""

    spec: Spec
    rows: list[dict[str, Any]]
    csv: Path
    parquet: Path | None = None
    html: Path | None = None
    ran: int = 0                  # points simulated by this call
    skipped: int = 0              # points already in the CSV (resumed)
    wall_s: float = 0.0
    errors: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        return self.spec.columns

    def summary(self) -> str:
        ok = sum(1 for r in self.rows if r["status"] == "ok")
        mis = sum(1 for r in self.rows if r["status"] == "mismatch")
        s = (f"{len(self.rows)} points: {ok} ok, {mis} mismatch, {self.errors} error; ran {self.ran}"
             f"{f', {self.skipped} already done (resumed)' if self.skipped else ''} in {self.wall_s:.1f} s")
        files = [str(p) for p in (self.csv, self.parquet, self.html) if p is not None]
        return s + "\nwrote " + ", ".join(files)


def _start_method() -> str:
    """How pool workers start: "fork" on Linux, so that a worker begins with gpusim and the kernel file already
    imported (a spawned worker imports them again: 0.5 to 1 CPU second each, as much as a hundred small points
    take); "spawn" elsewhere, or when GPUSIM_SWEEP_START=spawn.  Each point starts from the same state either
    way: tuning caches are emptied before it, and addresses depend only on what is alive (trace.first_fit)."""
    import multiprocessing as mp
    want = os.environ.get("GPUSIM_SWEEP_START", "").strip().lower()
    if want:
        if want not in mp.get_all_start_methods():
            raise UsageError(f"GPUSIM_SWEEP_START={want}: not a start method here "
                             f"({', '.join(mp.get_all_start_methods())})")
        return want
    return "fork" if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods() else "spawn"


def _local(tasks: list[dict], jobs: int):
    """Rows as points finish: in this process (jobs == 1) or in a pool of ``jobs`` worker processes."""
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield run_point(t)
        return
    import concurrent.futures as cf
    import multiprocessing as mp
    method = _start_method()
    if method == "fork":                       # the workers start with the engine and the kernel file imported
        from . import api  # noqa: F401
        _module(tasks[0]["kernel"], tasks[0].get("source"))
    ctx = mp.get_context(method)
    from concurrent.futures.process import BrokenProcessPool
    ex = cf.ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx)
    try:
        futs = {ex.submit(run_point, t): t["index"] for t in tasks}
        for f in cf.as_completed(futs):
            try:
                yield f.result()
            except BrokenProcessPool:
                raise GpusimError(f"a sweep worker process died (killed, or out of memory) while point "
                                  f"{futs[f]} or another ran; the rows that finished are in the CSV: run the "
                                  f"sweep again to resume (--jobs 1 runs the points in this process)") from None
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _dask(tasks: list[dict], address: str, jobs: int):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UsageError("--dask needs Dask distributed: pip install 'gpusim[dask]' (or 'dask[distributed]')") \
            from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    elif isinstance(address, str):
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise UsageError(f"--dask {address}: cannot reach the Dask scheduler: {e}") from None
    else:
        client = Client(address)                   # a cluster object (LocalCluster ...) given through the API
    try:
        futs = [client.submit(run_point, t, pure=False) for t in tasks]
        for _, row in as_completed(futs, with_results=True):
            yield row
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(spec: "str | os.PathLike | dict | Spec", jobs: int | None = None, dask: Any = None,
          out: str | None = None, progress: "bool | None" = None) -> SweepResult:
    """Run a sweep (see the module docstring).  ``jobs``: worker processes (default: all cores; 1 runs in this
    process); ``dask``: a Dask scheduler address, "local", or a cluster object; ``out``: the output folder
    (default the spec's ``out``, else ``<spec name>_sweep``); ``progress``: a bar over the points (default: on
    a terminal).  Returns a SweepResult; a point that fails is a row with status "error"."""
    t0 = time.perf_counter()
    sp = spec if isinstance(spec, Spec) else load_spec(spec, out)
    if out is not None and isinstance(spec, Spec):
        sp.out = out
    jobs = (os.cpu_count() or 1) if jobs is None else int(jobs)
    if jobs < 1:
        raise UsageError(f"--jobs {jobs}: give at least 1")
    out_dir = Path(sp.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "sweep.csv"
    points = sp.points()
    done = _read_done(sp, csv_path)
    keys = {_key(sp, {**pt}): i for i, pt in enumerate(points)}
    stray = [k for k in done if k not in keys]
    if stray:
        raise UsageError(f"{csv_path} holds {len(stray)} rows that are not points of this spec (first: "
                         f"{_label(dict(zip(sp.swept, stray[0])))}): give another --out or remove it")
    rows: dict[int, dict] = {}
    for k, r in done.items():
        i = keys[k]
        rows[i] = {**r, "point": i, **points[i]}
    todo = [i for i in range(len(points)) if i not in rows]
    derived = [(n, ex) for n, (_, ex, _) in sp.derived.items()]

    def finish(r: dict) -> dict:
        for n, ex in derived:
            r[n] = ex(r)
        return r
    cols = sp.columns
    new_file = not csv_path.exists() or csv_path.stat().st_size == 0
    if new_file:
        _write_csv(csv_path, cols, [])
    elif done:
        _write_csv(csv_path, cols, [finish(rows[i]) for i in sorted(rows)])   # derived columns of this spec
    tasks = _tasks(sp, todo, points, ship_source=dask is not None)
    bar = None
    gen = _dask(tasks, dask, jobs) if dask is not None else _local(tasks, jobs)
    try:
        with open(csv_path, "a", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            for r in gen:
                r = finish(r)
                rows[r["point"]] = r
                w.writerow([_cell(r.get(c)) for c in cols])
                f.flush()
                if bar is None and progress is not False:     # made after the pool's workers started (no
                    from tqdm import tqdm                       # monitor thread in the parent when they fork)
                    bar = tqdm(total=len(todo), desc="sweep", unit="point", file=sys.stderr, leave=False,
                               disable=None if progress is None else False)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    ordered = [rows[i] for i in sorted(rows)]
    _write_csv(csv_path, cols, ordered)
    res = SweepResult(sp, ordered, csv_path, ran=len(todo), skipped=len(points) - len(todo),
                      errors=sum(1 for r in ordered if r["status"] == "error"))
    res.parquet = _write_parquet(out_dir / "sweep.parquet", cols, ordered)
    res.html = write_plots(res, out_dir / "sweep.html")
    res.wall_s = time.perf_counter() - t0
    return res


def cmd_sweep(a) -> int:
    """``gpusim sweep SPEC [--jobs N] [--dask ADDRESS] [--out DIR]``: exit 0 when every point ran and matched
    its reference, 1 when some point failed or mismatched (the table says which)."""
    res = sweep(a.spec, jobs=a.jobs, dask=a.dask, out=a.out)
    print(format_table(res))
    print(res.summary())
    return 0 if all(r["status"] == "ok" for r in res.rows) else 1


def format_table(res: SweepResult, max_rows: int = 60) -> str:
    """The rows as a text table: swept columns, status, cycles, us, tflops (when known), derived columns."""
    cols = ["point", *[n for n in res.spec.swept], "status", "cycles", "us"]
    if any(r.get("tflops") is not None for r in res.rows):
        cols.append("tflops")
    cols += list(res.spec.derived)
    shown = res.rows if len(res.rows) <= max_rows else res.rows[:max_rows]

    def f(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:,.3f}" if abs(v) < 1e6 else f"{v:.4g}"
        if isinstance(v, int) and not isinstance(v, bool):
            return f"{v:,}"
        return str(v)
    cells = [[f(r.get(c)) for c in cols] for r in shown]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    if len(res.rows) > max_rows:
        lines.append(f"... {len(res.rows) - max_rows} more rows in {res.csv}")
    errs = [r for r in res.rows if r["status"] != "ok"]
    for r in errs[:10]:
        lines.append(f"point {r['point']} ({_label({n: r[n] for n in res.spec.swept})}): {r['status']}: {r['error']}")
    if len(errs) > 10:
        lines.append(f"... {len(errs) - 10} more failing points (status/error columns of {res.csv})")
    return "\n".join(lines)


def add_parser(sub) -> None:
    s = sub.add_parser("sweep", help="simulate a kernel file over a product of parameters, GPUs and config "
                                     "overrides; write a CSV table and a plot")
    s.add_argument("spec", help="the sweep spec (TOML: kernel, gpu, [params], [config], [derived], [plot])")
    s.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    s.add_argument("--dask", metavar="ADDRESS", help="run the points on a Dask distributed cluster (scheduler "
                                                     "address, or 'local' for a LocalCluster of --jobs workers)")
    s.add_argument("--out", metavar="DIR", help="output folder (default: the spec's out, else <spec>_sweep)")
    s.set_defaults(fn=cmd_sweep)


# ---- one kernel file on several GPUs, side by side (gpusim run FILE --gpu h100,h200,a100) ------------------

#: rows of the side-by-side table: (report key, label); then the top warp states
SIDE_BY_SIDE = [("cycles", "cycles"), ("time_us", "time (us)"), ("ipc", "IPC"), ("waves", "waves"),
                ("occupancy_theoretical_pct", "occupancy theoretical %"),
                ("occupancy_achieved_pct", "occupancy achieved %"), ("occupancy_limiter", "occupancy limiter"),
                ("ctas_per_sm", "CTAs per SM"), ("inst_executed", "warp instructions"),
                ("l1_hit_rate_pct", "L1 hit %"), ("l2_hit_rate_pct", "L2 hit %"),
                ("dram_bytes_read", "DRAM bytes read"), ("dram_bytes_write", "DRAM bytes written"),
                ("dram_bandwidth_gbps", "DRAM GB/s"), ("dram_bandwidth_pct_of_peak", "DRAM % of peak")]


def run_presets(file: str, params: dict, gpus: list[str]) -> list[tuple[GPUConfig, list, list]]:
    """Simulate a kernel file's launch(**params) on each GPU (a fresh launch() each): [(config, reports,
    output checks)]."""
    from .api import check_outputs, simulate_launch
    from .kernelfile import _UserCode, load_kernel_file, make_launch
    cfgs = [load_gpu(g) for g in gpus]
    mod = load_kernel_file(file)
    out = []
    for cfg in cfgs:
        _forget_tuning(mod)
        launch = make_launch(mod, params, file)
        with _UserCode(file):
            reports = simulate_launch(launch, cfg)
            checks = check_outputs(launch) if "reference" in launch else []
        out.append((cfg, reports, checks))
        del launch                     # its arrays freed before the next preset's are placed (trace.first_fit)
    return out


def side_by_side(results: list[tuple[GPUConfig, list, list]], names: list[str]) -> str:
    """One column per GPU: the time, occupancy, cache and DRAM counters of each kernel, then its top warp
    states (cycles per warp), then the total over the kernels when there are several."""
    from .metrics import _fmt
    n_k = len(results[0][1])
    lines = []
    width = max(len(n) for n in names) + 2
    col_w = max(14, width)

    def row(label, vals):
        lines.append(f"  {label:<32}" + "".join(f"{v:>{col_w}}" for v in vals))
    for k in range(n_k):
        reps = [res[1][k] for res in results]
        lines.append(f"kernel {reps[0].kernel}  grid {tuple(reps[0].context.get('grid', ()))} "
                     f"block {tuple(reps[0].context.get('block', ()))}")
        row("", names)
        for key, label in SIDE_BY_SIDE:
            if all(r.metrics.get(key) is None for r in reps):
                continue
            row(label, [_fmt(r.get(key)) if r.get(key) is not None else "-" for r in reps])
        totals: dict[str, float] = {}
        for r in reps:
            for key, m in r.metrics.items():
                if key.startswith("stall_") and key != "stall_selected":
                    totals[key] = totals.get(key, 0.0) + float(m.value)
        top = [k2 for k2, v in sorted(totals.items(), key=lambda t: -t[1]) if v > 0][:4]
        if top:
            lines.append("  warp states (cycles per warp)")
        for key in top:
            row(f"  {key[6:]}", [_fmt(r.get(key, 0.0)) for r in reps])
        lines.append("")
    if n_k > 1:
        row(f"all {n_k} kernels: cycles", [_fmt(sum(float(r.cycles) for r in res[1])) for res in results])
        row("all kernels: time (us)", [_fmt(sum(float(r.cycles) for r in res[1]) / res[0].chip.sm_clock_mhz)
                                       for res in results])
        lines.append("")
    for (cfg, _, checks), name in zip(results, names):
        for key, err, ok in checks:
            lines.append(f"{name}: output {key}: {'matches' if ok else 'DOES NOT MATCH'} the numpy reference "
                         f"(max abs error {err:.3g})")
    notes = []
    for (cfg, reps, _), name in zip(results, names):
        for r in reps:
            for n in r.notes:
                if n not in notes and not n.startswith("autotune rank"):
                    notes.append(f"{name}: {n}")
    if notes:
        lines.append("\nnotes:")
        lines.extend(f"  {n}" for n in notes)
    return "\n".join(lines).rstrip()


def cmd_run_presets(a) -> int:
    """``gpusim run FILE --gpu h100,h200,a100``: the presets side by side (``--json``: every report)."""
    from .kernelfile import _parse_params, launch_params, load_kernel_file
    names = [g.strip() for g in a.gpu.split(",")]
    if any(not n for n in names):
        raise UsageError(f"--gpu {a.gpu}: an empty name in the list (give e.g. --gpu h100,h200,a100)")
    dup = [n for i, n in enumerate(names) if n in names[:i]]
    if dup:
        raise UsageError(f"--gpu {a.gpu}: {dup[0]} is given twice")
    if a.html or a.trace:
        raise UsageError(f"--{'html' if a.html else 'trace'} shows one GPU: give one preset with --gpu (or run "
                         f"once per preset)")
    for n in names:
        load_gpu(n)                                    # a bad name fails before anything runs
    raw = _parse_params(a.param)
    params = launch_params(load_kernel_file(a.file).launch, raw, a.file)
    results = run_presets(a.file, params, names)
    ok = all(c[2] for _, _, checks in results for c in checks)
    if a.json:
        payload = {"file": a.file, "outputs_match_reference": ok,
                   "gpus": {n: {"reports": [r.to_dict() for r in reps],
                                "checks": [{"output": str(k), "max_abs_error": e, "ok": o} for k, e, o in checks]}
                            for n, (_, reps, checks) in zip(names, results)}}
        import json
        print(json.dumps(payload, indent=1, default=str))
    else:
        print(side_by_side(results, names))
    return 0 if ok else 1
