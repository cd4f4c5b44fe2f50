"""``triton.testing`` for the simulated GPU: ``do_bench`` returns simulated time, ``perf_report`` / ``Benchmark``
run a tutorial's benchmark section and plot it with plotly.

    import gpusim.triton as triton                  # instead of ``import triton``: nothing else in a tutorial changes
    ms = triton.testing.do_bench(lambda: matmul(a, b))           # simulated ms of the kernels matmul launches

``do_bench(fn)`` calls ``fn`` once, records every kernel it launches (as ``gpusim.session`` does) and returns the
sum of their simulated times in milliseconds on the current GPU (``triton.runtime.driver.active.set_gpu``, an
observing ``gpusim.session(gpu=...)``, else the H100 preset).  The simulation is deterministic, so there is one
"measurement": ``warmup`` and ``rep`` do not change it, ``quantiles`` are all that time, ``return_mode="all"``
is a list of one.  Like Triton's, which clears the L2 before every repetition, each kernel starts with cold
caches.  A call of ``fn`` that launches no gpusim kernel (``torch.matmul``: cuBLAS is not simulated) gives NaN:
missing, not a guess.

``Mark.run(print_data=True, save_path=DIR)`` prints the table as Triton does (``plot_name:`` and the
x columns and one column per line) and writes ``DIR/<plot_name>.csv``, ``DIR/<plot_name>.html`` (a plotly chart
in place of Triton's matplotlib png; plotly.js sits beside it once, as ``plotly.min.js``) and
``DIR/results.html``.  Lines a benchmark could not simulate are NaN and named in a note under the table.
Without ``save_path``, the environment variable ``GPUSIM_BENCH_SAVE_PATH`` names the folder (so a tutorial that
calls ``run(show_plots=True, print_data=True)`` can write its plot unchanged).  ``show_plots`` shows the chart
only inside a notebook (a terminal has no display).
"""
from __future__ import annotations

import math
import os
import statistics
import warnings
from typing import Any

from .. import trace as _trace
from ..errors import GpusimError
from . import runtime as _runtime

__all__ = ["do_bench", "do_bench_cudagraph", "Benchmark", "Mark", "perf_report"]

_RETURN_MODES = ("min", "max", "mean", "median", "all")


class _Stats:
    """What the do_bench calls of one benchmark point found (read by ``Mark``)."""

    def __init__(self):
        self.calls = 0
        self.not_simulated = 0
        self.kernels = 0


_STATS = _Stats()


class _Recorder:
    """A launch observer that collects the traces of the launches made while it is installed."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.traces: list = []

    def __call__(self, tr) -> None:
        self.traces.append(tr)


def simulated_ms(fn, gpu=None) -> tuple[float, int]:
    """(simulated milliseconds of the kernels ``fn()`` launches, number of kernels); NaN when none."""
    cfg = _runtime._current_gpu() if gpu is None else gpu
    bench = _trace.benchmarker
    if bench is None:
        raise GpusimError("do_bench: the timing engine is not installed (import gpusim)")
    rec = _Recorder(cfg)
    _trace.launch_observers.append(rec)
    try:
        fn()
    finally:
        _trace.launch_observers.remove(rec)
    if not rec.traces:
        return math.nan, 0
    cycles = sum(float(bench(tr, cfg)) for tr in rec.traces)
    return cycles / (cfg.chip.sm_clock_mhz * 1e3), len(rec.traces)


def _quantile(times: list[float], qs) -> list[float]:
    a = sorted(times)
    out = []
    for q in qs:
        if not 0 <= q <= 1:
            raise ValueError("Quantiles must be in the range [0, 1]")
        pos = q * (len(a) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        out.append((1 - (pos - lo)) * a[lo] + (pos - lo) * a[hi])
    return out


def _summarize(times: list[float], quantiles, return_mode: str):
    if quantiles is not None:
        r = _quantile(times, quantiles)
        return r[0] if len(r) == 1 else r
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.mean, "median": statistics.median}[return_mode](times)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Triton's ``do_bench``: the simulated time in ms of the kernels one call of ``fn`` launches (see the module
    docstring; NaN when ``fn`` launches no gpusim kernel)."""
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"do_bench: return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    for x in grad_to_none or ():
        x.grad = None
    ms, n = simulated_ms(fn)
    _STATS.calls += 1
    _STATS.kernels += n
    if n == 0:
        _STATS.not_simulated += 1
    return _summarize([ms], quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Triton's ``do_bench_cudagraph``: the same simulated time as ``do_bench`` (a graph removes only host launch
    gaps, which the simulation does not add)."""
    return do_bench(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles, return_mode=return_mode)


class Benchmark:
    """Triton's ``Benchmark``: ``x_names`` take each of ``x_vals`` (a scalar for all of them, or a tuple), and
    for each the function runs once per ``line_vals`` value of ``line_arg``, with ``args`` fixed."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args, xlabel="", ylabel="",
                 x_log=False, y_log=False, styles=None):
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.x_log = x_log
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.y_log = y_log
        self.styles = styles
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.plot_name = plot_name
        self.args = dict(args)
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark {plot_name!r}: {len(self.line_vals)} line_vals but {len(self.line_names)} "
                             f"line_names")


