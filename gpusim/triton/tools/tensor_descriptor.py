"""``TensorDescriptor``: the host-side tensor descriptor of ``triton.tools.tensor_descriptor``, over numpy arrays.

``TensorDescriptor(base, shape, strides, block_shape, padding="zero")`` / ``TensorDescriptor.from_tensor(t,
block_shape)`` describe a strided view of ``base`` (a numpy array or CPU torch tensor; shape and strides in
elements, the last stride 1) that a kernel loads and stores in ``block_shape`` boxes (Hopper's TMA).  Passed to
a gpusim kernel it becomes the device descriptor of ``tl.make_tensor_descriptor``.  The checks are Triton's
(16-byte aligned base and leading strides, at least 16 bytes in the last block dimension, rank 1..5).

When Triton is already imported, the class is a subclass of Triton's own ``TensorDescriptor``, so the same object
also passes Triton's ``isinstance`` checks (its interpreter, or a real GPU with a torch base).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, List

import numpy as np


def _triton_base():
    if "triton" not in sys.modules:        # never import Triton here: it fixes its interpreter mode for the process
        return object
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor as T
        return T
    except Exception:                      # pragma: no cover - an old or broken Triton
        return object


def _itemsize(base) -> int:
    dt = base.dtype
    it = getattr(dt, "itemsize", None)
    if it is None:                         # torch dtypes
        it = base.element_size()
    return int(it)


def _data_ptr(base) -> int:
    if isinstance(base, np.ndarray):
        return int(base.__array_interface__["data"][0])
    return int(base.data_ptr())


@dataclass
class TensorDescriptor(_triton_base()):
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        self.shape = [int(s) for s in self.shape]
        self.strides = [int(s) for s in self.strides]
        self.block_shape = [int(b) for b in self.block_shape]
        rank = len(self.shape)
        assert len(self.strides) == rank, f"rank mismatch: {self}"
        assert len(self.block_shape) == rank, f"rank mismatch: {self}"
        assert rank > 0, "rank must not be zero"
        assert rank <= 5, "rank cannot be more than 5"
        assert _data_ptr(self.base) % 16 == 0, "base must be 16-byte aligned"
        for b in self.block_shape:
            assert b > 0 and b & (b - 1) == 0, f"block shape must be powers of two: {self.block_shape}"
        elem_bytes = _itemsize(self.base)
        for stride in self.strides[:-1]:
            assert (stride * elem_bytes) % 16 == 0, "strides must be 16-byte aligned"
        for shape_dim in self.shape:
            assert shape_dim > 0, "shape must be positive"
        assert self.strides[-1] == 1, "Last dimension must be contiguous"
        assert self.padding in ("zero", "nan"), "Illegal value for padding"

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding="zero"):
        if isinstance(tensor, np.ndarray):
            strides = [s // tensor.itemsize for s in tensor.strides]
        else:
            strides = list(tensor.stride())
        return TensorDescriptor(tensor, list(tensor.shape), strides, block_shape, padding)
