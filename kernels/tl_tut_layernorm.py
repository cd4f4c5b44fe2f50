"""Layer normalization, forward and backward: per-row statistics, then weight gradients gathered under spin locks.

Written for gpusim after the pattern of Triton's tutorial 05 (layer norm, triton 3.6); the code is this project's
own.

Three kernels in sequence (one launch dict with ``steps``):

1. ``layernorm_fwd_kernel``, one program per row of X (M x N): three passes over the row in BLOCK_SIZE chunks
   (sum for the mean, squared deviations for the variance, then y = (x - mean) * rstd * w + b), the row's
   mean and 1/std stored as one scalar each (``tl.store(Mean + row, mean)``).  The second and third passes
   re-read the row, from L1/L2 when it still fits.
2. ``layernorm_bwd_kernel``, one program per row (the whole row in one block): dx from dy, x, w and the saved
   statistics; the row's contributions to dW and dB (dy * xhat and dy) are added into one of GROUP_SIZE_M
   partial rows, row % GROUP_SIZE_M, under a spin lock on ``tl.atomic_cas`` / ``tl.atomic_xchg`` (the first
   program to take a lock overwrites its partial rows, the later ones accumulate).  M / GROUP_SIZE_M programs
   contend for each lock (about 16 by default).
3. ``layernorm_dwdb_kernel``: one program per BLOCK_SIZE_N columns sums the GROUP_SIZE_M partial rows into dW
   and dB, and clears the lock groups' arrival counts so that the next launch starts fresh (a caller could
   zero them instead, as a framework would).

x, w, b, dy, y, dx, dW and dB are in ``dtype`` (fp16 by default); the statistics and partial sums are fp32.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def layernorm_fwd_kernel(X, Y, W, B, Mean, Rstd, row_stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = X + row * row_stride
    y_row = Y + row * row_stride
    # pass 1: the mean
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        total += tl.load(x_row + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    # pass 2: the variance, around the mean (no cancellation)
    sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        v = tl.load(x_row + cols, mask=cols < N, other=0.).to(tl.float32)
        dev = tl.where(cols < N, v - mean, 0.)
        sq += dev * dev
    rstd = 1 / tl.sqrt(tl.sum(sq, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # pass 3: normalize, scale and shift
    for start in range(0, N, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        inside = cols < N
        w = tl.load(W + cols, mask=inside)
        b = tl.load(B + cols, mask=inside)
        v = tl.load(x_row + cols, mask=inside, other=0.).to(tl.float32)
        out = (v - mean) * rstd * w + b
        tl.store(y_row + cols, out.to(Y.dtype.element_ty), mask=inside)


@triton.jit
def layernorm_bwd_kernel(DX, DY, X, W, Mean, Rstd, PartDW, PartDB, Locks, row_stride, N,
                         GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    inside = cols < N
    x = tl.load(X + row * row_stride + cols, mask=inside, other=0.).to(tl.float32)
    dy = tl.load(DY + row * row_stride + cols, mask=inside, other=0.).to(tl.float32)
    w = tl.load(W + cols, mask=inside, other=0.).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(inside, (x - mean) * rstd, 0.)
    g = tl.where(inside, w * dy, 0.)
    # dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
    c_shift = tl.sum(g, axis=0) / N
    c_scale = tl.sum(g * xhat, axis=0) / N
    dx = (g - c_shift - xhat * c_scale) * rstd
    tl.store(DX + row * row_stride + cols, dx.to(DX.dtype.element_ty), mask=inside)
    # this row's share of dW and dB goes into partial row `slot`, one program at a time
    dw_part = dy * xhat
    db_part = dy
    slot = row % GROUP_SIZE_M
    lock = Locks + slot
    arrivals = Locks + GROUP_SIZE_M + slot
    pdw = PartDW + slot * N + cols
    pdb = PartDB + slot * N + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(arrivals) == 0:
        tl.atomic_xchg(arrivals, 1)               # first in: overwrite whatever the partial rows held
    else:
        dw_part += tl.load(pdw, mask=inside)
        db_part += tl.load(pdb, mask=inside)
    tl.store(pdw, dw_part, mask=inside)
    tl.store(pdb, db_part, mask=inside)
    tl.debug_barrier()                            # every thread's stores issued before the lock is released
    tl.atomic_xchg(lock, 0)


@triton.jit
def layernorm_dwdb_kernel(PartDW, PartDB, DW, DB, Locks, N, GROUP_SIZE_M: tl.constexpr,
                          BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    acc_w = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    acc_b = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for first in range(0, GROUP_SIZE_M, BLOCK_SIZE_M):
        rows = first + tl.arange(0, BLOCK_SIZE_M)
        ok = (rows[:, None] < GROUP_SIZE_M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        acc_w += tl.load(PartDW + offs, mask=ok, other=0.)
        acc_b += tl.load(PartDB + offs, mask=ok, other=0.)
    tl.store(DW + cols, tl.sum(acc_w, axis=0).to(DW.dtype.element_ty), mask=cols < N)
    tl.store(DB + cols, tl.sum(acc_b, axis=0).to(DB.dtype.element_ty), mask=cols < N)
    # every partial row has been read: clear the arrival counts for the next backward pass
    slots = tl.arange(0, BLOCK_SIZE_M)
    for first in range(0, GROUP_SIZE_M, BLOCK_SIZE_M):
        tl.store(Locks + GROUP_SIZE_M + first + slots, 0, mask=(first + slots < GROUP_SIZE_M) & (pid == 0))


def _reference(x, w, b, dy, eps):
    """Forward and backward in numpy (fp32 arithmetic on the stored inputs)."""
    xf, wf, bf, gf = (a.astype(np.float32) for a in (x, w, b, dy))
    mean = xf.mean(axis=1)
    rstd = 1 / np.sqrt(((xf - mean[:, None]) ** 2).mean(axis=1) + np.float32(eps))
    xhat = (xf - mean[:, None]) * rstd[:, None]
    y = xhat * wf + bf
    g = gf * wf
    dx = (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True)) * rstd[:, None]
    return mean, rstd, y, dx, (gf * xhat).sum(axis=0), gf.sum(axis=0)


def launch(M: int = 512, N: int = 1024, dtype: str = "float16", BLOCK_SIZE: int = 1024, GROUP_SIZE_M: int = 0,
           seed: int = 0) -> dict:
    """M rows of N features; forward BLOCK_SIZE-column chunks; backward partial sums in GROUP_SIZE_M rows (0: about
    16 rows per lock, a power of two from 16 to 256 locks)."""
    if GROUP_SIZE_M <= 0:
        GROUP_SIZE_M = min(256, max(16, triton.next_power_of_2(triton.cdiv(M, 16))))
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    x = (rng.standard_normal((M, N), dtype=np.float32) * 2 + 0.5).astype(dt)
    w = rng.uniform(0.5, 1.5, N).astype(dt)
    b = rng.uniform(-0.5, 0.5, N).astype(dt)
    dy = rng.standard_normal((M, N), dtype=np.float32).astype(dt)
    eps = 1e-5
    y, dx = np.zeros((M, N), dt), np.zeros((M, N), dt)
    mean, rstd = np.zeros(M, np.float32), np.zeros(M, np.float32)
    part_dw, part_db = np.zeros((GROUP_SIZE_M, N), np.float32), np.zeros((GROUP_SIZE_M, N), np.float32)
    locks = np.zeros(2 * GROUP_SIZE_M, np.int32)          # GROUP_SIZE_M locks, then GROUP_SIZE_M arrival counts
    dw, db = np.zeros(N, dt), np.zeros(N, dt)
    block_n = triton.next_power_of_2(N)                    # the backward holds a whole row
    fwd_block = min(BLOCK_SIZE, block_n)

    def reference():
        r_mean, r_rstd, r_y, r_dx, r_dw, r_db = _reference(x, w, b, dy, eps)
        return {(0, 4): r_mean, (0, 5): r_rstd, (0, 1): r_y, (1, 0): r_dx, (2, 2): r_dw, (2, 3): r_db}

    return {
        "steps": [
            {"kernel": layernorm_fwd_kernel, "grid": (M,), "args": [x, y, w, b, mean, rstd, N, N, eps],
             "meta": {"BLOCK_SIZE": fwd_block, "num_warps": min(max(fwd_block // 256, 1), 8)}},
            {"kernel": layernorm_bwd_kernel, "grid": (M,),
             "args": [dx, dy, x, w, mean, rstd, part_dw, part_db, locks, N, N],
             "meta": {"GROUP_SIZE_M": GROUP_SIZE_M, "BLOCK_SIZE_N": block_n,
                      "num_warps": min(max(block_n // 256, 1), 8)}},
            {"kernel": layernorm_dwdb_kernel, "grid": (triton.cdiv(N, 128),),
             "args": [part_dw, part_db, dw, db, locks, N],
             "meta": {"GROUP_SIZE_M": GROUP_SIZE_M, "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128, "num_warps": 4}},
        ],
        "outputs": [(0, 1), (0, 4), (0, 5), (1, 0), (2, 2), (2, 3)],
        "reference": reference,
        "rtol": 1e-2, "atol": 2e-2,
        # forward: ~8 per element (sum, deviation, square-add, normalize, scale, shift); backward: ~12
        "flops": 20 * M * N,
        # x read by both passes, w, b, y, dy, dx: the fewest bytes with the statistics kept in registers
        "min_bytes": dt.itemsize * (5 * M * N + 4 * N) + 8 * M,
    }