class Table:
    """One benchmark's results: ``columns`` (x names, then ``"<line name> (<ylabel>)"``) and ``rows``; the
    min/max of each line in ``low`` / ``high``; ``notes`` (lines not simulated)."""

    def __init__(self, bench: Benchmark):
        self.bench = bench
        self.y_columns = [f"{n} ({bench.ylabel})" for n in bench.line_names]
        self.columns = list(bench.x_names) + self.y_columns
        self.rows: list[list] = []
        self.low: list[list] = []
        self.high: list[list] = []
        self.missing: dict[str, int] = {}
        self.notes: list[str] = []

    def to_string(self) -> str:
        cells = [[_fmt(v) for v in r] for r in self.rows]
        idx = [str(i) for i in range(len(self.rows))]
        iw = max([len(s) for s in idx] + [0])
        widths = [max([len(c)] + [len(r[j]) for r in cells]) for j, c in enumerate(self.columns)]
        lines = [" " * iw + "".join("  " + c.rjust(w) for c, w in zip(self.columns, widths))]
        for i, r in zip(idx, cells):
            lines.append(i.ljust(iw) + "".join("  " + v.rjust(w) for v, w in zip(r, widths)))
        return "\n".join(lines)

    def to_records(self) -> list[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else f"{v:.6f}"
    return str(v)


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


class Mark:
    """What ``perf_report`` returns: ``.run(...)`` runs the benchmarks (Triton's arguments)."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _run(self, bench: Benchmark, save_path: str, show_plots: bool, print_data: bool, diff_col=False,
             save_precision=6, **kwargs) -> Table:
        t = Table(bench)
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"Expected {len(bench.x_names)} values, got {x}")
            x_args = dict(zip(bench.x_names, xs))
            mean, low, high = [], [], []
            for name, y in zip(bench.line_names, bench.line_vals):
                before = (_STATS.calls, _STATS.not_simulated)
                ret = self.fn(**x_args, **{bench.line_arg: y}, **bench.args, **kwargs)
                calls, missing = _STATS.calls - before[0], _STATS.not_simulated - before[1]
                try:
                    m, lo, hi = ret
                except (TypeError, ValueError):
                    m, lo, hi = ret, None, None
                if calls and missing:
                    t.missing[name] = t.missing.get(name, 0) + 1
                    m, lo, hi = math.nan, math.nan, math.nan
                mean.append(_num(m))
                low.append(_num(lo))
                high.append(_num(hi))
            t.rows.append(xs + mean)
            t.low.append(low)
            t.high.append(high)
        for name, n in t.missing.items():
            t.notes.append(f"{name}: not simulated at {n} of {len(bench.x_vals)} points (its benchmark launched no "
                           f"gpusim kernel: torch / cuBLAS calls are not simulated); shown as NaN")
        if diff_col and len(t.columns) == 2:
            t.columns.append("Diff")
            for r in t.rows:
                r.append(r[1] - r[0])
        if print_data:
            print(bench.plot_name + ":")
            print(t.to_string())
            for n in t.notes:
                print(f"note: {n}")
        if save_path:
            os.makedirs(save_path, exist_ok=True)
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w", encoding="utf-8") as f:
                f.write(",".join(t.columns) + "\n")
                for r in t.rows:
                    f.write(",".join("" if isinstance(v, float) and math.isnan(v) else
                                     f"{v:.{save_precision}f}" if isinstance(v, float) else str(v) for v in r) + "\n")
        if bench.plot_name and (save_path or show_plots):
            fig = figure(t)
            if save_path:
                import plotly.io as pio
                pio.write_html(fig, os.path.join(save_path, f"{bench.plot_name}.html"), include_plotlyjs="directory",
                               include_mathjax=False)
            if show_plots:
                _show(fig, save_path)
        return t

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        """Run every benchmark (see the module docstring).  ``return_df``: a pandas DataFrame per benchmark when
        pandas is installed, else the ``Table``."""
        single = isinstance(self.benchmarks, Benchmark)
        benches = [self.benchmarks] if single else list(self.benchmarks)
        save_path = save_path or os.environ.get("GPUSIM_BENCH_SAVE_PATH", "")
        tables: list[Table] = []
        try:
            for b in benches:
                tables.append(self._run(b, save_path, show_plots, print_data, **kwargs))
        finally:
            if save_path and tables:
                os.makedirs(save_path, exist_ok=True)
                with open(os.path.join(save_path, "results.html"), "w", encoding="utf-8") as f:
                    f.write("<!DOCTYPE html><html><head><meta charset='utf-8'><title>gpusim benchmarks</title>"
                            "</head><body>\n")
                    for b, t in zip(benches, tables):
                        f.write(f"<h3>{b.plot_name}</h3><iframe src=\"{b.plot_name}.html\" width=\"100%\" "
                                f"height=\"520\" frameborder=\"0\"></iframe>\n")
                        for n in t.notes:
                            f.write(f"<p>note: {n}</p>\n")
                    f.write("</body></html>\n")
        if return_df:
            dfs = [_dataframe(t) for t in tables]
            return dfs[0] if single else dfs
        return None


def _dataframe(t: Table):
    try:
        import pandas as pd
    except ImportError:
        return t
    return pd.DataFrame(t.rows, columns=t.columns)


def _show(fig, save_path: str) -> None:
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and "IPKernelApp" in getattr(shell, "config", {}):
        fig.show()
    elif not save_path:
        warnings.warn("show_plots: no display here; give save_path=DIR (or set GPUSIM_BENCH_SAVE_PATH) to write the "
                      "plot as HTML", RuntimeWarning, stacklevel=4)


def figure(t: Table):
    """A benchmark's table as a plotly figure: one line per provider against the first x name, a band from
    min to max where the benchmark gave them (Triton's chart, in plotly)."""
    import plotly.graph_objects as go
    b = t.bench
    fig = go.Figure()
    xs = [r[0] for r in t.rows]
    nx = len(b.x_names)
    for j, col in enumerate(t.y_columns):
        ys = [r[nx + j] for r in t.rows]
        color, dash = (b.styles[j] if b.styles and j < len(b.styles) else (None, "-"))
        dash = {"-": "solid", "--": "dash", ":": "dot", "-.": "dashdot"}.get(dash, "solid")
        lo, hi = [r[j] for r in t.low], [r[j] for r in t.high]
        if not all(math.isnan(v) for v in lo + hi) and any(a != c for a, c in zip(lo, hi)):
            fig.add_trace(go.Scatter(x=xs + xs[::-1], y=hi + lo[::-1], fill="toself", line={"width": 0},
                                     opacity=0.15, showlegend=False, hoverinfo="skip",
                                     fillcolor=color))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=col,
                                 line={"color": color, "dash": dash}))
    fig.update_layout(title=f"{b.plot_name} (gpusim, simulated)", xaxis_title=b.xlabel or b.x_names[0],
                      yaxis_title=b.ylabel, template="plotly_white",
                      xaxis_type="log" if b.x_log else "linear", yaxis_type="log" if b.y_log else "linear")
    return fig


