"""Pictures of a whole kernel: occupancy and memory bandwidth over time, the roofline, the metrics table.

Occupancy comes from the warps' lifetimes (``EngineResult.warps``) and the CTAs' spans, which every run records;
bandwidth from the memory system's traffic events, recorded with ``record_timeline=True`` (L2 traffic when a
slice takes a request, DRAM traffic when a burst completes); the roofline from the preset's peak rates and the
report's FLOP and byte counts.  Time axes are in SM cycles from the launch.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..metrics import SECTIONS

TEMPLATE = go.layout.Template(layout=dict(
    font=dict(family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", size=12),
    paper_bgcolor="white", plot_bgcolor="white",
    xaxis=dict(gridcolor="#e8e8e8", zerolinecolor="#cccccc", linecolor="#999999", showline=True),
    yaxis=dict(gridcolor="#e8e8e8", zerolinecolor="#cccccc", linecolor="#999999", showline=True),
    hoverlabel=dict(align="left"), margin=dict(l=70, r=30, t=70, b=50),
    legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0, yref="paper")))


def _esc(s: str) -> str:
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _gpu_of(report, gpu=None):
    from ..config import load_gpu
    if gpu is None:
        gpu = report.config
    return load_gpu(gpu) if gpu is not None else None


def _title(text: str, report, note: "str | list[str]" = "") -> dict:
    """A title with a subtitle: the kernel and GPU, then each note, wrapped to lines of ~150 characters."""
    import textwrap

    notes = [note] if isinstance(note, str) else list(note)
    lines = [f"{report.kernel} on {report.gpu}"]
    for n in notes:
        if n:
            lines.extend(textwrap.wrap(n, 150))
    if len(notes) == 1 and notes[0] and len(lines) == 2 and len(lines[0]) + len(lines[1]) < 140:
        lines = [lines[0] + " · " + lines[1]]
    sub = "<br>".join(f"<sup>{_esc(ln)}</sup>" for ln in lines)
    return dict(text=f"{text}<br>{sub}", x=0.0, xanchor="left", xref="container", y=1.0,
                yanchor="top", yref="container", pad=dict(t=26, l=8))


def fit_top_margin(fig, width_px: float = 1100.0) -> None:
    """Leave room above the plot for the title (two lines) and the horizontal legend above the plot."""
    chars = sum(len(t.name or "") + 6 for t in fig.data if t.showlegend is not False and t.name)
    rows = int(np.ceil(chars * 7.0 / width_px)) if chars else 0
    title = fig.layout.title.text or ""
    extra = max(0, title.count("<br>") - 1)
    fig.update_layout(margin=dict(t=84 + 22 * rows + 15 * extra))


def _empty(fig: go.Figure, message: str) -> go.Figure:
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=14, color="#666666"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


# ---- occupancy --------------------------------------------------------------------------------------------

def _step_integral_bins(t: np.ndarray, delta: np.ndarray, lo: float, hi: float, nbins: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Time-average over ``nbins`` equal bins of the step function that starts at 0 and jumps by ``delta``
    at times ``t``.  Returns (bin centres, averages)."""
    order = np.argsort(t, kind="stable")
    t, delta = t[order], delta[order]
    level = np.cumsum(delta)
    edges = np.linspace(lo, hi, nbins + 1)
    # integral of the step function up to each edge
    knots = np.concatenate(([lo], np.clip(t, lo, hi)))
    lv = np.concatenate(([0.0], level))
    seg = np.diff(np.concatenate((knots, [hi]))) * lv
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    pos = np.concatenate((knots, [hi]))

    def integral(x):
        i = np.clip(np.searchsorted(pos, x, side="right") - 1, 0, len(lv) - 1)
        return cum[i] + (x - pos[i]) * lv[i]
    avg = np.diff(integral(edges)) / np.diff(edges)
    return 0.5 * (edges[1:] + edges[:-1]), avg


