"""Pictures of a simulation (gpusim.viz): the timeline's bars against the engine's event log, the Chrome
trace against its format, the HTML page's self-containment, and the page rendered by headless Chromium."""
import json
import math
import re
import shutil
import subprocess
from collections import defaultdict

import numpy as np
import plotly.graph_objects as go
import pytest

from gpusim import viz
from gpusim.api import time_trace
from gpusim.config import load_gpu
from gpusim.timing import Engine
from gpusim.trace import KernelTrace, Op, OpKind, OpTable, Pipe, coalesce_global

from synthetic import GB, streaming_trace

H100 = load_gpu("h100")
EPS = 1e-9


def divergent_trace(n_ctas: int = 264, block: int = 128, divergent: bool = True) -> KernelTrace:
    """Each warp: index math, a branch whose two sides take 16 lanes each (or one side with all 32 lanes when
    not divergent; odd warps skip the other side), a load, an add and a store."""
    wpc = block // 32
    nw = n_ctas * wpc
    tid = np.arange(nw * 32)
    addr_in = (GB + tid * 4).reshape(nw, 32)
    addr_out = (2 * GB + tid * 4).reshape(nw, 32)
    ops = [Op(OpKind.ALU, Pipe.INT, 4, 1, label="IMAD"),
           Op(OpKind.ALU, Pipe.FP32, 6, 2, label="FMUL"),          # if lane % 2: ...
           Op(OpKind.ALU, Pipe.FP32, 6, 4, label="FADD"),          # else: ...
           Op(OpKind.LOAD, Pipe.LSU, 1, 5, mem=coalesce_global(addr_in, 4), label="LDG"),
           Op(OpKind.ALU, Pipe.FP32, 1, 5, deps=(3,), label="FADD"),
           Op(OpKind.STORE, Pipe.LSU, 1, 5, deps=(4,), mem=coalesce_global(addr_out, 4), label="STG")]
    act = np.full((len(ops), nw), 32, np.uint8)
    if divergent:
        act[1] = 16
        act[2] = 16
    else:
        act[2, 1::2] = 0                # odd warps skip the else-side: uniform branch, no masked lanes
        act[1, 1::2] = 32
    src = {1: "i = cuda.grid(1)", 2: "if i % 2:", 3: "    x = a[i] * 2", 4: "else: x = a[i] + 1",
           5: "out[i] = x + b[i]"}
    return KernelTrace("divergent" if divergent else "uniform", "cuda", (n_ctas, 1, 1), (block, 1, 1), 32, 0,
                       [OpTable(0, n_ctas, wpc, ops, act)], source_lines=src, flops=float(nw * 32 * 2))


def loop_trace(n_ctas: int = 264, block: int = 128, iters: int = 10) -> KernelTrace:
    """Each warp loops: a long run of FP32 math (several issue intervals), a load, a dependent add."""
    wpc = block // 32
    nw = n_ctas * wpc
    tid = np.arange(nw * 32)
    ops = []
    for it in range(iters):
        ops.append(Op(OpKind.ALU, Pipe.FP32, 300, 3, label="FFMA"))
        ops.append(Op(OpKind.LOAD, Pipe.LSU, 1, 4, mem=coalesce_global((GB * (1 + it) + tid * 4).reshape(nw, 32), 4),
                      label="LDG"))
        ops.append(Op(OpKind.ALU, Pipe.FP32, 1, 5, deps=(len(ops) - 1,), label="FADD"))
    return KernelTrace("loop", "cuda", (n_ctas, 1, 1), (block, 1, 1), 32, 0, [OpTable(0, n_ctas, wpc, ops, None)])


@pytest.fixture(scope="module")
def loop_report():
    return time_trace(loop_trace(), H100, record_timeline=True, progress=False)


@pytest.fixture(scope="module")
def stream_report():
    tr = streaming_trace(1 << 17)
    tr.flops = float(1 << 17)
    return time_trace(tr, H100, record_timeline=True, progress=False)


@pytest.fixture(scope="module")
def div_report():
    return time_trace(divergent_trace(), H100, record_timeline=True, progress=False)


@pytest.fixture(scope="module")
def uniform_report():
    return time_trace(divergent_trace(divergent=False), H100, record_timeline=True, progress=False)


def _log_by_sm(report, sms):
    count, dur = defaultdict(int), defaultdict(float)
    for sm, _sub, _uid, t0, t1, st, _f, _l in report.engine.timeline:
        if sm in sms:
            count[(sm, st)] += 1
            dur[(sm, st)] += t1 - t0
    return count, dur


