"""Functional semantics of ``tl`` reductions and scans (sum, max/min with indices, xor_sum, reduce_or, generic
``tl.reduce`` with a combine function, cumsum / cumprod), over all programs at once; each reports itself to
the recorder (``_lower_reduce``).
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from . import _core as C
from ._core import bfloat16, cast, fail, float32, int32, tensor, to_tensor, unwrap


# ---------------------------------------------------------------------------------------------------------
# reductions and scans
# ---------------------------------------------------------------------------------------------------------

def _norm_axis(x: tensor, axis):
    axis = unwrap(axis)
    r = len(x.shape)
    if axis is None:
        return None
    axis = int(axis)
    if axis < 0:
        axis += r
    if not 0 <= axis < max(r, 1):
        fail(CompileError, f"reduction axis {axis} out of range for a tensor of shape {list(x.shape)}")
    return axis


def _reduce_prep(x, axis):
    x = to_tensor(unwrap(x))
    axis = _norm_axis(x, axis)
    if axis is None:
        if len(x.shape) > 1:
            x = C.reshape(x, [x.numel])
        axis = 0
    if not x.shape:
        fail(CompileError, "cannot reduce a scalar")
    return x, axis


def _reduce_finish(x: tensor, axis: int, v: np.ndarray, dt, keep_dims, kind) -> tensor:
    shape = list(x.shape)
    if keep_dims:
        shape[axis] = 1
        v = np.expand_dims(v, axis + 1)
    else:
        del shape[axis]
    if dt in C.ROUNDED:
        v = C.round_to(dt, v.astype(np.float32))
    elif dt.np is not None and v.dtype != dt.np:
        v = v.astype(dt.np)
    out = tensor(v, dt, shape)
    st = C.ST
    if st.rec is not None:
        C._prov1(out, x, keep_load=False)
        st.rec.reduce(out, x, axis, kind)
    return out


def reduce_sum(input, axis=None, keep_dims=False, dtype=None):
    x, axis = _reduce_prep(input, axis)
    dtype = unwrap(dtype)
    dt = x.dtype
    if dtype is not None:
        x = cast(x, dtype)
        dt = dtype
    elif dt.is_int() and dt.primitive_bitwidth < 32:
        dt = int32 if dt.is_int_signed() or dt is C.int1 else C.uint32
        x = cast(x, dt)
    with np.errstate(all="ignore"):
        v = x.v.sum(axis=axis + 1, dtype=dt.np if dt.np is not None else None)
    return _reduce_finish(x, axis, v, dt, unwrap(keep_dims), "add")


def _minmax(input, axis, return_indices, tie_break_left, keep_dims, is_max):
    x, axis = _reduce_prep(input, axis)
    if x.dtype is bfloat16:
        x = cast(x, float32)
    if x.dtype.primitive_bitwidth < 32:
        x = cast(x, float32 if x.dtype.is_floating() else int32)
    keep_dims = unwrap(keep_dims)
    v = x.v
    if x.dtype.is_floating():
        red = (np.fmax if is_max else np.fmin).reduce(v, axis=axis + 1)
    else:
        red = v.max(axis=axis + 1) if is_max else v.min(axis=axis + 1)
    vals = _reduce_finish(x, axis, red, x.dtype, keep_dims, "max" if is_max else "min")
    if not unwrap(return_indices):
        return vals
    idx = (np.argmax if is_max else np.argmin)(np.nan_to_num(v, nan=-np.inf if is_max else np.inf)
                                                if x.dtype.is_floating() else v, axis=axis + 1).astype(np.int32)
    ind = _reduce_finish(x, axis, idx, int32, keep_dims, "argmax")
    return vals, ind


def reduce_max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, return_indices, return_indices_tie_break_left, keep_dims, True)


def reduce_min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, return_indices, return_indices_tie_break_left, keep_dims, False)


def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, True, tie_break_left, keep_dims, True)[1]


def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return _minmax(input, axis, True, tie_break_left, keep_dims, False)[1]


def xor_sum(input, axis=None, keep_dims=False):
    x, axis = _reduce_prep(input, axis)
    if not x.dtype.is_int():
        fail(CompileError, "xor_sum only supported for integers")
    return _reduce_finish(x, axis, np.bitwise_xor.reduce(x.v, axis=axis + 1), x.dtype, unwrap(keep_dims), "xor")


def reduce_or(input, axis, keep_dims=False):
    x, axis = _reduce_prep(input, axis)
    return _reduce_finish(x, axis, np.bitwise_or.reduce(x.v, axis=axis + 1), x.dtype, unwrap(keep_dims), "or")


def reduce(input, axis, combine_fn, keep_dims=False):
    """Generic reduction with a user combine function: a tree of combine calls on halves (power-of-2 sizes)."""
    single = isinstance(unwrap(input), tensor)
    xs = [to_tensor(unwrap(input))] if single else [to_tensor(unwrap(t)) for t in input]
    axis = unwrap(axis)
    if axis is None:
        xs = [C.reshape(x, [x.numel]) for x in xs]
        axis = 0
    axis = _norm_axis(xs[0], axis)
    st = C.ST
    rec, st.rec = st.rec, None
    try:
        cur = xs
        while cur[0].shape[axis] > 1:
            h = cur[0].shape[axis] // 2
            lo = [_slice(t, axis, 0, h) for t in cur]
            hi = [_slice(t, axis, h, 2 * h) for t in cur]
            r = combine_fn(*lo, *hi)
            cur = [r] if isinstance(unwrap(r), tensor) else [unwrap(t) for t in r]
            cur = [to_tensor(t) for t in cur]
    finally:
        st.rec = rec
    outs = []
    for t, x in zip(cur, xs):
        v = t.v.reshape(t.v.shape[:axis + 1] + t.v.shape[axis + 2:])
        outs.append(_reduce_finish(x, axis, v, t.dtype, unwrap(keep_dims), "custom"))
    return outs[0] if single else tuple(outs)


def _slice(t: tensor, axis: int, lo: int, hi: int) -> tensor:
    sl = [slice(None)] * (len(t.shape) + 1)
    sl[axis + 1] = slice(lo, hi)
    shape = list(t.shape)
    shape[axis] = hi - lo
    return tensor(t.v[tuple(sl)], t.dtype, shape)


def _scan(input, axis, reverse, f, dtype, kind):
    x = to_tensor(unwrap(input))
    axis = _norm_axis(x, axis)
    dtype = unwrap(dtype)
    dt = dtype or x.dtype
    if dtype is None and dt.is_int() and dt.primitive_bitwidth < 32:
        dt = int32
    if dt != x.dtype:
        x = cast(x, dt)
    v = x.v
    if unwrap(reverse):
        v = np.flip(v, axis + 1)
    with np.errstate(all="ignore"):
        r = f(v, axis=axis + 1, dtype=dt.np)
    if unwrap(reverse):
        r = np.flip(r, axis + 1)
    if dt in C.ROUNDED:
        r = C.round_to(dt, r)
    out = tensor(np.ascontiguousarray(r), dt, x.shape)
    st = C.ST
    if st.rec is not None:
        st.rec.reduce(out, x, axis, kind, scan=True)
    return out


def cumsum(input, axis=0, reverse=False, dtype=None):
    return _scan(input, axis, reverse, np.cumsum, dtype, "add")


def cumprod(input, axis=0, reverse=False, dtype=None):
    return _scan(input, axis, reverse, np.cumprod, dtype, "mul")


def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive scan with a user combine function (a ``@triton.jit`` function of 2n tensors returning n): element
    i gets combine(...combine(x[0], x[1])..., x[i]).  Evaluated as a log-depth tree over the axis (Hillis-Steele:
    x[i] = combine(x[i - d], x[i]) for d = 1, 2, 4 ...), which equals the GPU's order for an associative function;
    ``reverse`` scans from the end."""
    single = isinstance(unwrap(input), tensor)
    xs = [to_tensor(unwrap(input))] if single else [to_tensor(unwrap(t)) for t in input]
    if not xs or any(x.shape != xs[0].shape for x in xs):
        fail(CompileError, "associative_scan's inputs must be tensors of one shape")
    axis = _norm_axis(xs[0], axis)
    if axis is None or not xs[0].shape:
        fail(CompileError, "associative_scan needs an axis of a tensor")
    rev = bool(unwrap(reverse))
    ax = axis + 1                                     # the programs' dimension comes first in ``.v``
    cur = [tensor(np.flip(x.v, ax) if rev else x.v, x.dtype, list(x.shape)) for x in xs]
    n = xs[0].shape[axis]
    st = C.ST
    rec, st.rec = st.rec, None
    try:
        d = 1
        while d < n:
            lo = [_slice(t, axis, 0, n - d) for t in cur]
            hi = [_slice(t, axis, d, n) for t in cur]
            r = combine_fn(*lo, *hi)
            rs = [to_tensor(unwrap(r))] if isinstance(unwrap(r), tensor) else [to_tensor(unwrap(t)) for t in r]
            if len(rs) != len(cur):
                fail(CompileError, f"associative_scan's combine_fn returned {len(rs)} values for {len(cur)} inputs")
            nxt = []
            for t, y in zip(cur, rs):
                head = _slice(t if t.dtype == y.dtype else cast(t, y.dtype), axis, 0, d)
                P = max(head.v.shape[0], y.v.shape[0])
                hv = np.broadcast_to(head.v, (P,) + tuple(head.shape))
                yv = np.broadcast_to(y.v, (P,) + tuple(hi[0].shape))
                nxt.append(tensor(np.concatenate([hv, yv], axis=ax), y.dtype, list(t.shape)))
            cur = nxt
            d *= 2
    finally:
        st.rec = rec
    outs = []
    for t, x in zip(cur, xs):
        out = tensor(np.ascontiguousarray(np.flip(t.v, ax) if rev else t.v), t.dtype, list(x.shape))
        if st.rec is not None:
            st.rec.reduce(out, x, axis, "combine", scan=True)     # per output: one instruction per combine
        outs.append(out)
    return outs[0] if single else tuple(outs)
