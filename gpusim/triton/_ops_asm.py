"""``tl.inline_asm_elementwise`` for the one-instruction PTX that kernels write it for.

Public kernels use inline assembly for a hardware approximation Triton does not expose (``tanh.approx.f32`` in
GELU and attention kernels, ``ex2.approx.ftz.f32``, ``rcp.approx``), a funnel shift (``shf.l.wrap.b32``) or a bit
trick.  gpusim executes one PTX instruction ``op $0, $1[, $2[, $3]];`` per element from a table of opcodes
(``_OPS``): the operands are the argument tensors' bits read in the instruction's type (``.f32`` float32,
``.b32``/``.u32`` uint32, ``.s32`` int32), the result's bits are given the ``dtype`` asked for.  The approximations
are computed exactly (the hardware's are within a few ulp).  Cost: the instruction itself (``costs.LIBDEVICE``
``asm.*`` entries: a MUFU for the approximations).  Anything else -- several instructions, braces, ``pack`` other
than 1, an opcode not in the table -- is refused with the assembly text named.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import UnsupportedConstruct
from . import _core as C
from ._core import fail, tensor, to_tensor, unwrap, vshape


def _u32(v):
    return v.astype(np.uint64)


def _shf(left: bool):
    def f(a, b, c):
        wide = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
        s = (c.astype(np.uint64) & np.uint64(31))
        r = (wide << s) >> np.uint64(32) if left else wide >> s
        return (r & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return f


#: opcode -> (operand type, number of inputs, numpy body)
_OPS = {
    "tanh.approx.f32": ("f32", 1, np.tanh),
    "ex2.approx.f32": ("f32", 1, np.exp2), "ex2.approx.ftz.f32": ("f32", 1, np.exp2),
    "lg2.approx.f32": ("f32", 1, np.log2), "lg2.approx.ftz.f32": ("f32", 1, np.log2),
    "rcp.approx.f32": ("f32", 1, lambda x: 1 / x), "rcp.approx.ftz.f32": ("f32", 1, lambda x: 1 / x),
    "rsqrt.approx.f32": ("f32", 1, lambda x: 1 / np.sqrt(x)), "rsqrt.approx.ftz.f32": ("f32", 1, lambda x: 1 / np.sqrt(x)),
    "sqrt.approx.f32": ("f32", 1, np.sqrt), "sqrt.approx.ftz.f32": ("f32", 1, np.sqrt),
    "sin.approx.f32": ("f32", 1, np.sin), "sin.approx.ftz.f32": ("f32", 1, np.sin),
    "cos.approx.f32": ("f32", 1, np.cos), "cos.approx.ftz.f32": ("f32", 1, np.cos),
    "add.f32": ("f32", 2, np.add), "sub.f32": ("f32", 2, np.subtract), "mul.f32": ("f32", 2, np.multiply),
    "max.f32": ("f32", 2, np.fmax), "min.f32": ("f32", 2, np.fmin), "abs.f32": ("f32", 1, np.abs),
    "neg.f32": ("f32", 1, np.negative), "fma.rn.f32": ("f32", 3, lambda a, b, c: a * b + c),
    "mov.b32": ("b32", 1, lambda x: x), "and.b32": ("b32", 2, np.bitwise_and), "or.b32": ("b32", 2, np.bitwise_or),
    "xor.b32": ("b32", 2, np.bitwise_xor), "not.b32": ("b32", 1, np.invert),
    "shl.b32": ("b32", 2, lambda a, s: np.left_shift(a, np.minimum(s, 32).astype(a.dtype))),
    "shr.u32": ("u32", 2, lambda a, s: np.right_shift(a, np.minimum(s, 32).astype(a.dtype))),
    "shr.s32": ("s32", 2, lambda a, s: np.right_shift(a, np.minimum(s.view(np.uint32), 31).astype(a.dtype))),
    "add.s32": ("s32", 2, np.add), "sub.s32": ("s32", 2, np.subtract), "mul.lo.s32": ("s32", 2, np.multiply),
    "mul.lo.u32": ("u32", 2, np.multiply),
    "mul.hi.u32": ("u32", 2, lambda a, b: ((_u32(a) * _u32(b)) >> np.uint64(32)).astype(np.uint32)),
    "mul.hi.s32": ("s32", 2, lambda a, b: ((a.astype(np.int64) * b.astype(np.int64)) >> 32).astype(np.int32)),
    "popc.b32": ("b32", 1, lambda x: np.bitwise_count(x).astype(np.uint32)),
    "shf.l.wrap.b32": ("b32", 3, _shf(True)), "shf.r.wrap.b32": ("b32", 3, _shf(False)),
}
_VIEW = {"f32": np.float32, "b32": np.uint32, "u32": np.uint32, "s32": np.int32}
_INSN = re.compile(r"^\s*([a-z][a-z0-9_.]*)\s+\$0\s*((?:,\s*\$\d\s*)*);?\s*$")


def _parse(asm: str):
    m = _INSN.match(asm)
    if m is None or ";" in asm.strip().rstrip(";"):
        fail(UnsupportedConstruct, f"tl.inline_asm_elementwise({asm!r}): gpusim executes one PTX instruction "
                                   "'op $0, $1, ...;' from its table (tanh.approx.f32, ex2.approx.f32, "
                                   "shf.l.wrap.b32 ...), not this assembly")
    op = m.group(1)
    if op not in _OPS:
        fail(UnsupportedConstruct, f"tl.inline_asm_elementwise: the PTX instruction {op!r} is not in gpusim's table "
                                   f"({', '.join(sorted(_OPS))})")
    refs = [int(r) for r in re.findall(r"\$(\d)", m.group(2))]
    return op, refs


def _bits(x: tensor, shape, kind):
    v = np.ascontiguousarray(vshape(x, shape))
    want = np.dtype(_VIEW[kind])
    if v.dtype.itemsize == 4:
        return v.view(want)
    if v.dtype.kind == "f":                     # fp16 / bf16 / fp64 values: converted, not reinterpreted
        return v.astype(np.float32).view(want) if kind == "f32" else v.astype(np.int64).astype(want)
    return v.astype(np.int64).astype(want)


def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack, _semantic=None):
    asm, pack, dtype = unwrap(asm), unwrap(pack), unwrap(dtype)
    if not isinstance(asm, str):
        fail(UnsupportedConstruct, "tl.inline_asm_elementwise: the assembly must be a string")
    if int(pack) != 1:
        fail(UnsupportedConstruct, f"tl.inline_asm_elementwise(pack={pack}): gpusim executes pack=1 only")
    if isinstance(dtype, (list, tuple)):
        fail(UnsupportedConstruct, "tl.inline_asm_elementwise with several results is not executed by gpusim")
    op, refs = _parse(asm)
    kind, n_in, f = _OPS[op]
    xs = [to_tensor(unwrap(a)) for a in (args if isinstance(args, (list, tuple)) else [args])]
    if len(refs) != n_in or sorted(refs) != list(range(1, n_in + 1)) or len(xs) != n_in:
        fail(UnsupportedConstruct, f"tl.inline_asm_elementwise({asm!r}): {op} takes {n_in} operand(s) $1..${n_in}, "
                                   f"given {len(xs)} argument(s)")
    shape = C.broadcast_many(x.shape for x in xs)
    ordered = [xs[r - 1] for r in refs]
    with np.errstate(all="ignore"):
        r = np.asarray(f(*[_bits(x, shape, kind) for x in ordered])).astype(_VIEW[kind])
    if dtype.primitive_bitwidth == 32:
        v = r.view(dtype.np_storage if dtype.np_storage is not None else dtype.np)
    else:
        v = r.astype(dtype.np)
    out = tensor(np.ascontiguousarray(v).astype(dtype.np, copy=False), dtype, list(shape))
    st = C.ST
    if st is not None and st.rec is not None:
        st.rec.alu(out, tuple(xs), "libdevice:asm." + op)
    return out
