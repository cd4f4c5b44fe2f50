"""The compatibility contract of gpusim.triton: every tile kernel in kernels/ (``tl_*.py``) computes the same
outputs under gpusim as under Triton's own interpreter (``TRITON_INTERPRET=1``, in a subprocess), and both
equal the kernel's numpy reference, at sizes small enough for the interpreter (it takes ~1 ms per program and
~5 ms per load+dot step).  gpusim runs the very same source file: ``trace_launch`` takes the real
``@triton.jit`` function and re-executes its source."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.contract

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"

#: small launches per kernel file: lists of launch() keyword arguments
SMALL = {
    "tl_vector_add": [{"n": 5000}, {"n": 4096, "dtype": "float32"}],
    "tl_sincos": [{"n": 3000, "fused": True}, {"n": 3000, "fused": False}],
    "tl_softmax": [{"n_rows": 9, "n_cols": 100}, {"n_rows": 3, "n_cols": 256}],
    "tl_matmul": [{"M": 128, "N": 128, "K": 96, "BM": 64, "BN": 64, "BK": 32, "num_warps": 4},
                  {"M": 80, "N": 72, "K": 40, "BM": 32, "BN": 32, "BK": 16, "num_warps": 4}],
    "tl_flash_attn_fwd": [{"H": 2, "N_CTX": 128, "HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32},
                          {"H": 1, "N_CTX": 128, "HEAD_DIM": 32, "BLOCK_M": 64, "BLOCK_N": 32, "causal": True}],
    "tl_flash_attn_bwd": [{"H": 1, "N_CTX": 128, "HEAD_DIM": 32, "BLOCK_M": 32, "BLOCK_N": 32}],
    "tl_attention_naive": [{"H": 1, "N_CTX": 128, "HEAD_DIM": 64, "BM": 64, "BN": 64, "BK": 32}],
    "tl_relu": [{"n": 5000}, {"n": 3000, "dtype": "float16"}],
    "tl_stream_rw": [{"n": 5000, "mode": "copy"}, {"n": 3000, "mode": "read"}, {"n": 4096, "mode": "write"}],
    "tl_sigmoid3": [{"n": 5000, "mode": "store"}, {"n": 3000, "mode": "recompute"}],
    "tl_tut_dropout": [{"n": 5000}, {"n": 3000, "p": 0.25, "seed": 2 ** 33 + 5}],
    "tl_tut_layernorm": [{"M": 40, "N": 300, "BLOCK_SIZE": 128, "GROUP_SIZE_M": 8},
                         {"M": 17, "N": 64, "BLOCK_SIZE": 32, "dtype": "float32", "GROUP_SIZE_M": 4}],
    "tl_tut_libdevice": [{"n": 5000}],
    "tl_sort_scan": [{"op": "sort", "R": 3, "N": 64}, {"op": "topk", "R": 2, "N": 64, "K": 8},
                     {"op": "cumsum", "R": 3, "N": 128}, {"op": "linrec", "R": 2, "N": 64}],
    "tl_spinlock": [{"G": 5}, {"kind": "chain", "N": 6, "sem": "relaxed"}, {"kind": "chain", "N": 6}],
    "tl_tut_grouped_gemm": [{"shapes": [[64, 64, 64], [96, 40, 72], [17, 136, 24]], "NUM_SM": 4, "BM": 32,
                             "BN": 32, "BK": 32}],
    "tl_tut_persistent_matmul": [{"M": 72, "N": 80, "K": 72, "NUM_SMS": 3, "BM": 32, "BN": 32, "BK": 32,
                                  "GROUP_M": 2},
                                 {"M": 72, "N": 80, "K": 72, "NUM_SMS": 3, "BM": 32, "BN": 32, "BK": 32,
                                  "GROUP_M": 2, "descriptor": True}],
    "tl_wild_rms_norm": [{"n_rows": 5, "n_cols": 300}],
    "tl_wild_layer_norm": [{"n_rows": 5, "n_cols": 300}],
    "tl_wild_swiglu": [{"n_rows": 5, "n_cols": 300}],
    "tl_wild_geglu": [{"n_rows": 5, "n_cols": 300}],
    "tl_wild_rope": [{"batch_size": 1, "seq_len": 4, "n_q_head": 6, "n_kv_head": 2, "head_dim": 40}],
    "tl_wild_cross_entropy": [{"n_rows": 6, "V": 1000, "ignore_every": 4}],
    "tl_wild_fla_recurrent": [{"B": 1, "T": 8, "H": 2, "K": 40, "V": 72}],
}


def _files():
    return sorted(p.stem for p in KERNELS.glob("tl_*.py"))


def _cases():
    out = []
    for stem in _files():
        for i, kw in enumerate(SMALL.get(stem, [{}])):
            out.append((f"{stem}-{i}", stem, kw))
    return out


def _needs():
    for mod in ("triton", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (the contract needs Triton's interpreter)")


@pytest.fixture(scope="module")
def interpreter_outputs(tmp_path_factory):
    """Run every case under TRITON_INTERPRET=1 in one child process (Triton picks its mode at import)."""
    _needs()
    d = tmp_path_factory.mktemp("interp")
    cases = [[name, str(KERNELS / f"{stem}.py"), kw] for name, stem, kw in _cases()]
    (d / "cases.json").write_text(json.dumps(cases))
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "triton_interp_runner.py"), str(d / "cases.json"),
                        str(d)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, f"interpreter run failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return d


def _load_kernel_file(stem: str):
    spec = importlib.util.spec_from_file_location(f"contract_{stem}", KERNELS / f"{stem}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run_gpusim(stem: str, kw: dict):
    from gpusim.triton import trace_launch
    L = _load_kernel_file(stem).launch(**kw)
    steps = L.get("steps") or [L]
    traces = []
    for st in steps:
        tr = trace_launch(st["kernel"], st["grid"], st["args"], st.get("meta", {}))
        tr.check()
        traces.append(tr)
    outs = {}
    for k in L["outputs"]:
        if isinstance(k, str):                      # an array reached through a pointer table: named in buffers
            arr = L["buffers"][k]
        else:
            arr = steps[k[0]]["args"][k[1]] if isinstance(k, (list, tuple)) else steps[-1]["args"][k]
        outs[json.dumps(list(k) if isinstance(k, tuple) else k)] = np.asarray(arr).copy()
    return L, outs, traces


@pytest.mark.parametrize("name,stem,kw", _cases(), ids=[c[0] for c in _cases()])
def test_same_outputs_as_triton_interpreter(interpreter_outputs, name, stem, kw):
    L, ours, traces = _run_gpusim(stem, kw)
    ref = np.load(interpreter_outputs / f"{name}.npz")
    rtol, atol = L.get("rtol", 1e-5), L.get("atol", 1e-6)
    expected = L["reference"]()
    for key, got in ours.items():
        theirs = ref[key]
        assert got.shape == theirs.shape and got.dtype == theirs.dtype
        # gpusim and the interpreter agree to the kernel's tolerance ...
        np.testing.assert_allclose(got.astype(np.float64), theirs.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{name} output {key}: gpusim vs TRITON_INTERPRET=1")
        # ... and both equal the numpy reference
        k = json.loads(key)
        exp = expected[tuple(k) if isinstance(k, list) else k]
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(exp, np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{name} output {key}: gpusim vs numpy reference")
        np.testing.assert_allclose(theirs.astype(np.float64), np.asarray(exp, np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{name} output {key}: interpreter vs numpy reference")
    for tr in traces:
        assert tr.frontend == "triton" and tr.tables


def test_every_tile_kernel_has_a_small_case():
    missing = [s for s in _files() if s not in SMALL]
    assert not missing, f"add small launches for {missing} to SMALL"
