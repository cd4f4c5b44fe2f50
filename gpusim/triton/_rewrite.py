"""Re-executing a kernel's Python source with gpusim's ``tl``: the AST rewrite and the kernel's globals.

A kernel (ours, or a real ``@triton.jit`` / interpreter function: its ``.fn``) is re-parsed from its source
file, its decorators dropped and its line numbers kept, and rewritten so control flow calls the masked
lockstep runtime (``_control``): ``if`` -> ``Branch``, ``for`` -> ``For``, ``while`` -> ``While``, ``return``
under a branch -> retire, ``and``/``or``/``not``/``x if c else y`` -> tensor-aware helpers.  The function then
runs in a copy of its module's globals where the names bound to ``triton``, ``triton.language`` (and its
members), real JIT helpers and real dtypes are rebound to gpusim's; nothing is patched process-wide.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types

from ..errors import UnsupportedConstruct
from ._errors import UnsupportedLanguageConstruct
from ._state import _CODE_INFO
from ._strict import check_function

_COUNTER = [0]


def _uid() -> int:
    _COUNTER[0] += 1
    return _COUNTER[0]


def _assigned_names(stmts) -> list[str]:
    names: list[str] = []
    seen = set()

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name not in seen:
                seen.add(node.name)
                names.append(node.name)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if node.id not in seen and not node.id.startswith("__g"):
                seen.add(node.id)
                names.append(node.id)
        for ch in ast.iter_child_nodes(node):
            visit(ch)
    for s in stmts:
        visit(s)
    return names


def _nested_return(stmts) -> bool:
    """A ``return`` inside an ``if`` / loop of these statements (not of a nested function)."""
    def inside(node) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(node, ast.Return):
            return True
        return any(inside(ch) for ch in ast.iter_child_nodes(node))
    return any(isinstance(s, (ast.If, ast.For, ast.While)) and inside(s) for s in stmts)


def _call(func: str, args=(), keywords=()) -> ast.Call:
    parts = func.split(".")
    node: ast.expr = ast.Name(id=parts[0], ctx=ast.Load())
    for p in parts[1:]:
        node = ast.Attribute(value=node, attr=p, ctx=ast.Load())
    return ast.Call(func=node, args=list(args), keywords=list(keywords))


def _name(n, store=False):
    return ast.Name(id=n, ctx=ast.Store() if store else ast.Load())


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(target, True)], value=value)


def _expr(e: ast.expr) -> ast.Expr:
    return ast.Expr(value=e)


def _const(v):
    return ast.Constant(value=v)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, filename: str, is_kernel: bool):
        self.filename = filename
        self.is_kernel = is_kernel
        self.depth_var = None
        self.ret_var = None             # a helper with a `return` under a condition: its HelperReturns

    def _unsupported(self, node, what):
        raise UnsupportedLanguageConstruct(f"{what} is not supported in Triton kernels", file=self.filename,
                                   line=getattr(node, "lineno", 0))

    # ---- function ----------------------------------------------------------------------------------
    def rewrite_function(self, fdef: ast.FunctionDef) -> ast.FunctionDef:
        fdef.decorator_list = []
        self.depth_var = f"__g_d{_uid()}"
        if not self.is_kernel and _nested_return(fdef.body):
            self.ret_var = f"__g_r{_uid()}"
        body = self._block(fdef.body, nested=False)
        init = _assign(self.depth_var, _call("__g_rt.depth"))
        ast.copy_location(init, fdef.body[0] if fdef.body else fdef)
        if self.ret_var is not None:
            init = [init, ast.copy_location(_assign(self.ret_var, _call("__g_rt.HelperReturns")), init)]
            if not body or not isinstance(body[-1], ast.Return):
                body.append(ast.copy_location(ast.Return(value=_call(f"{self.ret_var}.finish", [_const(None)])),
                                              fdef.body[-1]))
        else:
            init = [init]
        # keep a leading docstring in place
        if fdef.body and isinstance(fdef.body[0], ast.Expr) and isinstance(getattr(fdef.body[0], "value", None),
                                                                             ast.Constant):
            fdef.body = [body[0]] + init + body[1:]
        else:
            fdef.body = init + body
        return fdef

    def _block(self, stmts, nested: bool) -> list:
        out = []
        for s in stmts:
            res = self._stmt(s, nested)
            out.extend(res)
            if isinstance(s, ast.Return):
                break                   # the rest of the block is dead code
        if not out:
            out = [ast.copy_location(ast.Pass(), stmts[0]) if stmts else ast.Pass()]
        return out

    def _stmt(self, s, nested: bool) -> list:
        if isinstance(s, ast.If):
            return self._if(s)
        if isinstance(s, ast.For):
            return self._for(s)
        if isinstance(s, ast.While):
            return self._while(s)
        if isinstance(s, ast.Return):
            return self._return(s, nested)
        if isinstance(s, (ast.Break, ast.Continue)):
            self._unsupported(s, f"`{type(s).__name__.lower()}`")
        if isinstance(s, ast.Assert):
            call = _call("__g_rt.assert_", [self.visit(s.test)] + ([self.visit(s.msg)] if s.msg else []))
            return [ast.copy_location(_expr(call), s)]
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [s]
        if isinstance(s, (ast.With, ast.AsyncWith, ast.Try)):
            self._unsupported(s, f"`{type(s).__name__.lower()}` statement")
        return [self.visit(s)]

    # ---- merges after a masked region --------------------------------------------------------------
    def _merge_stmts(self, region: str, snap: str, names, loc) -> list:
        out = []
        if not names:
            return out
        m = f"__g_m{_uid()}"
        tup = ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())
        out.append(_assign(m, _call(f"{region}.merge", [_name(snap), _call("__g_locals"), tup])))
        for n in names:
            test = ast.Compare(left=_const(n), ops=[ast.In()], comparators=[_name(m)])
            val = ast.Subscript(value=_name(m), slice=_const(n), ctx=ast.Load())
            out.append(ast.If(test=test, body=[ast.Assign(targets=[_name(n, True)], value=val)], orelse=[]))
        for o in out:
            ast.copy_location(o, loc)
        return out

    def _region_body(self, region: str, body, loc, extra_names=()) -> list:
        names = list(extra_names) + [n for n in _assigned_names(body) if n not in extra_names]
        snap = f"__g_s{_uid()}"
        pre = [ast.copy_location(_assign(snap, _call(f"{region}.snap", [_call("__g_locals")])), loc)]
        inner = self._block(body, nested=True)
        return pre + inner + self._merge_stmts(region, snap, names, loc)

    # ---- statements --------------------------------------------------------------------------------
    def _if(self, s: ast.If) -> list:
        b = f"__g_b{_uid()}"
        out = [ast.copy_location(_assign(b, _call("__g_rt.Branch", [self.visit(s.test), _const(ast.unparse(s.test))])), s)]
        then_body = self._region_body(b, s.body, s) + [ast.copy_location(_expr(_call(f"{b}.end")), s)]
        out.append(ast.copy_location(ast.If(test=_call(f"{b}.then"), body=then_body, orelse=[]), s))
        if s.orelse:
            else_body = self._region_body(b, s.orelse, s.orelse[0]) + [
                ast.copy_location(_expr(_call(f"{b}.end")), s)]
            out.append(ast.copy_location(ast.If(test=_call(f"{b}.orelse"), body=else_body, orelse=[]), s))
        return out

    def _for(self, s: ast.For) -> list:
        if s.orelse:
            self._unsupported(s, "`for ... else`")
        lp = f"__g_l{_uid()}"
        out = [ast.copy_location(_assign(lp, _call("__g_rt.For", [self.visit(s.iter), _const(s.lineno)])), s)]
        tgt_names = _assigned_names([ast.Assign(targets=[s.target], value=_const(0))])
        set_tgt = ast.copy_location(ast.Assign(targets=[s.target], value=ast.Attribute(
            value=_name(lp), attr="value", ctx=ast.Load())), s)
        body = [set_tgt] + self._region_body(lp, s.body, s, extra_names=tgt_names)
        out.append(ast.copy_location(ast.While(test=_call(f"{lp}.next"), body=body, orelse=[]), s))
        out.append(ast.copy_location(_expr(_call(f"{lp}.finish")), s))
        return out

    def _while(self, s: ast.While) -> list:
        if s.orelse:
            self._unsupported(s, "`while ... else`")
        w = f"__g_w{_uid()}"
        names = ast.Tuple(elts=[_const(n) for n in _assigned_names(s.body)], ctx=ast.Load())
        out = [ast.copy_location(_assign(w, _call("__g_rt.While", [names, _const(s.lineno)])), s)]
        body = self._region_body(w, s.body, s)
        out.append(ast.copy_location(ast.While(test=_call(f"{w}.next", [self.visit(s.test), _call("__g_locals")]),
                                               body=body, orelse=[]), s))
        out.append(ast.copy_location(_expr(_call(f"{w}.finish")), s))
        return out

    def _return(self, s: ast.Return, nested: bool) -> list:
        if self.ret_var is not None:
            val = self.visit(s.value) if s.value is not None else _const(None)
            if not nested:
                return [ast.copy_location(ast.Return(value=_call(f"{self.ret_var}.finish", [val])), s)]
            ret = ast.copy_location(ast.Return(value=_call(f"{self.ret_var}.value")), s)
            return [ast.copy_location(ast.If(test=_call(f"{self.ret_var}.give", [val]), body=[ret], orelse=[]), s)]
        if not nested:
            return [self.visit(s)]
        if self.is_kernel and s.value is None:
            test = _call("__g_rt.retire", [_name(self.depth_var)])
            return [ast.copy_location(ast.If(test=test, body=[ast.copy_location(ast.Return(value=None), s)],
                                             orelse=[]), s)]
        chk = ast.copy_location(_expr(_call("__g_rt.check_return", [_name(self.depth_var)])), s)
        return [chk, self.visit(s)]

    # ---- expressions -------------------------------------------------------------------------------
    def visit_BoolOp(self, node: ast.BoolOp):
        vals = [self.visit(v) for v in node.values]
        fn = "__g_rt.and_" if isinstance(node.op, ast.And) else "__g_rt.or_"
        acc = vals[0]
        for v in vals[1:]:
            lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                kw_defaults=[], kwarg=None, defaults=[]), body=v)
            acc = _call(fn, [acc, lam])
        return ast.copy_location(acc, node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("__g_rt.not_", [self.visit(node.operand)]), node)
        return self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp):
        def lam(e):
            return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                 kw_defaults=[], kwarg=None, defaults=[]), body=self.visit(e))
        return ast.copy_location(_call("__g_rt.ifexp", [self.visit(node.test), lam(node.body), lam(node.orelse)]),
                                 node)

    def visit_Attribute(self, node: ast.Attribute):
        node = self.generic_visit(node)
        if node.attr == "value" and isinstance(node.ctx, ast.Load):
            # ``n.value``: Triton hands constexpr arguments over wrapped in ``tl.constexpr`` (see _control.cvalue)
            return ast.copy_location(_call("__g_rt.cvalue", [node.value]), node)
        return node

    def visit_Lambda(self, node):
        return node

    def visit_FunctionDef(self, node):
        return node


# ---------------------------------------------------------------------------------------------------------
# compiling a kernel / helper
# ---------------------------------------------------------------------------------------------------------

def _register_codes(code, filename, name):
    _CODE_INFO[code] = (filename, name)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _register_codes(c, filename, name)


_SRC_CACHE: dict = {}


def source_of(fn):
    hit = _SRC_CACHE.get(fn)
    if hit is not None:
        return hit
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise UnsupportedConstruct(f"cannot read the source of kernel {getattr(fn, '__name__', fn)!r}: {e}") from None
    out = (textwrap.dedent("".join(lines)), first, inspect.getsourcefile(fn) or "<unknown>")
    _SRC_CACHE[fn] = out
    return out


def _fix_locations(node, loc=(1, 0)) -> None:
    """``ast.fix_missing_locations``, but a node the rewrite made sits on its parent's *first* line only: with the
    parent's end line (an ``if`` statement's last line), Python 3.11 reports a call ``__g_rt.Branch(...)`` at the
    line where its attribute ends, so errors and warnings raised there named the statement's last line."""
    if "lineno" in node._attributes:
        if getattr(node, "lineno", None) is None:
            node.lineno, node.col_offset = loc
            node.end_lineno, node.end_col_offset = loc
        else:
            loc = (node.lineno, node.col_offset)
    for ch in ast.iter_child_nodes(node):
        _fix_locations(ch, loc)


def compile_function(fn, is_kernel: bool, globals_builder):
    """Rewrite ``fn``'s source and return the new Python function (bound to rebound globals)."""
    src, first, filename = source_of(fn)
    tree = ast.parse(src)
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise UnsupportedConstruct(f"{filename}:{first}: a kernel must be a plain function definition")
    fdef = check_function(fdef, fn, filename, is_kernel)
    fdef = _Rewriter(filename, is_kernel).rewrite_function(fdef)
    mod = ast.Module(body=[fdef], type_ignores=[])
    _fix_locations(mod)
    code = compile(mod, filename, "exec")
    _register_codes(code, filename, fn.__name__)
    ns = globals_builder(fn)
    exec(code, ns)
    new = ns[fdef.name]
    new.__gpusim_source__ = (filename, first)
    return new
