"""Fuzzing the front ends with hypothesis: random small kernels and launch shapes, valid and invalid.

Asserted for every example: no internal error (only ``GpusimError`` for bad input), the same cycles for the same
input twice (determinism), and for valid kernels results equal to numpy.
"""
from __future__ import annotations

import importlib.util
import itertools
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusim
from gpusim.errors import GpusimError

_DIR = Path(tempfile.mkdtemp(prefix="gpusim_fuzz_"))
_COUNT = itertools.count()

# ---- random elementwise Triton kernels --------------------------------------------------------------------

LEAVES = st.sampled_from(["x", "y", "1.5", "0.25"])


def _expr(depth):
    if depth == 0:
        return LEAVES
    sub = _expr(depth - 1)
    return st.one_of(
        LEAVES,
        st.tuples(st.sampled_from(["+", "-", "*"]), sub, sub).map(lambda t: f"({t[1]} {t[0]} {t[2]})"),
        st.tuples(st.sampled_from(["maximum", "minimum"]), sub, sub).map(lambda t: f"tl.{t[0]}({t[1]}, {t[2]})"),
        st.tuples(sub, sub).map(lambda t: f"tl.where({t[0]} > {t[1]}, {t[0]}, {t[1]})"),
        sub.map(lambda a: f"tl.abs({a})"),
        sub.map(lambda a: f"(-{a})"),
    )


def _numpy_eval(expr: str, x, y):
    ns = {"x": x, "y": y, "tl": type("tl", (), {
        "maximum": staticmethod(np.maximum), "minimum": staticmethod(np.minimum),
        "where": staticmethod(np.where), "abs": staticmethod(np.abs)})}
    with np.errstate(all="ignore"):
        return np.asarray(eval(expr, ns), dtype=np.float32)


def _triton_kernel(expr: str):
    path = _DIR / f"fuzz_tl_{next(_COUNT)}.py"
    path.write_text(
        "from gpusim import triton\nfrom gpusim.triton import language as tl\n\n\n"
        "@triton.jit\n"
        "def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    m = offs < n\n"
        "    x = tl.load(x_ptr + offs, mask=m, other=0.0)\n"
        "    y = tl.load(y_ptr + offs, mask=m, other=0.0)\n"
        f"    tl.store(out_ptr + offs, {expr}, mask=m)\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(expr=_expr(3), n=st.integers(1, 3000), block=st.sampled_from([32, 64, 128, 256, 1024]),
       num_warps=st.sampled_from([1, 2, 4, 8]))
def test_random_elementwise_triton_kernels_match_numpy_and_are_deterministic(expr, n, block, num_warps):
    k = _triton_kernel(expr)
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    grid = ((n + block - 1) // block,)
    cycles = []
    for _ in range(2):
        out = np.zeros(n, np.float32)
        r = gpusim.simulate(k, grid, x, y, out, n, BLOCK=block, num_warps=num_warps, progress=False)
        cycles.append(r["cycles"])
        np.testing.assert_allclose(out, _numpy_eval(expr, x, y), rtol=1e-5, atol=1e-5)
    assert cycles[0] == cycles[1]


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(block=st.integers(-64, 4096), grid=st.integers(-4, 300), num_warps=st.integers(-2, 64))
def test_triton_launch_shapes_are_run_or_refused_never_an_internal_error(block, grid, num_warps):
    k = _triton_kernel("x + y")
    n = 2000
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    try:
        gpusim.simulate(k, (grid,), x, x, out, n, BLOCK=block, num_warps=num_warps, progress=False)
    except GpusimError as e:
        assert str(e).strip() and "\n" not in str(e).strip()
        return
    # accepted: then it was a valid launch, and it computed what it covers
    covered = min(n, max(grid, 0) * block)
    assert np.all(out[:covered] == 2.0)


# ---- CUDA-style launch shapes -----------------------------------------------------------------------------

def _cuda_kernel():
    path = _DIR / "fuzz_cuda_add.py"
    if not path.exists():
        path.write_text(
            "from gpusim import cuda\n\n\n"
            "@cuda.jit\n"
            "def add2d(a, b, out):\n"
            "    i, j = cuda.grid(2)\n"
            "    if i < out.shape[0] and j < out.shape[1]:\n"
            "        out[i, j] = a[i, j] + b[i, j]\n")
    spec = importlib.util.spec_from_file_location("fuzz_cuda_add", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.add2d


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.integers(1, 70), cols=st.integers(1, 70), bx=st.integers(-2, 1100), by=st.integers(-2, 40),
       gx=st.integers(-1, 9), gy=st.integers(-1, 9), shared=st.sampled_from([0, 1024, 300_000]))
def test_cuda_launch_shapes_are_run_or_refused_never_an_internal_error(rows, cols, bx, by, gx, gy, shared):
    k = _cuda_kernel()
    rng = np.random.default_rng(rows * 100 + cols)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal((rows, cols)).astype(np.float32)
    cycles = []
    for _ in range(2):
        out = np.zeros_like(a)
        try:
            r = gpusim.simulate(k, (gx, gy), (bx, by), a, b, out, shared_bytes=shared, progress=False)
        except GpusimError as e:
            assert bx < 1 or by < 1 or gx < 1 or gy < 1 or bx * by > 1024 or shared > 227 * 1024, str(e)
            return
        cycles.append(r["cycles"])
        ci, cj = min(rows, gx * bx), min(cols, gy * by)
        np.testing.assert_array_equal(out[:ci, :cj], (a + b)[:ci, :cj])
        assert not out[ci:, :].any() and not out[:, cj:].any()
    assert cycles[0] == cycles[1]
