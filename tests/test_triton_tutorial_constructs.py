"""The constructs Triton's tutorials 01-09 use that gpusim's Triton front end had to learn (project issue 12):
builtin ``min``/``max`` on per-program values (tutorial 03's grouped ordering), ``@triton.autotune`` timing every
config, ``warmup`` and ``triton.runtime.driver`` (tutorial 02), Philox random numbers (tutorial 04), 0-d loads and
stores and a spin lock on atomics (tutorial 05), pointer tables cast from int64 (tutorial 08), ``libdevice``
(tutorial 07).  Each against numpy or analytic values; where Triton's interpreter runs the construct, against it
too (``contract``: ``TRITON_INTERPRET=1`` in a subprocess, on the same kernel source)."""
from __future__ import annotations

import importlib
import importlib.util
import math
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gpusim.api  # noqa: F401  (the engine times autotune configs)
from gpusim.errors import CompileError, KernelError, OutOfBounds, UnsupportedConstruct
from gpusim.trace import OpKind
from gpusim.triton import trace_launch, run_launch
from gpusim import triton
from gpusim.triton import language as tl

TESTS = Path(__file__).resolve().parent
RNG = np.random.default_rng(12)


# ---------------------------------------------------------------------------------------------------------
# 1. builtin min / max, tutorial 03
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def banded_gemm(x_ptr, y_ptr, out_ptr, M, N, K, sx_row, sx_col, sy_row, sy_col, so_row, so_col,
                TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr, BAND: tl.constexpr):
    # out = x @ y, one TM x TN tile of out per program.  Programs are numbered band by band: a band is BAND
    # consecutive tile rows, walked column-major inside the band, so neighbouring programs reuse rows of x
    # and columns of y.  The bottom band can be thinner than BAND, so its height differs between programs.
    prog = tl.program_id(0)
    tiles_m = tl.cdiv(M, TM)
    tiles_n = tl.cdiv(N, TN)
    progs_per_band = BAND * tiles_n
    band = prog // progs_per_band
    top = band * BAND
    height = min(tiles_m - top, BAND)          # builtin min on per-program values
    rank = prog - band * progs_per_band        # position inside the band
    tile_m = top + rank % height
    tile_n = rank // height
    rows = tile_m * TM + tl.arange(0, TM)
    cols = tile_n * TN + tl.arange(0, TN)
    row_ok = rows < M
    col_ok = cols < N
    acc = tl.zeros((TM, TN), dtype=tl.float32)
    for k0 in range(0, K, TK):
        ks = k0 + tl.arange(0, TK)
        k_ok = ks < K
        xt = tl.load(x_ptr + rows[:, None] * sx_row + ks[None, :] * sx_col,
                     mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        yt = tl.load(y_ptr + ks[:, None] * sy_row + cols[None, :] * sy_col,
                     mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(xt, yt, acc)
    dst = out_ptr + rows[:, None] * so_row + cols[None, :] * so_col
    tl.store(dst, acc.to(tl.float16), mask=row_ok[:, None] & col_ok[None, :])


def _matmul_args(M, N, K):
    a = (RNG.random((M, K), dtype=np.float32) - 0.5).astype(np.float16)
    b = (RNG.random((K, N), dtype=np.float32) - 0.5).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    return a, b, c, [a, b, c, M, N, K, K, 1, N, 1, N, 1]


@pytest.mark.parametrize("bk", [32, 64])
def test_tutorial03_320_groups_of_different_sizes(bk):
    # 5 x 5 tiles in groups of 2 rows: the last group has one row (group_size_m differs between programs)
    a, b, c, args = _matmul_args(320, 320, 320)
    meta = dict(TM=64, TN=64, TK=bk, BAND=2, num_warps=4, num_stages=3)
    tr = trace_launch(banded_gemm, (25,), args, meta)
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=0)
    assert tr.n_ctas == 25 and any(op.kind == OpKind.MMA for t in tr.tables for op in t.ops)


def test_tutorial03_1408_128x128x64():
    a, b, c, args = _matmul_args(1408, 1408, 1408)
    meta = dict(TM=128, TN=128, TK=64, BAND=8, num_warps=4, num_stages=4)
    tr = trace_launch(banded_gemm, (121,), args, meta)     # 11 x 11 tiles: groups of 8, 3 rows
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=0)
    assert tr.n_ctas == 121


@triton.jit
def minmax_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    a = min(n - pid, 3)                      # per-program scalar
    b = max(pid, 2, n // 4)                  # three arguments, folded left to right
    c = min(offs, pid)                       # a tile (deprecated in Triton, accepted)
    k = min(BLOCK, 7)                        # constexprs: Python's min
    tl.store(out_ptr + pid * 4 * BLOCK + offs, a + offs * 0)
    tl.store(out_ptr + pid * 4 * BLOCK + BLOCK + offs, b + offs * 0)
    tl.store(out_ptr + pid * 4 * BLOCK + 2 * BLOCK + offs, c)
    tl.store(out_ptr + pid * 4 * BLOCK + 3 * BLOCK + offs, k + offs * 0)


def test_builtin_min_max_on_program_values():
    n, B, P = 10, 8, 12
    out = np.zeros(P * 4 * B, np.int32)
    minmax_kernel[(P,)](out, n, BLOCK=B)
    o = out.reshape(P, 4, B)
    pid = np.arange(P)
    np.testing.assert_array_equal(o[:, 0, 0], np.minimum(n - pid, 3))
    np.testing.assert_array_equal(o[:, 1, 0], np.maximum(np.maximum(pid, 2), n // 4))
    np.testing.assert_array_equal(o[:, 2], np.minimum(np.arange(B)[None, :], pid[:, None]))
    assert (o[:, 3] == 7).all()


@triton.jit
def abs_kernel(out_ptr, n):
    tl.store(out_ptr + tl.program_id(0), abs(n - tl.program_id(0)))


def test_builtin_abs_is_undefined_as_in_triton():
    out = np.zeros(4, np.int32)
    with pytest.raises(CompileError, match="abs is not defined.*tl.abs") as e:
        abs_kernel[(4,)](out, 2)
    assert e.value.line > 0 and e.value.file.endswith("test_triton_tutorial_constructs.py")


@triton.jit
def fp8_kernel(x_ptr, out_ptr, FP8: tl.constexpr):
    offs = tl.arange(0, 32)
    x = tl.load(x_ptr + offs)
    if FP8 == tl.float8e5:              # a constexpr comparison (tutorial 06's fp8 branch)
        x = x.to(tl.float8e5)           # fp32 -> E5M2: round to nearest even, saturating
    tl.store(out_ptr + offs, x + 1)     # fp8 + 1 is computed in fp8 (Triton's computation type)


@triton.jit
def fp8_legacy_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 32)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4b15))


