"""The CUDA front end's compiler: rewrites a kernel's Python AST into a program over whole chunks of threads.

The user's function (a numba-cuda kernel, unchanged) is parsed from its source file, and every operation is
replaced by a call into the chunk runtime (``runtime.Chunk``, named ``_rt`` in the generated code):
``a[i] + b[i]`` becomes ``_rt.binop('add', _rt.getitem(a, i, 7), _rt.getitem(b, i, 7), 7)``; ``if``/``while``/
``for ... in range`` become mask-managing loops and branches; ``x = e`` becomes a masked merge.  Line numbers
are kept (each call carries the user's line, and the generated code is compiled under the user's file name),
so every error and every recorded op points at the user's ``file:line``.

Global names are resolved once, at compile time, the way numba freezes them: ``cuda``/``math``/``numpy``/
``numba`` (whatever module the kernel's file bound them to) map onto the runtime; integer, float and tuple
globals become compile-time constants; numpy arrays become constant arrays; other ``@cuda.jit(device=True)``
functions (or plain functions) are compiled the same way and inlined at their call sites.  Shared and local
arrays get their layout here (static shared arrays in declaration order, each aligned to its element size;
dynamic shared memory after them, aligned to 16 bytes).  The register estimate's static half (live ranges
of the kernel's variables) is computed here too.

The passes, one module each, run over one function at a time (``_FunctionCompiler``, composed of their mixins):

- ``resolve.py``        name resolution and static evaluation: what each global name refers to
- ``desugar.py``        ``for`` loops over tuples, arrays, ``enumerate`` and ``zip`` become loops over ``range()``;
                        ``raise`` in a kernel becomes ``return`` (the thread ends, as in numba-cuda)
- ``analysis.py``       control-flow facts (reconvergence points, countable loops, loop-variable use) and the
                        live ranges of the register estimate
- ``rewrite_stmts.py``  statements -> mask-managing branches and loops, masked assignments
- ``rewrite_exprs.py``  expressions and calls -> calls into the chunk runtime; array declarations
- ``astgen.py``         the nodes of the generated code

This module holds the driver: the compiled objects, the compile context (one kernel with its device functions,
shared/local layouts) and the per-function driver that parses, rewrites and compiles the source.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from .analysis import FlowAnalysis, _liveness
from .desugar import ForDesugar, first_use_before_definition
from .astgen import _c, _load, _rt, _store
from .retkinds import ReturnCheck
from .resolve import NeedsArgDtypes, StaticResolver, classify
from .rewrite_exprs import ExpressionRewriter
from .rewrite_stmts import StatementRewriter
from .values import UNDEF, const

__all__ = ["Slot", "CompiledFunction", "CompiledKernel", "unwrap", "compile_kernel", "classify"]


# ---- compiled objects -------------------------------------------------------------------------------------

@dataclass(eq=False)
class Slot:
    """A shared or local array declared in the kernel (one per call site)."""

    index: int
    name: str
    shape: tuple
    dtype: np.dtype
    offset: int
    dynamic: bool = False
    space: str = "shared"


@dataclass(eq=False)
class CompiledFunction:
    name: str
    py_func: object
    fn: object
    file: str
    params: list
    kind: str                      # "kernel" | "device"
    live: dict = field(default_factory=dict)    # register-analysis facts (see _liveness)
    check: object = None           # its retkinds.ReturnCheck, when it has one (the static reading of its calls)


@dataclass(eq=False)
class CompiledKernel:
    name: str
    py_func: object
    fn: object
    file: str
    first_line: int
    params: list
    source_lines: dict
    shared_slots: list
    local_slots: list
    shared_static_bytes: int
    dyn_shared_offset: int
    uses_dynamic_shared: bool
    local_frame_bytes: int
    functions: list                # CompiledFunction of the kernel first, then its device functions
    cooperative: bool = False      # uses cuda.cg.this_grid(): launched cooperatively (the whole grid resident)
    vararg: bool = False           # ``def k(a, *rest)``: the launch's extra arguments are the tuple ``rest``
    last_registers: int = 0        # the register estimate of its last launch (max_cooperative_grid_blocks)


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def unwrap(kernel) -> types.FunctionType:
    """The plain Python function of a gpusim kernel, a numba CUDADispatcher / FakeCUDAKernel, or a function."""
    f = getattr(kernel, "py_func", None)
    if f is None and isinstance(kernel, types.FunctionType):
        f = kernel
    if f is None:
        f = getattr(kernel, "fn", None)
    if not isinstance(f, types.FunctionType):
        raise CompileError(f"cannot simulate {kernel!r}: not a numba.cuda / gpusim.cuda kernel or a Python function")
    return f


_BY_DTYPES = object()
_DT_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _arg_dtypes(args) -> tuple:
    from .memory import as_device_storage
    out = []
    for a in args:
        st = as_device_storage(a) if not isinstance(a, (int, float, complex, bool, np.generic, tuple)) else None
        out.append(None if st is None else st.dtype)
    return tuple(out)


def compile_kernel(kernel, args=None) -> CompiledKernel:
    """The kernel compiled (once; once per argument dtypes when it declares an array of an argument's dtype,
    then ``args`` are the launch's)."""
    py_func = unwrap(kernel)
    ck = _CACHE.get(py_func)
    if ck is None:
        try:
            ck = _Context(py_func).compile()
        except NeedsArgDtypes:
            ck = _BY_DTYPES
        _CACHE[py_func] = ck
    if ck is not _BY_DTYPES:
        return ck
    if args is None:
        raise NeedsArgDtypes(py_func.__name__)
    key = _arg_dtypes(args)
    per = _DT_CACHE.setdefault(py_func, {})
    ck = per.get(key)
    if ck is None:
        names = list(inspect.signature(py_func).parameters)
        ck = _Context(py_func, dict(zip(names, key))).compile()
        per[key] = ck
    return ck


# ---- the compile context (one kernel with its device functions) ---------------------------------------------------

class _Context:
    def __init__(self, py_func, param_dtypes: dict | None = None):
        self.py_func = py_func
        self.param_dtypes = param_dtypes     # the kernel's argument dtypes, when it is compiled per them
        self.shared_slots: list[Slot] = []
        self.local_slots: list[Slot] = []
        self.shared_off = 0
        self.local_off = 0
        self.devfns: dict = {}          # py_func -> CompiledFunction
        self.stack: list = []
        self.functions: list[CompiledFunction] = []
        self.uses_dyn = False
        self.cooperative = False

    def compile(self) -> CompiledKernel:
        kf, first, lines = self.compile_function(self.py_func, "kernel")
        dyn_off = -(-self.shared_off // 16) * 16
        frame = -(-self.local_off // 8) * 8
        return CompiledKernel(name=self.py_func.__name__, py_func=self.py_func, fn=kf.fn, file=kf.file,
                              first_line=first, params=kf.params, source_lines=lines,
                              shared_slots=self.shared_slots, local_slots=self.local_slots,
                              shared_static_bytes=self.shared_off, dyn_shared_offset=dyn_off,
                              uses_dynamic_shared=self.uses_dyn, local_frame_bytes=frame,
                              functions=self.functions, cooperative=self.cooperative,
                              vararg=bool(self.py_func.__code__.co_flags & inspect.CO_VARARGS))

    def add_slot(self, space, name, shape, dtype, dynamic, alignment=None) -> Slot:
        dtype = np.dtype(dtype)
        isz = max(dtype.itemsize, alignment or 0)          # the offset's alignment (bytes)
        if space == "shared":
            if dynamic:
                self.uses_dyn = True
                s = Slot(len(self.shared_slots), name, (0,), dtype, -1, True, "shared")
            else:
                off = -(-self.shared_off // isz) * isz
                n = int(np.prod(shape, dtype=np.int64))
                self.shared_off = off + n * dtype.itemsize
                s = Slot(len(self.shared_slots), name, shape, dtype, off, False, "shared")
            self.shared_slots.append(s)
        else:
            off = -(-self.local_off // isz) * isz
            n = int(np.prod(shape, dtype=np.int64))
            self.local_off = off + n * dtype.itemsize
            s = Slot(len(self.local_slots), name, shape, dtype, off, False, "local")
            self.local_slots.append(s)
        return s

    def compile_function(self, py_func, kind, bound: dict | None = None):
        """Compile ``py_func`` (once per kernel; a device function once per set of ``bound`` parameters: name ->
        the static tag of what the call site passes, a function or a dtype or an array's constant shape, which
        numba-cuda types as a literal the callee is specialized on)."""
        key = (py_func, tuple(sorted((bound or {}).items(), key=lambda kv: kv[0]))) if bound else py_func
        try:
            hash(key)
        except TypeError:
            key = (py_func, id(bound))
        if key in self.devfns:
            return self.devfns[key], 0, {}
        if py_func in self.stack:
            raise UnsupportedConstruct(f"recursive call of device function {py_func.__name__!r}",
                                       file=py_func.__code__.co_filename, line=py_func.__code__.co_firstlineno,
                                       kernel=self.py_func.__name__)
        self.stack.append(py_func)
        try:
            cf, first, lines = _FunctionCompiler(self, py_func, kind, bound).run()
        finally:
            self.stack.pop()
        if kind == "device":
            self.devfns[key] = cf
        self.functions.append(cf)
        return cf, first, lines


# ---- one function --------------------------------------------------------------------------------------------

class _FunctionCompiler(StatementRewriter, ExpressionRewriter, StaticResolver, FlowAnalysis, ForDesugar):
    """Compiles one kernel or device function: parses its source, runs the passes (the mixins) over its AST and
    compiles the rewritten function (``run``)."""

    def __init__(self, ctx: _Context, py_func, kind, bound: dict | None = None):
        self.ctx = ctx
        self.py_func = py_func
        self.kind = kind
        self.bound = dict(bound or {})        # parameters bound to the call site's static arguments (their tags)
        self.ns = {"_gs_U": UNDEF}
        self.nk = 0
        self.ntmp = 0
        code = py_func.__code__
        self.file = inspect.getsourcefile(py_func) or code.co_filename
        self.scope = dict(vars(builtins))
        self.scope.update(py_func.__globals__)
        if py_func.__closure__:
            for nm, cell in zip(code.co_freevars, py_func.__closure__):
                try:
                    self.scope[nm] = cell.cell_contents
                except ValueError:
                    pass
        self.loops: list[str] = []
        self.unused_call = None
        self.assign_target = None

    # -- errors
    def unsupported(self, what, node):
        return UnsupportedConstruct(f"{what} is not supported in gpusim.cuda kernels", file=self.file,
                                    line=getattr(node, "lineno", 0), kernel=self.ctx.py_func.__name__)

    def compile_error(self, msg, node):
        return CompileError(msg, file=self.file, line=getattr(node, "lineno", 0), kernel=self.ctx.py_func.__name__)

    def k(self, value):
        name = f"_gs_K{self.nk}"
        self.nk += 1
        self.ns[name] = value
        return _load(name)

    def tmp(self):
        self.ntmp += 1
        return f"_gs_t{self.ntmp}"

    def _lambda_def(self, tree, first):
        fdef = _lambda_def_of(tree, self.py_func.__code__)
        if fdef is None:
            raise CompileError("cannot find the source of this lambda; define the function with 'def'",
                               file=self.file, line=first)
        return fdef

    # -- driver
    def run(self):
        try:
            src_lines, first = inspect.getsourcelines(self.py_func)
        except (OSError, TypeError):
            raise CompileError(f"the source of {self.py_func.__name__!r} is not available (gpusim re-executes "
                               "the kernel's source; define kernels in a file)") from None
        src = textwrap.dedent("".join(src_lines))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            if self.py_func.__name__ != "<lambda>":
                raise
            # a lambda inside a longer expression: the lines inspect returns may not parse on their own
            tree = ast.parse("(\n" + src.strip().rstrip(",") + "\n)")
            ast.increment_lineno(tree, -1)
        ast.increment_lineno(tree, first - 1)
        fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if fdef is None and self.py_func.__name__ == "<lambda>":
            fdef = self._lambda_def(tree, first)
        if fdef is None or isinstance(fdef, ast.AsyncFunctionDef):
            raise CompileError(f"cannot find the definition of {self.py_func.__name__!r}", file=self.file, line=first)
        a = fdef.args
        if a.kwarg or a.kwonlyargs or (a.vararg and self.kind != "kernel"):
            raise self.unsupported("*args in a device function / **kwargs / keyword-only parameters", fdef)
        params = [x.arg for x in a.posonlyargs + a.args] + ([a.vararg.arg] if a.vararg else [])
        n_default = len(a.defaults)
        default_of = dict(zip(params[len(params) - n_default:], a.defaults)) if n_default else {}
        if self.bound:
            for n in ast.walk(fdef):
                if isinstance(n, ast.Name) and n.id in self.bound and isinstance(n.ctx, (ast.Store, ast.Del)):
                    raise self.unsupported(f"assigning to parameter {n.id!r}, which the call passes a function, a "
                                           "dtype or a constant shape", n)
            params = [p for p in params if p not in self.bound]
        self.params = params
        undefined = first_use_before_definition(fdef, [x.arg for x in a.posonlyargs + a.args] +
                                                ([a.vararg.arg] if a.vararg else []))
        if undefined is not None:
            raise self.compile_error("The compiler failed to analyze the bytecode. Variable "
                                     f"{undefined.id!r} is not defined.", undefined)
        for rnd in range(2):        # again after the for loops over tuples / arrays become loops over range()
            self.locals = set(params)
            for n in ast.walk(fdef):
                if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                    self.locals.add(n.id)
            if rnd == 0:
                self._desugar_fors(fdef)
        self.fdef = fdef
        self.loop_private = self._loop_private(fdef)
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        self.tails = set()
        if self.kind == "kernel":
            self._mark_tail(body)
        begin = [_c(self.kind)]
        check = None
        if self.kind in ("device", "kernel"):
            check = ReturnCheck(fdef, params, self.scope)
            if check.needed and self.kind == "device" or check.calls:
                begin += [self.k(check), ast.Tuple(elts=[_load(p) for p in params], ctx=ast.Load())]
            else:
                check = None
        new_body = [ast.Assign(targets=[_store("_gs_F")], value=_rt("func_begin", *begin))]
        undef = sorted(self.locals - set(params))
        if undef:
            new_body.append(ast.Assign(targets=[_store(n) for n in undef], value=_load("_gs_U")))
        new_body += self.block(body)
        end_line = max((getattr(n, "end_lineno", 0) or 0) for n in ast.walk(fdef)) or fdef.lineno
        new_body.append(ast.Return(value=_rt("func_end", _load("_gs_F"), _c(end_line))))
        defaults = []
        if a.defaults:
            for d in [default_of[p] for p in params if p in default_of]:
                if not isinstance(d, ast.Constant) or not isinstance(d.value, (int, float, bool)):
                    raise self.unsupported("a non-constant default argument", d)
                defaults.append(self.k(const(d.value)))
        fname = f"_gs_{self.kind}_{fdef.name}"
        gdef = ast.FunctionDef(name=fname, args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg="_rt")] + [ast.arg(arg=p) for p in params], vararg=None,
            kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=defaults), body=new_body, decorator_list=[],
            returns=None)
        if "type_params" in ast.FunctionDef._fields:
            gdef.type_params = []
        ast.copy_location(gdef, fdef)
        mod = ast.Module(body=[gdef], type_ignores=[])
        _fill_locations(mod, fdef.lineno)
        code = compile(mod, self.file, "exec")
        exec(code, self.ns)
        fn = self.ns[fname]
        live = _liveness(fdef, params)
        cf = CompiledFunction(name=fdef.name, py_func=self.py_func, fn=fn, file=self.file, params=params,
                              kind=self.kind, live=live, check=check)
        lines = {first + i: ln.rstrip("\n") for i, ln in enumerate(src_lines)}
        return cf, first, lines


def _lambda_def_of(tree, code):
    """``def lambda_<line>(args): return body`` for the lambda of ``code`` in ``tree`` (None if not found)."""
    names = list(code.co_varnames[:code.co_argcount])
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and [a.arg for a in node.args.posonlyargs + node.args.args] == names \
                and node.lineno == code.co_firstlineno:
            ret = ast.copy_location(ast.Return(value=node.body), node.body)
            fdef = ast.FunctionDef(name=f"lambda_{node.lineno}", args=node.args, body=[ret], decorator_list=[],
                                   returns=None)
            if "type_params" in ast.FunctionDef._fields:
                fdef.type_params = []
            return ast.copy_location(fdef, node)
    return None


def _fill_locations(tree, default_line):
    """Give generated nodes the line of their nearest located ancestor (so tracebacks name user lines)."""
    def visit(node, line, col):
        if hasattr(node, "lineno") and getattr(node, "lineno", None) is not None:
            line = node.lineno
        else:
            if "lineno" in node._attributes:
                node.lineno = line
                node.col_offset = col
        if "end_lineno" in node._attributes:
            if getattr(node, "end_lineno", None) is None:
                node.end_lineno = node.lineno
                node.end_col_offset = node.col_offset
        for ch in ast.iter_child_nodes(node):
            visit(ch, line, col)
    visit(tree, default_line, 0)
