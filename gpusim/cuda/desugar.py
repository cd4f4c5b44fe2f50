"""Compiler pass: ``for`` loops over what is not ``range()``, rewritten into loops over ``range()`` before the
other passes run (numba-cuda accepts them all); ``raise`` and ``assert`` in a kernel, which end the thread as
numba-cuda's do (``return``, noting the exception for a debug=True launch: ``RaiseInfo``); functions and lambdas defined in the kernel with a one-expression body, inlined at their
calls as numba inlines closures.

- over a 1-d array or a runtime tuple ``X``: ``for _i in range(len(X)): t = X[_i]`` (``X`` evaluated once);
- over a tuple of static length (a global tuple, a tuple literal): unrolled, ``t = X[0]; body; t = X[1]; body``
  (a tuple's elements may have different types, as numba's ``literal_unroll``); a ``break`` / ``continue`` in
  such a loop is left to the ``for`` rewriter, which refuses it;
- ``enumerate(X)`` and ``zip(X, Y, ...)`` of those and of ``range(n)`` / ``range(a, b)``: the same, with the
  target bound to a tuple of the elements.
"""
from __future__ import annotations

import ast
import copy

from ..errors import CompileError, UnsupportedConstruct
from .analysis import _contains


def _name(n, ctx=None):
    return ast.Name(id=n, ctx=ctx or ast.Load())


def _call(f, *args):
    return ast.Call(func=_name(f), args=list(args), keywords=[])


class RaiseInfo:
    """A kernel's ``raise``: the exception class, its arguments (None where not a compile-time constant) and the
    expressions of those that are not (index -> node), the line."""

    def __init__(self, cls, args, dynamic, line):
        self.cls, self.args, self.dynamic, self.line = cls, args, dynamic, line


