"""numba's unification of a device function's return types, checked over every ``return`` of the function.

numba types a function before it runs: the types of all its ``return`` statements (and the implicit ``return
None`` where the end of the body is reachable) must unify into one, or the function is refused ("Can't unify
return type from the following types: array(float32, 1d, C), float64"), whether or not a path ever takes the
odd return.  Numbers unify with numbers (int and float: float), ``None`` with anything (an optional), tuples of one
length element by element, arrays with arrays of their dtype and dimensions; a number, an array and a tuple do not
unify with one another.

gpusim runs only the paths its threads take, so a kind is read where it can be: from the value of each return
that ran (``Control.ret`` records it) and, for the returns no thread reached, from the expression itself, typed by
a small static reading of the function (``ReturnCheck``): its parameters' values at the call, its locals'
assignments, literals, tuple displays, subscripts, arithmetic.  An expression this reading cannot type is left out
(so gpusim never refuses what numba accepts for want of a type); the check is made once per call of the function.
"""
from __future__ import annotations

import ast
import builtins
import types

import numpy as np

from .values import ARRAYS, V, arith_type

# a kind: ("num", dtype|None), ("none",), ("array", ndim|None, dtype|None), ("tuple", (kinds...)), or None (unknown)
NUM = ("num", None)
NONE = ("none",)

_NUM_BUILTINS = {"float", "int", "abs", "round", "min", "max", "bool", "complex", "len", "divmod"}


def kind_of_value(x):
    """The kind of a runtime value of the chunk (a parameter or a returned value)."""
    if x is None:
        return NONE
    if isinstance(x, V):
        return ("num", np.asarray(x.v).dtype)
    if isinstance(x, ARRAYS):
        dt = getattr(x, "dtype", None)
        return ("array", getattr(x, "ndim", None), None if dt is None or dt.names else np.dtype(dt))
    if isinstance(x, tuple):
        return ("tuple", tuple(kind_of_value(e) for e in x))
    if isinstance(x, (bool, int, float, complex, np.number, np.bool_)):
        return ("num", np.asarray(x).dtype)
    return None


def _const_kind(v):
    if v is None:
        return NONE
    if isinstance(v, (bool, int, float, complex, np.number, np.bool_)):
        return ("num", np.asarray(v).dtype)
    if isinstance(v, tuple):
        return ("tuple", tuple(_const_kind(e) for e in v))
    if isinstance(v, np.ndarray):
        return ("array", v.ndim, None if v.dtype.names else v.dtype)
    return None


def _arith(op, ta, tb):
    """numba's type of a binary operation on numbers of dtypes ``ta``, ``tb`` (NUM where not known)."""
    if ta is None or tb is None or isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)):
        return NUM
    try:
        if isinstance(op, ast.Div) and ta.kind in "iub" and tb.kind in "iub":
            return ("num", np.dtype(np.float64))
        return ("num", arith_type(ta, tb))
    except Exception:                                # noqa: BLE001 - an operation numba refuses: left to the run
        return NUM


def _ufunc_type(op, a, b):
    """The dtype of an array expression's result (numpy's promotion of the operands' dtypes, as numba's ufunc
    typing does it), None where not known."""
    ta, tb = (a[2] if a[0] == "array" else a[1]), (b[2] if b[0] == "array" else b[1])
    if ta is None or tb is None:
        return None
    try:
        r = np.result_type(ta, tb)
    except TypeError:
        return None
    if isinstance(op, ast.Div) and r.kind in "iub":
        return np.dtype(np.float64)
    return r


def unifiable(a, b) -> bool:
    if a is None or b is None or a[0] == "none" or b[0] == "none":
        return True
    if a[0] != b[0]:
        return False
    if a[0] == "num":
        return True
    if a[0] == "array":
        return all(x is None or y is None or x == y for x, y in zip(a[1:], b[1:]))
    return len(a[1]) == len(b[1]) and all(unifiable(x, y) for x, y in zip(a[1], b[1]))


def kind_name(k) -> str:
    """numba's name of a kind (for the message)."""
    if k[0] == "none":
        return "none"
    if k[0] == "num":
        return str(k[1]) if k[1] is not None else "number"
    if k[0] == "array":
        dt = str(k[2]) if k[2] is not None else "?"
        nd = f"{k[1]}d" if k[1] is not None else "?d"
        return f"array({dt}, {nd})"
    els = [kind_name(e) if e is not None else "?" for e in k[1]]
    if els and all(e == els[0] for e in els):
        return f"UniTuple({els[0]} x {len(els)})"
    return "Tuple(" + ", ".join(els) + ")"


