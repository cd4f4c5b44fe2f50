"""How gpusim.triton lowers tile ops: the numbers Triton's compiler would produce, checked against formulas.

Shared memory per CTA, MMA instruction counts and shapes, vector widths from divisibility specialization (the
2048 vs 2049 matmul), sectors of coalesced accesses, the register estimate, pipelining structure, reductions.
"""
from __future__ import annotations

import numpy as np
import pytest

from gpusim import triton
from gpusim.trace import OpKind, Pipe, Space
from gpusim.triton import language as tl
from gpusim.triton import costs, trace_launch

RNG = np.random.default_rng(7)


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BN)
    pid_m = pid // n_tiles
    pid_n = pid % n_tiles
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PREC)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


def _matmul(M, N, K, BM=128, BN=128, BK=64, num_warps=8, num_stages=3, gpu="h100", dtype=np.float16,
            prec="tf32"):
    a = (RNG.standard_normal((M, K)) * 0.1).astype(dtype)
    b = (RNG.standard_normal((K, N)) * 0.1).astype(dtype)
    c = np.zeros((M, N), np.float16 if dtype == np.float16 else np.float32)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    tr = trace_launch(mm_kernel, grid, [a, b, c, M, N, K, a.strides[0] // a.itemsize, 1, b.strides[0] // b.itemsize,
                                        1, c.strides[0] // c.itemsize, 1],
                      dict(BM=BM, BN=BN, BK=BK, PREC=prec, num_warps=num_warps, num_stages=num_stages), gpu=gpu)
    tr.check()
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    return tr


def _ops(tr, kind):
    return [(t, i, op) for t in tr.tables for i, op in enumerate(t.ops) if op.kind == kind]


def _line(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


# ---------------------------------------------------------------------------------------------------------
# matmul: shared memory, MMA counts, pipelining
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("BM,BN,BK,W,S", [(128, 128, 64, 8, 3), (128, 64, 32, 4, 4), (64, 128, 64, 4, 2)])
def test_matmul_shared_memory_and_wgmma_counts(BM, BN, BK, W, S):
    M, N, K = 256, 256, 256
    tr = _matmul(M, N, K, BM, BN, BK, W, S)
    # pipeline buffers: num_stages x (A tile + B tile) fp16
    assert tr.shared_bytes_per_cta == S * (BM * BK + BK * BN) * 2
    assert tr.block == (32 * W, 1, 1)
    # wgmma m64nNk16: N is the largest valid width <= BN / (warps along N); warps along M first (>= 4)
    mmas = _ops(tr, OpKind.MMA)
    steps = K // BK
    assert len(mmas) == steps
    n_warps_m = max(BM // 16, 1)
    max_n = max(BN // max(W // n_warps_m, 1), 8)
    n_instr = max(n for n in range(8, 257, 8) if BN % n == 0 and n <= max_n)
    wpc = [4, 1]
    while wpc[0] * wpc[1] < W:
        if BM > 16 * wpc[0]:
            wpc[0] *= 2
        else:
            wpc[1] *= 2
    per_step = (BM // (64 * (wpc[0] // 4))) * (BN // (n_instr * wpc[1])) * (BK // 16)
    for _, _, op in mmas:
        assert op.n_inst == per_step
        assert op.label.startswith(f"HGMMA.64x{n_instr}x16")
        assert op.mma_dtype == "fp16" and op.pipe == Pipe.TENSOR
        # both operands from shared memory: per wgmma A (64 x 16 fp16) and B (16 x n), a quarter per warp
        assert op.smem_bytes == per_step * (64 * 16 * 2 + 16 * n_instr * 2) // 4
    # the tensor-core work of all warps is exactly 2*M*N*K
    assert sum(op.flops * t.n_warps for t, _, op in mmas) == 2 * M * N * K
    assert tr.flops >= 2 * M * N * K


@triton.jit
def _rs_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr, COMPUTED: tl.constexpr):
    r = tl.arange(0, 64)
    rn = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * 64 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + rn[None, :])
    if COMPUTED:
        a = (a * 2.0).to(tl.float16)
    tl.store(c_ptr + r[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("computed", [False, True])
def test_a_computed_operand_stays_in_registers_and_only_b_is_read_from_shared_memory(computed):
    """A wgmma's A operand comes from registers when the kernel computes it (FlashAttention's P) and from shared
    memory when it is loaded; B always from shared memory: m64n32k16 x 4 k-steps, 4 warps."""
    a = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float16)
    b = (RNG.standard_normal((64, 32)) * 0.1).astype(np.float16)
    c = np.zeros((64, 32), np.float32)
    tr = trace_launch(_rs_dot, (1,), [a, b, c], dict(N=32, COMPUTED=computed, num_warps=4))
    ref = (a.astype(np.float32) * (2 if computed else 1)) @ b.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)
    (_, _, op), = _ops(tr, OpKind.MMA)
    assert op.n_inst == 4 and op.label.startswith("HGMMA.64x32x16")
    assert op.smem_bytes == 4 * (16 * 32 * 2 + (0 if computed else 64 * 16 * 2)) // 4


def test_pipelining_structure():
    S = 3
    tr = _matmul(256, 256, 512, 128, 128, 64, 8, S)
    t = tr.tables[0]
    ops = t.ops
    copies = [i for i, o in enumerate(ops) if o.kind == OpKind.ASYNC_COPY]
    waits = [i for i, o in enumerate(ops) if o.kind == OpKind.ASYNC_WAIT]
    mmas = [i for i, o in enumerate(ops) if o.kind == OpKind.MMA]
    steps = 512 // 64
    assert len(copies) == 2 * steps and len(waits) == 2 * steps and not any(o.kind == OpKind.LOAD for o in ops[:mmas[-1]])
    # prologue: the copies of iterations 0 .. S-2 are issued before the first MMA (iteration S-1's after it)
    assert sum(c < mmas[0] for c in copies) == 2 * (S - 1)
    # every wait waits for a copy issued earlier; the copy of iteration i+S-1 follows the MMA of iteration i (Triton
    # issues it after the iteration's wgmmas), before the MMA of iteration i+1
    for w in waits:
        assert len(ops[w].deps) == 1 and ops[ops[w].deps[0]].kind == OpKind.ASYNC_COPY
    # nothing else waits for a copy's data: the group commit (LDGDEPBAR) and the address updates do not
    assert all(ops[d].kind != OpKind.ASYNC_COPY for i, o in enumerate(ops) if i not in waits for d in o.deps)
    for i, m in enumerate(mmas):
        ahead = min(i + S - 2, steps - 1)
        assert sum(c < m for c in copies) == 2 * (ahead + 1)
        dep_kinds = {ops[d].kind for d in ops[m].deps}
        assert OpKind.ASYNC_WAIT in dep_kinds
        if i:
            assert mmas[i - 1] in ops[m].deps          # accumulator chain
    assert all(ops[c].mem.bytes_per_lane == 16 and ops[c].label.startswith("LDGSTS") for c in copies)


def test_divisibility_2048_vs_2049():
    # K (A's row stride) and N (B's row stride) divisible by 16: 16-byte vectors and a cp.async pipeline;
    # 2049 / 129: Triton cannot prove alignment and falls back to 2-byte scalar loads
    t48 = _matmul(128, 128, 2048, 128, 128, 64, 8, 3)
    t49 = _matmul(128, 129, 2049, 128, 128, 64, 8, 3)
    v48 = t48.meta["vector_widths"]
    v49 = t49.meta["vector_widths"]
    la = f"test_triton_lowering.py:{_line(mm_kernel, 'a = tl.load(a_ptrs')}"
    lb = f"test_triton_lowering.py:{_line(mm_kernel, 'b = tl.load(b_ptrs')}"
    assert v48[la] == 8 and v48[lb] == 8
    assert v49[la] == 1 and v49[lb] == 1
    assert t49.meta["memory_ops"][la]["divisibility_bytes"] == 2
    assert not t49.meta["memory_ops"][la]["async_copy"] and t48.meta["memory_ops"][la]["async_copy"]
    loads48 = _ops(t48, OpKind.ASYNC_COPY)
    loads49 = [op for _, _, op in _ops(t49, OpKind.LOAD) if op.mem.space == Space.GLOBAL]
    assert loads49 and all(op.label == "LDG.E.16" for op in loads49)
    # same bytes, 8x the load instructions per warp for the A and B tiles
    a48 = loads48[0][2].n_inst
    assert loads49[0].n_inst == 8 * a48
    # without cp.async the operands go registers -> shared memory (st.shared + barrier) every step
    assert _ops(t49, OpKind.BARRIER) and not _ops(t49, OpKind.ASYNC_WAIT)


def test_mma_fallbacks():
    # num_warps < 4 on Hopper: no warpgroup -> mma.sync m16n8k16 with ldmatrix from shared memory
    tr = _matmul(128, 128, 128, 64, 64, 32, 2, 2)
    mmas = _ops(tr, OpKind.MMA)
    assert all(op.label.startswith("HMMA.16816") for _, _, op in mmas)
    assert tr.meta["dots"][next(iter(tr.meta["dots"]))]["unit"].startswith("mma.sync")
    ldsm = [op for _, _, op in _ops(tr, OpKind.LOAD) if op.label.startswith("LDSM")]
    assert ldsm and all(op.mem.space == Space.SHARED for op in ldsm)
    # A100 preset: always mma.sync; per warp: (BM/16/wM) x (BN/8/wN) x (BK/16) per k step
    tr = _matmul(128, 128, 128, 128, 128, 64, 8, 3, gpu="a100")
    per = tr.meta["dots"][next(iter(tr.meta["dots"]))]
    wm, wn = per["warpsPerCTA"]
    assert per["unit"] == "mma.sync (MMAv2)" and wm * wn == 8
    for _, _, op in _ops(tr, OpKind.MMA):
        assert op.n_inst == (128 // 16 // wm) * (128 // 8 // wn) * (64 // 16)
        assert op.flops == op.n_inst * 2 * 16 * 8 * 16
    # fp32 inputs: tf32 wgmma (k8); input_precision="ieee": FFMA on the FP32 pipe, no tensor cores
    tr = _matmul(128, 128, 64, 128, 128, 32, 8, 2, dtype=np.float32)
    assert all(op.label.startswith("HGMMA.64x128x8") and op.mma_dtype == "tf32" for _, _, op in _ops(tr, OpKind.MMA))
    tr = _matmul(64, 64, 64, 64, 64, 32, 4, 2, dtype=np.float32, prec="ieee")
    assert not _ops(tr, OpKind.MMA)
    ffma = [op for t in tr.tables for op in t.ops if op.label == "FFMA" and op.pipe == Pipe.FP32]
    assert ffma and ffma[0].n_inst == 64 * 64 * 32 // (32 * 4)


def test_register_estimate_formula():
    tr = _matmul(256, 256, 256, 128, 128, 64, 8, 3)
    basis = tr.meta["registers"]["basis"]
    assert basis["dot_accumulators"] == 128 * 128 // (32 * 8)     # fp32 accumulator per thread
    assert basis["dot_operand_fragments"] == 0                   # both wgmma operands in shared memory
    assert basis["addresses"] == 2 * (4 + 4)     # 64-bit pointers advanced in the loop: A's 4 rows, B's 4 rows
    est = costs.REG_BASE + sum(w * basis[k] for k, w in costs.REG_WEIGHTS.items()) \
        + costs.REG_PER_EXTRA_LIBDEVICE_FN * basis["extra_libdevice_functions"]
    assert tr.regs_per_thread == round(est) == tr.meta["registers"]["estimate"]
    # a larger accumulator spills: estimate > 255 is capped and the excess goes to local memory
    tr = _matmul(256, 256, 128, 256, 256, 32, 4, 2)
    assert tr.meta["registers"]["estimate"] > 255
    assert tr.regs_per_thread == 255
    assert tr.local_bytes_per_thread == 4 * (tr.meta["registers"]["estimate"] - 255)


@triton.jit
def colsum_kernel(X, Out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for first in range(0, M, BM):
        rows = first + tl.arange(0, BM)
        acc += tl.load(X + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N), other=0.)
    tl.store(Out + cols, tl.sum(acc, axis=0), mask=cols < N)


@triton.jit
def sin_kernel(X, Out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Out + offs, tl.sin(tl.load(X + offs, mask=offs < n)), mask=offs < n)


@pytest.mark.parametrize("trips", [1, 4])
def test_register_estimate_counts_tiles_a_loop_carries(trips):
    """``acc += tl.load(...)`` in a loop of two or more trips: the accumulator tile stays in registers across trips
    (``carried_tiles``: its fp32 elements per thread); a one-trip loop, which the compiler folds away, carries none."""
    BM, BN, W, N = 32, 128, 4, 256
    x = RNG.standard_normal((trips * BM, N)).astype(np.float32)
    out = np.zeros(N, np.float32)
    tr = trace_launch(colsum_kernel, (N // BN,), [x, out, trips * BM, N], dict(BM=BM, BN=BN, num_warps=W))
    np.testing.assert_allclose(out, x.sum(axis=0), rtol=1e-5, atol=1e-5)
    basis = tr.meta["registers"]["basis"]
    assert basis["carried_tiles"] == (BM * BN // (32 * W) if trips > 1 else 0)
    est = costs.REG_BASE + sum(w * basis[k] for k, w in costs.REG_WEIGHTS.items()) \
        + costs.REG_PER_EXTRA_LIBDEVICE_FN * basis["extra_libdevice_functions"]
    assert tr.meta["registers"]["estimate"] == round(est)


def test_register_estimate_counts_elements_through_a_math_function():
    """A sine per element (a multi-instruction libdevice-style sequence): ``math_fn_elements`` is the elements per
    thread that go through it (1024 over 4 warps: 8)."""
    n = 4096
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    tr = trace_launch(sin_kernel, (n // 1024,), [x, out, n], dict(BLOCK=1024, num_warps=4))
    np.testing.assert_allclose(out, np.sin(x), rtol=1e-5, atol=1e-5)
    assert tr.meta["registers"]["basis"]["math_fn_elements"] == 1024 // (32 * 4)


@triton.jit
def half_max_kernel(X, Out, n, BLOCK: tl.constexpr, HOW: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    if HOW == "maximum":
        y = tl.maximum(x, 0.0)
    elif HOW == "add":
        y = x + 1.0
    else:
        y = x + offs.to(tl.float32)
    tl.store(Out + offs, y.to(x.dtype), mask=offs < n)


@pytest.mark.parametrize("how,per_elem", [("maximum", ("HADD2.F32", "FMNMX", "F2FP")), ("add", ("HADD2",)),
                                          ("mixed", ("HADD2.F32", "FADD", "F2FP"))])
def test_implicit_promotion_of_fp16_costs_conversions(how, per_elem):
    """Triton makes the number in ``tl.maximum(x, 0.0)`` an fp32 tensor first (tl.maximum calls to_tensor), so fp16
    x computes in fp32: one HADD2.F32 per element, the max, and one F2FP per pair for the store's ``.to`` -- as the
    SASS of triton 3.6 for sm_90a has it.  ``x + 1.0`` keeps the number weakly typed (packed fp16 adds); an fp16
    tensor plus an fp32 tensor converts the fp16 one."""
    n, BLOCK = 4096, 1024
    x = RNG.standard_normal(n).astype(np.float16)
    out = np.zeros(n, np.float16)
    tr = trace_launch(half_max_kernel, (n // BLOCK,), [x, out, n], dict(BLOCK=BLOCK, HOW=how, num_warps=4))
    ref = {"maximum": np.maximum(x.astype(np.float32), 0), "add": x + np.float16(1),
           "mixed": x.astype(np.float32) + np.arange(n, dtype=np.float32)}[how]
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float16).astype(np.float32), rtol=1e-3)
    epw = BLOCK // (32 * 4)                    # elements per thread
    ops = {o.label.split(".")[0] if o.label.startswith("F2FP") else o.label: o.n_inst for o in tr.tables[0].ops
           if o.line == tr.tables[0].ops[-1].line or o.label in ("HADD2.F32", "HADD2", "FMNMX", "FADD")}
    want = {"HADD2.F32": epw, "FMNMX": epw, "FADD": epw, "F2FP": epw // 2, "HADD2": epw // 2}
    for label in per_elem:
        assert ops.get(label) == want[label], (label, ops)
    if how == "add":
        assert "HADD2.F32" not in ops and "F2FP" not in ops


@triton.jit
def keep_kernel(X, Out, n, p, seed, BLOCK: tl.constexpr, EARLY_STORE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    if EARLY_STORE:
        tl.store(Out + offs, offs.to(tl.float32), mask=offs < n)
    r = tl.rand(seed, offs)
    tl.store(Out + offs, tl.where(r > p, x / (1 - p), 0.0), mask=offs < n)


@pytest.mark.parametrize("early_store", [False, True])
def test_load_sinks_past_long_independent_work_to_its_first_use(early_store):
    """The dropout tutorial's shape: a load, then ~hundreds of Philox instructions that do not use it, then its use.
    ptxas issues the load just before the use (its latency then shows as long-scoreboard stall); a store between
    them pins it (it could alias)."""
    n = 4096
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    tr = trace_launch(keep_kernel, (n // 1024,), [x, out, n, 0.5, 7], dict(BLOCK=1024, EARLY_STORE=early_store))
    ops = tr.tables[0].ops
    ld = next(i for i, o in enumerate(ops) if o.kind == OpKind.LOAD)
    use = next(j for j, o in enumerate(ops) if ld in o.deps)
    between = sum(o.n_inst for o in ops[ld + 1:use])
    if early_store:
        assert between >= costs.LOAD_SINK_MIN_SLOTS        # the store kept it where the source has it
    else:
        assert use == ld + 1 and ops[ld - 1].label.startswith(("I", "LOP", "SHF", "PRMT", "F", "M"))
        assert sum(o.n_inst for o in ops[:ld]) >= costs.LOAD_SINK_MIN_SLOTS


# ---------------------------------------------------------------------------------------------------------
# vector widths, coalescing
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@pytest.mark.parametrize("dtype,n,vec", [(np.float32, 4096, 4), (np.float16, 4096, 8), (np.float32, 4100, 1),
                                         (np.float16, 4095, 1)])
def test_vector_width_from_specialization(dtype, n, vec):
    x = RNG.standard_normal(n).astype(dtype)
    y = RNG.standard_normal(n).astype(dtype)
    out = np.zeros(n, dtype)
    tr = trace_launch(add_kernel, (triton.cdiv(n, 1024),), [x, y, out, n], dict(BLOCK=1024))
    tr.check()
    np.testing.assert_allclose(out, x + y, rtol=1e-3)
    assert set(tr.meta["vector_widths"].values()) == {vec}
    eb = np.dtype(dtype).itemsize
    for _, _, op in _ops(tr, OpKind.LOAD) + _ops(tr, OpKind.STORE):
        assert op.mem.bytes_per_lane == vec * eb
        assert op.n_inst == 1024 // (32 * 4) // vec
        # masked-off lanes of the last program move no bytes and touch no lines
        assert op.mem.bytes_requested == n * eb
        assert op.mem.line.max() - op.mem.line.min() + 1 == -(-n * eb // 128)     # arrays are line-aligned


def test_sectors_of_a_coalesced_128bit_load():
    n = 1 << 16
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    tr = trace_launch(add_kernel, (n // 1024,), [x, x, out, n], dict(BLOCK=1024))
    _, _, ld = _ops(tr, OpKind.LOAD)[0]
    m = ld.mem
    # each LDG.E.128 of a warp reads 32 x 16 B = 512 B: 4 full lines, 16 sectors; 2 instructions per warp
    assert ld.label == "LDG.E.128" and ld.n_inst == 2
    assert (m.sectors_per_warp() == 32).all() and (m.lines_per_warp() == 8).all()
    assert (m.smask == 0xF).all()
    assert m.bytes_requested == n * 4
    # the lines of the whole launch are each touched exactly once
    assert len(np.unique(m.line)) == len(m.line) == n * 4 // 128


@pytest.mark.parametrize("BK,K", [(64, 512), (16, 200)])
def test_advanced_pointer_tiles_reuse_requests_exactly(monkeypatch, BK, K):
    """A loop's ``ptrs += BK * stride`` reuses the site's last coalesced requests shifted by whole lines: the
    trace equals one where every access is coalesced from its lanes' addresses.  BK=64 (fp16): both operands
    advance by whole lines and are reused; BK=16: A advances 32 B (recomputed), and the masked K tail is
    recomputed too."""
    from gpusim.triton import _lower as L
    from gpusim.triton import _lower_memory as LM
    M = N = 128
    a = (RNG.standard_normal((M, K)) * 0.1).astype(np.float16)
    b = (RNG.standard_normal((K, N)) * 0.1).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    args = [a, b, c, M, N, K, K, 1, N, 1, N, 1]
    meta = dict(BM=64, BN=64, BK=BK, PREC="tf32", num_warps=4, num_stages=2)
    calls = []
    real = LM.coalesce_programs
    monkeypatch.setattr(LM, "coalesce_programs", lambda *x: calls.append(1) or real(*x))
    reused = trace_launch(mm_kernel, (4,), args, meta)
    n_reused = len(calls)
    monkeypatch.setattr(L.Recorder, "_global_access", lambda self, site, ptr, shape, mask, lay, vec, store:
                        real(self._addresses(ptr, shape, mask, lay, vec, store), vec * ptr.buf.elem_bytes, self.P))
    full = trace_launch(mm_kernel, (4,), args, meta)
    n_iter = -(-K // BK)
    kinds = (OpKind.LOAD, OpKind.ASYNC_COPY, OpKind.STORE)
    accesses = [(x.mem, y.mem) for tx, ty in zip(reused.tables, full.tables) for x, y in zip(tx.ops, ty.ops)
                if x.kind in kinds and x.mem.space == Space.GLOBAL]
    assert len(accesses) == 2 * n_iter + 1                      # A and B per iteration, the C store
    for x, y in accesses:
        assert np.array_equal(x.line, y.line) and np.array_equal(x.smask, y.smask)
        assert np.array_equal(x.ptr, y.ptr) and x.bytes_requested == y.bytes_requested
    # what was coalesced from addresses: the first iteration and the store; BK=16 also every A tile and the tail
    assert n_reused == (3 if BK == 64 else 2 + n_iter + 1)


@triton.jit
def strided_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride))


def test_strided_load_is_scalar_and_uncoalesced():
    x = np.ones(1024 * 8, np.float32)
    out = np.zeros(1024, np.float32)
    tr = trace_launch(strided_kernel, (1,), [x, out, 8], dict(BLOCK=1024, num_warps=4))
    _, _, ld = _ops(tr, OpKind.LOAD)[0]
    assert ld.label == "LDG.E.32"
    # lanes 32 B apart: every lane its own sector, 8 lines per instruction
    assert (ld.mem.sectors_per_warp() == 32 * ld.n_inst).all()
    assert (ld.mem.lines_per_warp() == 8 * ld.n_inst).all()


@triton.jit
def hinted_kernel(x_ptr, out_ptr, start, BLOCK: tl.constexpr):
    offs = start + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


def test_multiple_of_hint_restores_vectors():
    x = np.ones(4096, np.float32)
    out = np.zeros(1024, np.float32)
    tr = trace_launch(hinted_kernel, (1,), [x, out, 1024], dict(BLOCK=1024))     # 1024 % 16 == 0 anyway
    assert tr.meta["vector_widths"][f"test_triton_lowering.py:{_line(hinted_kernel, 'tl.load(x_ptr + offs)')}"] == 4


# ---------------------------------------------------------------------------------------------------------
# reductions, SFU, control flow
# ---------------------------------------------------------------------------------------------------------

@triton.jit
def rowsoftmax_kernel(x_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + cols)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * N + cols, e / tl.sum(e, axis=0))


def test_cross_warp_reduction_goes_through_shared_memory_and_exp_uses_sfu():
    N = 1024
    x = RNG.standard_normal((4, N)).astype(np.float32)
    out = np.zeros_like(x)
    tr = trace_launch(rowsoftmax_kernel, (4,), [x, out], dict(N=N, num_warps=4))
    tr.check()
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)
    ops = tr.tables[0].ops
    shfl = [o for o in ops if o.label == "SHFL.BFLY"]
    # per reduction: log2(32 lanes) butterfly steps in the warp, then log2(4 warps) over the partials read back
    # from shared memory (Triton's ReduceOp lowering, as in tl_softmax's SASS)
    assert len(shfl) == 2 * (5 + 2)
    assert len([o for o in ops if o.kind == OpKind.BARRIER]) == 2 * 2
    smem = [o for o in ops if o.mem is not None and o.mem.space == Space.SHARED]
    assert [o.kind for o in smem] == [OpKind.STORE, OpKind.LOAD] * 4
    ept = N // (32 * 4)
    ex2 = [o for o in ops if o.label == "MUFU.EX2"]
    assert len(ex2) == 1 and ex2[0].pipe == Pipe.SFU and ex2[0].n_inst == ept
    # tl.exp: x * log2(e), then ex2.approx.f32 with its denormal guard (FSETP + predicated FMULs)
    fsetp = ops[ex2[0].deps[0]]
    fmul = ops[fsetp.deps[0]]
    assert fsetp.label == "FSETP" and fmul.label == "FMUL" and fmul.pipe == Pipe.FP32 and fmul.n_inst == 3 * ept
    assert tr.shared_bytes_per_cta >= 4 * 4           # one partial per warp


@triton.jit
def varying_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, pid):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


def test_program_varying_loop_sets_active_warps():
    P, B = 6, 128
    x = RNG.standard_normal(P * B).astype(np.float32)
    out = np.zeros(P * B, np.float32)
    tr = trace_launch(varying_kernel, (P,), [x, out], dict(BLOCK=B, num_warps=2))
    tr.check()
    ref = np.concatenate([x[:p * B].reshape(p, B).sum(0) if p else np.zeros(B, np.float32) for p in range(P)])
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    t = tr.tables[0]
    assert t.active is not None
    loads = [i for i, o in enumerate(t.ops) if o.kind == OpKind.LOAD]
    assert len(loads) == P - 1                        # lockstep iterations: the longest trip count
    # in iteration k the programs p > k take part: 2 warps each
    for k, i in enumerate(loads):
        assert np.count_nonzero(t.active[i]) == 2 * (P - 1 - k)
    counts = tr.instruction_counts()
    assert counts["inst_executed"] < len(t.ops) * t.n_warps


def test_trace_metadata_and_source_lines():
    tr = _matmul(128, 128, 128, 64, 64, 32, 4, 2)
    assert tr.frontend == "triton" and tr.source_file.endswith("test_triton_lowering.py")
    line = _line(mm_kernel, "acc = tl.dot(a, b, acc")
    assert "tl.dot" in tr.source_lines[line]
    assert any(o.line == line and o.kind == OpKind.MMA for o in tr.tables[0].ops)
    assert "formula" in tr.meta["shared_memory"] and "formula" in tr.meta["registers"]


@triton.jit
def attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N: tl.constexpr, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                STAGES: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((BM, D), tl.float32)
    for start in tl.range(0, N, BN, num_stages=STAGES):
        rn = start + tl.arange(0, BN)
        kt = tl.load(k_ptr + rn[None, :] * D + rd[:, None])
        s = tl.dot(q, kt)
        p = tl.exp(s - tl.max(s, 1)[:, None])
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc)


def test_chained_dots_put_warps_along_m_and_keep_p_in_registers():
    N, D, BM, BN = 256, 64, 128, 64
    q, k, v = (RNG.standard_normal((N, D)).astype(np.float16) * 0.3 for _ in range(3))
    o = np.zeros((N, D), np.float32)
    tr = trace_launch(attn_kernel, (N // BM,), [q, k, v, o], dict(N=N, D=D, BM=BM, BN=BN, STAGES=2, num_warps=4))
    tr.check()
    qf, kf, vf = (x.astype(np.float32) for x in (q, k, v))
    ref = np.zeros_like(o)
    for s0 in range(0, N, BN):
        s = qf @ kf[s0:s0 + BN].T
        p = np.exp(s - s.max(1, keepdims=True)).astype(np.float16).astype(np.float32)
        ref += p @ vf[s0:s0 + BN]
    np.testing.assert_allclose(o, ref, rtol=2e-2, atol=2e-2)
    dots = list(tr.meta["dots"].values())
    assert [d["warpsPerCTA"] for d in dots] == [[4, 1], [4, 1]]        # FlashAttention's layout: rows over warps
    assert dots[0]["a_operand"] == "shared" and dots[1]["a_operand"] == "registers"
    # tl.range(num_stages=2): K and V tiles each get 2 buffers; Q is staged once (loop-invariant, hoisted)
    assert tr.meta["shared_memory"]["pipeline_buffers"] == 2 * (BN * D * 2) * 2
    assert tr.meta["shared_memory"]["dot_operand_staging"] == BM * D * 2
    ops = tr.tables[0].ops
    last_mma = max(i for i, o in enumerate(ops) if o.kind == OpKind.MMA)
    assert sum(o.label.startswith("STS") for o in ops[:last_mma]) == 1
    # the accumulator leaves the MMA layout through shared memory before the coalesced store
    assert [o.kind for o in ops[last_mma + 1:] if o.mem is not None or o.kind == OpKind.BARRIER][-4:] == [
        OpKind.STORE, OpKind.BARRIER, OpKind.LOAD, OpKind.STORE]
    # the row max (axis 1 of the MMA layout) stays inside a warp: shuffles, no shared memory round trip
    # (the barriers in the loop are the cp.async ring's: two per iteration)
    first_mma = min(i for i, o in enumerate(ops) if o.kind == OpKind.MMA)
    assert not any(o.mem is not None and o.mem.space == Space.SHARED for o in ops[first_mma:last_mma])
    assert sum(o.kind == OpKind.BARRIER for o in ops[first_mma:last_mma]) <= 2 * (N // BN)
    assert sum(o.label == "SHFL.BFLY" for o in ops) == 2 * (N // BN)      # log2(4 lanes along N) per block


@triton.jit
def persistent_kernel(ctr_ptr, out_ptr, n_tiles, BLOCK: tl.constexpr):
    tile = tl.atomic_add(ctr_ptr, 1)
    while tile < n_tiles:
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, offs.to(tl.float32))
        tile = tl.atomic_add(ctr_ptr, 1)


def test_persistent_kernel_with_an_atomic_work_counter():
    # the lockstep programs draw tickets until the counter passes n_tiles; the probe works on a copy
    ctr = np.zeros(1, np.int32)
    out = np.zeros(20 * 32, np.float32)
    tr = trace_launch(persistent_kernel, (6,), [ctr, out, 20], dict(BLOCK=32, num_warps=1))
    tr.check()
    np.testing.assert_array_equal(out, np.arange(20 * 32, dtype=np.float32))
    assert ctr[0] == 20 + 6                     # each program's last ticket is past the end
    assert tr.tables[0].active is not None      # programs leave the while loop at different iterations


@triton.jit
def square_half_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * x).to(tl.float16), mask=mask)


def _reaches(ops, src: int, dst: int) -> bool:
    seen, todo = set(), [dst]
    while todo:
        i = todo.pop()
        if i == src:
            return True
        if i not in seen:
            seen.add(i)
            todo.extend(ops[i].deps)
    return False


def test_folded_fp16_math_keeps_the_dataflow_from_load_to_store():
    # (x.to(fp32) * x.to(fp32)).to(fp16) is one HMUL2 per pair (the conversions fold away), but the store
    # still waits for the load's data through it
    x = RNG.standard_normal(4096).astype(np.float16)
    y = np.zeros_like(x)
    tr = trace_launch(square_half_kernel, (4,), [x, y, 4096], dict(BLOCK=1024, num_warps=4))
    np.testing.assert_allclose(y.astype(np.float32), (x.astype(np.float32) ** 2).astype(np.float16), rtol=1e-3)
    ops = tr.tables[0].ops
    ld = [i for i, o in enumerate(ops) if o.kind == OpKind.LOAD]
    st = [i for i, o in enumerate(ops) if o.kind == OpKind.STORE]
    assert len(ld) == 1 and len(st) == 1
    assert _reaches(ops, ld[0], st[0])
    assert not any(o.label.startswith(("HADD2.F32", "F2FP")) for o in ops)     # no conversions were emitted


@triton.jit
def _reread(x_ptr, out_ptr, REPS: tl.constexpr, CG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for r in range(REPS):
        if CG:
            acc += tl.load(x_ptr + offs, cache_modifier=".cg")
        else:
            acc += tl.load(x_ptr + offs)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offs, acc)


def test_cg_loads_skip_the_l1():
    """cache_modifier=".cg" is ld.global.cg: the sectors a program reads again miss the L1 and go to the L2 every
    time; a plain load of the same region hits the L1 after the first pass."""
    import gpusim
    x = np.ones(1024, np.float32)
    rep = {}
    for cg in (False, True):
        out = np.zeros(4 * 1024, np.float32)
        rep[cg] = gpusim.simulate(_reread, (4,), x, out, REPS=8, CG=cg, BLOCK=1024, num_warps=4, progress=False)
        assert np.allclose(out, 8.0)
    sectors = 4 * 8 * 1024 * 4 // 32                 # 4 programs x 8 passes over 4 KB
    for cg in (False, True):
        assert rep[cg].engine.memory["l1_ld_sectors"] == sectors
    assert rep[False].engine.memory["l1_ld_hit_sectors"] >= sectors // 2
    assert rep[True].engine.memory["l1_ld_hit_sectors"] == 0
    # past the L1 every time; the two SMs of a TPC (programs 2i, 2i+1) merge reads of the same sectors in flight on
    # the way to the L2 (l2.merge_sms), so the L2 sees between 1/merge_sms of them and all
    from gpusim.config import load_gpu
    assert sectors // load_gpu("h100").l2.merge_sms <= rep[True].engine.memory["l2_rd_sectors"] <= sectors
    assert rep[True].engine.memory["l2_rd_sectors"] > rep[False].engine.memory["l2_rd_sectors"]


@triton.jit
def _wide_rows(x_ptr, out_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * N + offs, mask=offs < N, other=0.0)
    e = tl.exp(x - tl.max(x, 0))
    y = tl.sin(x) * tl.cos(x) + e / tl.sum(e, 0)
    tl.store(out_ptr + tl.program_id(0) * N + offs, y * x + tl.sqrt(tl.abs(x)), mask=offs < N)


def test_the_register_estimate_is_capped_so_one_cta_fits_as_ptxas_caps_it():
    """Triton hands ptxas `.maxntid num_warps * 32`: with 32 warps a thread gets at most 64K / 1024 = 64 registers
    (ptxas spills the rest; unsloth's cross entropy at BLOCK_SIZE 32768, num_warps 32 runs on the H100) -- the
    built-in estimate must not refuse the launch for registers (it did: 106 per thread)."""
    from gpusim import compilers
    x = np.random.default_rng(0).standard_normal((2, 32768)).astype(np.float32)
    out = {}
    for W in (32, 8):
        with compilers.use("builtin"):
            tr = trace_launch(_wide_rows, (2,), [x, np.zeros_like(x)], {"N": 32768, "BLOCK": 32768, "num_warps": W})
        out[W] = (tr.regs_per_thread, tr.meta["registers"]["estimate"], tr.meta["registers"]["spilled_registers"])
    regs, est, spill = out[32]
    assert est > 64 and regs == 64 and spill == est - 64
    regs8, est8, spill8 = out[8]
    assert regs8 == min(255, est8) > 64 and spill8 == max(0, est8 - 255)