def perf_report(benchmarks):
    """Triton's ``perf_report``: ``@perf_report(Benchmark(...))`` makes a ``Mark`` whose ``.run`` benchmarks."""
    return lambda fn: Mark(fn, benchmarks)


# ---- Triton's device-query helpers (matmul_perf_model.py and tuners read them), for the simulated GPU ------------

_NVSMI = {"clocks.max.sm": lambda c: c.chip.sm_clock_mhz, "clocks.current.sm": lambda c: c.chip.sm_clock_mhz,
          "clocks.max.memory": lambda c: c.dram.mem_clock_mhz, "clocks.current.memory": lambda c: c.dram.mem_clock_mhz,
          "memory.total": lambda c: c.dram.size_bytes >> 20 if hasattr(c.dram, "size_bytes") else 81559}


def nvsmi(attrs):
    """``nvidia-smi --query-gpu=...`` of the simulated GPU (the clocks in MHz)."""
    cfg = _runtime._current_gpu()
    out = []
    for a in attrs:
        if a not in _NVSMI:
            raise FileNotFoundError(f"nvidia-smi: gpusim answers {', '.join(sorted(_NVSMI))}, not {a!r}")
        out.append(int(_NVSMI[a](cfg)))
    return out


def get_dram_gbps(device=None):
    """DRAM bandwidth in GB/s, from the device properties (as Triton computes it)."""
    p = _runtime.driver.active.utils.get_device_properties(device)
    return p["mem_clock_rate"] * p["mem_bus_width"] * 2 / 1e6 / 8


