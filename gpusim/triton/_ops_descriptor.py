"""Functional semantics of tensor descriptors: ``tl.make_tensor_descriptor``, ``desc.load`` / ``desc.store``.

A descriptor is a base pointer, a logical shape and strides (elements; the last stride is 1) and a block shape.
``desc.load(offsets)`` reads the box ``[offsets[d], offsets[d] + block_shape[d])`` of every dimension for every
program of the chunk at once; elements outside ``[0, shape[d])`` of some dimension read as zero (``padding="nan"``:
NaN) and ``desc.store`` leaves them untouched -- Triton's semantics (its interpreter, and the TMA unit on
Hopper).  The same descriptor arrives from the host as a ``TensorDescriptor`` argument (``_launch``) or is made
in the kernel.  Lowering: ``_lower_tma`` (a bulk TMA copy per box).
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from . import _core as C
from ._core import block_type, cast, fail, int1, pointer_type, tensor, to_tensor, unwrap
from ._ops_memory import _effective_mask, gather, scatter


def _vec(x) -> np.ndarray:
    """A scalar (Python int or per-program scalar tensor) as an int64 array of shape (Pn,)."""
    x = unwrap(x)
    if isinstance(x, tensor):
        if x.shape:
            fail(CompileError, "descriptor offsets, shapes and strides must be scalars")
        return x.v.astype(np.int64, copy=False).reshape(-1)
    return np.array([int(x)], np.int64)


def is_host_descriptor(v) -> bool:
    """A ``TensorDescriptor`` of ``gpusim.triton.tools`` or of ``triton.tools`` (by its fields)."""
    return type(v).__name__ == "TensorDescriptor" and all(hasattr(v, a) for a in ("base", "shape", "strides",
                                                                                  "block_shape"))


class tensor_descriptor:
    """A tensor descriptor of every program of the chunk (``tl.tensor_descriptor``)."""

    def __init__(self, base: tensor, shape, strides, block_shape, padding="zero", host=False):
        self.base = base
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.block_shape = tuple(int(unwrap(b)) for b in block_shape)     # (a kernel's list literals are tuples)
        self.padding = padding
        self.host = host                 # passed from the host (a kernel argument) rather than made in the kernel
        self.src = None                  # lowering: the op that made it (device descriptors)

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    @property
    def block_type(self):
        return block_type(self.dtype, self.block_shape)

    @property
    def type(self):
        return self.block_type

    def __repr__(self):
        return f"tensor_descriptor<{self.dtype}{self.block_shape}>"

    # ---- the box of every program --------------------------------------------------------------------------
    def box(self, offsets):
        """(element offsets into the base's buffer broadcastable to (P, *block), in-bounds mask or None)."""
        offsets = unwrap(offsets)
        if isinstance(offsets, tensor) or not isinstance(offsets, (list, tuple)):
            offsets = [offsets]
        r = len(self.block_shape)
        if len(offsets) != r:
            fail(CompileError, f"descriptor of rank {r} indexed with {len(offsets)} offsets")
        o = _vec(self.base).reshape((-1,) + (1,) * r)
        m = None
        for d in range(r):
            bd = self.block_shape[d]
            shp = [1] * r
            shp[d] = bd
            idx = _vec(offsets[d]).reshape((-1,) + (1,) * r) + np.arange(bd, dtype=np.int64).reshape([1] + shp)
            o = o + idx * _vec(self.strides[d]).reshape((-1,) + (1,) * r)
            lim = _vec(self.shape[d]).reshape((-1,) + (1,) * r)
            lo, hi = int(idx.min()), int(idx.max())
            if lo >= 0 and hi < int(lim.min()):
                continue                              # in bounds for every program
            ok = (idx >= 0) & (idx < lim)
            m = ok if m is None else (m & ok)
        return o, m

    def _ptr_mask(self, offsets):
        shape = tuple(self.block_shape)
        o, m = self.box(offsets)
        ptr = tensor(o, pointer_type(self.dtype), shape)
        ptr.buf = self.base.buf
        mask = None if m is None else tensor(m, int1, shape)
        return ptr, mask, o, m

    def load(self, offsets, _semantic=None):
        shape = tuple(self.block_shape)
        st = C.state()
        ptr, mask, o, m = self._ptr_mask(offsets)
        me = _effective_mask(mask, shape)
        vals, mm = gather(ptr, shape, me)
        if mm is not None:
            fill = np.nan if self.padding == "nan" else 0
            vals = np.where(mm, vals, np.asarray(fill, vals.dtype))
        out = tensor(vals, self.dtype, shape)
        C.note_numel(shape)
        if st.rec is not None:
            out.lsrc = st.rec.desc_load(out, self, _offset_list(offsets), shape, o, m)
        return out

    def store(self, offsets, value, _semantic=None):
        shape = tuple(self.block_shape)
        st = C.state()
        value = unwrap(value)
        vt = value if isinstance(value, tensor) else to_tensor(value)
        if vt.shape and tuple(vt.shape) != shape:
            fail(CompileError, f"descriptor store: value of shape {list(vt.shape)} does not match the block shape "
                               f"{list(shape)}")
        vc = cast(vt, self.dtype) if vt.dtype != self.dtype else vt
        if not vc.shape:
            vc = C.broadcast_to(vc, shape)
        ptr, mask, o, m = self._ptr_mask(offsets)
        me = _effective_mask(mask, shape)
        scatter(ptr, shape, C.vshape(vc, shape), me)
        if st.rec is not None:
            st.rec.desc_store(self, vc, _offset_list(offsets), shape, o, m)
        return None

    # Triton's other descriptor methods: not modelled
    def gather(self, *args, **kw):
        fail(CompileError, "tensor_descriptor.gather (TMA gather, Blackwell) is not supported by gpusim")

    def scatter(self, *args, **kw):
        fail(CompileError, "tensor_descriptor.scatter (TMA scatter, Blackwell) is not supported by gpusim")


tensor_descriptor_base = tensor_descriptor


def _offset_list(offsets):
    offsets = unwrap(offsets)
    if isinstance(offsets, tensor) or not isinstance(offsets, (list, tuple)):
        offsets = [offsets]
    return [unwrap(x) for x in offsets]


def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero", _semantic=None):
    """``tl.make_tensor_descriptor``: the checks of Triton's semantic, then a device descriptor."""
    base = unwrap(base)
    shape = [unwrap(s) for s in unwrap(shape)]
    strides = [unwrap(s) for s in unwrap(strides)]
    block_shape = [int(unwrap(b)) for b in unwrap(block_shape)]
    padding_option = unwrap(padding_option) or "zero"
    nd = len(shape)
    if not 1 <= nd <= 5:
        fail(CompileError, f"Expected 1 <= ndim <= 5 but got {nd} dimensions")
    if len(strides) != nd:
        fail(CompileError, f"Expected {nd} strides but got {len(strides)}")
    if len(block_shape) != nd:
        fail(CompileError, f"Expected block_shape to have {nd} dimensions but got {len(block_shape)}")
    if not isinstance(base, tensor) or not base.dtype.is_ptr() or base.shape:
        fail(CompileError, "make_tensor_descriptor expects a scalar pointer as its base")
    eb = base.dtype.element_ty.itemsize
    if block_shape[-1] * eb < 16:
        fail(CompileError, f"Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                           f"{block_shape[-1]} * {eb} = {block_shape[-1] * eb} bytes")
    last = strides[-1]
    if not isinstance(last, tensor) and int(last) != 1:
        fail(CompileError, f"Tensor descriptor last dim must be 1 but got {last}")
    if padding_option not in ("zero", "nan"):
        fail(CompileError, f"unexpected padding option {padding_option!r}")
    desc = tensor_descriptor(base, shape, strides, block_shape, padding_option)
    st = C.state()
    if st.rec is not None:
        st.rec.desc_make(desc, [base] + [x for x in shape + strides if isinstance(x, tensor)])
    return desc


def load_tensor_descriptor(desc, offsets, _semantic=None):
    return unwrap(desc).load(offsets)


def store_tensor_descriptor(desc, offsets, value, _semantic=None):
    return unwrap(desc).store(offsets, value)
