"""Pictures of the validation: predicted vs measured cycles (log-log), and the matmul size sweep.

``figures(rows)`` returns plotly figures; ``write_validation_html(rows, path)`` writes them with the error
table as one self-contained page (plotly.js inline, no network needed).
"""
from __future__ import annotations

import html
import math
import re

import plotly.graph_objects as go
import plotly.io as pio

from .compare import Row, pair_orders, summarize

GROUP_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]


def scatter_figure(rows: list[Row], key: str = "cycles") -> go.Figure:
    """Predicted vs measured on log-log axes, one colour per case group, with y = x and the +-20% band."""
    fig = go.Figure()
    groups = sorted({r.group for r in rows})
    lo, hi = math.inf, 0.0
    for gi, g in enumerate(groups):
        pts = [r for r in rows if r.group == g and r.predicted.get(key) and r.measured.get(key)]
        if not pts:
            continue
        xs = [r.measured[key] for r in pts]
        ys = [r.predicted[key] for r in pts]
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers", name=g, marker=dict(size=8, color=GROUP_COLORS[gi % len(GROUP_COLORS)]),
            text=[f"{r.case}<br>measured {r.measured[key]:,.0f}<br>predicted {r.predicted[key]:,.0f}"
                  f"<br>error {100 * r.error(key):+.1f}%" for r in pts],
            hoverinfo="text"))
    if hi > 0:
        line = [lo / 1.5, hi * 1.5]
        fig.add_trace(go.Scatter(x=line, y=line, mode="lines", name="predicted = measured",
                                 line=dict(color="black", width=1)))
        for f, name in ((1.2, "+20%"), (1 / 1.2, "-20%")):
            fig.add_trace(go.Scatter(x=line, y=[v * f for v in line], mode="lines", name=name,
                                     line=dict(color="gray", width=1, dash="dot"), showlegend=False))
    s = summarize(rows, key)
    title = f"{key}: predicted vs measured (H100)"
    if s:
        title += f" - MAPE {s.mape_pct:.1f}% over {s.n} cases"
    fig.update_layout(title=title, xaxis_type="log", yaxis_type="log", xaxis_title=f"measured {key}",
                      yaxis_title=f"predicted {key}", height=620, template="plotly_white")
    return fig


def matmul_sweep_figure(rows: list[Row], key: str = "cycles") -> go.Figure:
    """The Triton matmul over sizes, one line per tile config: measured (solid) and predicted (dashed)."""
    pat = re.compile(r"tl_matmul_(\d+)_(\w+)")
    series: dict[str, list[tuple[int, float, float]]] = {}
    for r in rows:
        m = pat.fullmatch(r.case)
        if m and key in r.measured and key in r.predicted:
            series.setdefault(m.group(2), []).append((int(m.group(1)), r.measured[key], r.predicted[key]))
    fig = go.Figure()
    for i, (cfg, pts) in enumerate(sorted(series.items())):
        pts.sort()
        c = GROUP_COLORS[i % len(GROUP_COLORS)]
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                 name=f"{cfg} measured", line=dict(color=c)))
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[2] for p in pts], mode="lines+markers",
                                 name=f"{cfg} predicted", line=dict(color=c, dash="dash")))
    fig.update_layout(title="Triton fp16 matmul (M = N = K = size): cycles, measured vs predicted",
                      xaxis_title="size", yaxis_title=key, yaxis_type="log", height=520, template="plotly_white")
    return fig


def figures(rows: list[Row]) -> list[go.Figure]:
    return [scatter_figure(rows), matmul_sweep_figure(rows)]


def error_table_html(rows: list[Row], keys: list[str]) -> str:
    head = "".join(f"<th>{html.escape(k)}<br>measured</th><th>pred.</th><th>err</th>" for k in keys)
    out = [f"<table><tr><th>case</th>{head}</tr>"]
    for r in rows:
        cells = []
        for k in keys:
            m, p, e = r.measured.get(k), r.predicted.get(k), r.error(k)
            if m is None or p is None or e is None:
                cells.append("<td></td><td></td><td></td>")
                continue
            bad = abs(e) > 0.2
            cells.append(f"<td>{m:,.4g}</td><td>{p:,.4g}</td><td class='{'bad' if bad else ''}'>"
                         f"{100 * e:+.1f}%</td>")
        out.append(f"<tr><td>{html.escape(r.case)}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    return "\n".join(out)


def write_validation_html(rows: list[Row], path: str, keys: list[str] | None = None) -> None:
    from .records import device_info
    keys = keys or ["cycles", "inst_executed", "dram_bytes_read", "registers_per_thread"]
    info = device_info()
    parts = []
    for i, fig in enumerate(figures(rows)):
        parts.append(pio.to_html(fig, include_plotlyjs=(i == 0), full_html=False))
    summary = []
    for k in keys:
        s = summarize(rows, k)
        if s:
            summary.append(f"<li>{html.escape(k)}: MAPE {s.mape_pct:.1f}% over {s.n} cases, worst "
                           f"{s.max_abs_err_pct:.1f}% ({html.escape(s.worst_case)}), log correlation {s.corr:.3f}</li>")
    pairs = pair_orders(rows)
    ok = sum(p[2] == p[3] for p in pairs)
    page = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>gpusim validation</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} td:first-child{{text-align:left}}
.bad{{background:#fdd}}</style></head><body>
<h1>gpusim vs {html.escape(str(info['gpu']))}</h1>
<p>Records: driver {html.escape(str(info['driver']))}, CUDA {html.escape(str(info['cuda']))}, collected
{html.escape(str(info['date']))}; Nsight Compute counters with <code>--clock-control none</code>, cold caches.</p>
<ul>{''.join(summary)}<li>ordered pairs: {ok}/{len(pairs)} in the measured order</li></ul>
{''.join(parts)}
<h2>Per case</h2>
{error_table_html(rows, keys)}
</body></html>"""
    with open(path, "w") as f:
        f.write(page)