# ---- the timeline's bars against the engine's event log ---------------------------------------------------

@pytest.mark.parametrize("fixture", ["stream_report", "div_report"])
def test_bars_agree_with_event_log_per_sampled_sm(fixture, request):
    rep = request.getfixturevalue(fixture)
    tb = viz.timeline_bars(rep, max_sms=3)
    assert tb.merged == "" and len(tb.sms) == 3
    count, dur = _log_by_sm(rep, set(tb.sms))
    bc, bd = defaultdict(int), defaultdict(float)
    for u, st, t0, t1 in zip(tb.uid, tb.state, tb.t0, tb.t1):
        key = (tb.places.sm[u], st)
        bc[key] += 1
        bd[key] += t1 - t0
    assert dict(bc) == dict(count)
    assert set(bd) == set(dur)
    for k in dur:
        assert bd[k] == pytest.approx(dur[k], rel=1e-12, abs=1e-9)
    # and the figure draws exactly these bars
    fig = viz.timeline_figure(rep, max_sms=3)
    assert sum(len(d.y) for d in fig.data) == len(tb.t0) == sum(count.values())


def test_bars_of_a_warp_do_not_overlap_and_lie_in_its_lifetime(stream_report, div_report):
    for rep in (stream_report, div_report):
        tb = viz.timeline_bars(rep, max_sms=4)
        per = defaultdict(list)
        for u, t0, t1 in zip(tb.uid, tb.t0, tb.t1):
            per[u].append((t0, t1))
        assert per
        for u, bars in per.items():
            _c, _w, _s, _wi, start, end = rep.engine.warps[u]
            bars.sort()
            assert bars[0][0] >= start - EPS and bars[-1][1] <= end + EPS
            for (a0, a1), (b0, b1) in zip(bars, bars[1:]):
                assert a1 >= a0 and b0 >= a1 - EPS
        # rows are shared by warps one after another, never at once
        per_row = defaultdict(list)
        for u, r in tb.row_of_uid.items():
            _c, _w, _s, _wi, start, end = rep.engine.warps[u]
            per_row[r].append((start, end))
        for spans in per_row.values():
            spans.sort()
            for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
                assert b0 >= a1 - EPS


def test_rows_are_grouped_by_sm_and_subpartition(stream_report):
    tb = viz.timeline_bars(stream_report, max_sms=2)
    labels = [lab for _, lab in tb.row_labels]
    assert labels == [f"SM {sm} · SP {p}" for sm in tb.sms for p in range(4)]
    firsts = [f for f, _ in tb.row_labels]
    for u, r in tb.row_of_uid.items():
        g = labels.index(f"SM {tb.places.sm[u]} · SP {tb.places.sub[u]}")
        hi = firsts[g + 1] if g + 1 < len(firsts) else tb.n_rows
        assert firsts[g] <= r < hi


def test_divergence_colour_only_for_divergent_trace(div_report, uniform_report):
    masked = viz.CATEGORIES.index(next(c for c in viz.CATEGORIES if c[0] == "masked"))
    tb = viz.timeline_bars(div_report, max_sms=2)
    assert masked in tb.cat
    i = tb.cat.index(masked)
    assert tb.n_masked[i] > 0 and tb.fewest[i] == 16 and "16/32 lanes" in tb.text[i]
    fig = viz.timeline_figure(div_report, max_sms=2)
    assert any(d.meta == "masked" for d in fig.data)
    tbu = viz.timeline_bars(uniform_report, max_sms=2)
    assert masked not in tbu.cat and set(tbu.n_masked) == {0}
    assert not any(d.meta == "masked" for d in viz.timeline_figure(uniform_report, max_sms=2).data)


def test_hover_names_instructions_and_source_lines(div_report):
    tb = viz.timeline_bars(div_report, max_sms=1)
    issuing = [t for t, st in zip(tb.text, tb.state) if st == 0]
    assert any("FMUL" in t and "line 2: if i % 2:" in t for t in issuing)
    waits = [t for t, st in zip(tb.text, tb.state) if st == 2]
    assert waits and all("LDG (line 5)" in t for t in waits)


def test_sampled_sms_are_spread_and_deterministic(stream_report):
    a = viz.sample_sms(stream_report, 5)
    assert a == viz.sample_sms(stream_report, 5)
    act = sorted({sm for _, sm, _, _ in stream_report.engine.cta_spans})
    assert a[0] == act[0] and a[-1] == act[-1] and len(a) == 5
    gaps = np.diff([act.index(s) for s in a])
    assert gaps.max() - gaps.min() <= 1
    fig = viz.timeline_figure(stream_report, max_sms=5)
    assert f"showing SMs {', '.join(map(str, a))} of 132" in fig.layout.title.text


