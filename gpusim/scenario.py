"""The lecture scenarios: thirteen GPU performance effects, each shown by simulating the validation-suite cases
that carry it and holding the result against the H100's committed records (``gpusim scenario``).

A :class:`Scenario` is a lesson (one line, then a few sentences), its variants and a headline ratio.  Each
:class:`Variant` *is* a case of ``gpusim.validate.suite.CASES`` (the ``scn_*`` groups and the older groups
``divergence``, ``strided``, ``bank_conflicts``, ...): at full size it runs that case's ``launch()`` parameters,
so the measured H100 time of the row is ``records.measured(case)["time_us"]``.  ``--small`` runs each variant
with its ``small`` parameters merged over the case's: the effect still shows in the simulation, in seconds, but
the hardware records are of the full size, so a small run shows no measured numbers.

The headline is ``metric(slow) / metric(fast)`` for two variants (e.g. stride 32 / stride 1 time): simulated,
measured, the relative error of the simulated ratio, and whether the simulation puts it on the same side of 1.

Layer: above ``api``, ``validate`` and ``viz`` (it imports them); only ``cli`` imports this module.
"""
from __future__ import annotations

import html
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import UsageError
from .validate import suite

# the scenarios themselves (re-exported: gpusim.scenario.SCENARIOS, Scenario, Variant ...)
from .scenario_catalog import BY_NAME, NA, SCENARIOS, Column, Headline, Scenario, Variant  # noqa: F401