def _terminates(body) -> bool:
    """The statement list never falls off its end (a return / raise on every path, as far as a quick reading
    sees)."""
    if not body:
        return False
    s = body[-1]
    if isinstance(s, (ast.Return, ast.Raise)):
        return True
    if isinstance(s, ast.If):
        return _terminates(s.body) and _terminates(s.orelse)
    if isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and s.test.value is True:
        return not any(isinstance(n, ast.Break) for n in ast.walk(s))
    return False


def _own_nodes(fdef):
    """The nodes of ``fdef``'s body, not those of functions defined inside it."""
    stack = list(fdef.body)
    while stack:
        n = stack.pop()
        yield n
        for ch in ast.iter_child_nodes(n):
            if not isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(ch)


def _check_vote(kind, mask, line, err) -> None:
    """numba-cuda types a vote's mask when it compiles the kernel (first launch), reached or not: a float refused
    with its words (``Warp.vote`` says the same of a mask only a launch can read)."""
    if mask is not None and mask[0] == "num" and mask[1] is not None and mask[1].kind not in "iu":
        raise err(f"No implementation of function {kind}_sync: Mask type must be an integer. Got {mask[1]}", line)


class ReturnCheck:
    """A device function's returns (``sites``: (line, expression or None)) and the static reading of its locals;
    ``verify(args, ran)`` raises numba's unification error through ``err(msg, line)`` where the kinds clash."""

    def __init__(self, fdef, params, scope):
        self.params = list(params)
        self.scope = scope
        self.sites = []
        self.assigns: dict[str, list] = {}
        self.calls = []          # (line, callee expression, positional args, keywords) of the calls it makes
        for n in _own_nodes(fdef):
            if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute)) \
                    and not any(isinstance(a, ast.Starred) for a in n.args):
                self.calls.append((n.lineno, n.func, n.args, n.keywords))
            if isinstance(n, ast.Return):
                self.sites.append((n.lineno, n.value))
            elif isinstance(n, ast.Assign):
                for t in n.targets:
                    self._target(t, n.value)
            elif isinstance(n, ast.AnnAssign) and n.value is not None:
                self._target(n.target, n.value)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                self.assigns.setdefault(n.target.id, []).append(
                    ("expr", ast.BinOp(left=ast.Name(id=n.target.id, ctx=ast.Load()), op=n.op, right=n.value)))
            elif isinstance(n, (ast.For, ast.comprehension)):
                if isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Call) \
                        and isinstance(n.iter.func, ast.Name) and n.iter.func.id == "range" \
                        and scope.get("range", builtins.range) is builtins.range:
                    self.assigns.setdefault(n.target.id, []).append(("kind", NUM))    # a range() loop's index
                else:
                    self._target(n.target, None)
            elif isinstance(n, (ast.With, ast.NamedExpr)):
                for t in ast.walk(n):
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                        self.assigns.setdefault(t.id, []).append(("unknown", None))
        self.defaults = {p.arg: d for p, d in zip(fdef.args.args[len(fdef.args.args) - len(fdef.args.defaults):],
                                                  fdef.args.defaults)}
        self._calls_checked: set = set()
        self.sites.sort(key=lambda s: s[0])
        if not _terminates(fdef.body):
            end = max((getattr(n, "end_lineno", 0) or 0) for n in ast.walk(fdef)) or fdef.lineno
            self.sites.append((end, "fallthrough"))
        self._cache: dict = {}

    def _target(self, t, value):
        if isinstance(t, ast.Name):
            self.assigns.setdefault(t.id, []).append(("expr", value) if value is not None else ("unknown", None))
        elif isinstance(t, (ast.Tuple, ast.List)):
            for i, e in enumerate(t.elts):
                if isinstance(e, ast.Starred):
                    self._target(e.value, None)
                else:
                    self._target(e, None if value is None else ast.Subscript(
                        value=value, slice=ast.Constant(value=i), ctx=ast.Load()))
        else:
            for x in ast.walk(t):
                if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store):
                    self.assigns.setdefault(x.id, []).append(("unknown", None))

    @property
    def needed(self) -> bool:
        return len(self.sites) >= 2

    # ---- the static reading ---------------------------------------------------------------------------------
    def _env(self, args):
        return self._env_of_kinds([kind_of_value(a) for a in args])

    def _env_of_kinds(self, kinds):
        env = {p: k for p, k in zip(self.params, kinds)}
        names = set(self.assigns)
        cur = {n: None for n in names}
        for _ in range(4):
            full = {**cur, **{p: k for p, k in env.items() if p not in names}}
            new = {}
            for n in names:
                ks = [self.expr(v, full) if how == "expr" else v if how == "kind" else None
                      for how, v in self.assigns[n]]
                if n in env:
                    ks.append(env[n])
                k = ks[0] if ks else None
                for x in ks[1:]:
                    if x is None or k is None or not unifiable(k, x) or x[0] != k[0]:
                        k = None
                        break
                    if k[0] == "num" and k != x:
                        k = NUM
                    elif k[0] == "array" and k != x:
                        k = ("array", k[1] if k[1] == x[1] else None, k[2] if k[2] == x[2] else None)
                    elif k[0] == "tuple" and k != x:
                        k = None
                        break
                new[n] = k
            if new == cur:
                break
            cur = new
        return {**env, **cur}

    def expr(self, e, env):      # noqa: C901 - one case per expression type
        t = type(e)
        if t is ast.Constant:
            return _const_kind(e.value)
        if t is ast.Name:
            if e.id in env:
                return env[e.id]
            return _const_kind(self.scope.get(e.id, ...)) if e.id in self.scope else None
        if t is ast.Tuple:
            if any(isinstance(x, ast.Starred) for x in e.elts):
                return None
            return ("tuple", tuple(self.expr(x, env) for x in e.elts))
        if t is ast.BinOp:
            a, b = self.expr(e.left, env), self.expr(e.right, env)
            if a is None or b is None:
                return None
            if a[0] == "array" or b[0] == "array":
                if a[0] in ("array", "num") and b[0] in ("array", "num"):
                    nd = {k[1] for k in (a, b) if k[0] == "array"}
                    return ("array", nd.pop() if len(nd) == 1 else None, _ufunc_type(e.op, a, b))
                return None
            if a[0] == "num" and b[0] == "num":
                return _arith(e.op, a[1], b[1])
            if a[0] == "tuple" and b[0] == "tuple" and isinstance(e.op, ast.Add):
                return ("tuple", a[1] + b[1])
            return None
        if t is ast.UnaryOp:
            if isinstance(e.op, ast.Not):
                return NUM
            k = self.expr(e.operand, env)
            return k if k is not None and k[0] in ("num", "array") else None
        if t in (ast.Compare, ast.BoolOp):
            parts = [e.left, *e.comparators] if t is ast.Compare else e.values
            ks = [self.expr(x, env) for x in parts]
            return NUM if all(k is not None and k[0] == "num" for k in ks) else None
        if t is ast.IfExp:
            a, b = self.expr(e.body, env), self.expr(e.orelse, env)
            if a is not None and b is not None and a[0] == b[0] == "num":
                return NUM
            return a if a == b else None
        if t is ast.Subscript:
            return self._subscript(e, env)
        if t is ast.Attribute:
            k = self.expr(e.value, env)
            if k is None:
                return self._module_attr(e)
            if k[0] == "array":
                if e.attr in ("shape", "strides"):
                    return ("tuple", (("num", np.dtype(np.int64)),) * k[1]) if k[1] is not None else None
                if e.attr in ("size", "ndim", "itemsize", "nbytes"):
                    return ("num", np.dtype(np.int64))
                if e.attr == "T":
                    return ("array", k[1], k[2])
                if e.attr in ("real", "imag"):
                    return ("array", k[1], None)
                return None
            if k[0] == "num" and e.attr in ("real", "imag"):
                return NUM
            return None
        if t is ast.Call:
            return self._call(e, env)
        return None

    def _is_cuda(self, e) -> bool:
        m = self.scope.get(e.id) if isinstance(e, ast.Name) else None
        return isinstance(m, types.ModuleType) and m.__name__ in ("numba.cuda", "gpusim.cuda")

    def _module_attr(self, e):
        if e.attr in ("x", "y", "z") and isinstance(e.value, ast.Attribute) and self._is_cuda(e.value.value) \
                and e.value.attr in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
            return NUM                                  # cuda.threadIdx.x: an integer
        if e.attr in ("laneid", "warpsize") and self._is_cuda(e.value):
            return NUM
        if isinstance(e.value, ast.Name) and isinstance(self.scope.get(e.value.id), types.ModuleType):
            v = getattr(self.scope[e.value.id], e.attr, ...)
            return _const_kind(v) if isinstance(v, (int, float)) else None
        return None

    def _subscript(self, e, env):
        k = self.expr(e.value, env)
        if k is None:
            return None
        idx = e.slice
        if k[0] == "tuple":
            if isinstance(idx, ast.Constant) and isinstance(idx.value, int) and -len(k[1]) <= idx.value < len(k[1]):
                return k[1][idx.value]
            if isinstance(idx, ast.Slice):
                return None
            els = k[1]
            return els[0] if els and all(x == els[0] for x in els) else None
        if k[0] != "array" or k[1] is None:
            return None
        items = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        drop = 0
        for it in items:
            if isinstance(it, ast.Slice):
                continue
            ik = self.expr(it, env)
            if ik is None:
                return None
            if ik[0] == "num":
                drop += 1
            elif ik[0] == "tuple" and all(x is not None and x[0] == "num" for x in ik[1]):
                drop += len(ik[1])
            else:
                return None
        nd = k[1] - drop
        if nd < 0:
            return None
        return ("num", k[2]) if nd == 0 else ("array", nd, k[2])

    def _call(self, e, env):
        f = e.func
        if isinstance(f, ast.Attribute) and f.attr in ("grid", "gridsize") and self._is_cuda(f.value) \
                and len(e.args) == 1 and isinstance(e.args[0], ast.Constant) and e.args[0].value in (1, 2, 3):
            n = e.args[0].value                         # cuda.grid(1): an integer; cuda.grid(2): a pair
            return NUM if n == 1 else ("tuple", (NUM,) * n)
        if not e.keywords:
            callee = self._callee(f, env)
            if callee is not None:                      # a device function's call: the kind its returns unify to
                return callee.return_kind(tuple(self.expr(a, env) for a in e.args))
        if isinstance(f, ast.Attribute) and f.attr == "array" and isinstance(f.value, ast.Attribute) \
                and f.value.attr in ("local", "shared") and isinstance(f.value.value, ast.Name) \
                and isinstance(self.scope.get(f.value.value.id), types.ModuleType) \
                and self.scope[f.value.value.id].__name__ in ("numba.cuda", "gpusim.cuda"):
            shape = e.args[0] if e.args else next((k.value for k in e.keywords if k.arg == "shape"), None)
            if isinstance(shape, ast.Tuple):
                return ("array", len(shape.elts), None)
            sk = self.expr(shape, env) if shape is not None else None
            if sk is not None and sk[0] == "num":
                return ("array", 1, None)
            if sk is not None and sk[0] == "tuple":
                return ("array", len(sk[1]), None)
            return None
        if isinstance(f, ast.Name) and f.id in _NUM_BUILTINS and f.id not in env and f.id not in self.assigns \
                and self.scope.get(f.id) is getattr(builtins, f.id):
            ks = [self.expr(a, env) for a in e.args]
            if f.id == "divmod":
                return None
            if f.id in ("min", "max") and not all(k is not None and k[0] == "num" for k in ks):
                return None
            return NUM
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            mod = self.scope.get(f.value.id)
            if isinstance(mod, types.ModuleType) and mod.__name__ in ("math", "cmath") and f.value.id not in env:
                return None if f.attr in ("frexp", "modf") else NUM
        return None

    # ---- calls no thread made -------------------------------------------------------------------------------
    def verify_calls(self, args, err, depth: int = 0) -> None:
        """numba types every call of a function before the kernel runs, so a device function called only on a
        path no thread takes is typed too: each call site's arguments are typed by the static reading (from this
        call's argument values) and the callee's returns checked with those kinds, down the call tree."""
        self._verify_calls_kinds(tuple(kind_of_value(a) for a in args), err, depth)

    def _verify_calls_kinds(self, sig, err, depth: int) -> None:
        try:
            if sig in self._calls_checked:
                return
        except TypeError:
            return
        if not self.calls or depth > 4:
            return
        self._calls_checked.add(sig)          # (while checked: a recursive call stops here)
        try:
            self._check_call_sites(sig, err, depth)
        except BaseException:
            self._calls_checked.discard(sig)  # refused again at the next launch with these types
            raise

    def _check_call_sites(self, sig, err, depth: int) -> None:
        env = self._env_of_kinds(list(sig))
        for _line, f, args, kws in self.calls:
            vote = self._vote(f, env)
            if vote is not None and args:
                _check_vote(vote, self.expr(args[0], env), _line, err)
            callee = self._callee(f, env)
            if callee is None:
                continue
            kinds = [self.expr(a, env) for a in args]
            byname = {k.arg: k.value for k in kws if k.arg}
            for p in callee.params[len(kinds):]:
                v = byname.get(p, callee.defaults.get(p))
                kinds.append(None if v is None else self.expr(v, env) if p in byname else callee.expr(v, {}))
            kinds = tuple(kinds[:len(callee.params)])
            if callee.needed:
                callee._verify(kinds, {}, err)
            callee._verify_calls_kinds(kinds, err, depth + 1)

    def return_kind(self, kinds):
        """The kind this function's returns unify to for arguments of ``kinds`` (None: one cannot be read, or
        they do not unify -- that is for ``_verify`` to say)."""
        if getattr(self, "_busy", False) or len(kinds) > len(self.params):
            return None                                 # recursion: left unknown
        self._busy = True
        try:
            env = self._env_of_kinds(list(kinds) + [None] * (len(self.params) - len(kinds)))
            out = None
            for _line, v in self.sites:
                k = NONE if v is None or v == "fallthrough" else self.expr(v, env)
                if k is None or not unifiable(out, k):
                    return None
                if k[0] == "none":
                    continue                            # an optional: left to the number / array it goes with
                if out is None or out == k:
                    out = k
                elif out[0] == k[0] == "num":
                    out = NUM
                else:
                    return None
            return out
        finally:
            self._busy = False

    def _vote(self, f, env):
        """``all``/``any``/``ballot``/``eq`` for a call of ``cuda.all_sync`` ... (numba-cuda's vote_sync_intrinsic),
        else None."""
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id not in env \
                and self._is_cuda(f.value):
            name = f.attr
        elif isinstance(f, ast.Name) and f.id not in env and f.id not in self.assigns:
            obj = self.scope.get(f.id)
            name = getattr(obj, "_name", None) if type(obj).__module__ == "gpusim.cuda" else None
        else:
            return None
        return name[:-5] if name in ("all_sync", "any_sync", "ballot_sync", "eq_sync") else None

    def _callee(self, f, env):
        if isinstance(f, ast.Name):
            if f.id in env or f.id in self.assigns or f.id not in self.scope:
                return None
            obj = self.scope[f.id]
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id not in env \
                and isinstance(self.scope.get(f.value.id), types.ModuleType):
            obj = getattr(self.scope[f.value.id], f.attr, None)
        else:
            return None
        return callee_check(obj)

    # ---- the check ------------------------------------------------------------------------------------------
    def verify(self, args, ran: dict, err) -> None:
        """``ran``: line -> the kinds of the values the returns of that line gave in this call; ``err(msg, line)``:
        the exception to raise."""
        self._verify(tuple(kind_of_value(a) for a in args), ran, err)

    def _verify(self, sig, ran: dict, err) -> None:
        try:
            stat = self._cache.get(sig)
        except TypeError:
            stat = None
            sig = None
        if stat is None:
            env = self._env_of_kinds(list(sig))
            stat = [(line, NONE if v is None or v == "fallthrough" else self.expr(v, env)) for line, v in self.sites]
            if sig is not None:
                self._cache[sig] = stat
        seen: list = []
        for line, k in stat:
            ks = ran.get(line) or ([k] if k is not None else [])
            for x in ks:
                if x is None:
                    continue
                if any(not unifiable(x, y) for y, _ in seen):
                    names = []
                    for y in [y for y, _ in seen] + [x]:
                        n = kind_name(y)
                        if n not in names:
                            names.append(n)
                    raise err("Can't unify return type from the following types: " + ", ".join(names), line)
                seen.append((x, line))


_CALLEE_CHECKS: dict = {}


def callee_check(obj):
    """The ``ReturnCheck`` of a device function (a ``cuda.jit(device=True)`` / ``numba.njit`` dispatcher) read off
    its source, or None (not one, a CUDA ufunc, no source)."""
    py = getattr(obj, "py_func", None)
    if not isinstance(py, types.FunctionType) or isinstance(getattr(type(obj), "_gpusim_untyped", None), str):
        return None
    if py in _CALLEE_CHECKS:
        return _CALLEE_CHECKS[py]
    _CALLEE_CHECKS[py] = None
    import inspect
    import textwrap
    try:
        lines, first = inspect.getsourcelines(py)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    ast.increment_lineno(tree, first - 1)
    fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    a = fdef.args if fdef is not None else None
    if fdef is None or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return None
    scope = dict(py.__globals__)
    if py.__closure__:
        for name, cell in zip(py.__code__.co_freevars, py.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    chk = ReturnCheck(fdef, [x.arg for x in a.args], scope)
    _CALLEE_CHECKS[py] = chk
    return chk
