"""Contract tests for kernels/ and the validation suite, on the real front ends' CPU modes.

Every kernel file is a real numba-cuda or Triton kernel: its default launch (shrunk to a tiny size) must equal
its numpy reference under numba's CUDA simulator and Triton's interpreter, and so must every case of the
hardware suite.  Both run through ``collect --cpu-check`` in child processes, because the CPU modes are chosen
by environment variables read when numba / Triton are imported (this process stays free of them).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpy")

from gpusim.validate import suite  # noqa: E402

pytestmark = pytest.mark.contract

REPO = Path(__file__).resolve().parents[1]


def _available(mod: str) -> bool:
    # find_spec, not importorskip: importing numba or triton here would fix their mode for this process
    return importlib.util.find_spec(mod) is not None


FRONTEND_DEPS = {"cuda": ("numba",), "triton": ("triton", "torch")}


def _missing(frontend: str) -> list[str]:
    return [m for m in FRONTEND_DEPS[frontend] if not _available(m)]


def _frontend_of_file(f: str) -> str:
    return "triton" if Path(f).name.startswith("tl_") else "cuda"


def _run_cpu_check(tmp_path: Path, extra: list[str], names: list[str]) -> dict:
    if not names:
        pytest.skip("neither numba nor triton+torch is installed")
    out = tmp_path / "cpu_check.json"
    cmd = [sys.executable, "-m", "gpusim.validate.collect", "--cpu-check", "--out", str(out), *extra,
           "--cases", "^(" + "|".join(re.escape(n) for n in names) + ")$"]
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert out.exists(), f"cpu-check wrote no record (rc={r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return json.loads(out.read_text())["cases"]


@pytest.fixture(scope="module")
def default_results(tmp_path_factory):
    files = [f for f in suite.KERNEL_FILES if not _missing(_frontend_of_file(f))]
    return _run_cpu_check(tmp_path_factory.mktemp("defaults"), ["--defaults"], files)


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory):
    names = [c.name for c in suite.CASES if not _missing(c.frontend)]
    return _run_cpu_check(tmp_path_factory.mktemp("suite"), [], names)


def _assert_ok(result: dict, what: str):
    assert result.get("status") == "ok", (
        f"{what}: {result.get('status')}: {result.get('error', '')}\n"
        + json.dumps(result.get("check", {}).get("outputs", []), indent=1)[:2000]
        + "\n" + result.get("traceback", "")[-2000:])


# ------------------------------------------------------------------------------------------- kernel files

@pytest.mark.parametrize("kernel_file", suite.KERNEL_FILES)
def test_kernel_default_launch_matches_reference(kernel_file, default_results):
    missing = _missing(_frontend_of_file(kernel_file))
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    _assert_ok(default_results[Path(kernel_file).stem], f"{kernel_file} (default launch, CPU_PARAMS applied)")


@pytest.mark.parametrize("case", [c.name for c in suite.CASES])
def test_suite_case_matches_reference_on_cpu(case, suite_results):
    c = suite.case_by_name(case)
    missing = _missing(c.frontend)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    _assert_ok(suite_results[case], f"{case} at tiny size {suite.cpu_params(c)}")


def test_kernel_files_follow_the_convention():
    """The try/except import, a launch() with defaults, a docstring, no print."""
    for f in suite.KERNEL_FILES:
        src = (REPO / f).read_text()
        assert src.startswith('"""'), f"{f}: starts with its docstring"
        assert "def launch(" in src, f"{f}: has launch()"
        assert "print(" not in src, f"{f}: no print"
        if _frontend_of_file(f) == "triton":
            assert "from gpusim import triton" in src and "except ImportError" in src, f"{f}: fallback import"
        else:
            assert "from gpusim import cuda" in src and "except ImportError" in src, f"{f}: fallback import"


# ------------------------------------------------------------------------------------------- suite sanity

def test_suite_has_enough_unique_cases():
    names = [c.name for c in suite.CASES]
    assert len(names) >= 60
    assert len(set(names)) == len(names), "case names are unique"
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", n) for n in names), "names are plain identifiers"


