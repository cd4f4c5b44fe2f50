"""Kernel argument memory: ``Buffer`` (one argument's whole allocation as a flat array of its storage dtype) and
the fake device addresses (``ADDRESSES``: 4 KB aligned, stable while the memory lives, like cudaMalloc's) that
the lowering coalesces on.  Units: elements, bytes.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import UnsupportedConstruct
from ._dtypes import bfloat16, dtype, float16, to_compute


# ---------------------------------------------------------------------------------------------------------
# buffers: kernel argument memory with fake device addresses
# ---------------------------------------------------------------------------------------------------------

class _AddressSpace:
    """Fake device addresses for host memory, stable while the memory lives (4 KB aligned, like cudaMalloc).

    Keyed by the host address of an allocation's first byte, so the same array (or torch storage) gets the
    same device address in every launch of a process (multi-kernel sequences share cache lines)."""

    def __init__(self):
        self.next = 1 << 36
        self.by_ptr: dict[int, int] = {}

    def address(self, host_ptr: int, nbytes: int, owner=None) -> int:
        a = self.by_ptr.get(host_ptr)
        if a is None:
            a = self.next
            self.next += (nbytes + 4095) // 4096 * 4096 + 4096
            self.by_ptr[host_ptr] = a
            if owner is not None:
                try:
                    weakref.finalize(owner, self.by_ptr.pop, host_ptr, None)
                except TypeError:
                    pass
        return a


ADDRESSES = _AddressSpace()


class Buffer:
    """One argument's memory: ``flat`` is a 1-D view of the whole underlying allocation (storage dtype)."""

    __slots__ = ("flat", "dtype", "base_addr", "n", "name", "elem_bytes", "shadow", "reads", "__weakref__")

    def __init__(self, flat: np.ndarray, dt: dtype, base_addr: int, name: str):
        self.flat = flat
        self.dtype = dt
        self.base_addr = base_addr
        self.n = flat.shape[0]
        self.name = name
        self.elem_bytes = dt.itemsize
        self.shadow = None      # fp16/bf16: the whole buffer in float32 once it is re-read (saves conversions)
        self.reads = 0

    def take(self, idx: np.ndarray) -> np.ndarray:
        """Values at element indices ``idx`` (all in bounds), in the compute dtype."""
        dt = self.dtype
        if dt is float16 or dt is bfloat16:
            if self.shadow is None:
                self.reads += idx.size
                if self.reads > self.n + self.n // 2:          # re-read: convert the whole buffer once
                    self.shadow = to_compute(dt, self.flat)
                else:
                    return to_compute(dt, self.flat.take(idx))
            return self.shadow.take(idx)
        return self.flat.take(idx)

    def put(self, idx: np.ndarray, raw: np.ndarray):
        self.flat[idx] = raw
        if self.shadow is not None:
            self.shadow[idx] = to_compute(self.dtype, raw)


def numpy_root(arr: np.ndarray):
    """(1-D view of the whole allocation holding ``arr``, element offset of ``arr[0...]``, owner)."""
    if arr.flags.c_contiguous and not isinstance(arr.base, np.ndarray):
        return arr.reshape(-1), 0, arr
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    itemsize = arr.dtype.itemsize
    if not root.flags.c_contiguous:
        if arr.flags.c_contiguous:
            return arr.reshape(-1), 0, arr
        raise UnsupportedConstruct("a non-contiguous array whose underlying memory is not contiguous")
    raw = root.reshape(-1).view(np.uint8)
    byte_off = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if byte_off % itemsize:
        if arr.flags.c_contiguous:
            return arr.reshape(-1), 0, arr
        raise UnsupportedConstruct("a strided view not aligned to its element size")
    flat = raw[:raw.shape[0] // itemsize * itemsize].view(arr.dtype)
    return flat, byte_off // itemsize, root
