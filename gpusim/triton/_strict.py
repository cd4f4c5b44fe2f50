"""Triton's language subset, held as strictly as Triton 3.6's front end holds it (``CodeGenerator`` and the
JIT's dependency finder), before a kernel is rewritten: gpusim refuses what the real compiler refuses.

Three rules, each with the real compiler's wording so a user sees the same construct named:

- **AST node types.** The code generator visits a fixed set of node types; any other (``Dict``, ``Set``,
  ``Lambda``, ``Raise``, ``NamedExpr``, generator expressions...) is "unsupported AST node type: X", and a
  comparison chain is "simultaneous multiple comparison is not supported".  The code generator only visits the
  side of an ``if`` whose condition is a constexpr it takes, so a construct under an ``if`` is refused when it is
  reached (a call to ``_control.reject`` stands in its place); elsewhere it is refused at once.
- **Lists are tuples.** A list display becomes a ``tl.tuple`` (so ``parts.append(...)`` fails: "'append' is not
  in list"); a list comprehension must iterate a tuple ("only tuple comprehensions are supported").
- **Globals.** A global a kernel names must be a module, a JIT function, a ``triton.language`` member, a dtype or
  a ``constexpr``: a plain Python function is "Unsupported function referenced", any other value "Cannot access
  global variable X from within @jit'ed function" (unless ``TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1``, as in Triton).  Python's builtins are not there either: only ``len``,
  ``list``, ``range``, ``float``, ``int``, ``isinstance``, ``getattr``, ``hasattr``, ``print``, ``min`` and ``max``
  (``abs(x)`` is "abs is not defined"; ``tl.abs`` is the tile op).
"""
from __future__ import annotations

import ast
import builtins
import os
import types

from ..errors import CompileError, UnsupportedConstruct
from ._errors import UnsupportedLanguageConstruct

#: node types Triton 3.6's CodeGenerator has a visitor for (operators, contexts and comprehension parts are
#: visited through their parents); Break/Continue/With/Try are refused by the rewriter with its own message
SUPPORTED = (ast.Module, ast.List, ast.ListComp, ast.Return, ast.FunctionDef, ast.arguments, ast.arg,
             ast.AnnAssign, ast.Assign, ast.AugAssign, ast.Name, ast.Tuple, ast.BinOp, ast.If, ast.IfExp, ast.With,
             ast.Pass, ast.Compare, ast.UnaryOp, ast.While, ast.Subscript, ast.For, ast.Slice, ast.keyword,
             ast.Assert, ast.Call, ast.Constant, ast.BoolOp, ast.Attribute, ast.Expr, ast.JoinedStr,
             ast.FormattedValue, ast.Starred, ast.comprehension, ast.withitem, ast.Break, ast.Continue, ast.Try,
             ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.ExceptHandler, ast.alias)

#: the names Triton's code generator resolves when neither a local nor a global has them
TRITON_BUILTINS = ("len", "list", "range", "float", "int", "isinstance", "getattr", "hasattr", "print", "min", "max")

_GLOBAL_MSG = ("Cannot access global variable {name} from within @jit'ed function. Triton kernels can only "
               "access global variables that are instantiated as constexpr (`{name} = triton.language.constexpr("
               "...)`), or are modules, JIT functions, dtypes or triton.language members")


def kernel_builtins() -> dict:
    """The ``__builtins__`` a rewritten kernel runs with: Triton's builtin namespace, nothing more."""
    return {name: getattr(builtins, name) for name in TRITON_BUILTINS}


def _node_name(node) -> str:
    return type(node).__name__


def _is_constexpr(v) -> bool:
    t = type(v)
    return t.__name__ == "constexpr" and (t.__module__ or "").startswith(("triton", "gpusim.triton"))


def _allowed_global(v) -> str | None:
    """None when a kernel may name this global, else the reason (Triton's wording)."""
    if v is None or isinstance(v, types.ModuleType) or _is_constexpr(v) or isinstance(v, type):
        return None
    mod = getattr(v, "__module__", "") or ""
    tmod = type(v).__module__ or ""
    if mod.startswith(("triton.language", "gpusim.triton")) or tmod.startswith(("triton", "gpusim.triton")):
        return None                         # tl members, dtypes, JIT functions (ours and Triton's), autotuners
    if getattr(v, "__triton_builtin__", False) or getattr(v, "__triton_aggregate__", False):
        return None
    if hasattr(v, "fn") and callable(v):    # a JIT-like wrapper of another package (e.g. triton's interpreter)
        return None
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return None                         # namedtuple values are allowed
    if callable(v):
        return "function"
    return "value"


