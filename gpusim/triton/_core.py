"""Tile values of many program instances at once: the ``tensor`` and the ops its operators and methods are.

Every ``tl`` tensor a kernel builds is a ``tensor`` whose ``v`` is a numpy array with a leading *program* axis:
``v.shape == (Pn, *shape)`` where ``Pn`` is 1 for values all programs share (``tl.arange``, constexpr
arithmetic, scalar arguments) and ``P`` (the programs of the chunk being executed) otherwise.  numpy
broadcasting then runs every program of the chunk in one array operation.  Pointer tensors hold int64 *element
offsets* into a ``Buffer`` (one kernel argument's memory), with a fake device address for the lowering.

Here, kept together because the tensor's operators and methods call them: ``ST`` (the ``State`` executing),
operand conversion and promotion, binary / unary ops, views (expand_dims, broadcast_to, reshape, permute),
casts (the int64 -> pointer casts of pointer tables included: ``cast`` dispatches to them and they build
tensors over the executing ``State``'s buffers), branch conditions.  Why one module of ~800 lines: each of these
reads ``ST`` and builds ``tensor``s, and ``tensor``'s dunder methods call them back; split out, each part would
import this module and this module would import it (a cycle), or need them injected at import time.  Below:
``_dtypes`` (re-exported: ops read ``C.int32``), ``_state``, ``_buffers``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from . import _axisinfo as AI
from ._buffers import Buffer
from ._dtypes import (ALL_DTYPES, ROUNDED, _dispatch_binop, bfloat16, block_type, constexpr, dtype, dtype_of_numpy,
                      float16, float32, float64, int1, int8, int16, int32, int64, pointer_type, round_tf32, round_to,
                      scalar_of,
                      to_compute, to_storage, uint8, uint16, uint32, uint64, unsupported_dtype, unwrap)
from ._state import State, user_line, user_site

# ---------------------------------------------------------------------------------------------------------
# execution state
# ---------------------------------------------------------------------------------------------------------

ST: State | None = None


def state() -> State:
    if ST is None:
        raise UnsupportedConstruct("triton.language functions can only be called inside a kernel launch")
    return ST


def fail(cls, msg: str, program=None):
    file, line = user_line()
    kname = ST.kernel_name if ST is not None else ""
    raise cls(msg, file=file, line=line, kernel=kname, program=program)


# ---------------------------------------------------------------------------------------------------------
# the tensor
# ---------------------------------------------------------------------------------------------------------

_METHODS: dict = {}      # tl functions usable as tensor methods: ``language``'s namespace (see register_methods)


def register_methods(namespace: dict):
    """``language`` hands over its module namespace (the live dict) when it is imported: its functions are the
    tensor's methods (x.sum(0), x.exp() ...).  (It imports this module, so this module cannot import it.)"""
    global _METHODS
    _METHODS = namespace


