"""The real compiler behind a SIMT launch (``gpusim.compilers``: numba-cuda + ptxas): what the launch hands it and
what comes back into the trace.

``request`` gives numba's compiler the argument types its dispatcher would infer at this launch (the kernel's
explicit signature when it has exactly one, else ``types.typeof`` of each argument: arrays by dtype, ndim and
layout, Python ints int64 and floats float64) and the kernel's ``@cuda.jit`` options that change code
(fastmath, opt, debug, max_registers).  ``outcome`` asks the compiler module (mode ``auto`` / ``builtin`` /
``real``)."""
from __future__ import annotations

import numpy as np

from .. import compilers
from . import types as nbtypes


def varargs_packed(ck, args) -> list:
    """The launch's arguments with those past the named parameters packed into the tuple of ``*rest``."""
    if not ck.vararg:
        return list(args)
    n = len(ck.params) - 1
    return list(args[:n]) + [tuple(args[n:])] if len(args) >= n else list(args)


_CODE_OPTIONS = ("fastmath", "opt", "debug")


def describe(t):
    """A gpusim (numba-named) type as the compiler module's neutral description; None when it has none."""
    if isinstance(t, nbtypes.Array):
        el = t.dtype
        dt = el.dtype if isinstance(el, (nbtypes.Scalar, nbtypes.Record)) else None
        if dt is None:
            return None
        return ["array", np.dtype(dt), t.ndim, t.layout] + ([True] if t.readonly else [])
    if isinstance(t, (nbtypes.Scalar, nbtypes.Record)):
        return ["scalar", np.dtype(t.dtype)]
    if isinstance(t, nbtypes.CPointer):
        el = t.dtype
        return ["cpointer", np.dtype(el.dtype)] if isinstance(el, nbtypes.Scalar) else None
    if isinstance(t, nbtypes.Tuple):
        items = [describe(x) for x in t.types]
        if any(i is None for i in items):
            return None
        return ["tuple", items] + ([t.pyclass] if getattr(t, "pyclass", None) is not None else [])
    if (type(t).__module__ or "").startswith("numba"):          # a real numba type from a numba dispatcher
        return ["numba", t]
    return None


def request(kernel, ck, args, cfg, max_registers=None) -> "compilers.NumbaRequest | None":
    args = varargs_packed(ck, args)
    sigs = getattr(kernel, "signatures", None)
    types_ = None
    if sigs and len(sigs) == 1 and hasattr(sigs[0], "args") and len(sigs[0].args) == len(args):
        types_ = list(sigs[0].args)
    if types_ is None:
        try:
            types_ = [nbtypes.typeof(a) for a in args]
        except TypeError:
            return None
    argtypes = [describe(t) for t in types_]
    if any(a is None for a in argtypes):
        return None
    raw = getattr(kernel, "options", None)
    if not isinstance(raw, dict):
        raw = getattr(kernel, "targetoptions", None) or {}
    opts = {k: raw[k] for k in _CODE_OPTIONS if raw.get(k) is not None}
    mr = max_registers if max_registers is not None else raw.get("max_registers")
    if mr:
        opts["max_registers"] = int(mr)
    return compilers.NumbaRequest(py_func=ck.py_func, argtypes=argtypes, options=opts,
                                  capability=tuple(cfg.chip.compute_capability), name=ck.name, file=ck.file,
                                  line=compilers.def_line(ck.py_func))


def outcome(kernel, ck, args, cfg, max_registers=None) -> compilers.Outcome:
    m = compilers.mode()
    if m == "builtin":
        return compilers.Outcome(None, compilers.BUILTIN_LABEL, mode=m)
    req = request(kernel, ck, args, cfg, max_registers)
    if req is None:
        why = "an argument's type has no numba counterpart gpusim can describe"
        if m == "real":
            raise compilers.CompilerUnavailable(f"kernel {ck.name!r}: {why}")
        return compilers.Outcome(None, compilers.BUILTIN_LABEL, note=why, mode=m)
    return compilers.compile_for(req, m)


def notes(tr, cc) -> None:
    if cc is None:
        return
    if cc.note:
        tr.note(f"compiler: the real compiler was not used ({cc.note}); registers are gpusim's built-in estimate")
    res = cc.result
    if res is not None and (res.spill_store_bytes or res.spill_load_bytes):
        tr.note(f"ptxas spills registers: {res.spill_store_bytes} bytes of spill stores and {res.spill_load_bytes} "
                f"bytes of spill loads per thread ({res.stack_bytes} bytes of stack); the spill traffic to local "
                f"memory is not in the trace, only the register count")