def occupancy_series(report, max_points: int = 600) -> dict:
    """Resident warps per SM (chip average, % of the SM's maximum) and SMs with resident CTAs, over time."""
    res = report.engine
    cfg = report.config
    n_sm = cfg.chip.sm_count
    max_warps = cfg.sm.max_warps
    info = np.array([(v[4], v[5]) for v in res.warps.values()], float).reshape(-1, 2)
    spans = np.array([(s[1], s[2], s[3]) for s in res.cta_spans], float).reshape(-1, 3)
    end = float(res.cycles)
    t = np.concatenate((info[:, 0], info[:, 1]))
    d = np.concatenate((np.ones(len(info)), -np.ones(len(info))))
    # SMs busy: per SM, resident CTA count > 0
    sm, cs, ce = spans[:, 0], spans[:, 1], spans[:, 2]
    ev_sm = np.concatenate((sm, sm))
    ev_t = np.concatenate((cs, ce))
    ev_d = np.concatenate((np.ones(len(cs)), -np.ones(len(ce))))
    order = np.lexsort((ev_d, ev_t, ev_sm))     # per SM by time, retirements before dispatches
    ev_sm, ev_t, ev_d = ev_sm[order], ev_t[order], ev_d[order]
    cnt = np.zeros_like(ev_d)
    if len(ev_d):
        cs_all = np.cumsum(ev_d)
        start_of_sm = np.r_[True, ev_sm[1:] != ev_sm[:-1]]
        base = np.maximum.accumulate(np.where(start_of_sm, np.arange(len(ev_d)), 0))
        cnt = cs_all - np.r_[0, cs_all][base]
    prev = np.r_[0, cnt[:-1]]
    prev[np.r_[True, ev_sm[1:] != ev_sm[:-1]]] = 0
    busy_d = (cnt > 0).astype(float) - (prev > 0).astype(float)
    keep = busy_d != 0
    sm_t, sm_d = ev_t[keep], busy_d[keep]
    n_events = len(np.unique(t))
    if n_events <= max_points:
        order = np.argsort(t, kind="stable")
        tt = np.concatenate(([0.0], t[order], [end]))
        lv = np.concatenate(([0.0], np.cumsum(d[order]), [0.0]))
        warps_pct = 100.0 * lv / (n_sm * max_warps)
        o2 = np.argsort(sm_t, kind="stable")
        st = np.concatenate(([0.0], sm_t[o2], [end]))
        sv = np.concatenate(([0.0], np.cumsum(sm_d[o2]), [0.0]))
        return {"t": tt, "warps_pct": warps_pct, "t_sms": st, "sms": sv, "shape": "hv", "binned": False}
    x, avg = _step_integral_bins(t, d, 0.0, end, max_points)
    _, sms = _step_integral_bins(sm_t, sm_d, 0.0, end, max_points)
    return {"t": x, "warps_pct": 100.0 * avg / (n_sm * max_warps), "t_sms": x, "sms": sms, "shape": "linear",
            "binned": True, "bin_cycles": end / max_points}


def occupancy_figure(report) -> go.Figure:
    """Achieved occupancy over time (chip average of resident warps per SM) against the theoretical one, and
    the number of SMs holding CTAs (waves and their tail show as steps)."""
    fig = go.Figure(layout=dict(template=TEMPLATE, height=360))
    if report.engine is None or report.config is None:
        return _empty(fig, "no engine result in this report")
    s = occupancy_series(report)
    cfg = report.config
    note = f"averaged over bins of {s['bin_cycles']:,.0f} cycles" if s["binned"] else ""
    fig.update_layout(title=_title("Occupancy over time", report, note))
    fig.add_trace(go.Scatter(x=s["t"], y=s["warps_pct"], mode="lines", line=dict(shape=s["shape"], color="#1f77b4"),
                             name="achieved: resident warps per SM, chip average (% of max)",
                             hovertemplate="t %{x:,.0f} cycles<br>%{y:.1f} % of max warps<extra></extra>"))
    theo = report.get("occupancy_theoretical_pct")
    if theo is not None:
        fig.add_hline(y=theo, line=dict(dash="dash", color="#1f77b4", width=1),
                      annotation_text=f"theoretical {theo:.0f} % ({report.get('occupancy_limiter')})",
                      annotation_position="top right")
    fig.add_trace(go.Scatter(x=s["t_sms"], y=s["sms"], mode="lines", yaxis="y2",
                             line=dict(shape=s["shape"], color="#ff7f0e"), name="SMs holding CTAs",
                             hovertemplate="t %{x:,.0f} cycles<br>%{y:.1f} SMs busy<extra></extra>"))
    fig.update_layout(
        xaxis=dict(title=f"time (cycles at {cfg.chip.sm_clock_mhz:.0f} MHz)"),
        yaxis=dict(title="occupancy (% of max warps)", range=[0, 105]),
        yaxis2=dict(title="SMs holding CTAs", overlaying="y", side="right", range=[0, cfg.chip.sm_count * 1.05],
                    showgrid=False, tickmode="auto"),
        margin=dict(r=70))
    fit_top_margin(fig)
    return fig


