"""Compiler pass: expressions and calls rewritten into calls into the chunk runtime.

``a[i] + b[i]`` becomes ``_rt.binop('add', _rt.getitem(a, i, 7), _rt.getitem(b, i, 7), 7)``; compile-time
constants are bound once (``self.k``); ``and``/``or``/ternaries evaluate their lazy arms as lambdas (only for the
lanes that need them); calls dispatch on what the callee resolves to: builtins, math functions, dtypes, device
functions (inlined), the ``cuda`` intrinsics (barriers, shuffles, votes, atomics, special registers), the
device libraries (``cuda.random``'s functions, ``cuda.cg.this_grid()``, numpy ufuncs with an output array:
``devlib.py``) and methods of runtime objects (the grid group's ``sync()``).
``cuda.shared.array``/``cuda.local.array`` declarations get their layout slot here.
"""
from __future__ import annotations

import ast

import numpy as np

from .analysis import _contains
from .astgen import _BINOPS, _CMPOPS, _CONSTRUCT_NAMES, _UNOPS, _c, _lam, _load, _rt, _store
from .resolve import _CUDA_CALLS, _CUDA_VALUE, NeedsArgDtypes, _const_tuple, _numba_dtype, devfn_signature
from . import types as _nbtypes
from ..errors import CompileError
from .values import const


