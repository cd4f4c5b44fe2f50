"""What gpusim.triton computes: every tl op against numpy, masks, program-varying control flow, errors.

The kernels here use gpusim's front end explicitly (``from gpusim import triton``), so they run without Triton.
"""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import triton
from gpusim.errors import CompileError, OutOfBounds, UnsupportedConstruct
from gpusim.triton import language as tl
from gpusim.triton import trace_launch

RNG = np.random.default_rng(1)


def _line_of(fn, text):
    """Source line (in this file) of the first line of ``fn`` containing ``text``."""
    import inspect
    lines, first = inspect.getsourcelines(fn.fn)
    for i, ln in enumerate(lines):
        if text in ln:
            return first + i
    raise AssertionError(text)


# ---------------------------------------------------------------------------------------------------------
# elementwise arithmetic, broadcasting, masks
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def binop_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "min":
        r = tl.minimum(x, y)
    elif OP == "and":
        r = x & y
    elif OP == "xor":
        r = x ^ y
    elif OP == "lt":
        r = (x < y).to(tl.int32)
    else:
        r = tl.where(x > y, x, y * 2)
    tl.store(out_ptr + offs, r, mask=m)


@pytest.mark.parametrize("op,ref", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("max", np.maximum), ("min", np.minimum),
    ("where", lambda x, y: np.where(x > y, x, y * 2))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_binops(op, ref, dtype):
    n = 1000
    x = RNG.standard_normal(n).astype(dtype)
    y = RNG.standard_normal(n).astype(dtype)
    out = np.zeros(n, dtype)
    binop_kernel[(triton.cdiv(n, 256),)](x, y, out, n, OP=op, BLOCK=256)
    np.testing.assert_allclose(out, ref(x, y), rtol=1e-6)


def test_int_division_truncates_toward_zero():
    # Triton's // and % on signed ints are C's (sdiv/srem), not Python's floor semantics
    n = 512
    x = RNG.integers(-1000, 1000, n).astype(np.int32)
    y = RNG.integers(1, 17, n).astype(np.int32) * RNG.choice([-1, 1], n).astype(np.int32)
    q = np.zeros(n, np.int32)
    r = np.zeros(n, np.int32)
    binop_kernel[(2,)](x, y, q, n, OP="floordiv", BLOCK=256)
    binop_kernel[(2,)](x, y, r, n, OP="mod", BLOCK=256)
    np.testing.assert_array_equal(q, np.trunc(x / y).astype(np.int32))
    np.testing.assert_array_equal(r, np.fmod(x, y))
    assert (q != x // y).any()          # the cases where floor division would differ are exercised


def test_int_bitwise_and_compare():
    n = 300
    x = RNG.integers(0, 1 << 20, n).astype(np.int32)
    y = RNG.integers(0, 1 << 20, n).astype(np.int32)
    for op, ref in (("and", np.bitwise_and), ("xor", np.bitwise_xor), ("lt", lambda a, b: (a < b).astype(np.int32))):
        out = np.zeros(n, np.int32)
        binop_kernel[(2,)](x, y, out, n, OP=op, BLOCK=256)
        np.testing.assert_array_equal(out, ref(x, y))


def test_int32_arithmetic_wraps():
    n = 4
    x = np.full(n, 2 ** 31 - 1, np.int32)
    y = np.ones(n, np.int32) * 2
    out = np.zeros(n, np.int32)
    binop_kernel[(1,)](x, y, out, n, OP="add", BLOCK=4)
    np.testing.assert_array_equal(out, (x.astype(np.int64) + 2 - 2 ** 32).astype(np.int32))


def test_masked_lanes_get_other_and_never_touch_memory():
    # 'other' fills masked lanes; masked store lanes past the end of a 10-element array raise nothing
    n = 10
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 3.0, np.float32)
    out = np.zeros(n, np.float32)
    binop_kernel[(1,)](x, y, out, n, OP="mul", BLOCK=1024)
    np.testing.assert_array_equal(out, x * 3)


@triton.jit
def fp16_kernel(x_ptr, y_ptr, out_ptr, out32_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    s = x + y                       # fp16 + fp16 -> fp16 (rounded)
    tl.store(out_ptr + offs, s)
    tl.store(out32_ptr + offs, x.to(tl.float32) + y.to(tl.float32))


def test_fp16_arithmetic_rounds_to_fp16():
    x = (RNG.standard_normal(64) * 100).astype(np.float16)
    y = (RNG.standard_normal(64) * 1e-2).astype(np.float16)
    out = np.zeros(64, np.float16)
    out32 = np.zeros(64, np.float32)
    fp16_kernel[(1,)](x, y, out, out32, BLOCK=64)
    np.testing.assert_array_equal(out, (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16))
    np.testing.assert_array_equal(out32, x.astype(np.float32) + y.astype(np.float32))


@triton.jit
def cast_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, DT: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(DT).to(tl.float32))


def test_casts_round_like_the_gpu():
    x = (RNG.standard_normal(128) * 1000).astype(np.float32)
    out = np.zeros(128, np.float32)
    cast_kernel[(1,)](x, out, BLOCK=128, DT=tl.float16)
    np.testing.assert_array_equal(out, x.astype(np.float16).astype(np.float32))
    cast_kernel[(1,)](x, out, BLOCK=128, DT=tl.int32)
    np.testing.assert_array_equal(out, np.trunc(x))
    cast_kernel[(1,)](x, out, BLOCK=128, DT=tl.bfloat16)
    # bf16: 8 significant bits, round to nearest even on the bit pattern
    u = x.view(np.uint32)
    ref = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(out, ref)
    assert not np.array_equal(out, x)


@triton.jit
def broadcast_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    a = tl.load(a_ptr + rm)             # (M,)
    b = tl.load(b_ptr + rn)             # (N,)
    tile = a[:, None] * 10 + b[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tile)


def test_broadcasting_none_indexing():
    a = np.arange(8, dtype=np.float32)
    b = np.arange(16, dtype=np.float32)
    out = np.zeros((8, 16), np.float32)
    broadcast_kernel[(1,)](a, b, out, M=8, N=16)
    np.testing.assert_array_equal(out, a[:, None] * 10 + b[None, :])


@triton.jit
def math_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, FN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(tl.abs(x) + 1)
    elif FN == "log2":
        y = tl.log2(tl.abs(x) + 1)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "sqrt":
        y = tl.sqrt(tl.abs(x))
    elif FN == "rsqrt":
        y = tl.rsqrt(tl.abs(x) + 1)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "fma":
        y = tl.fma(x, x, 1.0)
    else:
        y = tl.abs(x)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize("fn,ref", [
    ("exp", np.exp), ("exp2", np.exp2), ("log", lambda x: np.log(np.abs(x) + 1)),
    ("log2", lambda x: np.log2(np.abs(x) + 1)), ("sin", np.sin), ("cos", np.cos),
    ("sqrt", lambda x: np.sqrt(np.abs(x))), ("rsqrt", lambda x: 1 / np.sqrt(np.abs(x) + 1)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("fma", lambda x: x * x + 1), ("abs", np.abs)])
def test_math_functions(fn, ref):
    x = RNG.standard_normal(256).astype(np.float32) * 3
    out = np.zeros(256, np.float32)
    math_kernel[(1,)](x, out, BLOCK=256, FN=fn)
    np.testing.assert_allclose(out, ref(x).astype(np.float32), rtol=2e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def reduce_kernel(x_ptr, out_ptr, idx_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                  KIND: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if KIND == "sum":
        r = tl.sum(x, axis=AXIS)
    elif KIND == "max":
        r = tl.max(x, axis=AXIS)
    else:
        r = tl.min(x, axis=AXIS)
    if AXIS == 0:
        tl.store(out_ptr + rn, r)
        tl.store(idx_ptr + rn, tl.argmax(x, axis=0))
    else:
        tl.store(out_ptr + rm, r)
        tl.store(idx_ptr + rm, tl.argmin(x, axis=1))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reductions(axis, kind):
    M, N = 16, 32
    x = RNG.standard_normal((M, N)).astype(np.float32)
    out = np.zeros(N if axis == 0 else M, np.float32)
    idx = np.zeros_like(out, dtype=np.int32)
    reduce_kernel[(1,)](x, out, idx, M=M, N=N, AXIS=axis, KIND=kind)
    ref = {"sum": x.sum, "max": x.max, "min": x.min}[kind](axis=axis)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    np.testing.assert_array_equal(idx, x.argmax(0) if axis == 0 else x.argmin(1))


@triton.jit
def keepdims_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    mx = tl.max(x, axis=1, keep_dims=True)          # (M, 1)
    y = tl.exp(x - mx)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y / tl.sum(y, axis=1, keep_dims=True))


def test_keep_dims_softmax():
    x = RNG.standard_normal((8, 64)).astype(np.float32)
    out = np.zeros_like(x)
    keepdims_kernel[(1,)](x, out, M=8, N=64)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)


@triton.jit
def dtype_rules_kernel(h_ptr, out_sum_ptr, out_max_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    s = tl.sum(h, axis=0)               # fp16 stays fp16
    m = tl.max(h, axis=0)               # fp16 is promoted to fp32 by Triton's max
    tl.static_assert(s.dtype == tl.float16)
    tl.static_assert(m.dtype == tl.float32)
    tl.store(out_sum_ptr, s)
    tl.store(out_max_ptr, m)


def test_reduction_result_dtypes():
    h = RNG.standard_normal(64).astype(np.float16)
    s = np.zeros(1, np.float16)
    m = np.zeros(1, np.float32)
    dtype_rules_kernel[(1,)](h, s, m, BLOCK=64)
    assert abs(float(s[0]) - float(h.astype(np.float32).sum())) < 0.05
    assert m[0] == h.astype(np.float32).max()


# ---------------------------------------------------------------------------------------------------------
# dot
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PREC: tl.constexpr,
               ACC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        acc = tl.full((M, N), 1.0, tl.float32)
        c = tl.dot(a, b, acc, input_precision=PREC)
    else:
        c = tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("acc", [False, True])
def test_dot_fp16_fp32_accumulate(acc):
    M, N, K = 64, 32, 128
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    dot_kernel[(1,)](a, b, c, M=M, N=N, K=K, PREC="tf32", ACC=acc)
    ref = a.astype(np.float64) @ b.astype(np.float64) + (1.0 if acc else 0.0)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def test_dot_bf16_inputs():
    torch = pytest.importorskip("torch")
    M, N, K = 32, 32, 32
    a = torch.randn(M, K).to(torch.bfloat16)
    b = torch.randn(K, N).to(torch.bfloat16)
    c = torch.zeros(M, N)
    dot_kernel[(1,)](a, b, c, M=M, N=N, K=K, PREC="tf32", ACC=False)
    ref = a.double() @ b.double()
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=1e-4, atol=1e-3)


def test_dot_tf32_rounds_fp32_inputs_ieee_does_not():
    M, N, K = 32, 32, 64
    a = RNG.standard_normal((M, K)).astype(np.float32)
    b = RNG.standard_normal((K, N)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    c_tf32 = np.zeros((M, N), np.float32)
    c_ieee = np.zeros((M, N), np.float32)
    dot_kernel[(1,)](a, b, c_tf32, M=M, N=N, K=K, PREC="tf32", ACC=False)
    dot_kernel[(1,)](a, b, c_ieee, M=M, N=N, K=K, PREC="ieee", ACC=False)
    err_tf32 = np.abs(c_tf32 - exact).max()
    err_ieee = np.abs(c_ieee - exact).max()
    assert err_ieee < 1e-4
    assert 1e-4 < err_tf32 < 5e-2            # tf32 keeps 10 mantissa bits: ~1e-3 relative per product


# ---------------------------------------------------------------------------------------------------------
# atomics
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    bins = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(hist_ptr + bins, 1, mask=m)


def test_atomic_add_with_colliding_addresses():
    n = 5000
    x = RNG.integers(0, 10, n).astype(np.int32)
    hist = np.zeros(10, np.int32)
    histogram_kernel[(triton.cdiv(n, 512),)](x, hist, n, BLOCK=512)
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=10))


@triton.jit
def atomic_old_kernel(ctr_ptr, old_ptr, mx_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    old = tl.atomic_add(ctr_ptr, 1)                  # one ticket per program
    tl.store(old_ptr + pid, old)
    tl.atomic_max(mx_ptr, pid * 3)


def test_atomic_returns_old_values_and_max():
    ctr = np.zeros(1, np.int32)
    old = np.full(37, -1, np.int32)
    mx = np.zeros(1, np.int32)
    atomic_old_kernel[(37,)](ctr, old, mx, BLOCK=1)
    assert ctr[0] == 37
    assert sorted(old.tolist()) == list(range(37))   # every program saw a distinct old value
    assert mx[0] == 36 * 3


@triton.jit
def cas_kernel(lock_ptr, won_ptr):
    pid = tl.program_id(0)
    prev = tl.atomic_cas(lock_ptr, 0, pid + 1)
    tl.store(won_ptr + pid, (prev == 0).to(tl.int32))


def test_atomic_cas_exactly_one_winner():
    lock = np.zeros(1, np.int32)
    won = np.zeros(16, np.int32)
    cas_kernel[(16,)](lock, won)
    assert won.sum() == 1
    assert lock[0] == int(np.argmax(won)) + 1


# ---------------------------------------------------------------------------------------------------------
# program-varying control flow (masked lockstep)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def triangle_kernel(out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, pid + 1):                       # trip count differs per program
        acc += i + 1.0
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


def test_program_varying_for_loop():
    out = np.zeros((9, 4), np.float32)
    triangle_kernel[(9,)](out, BLOCK=4)
    ref = np.array([(p + 1) * (p + 2) / 2 for p in range(9)], np.float32)
    np.testing.assert_array_equal(out, np.repeat(ref[:, None], 4, 1))


@triton.jit
def branch_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if pid % 3 == 0:
        y = x * 2
    elif pid % 3 == 1:
        y = x + 100
    else:
        y = -x
    if pid == 4:
        return                                       # program 4 stores nothing
    k = 0
    while k < pid:                                   # while loop with a program-varying condition
        y = y + 1
        k += 1
    tl.store(out_ptr + offs, y)


def test_program_varying_if_elif_while_and_return():
    P, B = 7, 8
    x = RNG.standard_normal(P * B).astype(np.float32)
    out = np.full(P * B, 99.0, np.float32)
    branch_kernel[(P,)](x, out, BLOCK=B)
    for p in range(P):
        xs = x[p * B:(p + 1) * B]
        y = [xs * 2, xs + 100, -xs][p % 3] + p
        got = out[p * B:(p + 1) * B]
        if p == 4:
            np.testing.assert_array_equal(got, 99.0)
        else:
            np.testing.assert_allclose(got, y, rtol=1e-6)


@triton.jit
def cumsum_grid_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0))


