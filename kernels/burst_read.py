"""Burst-mode DRAM: bytes moved vs bytes used, by access granularity and alignment.

The input is cut into rows of ``pitch_bytes``; from each row the kernel reads one chunk of ``chunk_bytes``
(consecutive fp32 words, one per thread) starting ``offset_bytes`` into the row, and writes the chunk out
densely.  DRAM and L2 move whole 32 B sectors (and the H100's DRAM bursts are wider still: see the
granularity microbenchmark), so a 4-byte chunk per 256 B row costs a full sector: 8x the useful bytes.  A
128 B chunk aligned to 32 B costs exactly its 4 sectors; shifted by 16 B it straddles 5 sectors (and two
128 B lines).  Compare ``dram__bytes_read.sum`` with the useful bytes (``min_bytes``) and the time per useful
byte as the chunk grows, aligned and misaligned.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def burst_read(a, out, words_per_chunk, pitch_words, offset_words):
    i = cuda.grid(1)
    if i < out.size:
        row = i // words_per_chunk
        out[i] = a[row * pitch_words + offset_words + i % words_per_chunk]


def _reference(a, rows, wpc, pitch_w, off_w):
    idx = (np.arange(rows)[:, None] * pitch_w + off_w + np.arange(wpc)[None, :]).reshape(-1)
    return a[idx].copy()


def launch(n: int = 1 << 20, chunk_bytes: int = 32, pitch_bytes: int = 256, offset_bytes: int = 0,
           block: int = 256, seed: int = 0) -> dict:
    """``n`` useful fp32 words read (and written) in chunks of ``chunk_bytes`` (a multiple of 4 dividing
    ``n * 4``), one chunk per row of ``pitch_bytes``, starting ``offset_bytes`` (a multiple of 4) into the row.
    ``chunk_bytes == pitch_bytes`` with offset 0 is a plain contiguous copy."""
    for name, v in (("chunk_bytes", chunk_bytes), ("pitch_bytes", pitch_bytes), ("offset_bytes", offset_bytes)):
        if v % 4 or v < (0 if name == "offset_bytes" else 4):
            raise ValueError(f"{name} must be a {'non-negative' if name == 'offset_bytes' else 'positive'} "
                             f"multiple of 4, got {v}")
    if chunk_bytes + offset_bytes > pitch_bytes:
        raise ValueError(f"chunk_bytes + offset_bytes ({chunk_bytes} + {offset_bytes}) exceeds pitch_bytes "
                         f"({pitch_bytes}): chunks would overlap the next row")
    wpc, pitch_w, off_w = chunk_bytes // 4, pitch_bytes // 4, offset_bytes // 4
    if n % wpc:
        raise ValueError(f"n ({n}) must be a multiple of the words per chunk ({wpc})")
    rows = n // wpc
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(rows * pitch_w, dtype=np.float32)
    out = np.zeros(n, np.float32)
    return {
        "kernel": burst_read,
        "grid": ((n + block - 1) // block,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [a, out, wpc, pitch_w, off_w],
        "meta": {},
        "outputs": [1],
        "reference": lambda: {1: _reference(a, rows, wpc, pitch_w, off_w)},
        "rtol": 0.0, "atol": 0.0,
        "flops": 0,
        "min_bytes": 2 * 4 * n,           # the useful bytes read and written
    }