class ExpressionRewriter:
    """Expression and call rewriting for ``compiler._FunctionCompiler``."""

    def index(self, sl):
        """A subscript's index: ``lo:hi:step`` becomes a slice of runtime values (``_rt.mkslice``), ``...`` stays."""
        if isinstance(sl, ast.Tuple):
            return ast.Tuple(elts=[self.index(e) for e in sl.elts], ctx=ast.Load())
        if isinstance(sl, ast.Slice):
            parts = [_c(None) if p is None else self.expr(p) for p in (sl.lower, sl.upper, sl.step)]
            return _rt("mkslice", *parts, _c(sl.lineno))
        if isinstance(sl, ast.Constant) and sl.value is Ellipsis:
            return _c(Ellipsis)
        return self.expr(sl)

    def value_of(self, tag, node):
        kind = tag[0]
        line = node.lineno
        if kind == "const":
            return self.k(const(tag[1]))
        if kind == "ctuple":
            return self.k(_const_tuple(tag[1]))
        if kind == "array":
            name = node.id if isinstance(node, ast.Name) else ast.unparse(node)
            return _rt("global_const", self.k(tag[1]), _c(name), _c(line))
        if kind == "devarray":
            name = node.id if isinstance(node, ast.Name) else ast.unparse(node)
            return _rt("global_device", self.k(tag[1]), _c(name), _c(line))
        if kind == "dtype":
            return self.k(tag[1])
        if kind == "none":
            return _c(None)
        if kind == "cuda":
            path = tag[1]
            if path in _CUDA_VALUE:                           # cuda.blockDim as a value: numba's Dim3
                return _rt("dim3", _c(_CUDA_VALUE[path]), _c(line))
            if path[:-1] in _CUDA_VALUE and len(path) == 2:
                return _rt("sreg", _c(_CUDA_VALUE[path[:-1]]), _c("xyz".index(path[1])), _c(line))
            if path == ("laneid",):
                return _rt("sreg", _c("laneid"), _c(0), _c(line))
            if path == ("warpsize",):
                return self.k(const(np.int32(32)))
            raise self.unsupported(f"using cuda.{'.'.join(path)} as a value", node)
        what = ast.unparse(node)
        if kind == "untyped":
            raise self.compile_error(f"Untyped global name {what!r}: Cannot determine Numba type of "
                                     f"<class '{tag[1]}'>", node)
        if kind == "unknown":
            raise self.unsupported(f"global {what!r} of type {type(tag[1]).__name__}", node)
        raise self.unsupported(f"using {what!r} as a value", node)

    def expr(self, n):
        t = type(n)
        line = getattr(n, "lineno", 0)
        if t is ast.Name:
            if n.id in self.locals:
                return _load(n.id)
            return self.value_of(self.static(n), n)
        if t is ast.Constant:
            v = n.value
            if isinstance(v, (bool, int, float, complex)):
                return self.k(const(v))
            if v is None:
                return _c(None)
            if isinstance(v, str):
                return _c(v)        # a compile-time string (numba's Literal[str]): +, ==, != and len() fold
            raise self.unsupported(f"a {type(v).__name__} constant", n)
        if t is ast.BinOp:
            op = _BINOPS.get(type(n.op))
            if op is None:
                raise self.unsupported(f"operator {type(n.op).__name__}", n)
            if op in ("add", "sub"):
                if isinstance(n.left, ast.BinOp) and isinstance(n.left.op, ast.Mult):
                    return _rt("fma", self.expr(n.left.left), self.expr(n.left.right), self.expr(n.right), _c(line),
                               _c(op == "sub"), _c(False))
                if isinstance(n.right, ast.BinOp) and isinstance(n.right.op, ast.Mult):
                    return self.arith(op, self.expr(n.left), n.right, line)
            if op == "bitand":
                # ``e & mask`` with a small constant mask: only the low bits of e matter, so LLVM computes e in
                # 32 bits (demanded-bits narrowing; bank_conflicts' ``(base + r * 32) & (SIZE - 1)``)
                for side, other in ((n.right, n.left), (n.left, n.right)):
                    if self._small_const(side):
                        nar = _rt("narrow", _lam(self.expr(other)))
                        args = (self.expr(n.left), nar) if side is n.left else (nar, self.expr(n.right))
                        return _rt("binop", _c(op), args[0], args[1], _c(line))
            return _rt("binop", _c(op), self.expr(n.left), self.expr(n.right), _c(line))
        if t is ast.UnaryOp:
            return _rt("unop", _c(_UNOPS[type(n.op)]), self.expr(n.operand), _c(line))
        if t is ast.Compare and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn)) \
                and isinstance(n.comparators[0], ast.Call) and not n.comparators[0].keywords \
                and 1 <= len(n.comparators[0].args) <= 2 \
                and self.static(n.comparators[0].func) == ("builtin", "range"):
            ra = n.comparators[0].args                  # x in range(a, b): a <= x < b (numba compiles it)
            lo, hi = (self.k(const(0)), self.expr(ra[0])) if len(ra) == 1 else (self.expr(ra[0]), self.expr(ra[1]))
            return _rt("in_range", self.expr(n.left), lo, hi, _c(isinstance(n.ops[0], ast.In)), _c(line))
        if t is ast.Compare:
            parts = []
            left = self.expr(n.left)
            for i, (op, right) in enumerate(zip(n.ops, n.comparators)):
                o = _CMPOPS.get(type(op))
                if o is None:
                    raise self.unsupported(f"comparison '{type(op).__name__}'", n)
                r = self.expr(right)
                if i < len(n.ops) - 1:
                    tv = self.tmp()
                    r = ast.NamedExpr(target=_store(tv), value=r)
                    parts.append(_rt("compare", _c(o), left, r, _c(line)))
                    left = _load(tv)
                else:
                    parts.append(_rt("compare", _c(o), left, r, _c(line)))
            out = parts[0]
            for p in parts[1:]:
                out = _rt("binop", _c("bitand"), out, p, _c(line))
            return out
        if t is ast.BoolOp:
            is_and = isinstance(n.op, ast.And)
            vals = [self.expr(v) for v in n.values]
            out = vals[-1]
            for v in reversed(vals[:-1]):
                out = _rt("shortcircuit", _c(is_and), v, _lam(out), _c(line))
            return out
        if t is ast.IfExp:
            return _rt("ifexp", self.expr(n.test), _lam(self.expr(n.body)), _lam(self.expr(n.orelse)), _c(line))
        if t is ast.Subscript:
            tag = self.static(n) if isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str) else None
            if tag is not None:                              # Color["red"]: an enum member
                return self.value_of(tag, n)
            if _contains([n.slice], (ast.Slice,)) or any(isinstance(e, ast.Constant) and (e.value is None or e.value is Ellipsis)
                                                         for e in ast.walk(n.slice)):
                # a slicing subscript: its source names the view it makes in messages
                return _rt("getitem", self.expr(n.value), self.index(n.slice), _c(line), _c(ast.unparse(n)))
            return _rt("getitem", self.expr(n.value), self.index(n.slice), _c(line))
        if t is ast.Attribute:
            tag = self.static(n)
            if tag is not None:
                return self.value_of(tag, n)
            return _rt("attr", self.expr(n.value), _c(n.attr), _c(line))
        if t is ast.Tuple:
            return ast.Tuple(elts=[self.expr(e) for e in n.elts], ctx=ast.Load())
        if t is ast.Call:
            return self.call(n)
        raise self.unsupported(_CONSTRUCT_NAMES.get(t, f"'{t.__name__}' expression"), n)

    def _isinstance_spec(self, t):
        """The classes of ``isinstance(x, t)`` as numba types them: ('dtype', float64) for float (numba: a float32
        is not an instance of float, a float64 is), ('dtype', float32) for a numba / numpy scalar type, ('tuple',)
        for tuple; a tuple of classes is any of them."""
        if isinstance(t, ast.Tuple):
            return tuple(s for e in t.elts for s in self._isinstance_spec(e))
        tag = self.static(t)
        if tag is not None and tag[0] == "builtin" and tag[1] in ("int", "float", "bool", "complex"):
            return (("dtype", np.dtype({"int": np.int64, "float": np.float64, "bool": np.bool_,
                                        "complex": np.complex128}[tag[1]])),)
        if tag is not None and tag[0] == "builtin" and tag[1] == "tuple":
            return (("tuple",),)
        if tag is not None and tag[0] == "dtype":
            return (("dtype", np.dtype(tag[1])),)
        raise self.unsupported(f"isinstance() with {ast.unparse(t)!r}", t)

    def _to_declared(self, e, t, line):
        """``e`` converted to the scalar type ``t`` of a device function's declared signature (else as it is)."""
        if isinstance(t, _nbtypes.Scalar):
            return _rt("cast", e, self.k(np.dtype(t.dtype)), _c(line))
        return e

    def _static_arguments(self, py_func, args) -> tuple[dict, list]:
        """The positional arguments of a device-function call that numba-cuda types as compile-time values, which
        the callee is specialized on: functions (``cuda.atomic.add``, a device function), dtypes, and the constant
        a parameter used as an array's shape receives (``cuda.shared.array(n, dtype)``).  Returns ({parameter:
        static tag}, the other arguments)."""
        code = py_func.__code__
        names = code.co_varnames[:code.co_argcount]
        shapes = _shape_params(py_func)
        bound, rest = {}, []
        for i, a in enumerate(args):
            tag = None
            if i < len(names):
                if isinstance(a, (ast.Name, ast.Attribute)):
                    try:
                        tag = self.static(a)
                    except CompileError:
                        tag = None
                elif isinstance(a, (ast.Constant, ast.Tuple)) and names[i] in shapes:
                    try:
                        v = self.static_eval(a)
                        tag = ("ctuple", v) if isinstance(v, tuple) else ("const", v)
                    except CompileError:
                        tag = None
            if tag is not None and (tag[0] in _BINDABLE or (tag[0] in ("const", "ctuple") and names[i] in shapes)):
                bound[names[i]] = tag
            else:
                rest.append(a)
        return bound, rest

    def _local_constant(self, e):
        """The value of ``e`` when it is a local name the function assigns once, from a constant (``N = 100``, a
        tuple of them, or a tuple of such names: ``(TPB, TPB)``): numba types it as a literal, which an array's
        shape may be; else None."""
        if isinstance(e, ast.Tuple):
            parts = []
            for x in e.elts:
                try:
                    v = self.static_eval(x)
                except CompileError:
                    v = self._local_constant(x)
                if not isinstance(v, int) or isinstance(v, bool):
                    return None
                parts.append(v)
            return tuple(parts)
        if not isinstance(e, ast.Name) or e.id in self.params:
            return None
        stores = [n for n in ast.walk(self.fdef) if isinstance(n, ast.Name) and n.id == e.id
                  and isinstance(n.ctx, (ast.Store, ast.Del))]
        assigns = [n for n in ast.walk(self.fdef) if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.targets[0], ast.Name) and n.targets[0].id == e.id]
        if len(stores) != 1 or len(assigns) != 1:
            return None
        try:
            v = self.static_eval(assigns[0].value)
        except CompileError:
            return None
        ok = isinstance(v, int) or (isinstance(v, tuple) and all(isinstance(x, int) for x in v))
        return v if ok and not isinstance(v, bool) else None

    def _param_dtype(self, e):
        """The dtype of ``a.dtype`` where ``a`` is a kernel argument (numba types it as the argument's dtype, a
        compile-time value): known when the kernel is compiled per argument dtypes (``resolve.NeedsArgDtypes``
        asks for that), else None."""
        if not (isinstance(e, ast.Attribute) and e.attr == "dtype" and isinstance(e.value, ast.Name)
                and self.kind == "kernel" and e.value.id in self.params and e.value.id not in self.bound):
            return None
        pd = self.ctx.param_dtypes
        if pd is None:
            raise NeedsArgDtypes(e.value.id)
        return pd.get(e.value.id)

    def _array_decl(self, n, space):
        args = {}
        names = ["shape", "dtype", "alignment"]
        for i, a in enumerate(n.args):
            if i >= 3:
                raise self.compile_error(f"cuda.{space}.array takes (shape, dtype, alignment=None)", n)
            args[names[i]] = a
        for kw in n.keywords:
            if kw.arg not in names:
                raise self.compile_error(f"cuda.{space}.array has no argument {kw.arg!r}", n)
            args[kw.arg] = kw.value
        if "shape" not in args or "dtype" not in args:
            raise self.compile_error(f"cuda.{space}.array needs shape and dtype", n)
        for e in (args["shape"].elts if isinstance(args["shape"], ast.Tuple) else [args["shape"]]):
            if isinstance(e, (ast.BinOp, ast.UnaryOp)) and _contains([e], (ast.Name, ast.Attribute)):
                # Python folds arithmetic on literals (64 * 33); on names numba-cuda types an int64, not a literal
                raise self.compile_error(
                    f"cuda.{space}.array: the shape {ast.unparse(args['shape'])!r} computes {ast.unparse(e)!r} from "
                    "names, which numba-cuda types as int64, not a constant: it refuses the kernel (TypingError: "
                    f"no implementation of {space}.array for (int64, ...)); give the size a name of its own at "
                    "module level (N = BLOCK + 2 * RADIUS)", n)
        try:
            shape = self.static_eval(args["shape"])
        except CompileError:
            shape = self._local_constant(args["shape"])
            if shape is None:
                raise self.compile_error(f"cuda.{space}.array: the shape {ast.unparse(args['shape'])!r} is not a "
                                         "compile-time constant (an int or a tuple of ints)", n) from None
        try:
            dt = self.static_eval(args["dtype"])
        except CompileError:
            dt = self._param_dtype(args["dtype"])
        if isinstance(dt, str):                 # numba takes a dtype's name: cuda.shared.array(4, "float32")
            try:
                dt = np.dtype(dt)
            except TypeError:
                dt = None
        if dt is None or isinstance(dt, (bool, int, float, tuple, str)):
            raise self.compile_error(f"cuda.{space}.array: dtype {ast.unparse(args['dtype'])!r} is not a numba or "
                                     "numpy dtype (np.float32, numba.float32 ...)", n)
        try:
            dtype = np.dtype(dt) if not isinstance(dt, np.dtype) else dt
        except TypeError:
            nd = _numba_dtype(dt)
            if nd is None:
                raise self.compile_error(f"dtype {dt!r} is not supported", n) from None
            dtype = nd
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        if not isinstance(shape, tuple) or not all(isinstance(s, (int, np.integer)) for s in shape):
            raise self.compile_error(f"cuda.{space}.array shape must be an int or a tuple of ints, not {shape!r}", n)
        shape = tuple(int(s) for s in shape)
        dynamic = space == "shared" and (shape == (0,))
        if any(s < 0 for s in shape) or (space == "local" and any(s == 0 for s in shape)):
            raise self.compile_error(f"cuda.{space}.array shape {shape} is invalid (array length <= 0)", n)
        align = self._array_alignment(args.get("alignment"), space, n)
        name = self.assign_target or f"{space}_array@{n.lineno}"
        slot = self.ctx.add_slot(space, name, shape, dtype, dynamic, align)
        return _rt("shared_array" if space == "shared" else "local_array", self.k(slot), _c(n.lineno))

    def _array_alignment(self, e, space, n):
        """``alignment=`` of a shared / local array: None or a constant power of two, a multiple of 8 (numba-cuda's
        checks, with its messages); the array's byte offset is aligned to it."""
        if e is None:
            return None
        try:
            a = self.static_eval(e)
        except CompileError:
            a = self._local_constant(e)
        if a is None:
            return None
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise self.compile_error(f"cuda.{space}.array: alignment must be a constant integer", n)
        a = int(a)
        msg = "Alignment must be positive" if a <= 0 else "Alignment must be a power of 2" if a & (a - 1) else \
            "Alignment must be a multiple of 8" if a % 8 else None
        if msg is not None:
            raise self.compile_error(f"cuda.{space}.array: {msg}", n)
        return a

    def call(self, n):
        line = n.lineno
        unused = self.unused_call is n
        self.unused_call = None
        tag = self.static(n.func)
        if tag is None:
            if isinstance(n.func, ast.Attribute) and not n.keywords and \
                    not any(isinstance(a, ast.Starred) for a in n.args):
                # a method of a runtime object: the grid group's sync() (``g = cuda.cg.this_grid(); g.sync()``)
                return _rt("method", self.expr(n.func.value), _c(n.func.attr),
                           ast.Tuple(elts=[self.expr(a) for a in n.args], ctx=ast.Load()), _c(line))
            raise self.unsupported(f"calling {ast.unparse(n.func)!r} (a local value)", n)
        kind = tag[0]
        if kind == "cuda":
            return self.cuda_call(tag[1], n, unused)
        if any(isinstance(a, ast.Starred) for a in n.args):
            if kind == "devfn" or tag == ("builtin", "min") or tag == ("builtin", "max"):
                # f(*t), max(*t): the tuple's elements are the arguments (unpacked when the call runs)
                star = [ast.Starred(value=self.expr(a.value), ctx=ast.Load()) if isinstance(a, ast.Starred)
                        else self.expr(a) for a in n.args]
                if kind != "devfn":
                    return _rt("minmax", _c(tag[1]), ast.Tuple(elts=star, ctx=ast.Load()), _c(line))
                cf, _, _ = self.ctx.compile_function(tag[1], "device")
                name = f"_gs_D_{cf.name}_{id(cf) % 100000}"
                self.ns[name] = cf.fn
                return ast.Call(func=_load(name), args=[_load("_rt")] + star,
                                keywords=[ast.keyword(arg=kw.arg, value=self.expr(kw.value)) for kw in n.keywords])
            if kind in ("mathfn", "cmathfn") or tag == ("builtin", "complex"):
                # math.atan2(*t), complex(*cmath.polar(z)): the tuple's elements are the arguments
                star = [ast.Starred(value=self.expr(a.value), ctx=ast.Load()) if isinstance(a, ast.Starred)
                        else self.expr(a) for a in n.args]
                fn = {"mathfn": "math", "cmathfn": "cmath"}.get(kind)
                if fn is None:
                    return _rt("make_complex", ast.Tuple(elts=star, ctx=ast.Load()), _c(line))
                return _rt(fn, _c(tag[1]), ast.Tuple(elts=star, ctx=ast.Load()), _c(line))
            raise self.unsupported("starred arguments", n)
        if kind == "extern":
            ext = tag[1]
            what = getattr(ext, "_gpusim_extern", None) or (getattr(ext, "name", "?"), getattr(ext, "sig", "?"),
                                                            getattr(ext, "link", None) or ())
            src = ", ".join(str(x) for x in (what[2] if isinstance(what[2], (list, tuple)) else [what[2]])) or \
                "no source"
            raise self.unsupported(
                f"calling {ast.unparse(n.func)!r}, a foreign function declared with cuda.declare_device("
                f"{what[0]!r}, {str(what[1])!r}) and linked from {src}: gpusim runs the kernel's Python source and "
                f"cannot execute CUDA C/C++ or PTX; write the function in Python as a @cuda.jit(device=True) "
                f"function (it is inlined and costed like the kernel's own code)", n)
        if kind == "vector":
            if n.keywords:
                raise self.compile_error(f"keyword arguments to the vector type {tag[1]}", n)
            return _rt("vector_make", _c(tag[1]), ast.Tuple(elts=[self.expr(a) for a in n.args], ctx=ast.Load()),
                       _c(line))
        if kind == "cudarandom":
            if n.keywords:
                raise self.unsupported(f"keyword arguments to {tag[1]}", n)
            return _rt("rng", _c(tag[1]), ast.Tuple(elts=[self.expr(a) for a in n.args], ctx=ast.Load()), _c(line))
        if kind in ("mathfn", "npufunc", "npbinop"):
            out = self._ufunc_out_arg(tag, n)
            if out is not None:
                args, outn = out
                return _rt("ufunc_out", _c(tag[1]), ast.Tuple(elts=[self.expr(a) for a in args], ctx=ast.Load()),
                           self.expr(outn), _c(line))
            if kind == "npufunc":
                kind = "builtin"
            elif kind == "npbinop":
                if len(n.args) != 2 or n.keywords:
                    raise self.compile_error(f"{ast.unparse(n.func)} takes two operands here", n)
                return _rt("binop", _c(tag[1]), self.expr(n.args[0]), self.expr(n.args[1]), _c(line))
        if kind == "devfn":
            bound, rest = self._static_arguments(tag[1], n.args)
            cf, _, _ = self.ctx.compile_function(tag[1], "device", bound)
            name = f"_gs_D_{cf.name}_{id(cf) % 100000}"
            self.ns[name] = cf.fn
            args = [self.expr(a) for a in rest]
            kws = [ast.keyword(arg=kw.arg, value=self.expr(kw.value)) for kw in n.keywords]
            sig = devfn_signature(tag[1]) if not bound else None
            if sig is None:
                return ast.Call(func=_load(name), args=[_load("_rt")] + args, keywords=kws)
            # declared with a signature: numba converts the arguments to its types, and the result to its return type
            params = tag[1].__code__.co_varnames[:tag[1].__code__.co_argcount]
            args = [self._to_declared(a, sig.args[i] if i < len(sig.args) else None, line) for i, a in enumerate(args)]
            for kw in kws:
                i = params.index(kw.arg) if kw.arg in params else len(sig.args)
                kw.value = self._to_declared(kw.value, sig.args[i] if i < len(sig.args) else None, line)
            return self._to_declared(ast.Call(func=_load(name), args=[_load("_rt")] + args, keywords=kws),
                                     sig.return_type, line)
        if kind == "npreduce":
            if len(n.args) != 1 or n.keywords:
                raise self.unsupported(f"{ast.unparse(n.func)} with more than the array", n)
            return _rt("method", self.expr(n.args[0]), _c(tag[1]), ast.Tuple(elts=[], ctx=ast.Load()), _c(line))
        if kind == "pyop":                                   # operator.add(a, b) and friends
            nargs = 1 if tag[1] == "unop" else 2
            if len(n.args) != nargs or n.keywords:
                raise self.compile_error(f"{ast.unparse(n.func)} takes {nargs} operand(s) here", n)
            return _rt(tag[1], _c(tag[2]), *[self.expr(a) for a in n.args], _c(line))
        if kind == "untyped":
            raise self.compile_error(f"Untyped global name {ast.unparse(n.func)!r}: Cannot determine Numba type of "
                                     f"<class '{tag[1]}'> (a CUDA ufunc is called on arrays from the host; in a "
                                     "kernel call a @cuda.jit(device=True) function)", n)
        if kind == "pyfunc":
            raise self.compile_error(f"Untyped global name {ast.unparse(n.func)!r}: Cannot determine Numba type of "
                                     "<class 'function'> (a plain Python function: decorate it with "
                                     "@cuda.jit(device=True))", n)
        if kind == "builtin" and tag[1] == "ord":
            if len(n.args) != 1 or not isinstance(n.args[0], ast.Constant) or not isinstance(n.args[0].value, str) \
                    or len(n.args[0].value) != 1:
                raise self.unsupported("ord() of anything but a one-character string constant", n)
            return self.k(const(ord(n.args[0].value)))
        if kind == "builtin" and tag[1] == "sum":
            if len(n.args) != 1 or n.keywords:
                raise self.unsupported("sum() with a start value", n)
            return _rt("method", self.expr(n.args[0]), _c("sum"), ast.Tuple(elts=[], ctx=ast.Load()), _c(line))
        if kind == "builtin" and tag[1] == "isinstance":
            if len(n.args) != 2 or n.keywords:
                raise self.compile_error("isinstance() takes an object and a type", n)
            return _rt("isinst", self.expr(n.args[0]), self.k(self._isinstance_spec(n.args[1])), _c(line))
        if kind == "builtin" and tag[1] == "print":
            if n.keywords:
                raise self.compile_error("Numba's print() function implementation does not support keyword "
                                         f"arguments ({', '.join(k.arg or '**' for k in n.keywords)}=)", n)
            for a in n.args:
                if isinstance(a, ast.JoinedStr):
                    raise self.compile_error("an f-string in print(): numba-cuda has no str() of a number "
                                             "(print the values as separate arguments)", a)
                if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Mod) and isinstance(a.left, ast.Constant) \
                        and isinstance(a.left.value, str):
                    raise self.compile_error("'%' formatting in print(): numba-cuda has no mod(str, ...) (print "
                                             "the values as separate arguments)", a)
            # printf from a kernel: one line per active thread (numba prints numbers, strings and tuples)
            items = [_c(a.value) if isinstance(a, ast.Constant) and isinstance(a.value, str) else self.expr(a)
                     for a in n.args]
            return _rt("kprint", ast.Tuple(elts=items, ctx=ast.Load()),
                       _c(tuple(ast.unparse(a) for a in n.args)), _c(line))
        if kind == "builtin" and tag[1] == "float" and len(n.args) == 1 and isinstance(n.args[0], ast.Constant) \
                and isinstance(n.args[0].value, str):
            try:
                return self.k(const(float(n.args[0].value)))      # float("inf"), float("nan")
            except ValueError:
                raise self.compile_error(f"float({n.args[0].value!r}) is not a number", n) from None
        if n.keywords and kind != "builtin":
            raise self.unsupported(f"keyword arguments to {ast.unparse(n.func)}", n)
        args = [self.expr(a) for a in n.args]
        if kind == "mathfn":
            return _rt("math", _c(tag[1]), ast.Tuple(elts=args, ctx=ast.Load()), _c(line))
        if kind == "cmathfn":
            return _rt("cmath", _c(tag[1]), ast.Tuple(elts=args, ctx=ast.Load()), _c(line))
        if kind == "dtype":
            if not args:
                return self.k(const(tag[1].type(0)))
            return _rt("cast", args[0], self.k(tag[1]), _c(line))
        if kind == "builtin":
            b = tag[1]
            if n.keywords:
                raise self.unsupported(f"keyword arguments to {b}()", n)
            if b == "range":
                raise self.unsupported("range() outside a for statement", n)
            if b in ("min", "max"):
                return _rt("minmax", _c(b), ast.Tuple(elts=args, ctx=ast.Load()), _c(line))
            if b == "divmod" and len(args) == 2:
                return _rt("builtin_divmod", args[0], args[1], _c(line))
            if b == "complex" and len(args) in (1, 2):
                return _rt("make_complex", ast.Tuple(elts=args, ctx=ast.Load()), _c(line))
            if b == "tuple" and len(args) <= 1:
                return _rt("builtin_tuple", args[0], _c(line)) if args else ast.Tuple(elts=[], ctx=ast.Load())
            if b == "slice":
                if not 1 <= len(args) <= 3:
                    raise self.compile_error(f"slice() takes 1 to 3 arguments ({len(args)} given)", n)
                parts = [_c(None)] + args if len(args) == 1 else args + [_c(None)] * (3 - len(args))
                return _rt("mkslice", *parts, _c(line))
            if len(args) != 1 and b not in ("round", "pow"):
                raise self.compile_error(f"{b}() takes one argument here", n)
            if b == "abs":
                return _rt("builtin_abs", args[0], _c(line))
            if b == "divmod":
                raise self.compile_error("divmod() takes two arguments", n)
            if b in ("int", "float"):      # numba: int(int32) stays int32, float(float32) stays float32
                return _rt("builtin_num", _c(b), args[0], _c(line))
            if b == "bool":
                return _rt("cast", args[0], self.k(np.dtype(np.bool_)), _c(line))
            if b == "len":
                return _rt("length", args[0], _c(line))
            if b == "round":
                return _rt("builtin_round", args[0], args[1] if len(args) > 1 else _c(None), _c(line))
            if b == "pow":
                if len(args) != 2:
                    raise self.compile_error("pow() takes two arguments here", n)
                return _rt("binop", _c("pow"), args[0], args[1], _c(line))
        what = ast.unparse(n.func)
        if kind == "unknown":
            raise self.unsupported(f"calling {what!r} ({type(tag[1]).__name__})", n)
        raise self.unsupported(f"calling {what!r}", n)

    def _ufunc_out_arg(self, tag, n):
        """(inputs, output) of a ufunc called with an output array (``np.sin(x, out)``, ``out=r``), else None."""
        from .arith import _MATH
        name = tag[1]
        nin = 2 if tag[0] == "npbinop" or name in ("min", "max") else \
            (1 if name == "abs" else _MATH[name][0] if name in _MATH else 1)
        kws = {kw.arg: kw.value for kw in n.keywords}
        if set(kws) - {"out"}:
            raise self.unsupported(f"keyword arguments {sorted(set(kws) - {'out'})} to {ast.unparse(n.func)}", n)
        if "out" in kws:
            if len(n.args) != nin:
                raise self.compile_error(f"{ast.unparse(n.func)} takes {nin} input(s) and out=", n)
            return list(n.args), kws["out"]
        if len(n.args) == nin + 1:
            return list(n.args[:nin]), n.args[nin]
        return None

    def cuda_call(self, path, n, unused):
        line = n.lineno
        if path not in _CUDA_CALLS and not (path[0] in ("atomic", "fp16") and len(path) == 2):
            raise self.unsupported(f"calling cuda.{'.'.join(path)}", n)
        if path[0] == "fp16":
            return _rt("fp16", _c(path[1]), ast.Tuple(elts=[self.expr(a) for a in n.args], ctx=ast.Load()), _c(line))
        if path == ("shared", "array"):
            return self._array_decl(n, "shared")
        if path == ("local", "array"):
            return self._array_decl(n, "local")
        if path in (("grid",), ("gridsize",)) and not n.args and len(n.keywords) == 1 \
                and n.keywords[0].arg == "ndim":
            n = ast.copy_location(ast.Call(func=n.func, args=[n.keywords[0].value], keywords=[]), n)
        if n.keywords:
            raise self.unsupported(f"keyword arguments to cuda.{'.'.join(path)}", n)
        if path == ("const", "array_like"):
            if len(n.args) != 1:
                raise self.compile_error("cuda.const.array_like takes one array", n)
            tag = self.static(n.args[0])
            if tag is None:
                # an argument or local array: numba-cuda's lowering returns it unchanged (only a global array is
                # copied into the constant bank, at compile time)
                return _rt("const_array_like", self.expr(n.args[0]), _c(line))
            if tag[0] != "array":
                raise self.compile_error("cuda.const.array_like needs a global numpy array", n)
            return _rt("global_const", self.k(tag[1]), _c(ast.unparse(n.args[0])), _c(line))
        if path == ("cg", "this_grid"):
            if n.args:
                raise self.compile_error("cuda.cg.this_grid() takes no arguments", n)
            self.ctx.cooperative = True          # numba launches kernels that use the grid group cooperatively
            return _rt("this_grid", _c(line))
        if path in (("grid",), ("gridsize",)):
            if len(n.args) != 1:
                raise self.compile_error(f"cuda.{path[0]} takes the number of dimensions", n)
            try:
                nd = self.static_eval(n.args[0])
            except CompileError:
                raise self.compile_error(f"RequireLiteralValue: cuda.{path[0]}({ast.unparse(n.args[0])}): the number "
                                         "of dimensions must be a literal 1, 2 or 3", n) from None
            if nd not in (1, 2, 3):
                raise self.compile_error(f"cuda.{path[0]}({nd!r}): argument can only be 1, 2, 3", n)
            return _rt(path[0], _c(int(nd)), _c(line))
        args = [self.expr(a) for a in n.args]
        name = path[-1]
        if path[0] == "atomic":
            if name == "compare_and_swap":
                if len(args) != 3:
                    raise self.compile_error("cuda.atomic.compare_and_swap(ary, old, val)", n)
                return _rt("atomic", _c("cas"), args[0], self.k(const(0)),
                           ast.Tuple(elts=args[1:], ctx=ast.Load()), _c(line), _c(not unused))
            need = 4 if name == "cas" else 3
            if len(args) != need:
                raise self.compile_error(f"cuda.atomic.{name} takes {need} arguments", n)
            return _rt("atomic", _c(name), args[0], args[1], ast.Tuple(elts=args[2:], ctx=ast.Load()), _c(line),
                       _c(not unused))
        if name in ("ldca", "ldcg", "ldcs", "ldlu", "ldcv"):
            if len(args) != 2:
                raise self.compile_error(f"cuda.{name}(array, i) takes 2 arguments ({len(args)} given)", n)
            return _rt("load_hint", args[0], args[1], _c(name[2:]), _c(line))
        if name in ("stcg", "stcs", "stwb", "stwt"):
            if len(args) != 3:
                raise self.compile_error(f"cuda.{name}(array, i, value) takes 3 arguments ({len(args)} given)", n)
            return _rt("setitem", args[0], args[1], args[2], _c(line))
        if name == "syncthreads":
            if args:
                raise self.compile_error(f"cuda.syncthreads() takes no arguments ({len(args)} given)", n)
            return _rt("syncthreads", _c(line))
        if name == "syncwarp":
            if len(args) > 1:
                raise self.compile_error(f"No implementation of function syncwarp for {len(args)} arguments "
                                         "(cuda.syncwarp(mask=0xFFFFFFFF))", n)
            return _rt("simple", _c(("syncwarp",)), _c(line))
        if name.startswith("threadfence"):
            if args:
                raise self.compile_error(f"No implementation of function {name} with arguments (cuda.{name}() "
                                         "takes none)", n)
            scope = {"threadfence_block": ("block",), "threadfence_system": ("system",)}.get(name, ())
            return _rt("simple", _c(("membar",) + scope), _c(line))
        if name in ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync"):
            if len(args) != 3:
                raise self.compile_error(f"cuda.{name}(mask, value, lane) takes 3 arguments", n)
            kind = {"shfl_sync": "idx", "shfl_up_sync": "up", "shfl_down_sync": "down", "shfl_xor_sync": "xor"}[name]
            return _rt("shfl", _c(kind), args[0], args[1], args[2], _c(line))
        if name in ("ballot_sync", "all_sync", "any_sync", "eq_sync"):
            if len(args) != 2:
                raise self.compile_error(f"cuda.{name}(mask, predicate) takes 2 arguments", n)
            return _rt("vote", _c(name.split("_")[0]), args[0], args[1], _c(line))
        if name in ("match_any_sync", "match_all_sync"):
            if len(args) != 2:
                raise self.compile_error(f"cuda.{name}(mask, value) takes 2 arguments", n)
            return _rt("match", _c(name.split("_")[1]), args[0], args[1], _c(line))
        if name == "lanemask_lt":
            if args:
                raise self.compile_error("No implementation of function lanemask_lt with arguments "
                                         "(cuda.lanemask_lt() takes none)", n)
            return _rt("vote", _c("lanemask_lt"), _c(None), _c(None), _c(line))
        if name == "selp":
            if len(args) != 3:
                raise self.compile_error("cuda.selp(predicate, a, b) takes 3 arguments", n)
            return _rt("selp", args[0], args[1], args[2], _c(line))
        if name == "activemask":
            if args:
                raise self.compile_error("No implementation of function activemask with arguments "
                                         "(cuda.activemask() takes none)", n)
            return _rt("vote", _c("activemask"), _c(None), _c(None), _c(line))
        if name in ("syncthreads_count", "syncthreads_and", "syncthreads_or"):
            return _rt("sync_reduce", _c(name.split("_")[1]), args[0], _c(line))
        return _rt("intrinsic", _c(name), ast.Tuple(elts=args, ctx=ast.Load()), _c(line))


