"""The README's "Accuracy" section, generated from a validation run: a table and a log-log SVG scatter.

``gpusim validate report --readme`` rewrites the text between ``<!-- accuracy:begin -->`` and
``<!-- accuracy:end -->`` in README.md and writes ``docs/accuracy.svg`` (plain SVG: no plotting library or
browser needed to make or view it).
"""
from __future__ import annotations

import html
import math
from pathlib import Path

from .compare import Row, pair_orders, summarize

BEGIN, END = "<!-- accuracy:begin -->", "<!-- accuracy:end -->"
ROOT = Path(__file__).resolve().parents[2]


def scatter_svg(rows: list[Row], key: str = "cycles", size: int = 520, gpu: str = "H100") -> str:
    """Predicted vs measured on log-log axes with y = x and the +-20% band, as an SVG document."""
    pts = [(r.measured[key], r.predicted[key], r.group, r.case) for r in rows
           if r.measured.get(key) and r.predicted.get(key)]
    lo = min(min(p[0], p[1]) for p in pts) / 1.5
    hi = max(max(p[0], p[1]) for p in pts) * 1.5
    m = 60
    span = math.log10(hi) - math.log10(lo)

    def xy(v: float) -> float:
        return m + (math.log10(v) - math.log10(lo)) / span * (size - 2 * m)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" font-family="sans-serif" '
           f'font-size="11"><rect width="100%" height="100%" fill="white"/>']
    for f, dash in ((1.0, ""), (1.2, "4,3"), (1 / 1.2, "4,3")):
        out.append(f'<line x1="{xy(lo):.1f}" y1="{size - xy(lo * f):.1f}" x2="{xy(hi):.1f}" '
                   f'y2="{size - xy(hi * f):.1f}" stroke="{"#444" if f == 1 else "#aaa"}" '
                   f'stroke-dasharray="{dash}"/>')
    for e in range(math.ceil(math.log10(lo)), math.floor(math.log10(hi)) + 1):
        v = 10 ** e
        out.append(f'<line x1="{xy(v):.1f}" y1="{size - m}" x2="{xy(v):.1f}" y2="{size - m + 5}" stroke="black"/>'
                   f'<text x="{xy(v):.1f}" y="{size - m + 18}" text-anchor="middle">1e{e}</text>'
                   f'<line x1="{m - 5}" y1="{size - xy(v):.1f}" x2="{m}" y2="{size - xy(v):.1f}" stroke="black"/>'
                   f'<text x="{m - 8}" y="{size - xy(v) + 4:.1f}" text-anchor="end">1e{e}</text>')
    out.append(f'<rect x="{m}" y="{m}" width="{size - 2 * m}" height="{size - 2 * m}" fill="none" stroke="black"/>')
    groups = sorted({p[2] for p in pts})
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39"]
    for meas, pred, g, case in pts:
        c = palette[groups.index(g) % len(palette)]
        out.append(f'<circle cx="{xy(meas):.1f}" cy="{size - xy(pred):.1f}" r="3.5" fill="{c}" fill-opacity="0.8">'
                   f'<title>{html.escape(case)}: measured {meas:,.0f}, predicted {pred:,.0f}</title></circle>')
    out.append(f'<text x="{size / 2}" y="{size - 15}" text-anchor="middle">measured {key} ({gpu}, Nsight Compute)</text>')
    out.append(f'<text x="15" y="{size / 2}" text-anchor="middle" transform="rotate(-90 15 {size / 2})">'
               f'predicted {key} (gpusim)</text>')
    out.append(f'<text x="{size / 2}" y="30" text-anchor="middle" font-size="13">gpusim vs {gpu}: {key}, '
               f'{len(pts)} cases (solid: equal, dashed: +-20%)</text></svg>')
    return "\n".join(out)