class tensor:
    """A tile value (or a per-program scalar) of every program of the chunk."""

    __slots__ = ("v", "dtype", "shape", "ax", "lay", "src", "buf", "lsrc", "dsrc", "aff", "bk", "shift",
                 "__weakref__")

    def __init__(self, v: np.ndarray, dt: dtype, shape=(), ax=None):
        self.v = v
        self.dtype = dt
        self.shape = tuple(shape)
        self.ax = ax
        self.lay = None          # lowering: layout
        self.src = None          # lowering: producing op (for dependencies)
        self.buf = None          # pointers: the Buffer
        self.lsrc = None         # provenance: load site this value is (a cast/view of)
        self.dsrc = None         # provenance: dot sites this value derives from
        self.aff = None          # lowering: per dim, is the value affine with a compile-time step there
        self.bk = None           # lowering, probe only: (kind, site, inputs, extra) of the producing tile op
        self.shift = None        # pointers: (v of the pointer tile this one is, plus a scalar, elements)

    # ---- Triton's tensor surface -------------------------------------------------------------------
    @property
    def type(self):
        return block_type(self.dtype, self.shape) if self.shape else self.dtype

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def T(self):
        return trans(self)

    def __repr__(self):
        return f"tensor(shape={list(self.shape)}, dtype={self.dtype!r}, programs={self.v.shape[0]})"

    def __bool__(self):
        b = cond_value(self)
        if isinstance(b, bool):
            return b
        fail(UnsupportedConstruct, "a value that differs between programs is used as a Python bool (in `and`/`or`"
             " or a comparison chain); use & | or tl.where")

    def __index__(self):
        if self.shape == () and self.dtype.is_int() and self.v.shape[0] == 1:
            return int(self.v[0])
        fail(CompileError, "a tensor cannot be used where a constexpr integer is expected")

    __int__ = __index__

    def __float__(self):
        if self.shape == () and self.v.shape[0] == 1:
            return float(self.v[0])
        fail(CompileError, "a tensor cannot be used where a constexpr is expected")

    def __iter__(self):
        fail(UnsupportedConstruct, "iterating over a tensor is not supported")

    def __hash__(self):
        return id(self)

    # arithmetic
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("truediv", self, o)
    def __rtruediv__(self, o): return binary("truediv", o, self)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("mod", self, o)
    def __rmod__(self, o): return binary("mod", o, self)
    def __and__(self, o): return binary("and", self, o)
    def __rand__(self, o): return binary("and", o, self)
    def __or__(self, o): return binary("or", self, o)
    def __ror__(self, o): return binary("or", o, self)
    def __xor__(self, o): return binary("xor", self, o)
    def __rxor__(self, o): return binary("xor", o, self)
    def __lshift__(self, o): return binary("shl", self, o)
    def __rlshift__(self, o): return binary("shl", o, self)
    def __rshift__(self, o): return binary("shr", self, o)
    def __rrshift__(self, o): return binary("shr", o, self)
    def __lt__(self, o): return binary("lt", self, o)
    def __le__(self, o): return binary("le", self, o)
    def __gt__(self, o): return binary("gt", self, o)
    def __ge__(self, o): return binary("ge", self, o)
    def __eq__(self, o): return binary("eq", self, o)
    def __ne__(self, o): return binary("ne", self, o)
    def __pow__(self, o): fail(UnsupportedConstruct, "`**` on tensors is not supported by Triton")

    def __neg__(self):
        if self.dtype.is_ptr():
            fail(CompileError, "wrong type argument to unary minus (pointer)")
        return binary("sub", _zero_like_scalar(self.dtype), self)

    def __pos__(self):
        return self

    def __invert__(self):
        if self.dtype.is_floating() or self.dtype.is_ptr():
            fail(CompileError, f"wrong type argument to unary invert ({self.dtype})")
        return unary_np(self, np.invert, "LOP3")

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        out = self
        d = 0
        for it in idx:
            it = unwrap(it)
            if it is None:
                out = expand_dims(out, d)
                d += 1
            elif isinstance(it, slice) and it == slice(None, None, None):
                d += 1
            else:
                fail(UnsupportedConstruct, f"unsupported tensor index {it!r}: only None and ':' are allowed")
        return out

    # methods Triton attaches to tensors
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype, bitcast=bitcast, fp_downcast_rounding=fp_downcast_rounding)

    def reshape(self, *shape, can_reorder=False):
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (list, tuple)):
            shape = unwrap(shape[0])
        return reshape(self, shape)

    def view(self, *shape):
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (list, tuple)):
            shape = unwrap(shape[0])
        return reshape(self, shape)

    def trans(self, *dims):
        return trans(self, *dims)

    def permute(self, *dims):
        return permute(self, *dims)

    def broadcast_to(self, *shape):
        if len(shape) == 1 and isinstance(unwrap(shape[0]), (list, tuple)):
            shape = unwrap(shape[0])
        return broadcast_to(self, shape)

    def expand_dims(self, axis):
        return expand_dims(self, axis)

    def item(self):
        """A one-element tensor as a scalar (Triton's ``tensor.item()``: an unsplat)."""
        if self.numel != 1:
            fail(CompileError, f"item(): the tensor of shape {list(self.shape)} has {self.numel} elements, not one")
        return reshape(self, ())

    def __getattr__(self, name):
        # tl functions usable as methods: x.sum(0), x.exp(), x.max(axis=1) ... (see ``register_methods``)
        f = _METHODS.get(name)
        if f is None or not callable(f) or name.startswith("_") or isinstance(f, type):
            raise AttributeError(name)
        return lambda *a, **k: f(self, *a, **k)


def _zero_like_scalar(dt):
    return tensor(np.zeros(1, dt.np), dt, ())