# ---- bandwidth --------------------------------------------------------------------------------------------

_BW_KINDS = [("dram_read", "DRAM read", "#1f77b4", "solid"), ("dram_write", "DRAM write", "#1f77b4", "dot"),
             ("l2_read", "L2 read", "#2ca02c", "solid"), ("l2_write", "L2 write", "#2ca02c", "dot")]


def bandwidth_series(report, n_bins: int | None = None) -> dict:
    """DRAM and L2 traffic per time bin, in GB/s (1e9 bytes per second at the preset clock)."""
    res = report.engine
    cfg = report.config
    ev = res.bandwidth_events or []
    end = float(res.cycles)
    lo = float(res.launch_overhead_cycles)
    span = max(end - lo, 1.0)
    if n_bins is None:
        n_bins = int(np.clip(span / 50.0, 20, 200))
    width = span / n_bins
    edges = lo + width * np.arange(n_bins + 1)
    out = {"t": 0.5 * (edges[1:] + edges[:-1]), "bin_cycles": width, "gbps": {}, "bytes": {}}
    if not ev:
        return out
    t = np.fromiter((e[0] for e in ev), float, len(ev))
    kind = [e[1] for e in ev]
    nb = np.fromiter((e[2] for e in ev), float, len(ev))
    b = np.clip(((t - lo) / width).astype(np.int64), 0, n_bins - 1)
    kinds = sorted(set(kind))
    karr = np.array([kinds.index(k) for k in kind])
    per_cycle_to_gbps = cfg.chip.sm_clock_mhz * 1e6 / 1e9
    for i, k in enumerate(kinds):
        m = karr == i
        by = np.bincount(b[m], weights=nb[m], minlength=n_bins)
        out["bytes"][k] = float(nb[m].sum())
        out["gbps"][k] = by / width * per_cycle_to_gbps
    return out


def l2_peak_gbps(cfg) -> float:
    return cfg.l2.slices * cfg.l2.bytes_per_clk_per_slice * cfg.chip.sm_clock_mhz * 1e-3


def bandwidth_figure(report) -> go.Figure:
    """DRAM and L2 bandwidth over time (GB/s, binned), with the preset's peaks."""
    fig = go.Figure(layout=dict(template=TEMPLATE, height=360))
    if report.engine is None or report.config is None:
        return _empty(fig, "no engine result in this report")
    cfg = report.config
    s = bandwidth_series(report)
    fig.update_layout(title=_title("Memory bandwidth over time", report,
                                   f"bins of {s['bin_cycles']:,.0f} cycles"))
    if not s["gbps"]:
        return _empty(fig, "no traffic recorded: simulate with record_timeline=True "
                           "(gpusim run --html does)")
    known = {k for k, *_ in _BW_KINDS}
    styles = _BW_KINDS + [(k, k, "#7f7f7f", "dash") for k in sorted(s["gbps"]) if k not in known]
    for key, label, colour, dash in styles:
        y = s["gbps"].get(key)
        if y is None:
            continue
        fig.add_trace(go.Scatter(x=s["t"], y=y, mode="lines", name=label, line=dict(color=colour, dash=dash),
                                 hovertemplate=f"{label}<br>t %{{x:,.0f}} cycles<br>%{{y:,.0f}} GB/s<extra></extra>"))
    fig.add_hline(y=cfg.dram.peak_bandwidth_gbps, line=dict(color="#1f77b4", width=1, dash="dash"),
                  annotation_text=f"DRAM peak {cfg.dram.peak_bandwidth_gbps:,.0f} GB/s",
                  annotation_position="top left")
    l2 = l2_peak_gbps(cfg)
    fig.add_hline(y=l2, line=dict(color="#2ca02c", width=1, dash="dash"),
                  annotation_text=f"L2 peak {l2:,.0f} GB/s", annotation_position="top left")
    fig.update_layout(xaxis=dict(title=f"time (cycles at {cfg.chip.sm_clock_mhz:.0f} MHz)"),
                      yaxis=dict(title="GB/s", rangemode="tozero"))
    fit_top_margin(fig)
    return fig


