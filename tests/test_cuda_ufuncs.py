"""CUDA ufuncs (gpusim.cuda.vectorizers): numba's ``@vectorize(..., target='cuda')`` and ``@guvectorize(...,
target='cuda')`` in a script run by ``gpusim run``: the results numpy gives, the loop numpy's type resolution
picks, and one simulated launch per call with ``forall``'s block size."""
import textwrap

import numpy as np
import pytest

from gpusim import cuda, session
from gpusim.cuda import vectorizers
from gpusim.cuda.launch import FORALL_BLOCK

SCRIPT = textwrap.dedent('''
    import math
    import numpy as np
    from numba import vectorize, guvectorize, cuda

    @vectorize(['float32(float32, float32, float32)', 'float64(float64, float64, float64)'], target='cuda')
    def cu_discriminant(a, b, c):
        return math.sqrt(b ** 2 - 4 * a * c)

    rng = np.random.default_rng(0)
    A, B, C = (rng.random(1000).astype(np.float32) for _ in range(3))
    B += 10
    D = cu_discriminant(A, B, C)
    assert D.dtype == np.float32 and np.allclose(D, np.sqrt(B ** 2 - 4 * A * C), rtol=1e-6)

    @guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', target='cuda')
    def matmulcore(A, B, C):
        m, n = A.shape
        n, p = B.shape
        for i in range(m):
            for j in range(p):
                C[i, j] = 0
                for k in range(n):
                    C[i, j] += A[i, k] * B[k, j]

    X = rng.random((300, 4, 5)).astype(np.float32)
    Y = rng.random((300, 5, 3)).astype(np.float32)
    assert np.allclose(matmulcore(X, Y), X @ Y, atol=1e-5)
    print("UFUNCS OK")
''')


def test_a_numba_docs_ufunc_script_runs_and_each_call_is_a_launch(tmp_path, capsys):
    pytest.importorskip("numba")
    from gpusim.cli import main
    f = tmp_path / "ufuncs.py"
    f.write_text(SCRIPT)
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    out = capsys.readouterr().out
    assert "UFUNCS OK" in out
    # the elementwise kernel: one thread per element, forall's blocks; the gufunc: one thread per loop index
    assert f"kernel __vectorized_cu_discriminant on NVIDIA H100 SXM5 80GB  grid ({-(-1000 // FORALL_BLOCK)}, 1, 1)" \
        f" block ({FORALL_BLOCK}, 1, 1)" in out
    assert f"kernel __gufunc_matmulcore on NVIDIA H100 SXM5 80GB  grid ({-(-300 // FORALL_BLOCK)}, 1, 1)" in out


def _ufunc(fn, sigs):
    v = vectorizers.CUDAVectorize(fn)
    for s in sigs:
        v.add(s)
    return v.build_ufunc()


def test_the_loop_follows_numpys_type_resolution_and_python_scalars_are_weak():
    def mx(a, b):
        return a if a > b else b
    f = _ufunc(mx, ["int32(int32, int32)", "float64(float64, float64)"])
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    r = f(x, 5)                                       # a Python int goes with the int32 loop
    assert r.dtype == np.int32 and r.shape == (3, 4) and np.array_equal(r, np.maximum(x, 5))
    assert f(np.ones(3, np.int16), np.zeros(3, np.int32)).dtype == np.int32      # int16 casts safely to int32
    assert f(np.ones(3), np.zeros(3, np.int32)).dtype == np.float64
    d = f(cuda.to_device(np.arange(4.0)), 2.0)        # device arrays in: a device array out
    assert isinstance(d, cuda.DeviceNDArray) and np.array_equal(d.copy_to_host(), [2.0, 2.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="no loop for inputs"):
        f(np.ones(3, np.complex64), np.ones(3, np.complex64))


def test_a_gufunc_with_scalar_core_dimensions():
    def total(a, res):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i]
        res[0] = s
    g = vectorizers.CUDAGUFuncVectorize(total, "(n)->()")
    g.add("void(float64[:], float64[:])")
    gu = g.build_ufunc()
    a = np.arange(12.0).reshape(3, 4)
    with session() as s:
        t = gu(a)
    assert t.shape == (3,) and np.allclose(t, a.sum(axis=1))
    assert len(s.reports) == 1 and list(s.reports[0].context["grid"]) == [1, 1, 1]


def test_a_scalar_core_input_declared_as_an_array_is_a_one_element_array():
    def add_first(x, y, res):                      # the old style: "()" for y, declared int32[:], read as y[0]
        for i in range(x.shape[0]):
            res[i] = x[i] + y[0]
    g = vectorizers.CUDAGUFuncVectorize(add_first, "(n),()->(n)")
    g.add("void(int32[:], int32[:], int32[:])")
    gu = g.build_ufunc()
    a = np.array([1, 2, 3, 4] * 2, dtype=np.int32).reshape(2, 4)
    b = np.array([2, 10], dtype=np.int32)
    res = np.zeros((2, 4), np.int32)
    gu(a, b, out=res)
    assert np.array_equal(res, a + b[:, None])


def test_a_ufunc_signature_without_a_return_type_gets_the_one_numba_infers():
    pytest.importorskip("numba")

    def suppress(values, threshold):                 # int16 and 0.0 returned: numba unifies them to float64
        if abs(values) >= threshold:
            return values
        else:
            return 0.0
    v = vectorizers.CUDAVectorize(suppress)
    for sg in ("(int16, int16)", "(float32, float32)"):
        v.add(sg)
    uf = v.build_ufunc()
    x = np.array([-70, 10, 60, -5], np.int16)
    r = uf(x, np.int16(50))
    assert r.dtype == np.float64 and list(r) == [-70.0, 0.0, 60.0, 0.0]


def test_a_gufunc_signature_of_numba_array_types():
    numba = pytest.importorskip("numba")
    f8 = numba.float64

    def norms(point, rows, res):                   # "(i),(j,k)->()" declared (float64[:], float64[:, :], float64[:])
        s = 0.0
        for r in rows:                             # iterating a 2-d array: its rows
            s += (r[0] - point[0]) ** 2 + (r[1] - point[1]) ** 2
        res[0] = s
    g = vectorizers.CUDAGUFuncVectorize(norms, "(i),(j,k)->()")
    g.add((f8[:], f8[:, :], f8[:]))
    gu = g.build_ufunc()
    pts, rows = np.arange(6.0).reshape(3, 2), np.arange(8.0).reshape(4, 2)
    got = gu(pts, rows)
    assert np.allclose(got, [((rows - p) ** 2).sum() for p in pts])


def test_numba_type_objects_as_ufunc_signatures_and_a_ufunc_called_in_a_kernel_is_refused():
    nb = pytest.importorskip("numba")
    from gpusim.errors import CompileError

    def halve(x):
        return x * 0.5
    f = _ufunc(halve, [nb.float64(nb.float64), nb.float32(nb.float32)])   # numba's own types, not strings
    assert np.array_equal(f(np.arange(4.0)), [0.0, 0.5, 1.0, 1.5])

    @cuda.jit
    def k(a, flag):
        i = cuda.grid(1)
        if flag > 100:                          # never taken: numba types the whole kernel before it runs
            a[i] = f(a[i])
    with pytest.raises(CompileError, match=r"Untyped global name 'f': Cannot determine Numba type of "
                                           r"<class 'numba.cuda.vectorizers.CUDAUFuncDispatcher'>"):
        k[1, 4](np.ones(4), 0)