@pytest.mark.parametrize("kind", ["contiguous", "gaps", "binned"])
def test_bar_budget_merges_and_keeps_time(loop_report, kind):
    tb = viz.timeline_bars(loop_report, max_sms=2)
    full = len(tb.t0)
    n_touching = len(viz.timeline_bars(loop_report, max_sms=2, max_bars=full - 1).t0)  # after lossless merges
    assert n_touching < full
    budget = {"contiguous": full - 1, "gaps": n_touching - 1, "binned": 150}[kind]
    m = viz.timeline_bars(loop_report, max_sms=2, max_bars=budget)
    assert m.merged == kind and len(m.t0) <= budget < full
    assert any("merged" in n or "bins" in n for n in m.notes)
    count, dur = _log_by_sm(loop_report, set(m.sms))
    if kind == "binned":
        assert sum(m.busy) == pytest.approx(sum(dur.values()), rel=1e-6)
        return
    # merged bars stand for exactly the logged time of their category
    per_cat = defaultdict(float)
    for c, b in zip(m.cat, m.busy):
        per_cat[c] += b
    ref = defaultdict(float)
    for c, b in zip(tb.cat, tb.busy):
        ref[c] += b
    assert per_cat.keys() == ref.keys()
    for c in ref:
        assert per_cat[c] == pytest.approx(ref[c], rel=1e-9)
    assert sum(m.n_records) == full
    per = defaultdict(list)
    for u, t0, t1 in zip(m.uid, m.t0, m.t1):
        per[u].append((t0, t1))
    for bars in per.values():
        bars.sort()
        for (a0, a1), (b0, b1) in zip(bars, bars[1:]):
            assert b0 >= a1 - EPS


# ---- the other figures --------------------------------------------------------------------------------------

def test_figures_are_plotly_figures_with_data(stream_report):
    figs = [viz.timeline_figure(stream_report), viz.occupancy_figure(stream_report),
            viz.bandwidth_figure(stream_report), viz.roofline_figure(stream_report, H100),
            viz.metrics_table_figure(stream_report)]
    for f in figs:
        assert isinstance(f, go.Figure) and len(f.data) > 0


def test_bandwidth_bins_add_up_to_the_traffic(stream_report):
    s = viz.bandwidth_series(stream_report)
    mem = stream_report.engine.memory
    to_bytes = s["bin_cycles"] / (H100.chip.sm_clock_mhz * 1e-3)      # GB/s * bin -> bytes
    assert float(np.sum(s["gbps"]["dram_read"]) * to_bytes) == pytest.approx(mem["dram_rd_bytes"], rel=1e-9)
    assert float(np.sum(s["gbps"]["l2_read"]) * to_bytes) == pytest.approx(32 * mem["l2_rd_sectors"], rel=1e-9)


def test_occupancy_series_integrates_to_warp_lifetimes(stream_report):
    res = stream_report.engine
    lifetimes = sum(w[5] - w[4] for w in res.warps.values())          # warp-cycles resident, whole chip
    s = viz.occupancy_series(stream_report, max_points=10 ** 9)        # exact steps
    area = float(np.sum(np.diff(s["t"]) * s["warps_pct"][:-1])) / 100 * 132 * 64
    assert not s["binned"] and area == pytest.approx(lifetimes, rel=1e-9)
    b = viz.occupancy_series(stream_report, max_points=50)             # bin averages keep the integral
    assert b["binned"] and float(np.mean(b["warps_pct"])) * res.cycles / 100 * 132 * 64 == \
        pytest.approx(lifetimes, rel=1e-9)
    # the engine's own integral (sampled at scheduler times) agrees to within a percent
    assert area == pytest.approx(res.sm_warp_cycles, rel=1e-2)
    assert max(s["sms"]) == len({sm for _, sm, _, _ in res.cta_spans}) and s["sms"][-1] == 0