def get(name: str) -> Scenario:
    """The scenario called ``name``; UsageError (one line, exit 2) naming the valid names otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UsageError(f"unknown scenario {name!r}: choose one of {', '.join(BY_NAME)} "
                         "(gpusim scenario --list)") from None


# ---- running ---------------------------------------------------------------------------------------------------

def derive(sim: dict, params: dict) -> dict:
    """Metrics the tables and figures show, computed from the combined ones (simulated or measured) in place:
    ``dram_mib`` (MiB read + written), ``read_per_useful`` (DRAM bytes read per useful byte: 4 B per word of a
    kernel with ``chunk_bytes``), ``gflops``/``tflops`` (``flops`` per second), ``flop_per_byte`` (per DRAM
    byte), ``conflicts_per_request`` (shared-load bank conflicts per conflict-free wavefront)."""
    rd, wr = sim.get("dram_bytes_read"), sim.get("dram_bytes_write")
    if rd is not None:
        sim["dram_mib"] = (rd + (wr or 0.0)) / 2**20
        if "chunk_bytes" in params:
            sim["read_per_useful"] = rd / (4.0 * params["n"])
    flops, t = sim.get("flops"), sim.get("time_us")
    if flops and t:
        sim["gflops"] = flops / t / 1e3
        sim["tflops"] = flops / t / 1e6
        if rd:
            sim["flop_per_byte"] = flops / (rd + (wr or 0.0))
    wf, bc = sim.get("shared_ld_wavefronts"), sim.get("shared_ld_bank_conflicts")
    if wf and bc is not None and wf > bc:
        sim["conflicts_per_request"] = bc / (wf - bc)
    return sim


def simulate_case(case: suite.Case, params: dict, gpu: Any = "h100") -> dict:
    """Simulate a suite case's kernel file with ``params``: its metrics combined over the kernels it launches
    (as the validation combines the hardware's), plus ``flops``, ``ctas_per_sm``, ``outputs_ok`` and
    ``wall_s`` (seconds this simulation took)."""
    from .api import check_outputs, simulate_launch
    from .config import load_gpu
    from .validate.compare import combine_reports

    cfg = load_gpu(gpu)
    t0 = time.perf_counter()
    launch = suite.load_case(case, params)
    reports = simulate_launch(launch, cfg, compiler=os.environ.get("GPUSIM_COMPILER", "").strip() or "builtin")
    out = combine_reports(reports)
    out["flops"] = float(sum(float(r.trace.flops) for r in reports if r.trace is not None))
    out["ctas_per_sm"] = float(min(r["ctas_per_sm"] for r in reports))
    out["outputs_ok"] = all(ok for _, _, ok in check_outputs(launch)) if "reference" in launch else True
    out["wall_s"] = time.perf_counter() - t0
    return out


def _measured(case: str, gpu_name: str) -> dict | None:
    """The case's measured metrics on ``gpu_name`` (``h100`` or another GPU with records), None without records."""
    from .validate import records
    if gpu_name not in records.records_gpus():
        return None
    old = os.environ.get(records.RECORDS_GPU_ENV)
    os.environ[records.RECORDS_GPU_ENV] = gpu_name
    try:
        m = records.measured(case)
    finally:
        if old is None:
            os.environ.pop(records.RECORDS_GPU_ENV, None)
        else:
            os.environ[records.RECORDS_GPU_ENV] = old
    return dict(m) if m.get("time_us") else None


def records_gpu_of(gpu: Any) -> str | None:
    """The GPU whose records hold a simulation on ``gpu`` to account: its preset name when records exist for it."""
    from .config import load_gpu
    from .validate import records
    preset = (load_gpu(gpu).preset or "").lower()
    return preset if preset in records.records_gpus() else None


def plan(scn: Scenario, small: bool = False) -> list[tuple[Variant, suite.Case, dict]]:
    """(variant, case, launch params) for each row a run simulates."""
    out = []
    for v in (scn.small_variants() if small else scn.variants):
        case = suite.case_by_name(v.case)
        out.append((v, case, {**case.params, **v.small} if small else dict(case.params)))
    return out


@dataclass
class Result:
    """A scenario run: one row per variant (``sim``: simulated metrics; ``hw``: measured, None at small size or
    without records) and the headline."""
    scenario: Scenario
    gpu: str                        # the simulated GPU's name
    records_gpu: str | None         # whose records the measured column holds (None: none apply)
    small: bool
    hw_name: str = "measured"       # the measured columns' heading: the preset's records GPU (H100), even at small size
    rows: list[dict] = field(default_factory=list)

    def row(self, label: str) -> dict:
        return next(r for r in self.rows if r["label"] == label)

    def headline(self) -> dict:
        """``simulated`` and ``measured`` ratios (measured None when not applicable), ``error_pct`` of the
        simulated one, ``direction_right``: both on the same side of 1 (simulated alone > 1 at small size)."""
        h = self.scenario.headline
        slow = next(r for r in self.rows if r["variant"] == h.slow)
        fast = next(r for r in self.rows if r["variant"] == h.fast)
        sim = slow["sim"][h.metric] / fast["sim"][h.metric]
        meas = None
        if slow["hw"] and fast["hw"] and slow["hw"].get(h.metric) and fast["hw"].get(h.metric):
            meas = slow["hw"][h.metric] / fast["hw"][h.metric]
        return {"text": h.text, "metric": h.metric, "slow": slow["label"], "fast": fast["label"],
                "simulated": sim, "measured": meas,
                "error_pct": None if meas is None else 100.0 * (sim - meas) / meas,
                "direction_right": (sim > 1.0) if meas is None else ((sim > 1.0) == (meas > 1.0))}

    def to_json(self) -> dict:
        s = self.scenario
        return {"scenario": s.name, "title": s.title, "lesson": s.lesson, "gpu": self.gpu,
                "size": "small" if self.small else "full", "measured_gpu": self.records_gpu,
                "rows": [{k: v for k, v in r.items()} for r in self.rows], "headline": self.headline()}


def run(name_or_scn: "str | Scenario", gpu: Any = "h100", small: bool = False,
        progress: Callable[[int, int, str], None] | None = None) -> Result:
    """Simulate every variant of a scenario (one after another, in this process) and pair each with its
    measured record (full size only).  ``progress(done, total, label)`` is called before each variant."""
    from .config import load_gpu
    scn = get(name_or_scn) if isinstance(name_or_scn, str) else name_or_scn
    cfg = load_gpu(gpu)
    has = records_gpu_of(cfg)
    rec = None if small else has
    res = Result(scn, cfg.name, rec, small, has.upper() if has else "measured")
    todo = plan(scn, small)
    for i, (v, case, params) in enumerate(todo):
        if progress:
            progress(i, len(todo), v.label)
        res.rows.append(make_row(scn, v, case, params, simulate_case(case, params, cfg), rec, small))
    if progress:
        progress(len(todo), len(todo), "")
    return res


def make_row(scn: Scenario, v: Variant, case: suite.Case, params: dict, sim: dict, rec: str | None,
             small: bool) -> dict:
    """A result row from a variant's simulated metrics (and its measured ones when ``rec`` names records)."""
    derive(sim, params)
    hw = None if small or rec is None else _measured(case.name, rec)
    if hw is not None:
        hw["flops"] = sim.get("flops", 0.0)         # the same program: the FLOPs it executes are the simulated ones
        derive(hw, params)
    return {"variant": v.label, "label": (v.small_label or v.label) if small else v.label, "case": case.name,
            "params": params, "sim": sim, "hw": hw}


# ---- text ------------------------------------------------------------------------------------------------------

def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return NA
    return format(v, spec)


def table_rows(res: Result) -> tuple[list[str], list[list[str]]]:
    """The table's header and rows (strings)."""
    hw_name = res.hw_name
    head = ["variant", "sim cycles", "sim µs", f"{hw_name} µs"]
    for c in res.scenario.columns:
        head.append(f"{c.head} sim" if c.hw else c.head)
        if c.hw:
            head.append(f"{c.head} {hw_name}")
    rows = []
    for r in res.rows:
        sim, hw = r["sim"], r["hw"] or {}
        line = [r["label"] + ("" if sim.get("outputs_ok", True) else " (OUTPUT MISMATCH)"),
                _fmt(sim.get("cycles"), ",.0f"), _fmt(sim.get("time_us"), ",.2f"), _fmt(hw.get("time_us"), ",.2f")]
        for c in res.scenario.columns:
            val = sim.get(c.key)
            line.append(_fmt(None if val is None else val / c.scale, c.fmt))
            if c.hw:
                val = hw.get(c.key)
                line.append(_fmt(None if val is None else val / c.scale, c.fmt))
        rows.append(line)
    return head, rows


def format_table(head: list[str], rows: list[list[str]]) -> str:
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = ["  ".join((h.ljust if i == 0 else h.rjust)(w[i]) for i, h in enumerate(head))]
    for r in rows:
        out.append("  ".join((c.ljust if i == 0 else c.rjust)(w[i]) for i, c in enumerate(r)))
    return "\n".join(out)


def headline_text(res: Result) -> str:
    h = res.headline()
    s = f"headline: {h['text']} ({h['slow']} / {h['fast']}): simulated {h['simulated']:.2f}x"
    if h["measured"] is not None:
        s += (f", measured {res.records_gpu.upper()} {h['measured']:.2f}x (error {h['error_pct']:+.1f}%, "
              f"direction {'right' if h['direction_right'] else 'WRONG'})")
    elif res.small:
        s += f" ({'the lesson' if h['direction_right'] else 'NOT the lesson'}'s direction)"
    else:
        s += f", measured {NA} (no records for {res.gpu})"
    return s


def format_text(res: Result) -> str:
    """The scenario as text: title and lesson, the table, the headline, what the measured column holds."""
    s = res.scenario
    lines = [f"{s.title} ({s.name}) on {res.gpu}" + (", small size" if res.small else ""), f"  {s.lesson}", ""]
    lines.append(format_table(*table_rows(res)))
    lines.append("")
    lines.append(headline_text(res))
    if res.small:
        lines.append("small size: the hardware records are of the full-size cases, so no measured column "
                     "(run without --small to compare)")
    return "\n".join(lines) + "\n"


def slow_note(scn: Scenario, small: bool) -> str | None:
    """A warning when a run includes variants the suite tags heavy (minutes each on a small machine)."""
    heavy = scn.heavy(small)
    if not heavy:
        return None
    return (f"note: {len(heavy)} of {len(scn.variants)} variants are heavy to simulate ({', '.join(heavy[:4])}"
            f"{', ...' if len(heavy) > 4 else ''}): this can take many minutes; --small runs in seconds")


# ---- figures and pages -----------------------------------------------------------------------------------------

_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def figure(res: Result):
    """The scenario's plotly figure: simulated solid, measured dashed/open (full size)."""
    import plotly.graph_objects as go

    from .viz.charts import TEMPLATE, fit_top_margin
    s = res.scenario
    fig = go.Figure(layout=dict(template=TEMPLATE, height=480))
    hw_name = (res.records_gpu or "").upper()
    if s.figure == "roofline":
        _roofline(fig, res)
    elif s.figure == "lines":
        series = list(dict.fromkeys(_variant(s, r).series for r in res.rows))
        for i, name in enumerate(series):
            rows = [r for r in res.rows if _variant(s, r).series == name]
            xs = [r["params"][s.x_param] / s.x_div if s.x_param else _variant(s, r).x for r in rows]
            col = _COLOURS[i % len(_COLOURS)]
            fig.add_trace(go.Scatter(x=xs, y=[r["sim"].get(s.y_key) for r in rows], mode="lines+markers",
                                     name=f"{name} (simulated)", line=dict(color=col),
                                     text=[r["label"] for r in rows]))
            if any(r["hw"] for r in rows):
                fig.add_trace(go.Scatter(x=xs, y=[(r["hw"] or {}).get(s.y_key) for r in rows],
                                         mode="lines+markers", name=f"{name} ({hw_name})",
                                         line=dict(color=col, dash="dash"), marker=dict(symbol="circle-open"),
                                         text=[r["label"] for r in rows]))
        fig.update_xaxes(title=s.x_title, type="log" if s.x_log else "linear")
        fig.update_yaxes(title=s.y_title, type="log" if s.y_log else "linear")
    else:
        labels = [r["label"] for r in res.rows]
        fig.add_trace(go.Bar(x=labels, y=[r["sim"].get(s.y_key) for r in res.rows], name="simulated",
                             marker_color=_COLOURS[0]))
        if any(r["hw"] for r in res.rows):
            fig.add_trace(go.Bar(x=labels, y=[(r["hw"] or {}).get(s.y_key) for r in res.rows], name=hw_name,
                                 marker_color=_COLOURS[1]))
        fig.update_layout(barmode="group")
        fig.update_yaxes(title=s.y_title)
    fig.update_layout(title=dict(text=f"{s.title} on {res.gpu}<br><sup>{html.escape(headline_text(res))}</sup>",
                                 x=0.0, xanchor="left"))
    fit_top_margin(fig)
    return fig


def _variant(s: Scenario, row: dict) -> Variant:
    return s.variant(row["variant"])


def _roofline(fig, res: Result) -> None:
    import plotly.graph_objects as go

    from .config import load_gpu
    from .viz.charts import roofline_ceilings
    cfg = load_gpu(_preset_for(res))
    comp, bw = roofline_ceilings(cfg)
    dram = dict(bw)["DRAM"]
    top = max(p for _, p in comp)
    xmin, xmax = 0.1, 1e4
    fig.add_trace(go.Scatter(x=[xmin, top / dram], y=[dram * xmin, top], mode="lines", name="DRAM slope",
                             line=dict(color="#1f77b4")))
    for i, (name, p) in enumerate(sorted(comp, key=lambda c: c[1])):
        fig.add_trace(go.Scatter(x=[p / dram, xmax], y=[p, p], mode="lines", name=f"{name} ceiling",
                                 line=dict(color=["#444", "#8c564b", "#9467bd", "#d62728"][i % 4],
                                           dash="dash" if "tensor" in name else "solid")))
    for which, sym in (("sim", "circle"), ("hw", "diamond-open")):
        pts = [(r["label"], r[which]) for r in res.rows if r[which] and r[which].get("flop_per_byte")]
        if pts:
            fig.add_trace(go.Scatter(x=[m["flop_per_byte"] for _, m in pts], y=[m["gflops"] * 1e9 for _, m in pts],
                                     mode="markers+text", text=[lbl for lbl, _ in pts] if which == "sim" else None,
                                     textposition="top left", marker=dict(size=11, symbol=sym),
                                     name="simulated" if which == "sim" else (res.records_gpu or "").upper()))
    fig.update_xaxes(title="arithmetic intensity (FLOP per DRAM byte)", type="log")
    fig.update_yaxes(title="FLOP/s", type="log", exponentformat="SI")


def _preset_for(res: Result) -> str:
    return res.records_gpu or "h100"


def render_page(res: Result) -> str:
    """One self-contained page (plotly.js inline): lesson, figure, table, headline."""
    from .viz.page import _CSS, _fig_html
    s = res.scenario
    esc = html.escape
    head, rows = table_rows(res)
    t = ['<table class="explain"><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        t.append("<tr>" + "".join(f'<td{"" if i == 0 else " class=num"}>{esc(c)}</td>' for i, c in enumerate(r))
                 + "</tr>")
    t.append("</table>")
    size = ("small size: the hardware records are of the full-size cases, so no measured column"
            if res.small else f"full size: every row is a validation-suite case; measured column from the "
                              f"{(res.records_gpu or 'no').upper()} records")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>gpusim scenario: {esc(s.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{esc(s.title)}</h1>", f"<p class=\"summary\"><b>{esc(s.lesson)}.</b></p>",
             f"<p>{esc(s.explain)}</p>", f'<p class="meta">simulated on {esc(res.gpu)} · {esc(size)}</p>',
             f'<div class="fig">{_fig_html(figure(res), "scenario-fig", True)}</div>',
             "".join(t), f'<p class="summary">{esc(headline_text(res))}</p>',
             f'<p class="meta">Command: <code>gpusim scenario {esc(s.name)}{" --small" if res.small else ""}</code>. '
             "Written by gpusim.</p>", "</body></html>"]
    return "\n".join(parts)


def render_index(results: list[Result]) -> str:
    from .viz.page import _CSS
    esc = html.escape
    rows = []
    for res in results:
        h = res.headline()
        meas = NA if h["measured"] is None else f"{h['measured']:.2f}x"
        err = NA if h["error_pct"] is None else f"{h['error_pct']:+.1f}%"
        rows.append(f'<tr><td><a href="{esc(res.scenario.name)}.html">{esc(res.scenario.title)}</a></td>'
                    f"<td>{esc(res.scenario.lesson)}</td><td>{esc(h['text'])}</td>"
                    f"<td class=num>{h['simulated']:.2f}x</td><td class=num>{meas}</td><td class=num>{err}</td></tr>")
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>gpusim lecture scenarios</title><style>{_CSS}</style></head><body>",
                      "<h1>gpusim lecture scenarios</h1>",
                      '<table class="explain"><tr><th>scenario</th><th>lesson</th><th>headline</th><th>simulated</th>'
                      "<th>measured</th><th>error</th></tr>", *rows, "</table></body></html>"])