# ---- roofline ---------------------------------------------------------------------------------------------

def roofline_ceilings(gpu) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Compute ceilings (name, FLOP/s) and bandwidth slopes (name, bytes/s) of a preset."""
    hz = gpu.chip.sm_clock_mhz * 1e6
    n = gpu.chip.sm_count
    lanes = gpu.sm.pipe_lanes_per_clk
    comp = []
    if "fp32" in lanes:
        comp.append(("FP32 (FMA)", 2 * lanes["fp32"] * n * hz))
    if "fp64" in lanes:
        comp.append(("FP64 (FMA)", 2 * lanes["fp64"] * n * hz))
    tens = gpu.tensor.flops_per_clk_per_sm
    for key in ("fp16", "tf32"):
        if key in tens:
            comp.append((f"tensor {key} (dense)", tens[key] * n * hz))
    bw = [("DRAM", gpu.dram.peak_bandwidth_gbps * 1e9), ("L2", l2_peak_gbps(gpu) * 1e9)]
    return comp, bw


def roofline_figure(report, gpu=None) -> go.Figure:
    """The preset's roofline (log-log): compute ceilings and DRAM/L2 slopes, with the kernel placed at its
    arithmetic intensity (FLOP per DRAM byte, and per L2 byte) and achieved FLOP/s."""
    cfg = _gpu_of(report, gpu)
    fig = go.Figure(layout=dict(template=TEMPLATE, height=460))
    fig.update_layout(title=_title(f"Roofline of the {cfg.name}", report))
    comp, bw = roofline_ceilings(cfg)
    xmin, xmax = 1e-2, 1e4
    top = max(p for _, p in comp)
    colours = {"DRAM": "#1f77b4", "L2": "#2ca02c"}
    for name, b in bw:
        xr = top / b
        xs = np.array([xmin, xr])
        fig.add_trace(go.Scatter(x=xs, y=b * xs, mode="lines", line=dict(color=colours.get(name, "#555")),
                                 name=f"{name} {b / 1e9:,.0f} GB/s",
                                 hovertemplate=f"{name} bandwidth {b / 1e9:,.0f} GB/s<br>"
                                               "%{x:.3g} FLOP/B → %{y:.3g} FLOP/s<extra></extra>"))
    bmax = max(b for _, b in bw)
    greys = ["#444444", "#8c564b", "#9467bd", "#d62728"]
    for i, (name, p) in enumerate(sorted(comp, key=lambda c: c[1])):
        fig.add_trace(go.Scatter(x=[p / bmax, xmax], y=[p, p], mode="lines",
                                 line=dict(color=greys[i % len(greys)], dash="dash" if "tensor" in name else "solid"),
                                 name=f"{name} {p / 1e12:,.1f} TFLOP/s",
                                 hovertemplate=f"{name} peak {p / 1e12:,.1f} TFLOP/s<extra></extra>"))
    flops = float(report.trace.flops) if report.trace is not None else float(report.context.get("flops") or 0)
    t_s = float(report.get("time_us", 0.0)) * 1e-6
    dram = float(report.get("dram_bytes_read", 0) or 0) + float(report.get("dram_bytes_write", 0) or 0)
    mem = report.context.get("engine_memory", {}) or {}
    l2_bytes = 32.0 * (mem.get("l2_rd_sectors", 0) + mem.get("l2_wr_sectors", 0) + mem.get("l2_atom_sectors", 0))
    if flops > 0 and t_s > 0:
        achieved = flops / t_s
        for label, nbytes, sym in (("kernel (FLOP per DRAM byte)", dram, "circle"),
                                   ("kernel (FLOP per L2 byte)", l2_bytes, "circle-open")):
            if nbytes <= 0:
                continue
            ai = flops / nbytes
            which = "DRAM" if "DRAM" in label else "L2"
            slope = dict(bw)[which] * ai
            fig.add_trace(go.Scatter(
                x=[ai], y=[achieved], mode="markers", marker=dict(size=13, color="#d62728", symbol=sym,
                                                                  line=dict(width=2, color="#d62728")),
                name=label,
                hovertemplate=(f"{_esc(report.kernel)}<br>{flops:,.0f} FLOP, {nbytes:,.0f} {which} bytes<br>"
                               f"intensity {ai:.3g} FLOP/B<br>achieved {achieved / 1e9:,.1f} GFLOP/s<br>"
                               f"= {100 * achieved / slope:.1f} % of the {which} slope, "
                               f"{100 * achieved / top:.2f} % of the top ceiling<extra></extra>")))
    else:
        why = "the trace records no floating-point operations (trace.flops = 0)" if flops <= 0 else "no time"
        fig.add_annotation(text=f"kernel not placed: {why}", x=0.02, y=0.98, xref="paper", yref="paper",
                           showarrow=False, xanchor="left", font=dict(color="#666666"))
    fig.update_layout(xaxis=dict(type="log", title="arithmetic intensity (FLOP / byte)", range=[-2, 4]),
                      yaxis=dict(type="log", title="FLOP/s", exponentformat="SI"))
    fit_top_margin(fig)
    return fig


# ---- metrics table ----------------------------------------------------------------------------------------

def format_value(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v != 0 and (abs(v) >= 1e7 or abs(v) < 1e-2):
            return f"{v:.3g}"
        return f"{v:,.2f}"
    return str(v)


def metrics_rows(report) -> list[tuple[str, str, str, str, str]]:
    """(section, gpusim name, value, unit, Nsight Compute name) in the report's section order."""
    rows = []
    seen = set()
    for title, keys in SECTIONS:
        for k in keys:
            m = report.metrics.get(k)
            if m is None:
                continue
            seen.add(k)
            rows.append((title, k, format_value(m.value), m.unit, m.ncu))
    stalls = [m for k, m in report.metrics.items() if k.startswith("stall_")]
    for m in sorted(stalls, key=lambda m: -float(m.value)):
        seen.add(m.key)
        if float(m.value) > 0:
            rows.append(("Warp states", m.key, format_value(m.value), m.unit, m.ncu))
    for k, m in report.metrics.items():
        if k not in seen:
            rows.append(("Other", k, format_value(m.value), m.unit, m.ncu))
    return rows


def metrics_table_figure(report) -> go.Figure:
    """The report's metrics as a table: gpusim name, value, unit and the Nsight Compute metric name."""
    rows = metrics_rows(report)
    cols = list(zip(*rows)) if rows else [[], [], [], [], []]
    sec = list(cols[0])
    shown = [s if i == 0 or sec[i - 1] != s else "" for i, s in enumerate(sec)]
    fig = go.Figure(go.Table(
        columnwidth=[90, 190, 110, 90, 430],
        header=dict(values=["section", "gpusim", "value", "unit", "Nsight Compute"], align="left",
                    fill_color="#f0f0f0", font=dict(size=12)),
        cells=dict(values=[shown, list(cols[1]), list(cols[2]), list(cols[3]), list(cols[4])],
                   align=["left", "left", "right", "left", "left"], height=22,
                   font=dict(size=11, family=["sans-serif", "monospace", "monospace", "sans-serif", "monospace"]))),
        layout=dict(template=TEMPLATE))
    fig.update_layout(title=_title("Metrics", report), height=110 + 23 * len(rows), margin=dict(l=10, r=10, b=10, t=70))
    return fig
