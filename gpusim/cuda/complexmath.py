"""Complex numbers in the SIMT machine: ``complex(re, im)``, ``z.real`` / ``z.imag``, ``z.conjugate()`` and the
``cmath`` functions numba-cuda compiles (``CMATH_FUNCTIONS``), with CPython's special values (a mixin of
``runtime.Chunk``, over ``arith.Arith``'s recording helpers).
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError
from .arith import _cost_dtype
from .values import BOOL, EMPTY, V, _fix, _union


def _complex(re, im):
    """re + i im, the signs of zeros kept (``re + 1j * im`` loses an imaginary -0.0)."""
    re, im = np.broadcast_arrays(np.asarray(re, np.float64), np.asarray(im, np.float64))
    z = np.empty(re.shape, np.complex128)
    z.real, z.imag = re, im
    return z


#: ``cmath`` functions: name -> (arguments, numpy body, result: complex / real / bool / pair)
_CMATH: dict = {
    **{n: (1, getattr(np, m), "complex") for n, m in (
        ("exp", "exp"), ("log", "log"), ("log10", "log10"), ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"),
        ("tan", "tan"), ("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"), ("sinh", "sinh"),
        ("cosh", "cosh"), ("tanh", "tanh"), ("asinh", "arcsinh"), ("acosh", "arccosh"), ("atanh", "arctanh"))},
    "phase": (1, np.angle, "real"), "polar": (1, lambda z: (np.abs(z), np.angle(z)), "pair"),
    "rect": (2, lambda r, phi: _complex(r * np.cos(phi), r * np.sin(phi)), "complex"),
    "isnan": (1, np.isnan, "bool"), "isinf": (1, np.isinf, "bool"), "isfinite": (1, np.isfinite, "bool"),
}
CMATH_FUNCTIONS = frozenset(_CMATH)


def _cmath_special(fn, xs, r):
    """``r`` with the lanes whose inputs are infinite or NaN, or whose zero result has a sign to get right,
    recomputed by Python's ``cmath`` (numba-cuda's cmath follows CPython's tables of special values, where
    numpy's functions differ: cmath.exp(-inf-infj) is 0j, not -0j; cmath.rect(0.0, -1.0) is 0-0j)."""
    import cmath as _cm
    fin = np.ones(np.broadcast_shapes(*(np.shape(x) for x in xs)), bool)
    for x in xs:
        fin = fin & np.isfinite(x)
    if fn == "rect":
        fin = fin & (np.asarray(xs[0]) != 0) & (np.asarray(xs[1]) != 0)
    if fin.all():
        return r
    py = getattr(_cm, fn)
    if isinstance(r, tuple):
        outs = [np.array(p, copy=True) for p in np.broadcast_arrays(*r)]
    else:
        outs = [np.array(np.broadcast_to(r, fin.shape), copy=True)]
    bx = [np.broadcast_to(x, fin.shape) for x in xs]
    for pos in zip(*np.nonzero(~fin)):
        try:
            v = py(*(complex(b[pos]) if fn != "rect" else float(b[pos]) for b in bx))
        except (ValueError, OverflowError):
            v = (complex(np.nan, np.nan),) * len(outs) if len(outs) > 1 else complex(np.nan, np.nan)
        for o, val in zip(outs, v if isinstance(v, tuple) else (v,)):
            o[pos] = val
    if isinstance(r, tuple):
        return tuple(o if np.ndim(p) else o[()] for o, p in zip(outs, r))
    return outs[0] if np.ndim(r) else outs[0][()]


class ComplexMath:
    """The chunk's complex-number operations (a mixin of ``runtime.Chunk``)."""

    def make_complex(self, args, line) -> V:
        """``complex(re[, im])``: numba's complex128 from numbers (a complex argument is kept as it is)."""
        vs = [self._val(a, line) for a in args]
        if any(np.asarray(v.v).dtype.kind == "c" for v in vs) and len(vs) > 1:
            raise self._err(CompileError, "complex(re, im) of complex parts (numba takes real numbers)", line)
        re_ = vs[0].v
        im = vs[1].v if len(vs) > 1 else 0.0
        # the parts set directly: re + 1j * im would lose an imaginary -0.0 and make complex(1.0, inf) nan+infj
        r = _complex(re_, im) if np.asarray(re_).dtype.kind != "c" else np.asarray(re_, np.complex128)
        cst = all(v.const for v in vs)
        deps = ()
        for v in vs:
            deps = _union(deps, v.deps)
        return V(_fix(r if r.ndim else np.complex128(r)), deps, cst)      # the pair of registers: no instruction

    def complex_part(self, obj: V, name: str, line) -> V:
        """``z.real`` / ``z.imag`` of a complex value (its registers' halves: no instruction)."""
        v = np.real(obj.v) if name == "real" else np.imag(obj.v)
        return V(_fix(np.asarray(v) if np.ndim(v) else v.dtype.type(v) if hasattr(v, "dtype") else v), obj.deps,
                 obj.const)

    def conjugate(self, obj: V, line) -> V:
        n0 = len(self.ops)
        if self.recording and not obj.const and self.mask is not EMPTY:
            self._rec(("neg", _cost_dtype(np.dtype(np.float32 if obj.v.dtype.itemsize == 8 else np.float64))), line,
                      obj.deps)
        return V(_fix(np.conj(obj.v)), self._out(obj.deps, n0), obj.const)

    def cmath(self, fn, args, line):
        """``cmath.*``: complex functions numba-cuda compiles (``CMATH_FUNCTIONS``); results in complex128 unless
        the argument is complex64."""
        if fn == "log" and len(args) == 2:
            # cmath.log(z, base): numba types both as one complex type and computes log(z) / log(base)
            vs = [self._val(a, line) for a in args]
            small = all(np.asarray(v.v).dtype in (np.dtype(np.complex64), np.dtype(np.float32)) for v in vs)
            ct = np.dtype(np.complex64 if small else np.complex128)
            num = self.cmath("log", (V(_fix(np.asarray(vs[0].v).astype(ct)), vs[0].deps, vs[0].const),), line)
            den = self.cmath("log", (V(_fix(np.asarray(vs[1].v).astype(ct)), vs[1].deps, vs[1].const),), line)
            return self.binop("truediv", num, den, line)
        nargs, f, ret = self._function_spec(_CMATH, "cmath", fn, args, line)
        vs = [self._val(a, line) for a in args]
        t0 = np.asarray(vs[0].v).dtype
        ct = np.dtype(np.complex64) if t0 in (np.dtype(np.complex64), np.dtype(np.float32)) else np.dtype(np.complex128)
        xs = [np.asarray(v.v, np.float64) if fn == "rect" else np.asarray(v.v).astype(ct) for v in vs]
        with np.errstate(all="ignore"):
            r = f(*xs)
            if ret != "bool":
                r = _cmath_special(fn, xs, r)
        cst, out = self._recorded(vs, ("cmath", ct.name), line)
        real_t = np.float32 if ct == np.complex64 else np.float64
        if ret == "pair":
            return tuple(V(_fix(np.asarray(p, real_t)), out, cst) for p in r)
        if ret == "bool":
            return V(_fix(np.asarray(r, BOOL)), out, cst)
        if ret == "real":
            return V(_fix(np.asarray(r, real_t)), out, cst)
        return V(_fix(np.asarray(r, ct)), out, cst)