def test_cumsum():
    x = RNG.integers(0, 9, 64).astype(np.int32)
    out = np.zeros_like(x)
    cumsum_grid_kernel[(1,)](x, out, N=64)
    np.testing.assert_array_equal(out, np.cumsum(x))


# ---------------------------------------------------------------------------------------------------------
# shapes and views
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def views_kernel(x_ptr, t_ptr, r_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    xt = tl.trans(x)                                   # (N, M)
    tl.store(t_ptr + rn[:, None] * M + rm[None, :], xt)
    r = tl.reshape(x, (M * N,))
    tl.store(r_ptr + tl.arange(0, M * N), tl.broadcast_to(tl.expand_dims(tl.sum(r, 0), 0), (M * N,)) + r)


def test_trans_reshape_broadcast():
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    t = np.zeros((8, 4), np.float32)
    r = np.zeros(32, np.float32)
    views_kernel[(1,)](x, t, r, M=4, N=8)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_allclose(r, x.sum() + x.reshape(-1), rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# arguments: torch tensors, real Triton kernels, autotune / heuristics
# ---------------------------------------------------------------------------------------------------------

def test_torch_tensors_written_in_place():
    torch = pytest.importorskip("torch")
    n = 3000
    x = torch.randn(n)
    y = torch.randn(n)
    out = torch.zeros(n)
    binop_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, OP="add", BLOCK=1024)
    assert torch.equal(out, x + y)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=2), triton.Config({"BLOCK": 1024})],
                 key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_autotune_times_every_config():
    import gpusim.api  # noqa: F401  (installs the engine as the autotuner's stopwatch)
    n = 1000
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    tr = trace_launch(tuned_kernel, lambda meta: (triton.cdiv(n, meta["BLOCK"]),), [x, out, n])
    np.testing.assert_array_equal(out, x * 2)
    info = tr.meta["autotune"]
    assert len(info["configs"]) == 2 and all(c["cycles"] for c in info["configs"])
    best = min(info["configs"], key=lambda c: c["cycles"])
    assert info["chosen"] == best["config"]
    assert any("simulated every one of the 2 configs" in s for s in tr.notes)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def heur_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 2, mask=offs < n)


