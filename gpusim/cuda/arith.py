"""The ALU of the SIMT machine: arithmetic, comparisons, conversions, math functions and bit intrinsics.

Every operation computes on all lanes at once with numba's typing rules (``values.arith_type``: integers widen to
64 bit) and records the instructions numba-cuda's compiler emits for it (``costs.py``): conversions once per value
and type (CSE), ``x*y + z`` fused into an FMA as ptxas does, 64-bit integer arithmetic costed as 32-bit inside
``e & small_constant`` (LLVM's demanded-bits narrowing), libdevice math functions with their scratch registers.
Units: warp instructions, flops per lane.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from . import costs as C_
from .valnum import log2_const, numbered, operand_key, provenance, remember
from .values import (ARRAYS, BOOL, EMPTY, F16, F32, F64, I32, I64, U32, U64, ArrayView, V, _fix, _union, arith_type,
                     const, convert, short, unify)


def _narrow_dtype(dt: np.dtype) -> str:
    """Cost dtype of integer arithmetic whose high 32 bits nobody reads (see ``Chunk.narrow``)."""
    if dt.kind in "iu" and dt.itemsize == 8:
        return "int32" if dt.kind == "i" else "uint32"
    return _cost_dtype(dt)


def _cost_dtype(dt: np.dtype) -> str:
    if dt.kind in "iu" and dt.itemsize < 4:
        return "int32" if dt.kind == "i" else "uint32"
    return dt.name


_BIN_UFUNC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
              "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "lshift": np.left_shift,
              "rshift": np.right_shift, "bitand": np.bitwise_and, "bitor": np.bitwise_or,
              "bitxor": np.bitwise_xor}
_CMP_UFUNC = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
              "ne": np.not_equal}
_COST_OP = {"lshift": "shift", "rshift": "shift", "bitand": "bitop", "bitor": "bitop", "bitxor": "bitop"}
_CONST_KEYED = frozenset(("floordiv", "mod", "mul", "bitand", "bitor", "bitxor"))  # cheaper by a constant
_COMMUTATIVE = frozenset(("mul", "bitand", "bitor", "bitxor"))


# ---- math functions ---------------------------------------------------------------------------------------------

def _vec(fn):
    uf = np.frompyfunc(fn, 1, 1)

    def impl(x):
        if type(x) is not np.ndarray:
            try:
                return type(x)(fn(float(x)))
            except (ValueError, OverflowError):
                return type(x)(np.nan)
        return uf(x.astype(np.float64)).astype(np.float64)
    return impl


def _safe(fn):
    def f(v):
        try:
            return fn(v)
        except (ValueError, OverflowError):
            return math.inf if fn is math.gamma and v > 0 else math.nan
    return f


def _safe2(fn):
    def f(a, b):
        try:
            return fn(float(a), float(b))
        except (ValueError, OverflowError):
            return math.nan
    return f


def _pair(fn, x):
    """``math.frexp`` / ``math.modf`` on an array: (mantissa, exponent) / (fraction, integral part)."""
    if fn == "frexp":
        m, e = np.frexp(x)
        return m, np.asarray(e).astype(np.int32)
    f, i = np.modf(x)
    return f, i


_MATH: dict = {
    "sqrt": (1, np.sqrt, "same"), "exp": (1, np.exp, "same"), "exp2": (1, np.exp2, "same"),
    "expm1": (1, np.expm1, "same"), "log": (1, np.log, "same"), "log2": (1, np.log2, "same"),
    "log10": (1, np.log10, "same"), "log1p": (1, np.log1p, "same"), "sin": (1, np.sin, "same"),
    "cos": (1, np.cos, "same"), "tan": (1, np.tan, "same"), "asin": (1, np.arcsin, "same"),
    "acos": (1, np.arccos, "same"), "atan": (1, np.arctan, "same"), "sinh": (1, np.sinh, "same"),
    "cosh": (1, np.cosh, "same"), "tanh": (1, np.tanh, "same"), "asinh": (1, np.arcsinh, "same"),
    "acosh": (1, np.arccosh, "same"), "atanh": (1, np.arctanh, "same"), "fabs": (1, np.abs, "same"),
    "floor": (1, np.floor, "int"), "ceil": (1, np.ceil, "int"), "trunc": (1, np.trunc, "int"),
    "erf": (1, _vec(_safe(math.erf)), "same"), "erfc": (1, _vec(_safe(math.erfc)), "same"),
    "gamma": (1, _vec(_safe(math.gamma)), "same"), "lgamma": (1, _vec(_safe(math.lgamma)), "same"),
    "isnan": (1, np.isnan, "bool"), "isinf": (1, np.isinf, "bool"), "isfinite": (1, np.isfinite, "bool"),
    "degrees": (1, np.degrees, "same"), "radians": (1, np.radians, "same"),
    "pow": (2, np.power, "same"), "atan2": (2, np.arctan2, "same"), "hypot": (2, np.hypot, "same"),
    "fmod": (2, np.fmod, "same"), "copysign": (2, np.copysign, "same"),
    "nextafter": (2, np.nextafter, "same"),
    "cbrt": (1, np.cbrt, "same"), "rsqrt": (1, lambda x: 1 / np.sqrt(x), "same"),
    "remainder": (2, lambda x, y: np.asarray(np.frompyfunc(_safe2(math.remainder), 2, 1)(x, y), np.float64),
                  "same"),
    "ldexp": (2, lambda x, e: x * np.exp2(np.trunc(e)), "same"),
    "frexp": (1, None, "pair"), "modf": (1, None, "pair"),
}
MATH_FUNCTIONS = frozenset(_MATH)


def _f32(fn):
    return lambda x: fn(x.astype(np.float32))


#: ``cuda.fp16`` functions: name -> (arguments, numpy body on float64 values, cost key)
_FP16: dict = {
    "hadd": (2, np.add, ("add", "float16")), "hsub": (2, np.subtract, ("sub", "float16")),
    "hmul": (2, np.multiply, ("mul", "float16")), "hdiv": (2, np.true_divide, ("truediv", "float16")),
    "hfma": (3, lambda a, b, c: a * b + c, ("fma", "float16")),
    "hneg": (1, np.negative, ("neg", "float16")), "habs": (1, np.abs, ("abs", "float16")),
    "hmax": (2, np.maximum, ("max", "float16")), "hmin": (2, np.minimum, ("min", "float16")),
    "heq": (2, np.equal, ("cmp", "float16")), "hne": (2, np.not_equal, ("cmp", "float16")),
    "hge": (2, np.greater_equal, ("cmp", "float16")), "hgt": (2, np.greater, ("cmp", "float16")),
    "hle": (2, np.less_equal, ("cmp", "float16")), "hlt": (2, np.less, ("cmp", "float16")),
    "hsin": (1, _f32(np.sin), ("sin", "float16")), "hcos": (1, _f32(np.cos), ("cos", "float16")),
    "hlog": (1, _f32(np.log), ("log", "float16")), "hlog2": (1, _f32(np.log2), ("log2", "float16")),
    "hlog10": (1, _f32(np.log10), ("log10", "float16")), "hexp": (1, _f32(np.exp), ("exp", "float16")),
    "hexp2": (1, _f32(np.exp2), ("exp2", "float16")),
    "hexp10": (1, _f32(lambda x: np.power(np.float32(10), x)), ("exp", "float16")),
    "hsqrt": (1, _f32(np.sqrt), ("sqrt", "float16")), "hrsqrt": (1, _f32(lambda x: 1 / np.sqrt(x)), ("rsqrt", "float16")),
    "hrcp": (1, _f32(lambda x: 1 / x), ("truediv", "float16")),
    "hceil": (1, np.ceil, ("ceil", "float16")), "hfloor": (1, np.floor, ("floor", "float16")),
    "htrunc": (1, np.trunc, ("trunc", "float16")), "hrint": (1, np.rint, ("round", "float16")),
}
FP16_FUNCTIONS = frozenset(_FP16)

#: numba's (``operator`` module's) names of the bitwise operators, for messages
_NUMBA_OP = {"bitand": "and_", "bitor": "or_", "bitxor": "xor", "lshift": "lshift", "rshift": "rshift"}

class Arith:
    """The chunk's (``runtime.Chunk``) arithmetic and math: each method takes ``V`` operands (or Python numbers)
    and returns the ``V`` result, recording the instructions under the current mask."""

    def _cvt(self, v: V, dt: np.dtype, line):
        """v converted to dt, recording the conversion instruction when it is not folded."""
        x = v.v
        if x.dtype == dt:
            return x
        if self.recording and not v.const and self.mask is not EMPTY \
                and not (self.narrowed and x.dtype.kind in "iub" and dt.kind in "iu"):
            a, b = short(x.dtype), short(dt)
            if a != b and not (a[0] in "iu" and b[0] in "iu" and a[1:] == b[1:]):
                k = (v.key(), b)
                if k not in self._cvt_seen:          # a value is converted once (CSE, hoisted out of loops)
                    self._cvt_seen.add(k)
                    self._rec(("cvt", a, b), line, v.deps)
        return convert(x, dt)

    def truth(self, c, line) -> V:
        c = self._val(c, line)
        if c.v.dtype == BOOL:
            return c
        r = _fix(c.v != 0)
        n0 = len(self.ops)
        if self.recording and not c.const:
            self._rec(("not", _cost_dtype(c.v.dtype)), line, c.deps)
        return V(r, self._out(c.deps, n0), c.const)

    def binop(self, op, a, b, line) -> V:
        if op == "add" and type(a) is tuple and type(b) is tuple:
            return a + b                                  # tuple concatenation (compile-time shapes, as numba's)
        if op == "mul" and (type(a) is tuple) != (type(b) is tuple):
            t, n = (a, b) if type(a) is tuple else (b, a)
            nv = self._val(n, line)
            if nv.const and nv.v.dtype.kind in "iu":
                return t * int(nv.v)
        if isinstance(a, tuple) or isinstance(b, tuple):
            raise self._err(UnsupportedConstruct, f"arithmetic '{op}' on tuples", line)
        if type(a) is str and type(b) is str and op == "add":
            return a + b                                  # compile-time strings, folded as numba folds them
        if isinstance(a, ARRAYS) or isinstance(b, ARRAYS):
            raise self._err(CompileError, f"an array expression ('{op}' of a whole array) allocates a new array: "
                            "NRT required but not enabled in numba-cuda kernels", line)
        a = self._val(a, line)
        b = self._val(b, line)
        ta, tb = a.v.dtype, b.v.dtype
        if (ta.kind == "c" or tb.kind == "c") and op not in ("add", "sub", "mul", "truediv", "pow"):
            raise self._err(CompileError, f"No implementation of function {_NUMBA_OP.get(op, op)}({ta}, {tb}): "
                            "complex numbers take + - * / ** only (numba)", line)
        if op in ("bitand", "bitor", "bitxor") and ta == BOOL and tb == BOOL:
            ct = BOOL
        elif op == "truediv" and ta.kind in "iub" and tb.kind in "iub":
            ct = F64
        elif op == "pow" and ta.kind == "f" and tb.kind in "iub":
            ct = ta                                       # float ** int keeps the float type (powi)
        elif op in ("lshift", "rshift") and ta.kind in "iub" and tb.kind in "iub":
            ct = U64 if ta.kind == "u" else I64         # the left operand's signedness, widened
        else:
            ct = arith_type(ta, tb)
            if op in _COST_OP and ct.kind == "f":
                raise self._err(CompileError, f"bitwise operation on floating-point values: no {_NUMBA_OP.get(op, op)}({ta}, {tb})", line)
        cst = a.const and b.const
        rec = self.recording and not cst and self.mask is not EMPTY
        n0 = len(self.ops)
        x = a.v if ta == ct else (a.v.astype(ct) if (a.const or not rec) else self._cvt(a, ct, line))
        y = b.v if tb == ct else (b.v.astype(ct) if (b.const or not rec) else self._cvt(b, ct, line))
        if op == "pow" and ct.kind in "iu" and np.any(y < 0):
            y = np.maximum(y, 0)
        r = _fix(_BIN_UFUNC[op](x, y))
        deps = _union(a.deps, b.deps)
        # x & c with a constant c >= 0 is known non-negative (LLVM drops the index wraparound)
        nn = op == "bitand" and ct.kind in "iu" and ((b.const and b.v >= 0) or (a.const and a.v >= 0))
        base, pow2 = provenance(op, a, b, ct)
        if base is not None and a.nn | b.nn:
            nn = True
        if rec:
            # the same operation on the same values under the same mask was computed already (``2 * i`` written
            # twice, as in ``a[2 * i] = a[2 * i] + 1``): LLVM's GVN reuses it, so the value is the earlier one --
            # no instruction, and the same key, so that the addresses built on it are reused too
            ck = (op, ct.str, operand_key(a), operand_key(b), self.mask.sid)
            hit = self._arith_cse.get(ck)
            if hit is not None:
                return numbered(hit, r, cst, nn, base, pow2)
            cop = _COST_OP.get(op, op)
            kc = b.const or (a.const and op in _COMMUTATIVE)
            cd = _cost_dtype(ct) if not self.narrowed else _narrow_dtype(ct)
            key = (cop, cd, "const") if (kc and op in _CONST_KEYED) else (cop, cd)
            self._rec(key, line, deps, C_.FLOPS_PER_LANE.get(op, 0) if ct.kind == "f" else 0)
            if op in ("floordiv", "mod") and not kc and ct == I64 and ta.itemsize == 8 and not cd.endswith("32"):
                self._rec(("int64_min_check", op), line, deps)      # the dividend is not a widened 32-bit value
            return remember(self._arith_cse, ck, numbered(None, r, cst, nn, base, pow2, self._out(deps, n0)))
        return numbered(None, r, cst, nn, base, pow2, self._out(deps, n0))

    def fma(self, x, y, z, line, sub=False, zfirst=False) -> V:
        """``x*y + z`` (``zfirst``: ``z + x*y``; ``sub``: ``x*y - z`` or ``z - x*y``) fused as ptxas does."""
        x = self._val(x, line)
        y = self._val(y, line)
        z = self._val(z, line)
        if x.const and y.const or not self.recording or self.mask is EMPTY or \
                "c" in (x.v.dtype.kind, y.v.dtype.kind, z.v.dtype.kind):
            p = self._nr(self.binop, "mul", x, y, line)
            if sub:
                return self.binop("sub", z, p, line) if zfirst else self.binop("sub", p, z, line)
            return self.binop("add", z, p, line) if zfirst else self.binop("add", p, z, line)
        pt = arith_type(x.v.dtype, y.v.dtype)
        rt = arith_type(pt, z.v.dtype)
        if pt != rt:      # the product is converted before the add: no fusion
            p = self.binop("mul", x, y, line)
            if sub:
                return self.binop("sub", z, p, line) if zfirst else self.binop("sub", p, z, line)
            return self.binop("add", z, p, line) if zfirst else self.binop("add", p, z, line)
        ck = ("fma", sub, zfirst, rt.str, operand_key(x), operand_key(y), operand_key(z), self.mask.sid)
        hit = self._arith_cse.get(ck)           # computed already (value numbering, as in binop)
        if hit is None:
            xv = self._cvt(x, pt, line) if not x.const else x.v.astype(pt)
            yv = self._cvt(y, pt, line) if not y.const else y.v.astype(pt)
            zv = self._cvt(z, rt, line) if not z.const else z.v.astype(rt)
        else:
            xv, yv, zv = x.v.astype(pt), y.v.astype(pt), z.v.astype(rt)
        p = xv * yv
        r = _fix((zv - p if zfirst else p - zv) if sub else (zv + p if zfirst else p + zv))
        base = self._fma_base(x, y, z, rt, sub, zfirst)
        if hit is not None:
            return numbered(hit, r, False, False, base)
        deps = _union(_union(x.deps, y.deps), z.deps)
        n0 = len(self.ops)
        if base is not None:
            # the product exists and c fits its free low bits: the sum is an or of the low word
            self._rec(("bitop", _cost_dtype(rt), "const"), line, deps)
        else:
            self._rec(("fma", _cost_dtype(rt) if not self.narrowed else _narrow_dtype(rt)), line, deps,
                      2 if rt.kind == "f" else 0)
        return remember(self._arith_cse, ck, numbered(None, r, False, False, base, 0, self._out(deps, n0)))

    def _fma_base(self, x, y, z, rt, sub, zfirst):
        """The provenance (see ``V.base``) of a fused integer ``x * y + c``: the product's value when it was
        computed before as a value of its own (``a[2 * i]`` then ``a[2 * i + 1]``), a constant factor 2^m and
        0 <= c < 2^m (the low bits are free: the sum is an or, its sign the product's)."""
        if rt.kind not in "iu" or sub or not z.const or x.const == y.const:
            return None
        k, u = (x, y) if x.const else (y, x)
        m = log2_const(k)
        c = int(z.v)
        if not m or not 0 <= c < (1 << m):
            return None
        hit = self._arith_cse.get(("mul", rt.str, operand_key(x), operand_key(y), self.mask.sid)) or \
            self._arith_cse.get(("mul", rt.str, operand_key(y), operand_key(x), self.mask.sid))
        return (hit[0], c) if hit is not None else None

    def narrow(self, fn):
        """Evaluate ``fn()`` (the left side of ``e & small_constant``) with 64-bit integer arithmetic costed
        as 32-bit: LLVM's demanded-bits analysis drops the high halves."""
        old = self.narrowed
        self.narrowed = True
        try:
            return fn()
        finally:
            self.narrowed = old

    def _nr(self, fn, *args):
        """Call ``fn`` without recording (the caller records a fused op instead)."""
        old = self.recording
        self.recording = False
        try:
            return fn(*args)
        finally:
            self.recording = old

    def in_range(self, x, lo, hi, positive, line) -> V:
        """``x in range(lo, hi)`` (step 1): ``lo <= x < hi``; ``not in`` when not ``positive``."""
        r = self.binop("bitand", self.compare("le", lo, x, line), self.compare("lt", x, hi, line), line)
        return r if positive else self.binop("bitxor", r, const(True), line)

    def inplace_operand(self, x, op, line):
        """The target of ``x op= y``: numba has no in-place operator on a tuple (``t = t + (3,)`` works)."""
        if type(x) is tuple:
            raise self._err(CompileError, f"No implementation of function i{op} for a tuple (tuples are immutable: "
                            f"write t = t {'+' if op == 'add' else '*'} ...)", line)
        return x

    def _tuple_compare(self, op, a, b, line) -> V:
        """Python's order of tuples, element by element (numba compiles it for tuples of numbers)."""
        if op in ("eq", "ne"):
            if len(a) != len(b):
                return const(op == "ne")
            r = const(True)
            for x, y in zip(a, b):
                r = self.binop("bitand", r, self.compare("eq", x, y, line), line)
            return r if op == "eq" else self.binop("bitxor", r, const(True), line)
        strict = {"lt": "lt", "le": "lt", "gt": "gt", "ge": "gt"}[op]
        # from the last element back: r = (x <op> y) | ((x == y) & r); past the shorter one, by length
        r = const({"lt": len(a) < len(b), "le": len(a) <= len(b), "gt": len(a) > len(b),
                   "ge": len(a) >= len(b)}[op])
        for x, y in reversed(list(zip(a, b))):
            r = self.binop("bitor", self.compare(strict, x, y, line),
                           self.binop("bitand", self.compare("eq", x, y, line), r, line), line)
        return r

    def _is_values(self, op, a, b, line) -> V:
        """``a is b`` of two numbers, as numba's generic ``is``: ``==`` when they have one type (a Python literal
        takes the other's), else False; of anything else refused."""
        if type(a) is tuple and type(b) is tuple:       # tuples of one type (an Enum's tuple values) compare
            if len(a) == len(b) and all(type(x) is V and type(y) is V and x.v.dtype == y.v.dtype for x, y in zip(a, b)):
                return self._tuple_compare("eq" if op == "is" else "ne", a, b, line)
            return const(op == "isnot")
        if not all(type(x) is V or isinstance(x, (bool, int, float, np.generic)) for x in (a, b)):
            raise self._err(UnsupportedConstruct, "'is' between two values other than None or numbers", line)
        va, vb = self._val(a, line), self._val(b, line)
        ta, tb = np.asarray(va.v).dtype, np.asarray(vb.v).dtype
        same = ta == tb or (type(a) is not V and ta.kind == tb.kind) or (type(b) is not V and ta.kind == tb.kind)
        if not same:
            return const(op == "isnot")
        return self.compare("eq" if op == "is" else "ne", va, vb, line)

    def compare(self, op, a, b, line) -> V:
        if type(a) is str and type(b) is str and op in ("eq", "ne"):
            return const((a == b) == (op == "eq"))        # compile-time strings
        if op in ("in", "notin"):                        # x in (a, b, c): x == a or x == b or x == c
            if type(b) is not tuple:
                raise self._err(UnsupportedConstruct, f"'{'in' if op == 'in' else 'not in'}' of anything but a tuple",
                                line)
            r = const(False)
            for y in b:
                r = self.binop("bitor", r, self.compare("eq", a, y, line), line)
            return r if op == "in" else self.binop("bitxor", r, const(True), line)
        if op in ("is", "isnot"):                        # numba decides `x is None` from x's type
            if a is not None and b is not None:
                return self._is_values(op, a, b, line)
            return const((a is None and b is None) == (op == "is"))
        if type(a) is tuple and type(b) is tuple:
            return self._tuple_compare(op, a, b, line)
        a = self._val(a, line)
        b = self._val(b, line)
        ta, tb = a.v.dtype, b.v.dtype
        if (ta.kind == "c" or tb.kind == "c") and op not in ("eq", "ne"):
            raise self._err(CompileError, f"No implementation of function {op}({ta}, {tb}): complex numbers are not "
                            "ordered (numba)", line)
        ct = BOOL if (ta == BOOL and tb == BOOL) else arith_type(ta, tb)
        cst = a.const and b.const
        rec = self.recording and not cst and self.mask is not EMPTY
        n0 = len(self.ops)
        cost_t = ct
        if rec and ct.kind in "iu" and ct.itemsize == 8 and (a.const or b.const):
            # a 32-bit value against a constant that fits: LLVM compares in 32 bits, no sign extension
            u, w = (b, a) if a.const else (a, b)
            if u.v.dtype.kind in "iu" and u.v.dtype.itemsize <= 4 and -2 ** 31 <= int(w.v) < 2 ** 31:
                cost_t = I32 if u.v.dtype.kind == "i" else U32
                x, y = a.v.astype(ct), b.v.astype(ct)
        if cost_t is ct:
            x = a.v if ta == ct else (a.v.astype(ct) if (a.const or not rec) else self._cvt(a, ct, line))
            y = b.v if tb == ct else (b.v.astype(ct) if (b.const or not rec) else self._cvt(b, ct, line))
        r = _fix(_CMP_UFUNC[op](x, y))
        deps = _union(a.deps, b.deps)
        if rec:
            self._rec(("cmp", _cost_dtype(cost_t)), line, deps)
        return V(r, self._out(deps, n0), cst)

    def unop(self, op, a, line) -> V:
        a = self._val(a, line)
        t = a.v.dtype
        if op == "not":
            c = self.truth(a, line)
            return V(_fix(np.logical_not(c.v)), (), c.const)     # predicate negation is free
        if op == "pos":
            return a
        ct = I64 if t.kind in "b" else (arith_type(t, t) if t.kind in "iu" else t)
        rec = self.recording and not a.const and self.mask is not EMPTY
        n0 = len(self.ops)
        x = a.v if t == ct else (self._cvt(a, ct, line) if rec else a.v.astype(ct))
        if op == "neg":
            r = np.negative(x)
            key = ("neg", _cost_dtype(ct))
        elif op == "invert":
            if ct.kind == "f":
                raise self._err(CompileError, "bitwise inversion of a floating-point value", line)
            r = np.invert(x)
            key = ("bitop", _cost_dtype(ct))
        else:  # pragma: no cover
            raise self._err(UnsupportedConstruct, f"unary operator {op}", line)
        if rec:
            self._rec(key, line, a.deps)
        return V(_fix(r), self._out(a.deps, n0), a.const)

    def cast(self, x, dt, line) -> V:
        """``np.float32(x)``, ``int(x)``, ``float(x)``, ``bool(x)`` ..."""
        if isinstance(x, tuple):
            raise self._err(UnsupportedConstruct, "converting a tuple", line)
        x = self._val(x, line)
        dt = np.dtype(dt)
        if dt == BOOL:
            return self.truth(x, line)
        if x.v.dtype == dt:
            return x
        n0 = len(self.ops)
        if self.recording and not x.const and self.mask is not EMPTY:
            self._cvt(x, dt, line)
        return V(_fix(convert(x.v, dt)), self._out(x.deps, n0), x.const)

    def builtin_num(self, kind, x, line) -> V:
        """``int(x)`` / ``float(x)``: integers (floats) keep their type, others convert to int64 (float64)."""
        v = self._val(x, line)
        k = v.v.dtype.kind
        if kind == "int":
            return v if k in "iu" else self.cast(v, I64, line)
        return v if k == "f" else self.cast(v, F64, line)

    def select_value(self, c: V, a: V, b: V, line) -> V:
        """Lane-wise ``a if c else b`` of two computed values (SEL)."""
        ta, tb = a.v.dtype, b.v.dtype
        dt = unify(ta, tb)
        r = _fix(np.where(c.v, a.v.astype(dt) if ta != dt else a.v, b.v.astype(dt) if tb != dt else b.v))
        cst = c.const and a.const and b.const
        deps = _union(c.deps, _union(a.deps, b.deps))
        n0 = len(self.ops)
        if self.recording and not cst:
            self._rec(("select",), line, deps)
        return V(r, self._out(deps, n0), cst)

    # ---- builtins / math -----------------------------------------------------------------------------------
    def builtin_divmod(self, a, b, line) -> tuple:
        """``divmod(a, b)``: ``(a // b, a % b)``, Python's signs, as numba's."""
        return self.binop("floordiv", a, b, line), self.binop("mod", a, b, line)

    def minmax(self, which, args, line) -> V:
        if len(args) == 1 and type(args[0]) is tuple:
            args = args[0]
        if len(args) == 1 and type(args[0]) is ArrayView and args[0].shape is None and args[0].ndim == 1:
            return self.view_fold(args[0], which, line)      # a length per thread: a loop in each thread
        if len(args) == 1 and isinstance(args[0], ARRAYS) and args[0].ndim == 1:
            arr = args[0]                       # max(a) of a 1-d array: numba iterates it (each thread, in order)
            args = [self.getitem(arr, const(j), line) for j in range(arr.shape[0])]
            if len(args) == 1:
                return args[0]
        if len(args) < 2:
            raise self._err(UnsupportedConstruct, f"{which}() of fewer than two values", line)
        acc = self._val(args[0], line)
        for b in args[1:]:
            b = self._val(b, line)
            dt = unify(acc.v.dtype, b.v.dtype)
            x = acc.v.astype(dt) if acc.v.dtype != dt else acc.v
            y = b.v.astype(dt) if b.v.dtype != dt else b.v
            r = _fix(np.where(y < x, y, x) if which == "min" else np.where(y > x, y, x))
            cst = acc.const and b.const
            deps = _union(acc.deps, b.deps)
            n0 = len(self.ops)
            if self.recording and not cst and self.mask is not EMPTY:
                if acc.v.dtype != dt and not acc.const:
                    self._cvt(acc, dt, line)
                if b.v.dtype != dt and not b.const:
                    self._cvt(b, dt, line)
                self._rec((which, _cost_dtype(dt)), line, deps)
            acc = V(r, self._out(deps, n0), cst)
        return acc

    def builtin_abs(self, a, line) -> V:
        a = self._val(a, line)
        t = a.v.dtype
        x = a.v.astype(I64) if t.kind == "b" else a.v
        r = _fix(np.abs(x))
        n0 = len(self.ops)
        if self.recording and not a.const and self.mask is not EMPTY:
            self._rec(("abs", _cost_dtype(t if t.kind == "c" else r.dtype)), line, a.deps)
        return V(r, self._out(a.deps, n0), a.const)

    def builtin_round(self, a, nd, line) -> V:
        a = self._val(a, line)
        if nd is None:
            r = _fix(np.rint(a.v).astype(I64)) if a.v.dtype.kind == "f" else _fix(a.v.astype(I64))
        else:
            nd = int(self._val(nd, line).v)
            r = _fix(_round_ndigits(a.v, nd))
        n0 = len(self.ops)
        if self.recording and not a.const and self.mask is not EMPTY and a.v.dtype.kind == "f":
            self._rec(("round", _cost_dtype(a.v.dtype)), line, a.deps)
            if nd is None:
                self._rec(("cvt", short(a.v.dtype), "i64"), line, self._out(a.deps, n0))
        return V(r, self._out(a.deps, n0), a.const)

    def _function_spec(self, table, where, fn, args, line):
        """``table[fn]`` (its first entry the number of arguments), with the errors for an unknown function or the
        wrong number of arguments."""
        spec = table.get(fn)
        if spec is None:
            raise self._err(UnsupportedConstruct, f"{where}.{fn} is not supported in kernels", line)
        if len(args) != spec[0]:
            raise self._err(CompileError, f"{where}.{fn} takes {spec[0]} argument(s), got {len(args)}", line)
        return spec

    def math(self, fn, args, line) -> V:
        nargs, impl, ret = self._function_spec(_MATH, "math", fn, args, line)
        vs = [self._val(a, line) for a in args]
        dts = [v.v.dtype for v in vs]
        ct = F32 if all(d == F32 for d in (dts[:1] if fn == "ldexp" else dts)) else F64
        cst = all(v.const for v in vs)
        rec = self.recording and not cst and self.mask is not EMPTY
        n0 = len(self.ops)
        deps = ()
        for v in vs:
            deps = _union(deps, v.deps)
        xs = [v.v.astype(ct) if v.v.dtype != ct and (v.const or not rec) else
              (self._cvt(v, ct, line) if v.v.dtype != ct else v.v) for v in vs]
        if ret == "pair":
            if rec:
                self._rec((fn, ct.name), line, deps)
            a, b = _pair(fn, np.asarray(xs[0]))
            out = self._out(deps, n0)
            return (V(_fix(np.asarray(a).astype(ct)), out, cst),
                    V(_fix(np.asarray(b).astype(np.int32 if fn == "frexp" else ct)), out, cst))
        r = impl(*xs)
        if ret == "same":
            r = np.asarray(r).astype(ct) if type(r) is np.ndarray else ct.type(r)
        elif ret == "int":
            r = np.asarray(r).astype(I64)
        elif ret == "bool":
            r = np.asarray(r, dtype=BOOL)
        r = _fix(r)
        if fn in C_.NO_UNROLL_MATH and (rec or not self.recording):
            self._no_unroll()
        self.L.math_regs = max(self.L.math_regs, C_.MATH_REGISTERS.get(fn, 0))
        if rec:
            self._rec((fn, ct.name), line, deps)
            if ret == "int":
                self._rec(("cvt", short(ct), "i64"), line, self._out(deps, n0))
        return V(r, self._out(deps, n0), cst)

    def fp16(self, name, args, line):
        """``cuda.fp16.h*``: half-precision arithmetic, comparisons and math on float16 values (numba-cuda types
        them for float16 only).  Computed in float64 and rounded once to float16 (exact for add/sub/mul/fma, a
        correctly rounded division); the math functions in float32 (the hardware's are approximations)."""
        nargs, fn, key = self._function_spec(_FP16, "cuda.fp16", name, args, line)
        vs = [self._val(a, line) for a in args]
        if any(np.asarray(v.v).dtype.kind not in "iuf" for v in vs):
            raise self._err(CompileError, f"No implementation of function cuda.fp16.{name} for "
                            f"({', '.join(str(np.asarray(x.v).dtype) for x in vs)}) (numba-cuda takes float16)",
                            line)
        # other numbers are converted to float16 as numba-cuda's overload resolution converts them
        # (cuda.fp16.hmul(h, 2), hadd(h, x_float32))
        vs = [v if np.asarray(v.v).dtype == np.float16 else self.cast(v, F16, line) for v in vs]
        with np.errstate(all="ignore"):
            r = fn(*[np.asarray(v.v, np.float64) for v in vs])
        r = np.asarray(r)
        r = r.astype(BOOL) if r.dtype == np.bool_ else r.astype(np.float16)
        cst, out = self._recorded(vs, key, line)
        return V(_fix(r if r.ndim else r[()]), out, cst)

    def _recorded(self, vs, key, line):
        """Record ``key``'s instructions for a result computed from ``vs`` (unless all are constants): (whether
        the result is a constant, its scoreboard deps)."""
        cst = all(v.const for v in vs)
        deps = ()
        for v in vs:
            deps = _union(deps, v.deps)
        n0 = len(self.ops)
        if self.recording and not cst and self.mask is not EMPTY:
            self._rec(key, line, deps)
        return cst, self._out(deps, n0)

    def intrinsic(self, name, args, line) -> V:
        vs = [self._val(a, line) for a in args]
        x = vs[0]
        if name == "popc":
            r = np.bitwise_count(np.asarray(x.v).astype(np.dtype(f"u{x.v.dtype.itemsize}")))
            key = ("popc",)
        elif name == "fma":
            return self.fma(vs[0], vs[1], vs[2], line)
        elif name == "brev":
            bits = x.v.dtype.itemsize * 8
            u = np.asarray(x.v).astype(np.uint64)
            r = np.zeros_like(u)
            for i in range(bits):
                r |= ((u >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
            r = r.astype(x.v.dtype)
            key = ("bitfn",)
        elif name == "clz":
            bits = x.v.dtype.itemsize * 8
            u = np.asarray(x.v).astype(np.uint64) & np.uint64((1 << bits) - 1)
            for sh in (1, 2, 4, 8, 16, 32):       # smear the highest set bit down, count the ones
                u = u | (u >> np.uint64(sh))
            r = (bits - np.bitwise_count(u).astype(np.int64)).astype(I32)
            key = ("bitfn",)
        elif name == "ffs":
            bits = x.v.dtype.itemsize * 8
            u = np.asarray(x.v).astype(np.uint64) & np.uint64((1 << bits) - 1)
            low = u & (~u + np.uint64(1))          # lowest set bit
            r = np.where(u == 0, 0, np.bitwise_count(low - np.uint64(1)).astype(np.int64) + 1).astype(U32)
            key = ("bitfn",)
        elif name == "cbrt":
            return self.math("cbrt", args, line)
        else:  # pragma: no cover
            raise self._err(UnsupportedConstruct, f"cuda.{name}", line)
        n0 = len(self.ops)
        if self.recording and not x.const and self.mask is not EMPTY:
            self._rec(key, line, x.deps)
        return V(_fix(r), self._out(x.deps, n0), x.const)


def _round_ndigits(x: np.ndarray, nd: int) -> np.ndarray:
    """``round(x, nd)`` as numba-cuda computes it (the classic double rounding of CPython 3.1's float round): scale
    by 10**nd in float64 (10**22 at a time past 22 digits), round half to even, scale back; a scaled value that
    overflows leaves ``x`` as it is, and inf / nan are returned unchanged.  Integers are returned as they are."""
    if x.dtype.kind != "f":
        return x
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        if nd >= 0:
            pow1, pow2 = (10.0 ** (nd - 22), 1e22) if nd > 22 else (10.0 ** nd, 1.0)
            y = x64 * pow1 * pow2
            r = np.where(np.isinf(y), x64, np.rint(y) / pow2 / pow1)
        else:
            pow1 = 10.0 ** (-nd)
            r = np.rint(x64 / pow1) * pow1
        r = np.where(np.isfinite(x64), r, x64)
    return r.astype(x.dtype)