def _e5m2(v):
    """E5M2 rounding written out: 2 mantissa bits, ties to even, subnormals 2^-16 apart, saturating at 57344."""
    out = []
    for x in np.asarray(v, np.float64):
        a = abs(x)
        if a < 2.0 ** -14:
            step = 2.0 ** -16
        else:
            step = 2.0 ** (math.floor(math.log2(a)) - 2)
        q = a / step
        r = math.floor(q)
        if q - r > 0.5 or (q - r == 0.5 and r % 2 == 1):
            r += 1
        out.append(math.copysign(min(r * step, 57344.0), x))
    return np.array(out, np.float32)


def test_fp8_e5m2_conversion_and_arithmetic_round_as_the_hopper_does():
    x = np.array([0.0, 1.0, 1.125, 1.375, 3.0, 1e-6, 2.0 ** -16 * 1.5, 2.0 ** -16 * 2.5, 60000.0, -1e9, 0.1, -7.3]
                 + list(RNG.standard_normal(20)), np.float32)
    out = np.zeros(32, np.float32)
    fp8_kernel[(1,)](x, out, tl.float16)
    assert np.array_equal(out, x + 1)
    fp8_kernel[(1,)](x, out, tl.float8e5)
    assert np.array_equal(out, _e5m2(_e5m2(x) + 1))
    assert out[1] == 2.0 and out[2] == 2.0 and out[3] == 2.5          # 1.125 -> 1.0 (tie to even), 1.375 -> 1.5
    assert out[8] == 57344.0 and out[9] == -57344.0                    # satfinite, not inf


def test_fp8_formats_of_other_gpus_are_refused_where_used():
    x = RNG.random(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    with pytest.raises(UnsupportedConstruct, match=r"tl\.float8e4b15 is not supported by gpusim") as e:
        fp8_legacy_kernel[(1,)](x, out)
    assert e.value.line > 0 and e.value.file.endswith("test_triton_tutorial_constructs.py")


@triton.jit
def fp8_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c.to(tl.float16))


def _fp8_bytes(fmt, v):
    from gpusim.triton._dtypes import float8e4nv, float8e5
    return (float8e5 if fmt == "e5m2" else float8e4nv).encode(np.asarray(v, np.float32))


@pytest.mark.parametrize("fa,fb", [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")])
def test_fp8_dot_products_in_fp32_from_the_stored_bytes(fa, fb):
    """tl.dot of fp8 operands (any E4M3/E5M2 pair, as Triton allows) from raw fp8 bytes (a uint8 array
    reinterpreted as fp8): the product of the decoded values in fp32, rounded to fp16 at the store; on the H100 a
    wgmma of k = 32 (QGMMA) at the fp8 tensor rate."""
    from gpusim.api import trace_kernel
    from gpusim.triton._dtypes import float8e4nv, float8e5
    fmt = {"e4m3": float8e4nv, "e5m2": float8e5}
    M, N, K = 64, 32, 64
    a = _fp8_bytes(fa, RNG.standard_normal((M, K)) * 4)
    b = _fp8_bytes(fb, RNG.standard_normal((K, N)))
    c = np.zeros((M, N), np.float16)
    fp8_dot_kernel[(1,)](triton.reinterpret(a, fmt[fa]), triton.reinterpret(b, fmt[fb]), c, M, N, K, num_warps=4)
    ref = fmt[fa].decode(a).astype(np.float64) @ fmt[fb].decode(b).astype(np.float64)
    assert np.allclose(c.astype(np.float64), ref.astype(np.float16).astype(np.float64), rtol=2e-3, atol=2e-3)
    tr = trace_kernel(fp8_dot_kernel, (1,), triton.reinterpret(a, fmt[fa]), triton.reinterpret(b, fmt[fb]), c,
                      M, N, K, gpu="h100", num_warps=4)
    mma = [op for t in tr.tables for op in t.ops if op.mma_dtype]
    assert mma and all(op.mma_dtype == "fp8" and op.label.startswith("QGMMA.64x") and "x32.F32" in op.label
                       for op in mma)


@triton.jit
def pdl_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, USE_GDC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_GDC:
        tl.extra.cuda.gdc_wait()                 # tutorial 11: wait for the kernel before
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if USE_GDC:
        tl.extra.cuda.gdc_launch_dependents()    # let the next kernel start
    tl.store(out_ptr + offs, x + y, mask=mask)


def test_tutorial11_programmatic_dependent_launch_runs_and_says_what_is_not_modelled():
    n = 5000
    x, y = RNG.random(n, dtype=np.float32), RNG.random(n, dtype=np.float32)
    outs = []
    for gdc in (True, False):
        out = np.zeros(n, np.float32)
        tr = trace_launch(pdl_add, (triton.cdiv(n, 1024),), [x, y, out, n],
                          dict(BLOCK=1024, USE_GDC=gdc, launch_pdl=gdc))
        np.testing.assert_array_equal(out, x + y)
        outs.append(tr)
    assert any("gdc_wait" in s and "not modelled" in s for s in outs[0].notes)
    assert not any("gdc_" in s for s in outs[1].notes)
    # the calls cost nothing: the same instructions either way
    assert sum(o.n_inst for t in outs[0].tables for o in t.ops) == sum(o.n_inst for t in outs[1].tables for o in t.ops)


# ---------------------------------------------------------------------------------------------------------
# autotune: every config simulated for a new key, cached per key
# ---------------------------------------------------------------------------------------------------------

_TUNE_CONFIGS = [triton.Config({"TM": 64, "TN": 64, "TK": 32, "BAND": 2}, num_warps=4, num_stages=3),
                 triton.Config({"TM": 32, "TN": 32, "TK": 32, "BAND": 2}, num_warps=2, num_stages=2),
                 triton.Config({"TM": 256, "TN": 256, "TK": 128, "BAND": 2},
                               num_warps=8, num_stages=4)]          # out of shared memory: times as infinity
tuned_matmul = triton.autotune(configs=_TUNE_CONFIGS, key=["M", "N", "K"])(banded_gemm)


def test_autotune_simulates_every_config_and_caches_per_key():
    a, b, c, args = _matmul_args(192, 192, 192)
    grid = lambda META: (triton.cdiv(192, META["TM"]) * triton.cdiv(192, META["TN"]),)
    tr = trace_launch(tuned_matmul, grid, args)
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=0)
    info = tr.meta["autotune"]
    cyc = [x["cycles"] for x in info["configs"]]
    assert cyc[0] and cyc[1] and cyc[2] is None and "out of resource" in info["configs"][2]["error"]
    best = int(np.argmin([x if x else np.inf for x in cyc]))
    assert info["chosen"] == info["configs"][best]["config"] and not info["cached"]
    assert any("simulated every one of the 3 configs" in s for s in tr.notes)
    key = (192, 192, 192, "float16", "float16", "float16")
    assert tuned_matmul.cache[key] is _TUNE_CONFIGS[best] and tuned_matmul.best_config is _TUNE_CONFIGS[best]
    # the same key again: the cached config, no new timing
    c[...] = 0
    tr2 = trace_launch(tuned_matmul, grid, args)
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=0)
    assert tr2.meta["autotune"]["cached"] and any("seen before" in s for s in tr2.notes)
    assert tr2.grid == tr.grid


