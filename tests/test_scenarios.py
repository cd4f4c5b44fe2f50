"""The lecture scenarios (``gpusim/scenario.py``; the scripts in ``scenarios/``): each runs at the small size,
shows its effect in the direction its lesson teaches, and reproduces its golden output exactly (the simulator is
deterministic); ``gpusim scenario`` lists, prints JSON and pages, and refuses bad input in one line.

Each scenario is simulated once at the small size (cached for the module).  After a deliberate model change,
regenerate the golden files with ``python scenarios/run_all.py --update`` and review the diff.
"""
import json
import os
import re
import sys

import pytest

from gpusim import scenario as S
from gpusim.cli import main
from gpusim.validate import records, suite

HERE = os.path.dirname(os.path.abspath(__file__))
SCEN = os.path.join(os.path.dirname(HERE), "scenarios")
sys.path.insert(0, SCEN)

from run_all import SCENARIOS as SCRIPTS, output_of  # noqa: E402

_SMALL: dict = {}


def small(name: str) -> S.Result:
    """The scenario at the small size, simulated in a fresh process as its script is (simulated addresses are first
    fit among the arrays alive in a process: the suite's leftovers would move a few cycles; see DEVIATIONS.md)."""
    if name not in _SMALL:
        import pickle
        import subprocess
        code = ("import pickle, sys; from gpusim import scenario as S; "
                f"sys.stdout.buffer.write(pickle.dumps(S.run({name!r}, small=True)))")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=os.path.dirname(HERE),
                           env={**os.environ, "PYTHONHASHSEED": "0"})
        assert p.returncode == 0, p.stderr.decode()[-2000:]
        _SMALL[name] = pickle.loads(p.stdout)
    return _SMALL[name]


def sim(name: str, variant: str, key: str = "time_us") -> float:
    """A simulated metric of a variant (named by its full-size label) at the small size."""
    return next(r for r in small(name).rows if r["variant"] == variant)["sim"][key]


def test_thirteen_scenarios_each_with_its_script():
    assert len(S.SCENARIOS) == 13
    assert sorted(SCRIPTS) == sorted(S.BY_NAME)


def test_every_variant_is_a_suite_case_with_measured_h100_time():
    for s in S.SCENARIOS:
        for v in s.variants:
            case = suite.case_by_name(v.case)
            assert case in suite.CASES
            assert records.measured(v.case)["time_us"] > 0, v.case
        for lbl in (s.headline.slow, s.headline.fast):
            assert s.variant(lbl).small is not None, (s.name, lbl)


@pytest.mark.parametrize("name", sorted(S.BY_NAME))
def test_scenario_matches_golden_output_and_shows_no_hardware_number_at_small_size(name):
    res = small(name)
    with open(os.path.join(SCEN, f"{name}.out")) as f:
        assert S.format_text(res) == f.read()
    assert all(r["hw"] is None for r in res.rows) and res.headline()["measured"] is None
    assert res.headline()["direction_right"], res.headline()


def test_a_script_prints_its_golden_output():
    with open(os.path.join(SCEN, "bank_conflicts.out")) as f:
        assert output_of("bank_conflicts") == f.read()


# ---- the direction of each effect, at the small size ---------------------------------------------------------

def test_divergence_runs_both_paths():
    n = "divergence"
    assert sim(n, "group 1") > 1.1 * sim(n, "group 32 (uniform)")
    assert sim(n, "group 1", "inst_executed") > 1.3 * sim(n, "group 32 (uniform)", "inst_executed")
    assert sim(n, "group 32 (uniform)", "threads_per_inst") == pytest.approx(32.0)
    assert sim(n, "group 1", "threads_per_inst") < 24.0


def test_coalescing_stride_and_walks():
    n = "coalescing"
    assert sim(n, "stride 1") < sim(n, "stride 4") < sim(n, "stride 32")
    assert sim(n, "stride 1", "gld_sectors_per_request") == pytest.approx(4.0)
    assert sim(n, "stride 32", "gld_sectors_per_request") == pytest.approx(32.0)
    assert sim(n, "row walk n=1024", "gld_sectors_per_request") > sim(n, "col walk n=1024", "gld_sectors_per_request")


def test_burst_moves_more_bytes_than_it_uses():
    n = "burst_dram"
    assert sim(n, "4 B chunks", "read_per_useful") >= 8.0
    assert sim(n, "256 B chunks", "read_per_useful") == pytest.approx(1.0, rel=0.05)
    assert sim(n, "128 B chunks +16 B", "dram_bytes_read") > sim(n, "128 B chunks", "dram_bytes_read")
    assert sim(n, "4 B chunks") > sim(n, "256 B chunks")


