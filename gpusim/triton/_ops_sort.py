"""Functional semantics of ``tl.sort``, ``tl.topk`` and ``tl.bitonic_merge``: the bitonic network Triton's standard
library builds from compare-and-swap rounds along the last dimension, run on numpy over all programs at once.

The network is run exactly (not ``np.sort``): ``bitonic_merge`` of an input that is not bitonic, ties between
``-0.0`` and ``0.0`` and NaNs come out as on the GPU.  Each op reports its steps to the recorder
(``_lower_reduce.ReduceLowering.network``), which costs them by where the partner element lives (another lane,
another warp, the same thread).
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from . import _core as C
from ._core import fail, tensor, to_tensor, unwrap


def _log2_exact(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        fail(CompileError, f"{what} must be a power of 2, got {n}")
    return n.bit_length() - 1


def _last_dim(x: tensor, dim) -> int:
    dim = unwrap(dim)
    last = len(x.shape) - 1
    if last < 0:
        fail(CompileError, "cannot sort a scalar")
    if dim is not None and int(dim) not in (last, -1):
        fail(CompileError, f"only minor dimension is currently supported (dim={dim} of a {len(x.shape)}-d tensor)")
    return last


def _round(v: np.ndarray, j: int, flip) -> np.ndarray:
    """One compare-and-swap round over the last axis of ``v``: element i meets element i ^ 2**j; the left one of
    the pair keeps the smaller value unless ``flip`` (a bool, or a bool per position) asks for descending."""
    n = v.shape[-1]
    idx = np.arange(n)
    y = v[..., idx ^ (1 << j)]
    right = ((idx >> j) & 1).astype(bool)
    with np.errstate(invalid="ignore"):
        return np.where((v > y) != (flip ^ right), y, v)


def _merge(v: np.ndarray, stage: int, order) -> np.ndarray:
    """``stage`` rounds (partners 2**(stage-1) apart down to 1); ``order``: False ascending, True descending,
    None alternating by bit ``stage`` of the position (the blocks of a sort's inner stages)."""
    flip = ((np.arange(v.shape[-1]) >> stage) & 1).astype(bool) if order is None else bool(order)
    for j in range(stage - 1, -1, -1):
        v = _round(v, j, flip)
    return v


def _network(x: tensor, k: int | None, descending: bool) -> tuple[np.ndarray, list]:
    """Sorted (or top-``k``) values along the last dimension, and the steps for the lowering: ``("cas", j)`` a
    compare-and-swap round with the partner 2**j apart, ``("max", j)`` / ``("min", j)`` the top-k halving that
    removes bit j (bits of the position in the tensor as it is at that step)."""
    n = x.shape[-1]
    log_n = _log2_exact(n, "the sorted dimension")
    log_k = log_n if k is None else _log2_exact(k, "k")
    if log_k > log_n:
        fail(CompileError, f"k ({k}) is larger than the dimension ({n})")
    v = x.v
    rounds = []
    for s in range(1, log_k + 1):
        v = _merge(v, s, None if s < log_n else descending)
        rounds += [("cas", j) for j in range(s - 1, -1, -1)]
    width = n
    for i in range(log_k + 1, log_n + 1):
        # bitonic top-k: blocks 2m and 2m+1 (sorted in opposite orders) keep their element-wise max (min)
        pairs = v.reshape(v.shape[:-1] + (width // (2 << log_k), 2, 1 << log_k))
        with np.errstate(invalid="ignore"):
            v = (pairs.max(axis=-2) if descending else pairs.min(axis=-2)).reshape(v.shape[:-1] + (width // 2,))
        rounds.append(("max" if descending else "min", log_k))
        width //= 2
        v = _merge(v, log_k, None if i < log_n else descending)
        rounds += [("cas", j) for j in range(log_k - 1, -1, -1)]
    return v, rounds


def _finish(x: tensor, v: np.ndarray, shape, rounds) -> tensor:
    out = tensor(np.ascontiguousarray(v), x.dtype, list(shape))
    st = C.ST
    if st.rec is not None:
        st.rec.network(out, x, rounds)
    return out


def sort(x, dim=None, descending=False):
    x = to_tensor(unwrap(x))
    _last_dim(x, dim)
    v, rounds = _network(x, None, bool(unwrap(descending)))
    return _finish(x, v, x.shape, rounds)


def topk(x, k, dim=None):
    """The ``k`` largest values along the last dimension, in descending order (``k`` a power of 2)."""
    x = to_tensor(unwrap(x))
    _last_dim(x, dim)
    k = int(unwrap(k))
    v, rounds = _network(x, k, True)
    return _finish(x, v, list(x.shape[:-1]) + [k], rounds)


def bitonic_merge(x, dim=None, descending=False):
    """The last ``log2(n)`` rounds of a bitonic sort: sorts a bitonic sequence along the last dimension."""
    x = to_tensor(unwrap(x))
    _last_dim(x, dim)
    log_n = _log2_exact(x.shape[-1], "the merged dimension")
    v = _merge(x.v, log_n, bool(unwrap(descending)))
    return _finish(x, v, x.shape, [("cas", j) for j in range(log_n - 1, -1, -1)])