def _ops_per_sub_core(dtype, table) -> int:
    name = str(getattr(dtype, "name", None) or dtype).replace("torch.", "")
    for names, ops in table:
        if name in names:
            return ops
    raise RuntimeError("dtype not supported")


def get_max_tensorcore_tflops(dtype, clock_rate, device=None):
    """Triton's formula: SMs x 4 sub-cores x ops per sub-core per clock (clock_rate in kHz)."""
    n = _runtime.driver.active.utils.get_device_properties(device)["multiprocessor_count"] * 4
    ops = _ops_per_sub_core(dtype, ((("float32", "int32", "fp32"), 256), (("float16", "bfloat16", "int16", "fp16",
                                                                           "bf16"), 512),
                                    (("int8", "fp8e4nv", "fp8e4b15", "fp8e5", "float8e4nv", "float8e5"), 1024)))
    return n * clock_rate * ops * 1e-9


def get_max_simd_tflops(dtype, clock_rate, device=None):
    n = _runtime.driver.active.utils.get_device_properties(device)["multiprocessor_count"] * 4
    ops = _ops_per_sub_core(dtype, ((("float32", "fp32"), 32), (("float16", "bfloat16", "fp16", "bf16"), 64)))
    return n * clock_rate * ops * 1e-9


def assert_close(x, y, atol=None, rtol=None, err_msg=''):
    """Triton's ``assert_close`` (numpy's, atol 1e-2 and rtol 0 by default; callables take the dtype)."""
    import numpy as np

    def arr(v):
        if hasattr(v, "detach"):
            v = v.detach().cpu()
            v = v.float() if str(v.dtype) == "torch.bfloat16" else v
            return v.numpy(), v.dtype
        a = np.asarray(v)
        return a, a.dtype
    x, dt = arr(x)
    y, _ = arr(y)
    atol = 1e-2 if atol is None else (atol(dt) if callable(atol) else atol)
    rtol = 0. if rtol is None else (rtol(dt) if callable(rtol) else rtol)
    if x.size > 1 or y.size > 1:
        np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, equal_nan=True)
        return
    if not np.allclose(x, y, atol=atol, rtol=rtol):
        raise AssertionError(f'{err_msg} {x} is not close to {y} (atol={atol}, rtol={rtol})')


def set_gpu_clock(ref_sm_clock=1350, ref_mem_clock=1215):
    """Triton's clock lock: nothing to lock on a simulated GPU; yields Triton's (tflops, gbps) figures."""
    import contextlib

    @contextlib.contextmanager
    def cm():
        yield 1e-6 * 2 * 108 * 4 * 256 * ref_sm_clock, 640 * 2 * ref_mem_clock * 1e-3
    return cm()


def cuda_memcheck(**target_kwargs):
    """Triton's decorator runs the test under cuda-memcheck; gpusim checks every access itself: the test as it is."""
    return lambda test_fn: test_fn