def test_tiling_beats_naive():
    for size in (256, 512):
        assert sim("tiling", f"naive n={size}") > sim("tiling", f"tiled n={size}")
    assert sim("tiling", "naive n=512", "inst_executed") > sim("tiling", "tiled n=512", "inst_executed")


def test_tile_alignment_by_divisibility():
    n = "tile_alignment"
    for base in (1024, 1280):
        assert sim(n, str(base + 1)) > 1.5 * sim(n, str(base))           # not divisible by 16: narrow loads
        assert sim(n, str(base + 8)) > 1.5 * sim(n, str(base + 16))
    assert sim(n, "1040", "tflops") > sim(n, "1025", "tflops")


def test_wave_quantization_steps_at_a_full_wave():
    n = "wave_quantization"
    assert sim(n, "133 tiles") > 1.2 * sim(n, "132 tiles")
    assert sim(n, "133 tiles") - sim(n, "132 tiles") > 3 * (sim(n, "132 tiles") - sim(n, "99 tiles"))
    assert sim(n, "265 tiles") > sim(n, "264 tiles")


def test_fusion_moves_fewer_bytes_and_is_faster():
    for p in (20, 24):
        assert sim("fusion", f"unfused n=2^{p}") > 2 * sim("fusion", f"fused n=2^{p}")
        assert sim("fusion", f"unfused n=2^{p}", "dram_mib") > 3 * sim("fusion", f"fused n=2^{p}", "dram_mib")


def test_recomputation_beats_storing_activations():
    n = "recomputation"
    assert sim(n, "store n=2^22") > sim(n, "recompute n=2^22")
    assert sim(n, "store n=2^24") > 1.2 * sim(n, "recompute n=2^24")
    for p in (20, 22, 24):
        assert sim(n, f"store n=2^{p}", "dram_mib") > 1.4 * sim(n, f"recompute n=2^{p}", "dram_mib")


def test_fp16_is_faster_than_fp32():
    n = "precision"
    assert sim(n, "fp32 n=2^24") > 1.1 * sim(n, "fp16 n=2^24")
    assert sim(n, "fp32 n=2^24", "dram_mib") == pytest.approx(2 * sim(n, "fp16 n=2^24", "dram_mib"), rel=0.1)


def test_occupancy_limits():
    n = "occupancy"
    blocks = [sim(n, f"smem {kb} KB/block", "ctas_per_sm") for kb in (0, 16, 48, 100, 200)]
    assert blocks == sorted(blocks, reverse=True) and blocks[-1] == 1
    assert sim(n, "smem 200 KB/block") > 1.5 * sim(n, "smem 0 KB/block")
    assert sim(n, "smem 100 KB/64-thr block") > 1.5 * sim(n, "smem 0 KB/64-thr block")
    assert sim(n, "128 regs held") > 1.5 * sim(n, "0 regs held")


def test_bank_conflicts_by_stride():
    n = "bank_conflicts"
    assert sim(n, "stride 1") < sim(n, "stride 16") < sim(n, "stride 32")
    assert sim(n, "stride 33") == pytest.approx(sim(n, "stride 1"), rel=0.02)
    assert sim(n, "stride 32", "conflicts_per_request") == pytest.approx(31.0)
    assert sim(n, "stride 33", "conflicts_per_request") == pytest.approx(0.0)


def test_flash_attention_moves_fewer_dram_bytes():
    n = "flash_attention"
    for size in (512, 1024, 2048, 4096):
        assert sim(n, f"flash N={size}", "dram_mib") < 0.5 * sim(n, f"naive N={size}", "dram_mib")
    assert sim(n, "naive N=2048") > sim(n, "flash N=2048")


def test_roofline_points_climb_the_bandwidth_slope():
    n = "roofline"
    labels = [f"{8 * it} FLOP per 8 B" for it in (1, 4, 16, 64)]
    ai = [sim(n, lbl, "flop_per_byte") for lbl in labels]
    perf = [sim(n, lbl, "gflops") for lbl in labels]
    assert ai == sorted(ai) and perf == sorted(perf)
    assert sim(n, labels[2]) < 4 * sim(n, labels[0])                  # 16x the FLOPs, far less than 16x the time
    assert sim(n, "fp16 matmul 2048^3", "gflops") > perf[0]


# ---- the full-size path, without simulating: simulated metrics taken equal to the measured ones ---------------

def _as_if_perfect(name: str) -> S.Result:
    s = S.get(name)
    res = S.Result(s, "H100 SXM5", "h100", False, "H100")
    for v, case, params in S.plan(s):
        res.rows.append(S.make_row(s, v, case, params, dict(records.measured(case.name)), "h100", False))
    return res


