"""One self-contained HTML page for a simulation: for each kernel launched, its warp timeline, occupancy and
bandwidth over time, its place on the roofline and its metrics table.

plotly.js is embedded once, inline, at the top of the first figure: the page needs no network to open (no CDN,
no MathJax).  Bars are budgeted across the page so that it stays a few megabytes (plotly.js itself is ~4.8 MB).
"""
from __future__ import annotations

import html
from pathlib import Path

import plotly.io as pio

from .charts import bandwidth_figure, format_value, metrics_table_figure, occupancy_figure, roofline_figure
from .timeline import DEFAULT_MAX_BARS, timeline_figure

PAGE_MAX_BARS = 40000          # timeline bars on one page, shared by its kernels
_PLOT_CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 0 24px 48px; color: #222; }
h1 { font-size: 1.5em; margin: 24px 0 4px; }
h2 { font-size: 1.25em; margin: 40px 0 6px; border-top: 2px solid #ddd; padding-top: 16px; }
p.meta, p.summary { margin: 4px 0; color: #444; }
p.note { margin: 6px 0; padding: 6px 10px; background: #fff8e1; border-left: 4px solid #f0b400; }
nav a { margin-right: 14px; }
.fig { margin: 12px 0 20px; }
code { font-size: 0.95em; }
table.explain { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.92em; }
table.explain th, table.explain td { border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: left; }
table.explain td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.explain tr.na td { color: #888; }
"""


def _fig_html(fig, div_id: str, include_js: bool) -> str:
    return pio.to_html(fig, full_html=False, include_plotlyjs=include_js, include_mathjax=False,
                       div_id=div_id, config=_PLOT_CONFIG, default_width="100%",
                       default_height=f"{int(fig.layout.height or 450)}px", validate=False)


def _summary(rep) -> str:
    ctx = rep.context
    parts = [f"grid {tuple(ctx.get('grid', ()))}", f"block {tuple(ctx.get('block', ()))}",
             f"{format_value(rep.get('cycles'))} cycles", f"{format_value(rep.get('time_us'))} µs"]
    for key, label in (("occupancy_achieved_pct", "achieved occupancy"),
                       ("dram_bandwidth_gbps", "DRAM"), ("gld_sectors_per_request", "sectors/request")):
        v = rep.get(key)
        if v is not None:
            unit = {"occupancy_achieved_pct": " %", "dram_bandwidth_gbps": " GB/s"}.get(key, "")
            parts.append(f"{label} {format_value(v)}{unit}")
    if ctx.get("frontend"):
        parts.append(f"front end {ctx['frontend']}")
    if ctx.get("source_file"):
        parts.append(f"source {ctx['source_file']}")
    return " · ".join(html.escape(p) for p in parts)


def explanation_html(expl) -> str:
    """A report's explanation (``Report.explain()``) as a small HTML section: the limiter, then one row per
    idealized replay ranked by saving (the kernel's causes, the chip's limits), then the causes that do not apply."""
    esc = html.escape
    rows = []
    for r in expl.records:
        if r["applicable"]:
            rows.append(f"<tr><td>{'kernel' if r['kind'] == 'kernel' else 'chip'}</td>"
                        f"<td>without {esc(r['cause'])}</td><td class=\"num\">{r['cycles_without']:,.0f}</td>"
                        f"<td class=\"num\">{r['saving_cycles']:,.0f}</td><td class=\"num\">{r['saving_pct']:.1f} %</td>"
                        f"<td>{esc(r['how'])}</td></tr>")
        else:
            rows.append(f'<tr class="na"><td>{esc(r["kind"])}</td><td>{esc(r["cause"])}</td>'
                        f'<td colspan="3">not applicable</td><td>{esc(r["how"])}</td></tr>')
    return (f"<h3>Why {expl.cycles:,.0f} cycles</h3>"
            f'<p class="summary">limiter: <b>{esc(expl.limiter)}</b> &mdash; {esc(expl.limiter_why)}. '
            "Each row re-simulates the recorded trace on a chip idealized in one way.</p>"
            '<table class="explain"><tr><th></th><th>idealization</th><th>cycles</th><th>saving (cycles)</th>'
            "<th>saving</th><th>what the replay changed</th></tr>" + "".join(rows) + "</table>")


def render_html(reports, gpu=None, title: str | None = None, max_sms: int | None = 8,
                max_bars: int | None = None) -> str:
    """The page as a string (see ``write_html``)."""
    from ..config import load_gpu

    if not isinstance(reports, (list, tuple)):
        reports = [reports]
    reports = list(reports)
    cfg = load_gpu(gpu) if gpu is not None else (reports[0].config if reports else None)
    names = ", ".join(dict.fromkeys(r.kernel for r in reports))
    title = title or f"gpusim: {names or 'no kernels'}" + (f" on {cfg.name}" if cfg is not None else "")
    if max_bars is None:
        max_bars = max(2000, min(DEFAULT_MAX_BARS, PAGE_MAX_BARS // max(1, len(reports))))
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{html.escape(title)}</h1>"]
    if cfg is not None:
        out.append(f'<p class="meta">GPU config: <b>{html.escape(cfg.name)}</b>'
                   f"{' (preset <code>' + html.escape(cfg.preset) + '</code>)' if cfg.preset else ''}"
                   f" · {cfg.chip.sm_count} SMs · {cfg.chip.sm_clock_mhz:.0f} MHz · "
                   f"{cfg.dram.kind} {cfg.dram.peak_bandwidth_gbps:,.0f} GB/s · "
                   f"L2 {cfg.l2.size_bytes / 2**20:.0f} MB</p>")
    if len(reports) > 1:
        tot = sum(float(r.cycles) for r in reports)
        out.append(f'<p class="meta">{len(reports)} kernels, {tot:,.0f} cycles in all</p>')
        out.append("<nav>" + "".join(f'<a href="#kernel-{i}">{i + 1}. {html.escape(r.kernel)}</a>'
                                     for i, r in enumerate(reports)) + "</nav>")
    if not reports:
        out.append("<p>No kernel was launched.</p>")
    first = True
    for i, rep in enumerate(reports):
        out.append(f'<section id="kernel-{i}"><h2>{i + 1}. {html.escape(rep.kernel)}</h2>')
        out.append(f'<p class="summary">{_summary(rep)}</p>')
        for note in getattr(rep, "notes", ()):
            out.append(f'<p class="note">note: {html.escape(note)}</p>')
        if getattr(rep, "explanation", None) is not None:
            out.append(explanation_html(rep.explanation))
        figs = []
        tl = timeline_figure(rep, max_sms=max_sms, max_bars=max_bars)
        meta = tl.layout.meta or {}
        for note in (meta.get("notes") or []):
            out.append(f'<p class="note">{html.escape(note)}</p>')
        figs.append(("timeline", tl))
        figs.append(("occupancy", occupancy_figure(rep)))
        figs.append(("bandwidth", bandwidth_figure(rep)))
        figs.append(("roofline", roofline_figure(rep, cfg if cfg is not None else rep.config)))
        figs.append(("metrics", metrics_table_figure(rep)))
        for name, fig in figs:
            out.append(f'<div class="fig">{_fig_html(fig, f"k{i}-{name}", first)}</div>')
            first = False
        out.append("</section>")
    out.append('<p class="meta">Written by gpusim. Time axes are SM cycles from the kernel launch; '
               "hover a bar of the timeline for its instructions and source lines.</p>")
    out.append("</body></html>")
    return "\n".join(out)


def write_html(reports, path, gpu=None, title: str | None = None, max_sms: int | None = 8,
               max_bars: int | None = None) -> None:
    """Write one self-contained HTML page with a section per report (kernel launch) to ``path``.

    ``gpu``: the config the reports ran on (a preset name or GPUConfig; the first report's by default).
    ``max_sms``: SMs shown per timeline (sampled evenly); ``max_bars``: bar budget per timeline (default:
    the page's budget of ``PAGE_MAX_BARS`` shared by the kernels, at most ``DEFAULT_MAX_BARS`` each).
    """
    Path(path).write_text(render_html(reports, gpu, title, max_sms, max_bars), encoding="utf-8")