# ---------------------------------------------------------------------------------------------------------
# conversion of operands
# ---------------------------------------------------------------------------------------------------------

def scalar_dtype(x) -> dtype:
    if isinstance(x, bool) or isinstance(x, np.bool_):
        return int1
    if isinstance(x, (int, np.integer)):
        x = int(x)
        if -2 ** 31 <= x < 2 ** 31:
            return int32
        if 2 ** 31 <= x < 2 ** 32:
            return uint32
        if -2 ** 63 <= x < 2 ** 63:
            return int64
        return uint64
    if isinstance(x, (float, np.floating)):
        ax = abs(float(x))
        if ax == float("inf") or ax == 0.0 or x != x or 2 ** -126 <= ax <= (2 - 2 ** -23) * 2 ** 127:
            return float32
        return float64
    fail(CompileError, f"cannot convert {x!r} of type {type(x).__name__} to tensor")


def to_tensor(x, dt: dtype | None = None) -> tensor:
    x = unwrap(x)
    if isinstance(x, tensor):
        return x
    d = dt or scalar_dtype(x)
    t = tensor(np.array([x], dtype=d.np) if not d.is_ptr() else np.array([x], np.int64), d, ())
    if ST is not None and ST.rec is not None and d.is_int() and not isinstance(x, float):
        t.ax = AI.constant(int(x))
    return t


def _is_scalar_py(x) -> bool:
    return isinstance(unwrap(x), (bool, int, float, np.integer, np.floating, np.bool_))


def computation_type(a: dtype, a_scalar: bool, b: dtype, b_scalar: bool, div_or_mod: bool) -> dtype:
    if a_scalar != b_scalar:
        s, t = (a, b) if a_scalar else (b, a)
        if s.kind() <= t.kind():
            if div_or_mod and t in (float16, bfloat16):
                return float32
            return t
    if a is float64 or b is float64:
        return float64
    if a is float32 or b is float32:
        return float32
    if a is float16 or b is float16:
        return float32 if div_or_mod else float16
    if a is bfloat16 and b is bfloat16:
        return float32 if div_or_mod else bfloat16
    if a is bfloat16 or b is bfloat16:
        return float32
    if a.is_fp8() and b.is_fp8():
        return a if a == b else float16
    if not a.is_int() or not b.is_int():
        fail(CompileError, f"unexpected type {a} and {b}")
    if div_or_mod and a.is_int_signed() != b.is_int_signed():
        fail(CompileError, f"Cannot use /, //, or % with {a!r} and {b!r} because they have different signedness")
    return integer_promote(a, b)


def integer_promote(a: dtype, b: dtype) -> dtype:
    sa, sb = a.is_int_signed(), b.is_int_signed()
    if sa == sb:
        return a if a.primitive_bitwidth > b.primitive_bitwidth else b
    if not sa:
        return a if a.primitive_bitwidth >= b.primitive_bitwidth else b
    return b if b.primitive_bitwidth >= a.primitive_bitwidth else a


def broadcast_many(shapes) -> tuple:
    """The broadcast of several shapes (``broadcast_shapes`` pairwise)."""
    shapes = list(shapes)
    out = shapes[0]
    for sh in shapes[1:]:
        out = broadcast_shapes(out, sh)
    return out


def broadcast_shapes(sa, sb):
    ra, rb = len(sa), len(sb)
    if ra == 0:
        return tuple(sb)
    if rb == 0:
        return tuple(sa)
    if ra != rb:
        # Triton left-pads the lower rank with ones
        if ra < rb:
            sa = (1,) * (rb - ra) + tuple(sa)
        else:
            sb = (1,) * (ra - rb) + tuple(sb)
    out = []
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            fail(CompileError, f"Cannot make_shape_compatible: incompatible dimensions at index {i}: {x} and {y}")
    return tuple(out)


def vshape(t: tensor, shape) -> np.ndarray:
    """``t.v`` reshaped so numpy broadcasting against tile shape ``shape`` follows Triton's rules."""
    v = t.v
    r = len(shape) - len(t.shape)
    if r > 0:
        v = v.reshape((v.shape[0],) + (1,) * r + t.shape)
    return v