#: static tags a device function's parameter may be bound to (what cannot be a runtime value: functions, dtypes,
#: modules); constants only where the parameter is an array's shape
_BINDABLE = ("devfn", "cuda", "dtype", "mathfn", "builtin", "npufunc", "npbinop", "npreduce", "math", "cmath", "np",
             "numba", "cudarandom", "pyop")

_SHAPES: dict = {}


def _shape_params(py_func) -> frozenset:
    """Parameters of ``py_func`` used (as a name, or inside a tuple) as the shape of ``cuda.shared.array`` /
    ``cuda.local.array`` / ``cuda.const.array_like``."""
    got = _SHAPES.get(py_func)
    if got is not None:
        return got
    out: set = set()
    try:
        import inspect
        import textwrap
        tree = ast.parse(textwrap.dedent(inspect.getsource(py_func)))
    except (OSError, TypeError, SyntaxError):
        tree = None
    if tree is not None:
        code = py_func.__code__
        params = set(code.co_varnames[:code.co_argcount])
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "array":
                shape = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "shape"), None)
                for e in ([shape] if not isinstance(shape, ast.Tuple) else shape.elts):
                    if isinstance(e, ast.Name) and e.id in params:
                        out.add(e.id)
    _SHAPES[py_func] = frozenset(out)
    return _SHAPES[py_func]
