"""The vocabulary of the generated code: AST builders for calls into the chunk runtime (``_rt``), operator tables.

Every operation of a rewritten kernel is a call ``_rt.<method>(..., line)`` on the chunk (``runtime.Chunk``);
operators map to the runtime's operation names (``_BINOPS``, ``_CMPOPS``, ``_UNOPS``); ``_CONSTRUCT_NAMES``
names the Python constructs kernels cannot use, for error messages.
"""
from __future__ import annotations

import ast


def _load(n):
    return ast.Name(id=n, ctx=ast.Load())


def _store(n):
    return ast.Name(id=n, ctx=ast.Store())


def _c(v):
    return ast.Constant(value=v)


def _rt(meth, *args):
    return ast.Call(func=ast.Attribute(value=_load("_rt"), attr=meth, ctx=ast.Load()), args=list(args),
                    keywords=[])


def _lam(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[]), body=body)


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift", ast.BitAnd: "bitand",
           ast.BitOr: "bitor", ast.BitXor: "bitxor"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne", ast.In: "in",
           ast.NotIn: "notin", ast.Is: "is", ast.IsNot: "isnot"}
_UNOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}

_CONSTRUCT_NAMES = {
    ast.With: "'with' statement", ast.AsyncWith: "'async with' statement", ast.Try: "'try' statement",
    ast.Raise: "'raise' statement", ast.ClassDef: "class definition", ast.FunctionDef: "nested function",
    ast.AsyncFunctionDef: "nested function", ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension", ast.GeneratorExp: "generator expression (the use of yield in a closure)",
    ast.Yield: "'yield' (generator)", ast.YieldFrom: "'yield from' (generator)", ast.Await: "'await'",
    ast.Global: "'global' statement", ast.Nonlocal: "'nonlocal' statement", ast.Delete: "'del' statement",
    ast.Import: "'import' statement", ast.ImportFrom: "'import' statement", ast.List: "list",
    ast.Dict: "dict", ast.Set: "set", ast.JoinedStr: "f-string", ast.Starred: "starred expression",
    ast.NamedExpr: "assignment expression (:=)", ast.Slice: "array slicing", ast.AsyncFor: "'async for'",
}
if hasattr(ast, "Match"):
    _CONSTRUCT_NAMES[ast.Match] = "'match' statement"
if hasattr(ast, "TryStar"):
    _CONSTRUCT_NAMES[ast.TryStar] = "'try' statement"