class _Checker(ast.NodeTransformer):
    def __init__(self, filename: str, fn, is_kernel: bool):
        self.filename = filename
        self.fn = fn
        self.is_kernel = is_kernel
        self.in_if = 0

    def _refuse(self, node, msg, cls=UnsupportedLanguageConstruct):
        """At once outside any ``if``; under one, when reached (a call that raises stands in the node's place)."""
        line = getattr(node, "lineno", 0)
        if not self.in_if:
            raise cls(msg, file=self.filename, line=line)
        call = ast.Call(func=ast.Attribute(value=ast.Name(id="__g_rt", ctx=ast.Load()), attr="reject",
                                           ctx=ast.Load()),
                        args=[ast.Constant(value=msg), ast.Constant(value=cls.__name__)], keywords=[])
        ast.copy_location(call, node)
        if isinstance(node, ast.stmt):
            return ast.copy_location(ast.Expr(value=call), node)
        return call

    def generic_visit(self, node):
        if not isinstance(node, SUPPORTED):
            return self._refuse(node, f"unsupported AST node type: {_node_name(node)}")
        return super().generic_visit(node)

    def visit_If(self, node):
        node.test = self.visit(node.test)
        self.in_if += 1
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        self.in_if -= 1
        return node

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        self.in_if += 1
        node.body = self.visit(node.body)
        node.orelse = self.visit(node.orelse)
        self.in_if -= 1
        return node

    def visit_Compare(self, node):
        if len(node.ops) != 1:
            return self._refuse(node, "simultaneous multiple comparison is not supported")
        return super().generic_visit(node)

    def visit_List(self, node):
        node = super().generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Tuple(elts=node.elts, ctx=ast.Load()), node)
        return node

    def visit_ListComp(self, node):
        if len(node.generators) != 1:
            return self._refuse(node, "nested comprehensions are not supported", CompileError)
        node = super().generic_visit(node)
        comp = node.generators[0]
        comp.iter = ast.copy_location(
            ast.Call(func=ast.Attribute(value=ast.Name(id="__g_rt", ctx=ast.Load()), attr="comp_iter",
                                        ctx=ast.Load()), args=[comp.iter], keywords=[]), comp.iter)
        gen = ast.copy_location(ast.GeneratorExp(elt=node.elt, generators=[comp]), node)
        return ast.copy_location(
            ast.Call(func=ast.Attribute(value=ast.Name(id="__g_rt", ctx=ast.Load()), attr="as_tuple",
                                        ctx=ast.Load()), args=[gen], keywords=[]), node)

    def visit_Return(self, node):
        if self.is_kernel and node.value is not None and not (isinstance(node.value, ast.Constant)
                                                             and node.value.value is None):
            return self._refuse(node, "a kernel cannot return a value (Triton's compiler fails on it)", CompileError)
        return super().generic_visit(node)

    def visit_FunctionDef(self, node):
        node.args = self.visit(node.args)
        node.body = [self.visit(s) for s in node.body]
        return node


def _local_names(fdef: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs + fdef.args.posonlyargs}
    for a in (fdef.args.vararg, fdef.args.kwarg):
        if a is not None:
            names.add(a.arg)
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not fdef:
            names.add(node.name)
    return names


def check_globals(fdef: ast.FunctionDef, fn, filename: str) -> None:
    """Refuse a global the JIT would refuse (every name in the body, reached or not, as Triton's dependency
    finder walks the whole function)."""
    local = _local_names(fdef)
    scope = dict(getattr(fn, "__globals__", {}))
    code = getattr(fn, "__code__", None)
    if code is not None and fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    seen = set()
    body = ast.Module(body=fdef.body, type_ignores=[])     # not the decorators nor the arguments' defaults
    for node in ast.walk(body):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        name = node.id
        if name in local or name in seen or name not in scope:
            continue
        seen.add(name)
        why = _allowed_global(scope[name])
        if why == "function":
            raise CompileError(f"Unsupported function referenced: {name} ({scope[name]!r} is neither a "
                               "@triton.jit function nor a triton.language builtin)", file=filename,
                               line=node.lineno)
        if why == "value" and os.environ.get("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "0") != "1":
            raise CompileError(_GLOBAL_MSG.format(name=name), file=filename, line=node.lineno)


def check_function(fdef: ast.FunctionDef, fn, filename: str, is_kernel: bool) -> ast.FunctionDef:
    """Refuse what Triton refuses in ``fdef`` (``fn``'s parsed source); returns the function with lists made
    tuples and refusals under an ``if`` deferred to when they are reached."""
    check_globals(fdef, fn, filename)
    return _Checker(filename, fn, is_kernel).visit(fdef)
