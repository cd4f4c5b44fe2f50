"""The SIMT front end against the H100 records: instruction counts per construct, the runtime unrolling and load
hoisting LLVM/ptxas apply, the register estimate, and the counts that must stay exact.

The instruction costs (gpusim/cuda/costs.py) were read off numba-cuda's sm_90 SASS of the suite's kernels and
fit to ``smsp__inst_executed.sum`` of records/ncu_*.json; ``python -m gpusim.validate.cuda_calibration --pipes``
prints the fit.  These tests hold every non-heavy CUDA case to it (tracing only, no timing: ~15 s).
"""
import numpy as np
import pytest

from gpusim import cuda
from gpusim.validate import cuda_calibration as K
from gpusim.cuda import costs as C_
from gpusim.cuda import runtime as R
from gpusim.cuda import trace_launch
from gpusim.trace import OpKind, Space
from gpusim.validate import records
from gpusim.validate.suite import case_by_name, load_case

INST_TOL = 0.10           # every case within 10% of smsp__inst_executed.sum
INST_MAPE = 0.05          # ... and 5% on average
REG_TOL = 4               # registers: the stated estimate error (costs.REGISTERS_ERROR)
REG_MEAN = 2.0
TPI_TOL = 0.3             # active threads per warp instruction (of 32)


@pytest.fixture(scope="module")
def rows():
    return K.compare()


def test_calibrated_cases_are_the_non_heavy_cuda_suite(rows):
    assert len(rows) == len(K.cases()) >= 40
    assert all(not r["case"].startswith(("tl_", "fa_", "attn_")) for r in rows)


def test_inst_executed_within_10_percent(rows):
    errs = {r["case"]: (r["pred"]["inst"] - r["meas"]["inst"]) / r["meas"]["inst"] for r in rows}
    bad = {k: f"{100 * e:+.1f}%" for k, e in errs.items() if abs(e) > INST_TOL}
    assert not bad, bad
    assert np.mean([abs(e) for e in errs.values()]) <= INST_MAPE


def test_registers_within_stated_error(rows):
    errs = {r["case"]: r["pred"]["regs"] - r["meas"]["regs"] for r in rows}
    bad = {k: e for k, e in errs.items() if abs(e) > REG_TOL}
    assert not bad, bad
    assert np.mean([abs(e) for e in errs.values()]) <= REG_MEAN
    assert "4" in C_.REGISTERS_ERROR


def test_threads_per_instruction(rows):
    for r in rows:
        p, m = r["pred"], r["meas"]
        assert abs(p["thread_inst"] / p["inst"] - m["thread_inst"] / m["inst"]) <= TPI_TOL, r["case"]
    div = {r["case"]: r["pred"]["thread_inst"] / r["pred"]["inst"] for r in rows if r["case"].startswith("divergence")}
    assert div["divergence_g32"] == 32 and all(v < 18 for k, v in div.items() if k != "divergence_g32")


def test_vector_add_is_exactly_what_numba_emits():
    """42 warp instructions per warp, split over Nsight's pipes as measured (see calibration's docstring)."""
    (pred,) = K.predicted(case_by_name("vector_add_n1024"))
    (meas,) = K.measured("vector_add_n1024")
    w = pred["warps"]
    assert pred["inst"] / w == meas["inst"] / w == 42
    for pipe in K.NCU_PIPES:
        assert pred["per_pipe"][pipe] == meas["per_pipe"][pipe], pipe


def test_pipe_split_plausible(rows):
    """Integer/logic work on the ALU pipe, IMAD/FP32 on the FMA pipe, FP64 and MUFU where they belong."""
    by = {r["case"]: r for r in rows}
    for name in ("math_fp32", "math_fp64", "math_exp", "row_col_sum_col_n1024", "divergence_g16"):
        p, m = by[name]["pred"]["per_pipe"], by[name]["meas"]["per_pipe"]
        for pipe in ("alu", "fma", "fp64", "xu", "lsu"):
            assert abs(p[pipe] - m[pipe]) <= 0.12 * max(m[pipe], 50 * by[name]["meas"]["warps"] / 100), (name, pipe)


# ---- exact counts ------------------------------------------------------------------------------------------

def _trace(name, **params):
    c = case_by_name(name)
    spec = load_case(c, {**c.params, **params} if params else None)
    tr = trace_launch(spec["kernel"], spec["grid"], spec["block"], spec["args"],
                      shared_bytes=spec.get("shared_bytes", 0))
    tr.check()
    return tr, spec


@pytest.mark.parametrize("name", ["vector_add_n65536", "strided_read_s2", "strided_read_s32", "row_col_sum_row_n1024",
                                  "row_col_sum_col_n1024", "matmul_naive_n256", "grid_stride_copy_smem16k"])
def test_global_sectors_per_request_exact(name):
    tr, _ = _trace(name)
    meas = records.measured(name)
    for kind, key in ((OpKind.LOAD, "gld_sectors_per_request"), (OpKind.STORE, "gst_sectors_per_request")):
        req = sec = 0
        for t in tr.tables:
            act = t.active
            for i, op in enumerate(t.ops):
                if op.kind == kind and op.mem.space == Space.GLOBAL:
                    on = np.ones(t.n_warps, bool) if act is None else act[i] > 0
                    req += int(on.sum())
                    sec += int(op.mem.sectors_per_warp()[on].sum())
        assert sec / req == pytest.approx(meas[key], rel=1e-3), key


