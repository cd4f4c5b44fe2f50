"""numba-cuda compatibility of gpusim.cuda (project issue 12): ``cuda.random``, cooperative groups' grid sync,
ufuncs with output arrays, ``cuda.reduce``, ``kernel.overloads``, numba's type names and signatures -- and
numba-cuda's documentation examples (numba_cuda/numba/cuda/tests/doc_examples), run unchanged.

Each feature is checked against numpy / analytic values and numba's host-side reference; the ``contract`` tests
run the same kernels under numba's own CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, in a subprocess).
"""
import cmath
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import numba_compat_kernels as K
from gpusim import cuda
from gpusim import trace as trace_mod
from gpusim.cuda import random as grandom
from gpusim.errors import CompileError, CooperativeLaunchTooLarge, UnsupportedConstruct
from gpusim.timing import run as engine_run
from gpusim.trace import OpKind

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


def _numba_sim(script: str, *args, timeout=600):
    """Run ``script`` under numba's CUDA simulator in a subprocess (kernels from numba_compat_kernels.py)."""
    pytest.importorskip("numba")
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", GPUSIM_TEST_FRONTEND="numba",
               PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT)]))
    pre = "import numpy as np\nif not hasattr(np, 'row_stack'): np.row_stack = np.vstack\n"
    r = subprocess.run([sys.executable, "-c", pre + textwrap.dedent(script), *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=timeout, cwd=str(HERE))
    assert r.returncode == 0, f"numba's simulator failed:\n{r.stderr[-3000:]}"
    return r


# ---- cuda.random --------------------------------------------------------------------------------------------------

def test_random_states_are_splitmix_then_jumps():
    st = grandom.create_xoroshiro128p_states(5, seed=7, subsequence_start=2).copy_to_host()
    assert st.dtype == grandom.xoroshiro128p_dtype and st.dtype.names == ("s0", "s1") and st.dtype.itemsize == 16
    z = grandom.splitmix64(np.uint64(7))
    s0, s1 = np.array([z]), np.array([z])
    with np.errstate(over="ignore"):
        for i in range(2 + 5):
            if i >= 2:
                assert (st["s0"][i - 2], st["s1"][i - 2]) == (s0[0], s1[0]), i
            s0, s1 = grandom.jump_state(s0, s1)


def test_random_host_functions_match_the_algorithm():
    st = grandom.create_xoroshiro128p_states(2, seed=3).copy_to_host()
    s0, s1 = int(st["s0"][1]), int(st["s1"][1])
    m = (1 << 64) - 1
    res = (s0 + s1) & m
    x1 = s1 ^ s0
    rot = lambda x, k: ((x << k) | (x >> (64 - k))) & m       # noqa: E731
    assert int(grandom.xoroshiro128p_next(st, 1)) == res
    assert int(st["s0"][1]) == rot(s0, 55) ^ x1 ^ ((x1 << 14) & m) and int(st["s1"][1]) == rot(x1, 36)
    u = grandom.xoroshiro128p_uniform_float64(st, 1)
    assert 0.0 <= u < 1.0 and u * 2.0 ** 53 == int(u * 2.0 ** 53)


def test_random_kernel_matches_host_reference():
    init, final, (u32, u64, nxt, n32, n64) = K.rng_launch(n=70, block=32, seed=99, subsequence_start=1)
    h = init.copy()
    for i in range(70):
        for k in range(K.DRAWS):
            assert u32[i, k] == grandom.xoroshiro128p_uniform_float32(h, i)
            assert u64[i, k] == grandom.xoroshiro128p_uniform_float64(h, i)
            assert nxt[i, k] == grandom.xoroshiro128p_next(h, i)
            np.testing.assert_allclose(n32[i, k], grandom.xoroshiro128p_normal_float32(h, i), rtol=2e-6)
            np.testing.assert_allclose(n64[i, k], grandom.xoroshiro128p_normal_float64(h, i), rtol=1e-12)
    assert np.array_equal(final.view(np.uint64), h.view(np.uint64))      # the states advanced in memory
    assert 0.0 <= u32.min() and u32.max() < 1.0 and abs(float(n64.mean())) < 0.5


def test_random_trace_records_state_traffic_and_integer_ops():
    states = grandom.create_xoroshiro128p_states(64, seed=1)
    outs = [np.zeros((64, K.DRAWS), d) for d in (np.float32, np.float64, np.uint64, np.float32, np.float64)]
    tr = cuda.trace_launch(K.rng_draws, 2, 32, [states] + outs)
    labels = [op.label for t in tr.tables for op in t.ops]
    assert any(lab.startswith("SHF.L.W+LOP3") for lab in labels)             # the xoroshiro step (costs.rng_next)
    assert "I2F.F64.U64" in labels
    assert labels.count("LDG.E.64") >= 2 and labels.count("STG.E.64") >= 2    # the state: two words in, two out
    assert tr.instruction_counts()["per_pipe"]["int"] > 0
    assert engine_run(tr, "h100").cycles > 0


@pytest.mark.contract
def test_random_host_states_and_draws_match_numba(tmp_path):
    out = tmp_path / "nb.npz"
    _numba_sim("""
        import sys
        import numpy as np
        from numba.cuda import random as nr
        st = nr.create_xoroshiro128p_states(40, seed=2024, subsequence_start=3).copy_to_host()
        h = st.copy()
        u = [nr.xoroshiro128p_uniform_float32(h, i % 40) for i in range(100)]
        d = [nr.xoroshiro128p_uniform_float64(h, i % 40) for i in range(100)]
        x = [int(nr.xoroshiro128p_next(h, i % 40)) for i in range(100)]
        np.savez(sys.argv[1], st=st.view(np.uint64), u=np.array(u, np.float32), d=np.array(d), x=np.array(x, np.uint64))
    """, out)
    nb = np.load(out)
    st = grandom.create_xoroshiro128p_states(40, seed=2024, subsequence_start=3).copy_to_host()
    assert np.array_equal(st.view(np.uint64), nb["st"])
    h = st.copy()
    assert np.array_equal([grandom.xoroshiro128p_uniform_float32(h, i % 40) for i in range(100)], nb["u"])
    assert np.array_equal([grandom.xoroshiro128p_uniform_float64(h, i % 40) for i in range(100)], nb["d"])
    assert np.array_equal(np.array([grandom.xoroshiro128p_next(h, i % 40) for i in range(100)], np.uint64), nb["x"])


@pytest.mark.contract
def test_random_kernel_matches_numba_simulator(tmp_path):
    out = tmp_path / "nb.npz"
    _numba_sim("""
        import sys
        import numpy as np
        import numba_compat_kernels as K
        init, final, outs = K.rng_launch(n=40, block=16, seed=5)
        np.savez(sys.argv[1], init=init.view(np.uint64), final=final.view(np.uint64), *outs)
    """, out)
    nb = np.load(out)
    init, final, outs = K.rng_launch(n=40, block=16, seed=5)
    assert np.array_equal(init.view(np.uint64), nb["init"])
    assert np.array_equal(final.view(np.uint64), nb["final"])
    for k in range(3):                                   # uniform float32/float64 and next: bit-identical
        assert np.array_equal(outs[k], nb[f"arr_{k}"]), k
    # normals: numba's simulator takes math.log of a float32 in double precision (the GPU, and gpusim, in float32)
    np.testing.assert_allclose(outs[3], nb["arr_3"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[4], nb["arr_4"], rtol=1e-6, atol=1e-7)


def test_numba_random_and_cg_names_map_onto_gpusim(tmp_path):
    """A kernel written against numba's modules (``from numba import cuda``, numba.cuda.random) simulates."""
    pytest.importorskip("numba.cuda")
    pytest.importorskip("numba.cuda.random")
    src = tmp_path / "numba_names_kernel.py"
    ns = {}
    code = textwrap.dedent("""
        from numba import cuda
        from numba.cuda.random import xoroshiro128p_uniform_float32

        def k(states, out):
            i = cuda.grid(1)
            g = cuda.cg.this_grid()
            out[i] = xoroshiro128p_uniform_float32(states, i)
            g.sync()
    """)
    src.write_text(code)
    exec(compile(code, str(src), "exec"), ns)
    states = grandom.create_xoroshiro128p_states(64, seed=11)
    ref = states.copy_to_host()
    out = np.zeros(64, np.float32)
    tr = cuda.trace_launch(ns["k"], 2, 32, [states, out])
    assert np.array_equal(out, [grandom.xoroshiro128p_uniform_float32(ref, i) for i in range(64)])
    assert any(op.kind == OpKind.GRID_SYNC for t in tr.tables for op in t.ops)


# ---- cooperative groups: grid sync -------------------------------------------------------------------------------

def test_grid_sync_two_phase_reads_other_ctas_writes():
    n_blocks, block = 264, 256                      # 2 per SM (8 blocks of 256 threads would fit)
    n = n_blocks * block
    a = np.zeros(n, np.int64)
    out = np.zeros(n, np.int64)
    tr = cuda.trace_launch(K.grid_two_phase, n_blocks, block, [a, out])
    idx = (np.arange(n) + block) % n
    assert np.array_equal(out, 3 * idx + 1)        # every read sees another CTA's phase-1 write
    assert len(tr.tables) == 1 and tr.meta.get("cooperative")
    syncs = [op for t in tr.tables for op in t.ops if op.kind == OpKind.GRID_SYNC]
    assert len(syncs) == 1 and syncs[0].line > 0
    r = engine_run(tr, "h100")
    assert r.stall_cycles["barrier"] > 0
    # every warp leaves the barrier together: none exits before the last one has arrived at it
    starts = [w[4] for w in r.warps.values()]
    exits = [w[5] for w in r.warps.values()]
    assert min(exits) > max(starts)


def test_grid_sync_barrier_costs_time():
    n = 132 * 128
    a, out = np.zeros(n, np.int64), np.zeros(n, np.int64)
    with_sync = engine_run(cuda.trace_launch(K.grid_two_phase, 132, 128, [a, out]), "h100").cycles
    tr = cuda.trace_launch(_no_sync, 132, 128, [a, out])
    assert not any(op.kind == OpKind.GRID_SYNC for t in tr.tables for op in t.ops)
    without = engine_run(tr, "h100").cycles
    assert with_sync > without + 500


@cuda.jit
def _no_sync(a, out):
    i = cuda.grid(1)
    n = cuda.gridsize(1)
    a[i] = 3 * i + 1
    out[i] = a[(i + cuda.blockDim.x) % n]


def test_grid_sync_grid_too_large_is_refused():
    n = 300 * 1024
    a, out = np.zeros(n, np.int64), np.zeros(n, np.int64)
    with pytest.raises(CooperativeLaunchTooLarge) as e:
        K.grid_two_phase[300, 1024](a, out)        # 264 blocks of 1024 threads fit on an H100 at once
    msg = str(e.value)
    assert "grid_two_phase" in msg and "(300, 1, 1)" in msg and "cudaErrorCooperativeLaunchTooLarge" in msg
    assert "264" in msg and "max_cooperative_grid_blocks" in msg
    assert not a.any() and not out.any()            # a refused launch writes nothing


def test_max_cooperative_grid_blocks():
    @cuda.jit("void(int64[:], int64[:])")
    def k(a, out):
        g = cuda.cg.this_grid()
        g.sync()

    ov = k.overloads[(cuda.int64[:], cuda.int64[:])]
    assert ov.max_cooperative_grid_blocks(32) == 132 * 32         # CTA slots
    assert ov.max_cooperative_grid_blocks(1024) == 132 * 2        # warps
    assert ov.max_cooperative_grid_blocks((16, 16)) == 132 * 8


@pytest.mark.contract
def test_grid_sync_matches_numba_simulator(tmp_path):
    out = tmp_path / "nb.npz"
    _numba_sim("""
        import sys
        import numpy as np
        import numba_compat_kernels as K
        a = np.zeros(64, np.int64); out = np.zeros(64, np.int64)
        K.grid_two_phase[1, 64](a, out)      # numba's simulator runs cooperative grids of one block
        np.savez(sys.argv[1], a=a, out=out)
    """, out)
    nb = np.load(out)
    a, o = np.zeros(64, np.int64), np.zeros(64, np.int64)
    K.grid_two_phase[1, 64](a, o)
    assert np.array_equal(a, nb["a"]) and np.array_equal(o, nb["out"])


# ---- ufuncs, reduce, types ----------------------------------------------------------------------------------------

@cuda.jit
def _ufuncs(x, y, r_sin, r_add, r2, s):
    np.sin(x, r_sin)
    np.add(x, y, out=r_add)
    np.cos(r2, r2)
    i = cuda.grid(1)
    if i < s.size:
        s[i] = np.exp(x[i]) + np.maximum(x[i], y[i]) + np.multiply(x[i], 2.0)


def test_ufuncs_with_output_arrays_and_on_scalars():
    x = np.linspace(-3, 3, 17).astype(np.float32)
    y = np.linspace(1, 2, 17).astype(np.float32)
    r_sin, r_add, s = np.zeros_like(x), np.zeros_like(x), np.zeros(17)
    m = np.arange(12, dtype=np.float64).reshape(3, 4)
    m0 = m.copy()
    _ufuncs[1, 1](x, y, r_sin, r_add, m, s)
    np.testing.assert_allclose(r_sin, np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(r_add, x + y)
    np.testing.assert_allclose(m, np.cos(m0))
    assert s[0] == pytest.approx(np.exp(x[0]) + max(x[0], y[0]) + 2 * x[0], rel=1e-6) and not s[1:].any()


def test_reduce_simulates_numbas_reduction_kernel():
    seen = []
    trace_mod.launch_observers.append(seen.append)
    try:
        sum_reduce = cuda.reduce(lambda a, b: a + b)
        x = np.arange(128 * 64 * 3 + 77, dtype=np.float64)
        assert sum_reduce(x) == x.sum()
    finally:
        trace_mod.launch_observers.remove(seen.append)
    # numba's launches: full blocks (at most 64 of 128 threads), the partial block, the partials
    assert [(t.grid[0], t.block[0]) for t in seen] == [(64, 128), (1, 77), (1, 65)]
    assert all(t.name == "gpu_reduce_block_strided" for t in seen)

    @cuda.reduce
    def max_reduce(a, b):
        return max(a, b)

    v = np.random.default_rng(0).random(1000)
    assert max_reduce(v) == v.max()
    assert cuda.reduce(lambda a, b: a + b)(np.arange(10, dtype=np.int64), init=5) == 50
    assert sum_reduce(np.arange(300, dtype=np.int32), size=100) == np.arange(100).sum()
    res = cuda.device_array(1, np.float64)
    assert sum_reduce(cuda.to_device(np.ones(50)), res=res) is None and res.copy_to_host()[0] == 50
    assert sum_reduce(np.zeros(0), init=3.0) == 3.0


def test_numba_types_signatures_and_overloads():
    from gpusim.cuda import types as T
    assert cuda.float32 is T.float32 and str(T.float32[:]) == "array(float32, 1d, A)"
    assert str(T.int32[:, ::1]) == "array(int32, 2d, C)" and str(T.float64[::1, :]) == "array(float64, 2d, F)"
    assert T.float32(1.5) == np.float32(1.5) and str(T.void(T.float32[:])) == "none(array(float32, 1d, A))"
    assert T.parse_signature("void(float32[:], int32)").args == (T.float32[:], T.int32)

    @cuda.jit("void(float32[:], float32[:])")
    def scale(a, out):
        tmp = cuda.local.array(3, T.float32)
        buf = cuda.shared.array(32, dtype=cuda.float32)
        i = cuda.grid(1)
        tmp[0] = a[i]
        buf[cuda.threadIdx.x] = tmp[0] * cuda.float32(2)
        cuda.syncthreads()
        if i < out.size:
            out[i] = buf[cuda.threadIdx.x] + cuda.types.float32(0.5)

    assert list(scale.overloads) == [(T.float32[:], T.float32[:])]
    a = np.arange(64, dtype=np.float32)
    out = np.zeros_like(a)
    scale[2, 32](a, out)
    np.testing.assert_array_equal(out, 2 * a + 0.5)

    @cuda.jit
    def lazy(a):
        a[0, 0] = 1

    lazy[1, 1](np.zeros((2, 3), np.int32))
    assert list(lazy.overloads) == [(T.Array(T.int32, 2, "C"),)]


def test_unsupported_constructs_name_file_line_and_fix():
    @cuda.jit
    def bad_method(a):
        a.copy()       # numba-cuda refuses it (a new array: NRT); a.sum() it compiles, and gpusim runs

    with pytest.raises(UnsupportedConstruct) as e:
        bad_method[1, 1](np.zeros(4))
    assert "method .copy()" in str(e.value) and f"{__file__}:" in str(e.value)

    @cuda.jit
    def bad_record(states, out):
        out[0] = states[0]

    with pytest.raises(CompileError) as e:           # numba: no setitem(array(float64), int64, Record)
        bad_record[1, 1](grandom.create_xoroshiro128p_states(4, 1), np.zeros(4))
    assert "No implementation of function setitem(array(float64, 1d), int64, Record(s0[type=uint64" \
        in str(e.value) and f"{__file__}:" in str(e.value)

    @cuda.jit
    def bad_host_rng(out):
        s = cuda.random.create_xoroshiro128p_states(4, 1)
        out[0] = s

    with pytest.raises(UnsupportedConstruct) as e:
        bad_host_rng[1, 1](np.zeros(4))
    assert "create_xoroshiro128p_states" in str(e.value) and "on the host" in str(e.value)


# ---- numba-cuda's documentation examples, unchanged (sizes reduced where the example is large) -------------------
# The kernels are the ones in kernels/nb_*.py (no second copy of a kernel): each file is loaded as ``gpusim run``
# loads it, its ``numba.cuda`` being gpusim.cuda where no CUDA driver is present.

def _doc_kernel_path(stem: str) -> Path:
    return ROOT / "kernels" / f"{stem}.py"


def _doc_kernels(stem: str):
    """kernels/<stem>.py, imported afresh (its module globals, e.g. a device array, start from the file's values)."""
    from gpusim.cli import load_kernel_file
    mod = load_kernel_file(str(_doc_kernel_path(stem)))
    if mod.cuda is not cuda:
        pytest.skip(f"{stem}.py's numba.cuda is numba's own here (a CUDA driver is present), not gpusim.cuda")
    return mod


def test_doc_vecadd():
    f = _doc_kernels("nb_vecadd").f

    np.random.seed(1)
    N = 100000
    a = cuda.to_device(np.random.random(N))
    b = cuda.to_device(np.random.random(N))
    c = cuda.device_array_like(a)
    f.forall(len(a))(a, b, c)
    np.testing.assert_equal(c.copy_to_host(), a.copy_to_host() + b.copy_to_host())
    c = cuda.device_array_like(a)
    nthreads = 256
    nblocks = (len(a) // nthreads) + 1
    f[nblocks, nthreads](a, b, c)
    np.testing.assert_equal(c.copy_to_host(), a.copy_to_host() + b.copy_to_host())


def test_doc_matmul_naive_and_shared():
    matmul = _doc_kernels("nb_matmul").matmul

    x_h = np.arange(16).reshape([4, 4])
    y_h = np.ones([4, 4])
    z_d = cuda.to_device(np.zeros([4, 4]))
    threadsperblock = (16, 16)
    blockspergrid = (math.ceil(4 / 16), math.ceil(4 / 16))
    matmul[blockspergrid, threadsperblock](cuda.to_device(x_h), cuda.to_device(y_h), z_d)
    assert np.all(z_d.copy_to_host() == x_h @ y_h)

    shared = _doc_kernels("nb_matmul_shared")
    fast_matmul, TPB = shared.fast_matmul, shared.TPB
    assert TPB == 16

    for xs, ys in (((4, 4), (4, 4)), ((5, 23), (23, 7))):
        x_h = np.arange(int(np.prod(xs))).reshape(xs)
        y_h = np.ones(ys)
        z_h = np.zeros([xs[0], ys[1]])
        z_d = cuda.to_device(z_h)
        grid_y_max = max(x_h.shape[0], y_h.shape[0])
        grid_x_max = max(x_h.shape[1], y_h.shape[1])
        blockspergrid = (math.ceil(grid_x_max / TPB), math.ceil(grid_y_max / TPB))
        fast_matmul[blockspergrid, (TPB, TPB)](cuda.to_device(x_h), cuda.to_device(y_h), z_d)
        assert np.all(z_d.copy_to_host() == x_h @ y_h)


def test_doc_reduction():
    red = _doc_kernels("nb_reduction")
    array_sum = red.array_sum

    a = cuda.to_device(np.arange(1024))
    nelem = len(a)
    assert red.nelem == nelem
    array_sum[1, nelem](a)
    np.testing.assert_equal(a[0], sum(np.arange(1024)))


def test_doc_laplace_grid_sync():
    solve_heat_equation = _doc_kernels("nb_laplace").solve_heat_equation

    size = 1001
    data = np.zeros(size)
    data[500] = 10000
    buf_0 = cuda.to_device(data)
    buf_1 = cuda.device_array_like(buf_0)
    niter = 400                                      # the example's 10000 takes ~6 s here; the physics is the same

    solve_heat_equation.forall(len(data))(buf_0, buf_1, niter, 0.25)
    results = buf_1.copy_to_host()
    d, nd = data.copy(), np.zeros(size)
    for step in range(niter):
        src, dst = (d, nd) if step % 2 == 0 else (nd, d)
        dst[:] = src + 0.25 * (np.concatenate(([0.0], src[:-1])) - 2 * src + np.concatenate((src[1:], [0.0])))
    np.testing.assert_allclose(results, nd, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results.sum(), 10000)


def test_doc_montecarlo():
    mc = _doc_kernels("nb_montecarlo")
    mc_integrator_kernel, sum_reduce = mc.mc_integrator_kernel, mc.sum_reduce
    create_xoroshiro128p_states = mc.create_xoroshiro128p_states

    # number of samples, higher will lead to a more accurate answer
    nsamps = 1000000

    def mc_integrate(lower_lim, upper_lim, nsamps):
        out = cuda.to_device(np.zeros(nsamps, dtype="float32"))
        rng_states = create_xoroshiro128p_states(nsamps, seed=42)
        mc_integrator_kernel.forall(nsamps)(out, rng_states, lower_lim, upper_lim)
        factor = (upper_lim - lower_lim) / (nsamps - 1)
        return sum_reduce(out) * factor

    r1, r2 = mc_integrate(1, 2, nsamps), mc_integrate(2, 3, nsamps)
    # the values the example prints on a GPU (same seed, same streams, float32 sums)
    assert r1 == pytest.approx(0.6929643, rel=2e-7) and r2 == pytest.approx(0.4054021, rel=2e-7)
    np.testing.assert_allclose(r1, 0.69315, atol=0.001)
    np.testing.assert_allclose(r2, 0.4055, atol=0.001)


def test_doc_random_3d_grid():
    from gpusim.cuda.random import create_xoroshiro128p_states
    random_3d = _doc_kernels("nb_random").random_3d

    X, Y, Z = 70, 90, 72                              # the example's 701 x 900 x 719 is 1.8 GB of float32
    bx, by, bz = 8, 8, 8
    gx, gy, gz = 4, 4, 4
    nthreads = bx * by * bz * gx * gy * gz
    rng_states = create_xoroshiro128p_states(nthreads, seed=1)
    init = rng_states.copy_to_host()
    arr = cuda.device_array((X, Y, Z), dtype=np.float32)
    random_3d[(gx, gy, gz), (bx, by, bz)](arr, rng_states)
    host_arr = arr.copy_to_host()
    assert 0.49 < np.mean(host_arr) < 0.51 and host_arr.min() >= 0.0 and host_arr.max() <= 1.0
    # thread (0, 0, 0) wrote arr[0, 0, 0], then arr[0, 0, 32], arr[0, 0, 64] from generator 0
    h = init.copy()
    assert [host_arr[0, 0, k] for k in (0, 32, 64)] == [grandom.xoroshiro128p_uniform_float32(h, 0) for _ in range(3)]


def test_doc_sessionize():
    sess = _doc_kernels("nb_sessionize")
    sessionize = sess.sessionize
    assert sess.session_timeout == np.int64(np.timedelta64("3600", "s"))

    ids = cuda.to_device(np.array([1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4,
                                   4]))
    sec = cuda.to_device(np.array([1, 2, 3, 5000, 5001, 5002, 1, 2, 3, 1, 2, 5000, 5001, 10000, 10001, 10002, 10003,
                                   15000, 150001, 1, 5000, 50001, 15000, 20000, 25000, 25001, 25002, 25003],
                                  dtype="datetime64[ns]").astype("int64"))
    results = cuda.to_device(np.zeros(len(ids)))

    sessionize.forall(len(ids))(ids, sec, results)
    expect = [0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 11, 11, 13, 13, 13, 13, 17, 18, 19, 20, 21, 21, 23, 24, 24, 24, 24]
    np.testing.assert_equal(expect, results.copy_to_host())


def test_doc_ufunc():
    f = _doc_kernels("nb_ufunc").f

    x = np.arange(10, dtype=np.float32) - 5
    r = np.zeros_like(x)
    f[1, 1](r, x)
    np.testing.assert_allclose(r, np.sin(x))


def test_doc_cpu_gpu_compat():
    compat = _doc_kernels("nb_cpu_gpu_compat")
    business_logic, f = compat.business_logic, compat.f

    X = cuda.to_device([1, 10, 234])
    Y = cuda.to_device([2, 2, 4014])
    Z = cuda.to_device([3, 14, 2211])
    results = cuda.to_device([0.0, 0.0, 0.0])

    f.forall(len(X))(results, X, Y, Z)
    expect = [business_logic(x, y, z) for x, y, z in zip(X, Y, Z)]
    np.testing.assert_equal(expect, results.copy_to_host())


def test_doc_cg_grid_sync():
    cg = _doc_kernels("nb_grid_sync")
    sequential_rows, sig = cg.sequential_rows, cg.sig

    A = np.zeros((1024, 1024), dtype=np.int32)
    blockdim = 32
    griddim = A.shape[1] // blockdim
    mb = sequential_rows.overloads[sig].max_cooperative_grid_blocks(blockdim)
    assert mb >= griddim
    sequential_rows[griddim, blockdim](A)
    reference = np.tile(np.arange(1024), (1024, 1)).T
    np.testing.assert_equal(A, reference)


def test_doc_examples_record_traces_in_a_session():
    """The examples' kernels also lower to timed traces (a grid-sync kernel included)."""
    traces = []
    trace_mod.launch_observers.append(traces.append)
    try:
        test_doc_sessionize()
        test_doc_ufunc()
    finally:
        trace_mod.launch_observers.remove(traces.append)
    assert [t.name for t in traces] == ["sessionize", "f"]
    assert any(op.kind == OpKind.GRID_SYNC for t in traces[:1] for tb in t.tables for op in tb.ops)
    for t in traces:
        assert engine_run(t, "h100").cycles > 0


def test_doc_globals_device_array_captured_by_pointer():
    glob = _doc_kernels("nb_globals_device_array")
    PRICES, compute_totals = glob.PRICES, glob.compute_totals
    np.testing.assert_allclose(PRICES.copy_to_host(), [10.0, 25.0, 5.0, 15.0, 30.0])

    d_quantities = cuda.to_device(np.array([1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32))
    d_totals = cuda.device_array(5, dtype=np.float32)
    compute_totals[1, 32](d_quantities, d_totals)
    np.testing.assert_allclose(d_totals.copy_to_host(), [10.0, 25.0, 5.0, 15.0, 30.0])
    PRICES.copy_to_device(np.array([20.0, 50.0, 10.0, 30.0, 60.0], dtype=np.float32))
    compute_totals[1, 32](d_quantities, d_totals)      # the second call sees the updated values
    np.testing.assert_allclose(d_totals.copy_to_host(), [20.0, 50.0, 10.0, 30.0, 60.0])


def test_doc_cpointer():
    add_one = _doc_kernels("nb_cpointer").add_one

    x = cuda.to_device(np.arange(10, dtype=np.uint8))
    x_ptr = x.__cuda_array_interface__["data"][0]
    x_len = len(x)
    add_one[1, 32](x_ptr, x_len)
    np.testing.assert_array_equal(x.copy_to_host(), np.arange(1, 11))
    from gpusim.errors import LaunchError
    h = np.arange(10, dtype=np.uint8)
    with pytest.raises(LaunchError, match="__cuda_array_interface__"):
        add_one[1, 32](h.__array_interface__["data"][0], 10)      # a host pointer is not device memory


def _doc_kernels_without_numba(stem: str):
    """kernels/<stem>.py imported with numba made unimportable, so that it takes gpusim's front end (its
    ``except ImportError`` branch).  nb_ffi.py needs this: with numba-cuda installed, its ``import
    numba.cuda.tests.doc_examples`` (to find functions.cu) recurses in numba-cuda's import redirector while
    ``numba.cuda`` is gpusim.cuda, as under ``load_kernel_file``."""
    import importlib.util
    path = _doc_kernel_path(stem)
    name = f"gpusim_test_doc_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    hidden = [k for k in sys.modules if k == "numba" or k.startswith("numba.")]
    saved = {k: sys.modules[k] for k in hidden}
    sys.modules.update({k: None for k in hidden})
    sys.modules["numba"] = None
    try:
        spec.loader.exec_module(mod)
    finally:
        for k in hidden + ["numba"]:
            sys.modules.pop(k, None)
        sys.modules.update(saved)
    assert mod.cuda is cuda
    return mod


def test_foreign_functions_are_refused_with_the_fix():
    ffi = _doc_kernels_without_numba("nb_ffi")
    multiply_vectors = ffi.multiply_vectors

    with pytest.raises(UnsupportedConstruct) as e:
        multiply_vectors[1, 32](np.zeros(4, np.float32), np.ones(4, np.float32), np.ones(4, np.float32))
    msg = str(e.value)
    assert "mul_f32_f32" in msg and "functions.cu" in msg and "@cuda.jit(device=True)" in msg
    assert f"{_doc_kernel_path('nb_ffi')}:" in msg and "multiply_vectors" in msg


# ---- host API and kernel print, as public numba-cuda code uses them ------------------------------------------------

def test_torch_tensors_are_kernel_arguments_and_as_cuda_array_views_them():
    torch = pytest.importorskip("torch")

    @cuda.jit
    def twice(x):
        i = cuda.grid(1)
        if i < x.shape[0]:
            x[i] *= 2

    t = torch.ones(10)
    twice[1, 32](t)                                      # written in place, as through __cuda_array_interface__
    assert torch.equal(t, torch.full((10,), 2.0))
    v = cuda.as_cuda_array(t)
    assert cuda.is_cuda_array(t) and not cuda.is_cuda_array(np.ones(3)) and v.shape == (10,)
    twice[1, 32](v)
    assert torch.equal(t, torch.full((10,), 4.0))        # a view: no copy
    with pytest.raises(TypeError, match="not an array"):
        cuda.as_cuda_array(3.0)


def test_pinned_libdevice_and_f_order_copies():
    from numba.cuda import libdevice as _nb_libdevice  # noqa: F401  (the real module exists beside ours)
    from gpusim.cuda import libdevice

    @cuda.jit
    def k(x, y):
        i = cuda.grid(1)
        if i < x.shape[0]:
            y[i] = libdevice.sinf(x[i]) + libdevice.fmaxf(x[i], 0.5)

    x = np.linspace(0, 1, 8, dtype=np.float32)
    y = np.zeros_like(x)
    with cuda.pinned(x, y):
        k[1, 8](x, y)
    assert y.dtype == np.float32 and np.allclose(y, np.sin(x) + np.maximum(x, 0.5), rtol=1e-6)
    f = cuda.device_array((3, 4), dtype=np.float64, order="F")
    assert f.copy_to_host().strides == f.strides == (8, 24)


def test_print_in_a_kernel_prints_each_active_thread(tmp_path, capsys):
    from gpusim.cli import main
    src = tmp_path / "hello.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda

        @cuda.jit
        def hello(a):
            i = cuda.grid(1)
            if i % 16 == 3:
                print("thread", i, a[i], (i, a[i] > 1.0))

        hello[2, 32](np.arange(64.0))
    '''))
    assert main(["run", str(src), "--compiler", "builtin"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("thread ")]
    assert lines == [f"thread {i} {float(i):f} ({i}, {i > 1})" for i in (3, 19, 35, 51)]


def test_a_refused_launch_in_a_script_names_the_scripts_line(tmp_path, capsys):
    from gpusim.cli import main
    src = tmp_path / "bad_launch.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda

        @cuda.jit
        def k(a):
            a[0] = 1

        k[1, 32](object())
    '''))
    assert main(["run", str(src)]) != 0
    err = capsys.readouterr().err
    assert f"{src}:9: argument 'a' of kernel 'k': unsupported type object" in err or \
        "bad_launch.py:9: argument 'a' of kernel 'k': unsupported type object" in err


def test_an_import_the_stand_in_refuses_is_the_scripts_error_at_its_line(tmp_path, capsys):
    """numba-cuda's test files import ``numba.cuda.testing``; under gpusim that module does not exist (no driver):
    the refusal is the script's ImportError at its import line (exit 2), not an internal error of gpusim (3)."""
    from gpusim.cli import main
    src = tmp_path / "imports_testing.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda
        from numba.cuda.testing import CUDATestCase
    '''))
    assert main(["run", str(src)]) == 2
    err = capsys.readouterr().err
    assert "imports_testing.py:4: at import: ImportError: numba.cuda.testing: not available" in err, err
    assert "internal error" not in err and "Traceback" not in err


@cuda.jit
def _plus_one(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i] + 1


def test_specialize_gives_a_kernel_of_one_signature():
    """numba's ``kernel.specialize(*args)`` (numba-cuda's test_constmem uses it): a kernel compiled for the
    arguments' types alone; the original stays unspecialized."""
    a, b = np.arange(10.0), np.zeros(10)
    s = _plus_one.specialize(a, b)
    assert s.specialized and not _plus_one.specialized
    assert len(s.overloads) == 1 and [str(t) for t in next(iter(s.overloads))] == ["array(float64, 1d, C)"] * 2
    s[1, 32](a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_a_kernel_a_script_builds_with_exec_from_a_template_runs(tmp_path, capsys):
    """numba-cuda's tests build kernels from source templates with ``exec``: under ``gpusim run`` the template's text
    stays where ``inspect`` finds it, so the kernel compiles from its source as any other."""
    from gpusim.cli import main
    src = tmp_path / "exec_kernels.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda

        TEMPLATE = """
        def scale(out, a):
            i = cuda.grid(1)
            if i < a.size:
                out[i] = a[i] * {factor}
        """

        def make(factor):
            ns = {}
            exec(TEMPLATE.format(factor=factor), {"cuda": cuda}, ns)
            return cuda.jit(ns["scale"])

        a = np.arange(100.0)
        out = np.zeros_like(a)
        make(3)[1, 128](out, a)
        print("max err", float(np.abs(out - 3 * a).max()))
    '''))
    assert main(["run", str(src), "--compiler", "builtin"]) == 0
    assert "max err 0.0" in capsys.readouterr().out


# ---- record (structured dtype) arrays -------------------------------------------------------------------------------

_REC = np.dtype([("x", np.float64), ("n", np.int32), ("h", np.float32, (2,)), ("c", np.complex64)], align=True)


def test_record_arrays_fields_read_written_and_copied():
    @cuda.jit
    def k(a, out):
        i = cuda.grid(1)
        if i < a.size:
            r = a[i]
            out[i] = a[i].x + a[i]["n"] + r.h[1]
            r.x = r.x * 2
            a[i]["n"] += 1
            r.h[0] = i
            if i % 2 == 0:
                a[i].c = 1j * i

    @cuda.jit
    def copy(a, i, j):
        a[i] = a[j]

    a = np.zeros(8, _REC)
    a["x"] = np.arange(8) / 4
    a["n"] = np.arange(8) * 3
    a["h"][:, 1] = np.arange(8) + 0.5
    ref = a.copy()
    out = np.zeros(8)
    k[1, 8](a, out)
    np.testing.assert_array_equal(out, ref["x"] + ref["n"] + ref["h"][:, 1])
    ref["x"] *= 2
    ref["n"] += 1
    ref["h"][:, 0] = np.arange(8)
    ref["c"][::2] = 1j * np.arange(0, 8, 2)
    np.testing.assert_array_equal(a, ref)
    copy[1, 1](a, 2, 5)
    ref[2] = ref[5]
    np.testing.assert_array_equal(a, ref)


def test_record_argument_is_written_back_and_typed_as_numba():
    @cuda.jit
    def k(r, out):
        out[0] = r.x + r["h"][1]
        r.n = 7
        r["h"] = 2.5               # every element of the nested array

    a = np.zeros(3, _REC)
    a[1]["x"], a[1]["h"][1] = 1.5, 0.25
    out = np.zeros(1)
    k[1, 1](a[1], out)
    assert out[0] == 1.75 and a[1]["n"] == 7 and list(a[1]["h"]) == [2.5, 2.5] and a[0]["n"] == 0
    t = cuda.types.from_dtype(np.dtype([("d", np.uint8, (5,))]))
    assert str(t) == "Record(d[type=nestedarray(uint8, (5,));offset=0];5;False)"


def test_record_field_errors_name_file_and_line():
    @cuda.jit
    def k(a):
        a[0].zz = 1

    with pytest.raises(CompileError) as e:
        k[1, 1](np.zeros(2, _REC))
    assert "Unknown attribute 'zz'" in str(e.value) and f"{__file__}:" in str(e.value)


def test_array_view_dtype_reinterprets_bytes():
    @cuda.jit
    def k(b, start, stop, out, f, g):
        i = cuda.grid(1)
        out[i] = b[start + 4 * i:stop + 4 * i].view(np.int32)[0]     # a per-thread slice, then viewed
        w = b.view(np.uint32)
        g[i] = f[i].view(np.int32) + w[i] - w[i]
        sm = cuda.shared.array(32, np.uint8)
        sm[i] = i
        cuda.syncthreads()
        if i == 0:
            out[8] = sm.view(np.int32)[1]

    b = np.arange(64, dtype=np.uint8)
    out = np.zeros(9, np.int64)
    f = np.linspace(-3, 3, 8).astype(np.float32)
    g = np.zeros(8, np.int32)
    k[1, 8](b, 4, 8, out, f, g)
    assert list(out[:8]) == [int(b[4 + 4 * i:8 + 4 * i].view(np.int32)[0]) for i in range(8)]
    assert out[8] == np.arange(8, dtype=np.uint8).view(np.int32)[1]
    np.testing.assert_array_equal(g, f.view(np.int32))

    @cuda.jit
    def bad(b, out):
        out[0] = b[1:4].view(np.int32)[0]

    with pytest.raises(CompileError) as e:
        bad[1, 1](b, out)
    assert "new type not compatible with array" in str(e.value) and f"{__file__}:" in str(e.value)


def test_complex_array_parts_are_views_and_atomics_reach_them():
    @cuda.jit
    def k(z):
        i = cuda.grid(1)
        cuda.atomic.add(z.real, i % 4, 1)
        cuda.atomic.add(z.imag, i % 4, 2)

    z = np.zeros(4, np.complex128)
    k[1, 32](z)
    np.testing.assert_array_equal(z, np.full(4, 8 + 16j))


def test_nextafter_log_base_and_signed_zero_complex():
    @cuda.jit
    def k(x, y, r, z, w, c):
        i = cuda.grid(1)
        r[i] = math.nextafter(x[i], y[i])
        w[i] = cmath.log(z[i], 2.0)
        c[i] = complex(*cmath.polar(z[i]))

    x = np.linspace(-2, 2, 8).astype(np.float32)
    y = np.full(8, 5, np.float32)
    r = np.zeros(8, np.float32)
    z = np.array([1 + 1j, -1 - 1j, 2j, np.inf - 1j, 3, -0.5j, 1e-3, 7 - 7j])
    w = np.zeros(8, np.complex128)
    c = np.zeros(8, np.complex128)
    k[1, 8](x, y, r, z, w, c)
    np.testing.assert_array_equal(r, np.nextafter(x, y))
    np.testing.assert_allclose(w, [cmath.log(v, 2.0) for v in z], rtol=1e-14)
    for got, v in zip(c, z):
        ref = complex(*cmath.polar(v))
        assert got == ref and math.copysign(1, got.imag) == math.copysign(1, ref.imag), (v, got, ref)


def test_deprecated_jit_keywords_are_refused_as_numba_refuses_them():
    with pytest.raises(Exception) as e:
        cuda.jit(argtypes=[cuda.types.float32[:]])(lambda a: None)
    assert type(e.value).__name__ == "DeprecationError"
    assert str(e.value) == ("Deprecated keyword argument `argtypes`. Signatures should be passed as the first "
                            "positional argument.")
    with pytest.raises(NotImplementedError, match="bounds checking is not supported for CUDA"):
        cuda.jit(boundscheck=True)


def test_shape_tuple_of_local_constants_and_device_array_methods():
    @cuda.jit
    def k(a, out):
        TPB = 4
        s = cuda.shared.array(shape=(TPB, TPB), dtype=np.float32)
        x, y = cuda.grid(2)
        s[x, y] = a[x, y]
        cuda.syncthreads()
        out[x, y] = s[y, x]

    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    d = cuda.to_device(a)
    out = cuda.device_array((4, 4), np.float32)
    k[1, (4, 4)](d, out)
    np.testing.assert_array_equal(out.copy_to_host(), a.T)
    np.testing.assert_array_equal(out.transpose().copy_to_host(), a)
    assert out.view(np.int32).copy_to_host().dtype == np.int32
    parts = cuda.to_device(np.arange(10)).split(4)
    assert [len(p) for p in parts] == [4, 4, 2] and parts[1].getitem(0) == 4


def test_cudadrv_devicearray_imports_under_the_stand_in(tmp_path):
    from gpusim.cuda.stand_in import numba_cuda_is_gpusim
    pytest.importorskip("numba")
    src = tmp_path / "uses_cudadrv.py"
    src.write_text("from numba.cuda.cudadrv.devicearray import DeviceNDArray\nfrom numba import cuda\n"
                   "import numpy as np\nd = cuda.to_device(np.zeros(3))\nOK = isinstance(d, DeviceNDArray)\n")
    import runpy
    with numba_cuda_is_gpusim():
        g = runpy.run_path(str(src))
    assert g["OK"]


def test_shared_array_of_an_arguments_dtype_and_const_array_like_of_an_argument():
    @cuda.jit
    def k(x, w, out):
        s = cuda.shared.array(32, dtype=x.dtype)     # compiled per argument dtype, as numba-cuda compiles it
        c = cuda.const.array_like(w)                 # an argument: numba-cuda returns it unchanged
        i = cuda.threadIdx.x
        s[i] = x[i]
        cuda.syncthreads()
        out[i] = s[31 - i] * c[i % 4]

    w = np.array([1.0, 2.0, 3.0, 4.0])
    for dt, base in ((np.float32, 0.25), (np.int64, 2 ** 40 + 1)):    # neither survives the other's type
        x = (np.arange(32) + base).astype(dt)
        out = np.zeros(32)
        k[1, 32](x, w, out)
        np.testing.assert_array_equal(out, x[::-1].astype(np.float64) * w[np.arange(32) % 4])


def test_for_loop_over_a_list_display():
    @cuda.jit
    def k(a, out):
        i = cuda.grid(1)
        s = 0.0
        for j in [1, 2, 4, 8]:          # numba-cuda iterates the display (no list is built)
            s += a[(i + j) % 32] * j
        for v in [a[i], 2.0 * a[i]]:
            s += v
        out[i] = s

    a = np.arange(32, dtype=np.float64)
    out = np.zeros(32)
    k[1, 32](a, out)
    i = np.arange(32)
    ref = sum(a[(i + j) % 32] * j for j in (1, 2, 4, 8)) + 3 * a
    np.testing.assert_array_equal(out, ref)


@pytest.fixture
def real_numba_compiler(monkeypatch):
    """numba-cuda + ptxas in the loop (GPUSIM_COMPILER=real); the test is skipped where they are not installed."""
    from gpusim.compilers import _numba
    from gpusim.errors import CompilerUnavailable
    try:
        _numba.available()
    except CompilerUnavailable as e:
        pytest.skip(str(e))
    monkeypatch.setenv("GPUSIM_COMPILER", "real")



@pytest.mark.contract
def test_real_compiler_sees_numbas_random_module_through_cuda_random(tmp_path, capsys, real_numba_compiler):
    """``cuda.random.xoroshiro128p_*`` in a script run as it is: the script imported ``numba.cuda.random`` (gpusim's),
    and the real compiler is handed numba's ``numba.cuda`` with its ``random`` submodule (its registers, not the
    estimate)."""
    from gpusim.cli import main
    src = tmp_path / "rng_attr.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda
        from numba.cuda.random import create_xoroshiro128p_states

        @cuda.jit
        def draw(states, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = cuda.random.xoroshiro128p_uniform_float32(states, i)

        st = create_xoroshiro128p_states(64, seed=1)
        out = cuda.device_array(64, dtype=np.float32)
        draw[2, 32](st, out)
        v = out.copy_to_host()
        assert ((v >= 0) & (v < 1)).all() and len(set(v.tolist())) == 64
    '''))
    assert main(["run", str(src)]) == 0
    out = capsys.readouterr().out
    assert "compiler: numba-cuda" in out and "has no attribute 'random'" not in out


@pytest.mark.contract
def test_a_kernel_calling_a_kernel_runs_and_the_real_compiler_compiles_it(tmp_path, capsys, real_numba_compiler):
    """numba-cuda compiles a ``@cuda.jit`` kernel called from another kernel as a device function (a returned value
    too); the real compiler is handed numba's dispatcher for the callee."""
    from gpusim.cli import main
    src = tmp_path / "kcallk.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda

        @cuda.jit
        def cswap(data, i, j, direction):
            if direction == (data[i] > data[j]):
                data[i], data[j] = data[j], data[i]

        @cuda.jit
        def plus_one(a, i):
            return a[i] + 1

        @cuda.jit
        def step(data, j, k, direction, out):
            i = cuda.grid(1)
            ixj = i ^ j
            if ixj > i:
                if (i & k) == 0:
                    cswap(data, i, ixj, direction)
                if (i & k) != 0:
                    cswap(data, ixj, i, direction)
            out[i] = plus_one(out, i)

        h = np.random.default_rng(3).random(64)
        d = cuda.to_device(h)
        out = cuda.to_device(np.arange(64.0))
        k = 2
        while k <= 64:
            j = k >> 1
            while j > 0:
                step[2, 32](d, j, k, True, out)
                j >>= 1
            k <<= 1
        assert np.array_equal(d.copy_to_host(), np.sort(h))
        assert np.array_equal(out.copy_to_host(), np.arange(64.0) + 21)
    '''))
    assert main(["run", str(src)]) == 0
    out = capsys.readouterr().out
    assert "compiler: numba-cuda" in out and "rejects" not in out