def test_roofline_ceilings_and_kernel_point(stream_report):
    comp, bw = viz.roofline_ceilings(H100)
    c = dict(comp)
    assert c["FP32 (FMA)"] == pytest.approx(2 * 128 * 132 * 1.98e9)
    assert c["FP64 (FMA)"] == pytest.approx(2 * 64 * 132 * 1.98e9)
    assert dict(bw)["DRAM"] == pytest.approx(3352e9)
    fig = viz.roofline_figure(stream_report, H100)
    pt = next(d for d in fig.data if d.name == "kernel (FLOP per DRAM byte)")
    dram = stream_report["dram_bytes_read"] + stream_report["dram_bytes_write"]
    assert pt.x[0] == pytest.approx((1 << 17) / dram)
    assert pt.y[0] == pytest.approx((1 << 17) / (stream_report["time_us"] * 1e-6))


def test_metrics_table_has_nsight_names(stream_report):
    fig = viz.metrics_table_figure(stream_report)
    cells = fig.data[0].cells.values
    names, ncu = list(cells[1]), list(cells[4])
    assert ncu[names.index("cycles")] == "gpc__cycles_elapsed.max"
    assert ncu[names.index("dram_bytes_read")] == "dram__bytes_read.sum"


def test_figures_without_timeline_say_so():
    rep = time_trace(streaming_trace(1 << 12), H100, progress=False)
    fig = viz.timeline_figure(rep)
    assert "record_timeline=True" in fig.layout.annotations[0].text
    assert "record_timeline=True" in viz.bandwidth_figure(rep).layout.annotations[0].text


# ---- Chrome trace -------------------------------------------------------------------------------------------

def _check_chrome_trace(doc):
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    evs = doc["traceEvents"]
    last = {}
    ends = {}
    names = {}
    for e in evs:
        for k in ("ph", "ts", "pid", "tid", "name"):
            assert k in e, (k, e)
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["pid"] >= 0 and e["tid"] >= 0
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index")
            if e["name"].endswith("_name"):
                assert e["args"]["name"]
                names[(e["name"], e["pid"], e["tid"] if e["name"] == "thread_name" else None)] = e["args"]["name"]
            continue
        assert e["ph"] == "X"
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0 and math.isfinite(e["ts"])
        key = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(key, -math.inf), "timestamps go back in time on one thread"
        assert e["ts"] >= ends.get(key, -math.inf) - 1e-6, "complete events overlap on one thread"
        last[key] = e["ts"]
        ends[key] = e["ts"] + e["dur"]
    for (pid, tid) in last:
        assert ("process_name", pid, None) in names and ("thread_name", pid, tid) in names
    return evs


def test_chrome_trace_is_valid(div_report, tmp_path):
    p = tmp_path / "t.json"
    viz.write_chrome_trace([div_report], p)
    doc = json.loads(p.read_text())
    evs = _check_chrome_trace(doc)
    x = [e for e in evs if e["ph"] == "X" and e["cat"] != "kernel"]
    assert len(x) == len(div_report.engine.timeline)
    clock = H100.chip.sm_clock_mhz
    tot = sum(t1 - t0 for *_, t0, t1, _s, _f, _l in div_report.engine.timeline) / clock
    assert sum(e["dur"] for e in x) == pytest.approx(tot, abs=len(x) * 1e-5)   # endpoints rounded to 10 ps
    masked = [e for e in x if e["name"] == "selected (lanes masked)"]
    assert masked and all(min(e["args"]["lanes"]) == 16 for e in masked)
    assert {e["pid"] for e in x} == {sm for _, sm, _, _ in div_report.engine.cta_spans}
    assert all(e["args"]["labels"] for e in x if e["name"].startswith("selected"))


def test_chrome_trace_lays_reports_end_to_end(stream_report, div_report):
    doc = viz.chrome_trace([stream_report, div_report])
    evs = _check_chrome_trace(doc)
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    assert [k["name"] for k in kernels] == ["stream", "divergent"]
    k0, k1 = kernels
    assert k1["ts"] == pytest.approx(k0["ts"] + k0["dur"])
    second = [e for e in evs if e["ph"] == "X" and e.get("cat") != "kernel" and e["args"]["cta"] is not None]
    first_end = k0["ts"] + k0["dur"]
    n_first = len(stream_report.engine.timeline)
    late = [e for e in second if e["ts"] >= first_end - 1e-9]
    assert len(late) == len(div_report.engine.timeline) and len(second) == n_first + len(late)


