"""The real Triton compiler behind a tile launch (``gpusim.compilers``): what the launch hands it and what comes
back into the trace.

``request`` describes the launch as Triton's binder would see it: each pointer's element type and the device
address gpusim gave it (its alignment decides ``tt.divisibility``), each integer's value (divisible by 16,
equal to 1), floats and bools, constexpr values, ``num_warps`` / ``num_stages`` and the other launch options.
``outcome`` asks the compiler module (mode ``auto`` / ``builtin`` / ``real``); ``check_specialization`` compares
the divisibility and constants Triton chose with gpusim's own assumption (``_axisinfo.arg_pointer`` /
``arg_scalar``) and says so in a note when they differ.
"""
from __future__ import annotations

import numpy as np

from .. import compilers
from . import _core as C
from . import _ops_descriptor as D

#: launch options Triton's CUDA backend takes besides num_warps / num_stages
_OPTION_KEYS = ("num_ctas", "maxnreg", "enable_fp_fusion", "debug", "launch_cooperative_grid", "launch_pdl")


def _constexpr(v):
    if isinstance(v, C.dtype):
        return ("constexpr", ("dtype", v.name))
    if isinstance(v, np.generic):
        v = v.item()
    return ("constexpr", v)


def _scalar(v):
    if isinstance(v, (bool, np.bool_)):
        return ("bool", bool(v))
    if isinstance(v, (int, np.integer)):
        return ("int", int(v))
    if isinstance(v, (float, np.floating)):
        return ("float", float(v))
    return None


def _address(t) -> int:
    return int(t.buf.base_addr + int(np.asarray(t.v).reshape(-1)[0]) * t.buf.dtype.itemsize)


def request(spec, vals: dict, values: dict, W: int, S: int, options: dict, cfg) -> "compilers.TritonRequest | None":
    """The launch as the compiler module takes it; None when an argument has no Triton counterpart here."""
    params = []
    for p in spec.params:
        v = values.get(p.name)
        raw = vals.get(p.name)
        if p.name in spec.constexprs:
            params.append(_constexpr(v))
        elif isinstance(v, D.tensor_descriptor):
            d = raw
            params.append(("desc", v.base.buf.dtype.name, _address(v.base), [int(x) for x in d.shape],
                           [int(x) for x in d.strides], [int(x) for x in d.block_shape],
                           getattr(d, "padding", "zero") or "zero"))
        elif isinstance(v, C.tensor) and v.buf is not None:
            params.append(("ptr", v.buf.dtype.name, _address(v)))
        elif raw is None:
            params.append(("none",))
        elif _scalar(raw) is not None:
            params.append(_scalar(raw))
        elif isinstance(v, C.dtype):
            params.append(_constexpr(v))
        else:
            return None
    opts = {"num_warps": int(W), "num_stages": int(S)}
    for k in _OPTION_KEYS:
        if options.get(k) is not None:
            opts[k] = options[k]
    from ._rewrite import source_of
    _, first, file = source_of(spec.fn)
    return compilers.TritonRequest(fn=spec.fn, params=params, options=opts,
                                   capability=tuple(cfg.chip.compute_capability), name=spec.name, file=file,
                                   line=compilers.def_line(spec.fn), jit_options=dict(getattr(spec, "jit_options", {})))


def outcome(spec, vals, values, W, S, options, cfg) -> compilers.Outcome:
    m = compilers.mode()
    if m == "builtin":
        return compilers.Outcome(None, compilers.BUILTIN_LABEL, mode=m)
    req = request(spec, vals, values, W, S, options, cfg)
    if req is None:
        why = "an argument has no Triton counterpart gpusim can describe"
        if m == "real":
            raise compilers.CompilerUnavailable(f"kernel {spec.name!r}: {why}")
        return compilers.Outcome(None, compilers.BUILTIN_LABEL, note=why, mode=m)
    return compilers.compile_for(req, m)


def check_specialization(spec, values: dict, res) -> str:
    """A note when Triton's divisibility / constant specialization differs from gpusim's ('' when it agrees)."""
    sig = res.signature or {}
    ours16, candidates = set(), set()
    for p in spec.params:
        v = values.get(p.name)
        # pointers and integers (descriptors are specialized through their CUtensorMap: not compared)
        if isinstance(v, C.tensor) and getattr(v, "ax", None) is not None and p.name not in spec.constexprs:
            candidates.add(p.name)
            if v.ax.div and v.ax.div[0] >= 16:
                ours16.add(p.name)
    real16 = set(sig.get("divisibility_16", [])) & candidates
    diff = sorted(real16 ^ ours16)
    if not diff:
        return ""
    return (f"Triton specialized {', '.join(diff)} differently from gpusim's assumption (divisible by 16 for "
            f"Triton: {sorted(real16) or 'none'}; for gpusim: {sorted(ours16) or 'none'}); vector widths in the "
            f"trace follow gpusim's")


def notes(tr, spec, values: dict, cc, spill=None) -> None:
    """The report notes about the compiler: why auto mode fell back, a specialization that differs, spills
    (``spill``: the launch's ``_lower_spill.SpillPlan``, None when there is none to trace)."""
    if cc is None:
        return
    if cc.note:
        tr.note(f"compiler: the real compiler was not used ({cc.note}); registers and shared memory are gpusim's "
                f"built-in estimate")
    res = cc.result
    if res is None:
        return
    diff = check_specialization(spec, values, res)
    if diff:
        tr.note(diff)
    if res.spill_store_bytes or res.spill_load_bytes:
        head = (f"ptxas spills registers: {res.spill_store_bytes} bytes of spill stores and {res.spill_load_bytes} "
                f"bytes of spill loads per thread ({res.stack_bytes} bytes of stack)")
        if spill is None:
            tr.note(f"{head}; the spill traffic to local memory is not in the trace (no SASS to read it from), only "
                    f"the register count")
        else:
            tr.note(f"{head}; traced as local-memory traffic from the SASS: {spill.summary()}")
