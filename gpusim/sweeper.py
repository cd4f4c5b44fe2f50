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
The spec is read by ``sweep_spec.load_spec``; ``gpusim run FILE --gpu a,b`` (presets side by side) is in
``side_by_side.py``.  Points run in a process pool (``jobs``, default all cores) or on a Dask distributed cluster (``dask``: a
scheduler address, or "local" for a LocalCluster of ``jobs`` worker processes); a row is the same whichever
runs it (simulations are deterministic).  Host seconds are not in the table for that reason.
"""
from __future__ import annotations

import csv
import io
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import GPUConfig, load_gpu
from .errors import GpusimError, UsageError
from .sweep_spec import (RESULT_COLUMNS, SPEC_KEYS, Axis, Spec, _cell, _label,  # noqa: F401 (the API)
                         load_spec, overrides_of)

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