# ---------------------------------------------------------------------------------------------------------
# 2. warmup, triton.runtime.driver (tutorial 02)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def strided_row_softmax(src, dst, n_rows, n_cols, src_stride, dst_stride,
                        BLOCK: tl.constexpr, num_stages: tl.constexpr):
    # each program takes every num_programs-th row, starting at its own id; a row fits in one BLOCK
    lane = tl.arange(0, BLOCK)
    inside = lane < n_cols
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        v = tl.load(src + r * src_stride + lane, mask=inside, other=float("-inf"))
        e = tl.exp(v - tl.max(v, axis=0))       # shifted by the row maximum: no overflow
        tl.store(dst + r * dst_stride + lane, e / tl.sum(e, axis=0), mask=inside)


def test_tutorial02_warmup_and_device_properties():
    from gpusim.triton.runtime import driver
    props = driver.active.utils.get_device_properties(driver.active.get_active_torch_device().index)
    assert props["multiprocessor_count"] == 132 and props["max_num_regs"] == 65536
    assert props["max_shared_mem"] == 232448 and props["warpSize"] == 32
    tgt = triton.runtime.driver.active.get_current_target()
    assert (tgt.backend, tgt.arch, tgt.warp_size) == ("cuda", 90, 32)
    x = RNG.standard_normal((300, 781)).astype(np.float32)
    y = np.zeros_like(x)
    kernel = strided_row_softmax.warmup(x, y, 300, 781, 781, 781, BLOCK=1024, num_stages=4, num_warps=8, grid=(1,))
    kernel._init_handles()
    assert not y.any()                                   # warmup computes nothing the caller sees
    assert 16 <= kernel.n_regs <= 255 and kernel.n_spills == 0
    assert kernel.metadata.num_warps == 8 and kernel.metadata.num_stages == 4 and kernel.metadata.shared > 0
    occupancy = min(props["max_num_regs"] // (kernel.n_regs * 32 * 8), props["max_shared_mem"] // kernel.metadata.shared)
    num_programs = min(props["multiprocessor_count"] * occupancy, 300)
    kernel[(num_programs, 1, 1)](x, y, 300, 781, 781, 781, 1024, 4)
    ref = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, ref / ref.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# 4. 0-d loads and stores (tutorial 05 forward)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def row_stats_kernel(X, Mean, Rstd, stride, N, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(cols < N, x - mean, 0.)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + 1e-5)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    m2 = tl.load(Mean + row)                 # a 0-d load
    tl.store(Rstd + row + 0 * m2.to(tl.int32), rstd)


def test_scalar_store_is_one_thread_scalar_load_one_request_per_warp():
    M, N = 40, 300
    x = RNG.standard_normal((M, N)).astype(np.float32)
    mean, rstd = np.zeros(M, np.float32), np.zeros(M, np.float32)
    tr = trace_launch(row_stats_kernel, (M,), [x, mean, rstd, N, N], {"BLOCK_SIZE": 512, "num_warps": 2})
    np.testing.assert_allclose(mean, x.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(x.var(1) + 1e-5), rtol=1e-4)
    t = tr.tables[0]
    glob = [op for op in t.ops if op.mem is not None and op.mem.ptr is not None]
    stores = [op for op in glob if op.kind == OpKind.STORE and np.diff(op.mem.ptr).sum() <= t.n_ctas]
    assert len(stores) == 3
    for op in stores:                       # one line per CTA, in its warp 0 only
        per_warp = np.diff(op.mem.ptr).reshape(t.n_ctas, t.warps_per_cta)
        assert (per_warp[:, 0] == 1).all() and (per_warp[:, 1:] == 0).all()
        assert op.mem.bytes_requested == 4 * t.n_ctas
    loads = [op for op in glob if op.kind == OpKind.LOAD and np.diff(op.mem.ptr).sum() == t.n_warps]
    assert len(loads) == 1                   # every warp loads the 0-d value: one request each


# ---------------------------------------------------------------------------------------------------------
# 5. spin locks on atomics (tutorial 05 backward)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def locked_accumulate(DW, X, Lock, N, GROUP: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    lock_id = row % GROUP
    Lock += lock_id
    Count = Lock + GROUP
    DW = DW + lock_id * N + cols
    x = tl.load(X + row * N + cols, mask=mask, other=0.)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        x += tl.load(DW, mask=mask)
    tl.store(DW, x, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


def test_spin_lock_serializes_critical_sections():
    M, N, G = 70, 100, 8
    x = RNG.standard_normal((M, N)).astype(np.float32)
    dw = np.zeros((G, N), np.float32)
    lock = np.zeros(2 * G, np.int32)
    tr = trace_launch(locked_accumulate, (M,), [dw, x, lock, N], {"GROUP": G, "BLOCK_N": 128})
    ref = np.stack([x[g::G].sum(0) for g in range(G)])
    np.testing.assert_allclose(dw, ref, rtol=1e-5, atol=1e-5)
    assert (lock[:G] == 0).all() and (lock[G:] == 1).all()
    # the failed attempts the functional run needed are not in the trace (the timing engine makes a CTA wait for
    # the holder instead): every program keeps exactly its acquiring compare-and-swap
    t = tr.tables[0]
    cas = [i for i, op in enumerate(t.ops) if op.kind == OpKind.ATOMIC and "CAS" in op.label]
    per_cta = (t.active[cas].reshape(len(cas), t.n_ctas, t.warps_per_cta)[:, :, 0] > 0).sum(0)
    assert (per_cta == 1).all()
    assert any("spin wait" in s for s in tr.notes)


@triton.jit
def wait_forever(Flag):
    while tl.load(Flag + tl.program_id(0) * 0) == 0:
        pass


def test_spin_without_progress_is_an_error_not_a_hang():
    flag = np.zeros(1, np.int32)
    with pytest.raises(KernelError, match="never ends") as e:
        wait_forever[(4,)](flag)
    assert e.value.line > 0


# ---------------------------------------------------------------------------------------------------------
# 3. random numbers: bit-identical to Triton's interpreter
# ---------------------------------------------------------------------------------------------------------

_RAND_SRC = '''
import triton
import triton.language as tl


@triton.jit
def rand_kernel(X, I, G, F4, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(X + offs, tl.rand(seed, offs), mask=mask)
    tl.store(I + offs, tl.randint(seed, offs), mask=mask)
    tl.store(G + offs, tl.randn(seed, offs), mask=mask)
    a, b, c, d = tl.randint4x(seed, offs + 7)
    tl.store(F4 + offs * 4, a, mask=mask)
    tl.store(F4 + offs * 4 + 1, b, mask=mask)
    tl.store(F4 + offs * 4 + 2, c, mask=mask)
    tl.store(F4 + offs * 4 + 3, d, mask=mask)


@triton.jit
def drop_some(src, dst, seed, p_drop, n, BLOCK: tl.constexpr):
    # zero each element with probability p_drop, scale the survivors by 1 / (1 - p_drop); the draw for an
    # element depends only on (seed, its index), so a rerun with the same seed drops the same elements
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = idx < n
    u = tl.rand(seed, idx)
    v = tl.load(src + idx, mask=live)
    tl.store(dst + idx, tl.where(u > p_drop, v / (1 - p_drop), 0.0), mask=live)


def cases():
    import numpy as np
    n = 1000
    out = []
    for seed in (0, 123, 2 ** 31 - 5):
        out.append(("rand", rand_kernel, (triton.cdiv(n, 256),),
                    [np.zeros(n, np.float32), np.zeros(n, np.uint32), np.zeros(n, np.float32),
                     np.zeros(4 * n, np.uint32), seed, n], {"BLOCK": 256}))
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    out.append(("dropout", drop_some, (triton.cdiv(n, 128),), [x, np.zeros(n, np.float32), 42, 0.5, n],
                {"BLOCK": 128}))
    return out
'''

_INTERP_RUNNER = '''
import importlib.util, sys, json
import numpy as np
sys.path.insert(0, {tests!r})
import triton_interp_runner  # noqa: F401  (numpy 2 shim for the interpreter)
import torch
spec = importlib.util.spec_from_file_location("kmod", {src!r})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
res = {{}}
for i, (name, k, grid, args, meta) in enumerate(m.cases()):
    targs = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    k[grid](*targs, **meta)
    for j, a in enumerate(args):
        if isinstance(a, np.ndarray):
            res[f"{{i}}_{{j}}"] = a
np.savez({out!r}, **res)
'''


def _interp(tmp_path, src: str, name: str) -> dict:
    for mod in ("triton", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (the contract needs Triton's interpreter)")
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    out = tmp_path / f"{name}_interp.npz"
    runner = tmp_path / f"{name}_run.py"
    runner.write_text(_INTERP_RUNNER.format(tests=str(TESTS), src=str(path), out=str(out)))
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, str(runner)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(np.load(out)), path


def _load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


@pytest.mark.contract
def test_random_bit_identical_to_triton_interpreter(tmp_path):
    ref, path = _interp(tmp_path, _RAND_SRC, "rand_src")
    m = _load_module(path, "rand_src_gpusim")
    for i, (name, k, grid, args, meta) in enumerate(m.cases()):
        tr = trace_launch(k, grid, args, meta)
        for j, a in enumerate(args):
            if isinstance(a, np.ndarray) and f"{i}_{j}" in ref and j > 0 or (name == "rand" and j == 0):
                np.testing.assert_array_equal(a.view(np.uint32) if a.dtype == np.float32 else a,
                                              ref[f"{i}_{j}"].view(np.uint32) if a.dtype == np.float32
                                              else ref[f"{i}_{j}"], err_msg=f"{name} arg {j}")
        assert tr.n_ctas == grid[0]


def test_philox_matches_reference_vectors_and_statistics():
    # Random123's known-answer test for philox4x32-10 (counter 0, key 0) and (counter/key all 1s)
    from gpusim.triton._ops_random import philox_np
    z = np.zeros(1, np.uint32)
    out = philox_np(z, z, z, z, z, z, 10, 32)
    assert [hex(int(o[0])) for o in out] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]
    f = np.full(1, 0xFFFFFFFF, np.uint32)
    out = philox_np(f, f, f, f, f, f, 10, 32)
    assert [hex(int(o[0])) for o in out] == ["0x408f276d", "0x41c83b0e", "0xa20bc7c6", "0x6d5451fd"]


@triton.jit
def rand_stats_kernel(U, Nrm, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(U + offs, tl.rand(seed, offs))
    tl.store(Nrm + offs, tl.randn(seed, offs))


def test_rand_uniform_and_randn_normal_and_costed():
    n = 1 << 16
    u, g = np.zeros(n, np.float32), np.zeros(n, np.float32)
    tr = trace_launch(rand_stats_kernel, (n // 1024,), [u, g, 7], {"BLOCK": 1024})
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert abs(g.mean()) < 0.02 and abs(g.std() - 1) < 0.02
    labels = {op.label for t in tr.tables for op in t.ops}
    assert "IMAD.WIDE.U32+IMAD" in labels and "LOP3" in labels
    # 2 philox evaluations x 10 rounds x 2.9 IMAD per element: 8 elements per thread
    imad = sum(op.n_inst for op in tr.tables[0].ops if op.label == "IMAD.WIDE.U32+IMAD")
    assert imad == 2 * int(np.ceil(8 * 10 * 2.9))


# ---------------------------------------------------------------------------------------------------------
# 6. pointer tables (the construct of tutorial 08's grouped GEMM)
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def table_gemms(a_tab, b_tab, c_tab, dims, lead, n_problems,
                PROGS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Several independent fp16 GEMMs C_i = A_i @ B_i, their base addresses in int64 tables.  Their tiles
    # are numbered one after another over all problems and dealt round-robin to PROGS persistent programs.
    # dims holds (m, n, k) per problem, lead the row pitches of (A, B, C); every size is a tile multiple.
    me = tl.program_id(0)
    seen = 0                                      # tiles of the problems before this one
    for q in range(n_problems):
        m = tl.load(dims + 3 * q)
        n = tl.load(dims + 3 * q + 1)
        k = tl.load(dims + 3 * q + 2)
        cols_of_tiles = tl.cdiv(n, BN)
        count = tl.cdiv(m, BM) * cols_of_tiles
        a = tl.load(a_tab + q).to(tl.pointer_type(tl.float16))
        b = tl.load(b_tab + q).to(tl.pointer_type(tl.float16))
        c = tl.load(c_tab + q).to(tl.pointer_type(tl.float16))
        pa = tl.load(lead + 3 * q)
        pb = tl.load(lead + 3 * q + 1)
        pc = tl.load(lead + 3 * q + 2)
        # my first tile of this problem: the global numbering continues at `seen`
        first = (me + PROGS - seen % PROGS) % PROGS
        for t in range(first, count, PROGS):
            r = (t // cols_of_tiles) * BM + tl.arange(0, BM)
            s = (t % cols_of_tiles) * BN + tl.arange(0, BN)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k0 in range(0, k, BK):
                kk = k0 + tl.arange(0, BK)
                at = tl.load(a + r[:, None] * pa + kk[None, :])
                bt = tl.load(b + kk[:, None] * pb + s[None, :])
                acc += tl.dot(at, bt)
            tl.store(c + r[:, None] * pc + s[None, :], acc.to(tl.float16))
        seen += count


def test_tutorial08_pointer_tables_from_data_ptr():
    shapes = [(128, 128, 64), (64, 128, 128), (192, 64, 64)]
    A = [(RNG.random((m, k), dtype=np.float32) - 0.5).astype(np.float16) for m, n, k in shapes]
    B = [(RNG.random((k, n), dtype=np.float32) - 0.5).astype(np.float16) for m, n, k in shapes]
    C = [np.zeros((m, n), np.float16) for m, n, k in shapes]
    a_t = np.array([triton.data_ptr(a) for a in A], np.int64)
    b_t = np.array([triton.data_ptr(b) for b in B], np.int64)
    c_t = np.array([triton.data_ptr(c) for c in C], np.int64)
    sizes = np.array(shapes, np.int32).reshape(-1)
    lds = np.array([[a.shape[1], b.shape[1], c.shape[1]] for a, b, c in zip(A, B, C)], np.int32).reshape(-1)
    meta = dict(PROGS=4, BM=64, BN=64, BK=32)
    tr = trace_launch(table_gemms, (4,), [a_t, b_t, c_t, sizes, lds, len(shapes)], meta)
    for a, b, c in zip(A, B, C):
        ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
        np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=0)
    assert tr.n_ctas == 4


def test_tutorial08_pointer_tables_of_host_addresses_cost_one_heap_scan(monkeypatch):
    # tables of numpy host addresses (ndarray.ctypes.data): the arrays are found by one scan of the live objects,
    # whose index serves the table's other entries (a scan per entry cost seconds each in a process holding many
    # objects, as a validation worker does)
    from gpusim.triton import _buffers
    shapes = [(64, 64, 32), (32, 64, 64), (64, 32, 32)]
    A = [(RNG.random((m, k), dtype=np.float32) - 0.5).astype(np.float16) for m, n, k in shapes]
    B = [(RNG.random((k, n), dtype=np.float32) - 0.5).astype(np.float16) for m, n, k in shapes]
    C = [np.zeros((m, n), np.float16) for m, n, k in shapes]
    keep = {"arrays": A + B + C}                         # the launch dict's 'buffers' holds them likewise
    scans = []
    real_scan = _buffers._scan
    monkeypatch.setattr(_buffers, "_scan", lambda objs, torch: scans.append(1) or real_scan(objs, torch))
    tables = [np.array([x.ctypes.data for x in xs], np.int64) for xs in (A, B, C)]
    sizes = np.array(shapes, np.int32).reshape(-1)
    lds = np.array([[a.shape[1], b.shape[1], c.shape[1]] for a, b, c in zip(A, B, C)], np.int32).reshape(-1)
    run_launch(table_gemms, (3,), [*tables, sizes, lds, len(shapes)], dict(PROGS=3, BM=32, BN=32, BK=32))
    for a, b, c in zip(keep["arrays"][:3], keep["arrays"][3:6], keep["arrays"][6:]):
        ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
        np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), atol=1e-2, rtol=0)
    assert len(scans) == 1


@triton.jit
def bad_table_kernel(T, Out):
    p = tl.load(T + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    tl.store(Out + tl.program_id(0), tl.load(p + 1000))


def test_pointer_from_table_is_bounds_checked():
    a = np.zeros(10, np.float32)
    t = np.array([triton.data_ptr(a)], np.int64)
    with pytest.raises(OutOfBounds, match="outside every argument") as e:
        bad_table_kernel[(1,)](t, np.zeros(1, np.float32))
    assert e.value.line > 0 and e.value.program == (0, 0, 0)
    t2 = np.array([12345678], np.int64)
    with pytest.raises(KernelError, match="no address gpusim handed out"):
        bad_table_kernel[(1,)](t2, np.zeros(1, np.float32))


# ---------------------------------------------------------------------------------------------------------
# 7. libdevice (tutorial 07)
# ---------------------------------------------------------------------------------------------------------

def test_libdevice_module_paths_and_values():
    from gpusim.triton.language.extra import libdevice
    from gpusim.triton.language.extra.cuda import libdevice as ld2
    assert libdevice is ld2 or libdevice.asin is not None
    x = np.linspace(-0.99, 0.99, 1000).astype(np.float32)
    y = np.linspace(0.1, 3, 1000).astype(np.float32)

    @triton.jit
    def k(X, Y, O, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(X + offs, mask=m)
        y = tl.load(Y + offs, mask=m)
        tl.store(O + offs, libdevice.asin(x), mask=m)
        tl.store(O + n + offs, libdevice.tanh(x), mask=m)
        tl.store(O + 2 * n + offs, libdevice.pow(y, x), mask=m)
        tl.store(O + 3 * n + offs, libdevice.erfinv(x), mask=m)
        tl.store(O + 4 * n + offs, libdevice.atan2(x, y), mask=m)
        tl.store(O + 5 * n + offs, libdevice.round(y * 2 - 3), mask=m)

    out = np.zeros(6 * 1000, np.float32)
    tr = trace_launch(k, (4,), [x, y, out, 1000], {"BLOCK": 256})
    o = out.reshape(6, 1000)
    np.testing.assert_allclose(o[0], np.arcsin(x), rtol=1e-6)
    np.testing.assert_allclose(o[1], np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(o[2], np.power(y, x), rtol=1e-6)
    from math import erf
    np.testing.assert_allclose([erf(v) for v in o[3]], x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o[4], np.arctan2(x, y), rtol=1e-6)
    v = y * 2 - 3
    np.testing.assert_array_equal(o[5], np.sign(v) * np.floor(np.abs(v) + 0.5))
    labels = [op.label for t in tr.tables for op in t.ops]
    assert "FADD+FFMA+FMUL+FRND" in labels            # pow's FP32 mix (costs.LIBDEVICE, from sm_90 SASS)


from gpusim.triton.language.extra import libdevice as ld  # noqa: E402


@triton.jit
def libdevice_more(x_ptr, y_ptr, i_ptr, f_ptr, u_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    y = tl.load(y_ptr + o)
    tl.store(f_ptr + o * 8 + 0, ld.add_rd(x, y))
    tl.store(f_ptr + o * 8 + 1, ld.add_ru(x, y))
    tl.store(f_ptr + o * 8 + 2, ld.div_rz(x, y))
    tl.store(f_ptr + o * 8 + 3, ld.normcdf(x))
    tl.store(f_ptr + o * 8 + 4, ld.j0(x * 3))
    tl.store(f_ptr + o * 8 + 5, ld.cyl_bessel_i1(x))
    tl.store(f_ptr + o * 8 + 6, ld.int_as_float(ld.float_as_int(x)))
    tl.store(f_ptr + o * 8 + 7, ld.ldexp(x, ld.float2int_rn(y)))
    tl.store(i_ptr + o * 4 + 0, ld.float2int_rd(x * 10))
    tl.store(i_ptr + o * 4 + 1, ld.popc(ld.float_as_int(x)))
    tl.store(i_ptr + o * 4 + 2, ld.clz(ld.float2int_rz(y * 100)))
    tl.store(i_ptr + o * 4 + 3, ld.ilogb(x))
    tl.store(u_ptr + o, ld.llrint(x * 1e3))


def test_the_rest_of_libdevice_directed_rounding_conversions_bits_and_special_functions():
    import math
    N = 64
    x = RNG.standard_normal(N).astype(np.float32)
    y = RNG.standard_normal(N).astype(np.float32)
    i, f, u = np.zeros(N * 4, np.int32), np.zeros(N * 8, np.float32), np.zeros(N, np.int64)
    tr = trace_launch(libdevice_more, (1,), [x, y, i, f, u], dict(N=N))
    f, i = f.reshape(N, 8), i.reshape(N, 4)
    exact = x.astype(np.float64) + y
    assert (f[:, 0] <= exact).all() and (f[:, 1] >= exact).all()          # rounded down / up, one ulp apart
    assert ((f[:, 1] - f[:, 0]) <= np.spacing(np.abs(f[:, 0])) * 1.01).all()
    assert (np.abs(f[:, 2]) <= np.abs(x.astype(np.float64) / y)).all()   # toward zero
    np.testing.assert_allclose(f[:, 3], [0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(float)], atol=1e-7)

    def j0(z):
        return sum((-1) ** m * (z / 2) ** (2 * m) / math.factorial(m) ** 2 for m in range(40))

    def i1(z):
        return sum((z / 2) ** (2 * m + 1) / (math.factorial(m) * math.factorial(m + 1)) for m in range(40))
    np.testing.assert_allclose(f[:, 4], [j0(3.0 * v) for v in x.astype(float)], atol=2e-7)
    np.testing.assert_allclose(f[:, 5], [i1(v) for v in x.astype(float)], atol=2e-7)
    np.testing.assert_array_equal(f[:, 6], x)
    np.testing.assert_array_equal(f[:, 7], x * np.exp2(np.rint(y)))
    np.testing.assert_array_equal(i[:, 0], np.floor(x * np.float32(10)).astype(np.int32))
    assert list(i[:, 1]) == [bin(int(v) & 0xFFFFFFFF).count("1") for v in x.view(np.int32)]
    assert list(i[:, 2]) == [32 - (int(v) & 0xFFFFFFFF).bit_length()
                             for v in np.trunc(y * np.float32(100)).astype(np.int32)]
    assert list(i[:, 3]) == [math.frexp(float(v))[1] - 1 for v in x]
    np.testing.assert_array_equal(u, np.rint(x * np.float32(1e3)).astype(np.int64))
    # a bit cast is a move, a conversion one F2I: not the estimate of a math function
    ops = tr.tables[0].ops
    assert sum(o.n_inst for o in ops if o.label == "MOV") >= 2 and sum(o.n_inst for o in ops if o.label == "F2I") >= 3
    with pytest.raises(CompileError, match="float_as_int: no libdevice function for fp64"):
        libdevice_more[(1,)](x.astype(np.float64), y, i, f, u, N=N)


@triton.jit
def inline_asm_kernel(x_ptr, y_ptr, i_ptr, N: tl.constexpr, ASM: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    t = tl.inline_asm_elementwise(ASM, "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(y_ptr + o, t)
    a = tl.load(i_ptr + o)
    r = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r", [a, a, a], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(i_ptr + N + o, r)
    tl.store(i_ptr + 2 * N + o, ld.sad(a, a + 3, a))                # a three-operand libdevice function


def test_inline_asm_of_one_ptx_instruction_runs_and_costs_that_instruction():
    """The inline assembly public kernels write for a hardware approximation (tanh.approx.f32) or a funnel shift,
    executed from the operands' bits; other assembly is refused with its text."""
    from gpusim.errors import UnsupportedConstruct
    N = 64
    x = RNG.standard_normal(N).astype(np.float32)
    y = np.zeros(N, np.float32)
    i = np.zeros(3 * N, np.int32)
    i[:N] = np.arange(N) * 123457 - 1000000
    tr = trace_launch(inline_asm_kernel, (1,), [x, y, i], dict(N=N, ASM="tanh.approx.f32 $0, $1;"))
    np.testing.assert_allclose(y, np.tanh(x), rtol=1e-6)
    a = i[:N].view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(i[N:2 * N].view(np.uint32),
                                  (((((a << 32) | a) << (a & 31)) >> 32) & 0xFFFFFFFF).astype(np.uint32))
    np.testing.assert_array_equal(i[2 * N:], 3 + i[:N])
    mufu = [o for o in tr.tables[0].ops if o.label == "MUFU.TANH"]
    assert len(mufu) == 1 and mufu[0].n_inst == 1 and mufu[0].pipe.key == "sfu"     # one MUFU per element
    for bad, why in (("tanh.approx.f32 $0, $1; ex2.approx.f32 $0, $0;", "one PTX instruction"),
                     ("cvt.rn.bf16x2.f32 $0, $1;", "not in gpusim's table")):
        with pytest.raises(UnsupportedConstruct, match=why):
            trace_launch(inline_asm_kernel, (1,), [x, y, i], dict(N=N, ASM=bad))


def test_libdevice_rejects_fp16():
    from gpusim.triton.language.extra import libdevice

    @triton.jit
    def k(X, O):
        tl.store(O, libdevice.asin(tl.load(X)))
    with pytest.raises(CompileError, match="fp16"):
        k[(1,)](np.zeros(1, np.float16), np.zeros(1, np.float16))


_WRAPPER_SCRIPT = '''
import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def scale(x):
    out = torch.empty_like(x)
    assert isinstance(scale_kernel, JITFunction) and not isinstance(scale_kernel, Autotuner)
    # as library wrappers launch (flash-attention's rotary, torch.library custom ops)
    with torch.cuda.device(x.device.index):
        torch.library.wrap_triton(scale_kernel)[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    k = scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    print("n_regs", k.n_regs, "shared", k.metadata.shared, "warps", k.metadata.num_warps)
    torch.cuda.current_stream().synchronize()
    return out


if __name__ == "__main__":
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = scale(x)
    print("max err", float((y - 2 * x).abs().max()))
'''


def test_library_wrappers_host_calls_run_as_on_the_gpu(tmp_path, capsys):
    """Host code of library wrappers: ``with torch.cuda.device(i)``, ``torch.library.wrap_triton(k)[grid](...)``,
    ``from triton.runtime.autotuner import Autotuner``, and the launch's return value (Triton's compiled kernel:
    ``n_regs``, ``metadata.shared``) -- the probes found each failing in a public wrapper."""
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "wrapper_script.py"
    f.write_text(_WRAPPER_SCRIPT)
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    out = capsys.readouterr().out
    assert "max err 0.0" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("n_regs"))
    regs, shared, warps = int(line.split()[1]), int(line.split()[3]), int(line.split()[5])
    assert 16 <= regs <= 64 and shared == 0 and warps == 4
    assert out.count("compiler: built-in estimate") == 2          # both launches reported


_TUTORIAL_HOST_SCRIPT = '''
import torch
import triton
import triton.language as tl
import triton.profiler as proton
from triton._C.libtriton import nvidia


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


blas = nvidia.cublas.CublasLt(torch.empty(1024, device="cuda", dtype=torch.uint8))
a = torch.randn((64, 32), device="cuda", dtype=torch.float16)
b = torch.randn((48, 32), device="cuda", dtype=torch.float16)
c = torch.empty((64, 48), device="cuda", dtype=torch.float16)
proton.start("matmul", hook="triton")
with proton.scope("cublas", {"flops": 2 * 64 * 48 * 32}):
    blas.matmul(a, b, c)
proton.finalize()
print("blas err", float((c.float() - a.float() @ b.float().T).abs().max()))
x = torch.arange(100, dtype=torch.float32, device="cuda")
y = torch.empty_like(x)
copy_kernel[(1,)](x, y, 100, BLOCK=128)
print("copy ok", bool((x == y).all()))
copy_kernel[(1,)](x.to(torch.float8_e5m2), y, 100, BLOCK=128)
print("fp8 copy ok", bool((y == x.to(torch.float8_e5m2).float()).all()))
copy_kernel[(1,)](x.to(torch.float8_e4m3fnuz), y, 100, BLOCK=128)
'''


def test_tutorial_host_calls_profiler_cublas_and_fp8_arguments(tmp_path, capsys):
    """Tutorial 09's host side: ``triton.profiler`` (proton) sessions and scopes run as no-ops, the cuBLAS handle
    of ``triton._C.libtriton`` computes its reference product on the host, an fp8 tensor argument (tutorial
    03's fp8 section) is read as its format's bytes, and an fp8 format the H100 does not have is refused in one
    line at the launch's line, not an internal error."""
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "tutorial_host.py"
    f.write_text(_TUTORIAL_HOST_SCRIPT)
    assert main(["run", str(f), "--compiler", "builtin"]) == 2
    cap = capsys.readouterr()
    assert "copy ok True" in cap.out
    err = float(next(ln for ln in cap.out.splitlines() if ln.startswith("blas err")).split()[2])
    assert err < 0.05
    assert "fp8 copy ok True" in cap.out
    line = next(i for i, ln in enumerate(_TUTORIAL_HOST_SCRIPT.splitlines(), 1) if "float8_e4m3fnuz" in ln)
    assert (f"{f}:{line}: argument 'x_ptr' is a torch.float8_e4m3fnuz tensor: the H100's fp8 formats are "
            "float8_e5m2 (tl.float8e5) and float8_e4m3fn (tl.float8e4nv)") in cap.err
    assert "internal error" not in cap.err


_MXFP_SCRIPT = '''
import torch
import triton
import triton.language as tl
from triton.tools.mxfp import MXScaleTensor


@triton.jit
def scale_kernel(x_ptr, s_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * tl.load(s_ptr + offs))


s = MXScaleTensor(data=torch.tensor([127, 128, 126, 130] * 8, dtype=torch.uint8)).to(torch.float32)
x = torch.ones(32, device="cuda")
out = torch.empty_like(x)
scale_kernel[(1,)](x, s, out, BLOCK=32)
print("mxfp scales", out[:4].tolist(), s[:4].tolist(), bool((out == s).all()))
'''


def test_a_script_uses_the_installed_tritons_plain_python_tools(tmp_path, capsys):
    """``triton.tools.mxfp`` (tutorial 10's microscaling helpers, plain Python over torch) comes from the installed
    triton package while gpusim stands in for triton; the kernel reads the scales it decoded."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("triton") is None or not hasattr(importlib.import_module("triton"), "jit"):
        pytest.skip("the real triton package is not installed")
    from gpusim.cli import main
    f = tmp_path / "mxfp_script.py"
    f.write_text(_MXFP_SCRIPT)
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("mxfp scales"))
    assert line.endswith("True") and "[64.0, 128.0, 64.0, 128.0]" in line


def test_a_script_imports_its_siblings_and_torchs_own_errors_are_the_scripts(tmp_path, capsys):
    """As ``python script.py``: the script's folder is on the path (``import helper`` of a sibling module);
    ``import triton.runtime.autotuner as m`` works; an exception torch raises inside a call the torch stand-in
    passes through (a shape mismatch) is the script's error at its line (exit 2), not an internal error (3)."""
    pytest.importorskip("torch")
    from gpusim.cli import main
    (tmp_path / "sibling_helper.py").write_text("FACTOR = 3\n")
    f = tmp_path / "uses_sibling.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl
        import triton.runtime.autotuner as at
        import sibling_helper


        @triton.jit
        def scale(x_ptr, n, F: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, F * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


        x = torch.ones(10, device="cuda")
        scale[(1,)](x, 10, F=sibling_helper.FACTOR, BLOCK=16)
        print("sum", float(x.sum()), at.Autotuner.__name__)
        torch.ones(3, device="cuda") + torch.ones(4, device="cuda")
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 2
    cap = capsys.readouterr()
    assert "sum 30.0 Autotuner" in cap.out
    assert f"{f}:18: at import: RuntimeError: The size of tensor a (3) must match" in cap.err, cap.err
    assert "internal error" not in cap.err
