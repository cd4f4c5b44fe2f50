"""Compiler pass: statements rewritten into mask-managing control flow over the chunk.

``if`` becomes ``if_begin``/``if_then``/``if_else``/``if_end`` (both arms run, under complementary masks),
``while`` and ``for ... in range`` become Python loops driven by ``loop_test``/``range_test`` (they run while any
lane is active), ``break``/``continue``/``return`` remove lanes, and ``x = e`` becomes a masked merge
(``_rt.assign``).  Code after a statement that lanes may leave is guarded by ``_rt.live()``.  ``acc + x*y`` is
fused into an FMA; ``if c: a[i] = x else: a[i] = y`` becomes a select, as LLVM sinks the common store.
"""
from __future__ import annotations

import ast

from .analysis import _may_escape
from .astgen import _BINOPS, _CONSTRUCT_NAMES, _c, _load, _rt, _store
from .values import const


class StatementRewriter:
    """Statement rewriting for ``compiler._FunctionCompiler``."""

    def block(self, stmts) -> list:
        out = []
        for i, s in enumerate(stmts):
            out.extend(self.stmt(s))
            if isinstance(s, (ast.Return, ast.Break, ast.Continue)):
                break              # the rest of the block is unreachable
            if _may_escape(s) and i + 1 < len(stmts):
                rest = self.block(stmts[i + 1:])
                if rest:
                    guard = ast.If(test=_rt("live"), body=rest, orelse=[])
                    ast.copy_location(guard, stmts[i + 1])
                    out.append(guard)
                break
        return out

    def stmt(self, s) -> list:
        t = type(s)
        line = s.lineno
        out: list
        if t is ast.Expr:
            v = s.value
            if isinstance(v, ast.Constant):
                return []
            self.unused_call = v if isinstance(v, ast.Call) else None
            out = [ast.Expr(value=self.expr(v))]
        elif t is ast.Assign:
            out = self.assign(s.targets, s.value, s)
        elif t is ast.AnnAssign:
            if s.value is None:
                return []
            out = self.assign([s.target], s.value, s)
        elif t is ast.AugAssign:
            out = self.augassign(s)
        elif t is ast.If:
            out = self.if_(s)
        elif t is ast.While:
            out = self.while_(s)
        elif t is ast.For:
            out = self.for_(s)
        elif t is ast.Break or t is ast.Continue:
            if not self.loops:
                raise self.compile_error(f"'{'break' if t is ast.Break else 'continue'}' outside a loop", s)
            out = [ast.Expr(value=_rt("brk" if t is ast.Break else "cont", _load(self.loops[-1])))]
        elif t is ast.Return:
            val = self.expr(s.value) if s.value is not None else _c(None)
            out = [ast.Expr(value=_rt("ret", _load("_gs_F"), val, _c(line)))]
            info = getattr(s, "_gs_raise", None)
            if info is not None:      # a kernel's raise / failing assert (desugar): noted, then the thread returns
                dyn = _c(None)
                if info.dynamic:      # arguments of runtime values: evaluated (unrecorded) only for the report
                    dyn = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                        defaults=[]),
                                     body=ast.Tuple(elts=[self.expr(n) for n in info.dynamic.values()],
                                                    ctx=ast.Load()))
                out.insert(0, ast.Expr(value=_rt("raise_", self.k(info), dyn, _c(line))))
        elif t is ast.Pass:
            return []
        elif t is ast.Assert:
            return []              # a device function's assert (a kernel's is an ``if`` + raise: desugar)
        else:
            raise self.unsupported(_CONSTRUCT_NAMES.get(t, f"'{t.__name__}' statement"), s)
        for o in out:
            ast.copy_location(o, s)
        return out

    def assign(self, targets, value, s) -> list:
        line = s.lineno
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            self.assign_target = targets[0].id
            v = self.expr(value)
            self.assign_target = None
            return [self.bind(targets[0].id, v)]
        tv = self.tmp()
        out = [ast.Assign(targets=[_store(tv)], value=self.expr(value))]
        for tg in targets:
            out.extend(self.bind_target(tg, _load(tv), line))
        return out

    def bind(self, name, valexpr):
        return ast.Assign(targets=[_store(name)], value=_rt("assign", _load(name), valexpr, _c(name)))

    def bind_target(self, tg, valexpr, line) -> list:
        if isinstance(tg, ast.Name):
            return [self.bind(tg.id, valexpr)]
        if isinstance(tg, ast.Tuple):
            tv = self.tmp()
            out = [ast.Assign(targets=[_store(tv)], value=_rt("unpack", valexpr, _c(len(tg.elts)), _c(line)))]
            for i, e in enumerate(tg.elts):
                sub = ast.Subscript(value=_load(tv), slice=_c(i), ctx=ast.Load())
                out.extend(self.bind_target(e, sub, line))
            return out
        if isinstance(tg, ast.Subscript):
            return [ast.Expr(value=_rt("setitem", self.expr(tg.value), self.index(tg.slice), valexpr, _c(line)))]
        if isinstance(tg, ast.Attribute) and self.static(tg) is None:
            # a record's field (``a[i].x = v``, ``r.x = v``)
            return [ast.Expr(value=_rt("setattr", self.expr(tg.value), _c(tg.attr), valexpr, _c(line)))]
        what = f"attribute .{tg.attr}" if isinstance(tg, ast.Attribute) else type(tg).__name__.lower()
        raise self.unsupported(f"assignment to {what}", tg)

    def augassign(self, s) -> list:
        line = s.lineno
        op = _BINOPS.get(type(s.op))
        if op is None:
            raise self.unsupported(f"operator {type(s.op).__name__}", s)
        tg = s.target
        if isinstance(tg, ast.Name):
            cur = _rt("inplace_operand", _load(tg.id), _c(op), _c(line))
            return [ast.Assign(targets=[_store(tg.id)],
                               value=_rt("assign", _load(tg.id), self.arith(op, cur, s.value, line, cur_first=True),
                                         _c(tg.id)))]
        if isinstance(tg, ast.Subscript):
            to, ti = self.tmp(), self.tmp()
            out = [ast.Assign(targets=[_store(to)], value=self.expr(tg.value)),
                   ast.Assign(targets=[_store(ti)], value=self.index(tg.slice))]
            cur = _rt("getitem", _load(to), _load(ti), _c(line))
            out.append(ast.Expr(value=_rt("setitem", _load(to), _load(ti),
                                          self.arith(op, cur, s.value, line, cur_first=True), _c(line))))
            return out
        if isinstance(tg, ast.Attribute) and self.static(tg) is None:
            to = self.tmp()
            out = [ast.Assign(targets=[_store(to)], value=self.expr(tg.value))]
            cur = _rt("attr", _load(to), _c(tg.attr), _c(line))
            out.append(ast.Expr(value=_rt("setattr", _load(to), _c(tg.attr),
                                          self.arith(op, cur, s.value, line, cur_first=True), _c(line))))
            return out
        raise self.unsupported(f"augmented assignment to {type(tg).__name__.lower()}", tg)

    def arith(self, op, left_code, right_node, line, cur_first=False):
        """``left op right`` where left is generated code, fusing ``acc + x*y`` into an FMA."""
        if op in ("add", "sub") and isinstance(right_node, ast.BinOp) and isinstance(right_node.op, ast.Mult):
            return _rt("fma", self.expr(right_node.left), self.expr(right_node.right), left_code, _c(line),
                       _c(op == "sub"), _c(True))
        return _rt("binop", _c(op), left_code, self.expr(right_node), _c(line))

    def if_(self, s) -> list:
        line = s.lineno
        b, e = s.body, s.orelse
        if len(b) == 1 and len(e) == 1 and isinstance(b[0], ast.Assign) and isinstance(e[0], ast.Assign) \
                and len(b[0].targets) == 1 and len(e[0].targets) == 1 \
                and isinstance(b[0].targets[0], ast.Subscript) \
                and ast.dump(b[0].targets[0]) == ast.dump(e[0].targets[0]):
            # ``if c: a[i] = x else: a[i] = y`` -- LLVM sinks the common store and selects the value (each side's
            # loads stay under its condition; ptxas predicates them): ``a[i] = x if c else y``, no branch
            # (matmul_tiled's tile loads)
            val = ast.IfExp(test=s.test, body=b[0].value, orelse=e[0].value)
            ast.copy_location(val, s)
            return self.assign([b[0].targets[0]], val, s)
        st = self.tmp()
        out = [ast.Assign(targets=[_store(st)], value=_rt("if_begin", self.expr(s.test), _c(line),
                                                          _c(self._join(s)), _c(bool(s.orelse))))]
        body = self.block(s.body) or [ast.Pass()]
        out.append(ast.If(test=_rt("if_then", _load(st)), body=body, orelse=[]))
        orelse = self.block(s.orelse) if s.orelse else []
        if orelse:
            out.append(ast.If(test=_rt("if_else", _load(st)), body=orelse, orelse=[]))
        else:
            out.append(ast.Expr(value=_rt("if_else", _load(st))))
        out.append(ast.Expr(value=_rt("if_end", _load(st))))
        return out

    def while_(self, s) -> list:
        if s.orelse:
            raise self.unsupported("'while ... else'", s)
        st = self.tmp()
        line = s.lineno
        self.loops.append(st)
        try:
            body = self.block(s.body)
        finally:
            self.loops.pop()
        body.append(ast.Expr(value=_rt("loop_next", _load(st))))
        return [ast.Assign(targets=[_store(st)], value=_rt("loop_begin", _c(line), _c(self._countable(s)),
                                                           _c(self._join(s)))),
                ast.While(test=_rt("loop_test", _load(st), self.expr(s.test), _c(line)), body=body, orelse=[]),
                ast.Expr(value=_rt("loop_end", _load(st), _c(line)))]

    def for_(self, s) -> list:
        if s.orelse:
            raise self.unsupported("'for ... else'", s)
        it = s.iter
        tag = self.static(it.func) if isinstance(it, ast.Call) else None
        if tag != ("builtin", "range"):
            raise self.unsupported("a for loop over anything but range()", s)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.compile_error("range() takes 1 to 3 positional arguments", it)
        if not isinstance(s.target, ast.Name):
            raise self.unsupported("a for-loop target that is not a single name", s)
        args = [self.expr(a) for a in it.args]
        if len(args) == 1:
            a, b, c = self.k(const(0)), args[0], _c(None)
        elif len(args) == 2:
            a, b, c = args[0], args[1], _c(None)
        else:
            a, b, c = args
        st = self.tmp()
        line = s.lineno
        self.loops.append(st)
        try:
            inner = self.block(s.body)
        finally:
            self.loops.pop()
        counter = ast.Attribute(value=_load(st), attr="counter", ctx=ast.Load())
        var = s.target.id
        if id(s) in self.loop_private:
            bindv = ast.Assign(targets=[_store(var)], value=counter)
        else:
            bindv = self.bind(var, counter)
        body = [bindv] + inner + [ast.Expr(value=_rt("range_next", _load(st), _c(line)))]
        used = self._var_use(s.body, var)
        return [ast.Assign(targets=[_store(st)], value=_rt("range_begin", a, b, c, _c(line), _c(used),
                                                           _c(self._join(s)), _c(self._slot_order(s)))),
                ast.While(test=_rt("range_test", _load(st), _c(line)), body=body, orelse=[]),
                ast.Expr(value=_rt("loop_end", _load(st), _c(line)))]
