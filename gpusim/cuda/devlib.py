"""The device libraries of the SIMT machine: ``cuda.random``, cooperative groups' grid sync, ufuncs on arrays.

``cuda.random`` (``rng``): the xoroshiro128+ device functions of ``gpusim.cuda.random`` (or numba's namesakes)
called from a kernel.  Each call loads the lane's state ``states[index]`` (two 64-bit words, two ``LDG.E.64``
through the ordinary indexing of a (n, 2) uint64 view: numba's code indexes the record array with a signed
index), steps it on all lanes at once with the same uint64 arithmetic as the host (bit-identical streams), and
stores it back; it records the integer instructions numba's code compiles to (``costs.py``: ``rng_next`` =
the 64-bit add, xors, shifts and funnel-shift rotations on 32-bit halves; ``rng_unit`` = the float
conversion).  The normal variates run Box-Muller through the machine's own ``math`` and ``binop``, with
numba's types (float32 log/sqrt/cos; the float64 variant mixes float32 uniforms into float64 arithmetic).

Grid sync (``cuda.cg.this_grid().sync()``): all threads of the grid reach the barrier before any proceeds.  A
kernel that uses it is launched cooperatively: the launch runs the whole grid as one chunk (``launch.run``),
so executing the barrier in lockstep is exactly the semantics; it ends the straight-line regions (loads are
not reused across it, its loop is not unrolled) and records a ``GRID_SYNC`` op that the timing engine holds
until every live warp of the grid has arrived.

Ufuncs with an output array (``np.sin(x, out)``, ``np.add(a, b, out=r)``): numba compiles them into a loop
over the output's elements in the calling thread; the machine runs that loop (``ufunc_out``) with its own
range loop, loads, math and stores, so the costs are those of the loop a thread executes.
"""
from __future__ import annotations

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from ..trace import Op, OpKind
from . import costs as C_
from . import random as _rnd
from .values import ARRAYS, EMPTY, Dim3, F32, F64, I64, ArrayView, GlobalArray, V, _union, const


class GridGroup:
    """What ``cuda.cg.this_grid()`` returns inside a kernel: ``.sync()`` is the grid-wide barrier."""

    __slots__ = ()

    def __repr__(self):
        return "<grid group>"


GRID = GridGroup()
#: numpy's arithmetic ufuncs, by the machine's operator names (``resolve._NPBINOP`` maps them)
_BINOP_UFUNCS = frozenset(("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "bitand", "bitor", "bitxor",
                           "lshift", "rshift"))
_UNIFORM = {"xoroshiro128p_uniform_float32": F32, "xoroshiro128p_uniform_float64": F64}
_NORMAL = {"xoroshiro128p_normal_float32": F32, "xoroshiro128p_normal_float64": F64}


