"""Hardware records per GPU: the H100's in records/, the H200's in records/h200/ (the whole suite, collected the same
way), chosen with ``gpusim validate report --gpu/--records``; bad selections are one-line errors."""
import subprocess
import sys

import pytest

from gpusim.validate import records, suite


def test_h200_records_cover_the_whole_suite(monkeypatch):
    monkeypatch.setenv(records.RECORDS_GPU_ENV, "h200")
    assert records.device_info()["gpu"] == "NVIDIA H200"
    t, n = records.timing_cases(), records.ncu_cases()
    collected = [c for c in suite.CASES if c.group not in suite.NOT_YET_ON_H200]
    assert len(collected) >= len(suite.CASES) - 10          # a family or so collected on the H100 since
    left_out = records.ncu_excluded()            # rows whose counters cannot be, each with its reason
    assert set(left_out) <= {c.name for c in collected} and all(left_out.values())
    assert {c.name for c in collected} <= set(t) and {c.name for c in collected} - set(left_out) <= set(n)
    assert all(t[c.name]["status"] == "ok" for c in collected)
    # the same kernel, measured on both: the H200's faster HBM3e moves the same DRAM bytes in less time
    h200 = records.measured("vector_add_n16777216")
    monkeypatch.setenv(records.RECORDS_GPU_ENV, "h100")
    assert records.device_info()["gpu"].startswith("NVIDIA H100")
    h100 = records.measured("vector_add_n16777216")
    assert h200["dram_bytes_read"] == pytest.approx(h100["dram_bytes_read"], rel=0.05)
    assert h200["time_us"] < h100["time_us"]


def test_measured_time_is_in_microseconds(monkeypatch):
    """ncu writes gpu__time_duration in ns; measured()["time_us"] is us: the kernel's cycles at the 1980 MHz
    SM clock the records were taken at."""
    monkeypatch.setenv(records.RECORDS_GPU_ENV, "h100")
    m = records.measured("divergence_g32")
    assert m["time_us"] == pytest.approx(m["cycles"] / 1980.0, rel=0.05)
    assert 1.0 < m["time_us"] < 100.0


def test_use_gpu_refuses_a_gpu_without_records(monkeypatch):
    monkeypatch.delenv(records.RECORDS_GPU_ENV, raising=False)
    assert records.records_gpus() == ["h100", "h200"]
    with pytest.raises(ValueError, match="no hardware records for GPU 'a100'"):
        records.use_gpu("a100")


@pytest.mark.parametrize("args,msg", [
    (["--cases", "("], "is not a regular expression"),
    (["--cases", "no_such_case_xyz"], "no suite case matches"),
    (["--gpu", "a100"], "no hardware records for GPU 'a100'"),
    (["--gpu", "h900"], "h900"),
    (["--sampled", "--readme"], "made with the exact replay"),
])
def test_validate_report_bad_input_is_one_line(args, msg):
    p = subprocess.run([sys.executable, "-m", "gpusim.cli", "validate", "report", *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpusim: error:") and msg in lines[0]


def test_validate_report_sampled_replays_as_gpusim_run_does():
    """``--sampled`` predicts with the sampled replay (a 62-wave stream: fewer waves replayed, a few tenths of a
    percent to 2% from the exact replay, tests/test_sampling.py); without it every CTA is replayed."""
    from gpusim.validate.compare import compare
    from gpusim.validate.suite import case_by_name
    case = [case_by_name("vector_add_n16777216")]
    ex, = compare(case)
    sa, = compare(case, exact=False)
    assert sa.predicted["cycles"] != ex.predicted["cycles"]
    assert abs(sa.predicted["cycles"] - ex.predicted["cycles"]) <= 0.02 * ex.predicted["cycles"]
    assert sa.predicted["inst_executed"] == ex.predicted["inst_executed"]     # trace counts: never sampled
    p = subprocess.run([sys.executable, "-m", "gpusim.cli", "validate", "report", "--sampled", "--cases",
                        "^vector_add_n1024$"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("replay: sampled")
