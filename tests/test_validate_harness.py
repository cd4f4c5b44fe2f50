"""The hardware harness's pure parts: ncu CSV parsing, row alignment, metric filtering, output comparison."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpusim.validate import ncu
from gpusim.validate.collect import compare, sass_histogram

CSV = '''==PROF== Connected to process 77
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","gpu__time_duration.sum","launch__registers_per_thread"
"","","","","","","","","","","","byte","nsecond","register/thread"
"1","77","python3","host","add_kernel","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","1,048,576","3520.5","20"
"0","77","python3","host","cudapy::gpusim_kernels_vector_add::vector_add[abi:v1](Array<float, 1, C>)","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","12288","n/a","16"
"2","77","python3","host","sin_kernel","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","64","1000","22"
'''


def test_parse_raw_csv_orders_rows_and_reads_units():
    rows, units = ncu.parse_raw_csv(CSV)
    assert [r["ID"] for r in rows] == [0, 1, 2]
    assert units["dram__bytes_read.sum"] == "byte"
    assert rows[1]["metrics"]["dram__bytes_read.sum"] == 1048576      # thousands separators removed
    assert rows[0]["metrics"]["gpu__time_duration.sum"] is None        # n/a
    assert rows[1]["metrics"]["gpu__time_duration.sum"] == 3520.5
    assert ncu.kernel_name_of(rows[0]).startswith("cudapy::")


def test_align_matches_kernels_in_launch_order_and_reports_gaps():
    rows, _ = ncu.parse_raw_csv(CSV)
    entries = [{"name": "vadd", "profiled": True, "kernels": ["vector_add"]},
               {"name": "skipped", "profiled": False},
               {"name": "two", "profiled": True, "kernels": ["sin_kernel", "cos_kernel"]}]
    out = {a["name"]: a for a in ncu.align(entries, rows)}
    assert out["vadd"]["rows"][0]["ID"] == 0
    assert out["skipped"]["rows"] == []
    assert out["two"]["rows"][0]["ID"] == 2 and out["two"]["rows"][1] is None
    assert any("unexpected ncu row 1" in w for w in out["two"]["warnings"])
    assert any("cos_kernel" in w for w in out["two"]["warnings"])


def test_filter_metrics_keeps_known_and_launch_metrics():
    keep, dropped = ncu.filter_metrics(["dram__bytes_read.sum", "launch__grid_size", "foo__bar.sum",
                                        "dram__bytes_read.sum"], {"dram__bytes_read"})
    assert keep == ["dram__bytes_read.sum", "launch__grid_size"]
    assert list(dropped) == ["foo__bar.sum"]
    keep, dropped = ncu.filter_metrics(["foo__bar.sum"], set())      # query failed: keep, let the probe decide
    assert keep == ["foo__bar.sum"] and not dropped
    text = '==ERROR== Failed to find metric "smsp__foo_x.ratio"'
    assert ncu.metrics_named_in(text, ["smsp__foo_x.ratio", "gpu__time_duration.sum"]) == ["smsp__foo_x.ratio"]


def test_suite_metric_list_has_the_design_metrics():
    for m in ("gpc__cycles_elapsed.max", "sm__warps_active.avg.pct_of_peak_sustained_active",
              "sm__maximum_warps_per_active_cycle_pct", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
              "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
              "lts__t_sector_hit_rate.pct", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
              "smsp__thread_inst_executed_per_inst_executed.ratio", "smsp__inst_executed.sum",
              "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio", "launch__registers_per_thread"):
        assert m in ncu.SUITE_METRICS, m
    assert len(set(ncu.SUITE_METRICS)) == len(ncu.SUITE_METRICS)


def test_compare_reports_errors():
    ok = compare(np.array([1.0, 2.0], np.float16), np.array([1.0, 2.001]), 1e-3, 1e-3)
    assert ok["passed"] and ok["n_bad"] == 0
    bad = compare(np.array([1.0, 3.0]), np.array([1.0, 2.0]), 1e-3, 1e-3)
    assert not bad["passed"] and bad["n_bad"] == 1 and bad["worst_index"] == [1]
    nan = compare(np.array([np.nan]), np.array([1.0]), 1.0, 1.0)
    assert not nan["passed"]
    shape = compare(np.zeros(3), np.zeros(4), 0, 0)
    assert not shape["passed"] and "shape" in shape["error"]


def test_sass_histogram_counts_opcodes_with_predicates():
    sass = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/               @P0 FFMA R2, R3, R4, R5 ;
        /*0020*/              @!P1 FFMA R2, R3, R4, R5 ;
        /*0030*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
    """
    assert sass_histogram(sass) == {"FFMA": 2, "LDC": 1, "LDG.E.128": 1}


