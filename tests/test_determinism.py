"""Same kernel, same config, same inputs -> the same cycles, whatever the process simulated before.

Simulated device addresses come from a first-fit allocator over the live allocations (``trace.first_fit``), as
``cudaMalloc``'s caching allocator reuses freed memory: an array's address, hence its L2 slices and DRAM
channels, depends only on what is alive when it is allocated."""
from __future__ import annotations

import gc
import importlib.util
from pathlib import Path

import numpy as np

from gpusim.api import simulate_launch
from gpusim.cuda.memory import ADDRESS_SPACE
from gpusim.trace import first_fit
from gpusim.triton._buffers import ADDRESSES

KERNELS = Path(__file__).resolve().parents[1] / "kernels"


def _cycles(stem, **kw):
    spec = importlib.util.spec_from_file_location(f"det_{stem}", KERNELS / f"{stem}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rep = simulate_launch(mod.launch(**kw), "h100")
    rep = rep[0] if isinstance(rep, list) else rep
    return rep["cycles"]


def test_first_fit_takes_the_lowest_gap():
    assert first_fit([], 10, 1024, 256) == 1024
    assert first_fit([(1024, 256), (1536, 256)], 256, 1024, 256) == 1280       # the hole between them
    assert first_fit([(1024, 256), (1536, 256)], 257, 1024, 256) == 1792       # too small a hole: after the last
    assert first_fit([(1280, 100)], 256, 1024, 256) == 1024                     # before the first
    assert first_fit([(1024, 100)], 256, 1024, 256) == 1280                     # a block's end is rounded up


def test_freed_arrays_give_their_addresses_back():
    a = np.zeros(1 << 16, np.float32)
    first = ADDRESS_SPACE.address_of(a)
    b = np.zeros(1 << 10, np.float32)
    ADDRESS_SPACE.address_of(b)
    del a
    gc.collect()
    c = np.zeros(1 << 16, np.float32)
    assert ADDRESS_SPACE.address_of(c) == first
    t = np.zeros(1 << 16, np.float32)
    p = t.__array_interface__["data"][0]
    first_t = ADDRESSES.address(p, t.nbytes, t)
    del t
    gc.collect()
    u = np.zeros(1 << 16, np.float32)
    assert ADDRESSES.address(u.__array_interface__["data"][0], u.nbytes, u) == first_t


def test_cycles_do_not_depend_on_what_ran_before():
    alone = [_cycles("matmul_tiled", n=128), _cycles("tl_softmax", n_rows=256, n_cols=512)]
    for stem, kw in [("vector_add", {"n": 1 << 16}), ("tl_vector_add", {"n": 1 << 16}),
                     ("bank_conflicts", {})]:
        _cycles(stem, **kw)
        gc.collect()
    again = [_cycles("matmul_tiled", n=128), _cycles("tl_softmax", n_rows=256, n_cols=512)]
    assert again == alone
