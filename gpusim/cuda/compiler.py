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
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import textwrap
import types
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from . import runtime as R


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


def compile_kernel(kernel) -> CompiledKernel:
    py_func = unwrap(kernel)
    ck = _CACHE.get(py_func)
    if ck is None:
        ck = _Context(py_func).compile()
        _CACHE[py_func] = ck
    return ck


# ---- name resolution ----------------------------------------------------------------------------------------

_BUILTINS = {range: "range", min: "min", max: "max", abs: "abs", int: "int", float: "float", bool: "bool",
             len: "len", print: "print", round: "round", pow: "pow"}
_MATHFN = {getattr(math, k): k for k in dir(math) if callable(getattr(math, k)) and k in R.MATH_FUNCTIONS}
_NPFN = {}
for _k, _n in (("sqrt", "sqrt"), ("exp", "exp"), ("exp2", "exp2"), ("expm1", "expm1"), ("log", "log"),
               ("log2", "log2"), ("log10", "log10"), ("log1p", "log1p"), ("sin", "sin"), ("cos", "cos"),
               ("tan", "tan"), ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"),
               ("cosh", "cosh"), ("tanh", "tanh"), ("arcsinh", "asinh"), ("arccosh", "acosh"),
               ("arctanh", "atanh"), ("fabs", "fabs"), ("isnan", "isnan"), ("isinf", "isinf"),
               ("isfinite", "isfinite"), ("power", "pow"), ("arctan2", "atan2"), ("hypot", "hypot"),
               ("fmod", "fmod"), ("copysign", "copysign"), ("cbrt", "cbrt"), ("degrees", "degrees"),
               ("radians", "radians")):
    _NPFN[getattr(np, _k)] = _n
_NPBUILTIN = {np.abs: "abs", np.absolute: "abs", np.minimum: "min", np.maximum: "max"}

_CUDA_VALUE = {("threadIdx",): "tid", ("blockIdx",): "ctaid", ("blockDim",): "ntid", ("gridDim",): "nctaid"}
_CUDA_PREFIXES = {(), ("threadIdx",), ("blockIdx",), ("blockDim",), ("gridDim",), ("shared",), ("local",),
                  ("const",), ("atomic",)}
_CUDA_CALLS = {("grid",), ("gridsize",), ("shared", "array"), ("local", "array"), ("const", "array_like"),
               ("syncthreads",), ("syncwarp",), ("threadfence",), ("threadfence_block",),
               ("threadfence_system",), ("shfl_sync",), ("shfl_up_sync",), ("shfl_down_sync",),
               ("shfl_xor_sync",), ("ballot_sync",), ("all_sync",), ("any_sync",), ("activemask",), ("popc",),
               ("fma",), ("brev",), ("clz",), ("ffs",), ("cbrt",), ("syncthreads_count",),
               ("syncthreads_and",), ("syncthreads_or",)}
_ATOMICS = {"add", "sub", "max", "min", "exch", "cas", "compare_and_swap", "and_", "or_", "xor", "inc", "dec",
            "nanmax", "nanmin"}


def _numba_dtype(obj):
    """numpy dtype of a numba type object (numba.float32, numba.types.int64), or None."""
    mod = type(obj).__module__ or ""
    if not mod.startswith("numba"):
        return None
    try:
        from numba.np.numpy_support import as_dtype
        return np.dtype(as_dtype(obj))
    except Exception:
        try:
            return np.dtype(str(obj))
        except Exception:
            return None


