"""Compiler pass: analyses of a function's AST that decide how it is compiled (nothing is rewritten here).

Control-flow facts: where lanes reconverge (``_join``: no reconvergence point after the kernel's last statement
or an early-exit ``if ...: return``), which ``while`` loops LLVM can count (``_countable``: candidates for
runtime unrolling), how a loop body reads its ``range`` variable (``_var_use``), which ``range`` loops run their
remainder first with lanes out of step (``_slot_order``), which loop variables are dead after their loop
(``_loop_private``), and through which statements lanes may jump out (``_may_escape``).  The
register analysis (``_liveness``): live ranges of the variables over statement positions and the Sethi-Ullman
number of the deepest expression, the static half of the register estimate (``launch._registers``).
"""
from __future__ import annotations

import ast
import inspect
import textwrap

#: calls that make a loop body convergent (a barrier, a warp-level collective): LLVM does not unroll around them
_CONVERGENT = frozenset({"syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or", "syncwarp",
                         "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync",
                         "eq_sync", "ballot_sync", "match_any_sync", "match_all_sync", "activemask", "sync",
                         "this_grid", "reduce"})


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


def _callees(*nodes):
    """The ``func`` of every call in ``nodes``."""
    return [n.func for n in ast.walk(ast.Module(body=list(nodes), type_ignores=[])) if isinstance(n, ast.Call)]


def _called_name(f) -> str:
    return f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")


def _plain_function(py_func, depth: int) -> bool:
    """A device function without loops and convergent calls, also in the device functions it calls (looked up in
    its globals; anything that does not resolve or parse counts as not plain)."""
    if depth > 4:
        return False
    try:
        fdef = ast.parse(textwrap.dedent(inspect.getsource(py_func))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return False
    if not isinstance(fdef, ast.FunctionDef) or _contains(fdef.body, (ast.For, ast.While, ast.AsyncFor)):
        return False
    env = getattr(py_func, "__globals__", {})
    for f in _callees(fdef):
        if _called_name(f) in _CONVERGENT:
            return False
        obj = env.get(f.id) if isinstance(f, ast.Name) else None
        inner = getattr(obj, "py_func", None)
        if inner is not None and not _plain_function(inner, depth + 1):
            return False
    return True


class FlowAnalysis:
    """Control-flow facts of the function being compiled, for ``compiler._FunctionCompiler``."""

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

    def _slot_order(self, s, depth: int = 0) -> bool:
        """Is ``for`` loop ``s`` runtime-unrolled by LLVM with its lanes free to go through the iterations out of
        step?  Its body (and the device functions it calls) holds no loop, ``break``/``continue``/``return`` and no
        barrier or warp-level collective -- then the loop is innermost and runtime-unrolled, and each lane runs
        its ``trip % U`` remainder iterations and its groups of ``U`` whatever the other lanes of its warp do
        (``control.SlotPlan``)."""
        body = s.body
        if _contains(body, (ast.For, ast.While, ast.Break, ast.Continue, ast.Return, ast.AsyncFor, ast.With)):
            return False
        for f in _callees(*body):
            if _called_name(f) in _CONVERGENT:
                return False
            try:
                tag = self.static(f)
            except Exception:               # resolution errors are reported where the call is compiled
                return False
            if tag and tag[0] == "devfn" and not _plain_function(tag[1], depth + 1):
                return False
        return True

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
