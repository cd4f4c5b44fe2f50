"""The compatibility contract of gpusim.cuda: every CUDA kernel in kernels/ computes the same outputs under
gpusim as under numba's own CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, run in a subprocess), at reduced
sizes (the simulator runs about 100 us per thread)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.contract
pytest.importorskip("numba")
pytest.importorskip("numba.cuda")

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"

#: small launches per kernel file (keyword arguments of its launch()); files not listed use {"n": 2048}
#: when launch() takes n, else their defaults
SMALL = {
    "bank_conflicts": [{"stride": 33, "reps": 2, "blocks": 2, "block": 64}, {"stride": 4, "reps": 2, "blocks": 2,
                                                                            "block": 64}],
    "divergence": [{"n": 512, "iters": 3, "group": 8}, {"n": 300, "iters": 2, "group": 32, "block": 64}],
    "grid_stride_copy": [{"n": 4096, "dyn_shared_bytes": 1024, "blocks": 4, "block": 64}],
    "math_throughput": [{"op": op, "n": 256, "iters": 3} for op in ("fp32", "fp64", "sin", "exp")],
    "matmul_naive": [{"n": 32, "block": 16}],
    "matmul_tiled": [{"n": 32}],
    "reduction": [{"n": 2048}, {"n": 3000, "blocks": 3}],
    "reg_hold_copy": [{"n": 2048, "held_values": 64, "blocks": 4, "block": 64}],
    "row_col_sum": [{"n": 64, "walk": "row"}, {"n": 64, "walk": "col"}],
    "strided_read": [{"n": 2048, "stride": 4}],
    "vector_add": [{"n": 2000}],
    # the wild_numba family (numba-cuda's and numba-examples' kernels, verbatim)
    "nb_blackscholes": [{"OPT_N": 300}],
    "nb_jacobi": [{"size": 40}],
    "nb_mc_step": [{"npaths": 300, "tpb": 64}],
    "nb_transpose": [{"rows": 40, "cols": 70}],
    "nb_histogram": [{"n": 3000, "bins": 100, "blocks": 4, "threads": 64}],
    "nb_minmax": [{"n": 3000, "blocks": 4, "threads": 64}],
}


#: numba-cuda documentation examples that numba's CUDA simulator itself cannot run (gpusim runs them: see
#: tests/test_cuda_numba_compat.py and tests/test_collected_kernels.py), with the simulator's reason
SIMULATOR_CANNOT = {
    "nb_cpointer": "its arrays have no __cuda_array_interface__ (AttributeError)",
    "nb_ffi": "it cannot link CUDA C++ device functions (cuda.declare_device: 'NoneType' object is not callable)",
    "nb_globals_device_array": "a module-level cuda.to_device fails outside a kernel launch ('ctx_devnum')",
    "nb_grid_sync": "it runs cooperative grids of one block only",
    "nb_laplace": "it runs cooperative grids of one block only",
    "nb_montecarlo": "create_xoroshiro128p_states fails outside a kernel launch ('ctx_devnum')",
    "nb_random": "create_xoroshiro128p_states fails outside a kernel launch ('ctx_devnum')",
}


def _cuda_files():
    out = []
    for p in sorted(KERNELS.glob("*.py")):
        if p.name.startswith("tl_") or p.name.startswith("_"):
            continue
        if "cuda.jit" not in p.read_text() or p.stem in SIMULATOR_CANNOT:
            continue
        out.append(p)
    return out


def _cases():
    cases = []
    for p in _cuda_files():
        kws = SMALL.get(p.stem)
        if kws is None:
            src = p.read_text()
            kws = [{"n": 2048}] if "def launch(n" in src or "def launch(\n    n" in src else [{}]
        for i, kw in enumerate(kws):
            cases.append(pytest.param(p, kw, id=f"{p.stem}-{i}"))
    return cases


def _steps(L):
    if "steps" in L:
        return list(L["steps"])
    return [{k: L[k] for k in ("kernel", "grid", "block", "args", "shared_bytes") if k in L}]


_SIM_SCRIPT = textwrap.dedent("""
    import importlib.util, json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    try:
        from gpusim.validate.cpumodes import patch_numba_cudasim
        patch_numba_cudasim()
    except ImportError:
        pass
    path, kw, out = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    spec = importlib.util.spec_from_file_location("k", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    L = mod.launch(**kw)
    steps = L["steps"] if "steps" in L else [L]
    arrays = {}
    for s, st in enumerate(steps):
        st["kernel"][st["grid"], st["block"], 0, st.get("shared_bytes", 0)](*st["args"])
    for s, st in enumerate(steps):
        for j, a in enumerate(st["args"]):
            if isinstance(a, np.ndarray):
                arrays[f"s{s}_a{j}"] = a
    np.savez(out, **arrays)
""")


@pytest.mark.parametrize("path,kw", _cases())
def test_kernel_matches_numba_simulator(path, kw, tmp_path):
    out = tmp_path / "sim.npz"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", _SIM_SCRIPT, str(ROOT), str(path), json.dumps(kw), str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"numba's simulator failed on {path.name} {kw}:\n{r.stderr[-3000:]}"
    sim = np.load(out)

    from gpusim.cuda.launch import run
    from gpusim.kernelfile import load_kernel_file
    # as `gpusim run` loads it: numba.cuda is gpusim's while the file imports (a kernel with an eager signature,
    # ``@cuda.jit("void(float64[:], ...)")``, is compiled at the decorator, which the real numba-cuda cannot do
    # without a CUDA driver)
    mod = load_kernel_file(str(path))
    L = mod.launch(**kw)
    steps = _steps(L)
    for st in steps:
        run(st["kernel"], st["grid"], st["block"], st["args"], shared_bytes=st.get("shared_bytes", 0),
            record=False)
    rtol = max(float(L.get("rtol", 1e-6)), 1e-6)
    atol = max(float(L.get("atol", 1e-6)), 1e-6)
    compared = 0
    for s, st in enumerate(steps):
        for j, a in enumerate(st["args"]):
            if isinstance(a, np.ndarray):
                np.testing.assert_allclose(a, sim[f"s{s}_a{j}"], rtol=rtol, atol=atol,
                                           err_msg=f"{path.name} {kw}: argument {j} of step {s}")
                compared += 1
    assert compared >= 1
    # and both equal the file's numpy reference
    for key, exp in L["reference"]().items():
        got = L["args"][key] if not isinstance(key, tuple) else steps[key[0]]["args"][key[1]]
        np.testing.assert_allclose(np.asarray(got), exp, rtol=rtol, atol=atol)


_PAIRS = [("int64", "int64"), ("int32", "int32"), ("int32", "int64"), ("uint32", "int32"), ("uint64", "int64"),
          ("uint64", "uint32"), ("uint32", "uint32"), ("int8", "uint64"), ("bool", "bool"), ("bool", "int64"),
          ("float32", "float32"), ("float32", "float64"), ("float32", "int64"), ("float32", "int32"),
          ("float64", "int32"), ("float32", "bool"), ("float64", "uint64")]
_OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "bitand", "bitor", "bitxor",
        "lt", "min", "max"]


def _numba_types(ta, tb):
    import numba

    @numba.njit
    def f(x, y):
        return (x + y, x - y, x * y, x / y, x // y, x % y, x ** y, x << y, x >> y, x & y, x | y, x ^ y, x < y,
                min(x, y), max(x, y))

    @numba.njit
    def g(x, y):
        return (x + y, x - y, x * y, x / y, x // y, x % y, x ** y, x < y, min(x, y), max(x, y))
    a, b = np.dtype(ta).type(3), np.dtype(tb).type(2)
    floaty = "f" in (np.dtype(ta).kind, np.dtype(tb).kind)
    fn = g if floaty else f
    fn(a, b)
    ret = fn.nopython_signatures[0].return_type
    names = [o for o in _OPS if not (floaty and o in ("lshift", "rshift", "bitand", "bitor", "bitxor"))]
    return {o: np.dtype(str(t)) for o, t in zip(names, ret.types)}


@pytest.mark.parametrize("ta,tb", _PAIRS)
def test_typing_matches_numba_type_inference(ta, tb):
    import types as _t
    from gpusim.cuda import runtime as R
    ch = R.Chunk.__new__(R.Chunk)
    ch.recording = False
    ch.mask = R.Mask(None)
    ch.ops = []
    ch.narrowed = False
    ch.ck = _t.SimpleNamespace(file="", name="typing")
    expect = _numba_types(ta, tb)
    for op, dt in expect.items():
        x, y = R.V(np.dtype(ta).type(3)), R.V(np.dtype(tb).type(2))
        if op in ("min", "max"):
            got = ch.minmax(op, (x, y), 0)
        elif op == "lt":
            got = ch.compare("lt", x, y, 0)
        else:
            got = ch.binop(op, x, y, 0)
        assert got.v.dtype == dt, f"{ta} {op} {tb}: gpusim {got.v.dtype}, numba {dt}"