def broadcast_ax(t: tensor, shape):
    if t.ax is None:
        return None
    if t.shape == tuple(shape):
        return t.ax
    if not t.shape:
        return AI.splat(t.ax, shape)
    s = (1,) * (len(shape) - len(t.shape)) + t.shape
    ax = t.ax
    if len(s) != len(t.shape):
        r = len(shape) - len(t.shape)
        ax = AI.AxisInfo((1,) * r + ax.contig, (AI.MAXDIV,) * r + ax.div, tuple(shape[:r]) + ax.const, ax.value)
    return AI.broadcast(ax, s, shape)


def note_numel(shape):
    n = 1
    for s in shape:
        n *= s
    if ST is not None and n > ST.max_numel:
        ST.max_numel = n


# ---------------------------------------------------------------------------------------------------------
# binary ops
# ---------------------------------------------------------------------------------------------------------

_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
        "ne": np.not_equal}


def _trunc_div(x, y):
    with np.errstate(all="ignore"):
        if np.all(x >= 0) and np.all(y > 0):
            return x // y
        q = np.floor_divide(x, y)
        r = x - q * y
        fix = (r != 0) & ((x < 0) ^ (y < 0))
        return (q + fix.astype(q.dtype)).astype(np.result_type(x, y), copy=False)


def _trunc_rem(x, y):
    with np.errstate(all="ignore"):
        if np.all(x >= 0) and np.all(y > 0):
            return x % y
        return (x - _trunc_div(x, y) * y).astype(np.result_type(x, y), copy=False)


def _check_int_scalars(ct: dtype, *scalars):
    """Triton's checks of Python integers against the integer type of the computation (``x_int8 & 0xF0``: "Scalar
    240 is out of range for type int8"; a negative scalar with an unsigned tensor)."""
    for x in scalars:
        if x is None or isinstance(x, (float, np.floating)):
            continue
        x = int(x)
        if x < 0 and not ct.is_int_signed():
            fail(CompileError, "Cannot perform a binary operation between an unsigned tensor and a negative scalar. "
                               "Perform a explicit cast on one of them.")
        bits = ct.primitive_bitwidth
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ct.is_int_signed() else (0, (1 << bits) - 1)
        if bits > 1 and not lo <= x <= hi:
            fail(CompileError, f"Scalar {x} is out of range for type {ct}")


