"""Triton's AxisInfo analysis, recomputed on the values a tile program really builds.

Triton decides the width of every global access at compile time from three facts per tensor dimension
(``lib/Analysis/AxisInfo.cpp``): *contiguity* (length of runs of consecutive integers), *divisibility*
(largest power of two dividing the first element of each run; for pointers in bytes) and *constancy*
(length of runs of equal values).  Kernel arguments enter with Triton's launch specialization: pointers and
integers divisible by 16 carry ``tt.divisibility = 16``, integers equal to 1 become the constant 1, all other
values know nothing.  ``tl.multiple_of`` / ``max_contiguous`` / ``max_constancy`` override the facts.

Here the same transfer rules run alongside functional execution, one ``AxisInfo`` per tensor value; the
lowering joins the facts a load/store site sees over all its executions (the analysis' fixpoint over a loop)
and derives the vector width from them.  Scalars carry rank-1 facts, as in Triton.  Units: elements for
contiguity/constancy; divisibility in elements for integers, bytes for pointers.
"""
from __future__ import annotations

from math import gcd as _gcd2

MAXDIV = 1 << 62          # highestPowOf2Divisor(0): "divisible by anything"


def pow2div(v: int) -> int:
    """Largest power of two dividing ``v`` (MAXDIV for 0)."""
    v = int(v)
    if v == 0:
        return MAXDIV
    return min(v & -v, MAXDIV)


def gcd(*xs: int) -> int:
    g = 0
    for x in xs:
        g = _gcd2(g, int(x)) if g else int(x)
    return g


class AxisInfo:
    __slots__ = ("contig", "div", "const", "value")

    def __init__(self, contig, div, const, value=None):
        self.contig = tuple(contig)
        self.div = tuple(div)
        self.const = tuple(const)
        self.value = value

    @property
    def rank(self) -> int:
        return len(self.contig)

    def __repr__(self) -> str:
        v = "" if self.value is None else f", value={self.value}"
        return f"AxisInfo(contiguity={list(self.contig)}, divisibility={list(self.div)}, constancy={list(self.const)}{v})"

    def __eq__(self, o) -> bool:
        return isinstance(o, AxisInfo) and (self.contig, self.div, self.const, self.value) == (
            o.contig, o.div, o.const, o.value)

    def __hash__(self):
        return hash((self.contig, self.div, self.const, self.value))


def pessimistic(rank: int) -> AxisInfo:
    r = max(rank, 1)
    return AxisInfo((1,) * r, (1,) * r, (1,) * r)


def constant(value: int, shape=()) -> AxisInfo:
    """A Python int / splat constant."""
    if not shape:
        return AxisInfo((1,), (pow2div(value),), (1,), int(value))
    r = len(shape)
    return AxisInfo((1,) * r, (pow2div(value),) * r, tuple(shape), int(value))


def arg_scalar(value: int) -> AxisInfo:
    """An integer kernel argument after Triton's specialization."""
    if value == 1:
        return constant(1)
    return AxisInfo((1,), (16 if value % 16 == 0 else 1,), (1,))


def arg_pointer(address: int) -> AxisInfo:
    return AxisInfo((1,), (16 if address % 16 == 0 else 1,), (1,))


def make_range(start: int, end: int) -> AxisInfo:
    return AxisInfo((end - start,), (pow2div(start),), (1,))


def loop_var(lb: AxisInfo | None, step: AxisInfo | None) -> AxisInfo:
    d = 1
    if lb is not None and step is not None:
        d = gcd(lb.div[0], step.div[0])
    return AxisInfo((1,), (d,), (1,))


def splat(a: AxisInfo, shape) -> AxisInfo:
    r = len(shape)
    if r == 0:
        return a
    return AxisInfo((1,) * r, (a.div[0],) * r, tuple(shape), a.value)


def broadcast(a: AxisInfo, from_shape, to_shape) -> AxisInfo:
    if tuple(from_shape) == tuple(to_shape):
        return a
    if len(from_shape) == 0:
        return splat(a, to_shape)
    contig, div, const = [], [], []
    for d, n in enumerate(to_shape):
        one = from_shape[d] == 1
        contig.append(1 if one else a.contig[d])
        div.append(a.div[d])
        const.append(n if one else a.const[d])
    return AxisInfo(contig, div, const, a.value)


