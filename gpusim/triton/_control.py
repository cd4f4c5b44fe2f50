"""Masked lockstep control flow: what the rewritten kernel calls at every ``if``, ``for``, ``while``, ``return``.

All programs of a chunk run the kernel body together.  A condition or loop bound that is the same for every
active program runs as plain Python.  One that differs between programs pushes a mask of the programs that
take the branch / are still in the loop: memory ops of the others are masked off, and after the region each
variable the region assigned is merged (new value where the mask is set, old value elsewhere).  A loop runs
while any program is still in it.  ``return`` under a program-varying condition retires the active programs.
Runtime loops (``range``, ``tl.range``) are reported to the recorder so the lowering can software-pipeline
them; ``tl.static_range`` is unrolled, as Triton unrolls it.  (Above the ops: ``x if c else y`` on a
program-varying ``c`` is ``tl.where``.)
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from . import _axisinfo as AI
from . import _core as C
from ._core import _is_scalar_py, broadcast_shapes, fail, tensor, to_tensor, unwrap, vshape
from ._ops_math import where

MISSING = object()


class RangeSpec:
    """What ``range(...)``, ``tl.range(...)`` and ``tl.static_range(...)`` return inside a kernel."""

    def __init__(self, args, kind: str, num_stages=None):
        args = tuple(unwrap(a) for a in args)
        if not 1 <= len(args) <= 3:
            fail(CompileError, f"range expects 1 to 3 arguments, got {len(args)}")
        if len(args) == 1:
            args = (0, args[0], 1)
        elif len(args) == 2:
            args = (args[0], args[1], 1)
        self.start, self.stop, self.step = args
        self.kind = kind
        self.num_stages = unwrap(num_stages)
        if kind == "static":
            for a in args:
                if isinstance(a, tensor):
                    fail(CompileError, "static_range bounds must be constexprs")

    def _ints(self):
        out = []
        for a in (self.start, self.stop, self.step):
            if isinstance(a, tensor):
                if a.shape:
                    fail(CompileError, "range bounds must be scalars")
                if a.v.shape[0] != 1:
                    return None
                a = a.v[0]
            out.append(int(a))
        return out

    def __iter__(self):
        ints = self._ints()
        if ints is None:
            fail(UnsupportedConstruct, "a range with program-varying bounds can only drive a for loop")
        return iter(range(*ints))

    def __len__(self):
        ints = self._ints()
        return len(range(*ints))


def k_range(*args, **kwargs):
    # Python's ``range`` in a kernel: Triton 3.6's code generator reads its positional bounds and ignores keywords
    # (unsloth's grouped GEMM: ``for expert_idx in range(NUM_EXPERTS, flatten = FLATTEN)``)
    return RangeSpec(args, "range")


def _range_args(arg1, arg2, step) -> tuple:
    """``(arg1, arg2=None, step=None)`` as Triton's range classes take them, as ``range``'s positional arguments."""
    if arg2 is None:
        return (arg1,) if step is None else (0, arg1, step)
    return (arg1, arg2) if step is None else (arg1, arg2, step)


def static_range(arg1, arg2=None, step=None):
    return RangeSpec(_range_args(arg1, arg2, step), "static")


def tl_range(arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, disallow_acc_multi_buffer=False,
             flatten=False, warp_specialize=False, disable_licm=False):
    return RangeSpec(_range_args(arg1, arg2, step), "range", num_stages)


def _ax_of(x):
    if isinstance(x, tensor):
        return x.ax if x.ax is not None else AI.pessimistic(1)
    return AI.constant(int(x))


def merge_values(mask: np.ndarray, new, old):
    """Value of a variable after a masked region: ``new`` for the programs in ``mask``, ``old`` elsewhere."""
    if new is old:
        return new
    new_u, old_u = unwrap(new), unwrap(old)
    nt, ot = isinstance(new_u, tensor), isinstance(old_u, tensor)
    if not nt and not ot:
        try:
            if new_u == old_u:
                return new
        except Exception:
            return new
        if not _is_scalar_py(new_u) or not _is_scalar_py(old_u):
            return new
    if not nt and not _is_scalar_py(new_u):
        return new
    if not ot and not _is_scalar_py(old_u):
        return new
    tn = new_u if nt else to_tensor(new_u)
    to = old_u if ot else to_tensor(old_u)
    if tn.dtype.is_ptr() != to.dtype.is_ptr():
        return new
    if tn.shape != to.shape:
        if tn.numel == to.numel or not tn.shape or not to.shape:
            shape = broadcast_shapes(tn.shape, to.shape)
        else:
            return new
    else:
        shape = tn.shape
    dt = tn.dtype
    if dt.is_ptr() and tn.buf is not None and to.buf is not None and tn.buf.flat is not to.buf.flat:
        to = _rebase_pointer(to, tn.buf)
    vn = vshape(tn, shape)
    vo = vshape(to, shape)
    if not dt.is_ptr() and to.dtype != dt:
        vo = vo.astype(dt.np)
    P = mask.shape[0]
    m = mask.reshape((P,) + (1,) * len(shape))
    v = np.where(m, vn, vo)
    out = tensor(v, dt, shape)
    out.buf = tn.buf
    out.ax = AI.join(tn.ax, to.ax) if (tn.ax is not None and to.ax is not None) else None
    out.lay = tn.lay or to.lay
    out.src = tn.src
    out.lsrc = tn.lsrc
    ds = tn.dsrc
    if to.dsrc:
        ds = to.dsrc if not ds else (ds | to.dsrc)
    out.dsrc = ds
    return out


def _rebase_pointer(t: tensor, buf) -> tensor:
    """A pointer into one allocation, as offsets from ``buf``'s base (a pointer variable that points into
    different arrays in different programs: a pointer table's entries); accesses outside ``buf`` reach the
    other allocation as another argument's memory is reached (``_ops_memory._oob``)."""
    old = t.buf
    delta = old.base_addr - buf.base_addr
    eb = buf.elem_bytes
    if old.elem_bytes != eb or delta % eb:
        fail(UnsupportedConstruct, "a pointer variable points into arrays of different element types in different "
                                   "programs")
    st = C.ST
    if old not in st.buffers:
        st.buffers.append(old)
    out = tensor(t.v + delta // eb, t.dtype, t.shape)
    out.buf = buf
    out.ax, out.lay, out.src, out.lsrc, out.dsrc = t.ax, t.lay, t.src, t.lsrc, t.dsrc
    return out


def program_values(t: tensor) -> np.ndarray:
    st = C.ST
    v = t.v
    if v.shape[0] == 1 and st.P != 1:
        v = np.broadcast_to(v, (st.P,) + v.shape[1:])
    return v


def _carried_type(v):
    """The Triton type a loop-carried value has (``int32``, ``<[128], fp32>``), or None where Triton's rule does
    not look (tuples, descriptors, constexpr-only objects)."""
    v = unwrap(v)
    if isinstance(v, tensor):
        return v.dtype.name if not v.shape else f"<{[str(int(d)) for d in v.shape]}, {v.dtype.name}>"
    if isinstance(v, bool):
        return "int1"
    if isinstance(v, int):
        return "int32" if -2 ** 31 <= v < 2 ** 31 else ("int64" if -2 ** 63 <= v < 2 ** 63 else "uint64")
    if isinstance(v, float):
        return "fp32"
    return None


class _Region:
    masked = False
    carried = False             # a loop Triton compiles as an scf loop: its carried values keep their types
    _types0 = None
    rec = None                  # the lowering, for a loop it records
    _merges = 0                 # trips merged so far (a loop's carried tiles are noted at the second)

    def snap(self, locs):
        if self.carried and self._types0 is None:
            self._types0 = {n: _carried_type(v) for n, v in locs.items() if not n.startswith("__")}
        return dict(locs) if self.masked else None

    def _check_types(self, locs, names):
        """Triton compiles ``range``/``tl.range``/``while`` loops once, so a variable live before the loop must keep
        its type (dtype and shape) through it: ``acc = 0`` then ``acc += tl.load(p)`` (fp32) is Triton's error."""
        t0 = self._types0
        for n in names:
            if n not in t0 or t0[n] is None:
                continue
            new = locs.get(n, MISSING)
            if new is MISSING or new is getattr(self, "value", None):      # the induction variable is not carried
                continue
            t1 = _carried_type(new)
            if t1 is not None and t1 != t0[n]:
                # Triton names the loop's line (its scf loop), not the assignment's
                file, line = getattr(self, "_where", None) or C.user_line()
                raise CompileError(f"Loop-carried variable {n} has initial type {t0[n]} but is re-assigned to {t1} "
                                   f"in loop! Please make sure that the type stays consistent.", file=file, line=line,
                                   kernel=C.ST.kernel_name if C.ST is not None else "")

    def merge(self, snap, locs, names):
        if self.carried and self._types0 is not None:
            self._check_types(locs, names)
            if self.rec is not None:
                self._merges += 1
                if self._merges == 2:         # a loop of one trip the compiler folds away: only from the second on
                    self.rec.note_carried([locs[n] for n in names if n in locs and (self._types0.get(n) or "")
                                           .startswith("<") and locs[n] is not getattr(self, "value", None)])
        if not self.masked or snap is None:
            return {}
        mask = C.ST.active()
        if mask is None:
            return {}
        out = {}
        for n in names:
            new = locs.get(n, MISSING)
            if new is MISSING:
                continue
            old = snap.get(n, MISSING)
            if old is MISSING or old is new:
                continue
            out[n] = merge_values(mask, new, old)
        return out


class Branch(_Region):
    def __init__(self, cond, text: str = "..."):
        self.cv = C.cond_value(cond, unsplat=text)
        self.pushed = False

    def then(self) -> bool:
        cv = self.cv
        if cv is True:
            self.masked = False
            return True
        if cv is False:
            return False
        return self._enter(cv)

    def orelse(self) -> bool:
        cv = self.cv
        if cv is True:
            return False
        if cv is False:
            self.masked = False
            return True
        return self._enter(~cv)

    def _enter(self, m) -> bool:
        st = C.ST
        st.push(m)
        if not st.any_active():
            st.pop()
            return False
        self.masked = True
        self.pushed = True
        return True

    def end(self):
        if self.pushed:
            C.ST.pop()
            self.pushed = False
        self.masked = False


class For(_Region):
    """A ``for`` loop: plain Python over uniform bounds, masked lockstep over program-varying ones."""

    def __init__(self, it, line: int = 0):
        st = C.ST
        it = unwrap(it)
        file, here = C.user_line()
        self._where = (file, line or here)   # the loop statement (file, line), for errors about the whole loop
        self.rec = None
        self.pushed = False
        self.value = None
        if isinstance(it, RangeSpec):
            self.kind = it.kind
            self.carried = it.kind == "range"
            ints = it._ints()
            if it.kind == "range" and st.rec is not None:
                self.rec = st.rec
                st.rec.loop_begin(it.num_stages, line=self._where[1])
            if ints is not None:
                if ints[2] == 0:
                    fail(CompileError, "range step must not be zero")
                self._py = iter(range(*ints))
                self._tensor_var = it.kind == "range"
                self._lbax = (_ax_of(it.start), _ax_of(it.step))
                self.uniform = True
            else:
                self.uniform = False
                P = st.P
                lo, hi, step = (program_values(C.to_tensor(a)).astype(np.int64) if isinstance(a, tensor)
                                else np.full(P, int(a), np.int64) for a in (it.start, it.stop, it.step))
                if np.any(step == 0):
                    fail(CompileError, "range step must not be zero")
                self.lo, self.hi, self.step = lo, hi, step
                self.var_uniform = not isinstance(it.start, tensor) or it.start.v.shape[0] == 1
                self.var_uniform &= not isinstance(it.step, tensor) or it.step.v.shape[0] == 1
                self.entry = st.active()
                self.k = 0
                self._lbax = (_ax_of(it.start), _ax_of(it.step))
        else:
            self.kind = "py"
            self.uniform = True
            self._tensor_var = False
            self._py = iter(it)

    def next(self) -> bool:
        st = C.ST
        if self.pushed:
            st.pop()
            self.pushed = False
        self.masked = False
        if self.uniform:
            try:
                v = next(self._py)
            except StopIteration:
                return False
            if self._tensor_var:
                t = tensor(np.array([v], np.int32 if -2 ** 31 <= v < 2 ** 31 else np.int64),
                           C.int32 if -2 ** 31 <= v < 2 ** 31 else C.int64, ())
                if st.rec is not None:
                    t.ax = AI.loop_var(*self._lbax)
                v = t
            self.value = v
            if self.rec is not None:
                self.rec.loop_iter()
            return True
        k = self.k
        self.k += 1
        val = self.lo + k * self.step
        inside = np.where(self.step > 0, val < self.hi, val > self.hi)
        if self.entry is not None:
            inside &= self.entry
        a = st.active()
        cur = inside if a is None else (inside & a)
        if not cur.any():
            return False
        if a is None:
            full = bool(inside.all())
        else:
            full = bool(cur[a].all())
        if not full:
            st.push(inside)
            self.pushed = True
            self.masked = True
        if self.var_uniform:
            t = tensor(np.array([val[0]], np.int32), C.int32, ())
        else:
            t = tensor(val.astype(np.int32), C.int32, ())
        if st.rec is not None:
            t.ax = AI.loop_var(*self._lbax)
        self.value = t
        if self.rec is not None:
            self.rec.loop_iter()
        return True

    def finish(self):
        if self.pushed:
            C.ST.pop()
            self.pushed = False
        if self.rec is not None:
            self.rec.loop_end()
            self.rec = None


class While(_Region):
    """A ``while`` loop: runs while any program is still in it (masked lockstep).

    Programs can wait on each other here: ``while tl.atomic_cas(Lock, 0, 1) == 1: pass`` spins until the lock's
    holder releases it, but in lockstep the holder is masked off until the loop ends.  An iteration that changes
    nothing (the same programs inside, no memory written, the loop's variables unchanged) cannot be followed by a
    different one, so the programs inside are *deferred* (``State.defer``): they leave the loop and the rest of
    the kernel, the others run on (the holder releases the lock), and the deferred programs run again in the
    next round (``State.next_round``), retrying where they waited.  Contenders for one lock thus take it one
    after another, in program order, as the L2's atomics serialize them."""

    def __init__(self, names=(), line: int = 0):
        st = C.ST
        file, here = C.user_line()
        self._where = (file, line or here)   # the loop statement (file, line), for errors about the whole loop
        self.inside = None          # programs still in the loop (None = all that entered)
        self.pushed = False
        self.names = names
        self.rec = st.rec
        self.k = 0
        self.prev = None            # (active programs, write epoch, variables, write indices) at the last check
        self.carried = True
        st.in_while += 1
        if self.rec is not None:
            self.rec.loop_begin(None, kind="while", line=self._where[1])
        self.mark = len(self.rec.ops) if self.rec is not None else 0    # the ops this round's loop records

    def next(self, cond, locs=None) -> bool:
        st = C.ST
        cv = C.cond_value(cond)
        if self.pushed:
            st.pop()
            self.pushed = False
        self.masked = False
        if cv is False:
            return False
        if cv is True:
            if self.inside is not None:
                st.push(self.inside)
                self.pushed = True
                self.masked = True
                if not st.any_active():
                    st.pop()
                    self.pushed = False
                    return False
        else:
            self.inside = cv if self.inside is None else (self.inside & cv)
            st.push(self.inside)
            self.pushed = True
            self.masked = True
            if not st.any_active():
                st.pop()
                self.pushed = False
                return False
        if self._stuck(st, locs):
            return False
        if self.rec is not None:
            self.rec.loop_iter()
        return True

    def _stuck(self, st, locs) -> bool:
        """An iteration that changed nothing: defer the programs in the loop (see the class doc)."""
        a = st.active()
        vals = tuple(locs.get(n) for n in self.names) if locs is not None else ()
        prev = self.prev
        self.prev = (a, st.write_epoch, vals, st.write_idx.copy())
        self.k += 1
        if prev is None or prev[1] != st.write_epoch:
            return False
        pa = prev[0]
        if (pa is None) != (a is None) or (a is not None and not np.array_equal(pa, a)):
            return False
        for x, y in zip(prev[2], vals):
            if x is y:
                continue
            xu, yu = unwrap(x), unwrap(y)
            if isinstance(xu, tensor) and isinstance(yu, tensor):
                if xu.dtype != yu.dtype or xu.v.shape != yu.v.shape or not np.array_equal(xu.v, yu.v):
                    return False
            else:
                try:
                    if not bool(xu == yu):
                        return False
                except Exception:
                    return False
        waiting = np.ones(st.P, bool) if a is None else a.copy()
        if self.rec is not None and not st.probe:
            # their attempts this round failed: the trace keeps only the one that takes the lock (a later round),
            # and the timing engine makes the CTA wait for the holder instead
            self.rec.unrecord(self.mark, waiting)
        if self.pushed:
            st.pop()
            self.pushed = False
        st.defer(waiting, prev[3], C.user_line())
        return True

    def finish(self):
        st = C.ST
        if self.pushed:
            st.pop()
            self.pushed = False
        st.in_while -= 1
        if self.rec is not None:
            self.rec.loop_end()


def reject(msg: str, kind: str = "UnsupportedConstruct"):
    """A construct Triton refuses, reached under an ``if`` (see ``_strict``)."""
    fail(CompileError if kind == "CompileError" else UnsupportedConstruct, msg)


def comp_iter(it):
    """The iterable of a list comprehension: Triton iterates tuples only."""
    if not isinstance(it, tuple):
        fail(CompileError, "only tuple comprehensions are supported (a comprehension over "
                           f"{type(it).__name__} is not)")
    return it


def as_tuple(gen) -> tuple:
    return tuple(gen)


def depth() -> int:
    return len(C.ST.masks)


def retire(d0: int = 0) -> bool:
    """``return`` in a kernel: True means 'return now' (no program left), else the active programs retire."""
    st = C.ST
    if len(st.masks) == d0 and st.retired is None and d0 == 0:
        return True
    return st.retire()


class HelperReturns:
    """``return`` of a value in a JIT helper under a condition that differs between programs (as Triton inlines the
    helper, each program gets the value of the ``return`` it reached): a program that returns stops executing the
    helper (it is retired until the helper ends) and its value is kept; the helper returns when every program
    that entered it has returned, or at its end.  A condition every program agrees on returns at once."""

    __slots__ = ("d0", "retired0", "entry", "acc", "partial")

    def __init__(self):
        st = C.ST
        self.d0 = len(st.masks)
        self.retired0 = st.retired
        self.entry = st.active()
        self.acc = MISSING
        self.partial = False

    def give(self, v) -> bool:
        """A ``return v`` under a condition: True when the helper returns now (then ``value()``)."""
        st = C.ST
        if not self.partial and len(st.masks) == self.d0:
            self.acc = v
            return True
        a = st.active()
        if a is None:
            a = np.ones(st.P, bool)
        if not a.any():
            return False
        self.acc = v if self.acc is MISSING else _merge_returned(a, v, self.acc)
        self.partial = True
        st.retired = a.copy() if st.retired is None else (st.retired | a)
        st._update()
        left = ~st.retired if self.entry is None else (self.entry & ~st.retired)
        return not left.any()

    def value(self):
        if self.partial:
            self._restore()
        return self.acc

    def finish(self, v):
        """The helper's end (``return v`` at its top level, or falling off it: ``v`` None)."""
        if not self.partial:
            return v
        st = C.ST
        a = st.active()
        if a is None or a.any():
            self.acc = _merge_returned(np.ones(st.P, bool) if a is None else a, v, self.acc)
        self._restore()
        return self.acc

    def _restore(self):
        st = C.ST
        del st.masks[self.d0:]
        st.retired = self.retired0
        st._update()


def _merge_returned(mask, new, old):
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old):
        return tuple(_merge_returned(mask, n, o) for n, o in zip(new, old))
    if new is None or old is None:
        return new if old is None else old
    return merge_values(mask, new, old)