def test_every_case_names_an_existing_kernel_file_with_cpu_params():
    for c in suite.CASES:
        assert c.path.is_file(), f"{c.name}: {c.kernel_file} exists"
        # a suite kernel's tiny sizes are in CPU_PARAMS; a documentation example's are the case's own
        assert c.kernel_file in suite.CPU_PARAMS or (c.kernel_file in suite.EXAMPLE_KERNEL_FILES and c.cpu_params), \
            f"{c.name}: {c.kernel_file} has tiny CPU params"
    used = {c.kernel_file for c in suite.CASES}
    assert set(suite.KERNEL_FILES) <= used, "every kernel file is in the suite"
    assert used <= set(suite.KERNEL_FILES) | set(suite.EXAMPLE_KERNEL_FILES)
    on_disk = {f"kernels/{p.name}" for p in (REPO / "kernels").glob("*.py")}
    assert on_disk == set(suite.KERNEL_FILES) | set(suite.MICRO_KERNEL_FILES) | set(suite.EXAMPLE_KERNEL_FILES), \
        "every kernel file on disk is a suite kernel (listed in CPU_PARAMS), a microbenchmark or a documentation example"
    assert suite.EXAMPLE_KERNEL_FILES and all(f.startswith("kernels/nb_") for f in suite.EXAMPLE_KERNEL_FILES)


def test_pairs_name_existing_distinct_cases():
    names = {c.name for c in suite.CASES}
    assert len(suite.PAIRS) >= 10
    for slower, faster in suite.PAIRS:
        assert slower in names and faster in names, (slower, faster)
        assert slower != faster


def test_suite_covers_the_required_groups():
    groups = {c.group for c in suite.CASES}
    for g in ("stream", "strided", "divergence", "row_col", "matmul_simt", "bank_conflicts", "occupancy_smem",
              "reduction", "math", "tl_stream", "fusion", "softmax", "tl_matmul", "flash_attn", "flash_attn_bwd",
              "attention_io"):
        assert g in groups, g
    sizes = {c.params["M"] for c in suite.CASES if c.group == "tl_matmul"}
    assert {1408, 1409, 1536, 2048, 2049, 2064} <= sizes
    fa = [c for c in suite.CASES if c.group == "flash_attn"]
    assert {c.params["N_CTX"] for c in fa} >= {512, 16384}
    assert {c.params["HEAD_DIM"] for c in fa} == {64, 128}
    assert sum(c.params["causal"] for c in fa) == 2
    for c in fa:
        if c.params["HEAD_DIM"] == 128:
            assert c.params["Z"] * c.params["H"] * c.params["N_CTX"] <= 65536, c.name


def test_select_and_shards_partition_the_suite():
    shards = [suite.select(shard=f"{i}/3") for i in (1, 2, 3)]
    got = sorted(c.name for s in shards for c in s)
    assert got == sorted(c.name for c in suite.CASES)
    assert [c.name for c in suite.select("^divergence_g(1|2)$")] == ["divergence_g2", "divergence_g1"]
    with pytest.raises(ValueError):
        suite.select(shard="4/3")


def test_cpu_params_keep_the_experiment_and_shrink_the_size():
    c = suite.case_by_name("tl_matmul_1409_128x128x64")
    p = suite.cpu_params(c)
    assert p["BM"] == 128 and p["M"] == 49 and p["M"] % 16 == 1409 % 16
    c = suite.case_by_name("divergence_g4")
    assert suite.cpu_params(c)["group"] == 4 and suite.cpu_params(c)["n"] < c.params["n"]


def test_harness_imports_no_simulator_or_gpu_module():
    code = ("import sys, gpusim.validate.collect, gpusim.validate.suite, gpusim.validate.ncu;"
            "bad = [m for m in ('simpy', 'plotly', 'torch', 'triton', 'numba', 'gpusim.timing', 'gpusim.cuda',"
            " 'gpusim.triton') if m in sys.modules]; assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