def expand_dims(a: AxisInfo, axis: int, was_scalar: bool) -> AxisInfo:
    if was_scalar:
        return a
    if a.value is not None:
        nd = pow2div(a.value)
    else:
        nd = 1 if a.contig[0] > 1 else a.div[0]
        for d in range(1, a.rank):
            nd = gcd(nd, 1 if a.contig[d] > 1 else a.div[d])
    c, dv, k = list(a.contig), list(a.div), list(a.const)
    c.insert(axis, 1)
    dv.insert(axis, nd)
    k.insert(axis, 1)
    return AxisInfo(c, dv, k, a.value)


def permute(a: AxisInfo, order) -> AxisInfo:
    return AxisInfo([a.contig[i] for i in order], [a.div[i] for i in order], [a.const[i] for i in order], a.value)


def _div_from_contig(a: AxisInfo, b: AxisInfo, d: int) -> int:
    if a.contig[d] == b.contig[d] or a.contig[d] == MAXDIV or b.contig[d] == MAXDIV:
        return gcd(a.div[d], b.div[d])
    return gcd(a.div[d], b.div[d], a.contig[d], b.contig[d])


def join(a: AxisInfo | None, b: AxisInfo | None) -> AxisInfo | None:
    """Lattice join (the value at a loop header: init joined with every yield)."""
    if a is None:
        return b
    if b is None or a is b:
        return a
    if a.rank != b.rank:
        return pessimistic(a.rank)
    return AxisInfo([gcd(a.contig[d], b.contig[d]) for d in range(a.rank)],
                    [_div_from_contig(a, b, d) for d in range(a.rank)],
                    [gcd(a.const[d], b.const[d]) for d in range(a.rank)],
                    a.value if a.value == b.value else None)


def _is_contig_dim(a: AxisInfo, shape, d: int) -> bool:
    return a.contig[d] == (shape[d] if shape else 1)


def _is_const_dim(a: AxisInfo, shape, d: int) -> bool:
    return a.const[d] == (shape[d] if shape else 1)