def test_heuristics_compute_constexprs():
    for n, add in ((256, 1), (250, 2)):
        x = RNG.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        heur_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
        np.testing.assert_allclose(out, x + add)


def test_real_triton_jit_function_runs_under_gpusim():
    pytest.importorskip("triton")
    import importlib.util
    import sys
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "kernels" / "tl_vector_add.py"
    if not path.exists():
        pytest.skip("kernels/tl_vector_add.py not present")
    spec = importlib.util.spec_from_file_location("tl_vector_add_real", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if type(mod.add_kernel).__module__.split(".")[0] != "triton":
        pytest.skip("Triton not importable here")
    L = mod.launch(n=3000)
    tr = trace_launch(L["kernel"], L["grid"], L["args"], L["meta"])
    for k, ref in L["reference"]().items():
        np.testing.assert_allclose(L["args"][k], ref, rtol=L["rtol"], atol=L["atol"])
    assert tr.name == "add_kernel" and "tl_vector_add.py" in tr.source_file


# ---------------------------------------------------------------------------------------------------------
# errors name the user's file:line and the operation
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def bad_dot_kernel(a_ptr, b_ptr, c_ptr, K1: tl.constexpr, K2: tl.constexpr, BAD: tl.constexpr):
    r32 = tl.arange(0, 32)
    a = tl.load(a_ptr + r32[:, None] * K1 + tl.arange(0, K1)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K2)[:, None] * 32 + r32[None, :])
    if BAD == "dtype":
        b = b.to(tl.float32)
    if BAD == "rank":
        c = tl.dot(tl.reshape(a, (32 * K1,)), b)
    else:
        c = tl.dot(a, b)
    tl.store(c_ptr + r32[:, None] * 32 + r32[None, :], c)


