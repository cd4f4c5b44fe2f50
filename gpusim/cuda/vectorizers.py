"""CUDA ufuncs: ``@vectorize([...], target='cuda')`` and ``@guvectorize([...], sig, target='cuda')``, simulated as
numba-cuda runs them (``numba.cuda.vectorizers``): the scalar (or core) function becomes a device function, a
kernel applies it with one thread per element (per loop index of a gufunc), launched with ``forall`` over the
broadcast inputs; each call is an ordinary kernel launch, recorded and timed inside ``gpusim.session()``.

    @vectorize(['float32(float32, float32)'], target='cuda')
    def add(a, b):
        return a + b
    out = add(x, y)                      # numpy in -> numpy out; device arrays in -> a device array out

The loop picked is the first signature every input casts to safely (numpy's ufunc rule), else the first of the
inputs' kind.  Up to 6 inputs (and outputs of a gufunc).  The ``stream`` argument is accepted.
"""
from __future__ import annotations

import numpy as np

from ..errors import LaunchError
from .types import Array, NoneType, parse_signature

_MAX_ARGS = 6


def _package():
    from .. import cuda
    return cuda


def _elementwise_kernel(dev, nin: int):
    """A kernel of ``nin`` flat inputs and one flat output: ``out[i] = dev(a0[i], ...)``."""
    cuda = _package()
    if nin == 1:
        def _ufunc(a0, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = dev(a0[i])
    elif nin == 2:
        def _ufunc(a0, a1, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = dev(a0[i], a1[i])
    elif nin == 3:
        def _ufunc(a0, a1, a2, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = dev(a0[i], a1[i], a2[i])
    elif nin == 4:
        def _ufunc(a0, a1, a2, a3, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = dev(a0[i], a1[i], a2[i], a3[i])
    elif nin == 5:
        def _ufunc(a0, a1, a2, a3, a4, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = dev(a0[i], a1[i], a2[i], a3[i], a4[i])
    else:
        def _ufunc(a0, a1, a2, a3, a4, a5, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = dev(a0[i], a1[i], a2[i], a3[i], a4[i], a5[i])
    return _ufunc


def _gufunc_kernel(dev, nargs: int):
    """A kernel over the loop dimension of ``nargs`` arrays of shape (loop, core...): ``dev(a0[i], ...)``."""
    cuda = _package()
    if nargs == 2:
        def _gufunc(a0, a1):
            i = cuda.grid(1)
            if i < a0.shape[0]:
                dev(a0[i], a1[i])
    elif nargs == 3:
        def _gufunc(a0, a1, a2):
            i = cuda.grid(1)
            if i < a0.shape[0]:
                dev(a0[i], a1[i], a2[i])
    elif nargs == 4:
        def _gufunc(a0, a1, a2, a3):
            i = cuda.grid(1)
            if i < a0.shape[0]:
                dev(a0[i], a1[i], a2[i], a3[i])
    elif nargs == 5:
        def _gufunc(a0, a1, a2, a3, a4):
            i = cuda.grid(1)
            if i < a0.shape[0]:
                dev(a0[i], a1[i], a2[i], a3[i], a4[i])
    else:
        def _gufunc(a0, a1, a2, a3, a4, a5):
            i = cuda.grid(1)
            if i < a0.shape[0]:
                dev(a0[i], a1[i], a2[i], a3[i], a4[i], a5[i])
    return _gufunc


def _dtype_of(t) -> np.dtype:
    if isinstance(t, Array):
        t = t.dtype
    if (type(t).__module__ or "").startswith("numba"):   # numba's own types (from numba import float64; float64[:])
        from numba.np.numpy_support import as_dtype
        return np.dtype(as_dtype(getattr(t, "dtype", t)))
    return np.dtype(t.dtype)


def _inferred_return(func, ins) -> np.dtype:
    """The return type of a ufunc signature given without one (``'(int16, int16)'``): numba infers it by typing
    the function for the arguments (its returns unified); here numba's own typing does it (its CPU compiler, the
    same typing rules), where numba is installed and the function compiles for the CPU."""
    try:
        import numba
        from numba.np.numpy_support import as_dtype, from_dtype
        disp = numba.njit(tuple(from_dtype(d) for d in ins))(func)
        return np.dtype(as_dtype(disp.nopython_signatures[0].return_type))
    except Exception as e:                       # noqa: BLE001 - numba missing, or the function is CUDA-only
        raise TypeError(f"@vectorize(target='cuda') on {func.__name__!r}: the signature "
                        f"({', '.join(map(str, ins))}) has no return type and gpusim could not infer it "
                        f"({type(e).__name__}: {str(e)[:200]}); write it as 'float64({', '.join(map(str, ins))})'") \
            from None


#: a Python scalar argument goes with any loop of these kinds (numpy's "weak" scalars, NEP 50)
_WEAK = {bool: "b", int: "biuf", float: "fc", complex: "c"}


def _fits(d, t, casting: str) -> bool:
    if isinstance(d, str):                               # a Python scalar: the kinds it goes with
        return np.dtype(t).kind in d
    return np.can_cast(d, t, casting)


def _pick(loops: list, dtypes: list, name: str):
    """The loop (arg dtypes, out dtypes) the inputs' dtypes select, as a numpy ufunc's type resolution would
    (``dtypes``: a numpy dtype, or the kinds a Python scalar goes with)."""
    for casting in ("safe", "same_kind"):
        for ins, outs in loops:
            if all(_fits(d, t, casting) for d, t in zip(dtypes, ins)):
                return ins, outs
    have = ", ".join(str(d) for d in dtypes)
    raise TypeError(f"ufunc {name!r} has no loop for inputs ({have}); its loops: "
                    + "; ".join(f"({', '.join(map(str, i))}) -> {', '.join(map(str, o))}" for i, o in loops))


def _kinds(args, arrs) -> list:
    return [_WEAK.get(type(a), h.dtype) for a, h in zip(args, arrs)]


def _host(a):
    """(numpy view of an argument, whether it was a device array)."""
    cuda = _package()
    if isinstance(a, cuda.DeviceNDArray):
        return a.copy_to_host(), True
    return np.asarray(a), False


class _UFunc:
    """The callable ``@vectorize(..., target='cuda')`` returns."""

    #: numba-cuda cannot type its CUDA ufunc objects inside a kernel: calling one there is refused as it refuses it
    _gpusim_untyped = "numba.cuda.vectorizers.CUDAUFuncDispatcher"

    def __init__(self, func, sigs):
        cuda = _package()
        self.py_func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self._loops = []
        for s in sigs:
            sig = parse_signature(s)
            ins = [_dtype_of(t) for t in sig.args]
            ret = sig.return_type              # none: '(int16, int16)', the arguments alone
            none = ret is None or isinstance(ret, NoneType) or str(ret) == "none"
            self._loops.append((ins, [_inferred_return(func, ins) if none else _dtype_of(ret)]))
        if not self._loops:
            raise TypeError(f"@vectorize(target='cuda') on {func.__name__!r} needs its signatures "
                            "(['float32(float32, float32)', ...])")
        self.nin = len(self._loops[0][0])
        if not 1 <= self.nin <= _MAX_ARGS:
            raise TypeError(f"ufunc {func.__name__!r}: {self.nin} inputs; gpusim's CUDA ufuncs take 1 to {_MAX_ARGS}")
        dev = cuda.jit(device=True)(func)
        kern = _elementwise_kernel(dev, self.nin)
        kern.__name__ = kern.__qualname__ = f"__vectorized_{func.__name__}"
        self._kernel = cuda.jit(kern)

    def __call__(self, *args, out=None, stream=0):
        cuda = _package()
        if len(args) != self.nin:
            raise TypeError(f"ufunc {self.__name__!r} takes {self.nin} arguments, got {len(args)}")
        hosts = [_host(a) for a in args]
        on_device = any(d for _, d in hosts) or isinstance(out, cuda.DeviceNDArray)
        arrs = [h for h, _ in hosts]
        ins, outs = _pick(self._loops, _kinds(args, arrs), self.__name__)
        shape = np.broadcast_shapes(*[a.shape for a in arrs])
        flat = [cuda.to_device(np.ascontiguousarray(np.broadcast_to(a, shape).astype(t, copy=False)).reshape(-1))
                for a, t in zip(arrs, ins)]
        n = int(np.prod(shape, dtype=np.int64))
        res = cuda.device_array(max(n, 1), dtype=outs[0])
        if n:
            self._kernel.forall(n)(*flat, res)
        value = res.copy_to_host()[:n].reshape(shape)
        if out is not None:
            if isinstance(out, cuda.DeviceNDArray):
                out.copy_to_device(value.astype(out.dtype, copy=False))
            else:
                out[...] = value
            return out
        if not shape:
            return value[()]
        return cuda.to_device(value) if on_device else value

    def __repr__(self):
        return f"<gpusim CUDA ufunc {self.__name__} ({len(self._loops)} loops)>"


def _parse_layout(sig: str):
    """'(n),()->(n)' -> ([('n',), ()], [('n',)])."""
    try:
        left, right = sig.replace(" ", "").split("->")
        ins = [tuple(x for x in g.split(",") if x) for g in left[1:-1].split("),(")]
        outs = [tuple(x for x in g.split(",") if x) for g in right[1:-1].split("),(")]
        return ins, outs
    except ValueError:
        raise TypeError(f"gufunc layout {sig!r}: expected '(n),(n)->(n)' and the like") from None


class _GUFunc:
    """The callable ``@guvectorize(..., layout, target='cuda')`` returns."""

    _gpusim_untyped = "numba.cuda.vectorizers.CUDAGeneralizedUFunc"

    def __init__(self, func, sigs, layout: str):
        cuda = _package()
        self.py_func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self._ins, self._outs = _parse_layout(layout)
        nargs = len(self._ins) + len(self._outs)
        self._loops = []
        for s in sigs:
            sig = parse_signature(s)
            if len(sig.args) != nargs:
                raise TypeError(f"gufunc {func.__name__!r}: signature {s!r} has {len(sig.args)} arguments, the "
                                f"layout {layout!r} {nargs}")
            dts = [_dtype_of(t) for t in sig.args]
            self._loops.append((dts[:len(self._ins)], dts[len(self._ins):]))
            # an input of core shape () declared as an array (old style: "(n),()->(n)" with int32[:]): numba
            # passes it as a 1-element array
            self._scalar_as_array = [(isinstance(t, Array) or getattr(t, "ndim", 0) >= 1 and not isinstance(t, np.dtype))
                                     and not core for t, core in zip(sig.args, self._ins)]
        if not self._loops:
            raise TypeError(f"@guvectorize(target='cuda') on {func.__name__!r} needs its signatures")
        if not 2 <= nargs <= _MAX_ARGS:
            raise TypeError(f"gufunc {func.__name__!r}: {nargs} arguments; gpusim's CUDA gufuncs take 2 to {_MAX_ARGS}")
        dev = cuda.jit(device=True)(func)
        kern = _gufunc_kernel(dev, nargs)
        kern.__name__ = kern.__qualname__ = f"__gufunc_{func.__name__}"
        self._kernel = cuda.jit(kern)

    def __call__(self, *args, out=None, stream=0):
        cuda = _package()
        nin, nout = len(self._ins), len(self._outs)
        outs_given = list(args[nin:]) if len(args) > nin else ([out] if out is not None else [])
        args = args[:nin]
        if len(args) != nin:
            raise TypeError(f"gufunc {self.__name__!r} takes {nin} inputs, got {len(args)}")
        hosts = [_host(a) for a in args]
        arrs = [h for h, _ in hosts]
        on_device = any(d for _, d in hosts)
        ins, outs = _pick(self._loops, _kinds(args, arrs), self.__name__)
        sizes: dict = {}
        loop_shapes = []
        for a, core in zip(arrs, self._ins):
            nd = len(core)
            if a.ndim < nd:
                raise LaunchError(f"gufunc {self.__name__!r}: an input of shape {a.shape} has fewer dimensions than "
                                  f"its core {core}")
            for name, d in zip(core, a.shape[a.ndim - nd:] if nd else ()):
                if sizes.setdefault(name, d) != d:
                    raise LaunchError(f"gufunc {self.__name__!r}: core dimension {name!r} is {sizes[name]} and {d}")
            loop_shapes.append(a.shape[:a.ndim - nd])
        loop = np.broadcast_shapes(*loop_shapes)
        n = int(np.prod(loop, dtype=np.int64))
        dev_args = []
        for a, core, t, as_arr in zip(arrs, self._ins, ins, self._scalar_as_array):
            full = np.broadcast_to(a, loop + a.shape[a.ndim - len(core):]).astype(t, copy=False)
            if as_arr:
                full = full.reshape(full.shape + (1,))
            dev_args.append(cuda.to_device(np.ascontiguousarray(full).reshape((max(n, 1),) + full.shape[len(loop):])
                                           if n else np.zeros((1,) + full.shape[len(loop):], t)))
        res = []
        for core, t in zip(self._outs, outs):
            try:
                cshape = tuple(sizes[c] for c in core)
            except KeyError as e:
                raise LaunchError(f"gufunc {self.__name__!r}: output core dimension {e.args[0]!r} is not an "
                                  "input's") from None
            cshape = cshape or (1,)                      # numba passes a scalar output as a 1-element array
            res.append(cuda.device_array((max(n, 1),) + cshape, dtype=t))
        if n:
            self._kernel.forall(n)(*dev_args, *res)
        values = []
        for r, core in zip(res, self._outs):
            v = r.copy_to_host()[:n]
            v = v.reshape(loop + (v.shape[1:] if core else ()))
            values.append(v)
        for o, v in zip(outs_given, values):
            if isinstance(o, cuda.DeviceNDArray):
                o.copy_to_device(v.astype(o.dtype, copy=False))
            else:
                o[...] = v
        if outs_given:
            return outs_given[0] if nout == 1 else tuple(outs_given)
        wrap = (lambda v: cuda.to_device(v)) if on_device else (lambda v: v)
        return wrap(values[0]) if nout == 1 else tuple(wrap(v) for v in values)

    def __repr__(self):
        return f"<gpusim CUDA gufunc {self.__name__}>"


class CUDAVectorize:
    """numba's ``vectorize`` target for 'cuda' (``numba.cuda.vectorizers.CUDAVectorize``)."""

    def __init__(self, func, identity=None, cache=False, targetoptions=None):
        self.func, self.sigs = func, []

    def add(self, sig=None):
        self.sigs.append(sig)

    def disable_compile(self):
        pass

    def build_ufunc(self):
        return _UFunc(self.func, self.sigs)


class CUDAGUFuncVectorize:
    """numba's ``guvectorize`` target for 'cuda' (``numba.cuda.vectorizers.CUDAGUFuncVectorize``)."""

    def __init__(self, func, sig, identity=None, cache=False, targetoptions=None, writable_args=()):
        self.func, self.layout, self.sigs = func, sig, []

    def add(self, sig=None):
        self.sigs.append(sig)

    def disable_compile(self):
        pass

    def build_ufunc(self):
        return _GUFunc(self.func, self.sigs, self.layout)


def vectorize(ftylist=(), target="cuda", **kws):
    """``numba.vectorize`` where numba is not installed: the 'cuda' target only."""
    if target != "cuda":
        raise TypeError(f"vectorize(target={target!r}): numba is not installed; gpusim provides target='cuda'")
    sigs = [ftylist] if isinstance(ftylist, str) else list(ftylist)
    return lambda func: _UFunc(func, sigs)


def guvectorize(ftylist, signature, target="cuda", **kws):
    """``numba.guvectorize`` where numba is not installed: the 'cuda' target only."""
    if target != "cuda":
        raise TypeError(f"guvectorize(target={target!r}): numba is not installed; gpusim provides target='cuda'")
    sigs = [ftylist] if isinstance(ftylist, str) else list(ftylist)
    return lambda func: _GUFunc(func, sigs, signature)