# ---- command line ----------------------------------------------------------------------------------------------

def add_parser(sub):
    """Register ``scenario`` on the ``gpusim`` subcommand parsers."""
    p = sub.add_parser("scenario", help="the lecture scenarios: an effect simulated and held against the H100")
    p.add_argument("name", nargs="?", help="scenario name (--list shows them)")
    p.add_argument("--list", action="store_true", help="list the scenarios, one line each")
    p.add_argument("--all", action="store_true", help="run every scenario (with --html DIR: a page each + index)")
    p.add_argument("--gpu", default="h100", help="preset name or .toml config (measured column: that GPU's "
                                                 "records where they exist, else —)")
    p.add_argument("--html", metavar="PATH", help="write the page (with --all: a folder of pages and index.html)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--small", action="store_true", help="small sizes: seconds to simulate, no measured column")
    p.set_defaults(fn=cmd_scenario)
    return p


def cmd_scenario(a) -> int:
    if a.list:
        w = max(len(n) for n in BY_NAME)
        for s in SCENARIOS:
            print(f"{s.name:<{w}}  {s.lesson}")
        return 0
    if a.all and a.name:
        raise UsageError("scenario: give a NAME or --all, not both")
    if not a.all and not a.name:
        raise UsageError(f"scenario: give a NAME, --all or --list (scenarios: {', '.join(BY_NAME)})")
    todo = SCENARIOS if a.all else [get(a.name)]
    from .config import load_gpu
    cfg = load_gpu(a.gpu)                        # a bad --gpu fails before anything runs
    if a.all and a.html and Path(a.html).exists() and not Path(a.html).is_dir():
        raise UsageError(f"scenario --all --html: {a.html} exists and is not a folder")
    tty = sys.stderr.isatty()
    results = []
    for scn in todo:
        note = slow_note(scn, a.small)
        if note:
            print(note, file=sys.stderr if a.json else sys.stdout, flush=True)

        def progress(done, total, label, _n=scn.name):
            if tty and label:
                print(f"\r\033[K{_n}: simulating {label} ({done + 1}/{total})", end="", file=sys.stderr, flush=True)
            elif tty:
                print("\r\033[K", end="", file=sys.stderr, flush=True)

        res = run(scn, cfg, a.small, progress)
        results.append(res)
        if not a.json:
            print(format_text(res), flush=True)
        if a.html and not a.all:
            Path(a.html).write_text(render_page(res), encoding="utf-8")
            print(f"wrote {a.html}", file=sys.stderr)
    if a.json:
        data = [r.to_json() for r in results]
        print(json.dumps(data if a.all else data[0], indent=1, default=str))
    if a.all and a.html:
        d = Path(a.html)
        d.mkdir(parents=True, exist_ok=True)
        for res in results:
            (d / f"{res.scenario.name}.html").write_text(render_page(res), encoding="utf-8")
        (d / "index.html").write_text(render_index(results), encoding="utf-8")
        print(f"wrote {len(results)} pages and index.html to {d}", file=sys.stderr)
    return 0


__all__ = ["Scenario", "Variant", "Headline", "Column", "Result", "SCENARIOS", "BY_NAME", "get", "run", "plan",
           "simulate_case", "make_row", "format_text", "render_page", "render_index", "figure"]