def binary(op: str, a, b) -> tensor | Any:
    a = unwrap(a)
    b = unwrap(b)
    if not isinstance(a, tensor) and not isinstance(b, tensor):
        return _dispatch_binop({"shl": "lshift", "shr": "rshift", "eq": "eq"}.get(op, op), a, b) \
            if op != "eq" else a == b
    st = ST
    a_s, b_s = _is_scalar_py(a), _is_scalar_py(b)
    ta = a if isinstance(a, tensor) else to_tensor(a)
    tb = b if isinstance(b, tensor) else to_tensor(b)
    da, db = ta.dtype, tb.dtype
    shape = broadcast_shapes(ta.shape, tb.shape) if ta.shape != tb.shape else ta.shape
    # ---- pointer arithmetic ----------------------------------------------------------------------
    if da.is_ptr() or db.is_ptr():
        if op == "add" or (op == "sub" and da.is_ptr() and not db.is_ptr()):
            p, o = (ta, tb) if da.is_ptr() else (tb, ta)
            if o.dtype.is_ptr() or o.dtype.is_floating():
                fail(CompileError, f"invalid operands of type {da!r} and {db!r}")
            ov = vshape(o, shape)
            pv = vshape(p, shape)
            if op == "add" and not p.shape and pv.shape[0] == 1 and pv[0] == 0 and ov.dtype.kind == "i":
                v = ov                      # a base pointer plus offsets: the offsets themselves (no copy)
            else:
                ov = ov.astype(np.int64, copy=False)
                v = pv + (ov if op == "add" else -ov)
            out = tensor(v, p.dtype, shape)
            out.buf = p.buf
            if p.shape == shape and ov.size == 1 and ov.dtype.kind in "iu":
                out.shift = (p.v, int(ov.reshape(-1)[0]) * (1 if op == "add" else -1))
            if st is not None and st.rec is not None:
                eb = p.dtype.element_ty.itemsize
                pa, oa = broadcast_ax(p, shape), broadcast_ax(o, shape)
                if pa is not None and oa is not None:
                    if op == "sub":
                        oa = AI.binary("sub", AI.constant(0, shape) if shape else AI.constant(0), oa, shape)
                    out.ax = AI.binary("addptr", pa, oa, shape, eb)
                st.rec.alu(out, (p, o), "addptr")
            note_numel(shape)
            return out
        if op in _CMP and da.is_ptr() and db.is_ptr():
            out = tensor(_CMP[op](vshape(ta, shape), vshape(tb, shape)), int1, shape)
            if st is not None and st.rec is not None:
                st.rec.alu(out, (ta, tb), "icmp")
            return out
        if op == "sub" and da.is_ptr() and db.is_ptr():
            out = tensor(vshape(ta, shape) - vshape(tb, shape), int64, shape)
            return out
        fail(CompileError, f"invalid operands of type {da!r} and {db!r} for {op}")
    # ---- type of the computation --------------------------------------------------------------------
    div_or_mod = op in ("truediv", "floordiv", "mod")
    if op in ("and", "or", "xor", "shl", "shr"):
        if not da.is_int() or not db.is_int():
            fail(CompileError, f"invalid operands of type {da!r} and {db!r} for a bitwise operation")
        ct = integer_promote(da, db) if not (a_s or b_s) else computation_type(da, a_s, db, b_s, False)
    else:
        ct = computation_type(da, a_s, db, b_s, div_or_mod)
    if ct.is_int() and (a_s or b_s):
        _check_int_scalars(ct, a if a_s else None, b if b_s else None)
    if op == "truediv" and ct.is_int():
        ct = float32
    if op == "floordiv" and not ct.is_int():
        fail(CompileError, f"unexpected type {ct!r} for //")
    if ct.is_floating() and st is not None and st.rec is not None:
        ta = promote_operand(ta, a_s, ct)
        tb = promote_operand(tb, b_s, ct)
    npd = ct.np
    va = vshape(ta, shape)
    vb = vshape(tb, shape)
    if va.dtype != npd:
        va = va.astype(npd)
    if vb.dtype != npd:
        vb = vb.astype(npd)
    rdt = ct
    with np.errstate(all="ignore"):
        if op == "add":
            v = va + vb
        elif op == "sub":
            v = va - vb
        elif op == "mul":
            v = va * vb
        elif op == "truediv":
            v = va / vb
        elif op == "floordiv":
            v = _trunc_div(va, vb) if ct.is_int_signed() else va // vb
        elif op == "mod":
            if ct.is_floating():
                v = np.fmod(va, vb)
            else:
                v = _trunc_rem(va, vb) if ct.is_int_signed() else va % vb
        elif op == "and":
            v = va & vb
        elif op == "or":
            v = va | vb
        elif op == "xor":
            v = va ^ vb
        elif op == "shl":
            v = np.left_shift(va, vb)
        elif op == "shr":
            v = np.right_shift(va, vb)
        elif op in _CMP:
            v = _CMP[op](va, vb)
            rdt = int1
        else:
            fail(UnsupportedConstruct, f"unsupported binary operation {op}")
    if rdt in ROUNDED:
        v = round_to(rdt, v)
    out = tensor(v, rdt, shape)
    note_numel(shape)
    if st is not None and st.rec is not None:
        if ct.is_int() and (ta.ax is not None or tb.ax is not None):
            aa = broadcast_ax(ta, shape) if ta.ax is not None else AI.pessimistic(len(shape))
            bb = broadcast_ax(tb, shape) if tb.ax is not None else AI.pessimistic(len(shape))
            out.ax = AI.binary({"floordiv": "div", "mod": "rem"}.get(op, op), aa, bb, shape)
        _prov2(out, ta, tb)
        st.rec.alu(out, (ta, tb), op if op not in _CMP else ("fcmp" if ct.is_floating() else "icmp"))
    return out


def promote_operand(t: tensor, is_py_scalar: bool, ct: dtype) -> tensor:
    """An operand of a floating-point computation of type ``ct``, converted as Triton's implicit cast does (one
    conversion instruction per element: HADD2.F32, F2FP, I2F, F2F.F64); a Python number is a constant of ``ct``
    already, and a boolean or an operand of type ``ct`` needs none."""
    if is_py_scalar or t.dtype == ct or t.dtype is int1 or t.dtype.is_ptr():
        return t
    return cast(t, ct)