def test_dim3_values_print_and_pass_as_numba_cuda(tmp_path, capsys):
    """``cuda.blockDim`` (threadIdx, blockIdx, gridDim) as a value: numba's Dim3, its .x/.y/.z, passed to a device
    function, printed as ``(x, y, z)``."""
    from gpusim.cli import main
    src = tmp_path / "dim3v.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda

        @cuda.jit(device=True)
        def width(d):
            return d.x * d.y

        @cuda.jit
        def k(a):
            d = cuda.blockDim
            t = cuda.threadIdx
            if t.x == 1 and t.y == 0:
                print(cuda.gridDim, d, cuda.blockIdx, t)
            a[cuda.blockIdx.x, t.y * d.x + t.x] = width(d) * 100 + t.x * 10 + t.y

        a = np.zeros((2, 8), np.int64)
        k[(2, 1), (4, 2)](a)
        assert (a == [800, 810, 820, 830, 801, 811, 821, 831]).all(), a
    '''))
    assert main(["run", str(src), "--compiler", "builtin"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("(2, 1, 1)")]
    assert lines == ["(2, 1, 1) (4, 2, 1) (0, 0, 0) (1, 0, 0)", "(2, 1, 1) (4, 2, 1) (1, 0, 0) (1, 0, 0)"]


@pytest.mark.contract
def test_real_compiler_reads_a_debug_kernel_with_device_functions(tmp_path, capsys, real_numba_compiler):
    """``@cuda.jit(debug=True)`` with a device function: numba-cuda's compile_ptx has one PTX module per function
    ("multiple PTX files"); the registers are read off the build without debug info, not the estimate."""
    from gpusim.cli import main
    src = tmp_path / "dbgdev.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda

        @cuda.jit(device=True)
        def f(x):
            return x + 1

        @cuda.jit(debug=True, opt=False)
        def k(a):
            i = cuda.grid(1)
            a[i] = f(a[i])

        a = np.arange(32.0)
        k[1, 32](a)
        assert (a == np.arange(32.0) + 1).all()
    '''))
    assert main(["run", str(src)]) == 0
    out = capsys.readouterr().out
    assert "compiler: numba-cuda" in out and "multiple PTX" not in out


