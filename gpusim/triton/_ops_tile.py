"""``tl`` ops that make and move tiles: program ids, creation (arange, full, zeros), data movement (join,
split, cat, flip, gather, histogram), compiler hints (multiple_of, max_contiguous, max_constancy) and barriers.

Functional semantics over all programs of a chunk at once (see ``_core``); each op reports itself to the
recorder, where it has a cost (``tl.arange``, ``program_id``, shuffles for ``gather``).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from . import _axisinfo as AI
from . import _core as C
from ._dtypes import unsupported_dtype
from ._core import cast, dtype, fail, int32, note_numel, round_to, tensor, to_tensor, unwrap, vshape
from ._ops_reduce import _norm_axis

#: Triton's limit on a tensor's elements (``triton.language.TRITON_MAX_TENSOR_NUMEL``)
TRITON_MAX_TENSOR_NUMEL = 1048576


# ---------------------------------------------------------------------------------------------------------
# programs
# ---------------------------------------------------------------------------------------------------------


def program_id(axis) -> tensor:
    axis = int(unwrap(axis))
    if axis not in (0, 1, 2):
        fail(CompileError, f"program_id axis must be 0, 1, or 2 but got {axis}")
    st = C.state()
    col = st.pids[:, axis]
    if st.grid[axis] == 1 or (col.size and col.min() == col.max() and st.P == 1):
        v = col[:1].copy()
    else:
        v = col
    out = tensor(v, int32, ())
    if st.rec is not None:
        out.ax = AI.pessimistic(1)
        st.rec.alu(out, (), "s2r")
    return out


def num_programs(axis) -> tensor:
    axis = int(unwrap(axis))
    if axis not in (0, 1, 2):
        fail(CompileError, f"num_programs axis must be 0, 1, or 2 but got {axis}")
    st = C.state()
    out = tensor(np.array([st.grid[axis]], np.int32), int32, ())
    if st.rec is not None:
        out.ax = AI.pessimistic(1)
    return out


# ---------------------------------------------------------------------------------------------------------
# creation
# ---------------------------------------------------------------------------------------------------------

def _is_pow2(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def check_shape(shape, what="shape"):
    for s in shape:
        if isinstance(unwrap(s), tensor):
            fail(CompileError, f"{what}: each dimension must be a tl.constexpr int, not a runtime value")
    shape = tuple(int(unwrap(s)) for s in shape)
    for s in shape:
        if not _is_pow2(s):
            fail(CompileError, f"{what} {list(shape)}: each dimension must be a power of 2 (got {s})")
    check_numel(math.prod(shape))
    return shape


def check_numel(n: int):
    if n > TRITON_MAX_TENSOR_NUMEL:
        fail(CompileError, f"numel ({n}) exceeds triton maximum tensor numel ({TRITON_MAX_TENSOR_NUMEL})")


def arange(start, end) -> tensor:
    start, end = unwrap(start), unwrap(end)
    if isinstance(start, tensor) or isinstance(end, tensor):
        fail(CompileError, "arange's arguments must be of type tl.constexpr")
    start, end = int(start), int(end)
    if end <= start:
        fail(CompileError, f"arange's end argument must be greater than the start argument (got {start}, {end})")
    n = end - start
    if not _is_pow2(n):
        fail(CompileError, f"arange's range must be a power of 2 (got arange({start}, {end}) of length {n})")
    if start < -2 ** 31 or end > 2 ** 31:
        fail(CompileError, "arange must fit in int32")
    check_numel(n)
    out = tensor(np.arange(start, end, dtype=np.int32)[None, :], int32, (n,))
    note_numel((n,))
    st = C.ST
    if st is not None and st.rec is not None:
        out.ax = AI.make_range(start, end)
        st.rec.alu(out, (), "arange")
    return out


def full(shape, value, dt: dtype) -> tensor:
    shape = check_shape(shape if isinstance(unwrap(shape), (list, tuple)) else [shape])
    value = unwrap(value)
    dt = unwrap(dt)
    if isinstance(dt, unsupported_dtype):
        fail(UnsupportedConstruct, dt.why())
    if isinstance(value, tensor):
        if value.shape:
            fail(CompileError, "tl.full's value must be a scalar")
        sv = cast(value, dt)
        v = np.broadcast_to(sv.v.reshape((-1,) + (1,) * len(shape)), (sv.v.shape[0],) + shape)
        out = tensor(v, dt, shape)
        ax = None
    else:
        if dt.is_floating():
            arr = round_to(dt, np.array([value], np.float32 if dt.np == np.float32 else dt.np))
        else:
            arr = np.array([value]).astype(dt.np)
        v = np.broadcast_to(arr.reshape((1,) + (1,) * len(shape)), (1,) + shape)
        out = tensor(v, dt, shape)
        ax = AI.constant(int(value), shape) if dt.is_int() else None
    note_numel(shape)
    st = C.ST
    if st is not None and st.rec is not None:
        out.ax = ax
        st.rec.alu(out, (), "full")
    return out


def zeros(shape, dt) -> tensor:
    return full(shape, 0, unwrap(dt))


def zeros_like(x):
    x = to_tensor(unwrap(x))
    return zeros(x.shape, x.dtype)


# ---------------------------------------------------------------------------------------------------------
# data movement
# ---------------------------------------------------------------------------------------------------------

def ravel(x, can_reorder=False):
    x = to_tensor(unwrap(x))
    return C.reshape(x, [x.numel])


def flip(x, dim=None):
    x = to_tensor(unwrap(x))
    d = len(x.shape) - 1 if unwrap(dim) is None else int(unwrap(dim))
    out = tensor(np.flip(x.v, d + 1), x.dtype, x.shape)
    return out


def join(a, b):
    a, b = to_tensor(unwrap(a)), to_tensor(unwrap(b))
    shape = C.broadcast_shapes(a.shape, b.shape)
    va = np.broadcast_to(vshape(a, shape), (max(a.v.shape[0], b.v.shape[0]),) + shape)
    vb = np.broadcast_to(vshape(b, shape), va.shape)
    ct = a.dtype
    out = tensor(np.stack([va, vb.astype(va.dtype)], axis=-1), ct, shape + (2,))
    st = C.ST
    if st.rec is not None:
        st.rec.alu(out, (a, b), "mov")
    return out


def split(a):
    a = to_tensor(unwrap(a))
    if not a.shape or a.shape[-1] != 2:
        fail(CompileError, "tl.split: the last dimension must be 2")
    s = a.shape[:-1]
    return tensor(a.v[..., 0], a.dtype, s), tensor(a.v[..., 1], a.dtype, s)


def interleave(a, b):
    j = join(a, b)
    return C.reshape(j, list(j.shape[:-2]) + [j.shape[-2] * 2])


def cat(a, b, can_reorder=False):
    a, b = to_tensor(unwrap(a)), to_tensor(unwrap(b))
    if a.shape[1:] != b.shape[1:]:
        fail(CompileError, "tl.cat: shapes differ beyond the first dimension")
    P0 = max(a.v.shape[0], b.v.shape[0])
    va = np.broadcast_to(a.v, (P0,) + a.shape)
    vb = np.broadcast_to(b.v, (P0,) + b.shape)
    out = tensor(np.concatenate([va, vb], axis=1), a.dtype, (a.shape[0] + b.shape[0],) + a.shape[1:])
    return out


def gather_op(src, index, axis):
    src, index = to_tensor(unwrap(src)), to_tensor(unwrap(index))
    axis = _norm_axis(src, axis)
    P0 = max(src.v.shape[0], index.v.shape[0])
    sv = np.broadcast_to(src.v, (P0,) + src.shape)
    iv = np.broadcast_to(index.v, (P0,) + index.shape).astype(np.int64)
    out = tensor(np.take_along_axis(sv, iv, axis=axis + 1), src.dtype, index.shape)
    st = C.ST
    if st.rec is not None:
        st.rec.alu(out, (src, index), "shfl")
    return out


def histogram(x, num_bins, mask=None):
    x = to_tensor(unwrap(x))
    nb = int(unwrap(num_bins))
    v = x.v.reshape(x.v.shape[0], -1).astype(np.int64)
    keep = None
    if mask is not None:                     # only the elements under the mask are counted
        m = vshape(to_tensor(unwrap(mask)), x.shape).reshape(-1, v.shape[1])
        n_p = max(v.shape[0], m.shape[0])
        v = np.broadcast_to(v, (n_p, v.shape[1]))
        keep = np.broadcast_to(m, (n_p, v.shape[1]))
    res = np.zeros((v.shape[0], nb), np.int32)
    for p in range(v.shape[0]):
        ok = (v[p] >= 0) & (v[p] < nb)
        if keep is not None:
            ok &= keep[p].astype(bool)
        res[p] = np.bincount(v[p][ok], minlength=nb)[:nb]
    return tensor(res, int32, (nb,))


# ---------------------------------------------------------------------------------------------------------
# compiler hints
# ---------------------------------------------------------------------------------------------------------

def _hint(x, values, what):
    x = to_tensor(unwrap(x))
    values = unwrap(values)
    if isinstance(values, (list, tuple)):
        vals = [int(unwrap(v)) for v in values]
    else:
        vals = [int(values)]
    if len(vals) != (1 if not x.shape else len(x.shape)) and not (len(vals) == 1 and len(x.shape) <= 1):
        fail(CompileError, f"Shape of input to {what} does not match the length of values")
    out = tensor(x.v, x.dtype, x.shape)
    out.buf, out.lay, out.src, out.lsrc, out.dsrc = x.buf, x.lay, x.src, x.lsrc, x.dsrc
    st = C.ST
    if st is not None and st.rec is not None:
        key = {"multiple_of": "div", "max_contiguous": "contig", "max_constancy": "const"}[what]
        out.ax = AI.with_hint(x.ax, max(1, len(x.shape)), **{key: vals if len(vals) > 1 else vals[0]})
        st.rec.view(out, x, "id", None)
    return out


def multiple_of(x, values):
    return _hint(x, values, "multiple_of")


def max_contiguous(x, values):
    return _hint(x, values, "max_contiguous")


def max_constancy(x, values):
    return _hint(x, values, "max_constancy")


def debug_barrier():
    st = C.state()
    if st.rec is not None:
        st.rec.barrier()


#: what map_elementwise needs from the launcher (its helper-function wrapper ``Helper`` and ``rebind``), set by
#: ``_kernels`` when it is imported (the launcher sits above the ops: they may not import it)
LAUNCHER: dict = {}


def map_elementwise(scalar_fn, *args, pack=1, _semantic=None, _generator=None):
    """``tl.map_elementwise(scalar_fn, *args, pack=1)``: ``scalar_fn`` (a JIT function) applied to each element of
    the broadcast ``args`` (``pack`` consecutive elements per call), its control flow per element as Triton
    compiles it into the map's region.  Run here with every element of every program as a program of its own;
    the mapped function's instructions are not lowered one by one (each result costs one ALU op per element)."""
    from ._state import IGNORED_CALLS, State
    _Helper, _rebind = LAUNCHER["Helper"], LAUNCHER["rebind"]
    pack = int(C.unwrap(pack))
    if pack < 1:
        C.fail(C.CompileError, f"tl.map_elementwise: pack must be at least 1, not {pack}")
    xs = [C.to_tensor(C.unwrap(a)) for a in args]
    if not xs:
        C.fail(C.CompileError, "tl.map_elementwise needs at least one tensor argument")
    shape = C.broadcast_many(x.shape for x in xs)
    st = C.state()
    P = st.P
    n = int(np.prod(shape)) if shape else 1
    if n % pack:
        C.fail(C.CompileError, f"tl.map_elementwise: {n} elements are not a multiple of pack={pack}")
    g = n // pack
    fn = _rebind(scalar_fn)
    if not callable(fn):
        C.fail(C.CompileError, f"tl.map_elementwise: {scalar_fn!r} is not a function")
    if not isinstance(fn, _Helper) and hasattr(fn, "fn"):
        fn = _Helper(fn.fn)
    # one program per (program, group of pack elements); argument j of a call: element j of its group
    vals = [np.broadcast_to(C.vshape(x, shape), (P,) + tuple(shape)).reshape(P, g, pack) for x in xs]
    inner_args = [C.tensor(np.ascontiguousarray(v[:, :, j]).reshape(P * g), x.dtype, ())
                  for x, v in zip(xs, vals) for j in range(pack)]
    inner = State(pids=np.repeat(st.pids, g, axis=0), grid=st.grid, num_warps=st.num_warps,
                  num_stages=st.num_stages, kernel_name=st.kernel_name, rec=None, probe=st.probe,
                  buffers=st.buffers, first_program=st.first_program)
    a = st.active()
    if a is not None:
        inner.push(np.repeat(a, g))
    prev = C.ST
    C.ST = inner
    try:
        res = fn(*inner_args)
    finally:
        C.ST = prev
    single = not isinstance(res, tuple)
    res = (res,) if single else tuple(res)
    if len(res) % pack:
        C.fail(C.CompileError, f"tl.map_elementwise: {scalar_fn.__name__} returned {len(res)} values, not a "
                               f"multiple of pack={pack}")
    outs = []
    for i in range(len(res) // pack):
        parts = [C.to_tensor(C.unwrap(r)) for r in res[i * pack:(i + 1) * pack]]
        dt = parts[0].dtype
        v = np.empty((P, g, pack), dt.np)
        for j, r in enumerate(parts):
            if r.shape:
                C.fail(C.CompileError, f"tl.map_elementwise: {scalar_fn.__name__} must return scalars, not a tensor "
                                       f"of shape {list(r.shape)}")
            v[:, :, j] = np.broadcast_to(r.v.astype(dt.np, copy=False), (P * g,)).reshape(P, g)
        out = C.tensor(v.reshape((P,) + tuple(shape)), dt, shape)
        if st.rec is not None:
            st.rec.alu(out, tuple(xs), "add")
        outs.append(out)
    IGNORED_CALLS.add("tl.map_elementwise: the mapped function runs per element; its instructions are costed as one "
                      "ALU op per element and result, not lowered one by one")
    return outs[0] if single else tuple(outs)
