"""gpusim.cuda traces checked against numbers worked out by hand: sectors per request for affine strides,
shared-memory bank conflicts, the cost of divergence, active lanes, scoreboard dependencies, registers."""
import math

import numpy as np
import pytest

from gpusim import cuda
from gpusim.cuda import costs as C_
from gpusim.cuda import trace_launch
from gpusim.cuda.memory import coalesce_rows, shared_rows
from gpusim.trace import OpKind, Space, coalesce_global, shared_access


def run(kernel, grid, block, *args, shared=0, **kw):
    tr = trace_launch(kernel, grid, block, list(args), shared_bytes=shared, **kw)
    tr.check()
    return tr


def ops_of(tr, kind=None, label=None):
    out = []
    for t in tr.tables:
        for i, op in enumerate(t.ops):
            if (kind is None or op.kind == kind) and (label is None or op.label.startswith(label)):
                out.append((t, i, op))
    return out


@cuda.jit
def k_strided(a, out, stride):
    i = cuda.grid(1)
    out[i] = a[i * stride]


@pytest.mark.parametrize("dtype,stride,sectors", [(np.float32, 1, 4), (np.float64, 1, 8), (np.float32, 2, 8),
                                                  (np.float32, 8, 32), (np.float32, 32, 32), (np.float64, 16, 32),
                                                  (np.int8, 1, 1)])
