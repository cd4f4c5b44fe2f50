"""Elementwise ops and index arithmetic, as LLVM and ptxas compile Triton's arith ops (``ConvertTritonGPUToLLVM``).

Integer and pointer values cost one instruction per *distinct register value* per thread: along a dimension
where the value is affine with a compile-time step (``affine``) one register serves all of a thread's
elements (the others are immediate offsets).  Floating-point ops cost per element (fp16/bf16 two per
instruction); fp32 ``a * b + c`` contracts into FFMA, ``fptrunc(fadd(fpext a, fpext b))`` folds into the half
op, a pointer built from a scalar base stays an offset until a memory op uses it.  Constant tiles are
materialized once.  Per-unit costs: ``costs.py``.
"""
from __future__ import annotations

from ..trace import OpKind, Pipe
from . import _core as C
from . import costs as K
from ._layouts import _ept_in, distinct_values


_FP16ISH = ("fp16", "bf16")
_FLOP_KINDS = {"add": 1, "sub": 1, "mul": 1, "truediv": 1, "fma": 2, "exp": 1, "exp2": 1, "log": 1, "log2": 1,
               "sqrt": 1, "sqrt_rn": 1, "rsqrt": 1, "sin": 1, "cos": 1}


def _const_along(t, d) -> bool:
    if not isinstance(t, C.tensor) or not t.shape:
        return True
    if d >= len(t.shape) or t.shape[d] == 1:
        return True
    ax = t.ax
    return ax is not None and d < len(ax.const) and ax.const[d] >= t.shape[d]


def _aff_along(t, d) -> bool:
    if not isinstance(t, C.tensor) or not t.shape or d >= len(t.shape) or t.shape[d] == 1:
        return True
    if t.aff is not None and d < len(t.aff):
        return t.aff[d]
    return _const_along(t, d)


def _compile_time(t) -> bool:
    """A value known when compiling (a constexpr / literal, or a splat of one)."""
    if not isinstance(t, C.tensor):
        return True
    return t.ax is not None and t.ax.value is not None


def affine(kind, out, ins) -> tuple | None:
    """Per dimension of ``out``: is the (integer or pointer) value affine with a compile-time step there?"""
    r = len(out.shape)
    if r == 0:
        return None
    if kind == "arange":
        return (True,)
    if kind == "full":
        return (True,) * r
    xs = [x for x in ins if isinstance(x, C.tensor)]
    if any(x.shape and len(x.shape) != r for x in xs):
        return (False,) * r
    res = []
    for d in range(r):
        if kind in ("add", "sub", "addptr", "icvt", "cvt"):
            res.append(all(_aff_along(x, d) for x in xs))
        elif kind == "mul" and len(xs) == 2:
            a, b = xs
            if _compile_time(a):
                res.append(_aff_along(b, d))
            elif _compile_time(b):
                res.append(_aff_along(a, d))
            else:
                res.append(_const_along(a, d) and _const_along(b, d))
        elif kind == "shl" and len(xs) == 2 and _compile_time(xs[1]):
            res.append(_aff_along(xs[0], d))
        else:
            res.append(all(_const_along(x, d) for x in xs))
    return tuple(res)