def populations(rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """The suite split by what the calibration saw: in-sample families, held-out families (kernels the project
    did not design for the model), and the lecture-scenario cases collected after the calibration."""
    from .suite import HELD_OUT_GROUPS
    return [("in-sample (calibrated on)", [r for r in rows if r.group not in HELD_OUT_GROUPS
                                           and not r.group.startswith("scn_")]),
            (f"held-out families ({', '.join(sorted(HELD_OUT_GROUPS))})",
             [r for r in rows if r.group in HELD_OUT_GROUPS]),
            ("lecture-scenario cases (collected after the calibration)",
             [r for r in rows if r.group.startswith("scn_")])]


def markdown(rows: list[Row], info: dict, note: str = "", holdout=None, gpu: str = "h100") -> str:
    keys = [("cycles", "cycles (`gpc__cycles_elapsed.max`)"),
            ("inst_executed", "warp instructions (`smsp__inst_executed.sum`)"),
            ("dram_bytes_read", "DRAM bytes read (`dram__bytes_read.sum`)"),
            ("dram_bytes_write", "DRAM bytes written (`dram__bytes_write.sum`)"),
            ("registers_per_thread", "registers per thread (`launch__registers_per_thread`)"),
            ("gld_sectors_per_request", "global load sectors/request"),
            ("occupancy_theoretical_pct", "theoretical occupancy"),
            ("occupancy_achieved_pct", "achieved occupancy")]
    lines = [f"Measured on one {info['gpu']} (driver {info['driver']}, CUDA {info['cuda']}, SM clock "
             f"{info['sm_clock_mhz']}), {info['date']}; {len(rows)} cases of `gpusim/validate/suite.py`, "
             "Nsight Compute counters under `--clock-control none` with cold caches. "
             "Regenerate with `gpusim validate report --skip-heavy -j 2 --readme"
             + ("" if gpu == "h100" else f" --gpu {gpu}") + "`"
             + (" (`--holdout-family` adds the held-out-family table)" if gpu == "h100" else "") + ".", ""]
    if note:
        lines += [note, ""]
    lines += ["| metric | cases | MAPE | within 10% | within 20% | worst case |", "|---|---|---|---|---|---|"]
    for k, label in keys:
        s = summarize(rows, k)
        if s:
            lines.append(f"| {label} | {s.n} | {s.mape_pct:.1f}% | {s.within[10]} | {s.within[20]} | "
                         f"{s.worst_case} ({s.max_abs_err_pct:+.0f}%) |".replace("(+", "("))
    lines += ["", "Cycles by population:", "", "| population | cases | cycles MAPE | within 20% | worst |",
              "|---|---|---|---|---|"]
    for label, rs in populations(rows):
        s = summarize(rs, "cycles")
        if s:
            lines.append(f"| {label} | {s.n} | {s.mape_pct:.1f}% | {s.within[20]} | {s.worst_case} "
                         f"({s.max_abs_err_pct:.0f}%) |")
    if holdout:
        lines += ["", "Held-out-family error (`--holdout-family`): each in-sample family in turn left out of the hand "
                  "fits of CALIBRATION.md (those parameters refitted on the other families, or set to their prior "
                  "when only that family informed them), then predicted:", "",
                  "| family | cases | cycles MAPE in-sample | held out | refitted without it |", "|---|---|---|---|---|"]
        for h in holdout:
            refit = ", ".join(f"`{k}` = {v:g}" for k, v in h.refit.items()) or "none (no fit used it)"
            lines.append(f"| {h.family} | {len(h.cases)} | {h.in_sample_mape:.1f}% | {h.held_out_mape:.1f}% | "
                         f"{refit} |")
        n = sum(len(h.cases) for h in holdout)
        lines.append(f"| all | {n} | {sum(h.in_sample_mape * len(h.cases) for h in holdout) / n:.1f}% | "
                     f"{sum(h.held_out_mape * len(h.cases) for h in holdout) / n:.1f}% | (case-weighted) |")
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.group, []).append(r)
    lines += ["", "Cycles by experiment:", "", "| group | cases | cycles MAPE | worst |", "|---|---|---|---|"]
    for g, rs in sorted(groups.items()):
        s = summarize(rs, "cycles")
        if s:
            lines.append(f"| {g} | {s.n} | {s.mape_pct:.1f}% | {s.worst_case} ({s.max_abs_err_pct:.0f}%) |")
    pairs = pair_orders(rows)
    ok = sum(p[2] == p[3] for p in pairs)
    lines += ["", f"Ordered pairs (slower, faster) the lectures care about: {ok} of {len(pairs)} predicted in the "
              "measured order.", "", f"![predicted vs measured cycles](docs/{_svg_name(gpu)})"]
    return "\n".join(lines)


def _svg_name(gpu: str) -> str:
    return "accuracy.svg" if gpu == "h100" else f"accuracy_{gpu}.svg"


def markers(gpu: str) -> tuple[str, str]:
    """The README markers of a GPU's section (the H100's is the plain one)."""
    return (BEGIN, END) if gpu == "h100" else (f"<!-- accuracy:{gpu}:begin -->", f"<!-- accuracy:{gpu}:end -->")


def update_readme(rows: list[Row], info: dict, note: str = "", readme: Path | None = None, holdout=None,
                  gpu: str = "h100", docs: Path | None = None) -> None:
    """Rewrite the README's section of ``gpu`` (the H100's: "Accuracy"; another GPU's: a subsection after it)."""
    readme = readme or ROOT / "README.md"
    text = readme.read_text()
    begin, end = markers(gpu)
    body = f"{begin}\n{markdown(rows, info, note, holdout, gpu)}\n{end}"
    if begin in text and end in text:
        a, b = text.index(begin), text.index(end) + len(end)
        text = text[:a] + body + text[b:]
    elif gpu != "h100" and END in text:
        b = text.index(END) + len(END)
        text = text[:b] + f"\n\n### {info['gpu']} (preset `{gpu}`, not refitted)\n\n" + body + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n## Accuracy\n\n" + body + "\n"
    readme.write_text(text)
    docs = docs or ROOT / "docs"
    docs.mkdir(exist_ok=True)
    (docs / _svg_name(gpu)).write_text(scatter_svg(rows, gpu=gpu.upper()))