@pytest.mark.contract
def test_njit_helpers_called_from_a_kernel_reach_the_real_compiler(tmp_path, capsys, real_numba_compiler):
    """``@numba.njit`` functions a kernel calls (numba-cuda compiles them for the GPU), one naming ``cuda.popc`` and
    one made by a factory over another njit function: gpusim runs them, and the real compiler is handed them rebuilt
    over numba-cuda's names (not gpusim.cuda's)."""
    from gpusim.cli import main
    src = tmp_path / "njit_in_kernel.py"
    src.write_text(textwrap.dedent('''
        import numba
        import numba.cuda as cuda
        import numpy as np

        @numba.njit
        def gpu_popc(x):
            return cuda.popc(x)

        def make(popc):
            def common(x):
                return popc(x) * 10
            return common

        common_cuda = numba.njit(make(gpu_popc))

        @cuda.jit
        def k(a, out):
            i = cuda.grid(1)
            if i < len(a):
                out[i] = common_cuda(a[i]) + gpu_popc(a[i])

        a = np.arange(40)
        out = np.zeros(40, np.int64)
        k[1, 64](a, out)
        assert list(out) == [11 * bin(int(x)).count("1") for x in a], out
    '''))
    assert main(["run", str(src)]) == 0
    out = capsys.readouterr().out
    assert "compiler: numba-cuda" in out and "rejects" not in out