def test_sectors_per_request_affine(dtype, stride, sectors):
    n = 256
    a = np.arange(n * stride, dtype=dtype)
    out = np.zeros(n, dtype)
    tr = run(k_strided, 2, 128, a, out, stride)
    np.testing.assert_array_equal(out, a[::stride])
    (t, i, ld), = ops_of(tr, OpKind.LOAD)
    per_warp = ld.mem.sectors_per_warp()
    assert list(per_warp) == [sectors] * 8          # one request per warp
    (t, i, stg), = ops_of(tr, OpKind.STORE)
    assert list(stg.mem.sectors_per_warp()) == [32 * np.dtype(dtype).itemsize // 32 or 1] * 8
    assert ld.mem.bytes_requested == n * np.dtype(dtype).itemsize


@cuda.jit
def k_bank(out, stride):
    s = cuda.shared.array(64 * 33, np.float32)
    t = cuda.threadIdx.x
    s[t * stride] = t
    cuda.syncthreads()
    out[t] = s[t * stride]


@pytest.mark.parametrize("stride", list(range(1, 34)))
def test_bank_conflicts_gcd(stride):
    out = np.zeros(64, np.float32)
    tr = run(k_bank, 1, 64, out, stride)
    np.testing.assert_array_equal(out, np.arange(64))
    for kind in (OpKind.STORE, OpKind.LOAD):
        (t, i, op), = [x for x in ops_of(tr, kind) if x[2].mem.space == Space.SHARED]
        conflicts = op.mem.wavefronts - op.mem.shared_ideal_wavefronts
        assert list(conflicts) == [math.gcd(stride, 32) - 1] * 2


LINE_A = None


@cuda.jit
def k_branch(out, mode):
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    key = t // 32 if mode == 0 else t
    x = out[i]
    if key % 2 == 0:
        x = x * 3.0 + 1.0
        x = math.sqrt(x)
    else:
        x = x * 2.0 + 5.0
        x = math.exp(x * 0.001)
    out[i] = x


def _body_inst(tr, lines):
    warp_inst = 0
    lanes = 0
    for t in tr.tables:
        for i, op in enumerate(t.ops):
            if op.line in lines:
                act = t.lanes(i)
                warp_inst += op.n_inst * int(np.count_nonzero(act))
                lanes += op.n_inst * int(act.sum())
    return warp_inst, lanes


def test_divergent_branch_doubles_body_instructions():
    import inspect
    src, start = inspect.getsourcelines(k_branch.py_func)
    body = {start + k for k, ln in enumerate(src) if "x = x *" in ln or "math." in ln}
    assert len(body) == 4
    out = np.ones(512, np.float64)
    uni = run(k_branch, 2, 256, out.copy(), 0)
    div = run(k_branch, 2, 256, out.copy(), 1)
    wu, lu = _body_inst(uni, body)
    wd, ld = _body_inst(div, body)
    assert wd == 2 * wu                       # every warp issues both sides
    assert ld == lu                           # ... with half its lanes on each
    # the condition varies across lanes as far as the compiler knows, so both kernels open a convergence
    # region (BSSY ... BSYNC) that every warp executes, divergent or not (divergence_g32 vs g16 on the H100)
    for tr in (uni, div):
        (t, i, op), = ops_of(tr, label="BSSY")
        (t2, j, op2), = ops_of(tr, label="BSYNC")
        assert np.count_nonzero(t.lanes(i)) == np.count_nonzero(t2.lanes(j)) == t.n_warps
    # the instruction mix of the whole kernel: active threads per warp instruction drops below 32
    cu, cd = uni.instruction_counts(), div.instruction_counts()
    assert cu["thread_inst_executed"] == 32 * cu["inst_executed"]
    assert cd["thread_inst_executed"] < 32 * cd["inst_executed"]


@cuda.jit
def k_vadd(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def test_active_lanes_deps_and_flops():
    n = 1000
    a = np.random.default_rng(0).random(n).astype(np.float32)
    b = np.random.default_rng(1).random(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    tr = run(k_vadd, 4, 256, a, b, out)
    np.testing.assert_array_equal(out, a + b)
    t = tr.tables[0]
    loads = [i for i, op in enumerate(t.ops) if op.kind == OpKind.LOAD]
    (fadd,) = [i for i, op in enumerate(t.ops) if op.label == "FADD"]
    assert t.ops[fadd].deps == tuple(loads)                 # the add waits for both loads
    (st,) = [op for op in t.ops if op.kind == OpKind.STORE]
    assert st.deps == (fadd,)                  # the stored value came from the add (deps are transitive)
    lanes = t.lanes(loads[0])
    assert int(lanes.sum()) == n and int(np.count_nonzero(lanes)) == 32 and lanes[31] == 8
    assert tr.flops == n
    assert tr.n_ctas == 4 and tr.warps_per_cta == 8


@cuda.jit
def k_gather(idx, a, out):
    i = cuda.grid(1)
    j = idx[i]
    out[i] = a[j] * 2.0


def test_index_arithmetic_depends_on_the_index_load():
    idx = np.array([3, 1, 2, 0] * 8, np.int64)
    a = np.arange(4, dtype=np.float64)
    out = np.zeros(32)
    tr = run(k_gather, 1, 32, idx, a, out)
    np.testing.assert_array_equal(out, a[idx] * 2)
    t = tr.tables[0]
    first_load = next(i for i, op in enumerate(t.ops) if op.kind == OpKind.LOAD)
    # the index arithmetic of a[j] (wraparound + address) waits for the load of j, and the load of a[j] for it
    dependent = [i for i, op in enumerate(t.ops) if first_load in op.deps]
    assert dependent and t.ops[dependent[0]].label == "SHF+LOP3+IADD3"
    second_load = next(i for i, op in enumerate(t.ops) if op.kind == OpKind.LOAD and i > first_load)
    assert t.ops[second_load].deps and t.ops[second_load].deps[0] in range(dependent[0], second_load)


@cuda.jit
def k_regs1(a, out):
    i = cuda.grid(1)
    s0 = 0.0
    for k in range(a.shape[0]):
        s0 += a[k]
    out[i] = s0


@cuda.jit
def k_regs3(a, out):
    i = cuda.grid(1)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for k in range(a.shape[0]):
        s0 += a[k]
        s1 += a[k] * 2.0
        s2 += a[k] * 3.0
    out[i] = s0 + s1 + s2


@cuda.jit
def k_regs6(a, out):
    i = cuda.grid(1)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    s4 = 0.0
    s5 = 0.0
    for k in range(a.shape[0]):
        s0 += a[k]
        s1 += a[k] * 2.0
        s2 += a[k] * 3.0
        s3 += a[k] * 4.0
        s4 += a[k] * 5.0
        s5 += a[k] * 6.0
    out[i] = s0 + s1 + s2 + s3 + s4 + s5


def test_register_estimate_grows_with_live_values():
    a = np.ones(4)
    out = np.zeros(32)
    r1 = run(k_regs1, 1, 32, a, out).regs_per_thread
    r3 = run(k_regs3, 1, 32, a, out).regs_per_thread
    tr6 = run(k_regs6, 1, 32, a, out)
    r6 = tr6.regs_per_thread
    assert r1 < r3 < r6
    live = [run(k, 1, 32, a, out).meta["registers"]["live_variables"] for k in (k_regs1, k_regs3)]
    live.append(tr6.meta["registers"]["live_variables"])
    assert live[1] - live[0] == 4 and live[2] - live[1] == 6   # each float64 accumulator: 2 words
    info = tr6.meta["registers"]
    assert info["estimate"] == r6
    assert r6 == round(C_.REGISTERS_BASE + sum(w * info[k] for k, w in C_.REGISTERS_WEIGHTS.items()))
    assert info["unrolled_loads_in_flight"] == 3 * 2         # a[k] is loaded once per iteration (GVN)
    assert run(k_regs6, 1, 32, a, out, max_registers=40).regs_per_thread == 40


@cuda.jit
def k_loop(out, n):
    i = cuda.grid(1)
    s = 0
    for k in range(n):
        s += k
    for k in range(4):           # constant trip count: unrolled, no loop overhead
        s += k
    out[i] = s


def test_loop_overhead_per_iteration():
    out = np.zeros(64, np.int64)
    tr = run(k_loop, 2, 32, out, 10)
    assert (out == 45 + 6).all()
    t = tr.tables[0]
    line = k_loop.py_func.__code__.co_firstlineno + 4
    labels = [op.label for op in t.ops if op.line == line]
    # numba's range iterator runs every iteration; LLVM unrolls the runtime loop by 4: two groups of 4 with one
    # trip test each (the loop variable is used: counter + branch), then 2 remainder iterations with their own
    assert labels.count("ISETP+SEL+IADD3") == 10
    assert labels.count("IADD3+ISETP") == 2 + 2
    assert labels.count("BRA") == 2 + 2 + 2                     # set-ups (empty loop, remainder), groups, remainder
    assert labels.count("LOP3+ISETP+SEL+IADD3") == 1           # the unrolled loop's remainder set-up
    assert not [op for op in t.ops if op.line == line + 2]      # constant trip count: fully unrolled


@cuda.jit
def k_exit_half(out):
    i = cuda.grid(1)
    if i % 64 >= 32:
        return
    out[i] = 1.0


def test_warps_with_no_active_lane_issue_nothing():
    out = np.zeros(256)
    tr = run(k_exit_half, 1, 256, out)
    t = tr.tables[0]
    (st,) = [i for i, op in enumerate(t.ops) if op.kind == OpKind.STORE]
    assert list(t.lanes(st)) == [32, 0] * 4
    assert out.reshape(4, 64)[:, :32].all() and not out.reshape(4, 64)[:, 32:].any()


def test_fast_coalescer_equals_the_reference():
    rng = np.random.default_rng(5)
    n = 300
    base = rng.integers(0, 1 << 20, size=(n, 1)) * 4
    lane = np.arange(32)[None, :]
    pats = [base + lane * 4, base + lane * 8, base + lane * 132, base + (lane % 4) * 4,
            rng.integers(0, 1 << 16, size=(n, 32)) * 4]
    for p in pats:
        p = p.copy()
        p[rng.random(p.shape) < 0.2] = -1
        for nb in (1, 4, 8, 16):
            got, exp = coalesce_rows(p, nb), coalesce_global(p, nb)
            np.testing.assert_array_equal(got.ptr, exp.ptr)
            np.testing.assert_array_equal(got.line, exp.line)
            np.testing.assert_array_equal(got.smask, exp.smask)
            assert got.bytes_requested == exp.bytes_requested
            s1, s2 = shared_rows(p % 4096, nb), shared_access(p % 4096, nb)
            np.testing.assert_array_equal(s1.wavefronts, s2.wavefronts)
            np.testing.assert_array_equal(s1.shared_ideal_wavefronts, s2.shared_ideal_wavefronts)


@cuda.jit
def k_big(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] * 2.0


def test_chunks_cover_the_grid_and_addresses_are_stable(monkeypatch):
    import gpusim.cuda.launch as LM
    monkeypatch.setattr(LM, "CHUNK_THREADS", 1024)
    n = 10000
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    tr = run(k_big, 40, 256, a, out)
    assert len(tr.tables) == 10 and [t.first_cta for t in tr.tables] == list(range(0, 40, 4))
    np.testing.assert_array_equal(out, a * 2)
    tr2 = run(k_big, 40, 256, a, out)
    l1 = [op.mem.line for _, _, op in ops_of(tr, OpKind.LOAD)]
    l2 = [op.mem.line for _, _, op in ops_of(tr2, OpKind.LOAD)]
    assert all(np.array_equal(x, y) for x, y in zip(l1, l2))     # same array, same device addresses
    assert tr.source_file.endswith("test_cuda_trace.py")
    assert "out[i] = a[i] * 2.0" in tr.source_lines[k_big.py_func.__code__.co_firstlineno + 4]


@cuda.jit
def k_walks(a, out, loc_k):
    i = cuda.grid(1)
    r = i % a.shape[0]
    s = 0.0
    loc = cuda.local.array(16, np.float32)
    sh = cuda.shared.array(256, np.float32)
    for k in range(a.shape[1]):            # row walk: uniform offset +4 B per iteration
        s += a[r, k]
        s += a[k, r]                       # column walk: +row pitch per iteration
        sh[(cuda.threadIdx.x * 3 + k) % 256] = s
        loc[(k + loc_k) % 16] = s
    out[i] = s + loc[i % 16] + sh[cuda.threadIdx.x]


def test_memory_summary_cache_is_exact(monkeypatch):
    import gpusim.cuda.memaccess as RT
    a = np.random.default_rng(3).random((40, 40)).astype(np.float32)
    out = np.zeros(160, np.float32)              # the same arrays: the same device addresses

    def go():
        out[:] = 0
        tr = run(k_walks, 5, 32, a, out, 3)
        return tr, out.copy()
    tr1, o1 = go()
    monkeypatch.setattr(RT, "MEM_CACHE", False)
    tr2, o2 = go()
    np.testing.assert_array_equal(o1, o2)
    m1 = [op.mem for _, _, op in tr1.iter_ops() if op.mem is not None]
    m2 = [op.mem for _, _, op in tr2.iter_ops() if op.mem is not None]
    assert len(m1) == len(m2) > 100
    for x, y in zip(m1, m2):
        assert x.space == y.space and x.bytes_requested == y.bytes_requested
        for f in ("ptr", "line", "smask", "wavefronts", "shared_ideal_wavefronts"):
            fx, fy = getattr(x, f), getattr(y, f)
            assert (fx is None) == (fy is None)
            if fx is not None:
                np.testing.assert_array_equal(fx, fy)


@pytest.mark.parametrize("bpl,off", [(1, 0), (1, 3), (2, 62), (4, 0), (4, 4), (4, 96), (8, 0), (8, 120), (16, 64)])
def test_contiguous_fast_path_equals_the_general_coalescer(bpl, off):
    """A unit-stride warp access (closed form in ``coalesce_rows``) gives the lines, sector masks and bytes the
    general coalescer gives; a gap in one warp, an inactive lane, or mixed alignments take the general path."""
    from gpusim.cuda.memory import _contiguous_rows, coalesce_rows
    from gpusim.trace import coalesce_global
    rng = np.random.default_rng(bpl * 1000 + off)
    a0 = rng.integers(0, 10_000, 300) * 128 + off
    a = a0[:, None] + np.arange(32)[None, :] * bpl
    fast, ref = _contiguous_rows(a, bpl, 0), coalesce_global(a, bpl)
    assert fast is not None
    for f in ("ptr", "line", "smask"):
        assert np.array_equal(getattr(fast, f), getattr(ref, f)), f
    assert fast.bytes_requested == ref.bytes_requested == 300 * 32 * bpl
    gap, off_lane, mixed = a.copy(), a.copy(), a.copy()
    gap[7, 5:] += 128
    off_lane[3, 9] = -1
    mixed[11] += 32
    for x in (gap, off_lane, mixed):
        assert _contiguous_rows(x, bpl, 0) is None
        m, r = coalesce_rows(x, bpl), coalesce_global(x, bpl)
        assert np.array_equal(m.line, r.line) and np.array_equal(m.smask, r.smask)


@cuda.jit
def k_strided_walk(out, n):
    t = cuda.threadIdx.x
    for i in range(t, n, 32):
        out[i] = i * 2


@pytest.mark.parametrize("n, issues", [
    # trips per lane: n=100: lanes 0-3: 4 (remainder 0, one group of 4), lanes 4-31: 3 (remainder 3): the warp
    # issues the 3 remainder copies, then the 4 of the group -- 7, not max(trip) = 4 -- as numba-cuda's SASS
    # (remainder first) does (records: nb_random_100 measures 80,000 load requests; in-step iterations gave 65,000)
    (100, 3 + 4),
    # n=112: lanes 0-15: 4, lanes 16-31: 3: the same
    (112, 3 + 4),
    # n=80: lanes 0-15: 3, lanes 16-31: 2 -- remainders only, in step
    (80, 3),
    # n=128: every lane 4 trips, remainder 0: one group
    (128, 4),
    # n=136: lanes 0-7: 5 trips (remainder 1), the rest 4 (remainder 0): 1 remainder copy, then the group
    (136, 1 + 4),
])
def test_lanes_with_different_remainders_run_them_apart(n, issues):
    out = np.zeros(n, np.int64)
    tr = run(k_strided_walk, 1, 32, out, n)
    assert (out == 2 * np.arange(n)).all()
    t = tr.tables[0]
    stores = [i for i, op in enumerate(t.ops) if op.kind == OpKind.STORE]
    assert len(stores) == issues
    assert sum(int(t.lanes(i)[0]) for i in stores) == n      # each element stored once, whatever its slot


@cuda.jit
def k_counted_walk(out, trips):
    t = cuda.threadIdx.x
    for k in range(trips[t]):
        out[t, k] = k + 1


def test_a_loop_from_zero_runs_its_remainder_last():
    # range(trips[t]) starts at the constant 0: LLVM's remainder is an epilogue (nb_matmul's SASS: the 4-way
    # unrolled body, then the single iterations).  Lanes 0-3 run 4 trips (one group), the others 3 (remainder):
    # the group's 4 issues first (lanes 0-3), then 3 remainder issues (lanes 4-31)
    trips = np.where(np.arange(32) < 4, 4, 3).astype(np.int64)
    out = np.zeros((32, 4), np.int64)
    tr = run(k_counted_walk, 1, 32, out, trips)
    assert (out == np.where(np.arange(4)[None, :] < trips[:, None], np.arange(1, 5)[None, :], 0)).all()
    t = tr.tables[0]
    lanes = [int(t.lanes(i)[0]) for i, op in enumerate(t.ops) if op.kind == OpKind.STORE]
    assert lanes == [4, 4, 4, 4, 28, 28, 28]


@cuda.jit
def k_copy64(a, b):
    i = cuda.grid(1)
    b[i] = a[i]


@cuda.jit
def k_exp64(a, b):
    i = cuda.grid(1)
    b[i] = math.exp(a[i])


def test_double_exp_costs_libdevice_s_path_without_the_sfu():
    """numba's math.exp on float64 is libdevice's __nv_exp: ~60 instructions on sm_90 (22 UMOVs of its 64-bit
    constants, 14 DFMA, integer scaling of the exponent), no MUFU -- the GBM step of records/h200/ncu_wild.json
    measures 103 warp instructions per warp where the old 13-instruction estimate gave 59."""
    a = np.linspace(0.1, 2.0, 256)
    base = run(k_copy64, 2, 128, a, np.zeros(256)).instruction_counts()["inst_executed"]
    tr = run(k_exp64, 2, 128, a, np.zeros(256))
    per_warp = (tr.instruction_counts()["inst_executed"] - base) / 8
    assert 55 <= per_warp <= 65
    assert not ops_of(tr, label="MUFU")


@cuda.jit
def k_fmax(x, out):
    i = cuda.grid(1)
    cuda.atomic.max(out, 0, x[i])


def test_a_float_atomic_max_is_a_load_and_a_cas_only_where_the_value_improves():
    """numba-cuda compiles a float atomic.max to a volatile load and a compare-and-swap loop entered only when the
    value beats the location's (no PTX atomic max on floats): every warp loads, only improving lanes swap."""
    x = np.arange(256, dtype=np.float32)[::-1].copy()        # the first thread holds the maximum
    out = np.full(1, -np.inf, np.float32)
    tr = run(k_fmax, 2, 128, x, out)
    assert out[0] == 255.0
    (t, i, ld), = ops_of(tr, label="LDG.E.32.STRONG")
    assert np.count_nonzero(t.lanes(i)) == 8 and ld.mem.l1_bypass
    (t2, j, cas), = ops_of(tr, label="ATOMG.E.CAS")
    assert int(t2.lanes(j).sum()) == 1                        # thread 0 alone improves on -inf; 255 stays
    assert not ops_of(tr, label="ATOMG.E.MAX")