@pytest.mark.parametrize("k1,k2,bad,msg", [
    (32, 64, "", "not compatible"),
    (8, 8, "", "K >= 16"),
    (32, 32, "dtype", "same dtype"),
    (32, 32, "rank", "2D or 3D"),
])
def test_dot_errors_name_file_and_line(k1, k2, bad, msg):
    a = np.zeros((32, k1), np.float16)
    b = np.zeros((k2, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    with pytest.raises(CompileError) as ei:
        bad_dot_kernel[(1,)](a, b, c, K1=k1, K2=k2, BAD=bad)
    e = ei.value
    assert msg in str(e) and "tl.dot" in str(e)
    assert e.file.endswith("test_triton_semantics.py")
    assert e.line == _line_of(bad_dot_kernel, "tl.dot(tl.reshape" if bad == "rank" else "c = tl.dot(a, b)")
    assert f"test_triton_semantics.py:{e.line}" in str(e)


@triton.jit
def arange_kernel(out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, offs)


def test_non_power_of_two_arange():
    with pytest.raises(CompileError) as ei:
        arange_kernel[(1,)](np.zeros(64, np.int32), N=48)
    assert "power of 2" in str(ei.value) and "arange" in str(ei.value)
    assert ei.value.line == _line_of(arange_kernel, "tl.arange(0, N)")


def test_missing_constexpr():
    with pytest.raises(CompileError) as ei:
        arange_kernel[(1,)](np.zeros(64, np.int32))
    assert "'N'" in str(ei.value) and "constexpr" in str(ei.value)
    assert ei.value.file.endswith("test_triton_semantics.py")


@triton.jit
def unsupported_kernel(x_ptr):
    tl.store(x_ptr, tl.dot_scaled(tl.zeros((2, 16, 16), tl.uint8), None, "e2m1", tl.zeros((2, 16, 16), tl.uint8),
                                  None, "e2m1"))      # batched (3D) microscaled products: not simulated


def test_unsupported_tl_function_is_named():
    with pytest.raises(UnsupportedConstruct) as ei:
        unsupported_kernel[(1,)](np.zeros(1, np.int32))
    assert "tl.dot_scaled" in str(ei.value)
    assert ei.value.line == _line_of(unsupported_kernel, "dot_scaled")


@triton.jit
def oob_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))        # no mask