def test_full_size_rows_carry_the_measured_h100_time():
    res = _as_if_perfect("bank_conflicts")
    row = res.row("stride 32")
    assert row["hw"]["time_us"] == pytest.approx(records.measured("bank_conflicts_s32")["time_us"])
    assert 5.0 < row["hw"]["time_us"] < 500.0                     # microseconds, not ns
    h = res.headline()
    assert h["error_pct"] == pytest.approx(0.0) and h["direction_right"]
    assert h["measured"] == pytest.approx(records.measured("bank_conflicts_s32")["time_us"]
                                          / records.measured("bank_conflicts_s1")["time_us"])
    text = S.format_text(res)
    assert "H100 µs" in text and f"{row['hw']['time_us']:,.2f}" in text and "error +0.0%" in text


def test_figures_follow_the_rows_at_either_size():
    fig = S.figure(small("tiling"))
    naive = next(t for t in fig.data if t.name == "naive (simulated)")
    assert list(naive.x) == [64, 128]                                  # the small sizes, not the full ones
    assert not any("H100" in (t.name or "") for t in fig.data)
    full = S.figure(_as_if_perfect("tiling"))
    hw = next(t for t in full.data if t.name == "naive (H100)")
    assert list(hw.x) == [256, 512] and hw.line.dash == "dash"
    assert list(hw.y) == [records.measured(f"matmul_naive_n{n}")["time_us"] for n in (256, 512)]
    roof = S.figure(small("roofline"))
    pts = next(t for t in roof.data if t.name == "simulated")
    assert len(pts.x) == 5 and list(pts.x[:4]) == sorted(pts.x[:4])


def test_records_gpu_of_a_preset(monkeypatch):
    assert S.records_gpu_of("h100") == "h100"
    assert S.records_gpu_of("h200") == "h200"
    assert S.records_gpu_of("a100") is None
    monkeypatch.delenv(records.RECORDS_GPU_ENV, raising=False)
    h200 = S._measured("scn_relu_f32_n16777216", "h200")
    assert os.environ.get(records.RECORDS_GPU_ENV) is None                  # the H100's stay the default
    assert h200["time_us"] < S._measured("scn_relu_f32_n16777216", "h100")["time_us"]     # faster HBM3e
    assert S._measured("fa_fwd_d64_n2048", "a100") is None


def test_heavy_scenarios_say_they_are_slow():
    assert "heavy" in S.slow_note(S.get("occupancy"), small=False)
    assert S.slow_note(S.get("occupancy"), small=True) is None
    assert S.slow_note(S.get("bank_conflicts"), small=False) is None


# ---- the command ------------------------------------------------------------------------------------------------

def test_list_is_one_line_per_scenario(capsys):
    assert main(["scenario", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 13
    assert [ln.split()[0] for ln in lines] == [s.name for s in S.SCENARIOS]


@pytest.mark.parametrize("argv,words", [
    (["scenario", "no_such_effect"], ["no_such_effect", *S.BY_NAME]),
    (["scenario", "divergence", "--gpu", "h900"], ["h900"]),
    (["scenario"], ["--list"]),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, words):
    assert main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpusim: error:")
    assert all(w in err[0] for w in words)
    assert cap.out == ""


def test_json_and_html(capsys, tmp_path):
    page = tmp_path / "bank.html"
    assert main(["scenario", "bank_conflicts", "--small", "--json", "--html", str(page)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scenario"] == "bank_conflicts" and data["size"] == "small" and len(data["rows"]) == 7
    assert data["headline"]["measured"] is None and data["headline"]["simulated"] > 1.5
    text = page.read_text()
    from plotly.offline import get_plotlyjs
    bundle = get_plotlyjs()
    assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I)                       # opens offline
    assert text.count(bundle[:400]) == 1 and text.count("Plotly.newPlot(") == 1      # plotly.js inline, one figure
    assert "<h1>Shared-memory bank conflicts</h1>" in text and "<td>stride 33</td>" in text


def test_all_writes_a_page_each_and_an_index(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(S, "run", lambda scn, gpu, small_, progress=None: small(scn.name))
    assert main(["scenario", "--all", "--small", "--html", str(tmp_path / "pages")]) == 0
    out = capsys.readouterr().out
    assert out.count("headline:") == 13
    pages = sorted(p.name for p in (tmp_path / "pages").iterdir())
    assert pages == sorted([f"{n}.html" for n in S.BY_NAME] + ["index.html"])
    index = (tmp_path / "pages" / "index.html").read_text()
    assert all(f'href="{n}.html"' in index for n in S.BY_NAME)
