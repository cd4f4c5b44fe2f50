"""numba.cuda stand-in: a kernel file written for numba-cuda (``from numba import cuda``) runs on gpusim's SIMT front
end on a host without a CUDA driver, the way ``NUMBA_ENABLE_CUDASIM=1`` hands it numba's own simulator."""
from __future__ import annotations

import contextlib
import ctypes.util
import importlib.util
import sys

_NUMBA_CUDA_MODULES = ("numba.cuda", "numba.cuda.random", "numba.cuda.types", "numba.cuda.cg", "numba.cuda.vectorizers",
                       "numba.cuda.libdevice", "numba.cuda.cudadrv", "numba.cuda.cudadrv.devicearray")


@contextlib.contextmanager
def _numba_shim():
    """Without numba installed: a ``numba`` module holding ``cuda`` (gpusim.cuda), ``types`` and numba's scalar
    type names, so ``from numba import cuda, float32`` in a file written for numba-cuda imports; its CPU compilers
    (``njit`` ...) are not there (an ImportError / AttributeError naming them)."""
    import types as _t
    from .. import cuda as gcuda
    shim = _t.ModuleType("numba")
    shim.__doc__ = "gpusim's stand-in for numba (numba is not installed): numba.cuda is gpusim.cuda"
    shim.cuda, shim.types = gcuda, gcuda.types
    for name in dir(gcuda.types):
        v = getattr(gcuda.types, name)
        if not name.startswith("_") and not isinstance(v, _t.ModuleType) and not hasattr(shim, name):
            setattr(shim, name, v)
    from . import vectorizers
    shim.vectorize, shim.guvectorize = vectorizers.vectorize, vectorizers.guvectorize
    gcuda.vectorize, gcuda.guvectorize = vectorizers.vectorize, vectorizers.guvectorize   # numba.cuda.vectorize
    mods = {"numba": shim, "numba.cuda": gcuda, "numba.cuda.random": gcuda.random, "numba.cuda.types": gcuda.types,
            "numba.cuda.cg": gcuda.cg, "numba.types": gcuda.types, "numba.cuda.vectorizers": vectorizers,
            "numba.cuda.libdevice": gcuda.libdevice}
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


@contextlib.contextmanager
def numba_cuda_is_gpusim():
    """Without a CUDA driver, numba-cuda's host API (``cuda.to_device``, ``create_xoroshiro128p_states``, eager
    signatures) cannot run, so a kernel file's ``from numba import cuda`` gets ``gpusim.cuda`` while it is imported,
    as ``NUMBA_ENABLE_CUDASIM=1`` hands it numba's own simulator.  Without numba, a stand-in ``numba`` module does
    the same (``_numba_shim``); with a driver, nothing changes."""
    if ctypes.util.find_library("cuda") is not None:
        yield
        return
    if importlib.util.find_spec("numba") is None:
        with _numba_shim():
            yield
        return
    import numba
    from .. import cuda as gcuda
    from ..compilers._displaced import MISSING, Displaced
    guard = _NoOtherNumbaCuda()
    # the compiler puts the real modules back while it compiles a kernel launched inside this block (a script)
    shelf = Displaced("numba.cuda", guard, [[numba, "cuda", numba.__dict__.get("cuda", MISSING)]])
    from . import vectorizers
    from . import cudadrv
    gcuda.vectorize, gcuda.guvectorize = vectorizers.vectorize, vectorizers.guvectorize   # numba.cuda.vectorize
    drv = {"numba.cuda.cudadrv": cudadrv, **cudadrv.MODULES}
    saved = {k: sys.modules.get(k) for k in drv}
    sys.modules.update({"numba.cuda": gcuda, "numba.cuda.random": gcuda.random, "numba.cuda.types": gcuda.types,
                        "numba.cuda.cg": gcuda.cg, "numba.cuda.vectorizers": vectorizers,
                        "numba.cuda.libdevice": gcuda.libdevice, **drv})
    numba.cuda = gcuda
    sys.meta_path.insert(0, guard)
    try:
        with shelf:
            yield
    finally:
        sys.meta_path.remove(guard)
        shelf.restore()
        for k, v in saved.items():         # numba's own modules (or none) back
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


class _NoOtherNumbaCuda:
    """While ``gpusim.cuda`` stands in for ``numba.cuda``, numba-cuda's other submodules are not importable (an
    ImportError, which a kernel file can catch, instead of numba-cuda's import redirector looping)."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("numba.cuda.") and name not in _NUMBA_CUDA_MODULES:
            e = ImportError(f"{name}: not available without a CUDA driver (gpusim.cuda stands in for numba.cuda)")
            e.gpusim_refusal = True          # the user's import, refused on purpose: reported at its line
            raise e
        return None
