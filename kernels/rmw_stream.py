"""Read-modify-write streams: what a store costs when its line is already in the L2, against a store to a new line.

One thread per element (numba-style, ``cuda.grid(1)``):

* ``inplace``:     ``a[i] = a[i] * 2 + 1``          -- fp32; each line is filled from DRAM, then written in place
* ``copy``:        ``b[i] = a[i] * 2 + 1``          -- fp32; the stores go to new lines of another array
* ``rec_inplace``: a record of two float64 per thread (``s0 = a[2i]``, ``s1 = a[2i + 1]``), both fields written
  back, one 8-byte store each (the update of a random generator's state, numba's xoroshiro128+)
* ``rec_copy``:    the same records written to another array

Against ``copy``, ``inplace`` shows whether a store into a line the L2 just filled costs its write side as much as
one that allocates a new line; the record modes show the same for two partial-sector stores per sector.  Look at
cycles, ``lts__t_sectors_op_write.sum`` and the warps' drain stalls as the size grows past the L2.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def inplace(a, n):
    i = cuda.grid(1)
    if i < n:
        a[i] = a[i] * 2.0 + 1.0


@cuda.jit
def copy(a, b, n):
    i = cuda.grid(1)
    if i < n:
        b[i] = a[i] * 2.0 + 1.0


@cuda.jit
def rec_inplace(a, n):
    i = cuda.grid(1)
    if i < n:
        s0 = a[2 * i]
        s1 = a[2 * i + 1]
        a[2 * i] = s0 + s1
        a[2 * i + 1] = s0 * 3.0


@cuda.jit
def rec_copy(a, b, n):
    i = cuda.grid(1)
    if i < n:
        s0 = a[2 * i]
        s1 = a[2 * i + 1]
        b[2 * i] = s0 + s1
        b[2 * i + 1] = s0 * 3.0


MODES = ("inplace", "copy", "rec_inplace", "rec_copy")


def launch(n: int = 1 << 20, mode: str = "inplace", block: int = 256, seed: int = 0) -> dict:
    """``n`` threads: fp32 elements (``inplace``, ``copy``) or records of two float64 (``rec_*``)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    rng = np.random.default_rng(seed)
    rec = mode.startswith("rec_")
    a = rng.standard_normal(2 * n if rec else n).astype(np.float64 if rec else np.float32)
    a0 = a.copy()
    grid = ((n + block - 1) // block,)
    if rec:
        want = np.empty_like(a0)
        want[0::2] = a0[0::2] + a0[1::2]
        want[1::2] = a0[0::2] * 3.0
    else:
        want = a0 * np.float32(2.0) + np.float32(1.0)
    if mode.endswith("inplace"):
        kernel, args, outputs = (rec_inplace if rec else inplace), [a, n], [0]
        ref = {0: want}
    else:
        b = np.zeros_like(a)
        kernel, args, outputs = (rec_copy if rec else copy), [a, b, n], [1]
        ref = {1: want}
    nbytes = a.nbytes
    return {
        "kernel": kernel,
        "grid": grid,
        "block": (block,),
        "shared_bytes": 0,
        "args": args,
        "meta": {},
        "outputs": outputs,
        "reference": lambda: ref,
        "rtol": 1e-6, "atol": 1e-6,
        "flops": 2 * n,
        "min_bytes": 2 * nbytes,
    }
