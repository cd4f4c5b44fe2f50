"""numba-cuda test suite: one Jacobi relaxation sweep of a 2-D Laplace problem with a per-block max-reduction of
the change in shared memory (``jocabi_relax_core``: a 5-point stencil read from global memory, a 16 x 16 float64
shared array reduced down its columns then along its first row, ``cuda.syncthreads()`` after every step), exactly
as the test writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/cudapy/test_laplace.py at tag v0.30.4
(the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA CORPORATION &
AFFILIATES.  The kernel and its device function ``get_max`` are unchanged (lifted from the test method to module
level, with ``tpb`` and ``SM_SIZE`` as the test's module globals at their GPU values, tpb = 16); only the imports
are switched and the host code is in ``launch()``: one launch of the test's loop (which relaxes until the change
is below 1e-6, swapping ``A`` and ``Anew``), with its ``blockdim = (tpb, tpb)`` and
``griddim = (NN // tpb, NM // tpb)`` -- a floor: at a size not a multiple of 16 the last rows and columns are not
computed, as in the test.  The test's grid is ``A[:, 0] = 1`` and zeros; here the interior is random (seeded), so
every point checks the stencil.  The test's grid is square (``error`` is indexed ``[by, bx]``), so is this one.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
    from numba.cuda import float64, void
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda
    from gpusim.cuda import float64, void

tpb = 16
SM_SIZE = tpb, tpb


@cuda.jit(float64(float64, float64), device=True, inline="always")
def get_max(a, b):
    if a > b:
        return a
    else:
        return b


@cuda.jit(void(float64[:, :], float64[:, :], float64[:, :]))
def jocabi_relax_core(A, Anew, error):
    err_sm = cuda.shared.array(SM_SIZE, dtype=float64)

    ty = cuda.threadIdx.x
    tx = cuda.threadIdx.y
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y

    n = A.shape[0]
    m = A.shape[1]

    i, j = cuda.grid(2)

    err_sm[ty, tx] = 0
    if j >= 1 and j < n - 1 and i >= 1 and i < m - 1:
        Anew[j, i] = 0.25 * (
            A[j, i + 1] + A[j, i - 1] + A[j - 1, i] + A[j + 1, i]
        )
        err_sm[ty, tx] = Anew[j, i] - A[j, i]

    cuda.syncthreads()

    # max-reduce err_sm vertically
    t = tpb // 2
    while t > 0:
        if ty < t:
            err_sm[ty, tx] = get_max(err_sm[ty, tx], err_sm[ty + t, tx])
        t //= 2
        cuda.syncthreads()

    # max-reduce err_sm horizontally
    t = tpb // 2
    while t > 0:
        if tx < t and ty == 0:
            err_sm[ty, tx] = get_max(err_sm[ty, tx], err_sm[ty, tx + t])
        t //= 2
        cuda.syncthreads()

    if tx == 0 and ty == 0:
        error[by, bx] = err_sm[0, 0]


def jacobi_reference(A, Anew, griddim):
    """numpy: ``Anew`` after one sweep over the points the grid covers, and each block's max of ``Anew - A``
    (0 where a thread has no interior point)."""
    n, m = A.shape
    cy, cx = griddim[1] * tpb, griddim[0] * tpb          # rows (j) and columns (i) the threads cover
    out = Anew.copy()
    err = np.zeros((cy, cx))
    jr, ir = slice(1, min(n - 1, cy)), slice(1, min(m - 1, cx))
    out[jr, ir] = 0.25 * (A[jr, 2:ir.stop + 1] + A[jr, 0:ir.stop - 1] + A[0:jr.stop - 1, ir] + A[2:jr.stop + 1, ir])
    err[jr, ir] = out[jr, ir] - A[jr, ir]
    error = np.zeros(griddim)
    blk = err.reshape(griddim[1], tpb, griddim[0], tpb).max(axis=(1, 3))     # [by, bx]
    error[:griddim[1], :griddim[0]] = blk
    return out, error


def launch(size: int = 256, seed: int = 0) -> dict:
    """One sweep on a ``size`` x ``size`` grid (the test: 256 x 256, up to 1000 sweeps)."""
    NN, NM = size, size
    rng = np.random.default_rng(seed)
    A = rng.random((NN, NM))
    Anew = np.zeros((NN, NM), dtype=np.float64)
    for j in range(NN):
        A[j, 0] = 1.0
        Anew[j, 0] = 1.0

    blockdim = (tpb, tpb)
    griddim = (NN // blockdim[0], NM // blockdim[1])

    error_grid = np.zeros(griddim)

    def reference():
        out, error = jacobi_reference(A, Anew, griddim)
        return {1: out, 2: error}

    return {
        "kernel": jocabi_relax_core,
        "grid": griddim,
        "block": blockdim,
        "shared_bytes": 0,
        "args": [A, Anew, error_grid],
        "outputs": [1, 2],
        "reference": reference,
        "rtol": 1e-12, "atol": 1e-12,
        "flops": 5 * NN * NM,
        "min_bytes": 2 * 8 * NN * NM,
    }