@pytest.mark.contract
def test_ncu_mode_plumbing_with_a_fake_ncu(tmp_path):
    """collect --ncu end to end on the CPU modes, with tests/fake_ncu.py standing in for Nsight Compute:
    metric filtering (query and probe), the profiled child, the manifest, report import and row alignment."""
    for mod in ("numba", "triton", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"needs {mod}")
    repo = Path(__file__).resolve().parents[1]
    fake = tmp_path / "ncu"
    fake.write_text(f"#!{sys.executable}\n" + (repo / "tests" / "fake_ncu.py").read_text())
    fake.chmod(0o755)
    env = dict(os.environ, NCU=str(fake), GPUSIM_COLLECT_DEVICE="cpu", NUMBA_ENABLE_CUDASIM="1",
               TRITON_INTERPRET="1", PYTHONPATH=str(repo) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "ncu.json"
    cases = "^(vector_add_n1024|tl_vector_add_n4096|tl_sincos_unfused_n1048576|fa_bwd_d64_n1024)$"
    r = subprocess.run([sys.executable, "-m", "gpusim.validate.collect", "--ncu", "--cases", cases,
                        "--out", str(out), "--time-budget", "300"], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=600)
    assert out.exists(), r.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert r.returncode == 0, r.stderr[-3000:]
    dropped = rec["ncu"]["metrics_dropped"]
    assert "smsp__inst_executed_pipe_tma.sum" in dropped and "launch__sm_count" in dropped
    assert "launch__registers_per_thread" in rec["ncu"]["metrics_used"]
    cases = rec["cases"]
    assert set(cases) == {"vector_add_n1024", "tl_vector_add_n4096", "tl_sincos_unfused_n1048576",
                          "fa_bwd_d64_n1024"}
    assert [len(c["kernels"]) for c in cases.values()] == [1, 1, 5, 3]
    assert all(c["status"] == "ok" and not c.get("warnings") for c in cases.values())
    steps = cases["tl_sincos_unfused_n1048576"]["kernels"]
    assert [k["ncu_name"].split("::")[-1].split("[")[0] for k in steps] == \
        ["sin_kernel", "cos_kernel", "square_kernel", "square_kernel", "add_kernel"]
    assert isinstance(steps[0]["metrics"]["gpc__cycles_elapsed.max"], int)
    assert Path(str(out.with_suffix("")) + "_raw.csv").exists()


@pytest.mark.contract
def test_timing_mode_plumbing_on_the_cpu_modes(tmp_path):
    """collect --timing on the CPU modes (tiny sizes, wall-clock instead of do_bench): record, checks, statuses,
    --skip-done."""
    for mod in ("numba", "triton", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"needs {mod}")
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, GPUSIM_COLLECT_DEVICE="cpu", NUMBA_ENABLE_CUDASIM="1", TRITON_INTERPRET="1")
    out = tmp_path / "timing.json"
    cases = "^(grid_stride_copy_smem200k|tl_matmul_1409_64x64x32|attn_naive_d64_n1024)$"
    r = subprocess.run([sys.executable, "-m", "gpusim.validate.collect", "--timing", "--cases", cases,
                        "--out", str(out)], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert rec["schema"] == "gpusim-hw-record/1" and rec["device_mode"] == "cpu"
    for name, c in rec["cases"].items():
        assert c["status"] == "ok", (name, c.get("error"), c.get("traceback"))
        assert c["check"]["passed"] and c["do_bench_ms"]["median"] > 0
        assert c["kernels"] and c["kernels"][0]["kernel"]
    assert rec["cases"]["grid_stride_copy_smem200k"]["kernels"][0]["dynamic_shared_bytes"] == 200 * 1024
    assert len(rec["cases"]["attn_naive_d64_n1024"]["kernels"]) == 3
    again = tmp_path / "again.json"
    r = subprocess.run([sys.executable, "-m", "gpusim.validate.collect", "--timing", "--cases", cases,
                        "--skip-done", str(out), "--out", str(again)], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and json.loads(again.read_text())["cases"] == {}


_TABLES_CHILD = r'''
import json, sys
import numpy as np
from gpusim.validate import suite
from gpusim.validate.harness import PreparedCase, collect_device
collect_device()                                     # GPUSIM_COLLECT_DEVICE=cpu: the interpreter's patches
out = {}
for name in sys.argv[1:]:
    case = suite.case_by_name(name)
    spec = suite.load_case(case, suite.cpu_params(case))
    prep = PreparedCase(spec, "cpu", name)
    prep.run()
    prep.run()                                       # twice, as a timing loop does: the result must not change
    res = {"check": prep.check(), "tables": prep.pointer_tables}
    bufs = spec.get("buffers") or {}
    # the kernel wrote the device copies (the tables were rewritten to their addresses), not the host arrays
    res["host_untouched"] = all(not bufs[k].any() for k in spec["outputs"] if isinstance(k, str))
    out[name] = res
print(json.dumps(out, default=str))
'''


@pytest.mark.contract
def test_pointer_tables_spin_locks_and_descriptors_on_the_cpu_harness(tmp_path):
    """The harness's PreparedCase on Triton's interpreter: a pointer table of host addresses is rewritten to the
    device buffers' addresses (outputs named in ``buffers`` fetched from the device), the spin-locked layer-norm
    backward gives the same result when run twice, and device-side tensor descriptors get a scratch allocator."""
    for mod in ("triton", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"needs {mod}")
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, GPUSIM_COLLECT_DEVICE="cpu", TRITON_INTERPRET="1")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    child = tmp_path / "child.py"
    child.write_text(_TABLES_CHILD)
    names = ["tut_grouped_gemm_mixed", "tut_layernorm_M1823_N781", "tut_persistent_mm_desc_2064", "tut_asin_n65536"]
    r = subprocess.run([sys.executable, str(child), *names], cwd=repo, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    for name in names:
        assert res[name]["check"]["passed"], (name, res[name]["check"])
    gg = res["tut_grouped_gemm_mixed"]
    assert gg["tables"] == [[0, 0], [0, 1], [0, 2]] and gg["host_untouched"]
    assert [o["output"] for o in gg["check"]["outputs"]] == ["c0", "c1", "c2"]
    assert res["tut_layernorm_M1823_N781"]["tables"] == []