def check_return(d0: int):
    if len(C.ST.masks) > d0:
        fail(UnsupportedConstruct, "`return` of a value under a condition that differs between programs")


def and_(a, bf):
    a = unwrap(a)
    if not isinstance(a, tensor):
        return bf() if a else a
    b = unwrap(bf())
    return C.binary("and", _as_bool(a), _as_bool(b))


def or_(a, bf):
    a = unwrap(a)
    if not isinstance(a, tensor):
        return a if a else bf()
    b = unwrap(bf())
    return C.binary("or", _as_bool(a), _as_bool(b))


def _as_bool(x):
    x = unwrap(x)
    if isinstance(x, tensor):
        return x if x.dtype is C.int1 else C.cast(x, C.int1)
    return bool(x)


def not_(a):
    a = unwrap(a)
    if not isinstance(a, tensor):
        return not a
    return C.binary("eq", _as_bool(a), False)


def ifexp(c, af, bf):
    c = unwrap(c)
    if not isinstance(c, tensor):
        return af() if c else bf()
    cv = C.cond_value(c)
    if cv is True:
        return af()
    if cv is False:
        return bf()
    return where(c, af(), bf())


def assert_(cond, msg=None):
    cond = unwrap(cond)
    if isinstance(cond, tensor):
        from ._state import IGNORED_CALLS
        IGNORED_CALLS.add("`assert` on a tensor (device_assert) is not checked (Triton checks it only in debug mode)")
        return
    if not cond:
        fail(CompileError, f"assertion failed: {msg}" if msg is not None else "assertion failed")


def cvalue(x):
    """``x.value`` in a kernel or helper.  Triton's code generator hands constexpr parameters, literals and the
    dtype / int / float / bool arguments of a JIT helper over wrapped in ``tl.constexpr`` (whose ``.value`` is the
    plain value); gpusim passes them plain, so ``.value`` of such a value is the value itself."""
    try:
        return x.value
    except AttributeError:
        if x is None or isinstance(x, (bool, int, float, C.dtype)):
            return x
        raise
