"""Streams that read, write, or both, in big tiles: what a store costs on its way into the L2.

One program per ``BLOCK`` fp32 elements (16 B per thread per access, as Triton's elementwise kernels do):

* ``copy``:  ``y[i] = x[i]``                      -- 4 B read and 4 B written per element
* ``read``:  one sum per program into ``y[pid]``  -- 4 B read per element, almost nothing written
* ``write``: ``y[i] = i``                         -- 4 B written per element, nothing read

At sizes whose footprint fits the L2 the writes need not reach DRAM, so ``copy`` against ``read`` shows what the
stores themselves cost (the L2's write path), and ``write`` shows it alone.  Look at cycles against
``dram__bytes_read.sum`` / ``dram__bytes_write.sum`` as the size grows past the L2.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def stream_rw_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if MODE == "copy":
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    elif MODE == "read":
        tl.store(y_ptr + pid, tl.sum(tl.load(x_ptr + offs, mask=mask, other=0.0), axis=0))
    else:
        tl.store(y_ptr + offs, offs.to(tl.float32), mask=mask)


MODES = ("copy", "read", "write")


def launch(n: int = 1 << 20, mode: str = "copy", BLOCK: int = 1024, num_warps: int = 4, seed: int = 0) -> dict:
    """``mode``: "copy", "read" or "write"; ``n`` fp32 elements."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32) if mode != "write" else np.zeros(1, np.float32)
    programs = -(-n // BLOCK)
    y = np.zeros(programs if mode == "read" else n, np.float32)

    def reference():
        if mode == "copy":
            return {1: x.copy()}
        if mode == "read":
            pad = np.zeros(programs * BLOCK, np.float32)
            pad[:n] = x
            return {1: pad.reshape(programs, BLOCK).sum(axis=1, dtype=np.float64).astype(np.float32)}
        return {1: np.arange(n, dtype=np.float32)}

    return {
        "kernel": stream_rw_kernel,
        "grid": lambda meta: (triton.cdiv(n, meta["BLOCK"]),),
        "args": [x, y, n],
        "meta": {"BLOCK": BLOCK, "MODE": mode, "num_warps": num_warps},
        "outputs": [1],
        "reference": reference,
        "rtol": 1e-5, "atol": 1e-3,
        "flops": n if mode == "read" else 0,
        "min_bytes": {"copy": 8, "read": 4, "write": 4}[mode] * n,
    }