def _prov2(out, a, b):
    ds = a.dsrc
    if b.dsrc:
        ds = b.dsrc if not ds else (ds | b.dsrc)
    out.dsrc = ds


def _prov1(out, a, keep_load=True):
    out.dsrc = a.dsrc
    if keep_load:
        out.lsrc = a.lsrc


def unary_np(x: tensor, f, kind: str, out_dt: dtype | None = None) -> tensor:
    x = to_tensor(x)
    dt = out_dt or x.dtype
    with np.errstate(all="ignore"):
        v = f(x.v)
    if dt in ROUNDED:
        v = round_to(dt, v)
    elif dt.np is not None and v.dtype != dt.np:
        v = v.astype(dt.np)
    out = tensor(v, dt, x.shape)
    st = ST
    if st is not None and st.rec is not None:
        _prov1(out, x, keep_load=False)
        st.rec.alu(out, (x,), kind)
    return out


# ---------------------------------------------------------------------------------------------------------
# shape ops: views of a tile
# ---------------------------------------------------------------------------------------------------------

def expand_dims(x, axis) -> tensor:
    x = to_tensor(x)
    axis = unwrap(axis)
    if isinstance(axis, (list, tuple)):
        for a in sorted(int(unwrap(a)) for a in axis):
            x = expand_dims(x, a)
        return x
    axis = int(axis)
    r = len(x.shape)
    if axis < 0:
        axis += r + 1
    if not 0 <= axis <= r:
        fail(CompileError, f"expand_dims axis {axis} out of range for a tensor of rank {r}")
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    out = tensor(x.v.reshape((x.v.shape[0],) + shape), x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        if x.ax is not None:
            out.ax = AI.expand_dims(x.ax, axis, r == 0)
        _prov1(out, x)
        out.lay = x.lay
        out.src = x.src
        st.rec.view(out, x, "expand", axis)
    return out


def broadcast_to(x, shape) -> tensor:
    x = to_tensor(x)
    shape = tuple(int(unwrap(s)) for s in shape)
    bs = broadcast_shapes(x.shape, shape)
    if bs != shape:
        fail(CompileError, f"cannot broadcast shape {list(x.shape)} to {list(shape)}")
    v = np.broadcast_to(vshape(x, shape), (x.v.shape[0],) + shape)
    out = tensor(v, x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        out.ax = broadcast_ax(x, shape)
        _prov1(out, x)
        out.src = x.src
        out.lay = x.lay
        st.rec.view(out, x, "bcast", None)
    return out


def reshape(x, shape) -> tensor:
    x = to_tensor(x)
    shape = tuple(int(unwrap(s)) for s in shape)
    n = int(np.prod(shape)) if shape else 1
    if n != x.numel:
        fail(CompileError, f"reshape: cannot reshape {list(x.shape)} ({x.numel} elements) to {list(shape)}")
    out = tensor(x.v.reshape((x.v.shape[0],) + shape), x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        _prov1(out, x)
        out.src = x.src
        st.rec.view(out, x, "reshape", None)
    return out


def permute(x, *dims) -> tensor:
    x = to_tensor(x)
    if len(dims) == 1 and isinstance(unwrap(dims[0]), (list, tuple)):
        dims = unwrap(dims[0])
    dims = tuple(int(unwrap(d)) for d in dims)
    if sorted(dims) != list(range(len(x.shape))):
        fail(CompileError, f"permute: {list(dims)} is not a permutation of the dimensions of {list(x.shape)}")
    shape = tuple(x.shape[d] for d in dims)
    out = tensor(x.v.transpose((0,) + tuple(d + 1 for d in dims)), x.dtype, shape)
    out.buf = x.buf
    st = ST
    if st is not None and st.rec is not None:
        if x.ax is not None:
            out.ax = AI.permute(x.ax, dims)
        _prov1(out, x)
        out.src = x.src
        st.rec.view(out, x, "perm", dims)
    return out


def trans(x, *dims) -> tensor:
    x = to_tensor(x)
    if len(dims) == 1 and isinstance(unwrap(dims[0]), (list, tuple)):
        dims = unwrap(dims[0])
    if not dims:
        if len(x.shape) != 2:
            if len(x.shape) < 2:
                return x
            fail(CompileError, "trans without dims needs a 2-D tensor")
        dims = (1, 0)
    return permute(x, *dims)


# ---------------------------------------------------------------------------------------------------------
# casts
# ---------------------------------------------------------------------------------------------------------

def cast(x, dt, bitcast=False, fp_downcast_rounding=None) -> tensor:
    dt = scalar_of(unwrap(dt))         # ``x.to(bptr.type.element_ty)`` (a block type): Triton casts to its scalar
    if not isinstance(dt, dtype):
        fail(CompileError, f"{dt!r} is not a triton dtype")
    if isinstance(getattr(dt, "element_ty", dt), unsupported_dtype):
        fail(UnsupportedConstruct, getattr(dt, "element_ty", dt).why())
    x = to_tensor(x)
    src = x.dtype
    if src == dt:
        return x
    st = ST
    if dt.is_ptr() or src.is_ptr():
        if dt.is_ptr() and src.is_ptr():
            return _cast_pointer(x, dt)
        if src.is_ptr() and dt in (int64, uint64):
            buf = x.buf
            v = (buf.base_addr + x.v.astype(np.int64) * buf.elem_bytes).astype(dt.np)
            return tensor(v, dt, x.shape)
        if dt.is_ptr() and src in (int64, uint64):
            return _int_to_pointer(x, dt)
        fail(UnsupportedConstruct, f"cast between {src!r} and {dt!r} is not supported (only pointer <-> int64)")
    if bitcast:
        if src.primitive_bitwidth != dt.primitive_bitwidth:
            fail(CompileError, f"Cannot bitcast data-type of size {src.primitive_bitwidth} to data-type of size "
                               f"{dt.primitive_bitwidth}")
        raw = np.ascontiguousarray(to_storage(src, x.v))
        v = to_compute(dt, raw.view(dt.np_storage if dt is not bfloat16 else np.uint16))
        out = tensor(v, dt, x.shape)
        kind = "bitcast"
    else:
        with np.errstate(all="ignore"):
            if dt is int1:
                v = x.v != 0
            elif dt.is_floating():
                v = x.v.astype(dt.np)
                if dt in ROUNDED:
                    v = round_to(dt, v)
            else:
                if src.is_floating():
                    v = np.trunc(x.v)
                    v = np.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0) if not np.all(np.isfinite(v)) else v
                    v = v.astype(np.int64).astype(dt.np)
                else:
                    v = x.v.astype(dt.np)
        out = tensor(v, dt, x.shape)
        kind = "cvt"
    if st is not None and st.rec is not None:
        if src.is_int() and dt.is_int() and x.ax is not None:
            out.ax = x.ax
        _prov1(out, x)
        st.rec.alu(out, (x,), kind if not (src.is_int() and dt.is_int()) else "icvt", src_dtype=src)
    return out


def _int_to_pointer(x: tensor, dt: pointer_type) -> tensor:
    """``int64 -> pointer`` (``inttoptr``): addresses gpusim handed out (``gpusim.triton.data_ptr``, a pointer
    argument cast to int64) or host addresses of live arrays (``torch.Tensor.data_ptr()``).  The pointer's buffer
    is the one the first address falls in; the others are reached as another argument's memory is (accesses are
    bounds-checked against the allocation each address falls in)."""
    from . import _buffers as B
    st = ST
    eb = dt.element_ty.itemsize
    vals = x.v.astype(np.int64).reshape(-1)
    nz = np.unique(vals[vals != 0])
    found = {}
    bufs = list(st.buffers) if st is not None else []
    dev_of = {}
    for a in nz.tolist():
        hit = None
        for b in bufs:
            if b.base_addr <= a < b.base_addr + b.n * b.elem_bytes:
                hit = (b.base_addr, b, a)
                break
        if hit is None:
            r = B.ALLOCATIONS.find(a) or B.find_host(a)
            if r is None:
                fail(UnsupportedConstruct, f"a pointer cast from int64 holds {a:#x}, which is no address gpusim "
                                           f"handed out: put gpusim.triton.data_ptr(array) (or a CPU torch "
                                           f"tensor's data_ptr()) in the pointer table")
            dev, raw, ad = r
            hit = (dev, found.get(dev) or _alloc_buffer(raw, dev, dt.element_ty, st), ad)
            found[dev] = hit[1]
            if st is not None and hit[1] not in st.buffers:
                st.buffers.append(hit[1])
        dev_of[a] = hit
    if not dev_of:
        fail(UnsupportedConstruct, "a pointer cast from int64 holds only null pointers")
    base, buf, _ = next(iter(dev_of.values()))
    if buf.dtype != dt.element_ty:
        buf = _alloc_buffer(buf.flat.view(np.uint8), base, dt.element_ty, st)
        if st is not None:
            st.buffers.append(buf)
    dv = vals.copy()
    for a, (_b, _bb, ad) in dev_of.items():
        dv[vals == a] = ad
    rel = dv - buf.base_addr
    if np.any(rel % eb):
        fail(UnsupportedConstruct, f"a pointer cast from int64 is not aligned to its {eb}-byte elements")
    out = tensor((rel // eb).reshape(x.v.shape), dt, x.shape)
    out.buf = buf
    if st is not None and st.rec is not None:
        out.ax = AI.pessimistic(max(1, len(x.shape))) if x.shape else AI.pessimistic(1)
        _prov1(out, x)
        st.rec.alu(out, (x,), "icvt")
    return out


def _alloc_buffer(raw: np.ndarray, dev: int, et, st) -> Buffer:
    """A Buffer over a whole allocation (its bytes ``raw``) viewed as ``et`` elements; the probe run gets a
    private copy (its stores must not reach the caller's memory)."""
    if st is not None and st.probe:
        cache = st.__dict__.setdefault("_private_allocs", {})
        if dev not in cache:
            cache[dev] = raw.copy()
        raw = cache[dev]
    nb = raw.nbytes // et.itemsize * et.itemsize
    view = raw[:nb].view(et.np_storage if et is not bfloat16 else np.uint16)
    return Buffer(view, et, dev, f"allocation@{dev:#x}")


def _cast_pointer(x: tensor, dt: pointer_type) -> tensor:
    buf = x.buf
    e_old = buf.elem_bytes
    e_new = dt.element_ty.itemsize
    byte = x.v * e_old
    if np.any(byte % e_new):
        fail(UnsupportedConstruct, "pointer cast to a wider element type at an unaligned offset")
    flat = buf.flat
    nb = flat.nbytes // e_new * e_new
    view = flat.view(np.uint8)[:nb].view(dt.element_ty.np_storage if dt.element_ty is not bfloat16 else np.uint16)
    nbuf = Buffer(view, dt.element_ty, buf.base_addr, buf.name)
    out = tensor(byte // e_new, dt, x.shape)
    out.buf = nbuf
    out.ax = x.ax
    return out


# ---------------------------------------------------------------------------------------------------------
# branch conditions (the rewritten kernel's control flow, a tensor's truth value)
# ---------------------------------------------------------------------------------------------------------

def cond_value(c, unsplat: "str | bool" = False):
    """A branch condition: a Python bool when every active program agrees, else a bool (P,) mask.  ``unsplat``
    (an ``if`` statement's test, its source text): a one-element block is its element, with Triton 3.6's warning."""
    c = unwrap(c)
    if not isinstance(c, tensor):
        return bool(c)
    if c.shape:
        if not (unsplat and int(np.prod(c.shape)) == 1):
            fail(CompileError, "Boolean value of Tensor with more than one value is ambiguous: a branch/loop "
                               "condition must be a scalar, not a tensor of shape "
                               f"{list(c.shape)}")
        _warn_unsplat(unsplat if isinstance(unsplat, str) else "...")
        c = reshape(c, ())
    v = c.v
    if v.dtype != np.bool_:
        v = v != 0
    if v.shape[0] == 1:
        return bool(v[0])
    st = ST
    a = st.active()
    if a is None:
        if v.all():
            return True
        if not v.any():
            return False
        return v
    sel = v[a]
    if sel.all():
        return True
    if not sel.any():
        return False
    return v


def _warn_unsplat(text: str):
    """Triton 3.6's warning for ``if`` on a one-element block (once per kernel line, as Triton compiles it once)."""
    import warnings
    file, line = user_line()
    key = (file, line)
    if key in _UNSPLAT_WARNED:
        return
    _UNSPLAT_WARNED.add(key)
    warnings.warn_explicit("If conditional called with multidimensional Tensor instead of scalar; please use "
                           f"\"if ({text}).item()\" instead", UserWarning, file or "<kernel>", line or 0)


_UNSPLAT_WARNED: set = set()
