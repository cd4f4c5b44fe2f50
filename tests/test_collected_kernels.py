"""numba-cuda's documentation examples as users have them (kernels/nb_*.py) match their numpy references under
gpusim, with the real numba-cuda importable (the files then take ``from numba import cuda``) or not.  Sizes are
reduced."""
import importlib.util
from pathlib import Path

import pytest

from gpusim.api import check_outputs, simulate_launch

KERNELS = Path(__file__).resolve().parents[1] / "kernels"

#: (file stem, launch() keyword arguments, real front end the file needs today: a name gpusim lacks)
CASES = [
    ("nb_vecadd", {"N": 5000}, None),
    ("nb_globals", {}, None),
    ("nb_cpu_gpu_compat", {}, None),
    ("nb_matmul", {"size": 40}, "numba"),                      # from numba.cuda import float32
    ("nb_matmul_shared", {"size": 40}, "numba"),
    ("nb_matmul_shared", {"square": False}, "numba"),
    ("nb_reduction", {}, "numba"),                          # from numba.cuda.types import int32
]


def _load(stem):
    path = KERNELS / f"{stem}.py"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in this checkout")
    spec = importlib.util.spec_from_file_location(f"_collected_{stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("stem,kw,needs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_collected_kernel_matches_reference(stem, kw, needs):
    if needs:
        pytest.importorskip(needs)
    launch = _load(stem).launch(**kw)
    reports = simulate_launch(launch, "h100")
    assert all(r.cycles > 0 for r in reports)
    checks = check_outputs(launch)
    assert checks, "the launch names outputs to check"
    for key, err, ok in checks:
        assert ok, f"{stem} {kw}: output {key} differs from the numpy reference (max abs error {err:.3g})"


@pytest.mark.parametrize("stem,params", [("nb_montecarlo", ["nsamps=256"]), ("nb_grid_sync", []),
                                         ("nb_cpointer", [])])
def test_cli_runs_numba_examples_with_numba_installed_and_no_driver(stem, params):
    """With numba-cuda installed but no CUDA driver, ``gpusim run`` gives the file gpusim.cuda for numba.cuda, so
    the examples' host calls (create_xoroshiro128p_states, to_device, eager signatures) run simulated."""
    import ctypes.util
    import subprocess
    import sys
    pytest.importorskip("numba")
    if ctypes.util.find_library("cuda") is not None:
        pytest.skip("a CUDA driver is present: the real numba-cuda runs these files")
    cmd = [sys.executable, "-m", "gpusim.cli", "run", str(KERNELS / f"{stem}.py")]
    for p in params:
        cmd += ["-p", p]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "matches the numpy reference" in r.stdout and "differs" not in r.stdout


def test_cli_runs_a_numba_script_without_launch_as_its_author_wrote_it(tmp_path):
    """numba's documentation example as a script (``from numba import cuda``, host code in ``__main__``, no
    launch()): ``gpusim run`` runs it with gpusim.cuda for numba.cuda and reports both launches."""
    import ctypes.util
    import subprocess
    import sys
    pytest.importorskip("numba")
    if ctypes.util.find_library("cuda") is not None:
        pytest.skip("a CUDA driver is present: the real numba-cuda runs this file")
    script = tmp_path / "increment.py"
    script.write_text(
        "import numpy as np\n"
        "from numba import cuda\n\n\n"
        "@cuda.jit\n"
        "def increment_by_one(an_array):\n"
        "    pos = cuda.grid(1)\n"
        "    if pos < an_array.size:\n"
        "        an_array[pos] += 1\n\n\n"
        "if __name__ == '__main__':\n"
        "    d = cuda.to_device(np.zeros(100000, np.float32))\n"
        "    increment_by_one[(100000 + 255) // 256, 256](d)\n"
        "    increment_by_one[(100000 + 255) // 256, 256](d)\n"
        "    print('sum', d.copy_to_host().sum())\n")
    r = subprocess.run([sys.executable, "-m", "gpusim.cli", "run", str(script)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "sum 200000.0" in r.stdout and r.stdout.count("kernel increment_by_one on NVIDIA H100") == 2


def test_without_numba_a_stand_in_numba_module_serves_numba_cuda(monkeypatch):
    """A file written for numba-cuda imports on a host without numba: ``from numba import cuda, float32`` gets
    gpusim.cuda and its types while the file runs, and nothing of the stand-in stays behind."""
    import importlib.util
    import sys
    from gpusim.cuda import stand_in
    import gpusim.cuda as gcuda
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "numba" else real(n, *a))
    for k in [k for k in sys.modules if k == "numba" or k.startswith("numba.")]:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.setattr(stand_in.ctypes.util, "find_library", lambda name: None)
    with stand_in.numba_cuda_is_gpusim():
        from numba import cuda, float32
        import numba
        assert cuda is gcuda and float32 is gcuda.types.float32 and numba.types is gcuda.types
    assert "numba" not in sys.modules