def classify(obj):
    """What a global name refers to, as a tag the compiler dispatches on."""
    if isinstance(obj, types.ModuleType):
        n = obj.__name__
        if n in ("numba.cuda", "gpusim.cuda") or n.endswith(".numba.cuda"):
            return ("cuda", ())
        if n == "math":
            return ("math", obj)
        if n == "numpy":
            return ("np", obj)
        if n == "numba" or n.startswith("numba.") and ("types" in n):
            return ("numba", obj)
        return ("unknown", obj)
    if getattr(obj, "_gpusim_frontend", None) == "cuda" or \
            isinstance(getattr(obj, "py_func", None), types.FunctionType):
        return ("devfn", obj.py_func)       # gpusim / numba-cuda device functions, numba @njit helpers
    if isinstance(obj, bool) or isinstance(obj, (int, float, np.bool_)) or isinstance(obj, np.number):
        return ("const", obj)
    try:
        if obj in _BUILTINS:
            return ("builtin", _BUILTINS[obj])
        if obj in _MATHFN:
            return ("mathfn", _MATHFN[obj])
        if obj in _NPFN:
            return ("mathfn", _NPFN[obj])
        if obj in _NPBUILTIN:
            return ("builtin", _NPBUILTIN[obj])
    except TypeError:          # unhashable
        pass
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return ("dtype", np.dtype(obj))
    if isinstance(obj, np.dtype):
        return ("dtype", obj)
    nd = _numba_dtype(obj)
    if nd is not None:
        return ("dtype", nd)
    if isinstance(obj, types.FunctionType):
        return ("devfn", obj)
    if isinstance(obj, tuple) and all(classify(x)[0] in ("const", "ctuple") for x in obj):
        return ("ctuple", obj)
    if isinstance(obj, np.ndarray):
        return ("array", obj)
    if obj is None:
        return ("none", None)
    return ("unknown", obj)


def _const_tuple(t):
    return tuple(_const_tuple(x) if isinstance(x, tuple) else R.const(x) for x in t)


# ---- AST helpers --------------------------------------------------------------------------------------------

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
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_UNOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}