def test_chrome_trace_event_budget_merges_then_samples(loop_report):
    n = len(loop_report.engine.timeline)
    doc = viz.chrome_trace([loop_report], max_events=n - 1)
    evs = _check_chrome_trace(doc)
    x = [e for e in evs if e["ph"] == "X" and e["cat"] != "kernel"]
    assert len(x) < n and "merged" in doc["otherData"]["notes"][0]
    assert sum(e["args"].get("intervals", 1) for e in x) == n
    tot = sum(r[4] - r[3] for r in loop_report.engine.timeline) / H100.chip.sm_clock_mhz
    assert sum(e["dur"] for e in x) == pytest.approx(tot, abs=len(x) * 1e-5)
    small = viz.chrome_trace([loop_report], max_events=len(x) // 4)
    _check_chrome_trace(small)
    assert "kept SMs" in small["otherData"]["notes"][-1]
    pids = {e["pid"] for e in small["traceEvents"] if e["ph"] == "X" and e["cat"] != "kernel"}
    assert 1 <= len(pids) < len({sm for _, sm, _, _ in loop_report.engine.cta_spans})


# ---- the HTML page ------------------------------------------------------------------------------------------

def _page(tmp_path, reports):
    p = tmp_path / "report.html"
    viz.write_html(reports, p, H100)
    return p, p.read_text(encoding="utf-8")


def test_html_is_self_contained(tmp_path, stream_report, div_report):
    p, html = _page(tmp_path, [stream_report, div_report])
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, re.I), "no external scripts"
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']https?:", html, re.I)
    from plotly.offline import get_plotlyjs
    bundle = get_plotlyjs()
    assert html.count(bundle[:400]) == 1 and html.count(bundle[-400:]) == 1   # plotly.js inline, once
    assert html.count("Plotly.newPlot(") == 10
    assert "<title>gpusim: stream, divergent on NVIDIA H100 SXM5 80GB</title>" in html
    assert "preset <code>h100</code>" in html
    assert re.search(r"showing SMs (\d+, ){7}\d+ of 132", html)
    assert p.stat().st_size < 12e6


def test_html_size_for_a_vector_add_sized_trace(tmp_path):
    tr = streaming_trace(1 << 20)
    rep = time_trace(tr, H100, record_timeline=True, progress=False)
    p, html = _page(tmp_path, [rep])
    from plotly.offline import get_plotlyjs
    data_bytes = p.stat().st_size - len(get_plotlyjs())
    assert data_bytes < 2.5e6, data_bytes


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_html_renders_in_headless_chromium(tmp_path, stream_report, div_report):
    exe = _chromium()
    if exe is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    p, html = _page(tmp_path, [div_report, stream_report])
    ids = re.findall(r'<div id="(k\d+-\w+)" class="plotly-graph-div"', html)
    assert len(ids) == 10
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
           "--disable-dev-shm-usage",
           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=5000", "--dump-dom", p.as_uri()]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("headless Chromium did not finish within 120 s")
    dom, log = out.stdout, out.stderr
    assert dom.strip(), f"Chromium dumped no DOM (exit {out.returncode}): {log[-2000:]}"
    console = [ln for ln in log.splitlines() if ":CONSOLE" in ln]
    errors = [ln for ln in console if re.search(r"Uncaught|Error|error", ln)]
    assert not errors, "script errors in the page:\n" + "\n".join(errors)
    parts = dict(zip(re.findall(r'<div id="(k\d+-\w+)"', dom), re.split(r'<div id="k\d+-\w+"', dom)[1:]))
    for i in ids:
        body = parts.get(i, "")
        assert body.startswith(' class="plotly-graph-div js-plotly-plot"'), f"{i} was not plotted"
        assert 'class="main-svg"' in body, f"{i} has no SVG"
    # every bar of each timeline was drawn
    for k, rep in enumerate([div_report, stream_report]):
        n = viz.timeline_figure(rep).layout.meta["n_bars"]
        assert parts[f"k{k}-timeline"].count('class="point"') == n
    assert parts["k0-metrics"].count('class="cell-text"') > 40 or "gpc__cycles_elapsed.max" in parts["k0-metrics"]


# ---- progress ----------------------------------------------------------------------------------------------

def test_engine_reports_progress_by_ctas():
    seen = []
    tr = streaming_trace(1 << 16)
    Engine(tr, H100).run(progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == tr.n_ctas and len(seen) <= 502


def test_no_progress_bar_off_a_terminal(capsys):
    time_trace(streaming_trace(1 << 19), H100)          # 2048 CTAs: a bar on a terminal, nothing here
    assert capsys.readouterr().err == ""


def test_recording_the_timeline_does_not_move_a_cycle(stream_report):
    tr = streaming_trace(1 << 17)
    plain = time_trace(tr, H100, progress=False)
    assert plain.engine.timeline is None
    assert plain.cycles == stream_report.cycles
    assert plain.engine.stall_cycles == stream_report.engine.stall_cycles