class DeviceLibrary:
    """The chunk's (``runtime.Chunk``) library calls: random numbers, grid sync, array ufuncs."""

    # ---- cuda.random --------------------------------------------------------------------------------------------
    def _rng_words(self, states, line) -> GlobalArray:
        """The (n, 2) uint64 view of a state array (same device address), cached per array."""
        if isinstance(states, GlobalArray) and states.dtype == _rnd.xoroshiro128p_dtype and states.ndim == 1:
            key = ("rng", states.key)
            u = self._shared.get(key)
            if u is None:
                u = GlobalArray(states.name, states.ary.view(np.uint64).reshape(-1, 2), states.base_addr)
                self._shared[key] = u
            return u
        what = f"an array of dtype {states.dtype}" if isinstance(states, ARRAYS) else type(states).__name__
        raise self._err(CompileError, f"cuda.random functions take the array of generator states made by "
                        f"create_xoroshiro128p_states (1-d, xoroshiro128p_dtype), not {what}", line)

    def _rng_step(self, u, idx, line) -> V:
        """``xoroshiro128p_next``: the next uint64 of each lane's generator; its state advanced in memory."""
        s0 = self.load(u, (idx, const(0)), line)
        s1 = self.load(u, (idx, const(1)), line)
        deps = _union(s0.deps, s1.deps)
        n0 = len(self.ops)
        r, n0v, n1v = _rnd.next_state(s0.v, s1.v)
        if self.recording and self.mask is not EMPTY:
            self._rec(("rng_next",), line, deps)
        out = self._out(deps, n0)
        self.store(u, (idx, const(0)), V(n0v, out, False), line)
        self.store(u, (idx, const(1)), V(n1v, out, False), line)
        return V(r, out, False)

    def rng(self, name, args, line):
        if name not in _rnd.DEVICE_FUNCTIONS:        # pragma: no cover - the compiler resolves only these
            raise self._err(UnsupportedConstruct, f"cuda.random.{name}", line)
        need = 3 if name == "init_xoroshiro128p_state" else 2
        if len(args) != need:
            raise self._err(CompileError, f"{name} takes {need} arguments (states, index"
                            f"{', seed' if need == 3 else ''}), {len(args)} given", line)
        u = self._rng_words(args[0], line)
        idx = self.cast(args[1], I64, line)          # numba: index = int64(index)
        if name == "xoroshiro128p_next":
            return self._rng_step(u, idx, line)
        if name in _UNIFORM:
            x = self._rng_step(u, idx, line)
            n0 = len(self.ops)
            f = _rnd.unit_float32(x.v) if _UNIFORM[name] == F32 else _rnd.unit_float64(x.v)
            if self.recording and self.mask is not EMPTY:
                self._rec(("rng_unit", _UNIFORM[name].name), line, x.deps)
            return V(f[()] if f.ndim == 0 else f, self._out(x.deps, n0), False)
        if name in _NORMAL:
            ft = _NORMAL[name]
            u1 = self.rng("xoroshiro128p_uniform_float32", (args[0], idx), line)
            u2 = self.rng("xoroshiro128p_uniform_float32", (args[0], idx), line)
            lg = self.math("log", (u1,), line)
            rad = self.math("sqrt", (self.binop("mul", const(ft.type(-2.0)), lg, line),), line)
            ang = self.binop("mul", const(_rnd.TWO_PI_FLOAT32 if ft == F32 else _rnd.TWO_PI_FLOAT64), u2, line)
            return self.binop("mul", rad, self.math("cos", (ang,), line), line)
        if name == "xoroshiro128p_jump":
            s0 = self.load(u, (idx, const(0)), line)
            s1 = self.load(u, (idx, const(1)), line)
            deps = _union(s0.deps, s1.deps)
            n0 = len(self.ops)
            j0, j1 = _rnd.jump_state(s0.v, s1.v)
            if self.recording and self.mask is not EMPTY:
                self._no_unroll()
                self._rec(("rng_jump",), line, deps)
            out = self._out(deps, n0)
            self.store(u, (idx, const(0)), V(j0, out, False), line)
            self.store(u, (idx, const(1)), V(j1, out, False), line)
            return None
        # init_xoroshiro128p_state(states, index, seed)
        seed = self._val(args[2], line)
        n0 = len(self.ops)
        z = _rnd.splitmix64(seed.v)
        if self.recording and self.mask is not EMPTY and not seed.const:
            self._rec(("rng_splitmix",), line, seed.deps)
        zv = V(z[()] if np.ndim(z) == 0 else z, self._out(seed.deps, n0), seed.const)
        self.store(u, (idx, const(0)), zv, line)
        self.store(u, (idx, const(1)), zv, line)
        return None

    # ---- cooperative groups ---------------------------------------------------------------------------------------
    def this_grid(self, line) -> GridGroup:
        """``cuda.cg.this_grid()``: the grid group handle (cudaCGGetIntrinsicHandle)."""
        if self.recording and self.mask is not EMPTY and "cg_grid" not in self._fields_seen:
            self._fields_seen.add("cg_grid")
            self._rec(("cg_this_grid",), line)
        return GRID

    def grid_sync(self, line) -> None:
        """``grid.sync()``: every thread of the grid reaches it before any goes on.  The grid runs as one chunk
        (the launch is cooperative), so the lockstep execution is the barrier; exited threads do not take part
        (as on hardware, where they have left the CTA barriers of cudaCGSynchronize)."""
        m = self.mask
        if m is EMPTY:
            return
        if self.C != self.L.n_ctas:          # pragma: no cover - launch.run makes one chunk of the grid
            raise self._err(UnsupportedConstruct, "grid sync in a launch split into chunks", line)
        self._no_unroll()                    # convergent: its loop is not unrolled
        self._vec_loads.clear()
        self._load_cse.clear()               # memory written before the barrier is read again after it
        if self.recording:
            self._rec(("grid_sync_call",), line)
            pipe, n, label = C_.cost(("grid_sync",))[0]
            self.ops.append(Op(OpKind.GRID_SYNC, pipe, n, line, (), label=label))
            self.op_rows.append(self._row_of(m))

    def array_sum(self, arr, line) -> V:
        """``a.sum()`` / ``np.sum(a)`` in a kernel (numba-cuda compiles it): each thread loads every element and
        adds them up in order, ints in int64 as numpy's sum."""
        if type(arr) is ArrayView and arr.shape is None:
            return self.view_fold(arr, "add", line)        # a shape per thread: a loop in each thread
        acc = None
        for ix in np.ndindex(*arr.shape):
            x = self.getitem(arr, tuple(const(int(j)) for j in ix) if len(ix) > 1 else const(int(ix[0])), line)
            if acc is None:
                acc = x if x.v.dtype.kind == "f" else self.cast(x, np.dtype(np.int64), line)
            else:
                acc = self.binop("add", acc, x, line)
        return acc if acc is not None else const(np.float64(0.0) if arr.dtype.kind == "f" else 0)

    def kprint(self, values, names, line) -> None:
        """``print(a, b, ...)`` in a kernel: numba-cuda's printf, one line per active thread (here in block, then
        thread order; on the GPU the order varies), floats as ``%f``, integers as ``%d``, strings as they are.
        Arrays have no format (a compile error, as numba-cuda's).  It costs no instructions here."""
        from .values import kind_name
        cols = []
        for v, nm in zip(values, names):
            if isinstance(v, ARRAYS):
                raise self._err(CompileError, f"printing unimplemented for values of type {kind_name(v)} "
                                f"({nm!r}: numba-cuda prints numbers and strings)", line)
            if isinstance(v, Dim3):                 # numba prints a Dim3 as "(%d, %d, %d)"
                v = tuple(self.sreg(v.sreg, d, line) for d in range(3))
            cols.append(v)
        m = self.mask
        if m is EMPTY:
            return None
        shape = (self.C, self.P)
        act = np.broadcast_to(m.a if m.a is not None else True, shape)
        if self.L.exist is not None:
            act = act & np.broadcast_to(self.L.exist, shape)

        def fmt(x) -> str:
            if isinstance(x, str):
                return x
            if isinstance(x, tuple):
                return "(" + ", ".join(fmt(y) for y in x) + ")"
            x = np.asarray(x).item() if np.ndim(x) == 0 else x
            if isinstance(x, (bool, np.bool_)):
                return "True" if x else "False"
            if isinstance(x, (float, np.floating)):
                return "%f" % x
            return str(x)

        def at(v, c, p):
            if type(v) is V:
                a = np.asarray(v.v)
                return a.item() if a.ndim == 0 else np.broadcast_to(a, shape)[c, p]
            if isinstance(v, tuple):
                return tuple(at(x, c, p) for x in v)
            return v
        for c, p in zip(*np.nonzero(act)):
            print(" ".join(fmt(at(v, c, p)) for v in cols))
        return None

    def isinst(self, obj, spec, line) -> V:
        """``isinstance(x, cls)``: decided by the type of ``x`` at compile time, as numba decides it."""
        for s in spec:
            if s[0] == "tuple" and isinstance(obj, tuple) and not hasattr(obj, "vname"):   # a vector is no tuple
                return const(True)
            if type(obj) is V and obj.v.dtype == s[1]:
                return const(True)
        return const(False)

    def builtin_tuple(self, obj, line):
        """``tuple(t)`` of a tuple: the tuple (numba types ``tuple()`` of tuples only)."""
        if isinstance(obj, tuple) and not hasattr(obj, "vname"):
            return tuple(obj)
        from .values import kind_name
        raise self._err(CompileError, f"No implementation of function Function(<class 'tuple'>) found for signature: "
                                      f"tuple({kind_name(obj)}) (numba-cuda builds a tuple only from a tuple)", line)

    def method(self, obj, name, args, line):
        """``obj.name(*args)`` on a runtime object (the grid group's ``sync``)."""
        if type(obj) is GridGroup:
            if name == "sync":
                if args:
                    raise self._err(CompileError, "grid.sync() takes no arguments", line)
                return self.grid_sync(line)
            raise self._err(UnsupportedConstruct, f"grid group method .{name}() (numba's grid group has only "
                            ".sync())", line)
        if name == "view" and len(args) == 1 and (isinstance(obj, ARRAYS) or type(obj) is V):
            dt = _as_dtype(args[0])
            if dt is None:
                raise self._err(CompileError, f".view() takes a dtype (np.int32, numba.int32), not "
                                f"{type(args[0]).__name__}", line)
            if isinstance(obj, ARRAYS):
                return self.view_dtype(obj, dt, line)
            src = np.asarray(obj.v).dtype
            if src.kind not in "iuf" or dt.kind not in "iuf" or src.itemsize != dt.itemsize:
                raise self._err(CompileError, f"Changing the dtype of a 0d array is only supported if the itemsize "
                                f"is unchanged ({src}.view({dt}))", line)
            return V(obj.v.view(dt), obj.deps, obj.const)      # a bit cast: no instruction
        if isinstance(obj, ARRAYS) and name == "reshape" and args:
            return self.view_reshape(obj, args, line)
        if isinstance(obj, ARRAYS) and name == "sum" and not args:
            return self.array_sum(obj, line)
        if type(obj) is V and name == "bit_count" and not args and np.asarray(obj.v).dtype.kind in "iu":
            return self.intrinsic("popc", [obj], line)      # int.bit_count(): numba-cuda lowers it as popc
        if type(obj) is V and name == "conjugate" and not args:
            if np.asarray(obj.v).dtype.kind == "c":
                return self.conjugate(obj, line)
            return obj                           # of a real number: itself
        what = "an array" if isinstance(obj, ARRAYS) else \
            ("a number" if type(obj) is V else type(obj).__name__)
        raise self._err(UnsupportedConstruct, f"calling method .{name}() of {what}", line)

    # ---- ufuncs with an output array ------------------------------------------------------------------------------
    def ufunc_out(self, fn, args, out, line) -> None:
        """``np.<ufunc>(x, ..., out)`` in a kernel: this thread computes every element of ``out`` in a loop."""
        if not isinstance(out, ARRAYS):
            raise self._err(CompileError, f"the output of np.{fn}(..., out) must be an array", line)
        shape = out.shape
        for a in args:
            if isinstance(a, ARRAYS) and a.shape is not None and shape is not None and tuple(a.shape) != tuple(shape):
                raise self._err(UnsupportedConstruct, f"np.{fn} on arrays of shapes {tuple(a.shape)} and "
                                f"{tuple(shape)} (broadcasting between arrays; pass arrays of one shape or "
                                "write the loop)", line)
        self._ufunc_dims(fn, args, out, (), line)

    def _ufunc_dims(self, fn, args, out, prefix, line):
        k = len(prefix)
        if k == out.ndim:
            vals = [self.getitem(a, prefix, line) if isinstance(a, ARRAYS) else a for a in args]
            if fn == "abs":
                r = self.builtin_abs(vals[0], line)
            elif fn in ("min", "max"):
                r = self.minmax(fn, tuple(vals), line)
            elif fn in _BINOP_UFUNCS:
                r = self.binop(fn, vals[0], vals[1], line)
            else:
                r = self.math(fn, tuple(vals), line)
            self.setitem(out, prefix, r, line)
            return
        n = self.getitem(self.attr(out, "shape", line), const(k), line)
        st = self.range_begin(const(0), n, None, line, True, True)
        while self.range_test(st, line):
            self._ufunc_dims(fn, args, out, prefix + (st.counter,), line)
            self.range_next(st, line)
        self.loop_end(st, line)


def _as_dtype(x):
    """The numpy dtype a kernel names (``np.int32``, ``numba.int32``, ``np.dtype('i4')``), or None."""
    if isinstance(x, np.dtype):
        return x
    d = getattr(x, "dtype", None)
    if isinstance(d, np.dtype) and not isinstance(x, (V, np.ndarray)):
        return d
    if isinstance(x, type) and issubclass(x, np.generic):
        return np.dtype(x)
    return None


__all__ = ["DeviceLibrary", "GridGroup", "GRID"]