# ---- probe round 5: operator functions, module globals, namedtuple globals, tuple-valued conditionals ---------

import operator as _operator          # noqa: E402
from collections import namedtuple as _namedtuple      # noqa: E402

_CFG = _namedtuple("_CFG", ["lo", "hi"])(np.float32(0.25), np.float32(4.0))


@cuda.jit(device=True)
def _warp_fold(func, val, width):
    def ilog2(v):
        return 31 - cuda.clz(np.int32(v))
    for i in range(ilog2(width)):
        val = func(val, cuda.shfl_xor_sync(0xffffffff, val, 1 << i))
    return val


@cuda.jit
def _fold_kernel(a, out):
    i = cuda.threadIdx.x
    lo, hi = (_CFG.lo, _CFG.hi) if i % 2 == 0 else (np.float32(-1), np.float32(1))
    out[i, 0] = _warp_fold(_operator.add, a[i], 32)
    out[i, 1] = _warp_fold(max, a[i], 8)
    out[i, 2] = _warp_fold(_operator.mul, a[i] * 0 + 2, 4)
    out[i, 3] = lo + hi + np.float32(_operator.neg(_CFG[1]))
    out[i, 4] = _operator.lt(a[i], 5.0)


def test_operator_functions_passed_to_a_device_function_and_namedtuple_globals():
    a = np.arange(32, dtype=np.float32)
    out = np.zeros((32, 5), np.float32)
    _fold_kernel[1, 32](a, out)
    lane = np.arange(32)
    assert np.all(out[:, 0] == a.sum())
    assert np.array_equal(out[:, 1], (lane // 8) * 8 + 7)              # xor-butterfly max over groups of 8 lanes
    assert np.all(out[:, 2] == 16.0)                                    # 2 ** 4 over groups of 4
    assert np.array_equal(out[:, 3], np.where(lane % 2 == 0, 0.25 + 4.0 - 4.0, 0.0 - 4.0))
    assert np.array_equal(out[:, 4], (a < 5).astype(np.float32))


def test_a_global_module_attribute_and_a_record_global_and_gpus_as_context(tmp_path, capsys):
    from gpusim.cli import main
    (tmp_path / "helpers_p5.py").write_text(textwrap.dedent('''
        from numba import cuda
        @cuda.jit(device=True)
        def twice(x):
            return 2 * x
    '''))
    src = tmp_path / "mod_p5.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda
        import helpers_p5 as hp

        @cuda.jit
        def k(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] = hp.twice(a[i])

        a = np.arange(8.0)
        with cuda.gpus[0]:
            k[1, 8](a)
        assert list(a) == [2.0 * x for x in range(8)], a

        rec = np.rec.array([(1.5, 2.0)], dtype=[('lo', 'f4'), ('hi', 'f4')])[0]

        @cuda.jit
        def r(a):
            a[0] = rec.lo
        r[1, 1](a)
    '''))
    assert main(["run", str(src)]) == 2
    err = capsys.readouterr().err
    assert "mod_p5.py:21, in kernel 'r': 'record' object has no attribute 'tostring' (the global record 'rec'" in err


@pytest.mark.contract
def test_the_real_compiler_sees_numba_cuda_random_through_the_numba_package(tmp_path, capsys, real_numba_compiler):
    from gpusim.cli import main
    src = tmp_path / "nbrand_p5.py"
    src.write_text(textwrap.dedent('''
        import numpy as np
        import numba as nb
        import numba.cuda
        import numba.cuda.random

        @nb.cuda.jit
        def k(rng, out):
            i = nb.cuda.grid(1)
            out[i] = nb.cuda.random.xoroshiro128p_uniform_float32(rng, i)

        rng = nb.cuda.random.create_xoroshiro128p_states(32, seed=1)
        out = np.zeros(32, np.float32)
        k[1, 32](rng, out)
        assert 0 <= out.min() and out.max() < 1 and len(set(out.tolist())) == 32
    '''))
    assert main(["run", str(src)]) == 0
    out = capsys.readouterr().out
    assert "compiler: numba-cuda" in out and "rejects" not in out


@cuda.jit(device=True)
def _clz64_p5(v):
    if v == 0:
        return 64
    n = 0
    if (v & 0xFFFFFFFF00000000) == 0: n += 32; v <<= 32      # noqa: E701,E702
    if (v & 0xFFFF000000000000) == 0: n += 16; v <<= 16      # noqa: E701,E702
    if (v & 0xFF00000000000000) == 0: n += 8; v <<= 8        # noqa: E701,E702
    if (v & 0xF000000000000000) == 0: n += 4; v <<= 4        # noqa: E701,E702
    if (v & 0xC000000000000000) == 0: n += 2; v <<= 2        # noqa: E701,E702
    if (v & 0x8000000000000000) == 0: n += 1                 # noqa: E701
    return n


@cuda.jit
def _u64_literals(a, clz, wrap, lit):
    i = cuda.grid(1)
    if i < a.size:
        clz[i] = _clz64_p5(a[i])
        wrap[i] = a[i] + 0x8000000000000000           # int64 with a uint64 literal: int64, as numba types it
        lit[i] = 0xF000000000000000


def test_integer_literals_past_int64_are_uint64_as_numba_types_them():
    a = np.array([1, 3 << 40, -(2 ** 60) + 12345, 0, 2 ** 62], np.int64)
    clz, wrap, lit = np.zeros(5, np.int64), np.zeros(5, np.int64), np.zeros(5, np.uint64)
    _u64_literals[1, 8](a, clz, wrap, lit)
    assert list(clz) == [63, 22, 0, 64, 1]
    assert list(wrap) == [(int(x) + 2 ** 63 + 2 ** 63) % 2 ** 64 - 2 ** 63 for x in a]
    assert np.all(lit == np.uint64(0xF000000000000000))


@cuda.jit(device=True)
def _p5_move_length(l_point, p_point):
    for d in range(3):
        if l_point[d] != 0:
            return l_point[d] * 2.0
    for d in range(3):
        if p_point[d] != 0:
            return (l_point[d] - p_point) / 2.0       # an array: cannot unify with the float above
    print("none")


@cuda.jit(device=True)
def _p5_solve(pos, i):
    tmp = cuda.local.array(3, np.float64)
    for d in range(3):
        tmp[d] = pos[i, d]
    return _p5_move_length(tmp, pos[i])


@cuda.jit
def _p5_never_solves(pos, out):
    i = cuda.grid(1)
    if i < 0:                                          # never taken: numba types the call all the same
        out[i] = _p5_solve(pos, i)


@cuda.jit(device=True)
def _p5_fine(a, k):
    if k > 3:
        return a[0] * 2
    return None


@cuda.jit
def _p5_never_fine(a, out):
    i = cuda.grid(1)
    if i < 0:
        r = _p5_fine(a, i)
        if r is not None:
            out[i] = r
    elif i < out.size:
        out[i] = 1.0


def test_a_device_function_called_only_on_an_untaken_path_is_typed_as_numba_types_it():
    pos = np.ones((4, 3))
    with pytest.raises(CompileError, match=r"Can't unify return type from the following types: "):
        _p5_never_solves[1, 4](pos, np.zeros(4))
    with pytest.raises(CompileError, match=r"Can't unify return type") as again:
        _p5_never_solves[1, 4](pos, np.zeros(4))          # refused at every launch (a refusal is not remembered)
    first = _p5_move_length.py_func.__code__.co_firstlineno
    assert first < again.value.line <= first + 7          # a line of the device function's returns
    out = np.zeros(4)
    _p5_never_fine[1, 4](np.arange(4.0), out)                 # an optional float unifies: runs
    assert list(out) == [1.0] * 4


@cuda.jit
def _p5_read_before_assign(a, n):
    for i in range(n):
        x = x + 1.0 if i > 0 else 0.0       # noqa: F821 - read before its assignment, as the source wrote it
        a[i] = x


def test_a_variable_read_before_its_first_assignment_is_refused_as_numba_refuses_it():
    with pytest.raises(CompileError, match=r"The compiler failed to analyze the bytecode\. Variable 'x' is not "
                                           r"defined\.") as e:
        _p5_read_before_assign[1, 1](np.zeros(4), 4)
    assert e.value.line == _p5_read_before_assign.py_func.__code__.co_firstlineno + 3     # the x = ... line


# ---- probe round 6: numba-cuda's own test suite (tests/cudapy) ---------------------------------------------------

@cuda.jit("int32(int32, int32)", device=True)
def _p6_pack(hi, lo):
    return ((hi & 0xFF) << 8) | (lo & 0xFF)        # bitwise: only if the float arguments became int32


@cuda.jit("float32(float32)", device=True)
def _p6_half(x):
    return x / 3


@cuda.jit
def _p6_declared_calls(f, packed, thirds):
    i = cuda.grid(1)
    if i < f.size:
        packed[i] = _p6_pack(f[i], f[i] + 1.5)     # float64 arguments converted to int32 (truncated)
        thirds[i] = _p6_half(x=i)                  # an int64 keyword argument to float32; the result float32


def test_a_device_function_declared_with_a_signature_converts_its_arguments_and_result():
    f = np.array([1.7, 2.2, 300.9, 7.0])
    packed, thirds = np.zeros(4, np.int64), np.zeros(4)
    _p6_declared_calls[1, 4](f, packed, thirds)
    hi, lo = f.astype(np.int32), (f + 1.5).astype(np.int32)
    assert list(packed) == list(((hi & 0xFF) << 8) | (lo & 0xFF))
    assert np.array_equal(thirds, (np.arange(4, dtype=np.float32) / np.float32(3)).astype(np.float64))


def test_a_device_function_launched_as_a_kernel_is_refused_as_numba_refuses_it():
    with pytest.raises(RuntimeError, match="Cannot compile a device function as a kernel"):
        _p6_half[1, 1](np.float32(1))


@cuda.jit
def _p6_grid_sum(a, out):
    g = cuda.cg.this_grid()
    i = cuda.grid(1)
    if i < a.size:
        cuda.atomic.add(out, 0, a[i])
    g.sync()
    if i < a.size:
        a[i] = out[0]


@cuda.jit
def _p6_no_grid(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


def test_an_overload_says_whether_it_is_cooperative():
    a, out = np.arange(8.0), np.zeros(1)
    _p6_grid_sum[2, 4](a, out)
    assert np.all(a == 28.0)
    _p6_no_grid[1, 8](a)
    assert [o.cooperative for o in _p6_grid_sum.overloads.values()] == [True]
    assert [o.cooperative for o in _p6_no_grid.overloads.values()] == [False]


@cuda.jit(device=True)
def _p6_scaled(v, s):
    return cuda.float32x3(v.x * s, v.y * s, v.z * s)


@cuda.jit
def _p6_vectors(a, out, iout):
    i = cuda.grid(1)
    if i < a.shape[0]:
        xy = cuda.float2(a[i, 0], a[i, 1])                   # an alias of float32x2
        v = cuda.float32x3(xy, a[i, 2])                      # a vector and a scalar make a float32x3
        if i % 2 == 0:
            v = _p6_scaled(v, 2.0)                           # returned from a device function, on some lanes
        out[i, 0], out[i, 1], out[i, 2] = v.x, v.y, v.z
        w = cuda.int32x4(i, i + 1, cuda.int2(2, 3.7))        # 3.7 converted to int32
        s = 0
        for u in tuple((w, cuda.int4(1, 1, 1, 1))):         # a tuple of vectors iterated
            s += u.x + u.y + u.z + u.w
        iout[i] = s


@cuda.jit
def _p6_vector_indexed(out):
    v = cuda.float32x2(1.0, 2.0)
    out[0] = v[0]


def test_cuda_vector_types_as_numba_cuda_has_them():
    a = np.random.default_rng(6).random((8, 3)).astype(np.float32)
    out, iout = np.zeros_like(a), np.zeros(8, np.int64)
    _p6_vectors[1, 8](a, out, iout)
    exp = a.copy()
    exp[::2] *= 2
    assert np.array_equal(out, exp)
    assert list(iout) == [2 * i + 1 + 5 + 4 for i in range(8)]
    assert repr(cuda.float4) == "<gpusim.cuda vector type float32x4>" and cuda.double2 is cuda.float64x2
    with pytest.raises(CompileError, match=r"getitem\(float32x2"):
        _p6_vector_indexed[1, 1](np.zeros(1))


_P6Point = __import__("collections").namedtuple("_P6Point", ("x", "y"))


@cuda.jit
def _p6_point_args(r, p, q):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = p.x * i + p.y + q.y          # fields by name; q's of mixed types


def test_a_namedtuple_argument_has_its_fields_by_name_and_the_like_host_arrays():
    r = np.zeros(4)
    _p6_point_args[1, 4](r, _P6Point(2, 3), _P6Point(1, 0.5))
    assert list(r) == [2 * i + 3.5 for i in range(4)]
    key, = _p6_point_args.overloads
    assert str(key[1]) == "_P6Point(int64, int64)"
    x = np.asfortranarray(np.ones((3, 2), np.int16))
    for a in (cuda.mapped_array_like(x), cuda.pinned_array_like(x)):
        assert a.shape == (3, 2) and a.dtype == np.int16 and a.flags.f_contiguous and not a.any()


@cuda.jit
def _p6_nested_iterators(x, y, out):
    s = 0.0
    for i, (xv, yv) in enumerate(zip(x, y)):
        s += i * xv + yv
    for (j, xv), yv in zip(enumerate(x), range(10, 20)):
        s += j * yv - xv
    out[0] = s


def test_enumerate_of_zip_and_zip_of_enumerate_iterate_in_lockstep():
    x, y, out = np.array([3.0, 1.0, 4.0, 1.0, 5.0]), np.array([2.0, 7.0, 1.0]), np.zeros(1)
    _p6_nested_iterators[1, 1](x, y, out)
    exp = sum(i * a + b for i, (a, b) in enumerate(zip(x, y))) + \
        sum(j * b - a for (j, a), b in zip(enumerate(x), range(10, 20)))
    assert out[0] == exp


def test_compile_ptx_imports_and_is_refused_when_called():
    from gpusim.cuda import compile_ptx
    from gpusim.errors import GpusimError
    with pytest.raises(GpusimError, match="generates no PTX"):
        compile_ptx(_p6_no_grid.py_func, "void(float64[:])")


def test_stream_callbacks_and_awaitable_streams():
    import asyncio
    s, seen = cuda.stream(), []
    a = cuda.to_device(np.zeros(8), stream=s)
    _p6_no_grid[1, 8, s](a)
    s.add_callback(lambda stream, status, data: seen.append((stream is s, status, data)), "hi")
    assert seen == [(True, 0, "hi")]

    async def work():
        return await cuda.stream().async_done(), await s.async_done()
    assert asyncio.run(work())[1] is s
    assert np.all(a.copy_to_host() == 1.0)
    for st in (cuda.legacy_default_stream(), cuda.per_thread_default_stream(), cuda.external_stream(0)):
        st.synchronize()
    assert int(cuda.external_stream(0x1234).handle) == 0x1234 and cuda.stream().handle.value == 0


@cuda.jit
def _p6_reshape(a, n, out, out3):
    y = a.reshape((n, 6))                  # a runtime shape
    z = a.reshape(2, -1, 3)                # dimensions as arguments; -1 inferred
    i = cuda.grid(1)
    if i < n:
        for j in range(6):
            out[i, j] = y[i, j] * 2
    if i == 0:
        for p in range(2):
            for q in range(z.shape[1]):
                for r in range(3):
                    out3[p, q, r] = z[p, q, r] + 1


@cuda.jit
def _p6_reshape_strided(a, out):
    out[0] = a[::2].reshape(3)[0]


def test_reshape_of_a_contiguous_array_in_a_kernel():
    a = np.arange(24.0)
    out, out3 = np.zeros((4, 6)), np.zeros((2, 4, 3))
    _p6_reshape[1, 8](a, 4, out, out3)
    assert np.array_equal(out, a.reshape(4, 6) * 2) and np.array_equal(out3, a.reshape(2, 4, 3) + 1)
    with pytest.raises(CompileError, match="reshape\\(\\) supports contiguous array only"):
        _p6_reshape_strided[1, 1](np.arange(6.0), np.zeros(1))
    d = cuda.to_device(np.zeros((3, 4), order="F"))
    assert d.flags["F_CONTIGUOUS"] and not d.flags["C_CONTIGUOUS"]


class _P6Req(__import__("enum").IntEnum):
    not_found = 404
    internal = 500


class _P6Color(__import__("enum").Enum):
    red = 1
    green = 2


@cuda.jit
def _p6_enums(x, c, flag, out):
    i = cuda.grid(1)
    if i < x.size:
        if x[i] > _P6Req.internal:                     # an IntEnum member is an int64
            out[i, 0] = x[i] - _P6Req.not_found
        else:
            out[i, 0] = x[i] + _P6Req["internal"]
        out[i, 1] = c == _P6Color.green                 # an Enum member argument compares by value
        out[i, 2] = _P6Color.green.value
        h = 1.5
        out[i, 3] = (flag is True) + 2 * (x[i] is x[0]) + 4 * (x[i] is h)   # numba's generic `is`


def test_enum_members_in_kernels_and_is_between_numbers():
    x = np.array([300, 450, 550, 600], np.int64)
    out = np.zeros((4, 4), np.int64)
    _p6_enums[1, 4](x, _P6Color.green, True, out)
    assert list(out[:, 0]) == [800, 950, 146, 196]
    assert list(out[:, 1]) == [1] * 4 and list(out[:, 2]) == [2] * 4
    assert list(out[:, 3]) == [3, 1, 1, 1]


@cuda.jit
def _p6_aligned(out):
    a = cuda.shared.array(3, dtype=np.int8)
    s = cuda.shared.array((2, 4), dtype=np.float32, alignment=256)
    loc = cuda.local.array(5, np.int32, 64)
    i = cuda.threadIdx.x
    s[i // 4, i % 4] = i
    loc[0] = i
    a[0] = 1
    cuda.syncthreads()
    out[i] = s[(7 - i) // 4, (7 - i) % 4] + loc[0] + a[0]


@cuda.jit
def _p6_misaligned(out):
    s = cuda.shared.array(4, dtype=np.float32, alignment=12)
    out[0] = s[0]


def test_array_alignment_and_forall_of_no_work():
    out = np.zeros(8, np.float32)
    _p6_aligned[1, 8](out)
    assert list(out) == [8.0] * 8
    assert compile_kernel_slots(_p6_aligned) == [0, 256]          # the aligned array starts at byte 256
    with pytest.raises(CompileError, match="Alignment must be a power of 2"):
        _p6_misaligned[1, 1](np.zeros(1, np.float32))
    a = np.zeros(4)
    _p6_no_grid.forall(0)(a)                                       # numba launches nothing
    assert not a.any()
    with pytest.raises(ValueError, match="negative task count"):
        _p6_no_grid.forall(-1)


def compile_kernel_slots(kernel):
    from gpusim.cuda.compiler import compile_kernel
    return [s.offset for s in compile_kernel(kernel).shared_slots]


@cuda.jit
def _p6_float_to_int(f, o64, o32, i32, st):
    i = cuda.grid(1)
    if i < f.size:
        o64[i] = cuda.uint64(f[i])
        o32[i] = cuda.uint32(f[i])
        i32[i] = cuda.int32(f[i])
        st[i] = f[i] * 2.0                 # a float stored into an int32 array: the same conversion


def test_float_to_integer_conversions_clamp_as_the_gpu_does():
    f = np.array([3e19, -5.0, np.nan, 2.0 ** 32, 2.5e9, -3e9, 7.9])
    o64, o32 = np.zeros(7, np.uint64), np.zeros(7, np.uint32)
    i32, st = np.zeros(7, np.int32), np.zeros(7, np.int32)
    _p6_float_to_int[1, 8](f, o64, o32, i32, st)
    assert [int(x) for x in o64] == [2 ** 64 - 1, 0, 0, 2 ** 32, 2500000000, 0, 7]
    assert [int(x) for x in o32] == [2 ** 32 - 1, 0, 0, 2 ** 32 - 1, 2500000000, 0, 7]
    assert [int(x) for x in i32] == [2 ** 31 - 1, -5, 0, 2 ** 31 - 1, 2 ** 31 - 1, -2 ** 31, 7]
    assert [int(x) for x in st] == [2 ** 31 - 1, -10, 0, 2 ** 31 - 1, 2 ** 31 - 1, -2 ** 31, 15]


# ---- raise / assert in a kernel (numba-cuda's dispatcher: numba_cuda/numba/cuda/dispatcher.py, _Kernel.launch) ----
# With debug=True the first raising thread's exception is raised on the host after the kernel: its class, its
# first argument prefixed "In function 'k', file /abs/path, line N, tid=[z, y, x] ctaid=[z, y, x]: ", the other
# arguments as they are (tests/cudapy/test_userexc.py, test_exception.py); a host (numpy) array is not copied
# back.  Without debug a raising thread just returns.  numba compiles ``assert c, msg`` as ``if not c: raise
# AssertionError(msg)`` either way (without debug the PTX skips the rest of the failing thread).

_RAISE_SRC = '''\
import numpy as np
from numba import cuda


class PlanError(Exception):
    pass


def k_raise(a, n):
    i = cuda.grid(1)
    if i == n:
        raise PlanError("foo", 7)
    if i == n + 1:
        raise PlanError
    a[i] = 1.0


def k_assert(a, lim):
    i = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
    assert i < lim, "too big"
    a[i] = 1.0


def k_assert_bare(a, lim):
    i = cuda.threadIdx.x
    assert i < lim
    a[i] = 1.0
'''


def _raise_module(tmp_path, front):
    import importlib.util
    p = tmp_path / f"raise_kernels_{front}.py"
    p.write_text(_RAISE_SRC.replace("from numba import cuda", f"from {front} import cuda"))
    spec = importlib.util.spec_from_file_location(p.stem, p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, str(p)


def _line_of(text):
    return _RAISE_SRC.splitlines().index(text) + 1


_FOO, _BARE = '        raise PlanError("foo", 7)', "        raise PlanError"
_TOO_BIG, _ASSERT_BARE = '    assert i < lim, "too big"', "    assert i < lim"


def test_raise_in_a_debug_kernel_is_raised_on_the_host_as_numba_reports_it(tmp_path):
    m, path = _raise_module(tmp_path, "gpusim")
    k = cuda.jit(debug=True, opt=False)(m.k_raise)
    a = np.zeros(64, np.float32)
    k[2, 32](a, 100)                                   # no thread raises: nothing reported
    assert a.sum() == 64
    a[:] = 0
    with pytest.raises(m.PlanError) as e:
        k[2, 32](a, 37)                                # block 1, thread 5 raises (and thread 6 the bare class)
    prefix = f"In function 'k_raise', file {os.path.abspath(path)}, line {_line_of(_FOO)}"
    assert e.value.args == (f"{prefix}, tid=[0, 0, 5] ctaid=[0, 0, 1]: foo", 7)
    assert not a.any()                                 # a host array is not copied back after a raising launch
    d = cuda.to_device(np.zeros(64, np.float32))
    with pytest.raises(m.PlanError) as e:
        k[2, 32](d, -1)                                # thread 0 raises the bare class: the prefix alone
    assert e.value.args == (f"In function 'k_raise', file {os.path.abspath(path)}, line {_line_of(_BARE)}, "
                            "tid=[0, 0, 0] ctaid=[0, 0, 0]",)
    got = d.copy_to_host()                             # device memory keeps what the other threads wrote
    assert got[1:].all() and got[0] == 0
    with pytest.raises(m.PlanError) as e:
        k[2, 32](d, 37)
    kr = e.value.gpusim_kernel_raise                   # what `gpusim run` prints: file:line, block, thread
    assert (kr.file, kr.line, kr.kernel, kr.block, kr.thread) == (path, _line_of(_FOO), "k_raise", (1, 0, 0),
                                                                  (5, 0, 0))


def test_raise_without_debug_ends_the_thread_silently(tmp_path):
    m, _ = _raise_module(tmp_path, "gpusim")
    a = np.zeros(64, np.float32)
    cuda.jit(m.k_raise)[2, 32](a, 37)
    assert list(np.flatnonzero(a == 0)) == [37, 38]
    a[:] = 0
    cuda.jit(debug=False)(m.k_assert)[1, (8, 4)](a, 20)    # a failing assert ends the thread (numba's PTX)
    assert list(np.flatnonzero(a)) == list(range(20))


def test_assert_in_a_debug_kernel_raises_assertion_error_naming_the_thread(tmp_path):
    m, path = _raise_module(tmp_path, "gpusim")
    a = np.zeros(64, np.float32)
    with pytest.raises(AssertionError) as e:
        cuda.jit(debug=True, opt=False)(m.k_assert)[1, (8, 4)](a, 19)
    line = _line_of(_TOO_BIG)
    assert e.value.args == (f"In function 'k_assert', file {os.path.abspath(path)}, line {line}, "
                            "tid=[0, 2, 3] ctaid=[0, 0, 0]: too big",)      # thread (3, 2, 0): i = 19
    with pytest.raises(AssertionError) as e:
        cuda.jit(debug=True, opt=False)(m.k_assert_bare)[1, 32](a, 30)
    assert e.value.args == (f"In function 'k_assert_bare', file {os.path.abspath(path)}, "
                            f"line {_line_of(_ASSERT_BARE)}, tid=[0, 0, 30] ctaid=[0, 0, 0]",)


def test_a_kernel_exceptions_class_args_and_line_are_numbas(tmp_path):
    """numba-cuda's compiler (on this host: no GPU needed) records each raise of a debug kernel as (class, args,
    (function, file, line)); the host exception is built from that entry.  gpusim's must agree."""
    pytest.importorskip("numba.cuda")
    _, path = _raise_module(tmp_path, "numba")
    script = textwrap.dedent(f"""
        import importlib.util, warnings
        warnings.simplefilter("ignore")
        from numba import types
        from numba.cuda.compiler import compile_cuda
        spec = importlib.util.spec_from_file_location("m", {path!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        for name, sig in (("k_raise", (types.float32[:], types.int64)), ("k_assert", (types.float32[:], types.int64)),
                          ("k_assert_bare", (types.float32[:], types.int64))):
            cres = compile_cuda(getattr(m, name), types.void, sig, debug=True, cc=(9, 0))
            for cls, args, loc in cres.call_helper.exceptions.values():
                print(name, cls.__name__, repr(args), loc[0], loc[2])
        """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = sorted(r.stdout.strip().splitlines())
    assert got == sorted([
        f"k_raise PlanError ('foo', 7) k_raise {_line_of(_FOO)}",
        f"k_raise PlanError None k_raise {_line_of(_BARE)}",
        f"k_assert AssertionError ('too big',) k_assert {_line_of(_TOO_BIG)}",
        f"k_assert_bare AssertionError None k_assert_bare {_line_of(_ASSERT_BARE)}"]), r.stdout


def test_gpusim_run_names_the_raising_kernels_line_block_and_thread(tmp_path):
    from test_cli_errors import run_cli, user_error
    src = _RAISE_SRC + ("\n\nk = cuda.jit(debug=True, opt=False)(k_raise)\n\n\ndef launch():\n"
                        "    return {'kernel': k, 'grid': (2,), 'block': (32,), 'args': [np.zeros(64, np.float32), 37]}\n")
    (tmp_path / "nb_raise.py").write_text(src)
    line = _line_of(_FOO)
    user_error(run_cli(tmp_path, "run", "nb_raise.py"),
               f"nb_raise.py:{line}, in kernel 'k_raise', block (1, 0, 0), thread (5, 0, 0): PlanError: foo")


def test_a_raise_of_a_runtime_value_reports_the_raising_threads_value(tmp_path):
    """numba-cuda compiles ``raise ValueError(i)`` but its host report cannot carry the value (0.30 shows an
    object's repr); gpusim reports the raising thread's value."""
    src = tmp_path / "raise_dyn.py"
    src.write_text("from gpusim import cuda\n\n\n@cuda.jit(debug=True, opt=False)\ndef k(a, n):\n"
                   "    i = cuda.threadIdx.x\n    if i >= n:\n        raise ValueError(i * 2)\n    a[i] = 1.0\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("raise_dyn", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    d = cuda.to_device(np.zeros(32, np.float32))
    with pytest.raises(ValueError, match=r"line 8, tid=\[0, 0, 5\] ctaid=\[0, 0, 0\]: 10$"):
        mod.k[1, 32](d, 5)
    assert d.copy_to_host().sum() == 5


# ---- a vote's float mask: numba-cuda refuses it when it types the kernel (the first launch), reached or not ----

@cuda.jit
def _vote_float_mask(a, m):
    i = cuda.threadIdx.x
    if i > 1000:                                   # no thread gets here: numba refuses it all the same
        a[i] = cuda.all_sync(m, i > 3)


@cuda.jit
def _vote_float_literal(a):
    i = cuda.threadIdx.x
    mm = 1.0 * 2
    if i > 1000:
        a[i] = cuda.ballot_sync(mm, i > 3)


def test_a_votes_float_mask_is_refused_when_the_kernel_is_compiled_as_numba_does():
    a = np.zeros(32, np.int32)
    with pytest.raises(CompileError, match=r"all_sync: Mask type must be an integer\. Got float32"):
        _vote_float_mask[1, 32](a, np.float32(1.0))
    with pytest.raises(CompileError, match=r"all_sync: Mask type"):
        _vote_float_mask[1, 32](a, np.float32(1.0))     # refused again: not remembered as checked
    with pytest.raises(CompileError, match=r"ballot_sync: Mask type must be an integer\. Got float64"):
        _vote_float_literal[1, 32](a)
    _vote_float_mask[1, 32](a, 0xFFFFFFFF)         # an integer mask: compiled and run
    assert not a.any()
    with pytest.raises(CompileError, match=r"all_sync: Mask type must be an integer\. Got float32"):
        cuda.jit("void(int32[:], float32)")(_vote_float_mask.py_func)     # an eager signature: at the decorator
    cuda.jit("void(int32[:], uint32)")(_vote_float_mask.py_func)[1, 32](a, 0xFFFFFFFF)
    pytest.importorskip("numba.cuda")
    script = textwrap.dedent("""
        import warnings
        warnings.simplefilter("ignore")
        from numba import cuda, int32, float32

        def k(a, m):
            i = cuda.threadIdx.x
            if i > 1000:
                a[i] = cuda.all_sync(m, i > 3)

        cuda.compile_ptx(k, (int32[:], int32), cc=(9, 0))
        try:
            cuda.compile_ptx(k, (int32[:], float32), cc=(9, 0))
        except Exception as e:
            print(type(e).__name__, str(e).replace(chr(10), " "))
        """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("TypingError") and "Mask type must be an integer. Got float32" in r.stdout, r.stdout