@pytest.mark.parametrize("stride", [1, 2, 8, 32, 33])
def test_shared_bank_conflicts_exact(stride):
    name = f"bank_conflicts_s{stride}"
    tr, _ = _trace(name)
    conflicts = 0
    for t in tr.tables:
        for i, op in enumerate(t.ops):
            if op.kind == OpKind.LOAD and op.mem.space == Space.SHARED:
                conflicts += int((op.mem.wavefronts - op.mem.shared_ideal_wavefronts).sum())
    assert conflicts == records.measured(name)["shared_ld_bank_conflicts"]


# ---- runtime unrolling and load hoisting ------------------------------------------------------------------

@cuda.jit
def k_col_sum(m, out):
    j = cuda.grid(1)
    if j < out.size:
        s = np.float32(0.0)
        for i in range(m.shape[0]):
            s += m[i, j]
        out[j] = s


@cuda.jit
def k_chase(nxt, out, steps):
    i = cuda.grid(1)
    j = i
    for _ in range(steps):
        j = nxt[j] + 1
    out[i] = j


def _run(kernel, grid, block, args, unroll=True):
    old = R.UNROLL
    R.UNROLL = unroll
    try:
        tr = trace_launch(kernel, grid, block, args)
    finally:
        R.UNROLL = old
    tr.check()
    return tr


def _loads(t):
    return [i for i, op in enumerate(t.ops) if op.kind == OpKind.LOAD]


def test_column_walk_has_four_loads_in_flight():
    n = 64
    m = np.random.default_rng(0).random((n, n), dtype=np.float32)
    out = np.zeros(n, np.float32)
    tr = _run(k_col_sum, 2, 32, [m, out])
    np.testing.assert_allclose(out, m.sum(axis=0), rtol=1e-5)
    (t,) = tr.tables
    loads = _loads(t)
    assert len(loads) == n                              # unrolling moves loads, it removes none
    groups = [loads[k:k + 4] for k in range(0, n, 4)]
    for g in groups:
        assert g == list(range(g[0], g[0] + 4))         # issued back to back ...
        assert not any(d in g for i in g for d in t.ops[i].deps)   # ... none waiting for another
    # each group's adds come after its 4 loads and wait for them
    fadds = [i for i, op in enumerate(t.ops) if op.label == "FADD"]
    assert all(any(d in groups[0] for d in t.ops[f].deps) for f in fadds[:4])


def test_unrolling_removes_the_loop_overhead_and_changes_no_value():
    n = 66                                               # 16 groups of 4 and a remainder of 2
    m = np.random.default_rng(1).random((n, n), dtype=np.float32)
    out_u, out_r = np.zeros(n, np.float32), np.zeros(n, np.float32)
    unrolled = _run(k_col_sum, 3, 32, [m, out_u])
    raw = _run(k_col_sum, 3, 32, [m, out_r], unroll=False)
    np.testing.assert_array_equal(out_u, out_r)
    np.testing.assert_allclose(out_u, m.sum(axis=0), rtol=1e-5)
    cu, cr = unrolled.instruction_counts(), raw.instruction_counts()
    warps = unrolled.n_ctas * unrolled.warps_per_cta
    per_iter = sum(n for _, n, _ in C_.COSTS[("loop_counter",)] + C_.COSTS[("loop_branch",)])
    groups = n // C_.LOOP_UNROLL_FACTOR
    # 3 of every 4 iterations lose their trip test and back-edge branch
    assert cr["inst_executed"] - cu["inst_executed"] == groups * (C_.LOOP_UNROLL_FACTOR - 1) * per_iter * warps
    assert cr["per_pipe"]["lsu"] == cu["per_pipe"]["lsu"]
    for tr in (unrolled, raw):                           # every dep points at an earlier op
        for t in tr.tables:
            assert all(d < i for i, op in enumerate(t.ops) for d in op.deps)


def test_pointer_chase_is_never_hoisted():
    n, steps = 64, 12
    nxt = np.random.default_rng(2).integers(0, n - 1, n).astype(np.int64)
    out = np.zeros(n, np.int64)
    tr = _run(k_chase, 2, 32, [nxt, out, steps])
    ref = np.arange(n)
    for _ in range(steps):
        ref = nxt[ref] + 1
    np.testing.assert_array_equal(out, ref)
    (t,) = tr.tables
    loads = _loads(t)
    assert len(loads) == steps
    for a, b in zip(loads, loads[1:]):
        # the next load's address comes from this one's value, through ALU ops in between
        assert t.ops[b].deps and all(a < d < b for d in t.ops[b].deps)
        chain = t.ops[b].deps[0]
        seen, todo = set(), [chain]
        while todo:
            k = todo.pop()
            seen.add(k)
            todo.extend(d for d in t.ops[k].deps if d not in seen)
        assert a in seen


def test_loop_with_a_barrier_is_not_unrolled():
    tr, _ = _trace("matmul_tiled_n256", n=64)
    labels = [op.label for t in tr.tables for op in t.ops]
    assert "LOP3+ISETP+SEL+IADD3" not in labels          # no remainder set-up of an unrolled loop
    assert labels.count("BAR.SYNC") == 2 * 4


def test_register_estimate_counts_loads_in_flight():
    n = 64
    m = np.ones((n, n), np.float32)
    tr = _run(k_col_sum, 2, 32, [m, np.zeros(n, np.float32)])
    info = tr.meta["registers"]
    assert info["unrolled_loads_in_flight"] == 3         # 3 more fp32 results held than without unrolling
    assert info["range_iterators"] == 4                  # 64-bit count + 64-bit value
    assert tr.regs_per_thread == info["estimate"]