def binary(op: str, a: AxisInfo, b: AxisInfo, shape, elem_bytes: int = 1) -> AxisInfo:
    """Transfer rule of an integer/pointer binary op whose operands were broadcast to ``shape``.

    ``op``: add, sub, addptr, mul, div, rem, lt/le/gt/ge/eq/ne, and, or, xor, shl, shr, max, min.
    """
    r = a.rank
    av, bv = a.value, b.value
    # comparisons first (they have their own constancy rules)
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        const = []
        value = None
        for d in range(r):
            if av is not None and bv is not None:
                h = a.const[d]
                value = int({"lt": av < bv, "le": av <= bv, "gt": av > bv, "ge": av >= bv,
                             "eq": av == bv, "ne": av != bv}[op])
            else:
                h = gcd(a.const[d], b.const[d])
                if op in ("gt", "le") and _is_const_dim(a, shape, d):
                    h = max(h, gcd(b.contig[d], a.div[d], b.div[d]))
                elif op in ("lt", "ge") and _is_const_dim(b, shape, d):
                    h = max(h, gcd(a.contig[d], a.div[d], b.div[d]))
            const.append(h)
        return AxisInfo((1,) * r, (1,) * r, const, value)
    if op in ("max", "min"):
        if av is not None and bv is not None:
            return AxisInfo((1,) * r, (1,) * r, (1,) * r, max(av, bv) if op == "max" else min(av, bv))
        return AxisInfo([gcd(a.contig[d], b.contig[d]) for d in range(r)],
                        [_div_from_contig(a, b, d) for d in range(r)],
                        [gcd(a.const[d], b.const[d]) for d in range(r)])
    value = _fold(op, av, bv, elem_bytes)
    if value is not None:
        return AxisInfo((1,) * r, (pow2div(value),) * r,
                        [max(a.const[d], b.const[d]) for d in range(r)], value)
    contig, div, const = [], [], []
    for d in range(r):
        if op in ("add", "addptr"):
            c = max(gcd(a.const[d], b.contig[d]), gcd(a.contig[d], b.const[d]))
            bd = b.div[d] * elem_bytes if op == "addptr" else b.div[d]
            dv = gcd(a.div[d], min(bd, MAXDIV))
            k = gcd(a.const[d], b.const[d])
        elif op == "sub":
            c = gcd(a.contig[d], b.const[d])
            dv = gcd(a.div[d], b.div[d])
            k = gcd(a.const[d], b.const[d])
        elif op == "mul":
            c = max(a.contig[d] if bv == 1 else 1, b.contig[d] if av == 1 else 1)
            ad = 1 if (a.contig[d] > 1 and bv != 1) else a.div[d]
            bd = 1 if (b.contig[d] > 1 and av != 1) else b.div[d]
            dv = min(ad * bd, MAXDIV)
            k = gcd(a.const[d], b.const[d])
        elif op == "div":
            c = a.contig[d] if bv == 1 else 1
            k = gcd(a.const[d], b.const[d])
            if _is_contig_dim(a, shape, d) and _is_const_dim(b, shape, d):
                k = max(k, gcd(a.contig[d], a.div[d], b.div[d]))
            if av == 0 or bv == 1:
                dv = a.div[d]
            elif bv is not None and bv != 0 and (abs(bv) & (abs(bv) - 1)) == 0 and a.contig[d] == 1:
                dv = max(1, a.div[d] // abs(bv))
            else:
                dv = 1
        elif op == "rem":
            c = 1
            if _is_contig_dim(a, shape, d) and _is_const_dim(b, shape, d):
                c = gcd(a.contig[d], a.div[d], b.div[d])
            dv = gcd(a.div[d], b.div[d]) if b.const[d] > 1 else 1
            k = (shape[d] if shape else 1) if bv == 1 else gcd(a.const[d], b.const[d])
        elif op in ("and", "or", "xor"):
            c, dv, k = 1, 1, gcd(a.const[d], b.const[d])
        elif op == "shl":
            c = a.contig[d] if bv == 0 else 1
            sh = bv or 0
            ad = 1 if (a.contig[d] > 1 and sh) else a.div[d]
            dv = min(ad << sh, MAXDIV) if sh < 62 else MAXDIV
            k = gcd(a.const[d], b.const[d])
        elif op == "shr":
            c = a.contig[d] if bv == 0 else 1
            if bv is None:
                dv = 1
            else:
                ad = 1 if (a.contig[d] > 1 and bv) else a.div[d]
                dv = max(1, ad >> bv)
            k = gcd(a.const[d], b.const[d])
        else:
            c, dv, k = 1, 1, 1
        contig.append(c)
        div.append(dv)
        const.append(k)
    return AxisInfo(contig, div, const)


def _fold(op, av, bv, elem_bytes):
    if av is None or bv is None:
        if op == "rem" and bv == 1:
            return 0
        return None
    try:
        if op == "add":
            return av + bv
        if op == "sub":
            return av - bv
        if op == "addptr":
            return av + bv * elem_bytes
        if op == "mul":
            return av * bv
        if op == "div" and bv != 0:
            return int(av / bv)
        if op == "rem" and bv != 0:
            return av - int(av / bv) * bv
        if op == "and":
            return av & bv
        if op == "or":
            return av | bv
        if op == "xor":
            return av ^ bv
        if op == "shl":
            return av << bv
        if op == "shr":
            return av >> bv
    except (ValueError, OverflowError):
        return None
    return None


def select(c: AxisInfo | None, a: AxisInfo, b: AxisInfo, cond_is_scalar: bool) -> AxisInfo:
    r = a.rank
    if c is not None and c.value is not None:
        return b if c.value == 0 else a
    cc = c.const if c is not None else (1,) * r
    if cond_is_scalar:
        const = [gcd(a.const[d], b.const[d]) for d in range(r)]
        contig = [gcd(a.contig[d], b.contig[d]) for d in range(r)]
    else:
        const = [gcd(a.const[d], b.const[d], cc[d] if d < len(cc) else 1) for d in range(r)]
        contig = [gcd(a.contig[d], b.contig[d], cc[d] if d < len(cc) else 1) for d in range(r)]
    div = [_div_from_contig(a, b, d) for d in range(r)]
    value = a.value if (a.value is not None and a.value == b.value) else None
    return AxisInfo(contig, div, const, value)


def with_hint(a: AxisInfo | None, rank: int, *, contig=None, div=None, const=None) -> AxisInfo:
    """``tl.max_contiguous`` / ``tl.multiple_of`` / ``tl.max_constancy``: the hint replaces the fact."""
    a = a if a is not None else pessimistic(rank)
    r = a.rank

    def vec(h):
        if isinstance(h, (list, tuple)):
            h = [int(x) for x in h]
            return tuple(h) if len(h) == r else tuple([h[0]] * r)
        return (int(h),) * r
    return AxisInfo(vec(contig) if contig is not None else a.contig,
                    vec(div) if div is not None else a.div,
                    vec(const) if const is not None else a.const, a.value)
