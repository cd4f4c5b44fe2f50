"""The semantic reference of the SIMT front end: run a kernel one thread at a time, as plain Python.

Each thread of each block (blocks in linear order, threads in linear order, x fastest) calls the kernel's
own Python function with ``cuda`` bound to a scalar stand-in (``threadIdx`` etc. are plain ints), so every
``if``, loop, ``break`` and ``return`` means exactly what Python says.  The warp-vectorized executor must
produce the same memory contents for kernels whose threads do not communicate (no barriers, no shared
memory); property tests hold the two against each other.  Slow by design (microseconds per thread-statement).
"""
from __future__ import annotations

import types

import numpy as np

from ..errors import UnsupportedConstruct
from .compiler import unwrap
from .memory import as_device_storage
from .resolve import classify


class _Dim3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x=0, y=0, z=0):
        self.x, self.y, self.z = x, y, z


class _Atomic:
    """Sequential atomics: the thread that calls runs alone, so read-modify-write is plain Python."""

    @staticmethod
    def _rmw(ary, idx, f):
        old = ary[idx]
        ary[idx] = f(old)
        return old

    def add(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: o + val)

    def sub(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: o - val)

    def max(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: val if val > o else o)

    def min(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: val if val < o else o)

    def exch(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: val)

    def cas(self, ary, idx, old, val):
        return self._rmw(ary, idx, lambda o: val if o == old else o)

    def compare_and_swap(self, ary, old, val):
        return self.cas(ary, 0, old, val)

    def and_(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: o & val)

    def or_(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: o | val)

    def xor(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: o ^ val)

    def inc(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: 0 if o >= val else o + 1)

    def dec(self, ary, idx, val):
        return self._rmw(ary, idx, lambda o: val if (o == 0 or o > val) else o - 1)


class _Local:
    @staticmethod
    def array(shape, dtype):
        return np.zeros(shape, dtype=_dtype(dtype))


class _Const:
    @staticmethod
    def array_like(ary):
        return ary


class _Shared:
    @staticmethod
    def array(shape, dtype):
        raise UnsupportedConstruct("the one-thread-at-a-time reference cannot run kernels with shared memory")


def _dtype(dt):
    c = classify(dt)
    if c[0] == "dtype":
        return c[1]
    return np.dtype(dt)


class RefCuda:
    """What ``cuda`` means inside a kernel run by the reference: the coordinates of the current thread."""

    warpsize = 32

    def __init__(self, grid, block):
        self.threadIdx = _Dim3()
        self.blockIdx = _Dim3()
        self.blockDim = _Dim3(*block)
        self.gridDim = _Dim3(*grid)
        self.atomic = _Atomic()
        self.local = _Local()
        self.const = _Const()
        self.shared = _Shared()
        self.laneid = 0

    def grid(self, n):
        t, b, d = self.threadIdx, self.blockIdx, self.blockDim
        vals = (b.x * d.x + t.x, b.y * d.y + t.y, b.z * d.z + t.z)
        return vals[0] if n == 1 else vals[:n]

    def gridsize(self, n):
        d, g = self.blockDim, self.gridDim
        vals = (d.x * g.x, d.y * g.y, d.z * g.z)
        return vals[0] if n == 1 else vals[:n]

    def syncthreads(self):
        raise UnsupportedConstruct("the one-thread-at-a-time reference cannot run kernels with barriers")

    def syncwarp(self, mask=0xFFFFFFFF):
        pass

    def threadfence(self):
        pass

    threadfence_block = threadfence_system = threadfence

    def fma(self, a, b, c):
        return a * b + c


def _rebind(py_func, ref, cache):
    """``py_func`` with its globals' ``cuda`` replaced by ``ref`` and device functions rebound likewise."""
    f = cache.get(py_func)
    if f is not None:
        return f
    g = dict(py_func.__globals__)
    f = types.FunctionType(py_func.__code__, g, py_func.__name__, py_func.__defaults__, py_func.__closure__)
    cache[py_func] = f
    for name in py_func.__code__.co_names:
        if name not in g:
            continue
        c = classify(g[name])
        if c == ("cuda", ()):
            g[name] = ref
        elif c[0] in ("devfn", "pyfunc") and isinstance(c[1], types.FunctionType):
            g[name] = _rebind(c[1], ref, cache)
    return f


def run_reference(kernel, grid, block, args, shared_bytes=0):
    """Execute ``kernel[grid, block](*args)`` thread by thread; arrays in ``args`` are written in place."""
    from .launch import _dim3
    g3, b3 = _dim3(grid, "grid"), _dim3(block, "block")
    ref = RefCuda(g3, b3)
    fn = _rebind(unwrap(kernel), ref, {})
    host = []
    for a in args:
        st = as_device_storage(a) if not isinstance(a, (int, float, bool, np.generic, tuple)) else None
        host.append(st if st is not None else a)
    bx, by, bz = b3
    gx, gy, gz = g3
    t, b = ref.threadIdx, ref.blockIdx
    for cz in range(gz):
        for cy in range(gy):
            for cx in range(gx):
                b.x, b.y, b.z = cx, cy, cz
                lin = 0
                for tz in range(bz):
                    for ty in range(by):
                        for tx in range(bx):
                            t.x, t.y, t.z = tx, ty, tz
                            ref.laneid = lin % 32
                            lin += 1
                            fn(*host)