class ForDesugar:
    """``_desugar_fors``, for ``compiler._FunctionCompiler`` (uses its ``static`` and ``static_eval``)."""

    def _desugar_fors(self, fdef) -> None:
        comp = self
        comp._nfor = 0
        try:
            _inline_closures(fdef)
        except _NotInlined as e:
            raise self.unsupported(f"calling the kernel's function {e.args[0]!r} with an argument that calls "
                                   "something, used more than once in its body", e.args[1]) from None

        class T(ast.NodeTransformer):
            def visit_For(self, node):
                self.generic_visit(node)
                if isinstance(node.iter, ast.List):
                    # ``for j in [1, 2, 4]``: numba-cuda iterates a list display without building a list (a
                    # list held in a variable needs NRT, which it refuses); iterated here as the tuple
                    node.iter = ast.copy_location(ast.Tuple(elts=node.iter.elts, ctx=ast.Load()), node.iter)
                out = comp._desugar_else(node)
                return out[:-2] + _as_list(comp._desugar_for(out[-2])) + out[-1:] if isinstance(out, list) \
                    else comp._desugar_for(node)

            def visit_While(self, node):
                self.generic_visit(node)
                return comp._desugar_else(node)

            def visit_Assign(self, node):
                node = _ifexp_tuple_assign(node)
                if isinstance(node, ast.If):
                    return self.visit(node)
                return comp._desugar_slice_store(node)

            def visit_Raise(self, node):
                # numba-cuda compiles ``raise`` in a kernel: the thread sets the exception status and returns
                # (reported on the host only with debug=True: ``_gs_raise``, see ``Control.raise_``); in a device
                # function it would propagate up through every caller, which gpusim does not follow (the
                # rewriter refuses it there)
                if comp.kind == "kernel":
                    ret = ast.copy_location(ast.Return(value=None), node)
                    ret._gs_raise = comp._raise_info(node.exc, node)
                    return ret
                return node

            def visit_Assert(self, node):
                # numba compiles ``assert c, msg`` as ``if not c: raise AssertionError(msg)`` (a constant msg),
                # with or without debug: a failing thread ends; a device function's assert is still ignored
                if comp.kind != "kernel":
                    return node
                ret = ast.copy_location(ast.Return(value=None), node)
                ret._gs_raise = comp._raise_info(None, node, AssertionError, [node.msg] if node.msg else [])
                test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=node.test), node.test)
                return ast.copy_location(ast.If(test=test, body=[ret], orelse=[]), node)

            def visit_FunctionDef(self, node):
                if node is fdef:
                    self.generic_visit(node)
                return node

            visit_Lambda = visit_ClassDef = lambda self, node: node
        T().visit(fdef)
        ast.fix_missing_locations(fdef)

    def _raise_info(self, exc, node, cls=None, args=()):
        """What a kernel's ``raise exc`` raises: a ``RaiseInfo`` (class, constant arguments, the expressions of the
        others), or None for a bare ``raise``."""
        consts = None
        if cls is None:
            if exc is None:
                return None
            fn, args = (exc.func, exc.args) if isinstance(exc, ast.Call) else (exc, [])
            if isinstance(exc, ast.Call) and exc.keywords:
                raise self.unsupported("an exception constructed with keyword arguments", exc)
            obj = self._global_object(fn)
            if isinstance(obj, BaseException) and not isinstance(exc, ast.Call):
                cls, consts = type(obj), tuple(obj.args)       # a global exception instance: its class and args
            elif isinstance(obj, type) and issubclass(obj, BaseException):
                cls = obj
            else:
                raise self.compile_error(f"raise {ast.unparse(exc)}: not an exception class or instance numba-cuda "
                                         "can raise in a kernel", node)
        if consts is None:
            consts, dynamic = [], {}
            for i, a in enumerate(args):
                try:
                    consts.append(self.static_eval(a))
                except (CompileError, UnsupportedConstruct):
                    consts.append(None)
                    dynamic[i] = a
            return RaiseInfo(cls, tuple(consts), dynamic, node.lineno)
        return RaiseInfo(cls, consts, {}, node.lineno)

    def _global_object(self, n):
        """The object a global name or attribute chain (``ValueError``, ``mod.MyError``) names, or None."""
        if isinstance(n, ast.Name):
            return None if n.id in self.locals else self.scope.get(n.id)
        if isinstance(n, ast.Attribute):
            base = self._global_object(n.value)
            return getattr(base, n.attr, None) if base is not None else None
        return None

    def _quiet_static(self, node):
        try:
            return self.static(node)
        except (CompileError, UnsupportedConstruct):
            return None

    def _is_builtin(self, node, fn) -> bool:
        return isinstance(node, ast.Name) and node.id not in self.locals and self.scope.get(node.id) is fn

    def _seq(self, x, idx):
        """(element expression at index ``idx``, length expression, static length or None) of iterable ``x``;
        None when it is not one this pass rewrites."""
        if isinstance(x, ast.Call) and self._quiet_static(x.func) == ("builtin", "range") and not x.keywords:
            if len(x.args) == 1:
                n = x.args[0]
                return _name(idx), n, self._static_int(n)
            if len(x.args) == 2:
                a, b = x.args
                n = ast.BinOp(left=b, op=ast.Sub(), right=a)
                return ast.BinOp(left=a, op=ast.Add(), right=_name(idx)), _call("max", ast.Constant(0), n), None
            return None
        static_len = None
        if isinstance(x, ast.Tuple):
            static_len = len(x.elts)
        elif isinstance(x, (ast.Name, ast.Attribute)):
            tag = self._quiet_static(x)
            if tag is not None and tag[0] == "ctuple":
                static_len = len(tag[1])
        el = ast.Subscript(value=x, slice=_name(idx), ctx=ast.Load())
        return el, _call("len", x), static_len

    def _static_int(self, n):
        if _contains([n], (ast.Call, ast.Subscript)):
            return None
        try:
            v = self.static_eval(n)
        except (CompileError, UnsupportedConstruct):
            return None
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def _desugar_else(self, s):
        """``for/while ... else``: the ``else`` body runs for the lanes that did not ``break``, as in numba:
        ``nb = True; loop (each break: nb = False); if nb: else-body``; the loop itself without an else."""
        if not s.orelse:
            return s
        self._nfor += 1
        flag = f"_gs_nb{self._nfor}"

        def mark(stmts):
            out = []
            for st in stmts:
                if isinstance(st, ast.Break):
                    out.append(ast.copy_location(ast.Assign(targets=[_name(flag, ast.Store())],
                                                            value=ast.Constant(False)), st))
                elif isinstance(st, ast.If):
                    st.body, st.orelse = mark(st.body), mark(st.orelse)
                elif isinstance(st, (ast.With, ast.Try)):
                    st.body = mark(st.body)
                out.append(st)
            return out
        orelse = s.orelse
        s.orelse = []
        s.body = mark(s.body)
        init = ast.copy_location(ast.Assign(targets=[_name(flag, ast.Store())], value=ast.Constant(True)), s)
        tail = ast.copy_location(ast.If(test=_name(flag), body=orelse, orelse=[]), orelse[0])
        return [init, s, tail]

    def _desugar_slice_store(self, s):
        """``a[lo:hi:step] = v`` on a 1-d array (``v`` a number, ``step`` a positive constant or none): each thread
        stores ``v`` into the elements of the slice, bounds clamped as Python's, in a loop over range()."""
        if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Subscript) \
                or not isinstance(s.targets[0].slice, ast.Slice) or not isinstance(s.targets[0].value, ast.Name):
            return s
        sl = s.targets[0].slice
        step = 1 if sl.step is None else self._static_int(sl.step)
        if step is None or step <= 0 or _contains([s.value], (ast.Slice,)):
            return s
        self._nfor += 1
        k = self._nfor
        arr = s.targets[0].value.id
        v, n, j = f"_gs_sv{k}", f"_gs_sn{k}", f"_gs_sj{k}"

        def bound(e, default):
            if e is None:
                return default
            x = f"({ast.unparse(e)})"
            return f"min(max({x} + {n} if {x} < 0 else {x}, 0), {n})"
        src = (f"{v} = {ast.unparse(s.value)}\n{n} = len({arr})\n"
               f"for {j} in range({bound(sl.lower, '0')}, {bound(sl.upper, n)}, {step}):\n    {arr}[{j}] = {v}\n")
        out = ast.parse(src).body
        for st in out:
            for node in ast.walk(st):
                if "lineno" in node._attributes:
                    node.lineno = node.end_lineno = s.lineno
                    node.col_offset = node.end_col_offset = s.col_offset
        return out

    def _iter_tree(self, it):
        """The iterable of a ``for`` as numba-cuda iterates it in lockstep: ``("tuple", [...])`` for ``zip(...)``
        and ``enumerate(X)`` (its counter ``("counter", None)`` first), nested as written
        (``enumerate(zip(x, y))``, ``zip(enumerate(x), y)``); ``("leaf", X)`` for any other iterable."""
        if isinstance(it, ast.Call) and self._is_builtin(it.func, enumerate) and len(it.args) == 1 \
                and not it.keywords:
            return ("tuple", [("counter", None), self._iter_tree(it.args[0])])
        if isinstance(it, ast.Call) and self._is_builtin(it.func, zip) and it.args and not it.keywords \
                and not any(isinstance(a, ast.Starred) for a in it.args):
            return ("tuple", [self._iter_tree(a) for a in it.args])
        return ("leaf", it)

    def _desugar_for(self, s):
        it = s.iter
        if s.orelse or (isinstance(it, ast.Call) and self._quiet_static(it.func) == ("builtin", "range")):
            return s
        self._nfor += 1
        k = self._nfor
        idx = f"_gs_fi{k}"
        tree = self._iter_tree(it)
        parts = []                                  # the iterables (leaves) in order; None: enumerate's counter

        def leaves(t):
            if t[0] == "tuple":
                for c in t[1]:
                    leaves(c)
            else:
                parts.append(t[1])
        leaves(tree)
        pre, elems, lens, statics = [], [], [], []
        for j, x in enumerate(parts):
            if x is None:                           # enumerate's counter
                elems.append(_name(idx))
                continue
            if not (isinstance(x, ast.Call) and self._quiet_static(x.func) == ("builtin", "range")) \
                    and not isinstance(x, (ast.Name, ast.Constant)):
                tmp = f"_gs_fs{k}_{j}"              # the iterable is evaluated once
                pre.append(ast.copy_location(ast.Assign(targets=[_name(tmp, ast.Store())], value=x), s))
                x = _name(tmp)
            r = self._seq(x, idx)
            if r is None:
                return s
            el, n, st = r
            elems.append(el)
            lens.append(n)
            statics.append(st)
        at = iter(elems)

        def build(t):                               # enumerate / zip nest: the target's tuple structure
            if t[0] == "tuple":
                return ast.Tuple(elts=[build(c) for c in t[1]], ctx=ast.Load())
            return next(at)
        value = build(tree)
        bind = ast.copy_location(ast.Assign(targets=[s.target], value=value), s)
        jumps = _contains(s.body, (ast.Break, ast.Continue), stop=(ast.For, ast.While))
        tuple_like = any(not (isinstance(p, ast.Call) and self._quiet_static(p.func) == ("builtin", "range"))
                         for p in parts if p is not None) and all(st is not None for st in statics)
        if tuple_like and not jumps:                # unrolled: the elements may differ in type
            out = list(pre)
            for i in range(min(statics)):
                b = copy.deepcopy(bind)
                for n in ast.walk(b.value):
                    if isinstance(n, ast.Name) and n.id == idx:
                        n.id = "_gs_fconst"
                b.value = _subst_const(b.value, i)
                out.append(b)
                out.extend(copy.deepcopy(s.body))
            return out
        length = lens[0] if len(lens) == 1 else _call("min", *lens)
        loop = ast.For(target=_name(idx, ast.Store()), iter=_call("range", length), body=[bind] + s.body, orelse=[])
        ast.copy_location(loop, s)
        return pre + [loop]