class ElementwiseLowering:
    """``Recorder``'s lowering of elementwise tile ops (``alu``)."""

    def _note_math_fn(self, units: int, name: str | None = None) -> None:
        """``units`` elements per thread go through a multi-instruction math function (``name``, counted among the
        kernel's libdevice functions) or Philox: the register estimate's ``math_fn_elements``."""
        if name is not None:
            self.stats.math_fns.add(name)
        r = self._region()
        r.mfn = max(r.mfn, units)

    def _layout_from(self, out, ins):
        best = None
        for x in ins:
            lay = getattr(x, "lay", None)
            if lay is None or lay.shape != out.shape:
                continue
            if lay.kind == "mma":
                return lay
            if best is None:
                best = lay
        return best

    def alu(self, out, ins, kind, src_dtype=None):
        ins = [x for x in ins if isinstance(x, C.tensor)]
        if out.lay is None:
            out.lay = self._layout_from(out, ins)
        dt = out.dtype
        shape = out.shape
        site = line = None
        if shape:
            _, line, site = C.user_site()
        if dt.is_int() or dt.is_ptr():
            out.aff = affine(kind, out, ins)
        if self.probe and shape:
            out.bk = (kind, site, tuple(ins), None)
            if out.lay is not None and out.lay.shape == shape:
                for x in ins:
                    self._anchor_input(x, out.lay, shape)
            self._note_half_fold(out, ins, kind, site)
            self._note_contraction(out, ins, kind, site)
        if kind == "full" and shape:
            out.bk = ("full", site, (), None)
            return
        if kind in ("full", "bitcast", "trans", "mov"):
            return
        if shape:
            self._materialize_constants(ins, line)
        if dt.is_floating() and kind in _FLOP_KINDS:
            self.stats.flops += _FLOP_KINDS[kind] * out.numel * (self._active_warps() // self.W)
        deps = [x.src for x in ins]
        n0 = len(self.ops)
        op = self._elementwise(out, ins, kind, src_dtype, deps, site, line)
        if shape and (dt.is_floating() or any(x.dtype.is_floating() for x in ins)):
            # a floating-point tile op: each instruction computes its own registers' elements
            for o in self.ops[n0:]:
                if o.kind == OpKind.ALU and o.n_inst > 1:
                    o.indep = True
        if op is not None:
            out.src = op

    def philox(self, outs, ins, n_rounds: int):
        """``tl.philox`` (under ``tl.rand*``): its rounds as one op; the four counters share it."""
        out = outs[0]
        self._philox_rounds = n_rounds
        self.alu(out, ins, "philox")
        for o in outs[1:]:
            o.src, o.lay, o.aff, o.bk = out.src, out.lay, out.aff, out.bk

    def _materialize_constants(self, ins, line):
        """A constant tile (tl.zeros / tl.full) that a tile op reads is set up in registers once: CS2R per 64
        bits, twice around a software pipeline (fa_fwd's accumulator, rescaled in the loop before its first
        dot: 66 CS2R per thread for 64 registers)."""
        for x in ins:
            if x.src is None and x.bk is not None and x.bk[0] == "full" and x.shape and id(x) not in self._const_done:
                self._const_done.add(id(x))
                self._const_keep.append(x)
                lay = x.lay if x.lay is not None and x.lay.shape == x.shape else None
                lays = [lay] if lay is not None else self._lays(x, x.bk[1])
                n = sum(_ept_in(x.shape, L) for L in lays) * max(1, x.dtype.itemsize // 4)
                lp = self.in_runtime_loop()
                twice = lp is not None and self.facts.sites.get(lp.key, {}).get("pipelined")
                x.src = self._cost(K.MATERIALIZE, n * (2 if twice else 1), (), line)

    def _addptr(self, out, ins, deps, site, line, units, lays):
        """Pointer arithmetic.  A pointer built from a scalar base and 32-bit offsets stays an offset until a
        memory op uses it (LLVM reassociates ``(p + a) + b`` into ``p + (a + b)``): the memory op pays one
        IMAD.WIDE per distinct address; adding an offset that is affine in every dimension is free (immediate
        offsets / the IMAD addend), other offsets are one 32-bit add per distinct value.  A pointer tensor
        advanced in a loop (``ptrs += step``) is a 64-bit IADD3 + IMAD.X per distinct address, plus its
        materialization (IMAD.WIDE) once before the loop."""
        p = ins[0] if ins and ins[0].dtype.is_ptr() else None
        o = ins[1] if len(ins) > 1 else None
        if self.probe and p is not None and p.bk is not None and p.bk[0] == "addptr" and p.bk[1] == site:
            self.facts.get(site)["advance"] = True
        if not out.shape:
            return None
        f = self.facts.sites.get(site) or {}
        if f.get("advance"):
            self._region().addr[site] = (K.REG_NARROW_ADDRESS if f.get("narrow") else 2) * units
            first = None
            if site not in self._advanced:
                self._advanced.add(site)
                first = self._cost(K.ADDR_FROM_BASE, units, deps, line)
            return self._cost(K.ADDR_ADVANCE, units, deps + [first], line)
        if p is None or not p.shape:
            return None
        if o is None or not o.shape or (o.aff is not None and all(o.aff)):
            return None
        return self._cost(K.INT_OP["add"], units, deps, line)

    def _note_contraction(self, out, ins, kind, site):
        """Probe: fp32 ``a * b + c`` contracts into one FFMA (Triton compiles with fp fusion on): the add
        becomes the FFMA and the multiply disappears when the add was its only user (fa_bwd dq's
        ``qk * scale - m``: 32 FFMA, no FMUL)."""
        if kind not in ("add", "sub") or not out.dtype.is_floating() or out.dtype.name in _FP16ISH:
            return
        for y in ins:
            if y.bk is not None and y.bk[0] == "mul" and y.bk[1] is not None and y.dtype == out.dtype:
                self.facts.get(y.bk[1]).setdefault("contracted_users", set()).add(site)
                break

    def _note_half_fold(self, out, ins, kind, site):
        """Probe: LLVM folds fptrunc(fadd/fsub/fmul(fpext a, fpext b)) into the fp16 operation itself (exact for
        fp16 through fp32), so ``(x.to(fp32) * x.to(fp32)).to(fp16)`` is one HMUL2 per pair and no conversions
        (tl_sincos_unfused square_kernel: 23 instructions per warp, HMUL2/HFMA2.MMA only)."""
        for x in ins:
            if x.bk is not None and x.bk[1] is not None:
                self.facts.get(x.bk[1]).setdefault("users", set()).add(site)
        if kind != "cvt" or out.dtype.name not in _FP16ISH or len(ins) != 1 or ins[0].dtype.name != "fp32":
            return
        v = ins[0]
        if v.bk is None or v.bk[0] not in ("add", "sub", "mul") or v.bk[1] is None:
            return
        cvts = [y for y in v.bk[2] if y.shape]
        if not cvts or len(cvts) != len(v.bk[2]):
            return
        for y in cvts:
            if y.bk is None or y.bk[0] != "cvt" or y.bk[1] is None or not y.bk[2] or \
                    y.bk[2][0].dtype.name not in _FP16ISH:
                return
        self.facts.get(v.bk[1])["half_fold"] = True
        self.facts.get(site)["free"] = True
        for y in cvts:
            self.facts.get(y.bk[1]).setdefault("folded_users", set()).add(v.bk[1])

    def _folded(self, site, kind) -> str | None:
        """Chunk runs: 'free' for a conversion the fp16 fold removed, 'half' for the folded op itself."""
        f = self.facts.sites.get(site) if site is not None else None
        if not f:
            return None
        if f.get("free"):
            return "free"
        if f.get("half_fold"):
            return "half"
        users, folded = f.get("users"), f.get("folded_users")
        if kind == "cvt" and users and folded and users <= folded:
            return "free"
        contracted = f.get("contracted_users")
        if kind == "mul" and users and contracted and users <= contracted:
            return "free"
        return None

    def _elementwise(self, out, ins, kind, src_dtype, deps, site, line):
        dt = out.dtype
        shape = out.shape
        fold = self._folded(site, kind) if shape else None
        if fold == "free":
            return self._pass(deps, line)
        if fold == "half":
            units = sum(_ept_in(shape, L) for L in self._lays(out, site))
            return self._cost(K.HALF_OP, units, deps, line)
        lays = self._lays(out, site) if shape else None
        if kind == "s2r":
            return self._cost(K.PROGRAM_ID, 1, deps, line)
        if kind == "arange":
            return self._cost(K.ARANGE, len(lays), deps, line)
        if kind == "shfl":
            return self._cost([(Pipe.LSU, 1, "SHFL.IDX")], sum(_ept_in(shape, L) for L in lays) if shape else 1,
                              deps, line)
        src_float = any(x.dtype.is_floating() for x in ins)
        if kind.startswith("libdevice:") and dt.is_int():
            # libdevice's conversions, bit casts and integer intrinsics: their own instructions per element
            units = sum(_ept_in(shape, L) for L in lays) if shape else 1
            return self._cost(K.LIBDEVICE.get(kind[10:], K.LIBDEVICE_DEFAULT), units, deps, line)
        if (dt.is_int() or dt.is_ptr()) and not (kind in ("fcmp", "cvt") and src_float):
            pred = dt.is_bool()
            if shape:
                units = sum(distinct_values(shape, L, out.aff, out.ax, pred) for L in lays)
            else:
                units = 1
            if kind == "addptr":
                return self._addptr(out, ins, deps, site, line, units, lays)
            if kind == "philox":
                n = getattr(self, "_philox_rounds", 10)
                if shape:
                    units = sum(_ept_in(shape, L) for L in lays)
                self._note_math_fn(units)       # the generator's four-word state per element: registers
                keys = self._cost(K.PHILOX_KEY_ROUND, n, [ins[-1].src], line)
                return self._cost(K.PHILOX_ROUND, units * n * (2 if dt.primitive_bitwidth == 64 else 1),
                                  deps + [keys], line)
            if kind in ("floordiv", "mod"):
                b = ins[1] if len(ins) > 1 else None
                if b is None or _compile_time(b):
                    return self._cost(K.INT_DIV_CONST, units, deps, line)
                key = (site, id(b))
                if key not in self._div_setup:
                    self._div_setup.add(key)
                    self._cost(K.INT_DIV_SETUP, 1, [b.src], line)
                return self._cost(K.INT_DIV, units, deps, line)
            table = K.INT_OP.get(kind)
            if kind == "mul" and any(_compile_time(x) and x.ax.value > 0 and not x.ax.value & (x.ax.value - 1)
                                     for x in ins if isinstance(x, C.tensor) and x.ax is not None):
                table = K.INT_OP["shl"]          # times a power of two: a shift (LEA with the add)
            if table is None:
                table = K.INT_OP["lop"] if pred else K.INT_OP["add"]
            wide = 2 if (dt.primitive_bitwidth == 64 and not dt.is_ptr() and kind in ("add", "sub", "mul")) else 1
            return self._cost(table, units * wide, deps, line)
        # floating-point (and float compares / float -> int conversions): every element
        units = sum(_ept_in(shape, L) for L in lays) if shape else 1
        if shape and dt.is_floating():
            r = self._region()
            r.ew = max(r.ew, units * max(1, dt.itemsize // 4))
        name = dt.name
        half = name in _FP16ISH
        src = src_dtype.name if src_dtype is not None else ""
        if kind == "cvt":
            if half and src not in _FP16ISH:
                table = K.CVT_F32_TO_F16 if src_dtype is None or src_dtype.is_floating() else K.CVT_INT_TO_F32
            elif src in _FP16ISH and not half:
                table = K.CVT_F16_TO_F32
            elif name == "fp64" or src == "fp64":
                table = K.CVT_F64
            elif dt.is_floating():
                table = K.CVT_INT_TO_F32
            else:
                table = K.CVT_F32_TO_INT
            x = ins[0] if ins else None
            if shape and x is not None and x.dtype.is_int() and x.shape == shape:
                # an integer tile kept as a few affine values (offs = base + arange) is converted per element: each
                # element's value is materialized first (one add each beyond the values the tile already holds)
                have = sum(distinct_values(shape, L, x.aff, x.ax, False) for L in lays)
                if units > have:
                    deps = deps + [self._cost(K.INT_OP["add"], units - have, deps, line)]
            return self._cost(table, units, deps, line)
        if kind == "fcmp":
            return self._cost(K.FLOAT_OP["fcmp"], units * (0.5 if any(x.dtype.name in _FP16ISH for x in ins) else 1),
                              deps, line)
        if kind == "truediv" and dt is not C.float64:
            # the reciprocal once per distinct divisor value, then a scaled multiply per element
            b = ins[1] if len(ins) > 1 else None
            n_div = units
            if b is not None and b.shape and shape:
                n_div = sum(_ept_in(b.shape, L) for L in lays)
            elif b is not None and not b.shape:
                n_div = 1
            first = self._cost(K.DIV_RCP, n_div, deps, line)
            return self._cost(K.FLOAT_OP["truediv"], units, [first], line)
        if half and kind in ("add", "sub", "mul", "fma", "fmnmx", "abs", "sel"):
            return self._cost(K.HALF_OP, units, deps, line)
        if name == "fp64" and kind in ("add", "sub", "mul", "fma", "truediv"):
            return self._cost([(Pipe.FP64, 10 if kind == "truediv" else 1, "DFMA")], units, deps, line)
        if kind == "sqrt_rn":
            kind = "sqrt"
        if kind.startswith("libdevice:"):
            name = kind[10:]
            table = K.LIBDEVICE.get(name, K.LIBDEVICE_DEFAULT)
            if sum(n for p, n, _ in table if p != Pipe.BRANCH) > 8:
                self._note_math_fn(units, name)
            return self._cost(table, units * (2 if name not in K.LIBDEVICE_NO_FP64 and dt is C.float64 else 1),
                              deps, line)
        table = K.FLOAT_OP.get(kind)
        if table is None:
            table = K.FLOAT_OP["add"]
        if kind in ("sin", "cos", "log", "log2", "erf"):
            self._note_math_fn(units, kind)
        if kind in ("sin", "cos") and site is not None:
            # the second of sin/cos of one value reuses the first's range reduction
            x = ins[0] if ins else None
            if self.probe and x is not None and x.bk is not None and x.bk[1] is not None:
                seen = self.facts.get(x.bk[1]).setdefault("trig", {})
                other = "cos" if kind == "sin" else "sin"
                if other in seen and seen[other] != site:
                    self.facts.get(site)["trig_shared"] = other
                seen.setdefault(kind, site)
            shared = (self.facts.sites.get(site) or {}).get("trig_shared")
            if shared:
                table = K.FLOAT_OP[f"{kind}_after_{shared}"]
        return self._cost(table, units, deps, line)