def test_unmasked_out_of_bounds_names_program_and_offsets():
    x = np.zeros(100, np.float32)
    out = np.zeros(100, np.float32)
    with pytest.raises(OutOfBounds) as ei:
        oob_kernel[(4,)](x, out, BLOCK=32)
    e = ei.value
    assert e.program == (3, 0, 0)
    assert "100, 101, 102" in str(e) and "'x_ptr'" in str(e)
    assert e.line == _line_of(oob_kernel, "tl.load(x_ptr + offs)")


def test_break_is_rejected_at_compile_time():
    import textwrap
    import types
    src = textwrap.dedent('''
    from gpusim import triton
    from gpusim.triton import language as tl

    @triton.jit
    def k(x_ptr):
        for i in range(4):
            break
    ''')
    import tempfile
    import importlib.util
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("brk", f.name)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    with pytest.raises(UnsupportedConstruct) as ei:
        m.k[(1,)](np.zeros(1, np.float32))
    assert "break" in str(ei.value) and ei.value.line == 8


@triton.jit
def _k_umulhi_hist_item(x_ptr, y_ptr, hi_ptr, h_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr):
    o = tl.arange(0, 2 * M)
    x = tl.load(x_ptr + o)
    tl.store(hi_ptr + o, tl.umulhi(x, tl.load(y_ptr + o)))
    tl.store(h_ptr + tl.arange(0, N), tl.histogram(x & (N - 1), N, o < M))     # only the first M counted
    acc = 0
    for i in tl.static_range(0, 8, step=2):
        acc += i
    for j in tl.range(1, 7, step=3):
        acc += j * 100
    tl.store(s_ptr, acc + tl.full((1,), 7, dtype=tl.int32).item() * 1000)


def test_umulhi_of_signed_ints_histogram_mask_range_step_and_item():
    """Triton 3.6: ``umulhi`` is the high half of the *unsigned* product (__nv_umulhi) for int32 operands too;
    ``histogram(x, n, mask)`` counts the elements under the mask; ``static_range`` / ``range`` take ``step=``;
    ``tensor.item()`` makes a one-element tensor a scalar."""
    x = np.array([-1, -2, 3, -7, 5, 6, -8, 9], np.int32)
    y = np.array([2, -2, -1, 5, 7, -3, 4, 1], np.int32)
    hi, h, s = np.zeros(8, np.int32), np.zeros(4, np.int32), np.zeros(1, np.int32)
    trace_launch(_k_umulhi_hist_item, (1,), [x, y, hi, h, s], {"M": 4, "N": 4})
    want = ((x.view(np.uint32).astype(np.uint64) * y.view(np.uint32).astype(np.uint64)) >> np.uint64(32))
    np.testing.assert_array_equal(hi, want.astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(h, np.bincount(x[:4] & 3, minlength=4))
    assert s[0] == (0 + 2 + 4 + 6) + (1 + 4) * 100 + 7000
    assert triton.__version__ == "3.6.0"