_CONSTRUCT_NAMES = {
    ast.With: "'with' statement", ast.AsyncWith: "'async with' statement", ast.Try: "'try' statement",
    ast.Raise: "'raise' statement", ast.ClassDef: "class definition", ast.FunctionDef: "nested function",
    ast.AsyncFunctionDef: "nested function", ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension", ast.GeneratorExp: "generator expression",
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


def _contains(nodes, types_, stop=()):
    """True if any node of ``types_`` occurs in ``nodes``, not descending into ``stop`` node types."""
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if isinstance(n, types_):
            return True
        if isinstance(n, stop):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False


def _may_escape(s) -> bool:
    """Can lanes leave compound statement ``s`` through a jump to outside it?"""
    if isinstance(s, ast.If):
        return _contains(s.body + s.orelse, (ast.Return,)) or \
            _contains(s.body + s.orelse, (ast.Break, ast.Continue), stop=(ast.For, ast.While))
    if isinstance(s, (ast.For, ast.While)):
        return _contains(s.body, (ast.Return,))
    return False


# ---- the compile context (one kernel with its device functions) ---------------------------------------------------

class _Context:
    def __init__(self, py_func):
        self.py_func = py_func
        self.shared_slots: list[Slot] = []
        self.local_slots: list[Slot] = []
        self.shared_off = 0
        self.local_off = 0
        self.devfns: dict = {}          # py_func -> CompiledFunction
        self.stack: list = []
        self.functions: list[CompiledFunction] = []
        self.uses_dyn = False

    def compile(self) -> CompiledKernel:
        kf, first, lines = self.compile_function(self.py_func, "kernel")
        dyn_off = -(-self.shared_off // 16) * 16
        frame = -(-self.local_off // 8) * 8
        return CompiledKernel(name=self.py_func.__name__, py_func=self.py_func, fn=kf.fn, file=kf.file,
                              first_line=first, params=kf.params, source_lines=lines,
                              shared_slots=self.shared_slots, local_slots=self.local_slots,
                              shared_static_bytes=self.shared_off, dyn_shared_offset=dyn_off,
                              uses_dynamic_shared=self.uses_dyn, local_frame_bytes=frame,
                              functions=self.functions)

    def add_slot(self, space, name, shape, dtype, dynamic) -> Slot:
        dtype = np.dtype(dtype)
        isz = dtype.itemsize
        if space == "shared":
            if dynamic:
                self.uses_dyn = True
                s = Slot(len(self.shared_slots), name, (0,), dtype, -1, True, "shared")
            else:
                off = -(-self.shared_off // isz) * isz
                n = int(np.prod(shape, dtype=np.int64))
                self.shared_off = off + n * isz
                s = Slot(len(self.shared_slots), name, shape, dtype, off, False, "shared")
            self.shared_slots.append(s)
        else:
            off = -(-self.local_off // isz) * isz
            n = int(np.prod(shape, dtype=np.int64))
            self.local_off = off + n * isz
            s = Slot(len(self.local_slots), name, shape, dtype, off, False, "local")
            self.local_slots.append(s)
        return s

    def compile_function(self, py_func, kind):
        if py_func in self.devfns:
            return self.devfns[py_func], 0, {}
        if py_func in self.stack:
            raise UnsupportedConstruct(f"recursive call of device function {py_func.__name__!r}",
                                       file=py_func.__code__.co_filename, line=py_func.__code__.co_firstlineno)
        self.stack.append(py_func)
        try:
            cf, first, lines = _FunctionCompiler(self, py_func, kind).run()
        finally:
            self.stack.pop()
        if kind == "device":
            self.devfns[py_func] = cf
        self.functions.append(cf)
        return cf, first, lines


# ---- one function --------------------------------------------------------------------------------------------

class _FunctionCompiler:
    def __init__(self, ctx: _Context, py_func, kind):
        self.ctx = ctx
        self.py_func = py_func
        self.kind = kind
        self.ns = {"_gs_U": R.UNDEF}
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

    # -- driver
    def run(self):
        try:
            src_lines, first = inspect.getsourcelines(self.py_func)
        except (OSError, TypeError):
            raise CompileError(f"the source of {self.py_func.__name__!r} is not available (gpusim re-executes "
                               "the kernel's source; define kernels in a file)") from None
        src = textwrap.dedent("".join(src_lines))
        tree = ast.parse(src)
        ast.increment_lineno(tree, first - 1)
        fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if fdef is None or isinstance(fdef, ast.AsyncFunctionDef):
            raise CompileError(f"cannot find the definition of {self.py_func.__name__!r}", file=self.file, line=first)
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            raise self.unsupported("*args / **kwargs / keyword-only parameters", fdef)
        params = [x.arg for x in a.posonlyargs + a.args]
        self.params = params
        self.locals = set(params)
        for n in ast.walk(fdef):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.locals.add(n.id)
        self.fdef = fdef
        self.loop_private = self._loop_private(fdef)
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        self.tails = set()
        if self.kind == "kernel":
            self._mark_tail(body)
        new_body = [ast.Assign(targets=[_store("_gs_F")], value=_rt("func_begin", _c(self.kind)))]
        undef = sorted(self.locals - set(params))
        if undef:
            new_body.append(ast.Assign(targets=[_store(n) for n in undef], value=_load("_gs_U")))
        new_body += self.block(body)
        end_line = max((getattr(n, "end_lineno", 0) or 0) for n in ast.walk(fdef)) or fdef.lineno
        new_body.append(ast.Return(value=_rt("func_end", _load("_gs_F"), _c(end_line))))
        defaults = []
        if a.defaults:
            for d in a.defaults:
                if not isinstance(d, ast.Constant) or not isinstance(d.value, (int, float, bool)):
                    raise self.unsupported("a non-constant default argument", d)
                defaults.append(self.k(R.const(d.value)))
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
                              kind=self.kind, live=live)
        lines = {first + i: ln.rstrip("\n") for i, ln in enumerate(src_lines)}
        return cf, first, lines

    def _mark_tail(self, stmts) -> None:
        """Statements after which the kernel ends: an ``if`` or loop there needs no reconvergence point."""
        stmts = [x for x in stmts if not isinstance(x, (ast.Pass, ast.Assert))]
        while stmts and isinstance(stmts[-1], ast.Return) and stmts[-1].value is None:
            stmts = stmts[:-1]
        if not stmts:
            return
        last = stmts[-1]
        self.tails.add(id(last))
        if isinstance(last, ast.If):
            self._mark_tail(last.body)
            self._mark_tail(last.orelse)

    def _join(self, s) -> bool:
        """Does code follow ``if``/loop statement ``s``?  (No for the kernel's last statement and for an
        ``if ...: return`` early exit.)"""
        if id(s) in self.tails:
            return False
        if self.kind == "kernel" and isinstance(s, ast.If) and not s.orelse and s.body \
                and isinstance(s.body[-1], ast.Return):
            return False
        return True

    def _var_use(self, body, var):
        """How a loop body reads its ``range`` variable: False (never), "narrow" (only inside ``e & mask``
        with a small constant mask, so 32-bit arithmetic), or True."""
        loads = [n for n in ast.walk(ast.Module(body=body, type_ignores=[]))
                 if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Load)]
        if not loads:
            return False
        narrow = set()
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitAnd):
                for side, other in ((n.right, n.left), (n.left, n.right)):
                    if self._small_const(side):
                        narrow.update(id(x) for x in ast.walk(other))
        return "narrow" if all(id(x) in narrow for x in loads) else True

    @staticmethod
    def _countable(s) -> bool:
        """Can LLVM compute the trip count of ``while`` loop ``s``?  ``while v < bound`` (or <=, >, >=, !=) with a
        loop-invariant bound, ``v`` changed only by ``v += e`` / ``v -= e``, and no break or return."""
        t = s.test
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1
                and isinstance(t.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.NotEq))):
            return False
        sides = [t.left, t.comparators[0]]
        names = [x.id for x in sides if isinstance(x, ast.Name)]
        if not names:
            return False
        var = names[0]
        other = sides[1] if isinstance(sides[0], ast.Name) and sides[0].id == var else sides[0]
        if _contains([other], (ast.Subscript, ast.Call)):
            return False
        if _contains(s.body, (ast.Break, ast.Return), stop=(ast.For, ast.While)) or _contains(s.body, (ast.Return,)):
            return False
        steps = stores = 0
        for n in ast.walk(ast.Module(body=s.body, type_ignores=[])):
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == var:
                if not isinstance(n.op, (ast.Add, ast.Sub)):
                    return False
                steps += 1
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                if n.id == var:
                    stores += 1
                elif isinstance(other, ast.Name) and n.id == other.id:
                    return False
        return steps == 1 and stores == 1          # the AugAssign's own target is the one store

    def _loop_private(self, fdef) -> set:
        """For-loop nodes whose target variable is dead after the loop (read only inside loops over it)."""
        fors = [n for n in ast.walk(fdef) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)]
        out = set()
        for f in fors:
            v = f.target.id
            inside_same = set()
            for g in fors:
                if g.target.id == v:
                    for n in ast.walk(g):
                        inside_same.add(id(n))
            ok = True
            for n in ast.walk(fdef):
                if isinstance(n, ast.Name) and n.id == v and id(n) not in inside_same:
                    ok = False
                    break
            # loads of v in another loop over v come after that loop's own definition: fine
            if ok:
                out.add(id(f))
        return out

    # -- statements
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
        elif t is ast.Pass:
            return []
        elif t is ast.Assert:
            return []              # numba ignores assert in CUDA kernels unless debug=True, opt=False
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
        raise self.unsupported(f"assignment to {type(tg).__name__.lower()}", tg)

    def augassign(self, s) -> list:
        line = s.lineno
        op = _BINOPS.get(type(s.op))
        if op is None:
            raise self.unsupported(f"operator {type(s.op).__name__}", s)
        tg = s.target
        if isinstance(tg, ast.Name):
            cur = _load(tg.id)
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
            a, b, c = self.k(R.const(0)), args[0], _c(None)
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
                                                           _c(self._join(s)))),
                ast.While(test=_rt("range_test", _load(st), _c(line)), body=body, orelse=[]),
                ast.Expr(value=_rt("loop_end", _load(st), _c(line)))]

    # -- expressions
    def index(self, sl):
        if isinstance(sl, ast.Tuple):
            return ast.Tuple(elts=[self.index(e) for e in sl.elts], ctx=ast.Load())
        if isinstance(sl, ast.Slice):
            raise self.unsupported("array slicing", sl)
        return self.expr(sl)

    def static(self, node):
        """Tag of a name / attribute chain rooted at a global (None when rooted at a local)."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return None
            if node.id not in self.scope:
                raise self.compile_error(f"name {node.id!r} is not defined", node)
            return classify(self.scope[node.id])
        if isinstance(node, ast.Attribute):
            base = self.static(node.value)
            if base is None:
                return None
            return self.static_attr(base, node.attr, node)
        return None

    def static_attr(self, tag, attr, node):
        kind = tag[0]
        if kind == "cuda":
            path = tag[1] + (attr,)
            if path in _CUDA_PREFIXES or path in _CUDA_CALLS or path[:-1] in _CUDA_VALUE and attr in "xyz" \
                    or path in (("laneid",), ("warpsize",)) or (path[0] == "atomic" and len(path) == 2):
                if path[0] == "atomic" and len(path) == 2 and attr not in _ATOMICS:
                    raise self.unsupported(f"cuda.atomic.{attr}", node)
                return ("cuda", path)
            raise self.unsupported(f"cuda.{'.'.join(path)}", node)
        if kind in ("math", "np", "numba"):
            mod = tag[1]
            if kind == "numba" and attr == "cuda":
                return ("cuda", ())
            if not hasattr(mod, attr):
                raise self.compile_error(f"module {mod.__name__!r} has no attribute {attr!r}", node)
            c = classify(getattr(mod, attr))
            if c[0] == "unknown":
                raise self.unsupported(f"{mod.__name__}.{attr}", node)
            return c
        if kind in ("const",):
            raise self.unsupported(f"attribute .{attr} of a constant", node)
        return ("unknown", None)

    def value_of(self, tag, node):
        kind = tag[0]
        line = node.lineno
        if kind == "const":
            return self.k(R.const(tag[1]))
        if kind == "ctuple":
            return self.k(_const_tuple(tag[1]))
        if kind == "array":
            name = node.id if isinstance(node, ast.Name) else ast.unparse(node)
            return _rt("global_const", self.k(tag[1]), _c(name), _c(line))
        if kind == "dtype":
            return self.k(tag[1])
        if kind == "none":
            return _c(None)
        if kind == "cuda":
            path = tag[1]
            if path[:-1] in _CUDA_VALUE and len(path) == 2:
                return _rt("sreg", _c(_CUDA_VALUE[path[:-1]]), _c("xyz".index(path[1])), _c(line))
            if path == ("laneid",):
                return _rt("sreg", _c("laneid"), _c(0), _c(line))
            if path == ("warpsize",):
                return self.k(R.const(np.int32(32)))
            raise self.unsupported(f"using cuda.{'.'.join(path)} as a value", node)
        what = ast.unparse(node)
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
            if isinstance(v, (bool, int, float)):
                return self.k(R.const(v))
            if v is None:
                return _c(None)
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

    def _small_const(self, n) -> bool:
        """Is ``n`` a compile-time integer constant in [0, 2**32)?"""
        if _contains([n], (ast.Call, ast.Subscript)):
            return False
        try:
            v = self.static_eval(n)
        except (CompileError, UnsupportedConstruct):
            return False
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 <= int(v) < 2 ** 32

    # -- static evaluation (shapes and dtypes of shared/local arrays)
    def static_eval(self, n):
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Tuple):
            return tuple(self.static_eval(e) for e in n.elts)
        if isinstance(n, (ast.Name, ast.Attribute)):
            tag = self.static(n)
            if tag is None:
                raise self.compile_error(f"{ast.unparse(n)!r} must be a compile-time constant", n)
            if tag[0] in ("const", "ctuple", "dtype"):
                return tag[1]
            raise self.compile_error(f"{ast.unparse(n)!r} must be a compile-time constant", n)
        if isinstance(n, ast.BinOp) and type(n.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
                                                         ast.Pow, ast.LShift, ast.RShift):
            a, b = self.static_eval(n.left), self.static_eval(n.right)
            return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                    ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b,
                    ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b}[type(n.op)]()
        raise self.compile_error(f"{ast.unparse(n)!r} must be a compile-time constant", n)

    def _array_decl(self, n, space):
        args = {}
        names = ["shape", "dtype"]
        for i, a in enumerate(n.args):
            if i >= 2:
                raise self.compile_error(f"cuda.{space}.array takes (shape, dtype)", n)
            args[names[i]] = a
        for kw in n.keywords:
            if kw.arg not in names:
                raise self.compile_error(f"cuda.{space}.array has no argument {kw.arg!r}", n)
            args[kw.arg] = kw.value
        if "shape" not in args or "dtype" not in args:
            raise self.compile_error(f"cuda.{space}.array needs shape and dtype", n)
        shape = self.static_eval(args["shape"])
        dt = self.static_eval(args["dtype"])
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
            raise self.compile_error(f"cuda.{space}.array shape {shape} is invalid", n)
        name = self.assign_target or f"{space}_array@{n.lineno}"
        slot = self.ctx.add_slot(space, name, shape, dtype, dynamic)
        return _rt("shared_array" if space == "shared" else "local_array", self.k(slot), _c(n.lineno))

    def call(self, n):
        line = n.lineno
        unused = self.unused_call is n
        self.unused_call = None
        tag = self.static(n.func)
        if tag is None:
            raise self.unsupported(f"calling {ast.unparse(n.func)!r} (a local value)", n)
        kind = tag[0]
        if kind == "cuda":
            return self.cuda_call(tag[1], n, unused)
        if any(isinstance(a, ast.Starred) for a in n.args):
            raise self.unsupported("starred arguments", n)
        if kind == "devfn":
            cf, _, _ = self.ctx.compile_function(tag[1], "device")
            name = f"_gs_D_{cf.name}_{id(cf) % 100000}"
            self.ns[name] = cf.fn
            return ast.Call(func=_load(name), args=[_load("_rt")] + [self.expr(a) for a in n.args],
                            keywords=[ast.keyword(arg=kw.arg, value=self.expr(kw.value)) for kw in n.keywords])
        if kind == "builtin" and tag[1] == "print":
            return _c(None)         # printf from a kernel: accepted, prints nothing (arguments not evaluated)
        if kind == "builtin" and tag[1] == "float" and len(n.args) == 1 and isinstance(n.args[0], ast.Constant) \
                and isinstance(n.args[0].value, str):
            try:
                return self.k(R.const(float(n.args[0].value)))      # float("inf"), float("nan")
            except ValueError:
                raise self.compile_error(f"float({n.args[0].value!r}) is not a number", n) from None
        if n.keywords and kind != "builtin":
            raise self.unsupported(f"keyword arguments to {ast.unparse(n.func)}", n)
        args = [self.expr(a) for a in n.args]
        if kind == "mathfn":
            return _rt("math", _c(tag[1]), ast.Tuple(elts=args, ctx=ast.Load()), _c(line))
        if kind == "dtype":
            if not args:
                return self.k(R.const(tag[1].type(0)))
            return _rt("cast", args[0], self.k(tag[1]), _c(line))
        if kind == "builtin":
            b = tag[1]
            if n.keywords:
                raise self.unsupported(f"keyword arguments to {b}()", n)
            if b == "range":
                raise self.unsupported("range() outside a for statement", n)
            if b in ("min", "max"):
                return _rt("minmax", _c(b), ast.Tuple(elts=args, ctx=ast.Load()), _c(line))
            if len(args) != 1 and b not in ("round", "pow"):
                raise self.compile_error(f"{b}() takes one argument here", n)
            if b == "abs":
                return _rt("builtin_abs", args[0], _c(line))
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

    def cuda_call(self, path, n, unused):
        line = n.lineno
        if path not in _CUDA_CALLS and not (path[0] == "atomic" and len(path) == 2):
            raise self.unsupported(f"calling cuda.{'.'.join(path)}", n)
        if path == ("shared", "array"):
            return self._array_decl(n, "shared")
        if path == ("local", "array"):
            return self._array_decl(n, "local")
        if n.keywords:
            raise self.unsupported(f"keyword arguments to cuda.{'.'.join(path)}", n)
        if path == ("const", "array_like"):
            if len(n.args) != 1:
                raise self.compile_error("cuda.const.array_like takes one array", n)
            tag = self.static(n.args[0])
            if tag is None or tag[0] != "array":
                raise self.compile_error("cuda.const.array_like needs a global numpy array", n)
            return _rt("global_const", self.k(tag[1]), _c(ast.unparse(n.args[0])), _c(line))
        if path in (("grid",), ("gridsize",)):
            if len(n.args) != 1:
                raise self.compile_error(f"cuda.{path[0]} takes the number of dimensions", n)
            nd = self.static_eval(n.args[0])
            if nd not in (1, 2, 3):
                raise self.compile_error(f"cuda.{path[0]}({nd!r}): ndim must be 1, 2 or 3", n)
            return _rt(path[0], _c(int(nd)), _c(line))
        args = [self.expr(a) for a in n.args]
        name = path[-1]
        if path[0] == "atomic":
            if name == "compare_and_swap":
                if len(args) != 3:
                    raise self.compile_error("cuda.atomic.compare_and_swap(ary, old, val)", n)
                return _rt("atomic", _c("cas"), args[0], self.k(R.const(0)),
                           ast.Tuple(elts=args[1:], ctx=ast.Load()), _c(line), _c(not unused))
            need = 4 if name == "cas" else 3
            if len(args) != need:
                raise self.compile_error(f"cuda.atomic.{name} takes {need} arguments", n)
            return _rt("atomic", _c(name), args[0], args[1], ast.Tuple(elts=args[2:], ctx=ast.Load()), _c(line),
                       _c(not unused))
        if name == "syncthreads":
            return _rt("syncthreads", _c(line))
        if name == "syncwarp":
            return _rt("simple", _c(("syncwarp",)), _c(line))
        if name.startswith("threadfence"):
            return _rt("simple", _c(("membar",)), _c(line))
        if name in ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync"):
            if len(args) != 3:
                raise self.compile_error(f"cuda.{name}(mask, value, lane) takes 3 arguments", n)
            kind = {"shfl_sync": "idx", "shfl_up_sync": "up", "shfl_down_sync": "down", "shfl_xor_sync": "xor"}[name]
            return _rt("shfl", _c(kind), args[0], args[1], args[2], _c(line))
        if name in ("ballot_sync", "all_sync", "any_sync"):
            return _rt("vote", _c(name.split("_")[0]), args[0], args[1], _c(line))
        if name == "activemask":
            return _rt("vote", _c("activemask"), _c(None), _c(None), _c(line))
        if name in ("syncthreads_count", "syncthreads_and", "syncthreads_or"):
            return _rt("sync_reduce", _c(name.split("_")[1]), args[0], _c(line))
        return _rt("intrinsic", _c(name), ast.Tuple(elts=args, ctx=ast.Load()), _c(line))


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


# ---- register analysis ---------------------------------------------------------------------------------------

def _sethi_ullman(n) -> int:
    """Registers needed to evaluate expression ``n`` without spilling."""
    if isinstance(n, (ast.Name, ast.Constant)):
        return 1
    kids = [c for c in ast.iter_child_nodes(n) if isinstance(c, ast.expr)]
    if not kids:
        return 1
    need = sorted((_sethi_ullman(c) for c in kids), reverse=True)
    return max(need[i] + i for i in range(len(need)))


def _liveness(fdef, params) -> dict:
    """Live ranges of the function's variables over its statements, in statement positions.

    Each statement gets a position (in source order); a variable lives from its first to its last occurrence,
    widened to the whole loop when it is used inside a loop and lives across the loop's back edge (defined
    before the loop, or read before written in the body)."""
    occ: dict[str, list[tuple[int, bool]]] = {}
    loops: list[tuple[int, int]] = []
    temps = 1
    pos = [0]

    def names_in(node, p):
        for x in ast.walk(node):
            if isinstance(x, ast.Name):
                occ.setdefault(x.id, []).append((p, isinstance(x.ctx, ast.Store)))

    def walk(stmts):
        nonlocal temps
        for s in stmts:
            pos[0] += 1
            p = pos[0]
            for e in ast.iter_child_nodes(s):
                if isinstance(e, ast.expr):
                    temps = max(temps, _sethi_ullman(e))
            if isinstance(s, (ast.For, ast.While)):
                hdr = [s.target, s.iter] if isinstance(s, ast.For) else [s.test]
                for h in hdr:
                    names_in(h, p)
                walk(s.body)
                pos[0] += 1
                loops.append((p, pos[0]))
                if isinstance(s, ast.While):
                    names_in(s.test, pos[0])
            elif isinstance(s, ast.If):
                names_in(s.test, p)
                walk(s.body)
                walk(s.orelse)
            else:
                names_in(s, p)

    for prm in params:
        occ.setdefault(prm, []).append((0, True))
    walk(fdef.body)
    ranges = {}
    for name, oc in occ.items():
        lo = min(p for p, _ in oc)
        hi = max(p for p, _ in oc)
        for (ls, le) in sorted(loops, key=lambda t: t[1] - t[0]):
            inside = [(p, st) for p, st in oc if ls <= p <= le]
            if not inside:
                continue
            first_inside = min(inside)
            carried = lo < ls or (not first_inside[1])
            if carried:
                lo, hi = min(lo, ls), max(hi, le)
        ranges[name] = (lo, hi)
    return {"ranges": ranges, "n_pos": pos[0], "temps": temps, "params": list(params)}
