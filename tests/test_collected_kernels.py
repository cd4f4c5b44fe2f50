"""The kernels users already have (Triton tutorials, numba-cuda documentation examples; kernels/tut*.py,
kernels/nb_*.py): the ones gpusim simulates today match their numpy references.  KERNELS_STATUS.md (not
committed) lists the others and what each is missing.  Sizes are reduced; a file that is absent is skipped."""
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
    ("tut01_vector_add", {"size": 5000}, None),
    ("tut02_fused_softmax", {"n_rows": 64, "n_cols": 781, "use_warmup": False}, None),
    ("tut03_matmul", {"M": 256, "N": 256, "K": 256}, None),
    ("tut03_matmul", {"M": 256, "N": 192, "K": 320, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 2},
     None),
    ("tut05_layer_norm", {"M": 32, "N": 256}, None),        # N=256: one warp (see KERNELS_STATUS.md)
    ("tut05_layer_norm_bwd", {"M": 32, "N": 256}, None),
    ("tut09_persistent_matmul", {"M": 256, "N": 256, "K": 128, "kernels": ("naive", "persistent")}, "triton"),
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
