"""Small fixes that let the real front ends' CPU modes run the kernels in ``kernels/`` unchanged.

The contract tests and ``collect --cpu-check`` run every kernel file under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) and Triton's interpreter (``TRITON_INTERPRET=1``).  Two bugs in those CPU modes
(not in the compilers, which accept the same source on a GPU) would otherwise stop valid kernels:

* numba-cuda's simulator: ``cuda.shared.array(0, np.float32)`` (dynamic shared memory with a numpy scalar
  type as dtype, the spelling the kernels use) fails with ``TypeError: unsupported operand type(s) for //``
  because the simulator reads ``dtype.itemsize`` off the class.  Seen with numba-cuda 0.30.
* Triton's interpreter with numpy >= 2.4: a loop bound computed from a runtime integer argument
  (``for k in range(0, tl.cdiv(K, BLOCK_K))``) fails with ``TypeError: only 0-dimensional arrays can be
  converted to Python scalars``, because the interpreter keeps scalars as 1-element arrays and calls ``int()``
  on them.  Seen with Triton 3.6.0 and numpy 2.4.

Each patch first checks that the bug is present, patches only then, and touches one function.  Call them
after setting the environment variable and before launching kernels; they are no-ops on a GPU.

One gap of Triton's interpreter is filled the same way (``patch_triton_interpreter_libdevice``): it has no
libdevice.  ``triton.language.extra.libdevice``'s functions are stubs that the compiler dispatches to CUDA's
libdevice (``__nv_asinf`` ...); under ``TRITON_INTERPRET=1`` a call returns None (and the CUDA module's
``extern_elementwise`` raises NotImplementedError).  The patch gives the stubs numpy bodies, so a kernel that calls
``libdevice.asin`` runs under the interpreter (its libdevice values are numpy's, within the functions' few ulp).
"""
from __future__ import annotations

import sys
import traceback

import numpy as np


def patch_numba_cudasim() -> bool:
    """Make the simulator's dynamic shared arrays accept numpy scalar types.  Returns True if patched."""
    try:
        from numba.cuda.simulator import kernelapi
    except ImportError:          # not the simulator (real GPU) or no numba: nothing to fix
        return False
    try:
        kernelapi.FakeCUDAShared(4).array(0, np.float32)
        return False             # already works
    except TypeError:
        pass
    from numba.core import types
    from numba.np import numpy_support

    def array(self, shape, dtype, alignment=None):
        # the simulator's own method with the dtype normalised; the static branch keys allocations by the
        # caller's file and line, so this function replaces the method (a wrapper would add a frame)
        if alignment is not None:
            raise RuntimeError("Array alignment is not supported in cudasim")
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        dtype = np.dtype(dtype)
        if shape == 0:
            count = self._dynshared_size // dtype.itemsize
            return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
        stack = traceback.extract_stack(sys._getframe())
        caller = stack[-2][0:2]
        res = self._allocations.get(caller)
        if res is None:
            res = np.empty(shape, dtype)
            self._allocations[caller] = res
        return res

    kernelapi.FakeCUDAShared.array = array
    return True


def patch_triton_interpreter() -> bool:
    """Let the interpreter turn 1-element scalar tensors into Python ints on numpy >= 2.4.  True if patched."""
    try:
        int(np.array([1]))
        return False             # this numpy still converts 1-element arrays
    except TypeError:
        pass
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_gpusim_patched", False):
        return False

    def _patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    _patch_lang_tensor._gpusim_patched = True
    interpreter._patch_lang_tensor = _patch_lang_tensor
    return True


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


#: libdevice function -> numpy body (float arguments); the functions the kernels use and their common neighbours
LIBDEVICE_NUMPY = {
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "atan2": np.arctan2,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "pow": np.power,
    "hypot": np.hypot, "fmod": np.fmod, "fmax": np.fmax, "fmin": np.fmin, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "round": _round_half_away, "rint": np.rint, "nearbyint": np.rint, "fabs": np.abs,
    "copysign": np.copysign,
}


def patch_triton_interpreter_libdevice() -> list[str]:
    """Give ``triton.language.extra.libdevice`` (and its CUDA module) numpy bodies under Triton's interpreter.
    Only under ``TRITON_INTERPRET=1`` (on a GPU the compiler calls CUDA's libdevice).  Returns the names patched."""
    import os
    if os.environ.get("TRITON_INTERPRET") != "1":
        return []
    try:
        import triton.language as tl
        from triton.language.extra import libdevice
        from triton.runtime import interpreter
    except ImportError:
        return []
    modules = [libdevice]
    try:
        from triton.language.extra.cuda import libdevice as cuda_libdevice
        modules.append(cuda_libdevice)
    except ImportError:
        pass

    def numpy_body(name, fn):
        def call(*args, **kwargs):
            tensors = [a for a in args if isinstance(a, tl.tensor)]
            if not tensors:
                raise TypeError(f"libdevice.{name}: expected a tensor argument under the interpreter")
            like = max(tensors, key=lambda t: np.asarray(t.handle.data).size)
            data = [np.asarray(a.handle.data) if isinstance(a, tl.tensor) else a for a in args]
            with np.errstate(all="ignore"):
                out = np.asarray(fn(*data)).astype(np.asarray(like.handle.data).dtype)
            return tl.tensor(interpreter.TensorHandle(out, like.handle.dtype.scalar), like.type)
        call.__name__ = name
        call._gpusim_patched = True
        return call

    patched = []
    for mod in modules:
        for name, fn in LIBDEVICE_NUMPY.items():
            cur = getattr(mod, name, None)
            if cur is None or getattr(cur, "_gpusim_patched", False):
                continue
            setattr(mod, name, numpy_body(name, fn))
            patched.append(f"{mod.__name__}.{name}")
    return patched