def _ifexp_tuple_assign(s):
    """``x = (a, b) if c else (d, e)`` (a branch a tuple display, ``lo, hi = ... if ... else ...``): numba
    evaluates the condition, then the taken branch only, and unifies the two tuples; rewritten as the
    statement ``if c: x = (a, b)`` / ``else: x = (d, e)``, whose targets unify at the join as numba's do."""
    v = s.value
    if not isinstance(v, ast.IfExp) or not (isinstance(v.body, ast.Tuple) or isinstance(v.orelse, ast.Tuple)):
        return s
    body = ast.copy_location(ast.Assign(targets=copy.deepcopy(s.targets), value=v.body), s)
    orelse = ast.copy_location(ast.Assign(targets=copy.deepcopy(s.targets), value=v.orelse), s)
    out = ast.copy_location(ast.If(test=v.test, body=[_ifexp_tuple_assign(body)],
                                   orelse=[_ifexp_tuple_assign(orelse)]), s)
    return ast.fix_missing_locations(out)


def first_use_before_definition(fdef, params):
    """The first ``Name`` node that reads a local variable before any assignment of it in bytecode order (a
    loop's later assignment does not count), or None.  numba-cuda refuses such a function while analyzing its
    bytecode ("Variable 'x' is not defined"), whether or not a thread ever takes that path."""
    events: list = []

    def walk(n):
        if n is None:
            return
        if isinstance(n, list):
            for x in n:
                walk(x)
            return
        t = type(n)
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            walk(n.decorator_list)
            events.append((n.name, True, n))
            return
        if t in (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
            return                                      # a scope of its own
        if t is ast.Name:
            events.append((n.id, isinstance(n.ctx, ast.Store), n))
            return
        if t in (ast.Assign, ast.AnnAssign):
            walk(n.value)
            walk(n.targets if t is ast.Assign else n.target)
            return
        if t is ast.AugAssign:
            if isinstance(n.target, ast.Name):
                events.append((n.target.id, False, n.target))
                walk(n.value)
                events.append((n.target.id, True, n.target))
            else:
                walk(n.target)
                walk(n.value)
            return
        if t is ast.NamedExpr:
            walk(n.value)
            walk(n.target)
            return
        if t in (ast.For, ast.AsyncFor):
            walk(n.iter)
            walk(n.target)
            walk(n.body)
            walk(n.orelse)
            return
        if t in (ast.Global, ast.Nonlocal):
            return
        for f in n._fields:
            v = getattr(n, f, None)
            if isinstance(v, (ast.AST, list)):
                walk(v)

    walk(fdef.body)
    stored = {name for name, st, _ in events if st}
    declared = {x for n in ast.walk(fdef) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
    seen: set = set(params)
    for name, st, node in events:
        if st:
            seen.add(name)
        elif name in stored and name not in seen and name not in declared:
            return node
    return None


class _NotInlined(Exception):
    pass


def _one_expression(node):
    """(parameter names, returned expression) of a function defined in the kernel whose body is one ``return e``
    (``def f(x): return e`` or ``f = lambda x: e``); None for any other statement."""
    if isinstance(node, ast.FunctionDef) and not node.decorator_list:
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            args = node.args
            if not (args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs):
                return node.name, [x.arg for x in args.args], body[0].value
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
            and isinstance(node.value, ast.Lambda):
        args = node.value.args
        if not (args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs):
            return node.targets[0].id, [x.arg for x in args.args], node.value.body
    return None


def _inline_closures(fdef) -> None:
    """Functions and lambdas defined in the kernel with a one-expression body are inlined at their calls, as
    numba-cuda inlines closures (``inline_closure_likes``); the names they read are the kernel's."""
    defs = {}
    for s in list(fdef.body):
        got = _one_expression(s)
        if got is None:
            continue
        name, params, expr = got
        stores = [n for n in ast.walk(fdef) if isinstance(n, ast.Name) and n.id == name
                  and isinstance(n.ctx, ast.Store)]
        loads = [n for n in ast.walk(fdef) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
        calls = [n for n in ast.walk(fdef) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == name]
        if len(stores) > (1 if isinstance(s, ast.Assign) else 0) or len(loads) != len(calls) or name in defs:
            continue                                 # used other than by calls: left to the rewriter to refuse
        defs[name] = (params, expr)
        fdef.body.remove(s)

    class Inline(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id in defs and not node.keywords \
                    and len(node.args) == len(defs[node.func.id][0]):
                params, expr = defs[node.func.id]
                sub = dict(zip(params, node.args))
                for p, a in sub.items():      # an argument is evaluated once: one with a call, used once only
                    uses = sum(isinstance(n, ast.Name) and n.id == p for n in ast.walk(expr))
                    if uses > 1 and _contains([a], (ast.Call,)):
                        raise _NotInlined(node.func.id, node)

                class Sub(ast.NodeTransformer):
                    def visit_Name(self, n):
                        return copy.deepcopy(sub[n.id]) if n.id in sub and isinstance(n.ctx, ast.Load) else n
                e = Sub().visit(copy.deepcopy(expr))
                return ast.copy_location(ast.fix_missing_locations(e), node) if isinstance(e, ast.expr) else e
            return node
    if defs:
        Inline().visit(fdef)


def _as_list(x):
    return x if isinstance(x, list) else [x]


def _subst_const(e, i):
    class S(ast.NodeTransformer):
        def visit_Name(self, n):
            return ast.copy_location(ast.Constant(i), n) if n.id == "_gs_fconst" else n
    return S().visit(e)
