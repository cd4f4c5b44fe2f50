"""``@triton.autotune`` as Triton's runtime does it, with the simulator as the stopwatch.

Triton's ``Autotuner.run``: the tuning key is the values of the ``key`` arguments plus the dtype of every
argument that has one; for a key it has not seen, it prunes the configs (``prune_configs_by``), benchmarks every
remaining config on the launch's own arguments (a config whose compilation runs out of resources times as
infinity), keeps the fastest in ``cache[key]``, zeroes ``reset_to_zero`` arguments once more, and launches the
kernel with that config; a key seen before launches the cached config at once.  With a single config it never
benchmarks.  Here each config's launch is executed and traced, and timed by the timing engine
(``trace.benchmarker``, installed by ``gpusim.api``); the kernel's results are those of a final run with the
fastest config.  What was done goes into the trace's ``notes`` (and ``meta["autotune"]``).
"""
from __future__ import annotations

import time
import types
import warnings
import weakref

import numpy as np

from .. import trace as _trace
from ..config import load_gpu
from ..errors import CompileError, LaunchError

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()    # a real Triton Autotuner -> {key: _Tuned}


class _Tuned:
    """What tuning one key found: the configs' cycles (None: could not run), the winner, its trace."""

    def __init__(self, key, configs, cycles, why, best: int, seconds: float, n_total: int):
        self.key, self.configs, self.cycles, self.why = key, configs, cycles, why
        self.best, self.seconds, self.n_total = best, seconds, n_total


def _config_failure(msg: str) -> bool:
    """Whether a launch error is one Triton's autotuner times as infinity (OutOfResources, a failed static_assert)
    rather than raises."""
    return "out of resource" in msg or "Static assert" in msg or "static_assert" in msg


def wrapper_kind(obj) -> str:
    """``"Autotuner"`` / ``"Heuristics"`` / ``"JITFunction"`` ... when ``obj`` is one of Triton's (or gpusim's)
    decorator classes or a subclass of one (fla's ``CachedAutotuner(Autotuner)``), else its class name."""
    for c in type(obj).__mro__:
        if c.__name__ in _KINDS and (c.__module__ or "").startswith(("triton", "gpusim.triton")):
            return c.__name__
    return type(obj).__name__


_KINDS = ("Autotuner", "Heuristics", "JITFunction", "InterpretedFunction")


def tuner_of(kernel):
    """The autotuner (gpusim's or Triton's) in a kernel's decorator chain, or None."""
    k = kernel
    for _ in range(8):
        if wrapper_kind(k) == "Autotuner" and hasattr(k, "configs") and hasattr(k, "fn"):
            return k
        if hasattr(k, "fn") and not isinstance(k, types.FunctionType):
            k = k.fn
            continue
        break
    return None


def describe(cfg) -> str:
    kw = ", ".join(f"{k}={v}" for k, v in (getattr(cfg, "kwargs", {}) or {}).items())
    return f"{kw}, num_warps={getattr(cfg, 'num_warps', 4)}, num_stages={getattr(cfg, 'num_stages', 3)}"


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


def tuning_key(tuner, arg_names, args, kwargs) -> tuple:
    named = dict(zip(arg_names, args))
    named.update({k: v for k, v in kwargs.items() if k in arg_names})
    key = [_hashable(named[k]) for k in (getattr(tuner, "keys", None) or getattr(tuner, "key", None) or [])
           if k in named]
    for v in named.values():
        if hasattr(v, "dtype") and not isinstance(v, (int, float, np.generic)):
            key.append(str(v.dtype))
    return tuple(key)


def _cache_of(tuner) -> dict:
    own = getattr(tuner, "_gpusim_tuned", None)
    if own is not None:
        return own
    return _CACHE.setdefault(tuner, {})


def forget(kernel) -> None:
    """Empty the configs an autotuned kernel chose per key (nothing for another kernel): its next launch of
    any key simulates every config again."""
    tuner = tuner_of(kernel)
    if tuner is None:
        return
    _CACHE.pop(tuner, None)
    own = getattr(tuner, "_gpusim_tuned", None)
    if own is not None:
        own.clear()
        tuner.cache.clear()
        tuner.best_config = None
        tuner.configs_timings = None


def _prune(tuner, named, kwargs):
    named = {k: v for k, v in named.items() if k not in kwargs}        # Triton's ``self.nargs``: the positional ones
    configs = list(tuner.configs)
    early = getattr(tuner, "early_config_prune", None)
    if early:
        configs = list(early(configs, named, **kwargs))
        if not configs:
            raise LaunchError("No valid autotuner configs after pruning. `early_config_prune` should return at "
                              "least one config.")
    perf_model = getattr(tuner, "perf_model", None)
    if perf_model:
        top_k = getattr(tuner, "configs_top_k", 1.0)
        if isinstance(top_k, float) and top_k <= 1.0:
            top_k = int(len(tuner.configs) * top_k)
        if len(configs) > top_k:
            est = {id(c): perf_model(**named, **kwargs, **_all_kwargs(c)) for c in configs}
            configs = sorted(configs, key=lambda c: est[id(c)])[:top_k]
    return configs


def _all_kwargs(cfg) -> dict:
    out = dict(getattr(cfg, "kwargs", {}) or {})
    for k in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        v = getattr(cfg, k, None)
        if v is not None:
            out[k] = v
    return out


def _zero(v):
    if isinstance(v, np.ndarray):
        v[...] = 0
    elif hasattr(v, "zero_"):
        v.zero_()


def _clone(v):
    if isinstance(v, np.ndarray):
        return v.copy()
    if hasattr(v, "clone"):
        return v.clone()
    return v


def _restore(dst, src):
    if isinstance(dst, np.ndarray):
        dst[...] = src
    elif hasattr(dst, "copy_"):
        dst.copy_(src)


def execute(kernel, tuner, grid, args, kwargs, *, record: bool, gpu, execute_spec, resolve):
    """Run an autotuned launch (see the module docstring).  Returns a KernelTrace when ``record``."""
    spec0 = resolve(kernel)
    arg_names = [p.name for p in spec0.params]
    named = dict(zip(arg_names, args))
    named.update(kwargs)
    configs_all = list(tuner.configs)
    if len(configs_all) <= 1:
        cfg = configs_all[0] if configs_all else None
        if getattr(cfg, "pre_hook", None):
            cfg.pre_hook({**named, **_all_kwargs(cfg)})
        return execute_spec(resolve(kernel, config=cfg), grid, args, kwargs, record=record, gpu=gpu)
    key = tuning_key(tuner, arg_names, args, kwargs)
    cache = _cache_of(tuner)
    tuned = cache.get(key)
    fresh = tuned is None
    best_trace = None
    if fresh:
        configs = _prune(tuner, named, kwargs)
        conflicts = set(kwargs) & set().union(*[set((getattr(c, "kwargs", {}) or {})) for c in configs])
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(sorted(conflicts))}. Make sure that you "
                             f"don't re-define auto-tuned symbols.")
        reset = [n for n in (getattr(tuner, "reset_to_zero", None) or []) if n in named]
        restore = [n for n in (getattr(tuner, "restore_value", None) or []) if n in named]
        bench = _trace.benchmarker
        t0 = time.perf_counter()
        cycles, why = [], []
        best, best_c = 0, float("inf")
        if bench is None:
            warnings.warn("gpusim.triton autotune: the timing engine is not loaded (import gpusim.api, or launch "
                          "through gpusim.simulate / gpusim.session), so the configs cannot be timed: the first "
                          "one is used", RuntimeWarning, stacklevel=3)
            cycles = [None] * len(configs)
            why = ["not timed (no timing engine loaded)"] * len(configs)
        else:
            for i, cfg in enumerate(configs):
                if _verbose():
                    print(f"Autotuning kernel {_fn_name(tuner)} with config {cfg}")
                saved = {n: _clone(named[n]) for n in restore}
                for n in reset:
                    _zero(named[n])
                if getattr(cfg, "pre_hook", None):
                    cfg.pre_hook({**named, **_all_kwargs(cfg)})
                try:
                    tr = execute_spec(resolve(kernel, config=cfg), grid, args, kwargs, record=True, gpu=gpu)
                except (LaunchError, CompileError) as e:
                    # Triton: OutOfResources / CompileTimeAssertionFailure / PTXASError time as infinity
                    msg = str(e)
                    if not _config_failure(msg):
                        raise
                    if _verbose():
                        print(f"Autotuning failed with {e}")
                    cycles.append(None)
                    why.append((msg if getattr(e, "gpusim_where", None) is not None else msg.split(": ", 1)[-1])[:160])
                    continue
                finally:
                    for n, v in saved.items():
                        _restore(named[n], v)
                c = float(bench(tr, gpu))
                cycles.append(c)
                why.append("")
                if c < best_c:
                    best, best_c, best_trace = i, c, tr
                del tr
            if best_trace is None:
                raise LaunchError(f"autotune of {spec0.name!r}: no config could run: " + "; ".join(why))
        tuned = _Tuned(key, configs, cycles, why, best, time.perf_counter() - t0, len(configs_all))
        cache[key] = tuned
        if _verbose():
            print(f"Triton autotuning for function {_fn_name(tuner)},\nwith key as {key},\n"
                  f"finished after {tuned.seconds:.2f}s,\nbest config selected: {configs[best]};")
        for n in reset:
            _zero(named[n])
    cfg = tuned.configs[tuned.best]
    _publish_choice(tuner, key, tuned)
    if getattr(cfg, "pre_hook", None):
        cfg.pre_hook({**named, **_all_kwargs(cfg)})
    spec = resolve(kernel, config=cfg)
    if fresh and best_trace is not None:
        # the winner was traced on these very arguments: compute the results once more (its trace stands)
        execute_spec(spec, grid, args, kwargs, record=False, gpu=gpu)
        tr = best_trace if record else None
    else:
        tr = execute_spec(spec, grid, args, kwargs, record=record, gpu=gpu)
    if tr is not None:
        _annotate(tr, tuned, fresh, gpu)
    return tr


def _publish_choice(tuner, key, tuned):
    """gpusim's own Autotuner shows what Triton's does: ``cache[key]``, ``best_config``, ``configs_timings``."""
    if getattr(tuner, "_gpusim_tuned", None) is None:
        return
    cfg = tuned.configs[tuned.best]
    tuner.cache[key] = cfg
    tuner.best_config = cfg
    tuner.configs_timings = {c: (float("inf") if t is None else t) for c, t in zip(tuned.configs, tuned.cycles)}


def ranking(tuned: _Tuned, clock_mhz: float | None = None) -> list[dict]:
    """The configs tuning one key simulated, fastest first (configs that could not run last, in their order):
    rank, config (text), kwargs (meta-parameters and launch options), cycles (rounded, as a Report's), us (with
    ``clock_mhz``), vs_best (cycles / the fastest's), chosen, error."""
    timed = [c for c in tuned.cycles if c is not None]
    best = min(timed) if timed else None
    order = sorted(range(len(tuned.configs)),
                   key=lambda i: (tuned.cycles[i] is None, tuned.cycles[i] or 0.0, i))
    rows = []
    for rank, i in enumerate(order, 1):
        c = tuned.cycles[i]
        rows.append({"rank": rank, "config": describe(tuned.configs[i]), "kwargs": _all_kwargs(tuned.configs[i]),
                     "cycles": None if c is None else round(c),        # as a Report's cycles
                     "us": (c / clock_mhz) if c is not None and clock_mhz else None,
                     "vs_best": (c / best) if c is not None and best else None, "chosen": i == tuned.best,
                     "error": tuned.why[i] or None})
    return rows


def _clock_mhz(gpu) -> float | None:
    try:
        return load_gpu(gpu).chip.sm_clock_mhz
    except Exception:  # noqa: BLE001 -- a note's detail; the launch itself already used this gpu
        return None


def _annotate(tr, tuned: _Tuned, fresh: bool, gpu=None):
    cfg = tuned.configs[tuned.best]
    n = len(tuned.configs)
    timed = [c for c in tuned.cycles if c is not None]
    if not timed:
        note = (f"autotune: {n} configs for key {tuned.key} could not be timed (no timing engine loaded); the first "
                f"one ({describe(cfg)}) was used")
    else:
        failed = sum(1 for c in tuned.cycles if c is None)
        pruned = tuned.n_total - n
        how = (f"simulated every one of the {n} configs" + (f" left after pruning ({pruned} pruned)" if pruned else "")
               + f" on this launch's arguments ({tuned.seconds:.1f} s)"
               + (f", {failed} could not run (out of resources)" if failed else ""))
        if fresh:
            note = (f"autotune: new key {tuned.key}: {how}; the fastest, {describe(cfg)}, took "
                    f"{tuned.cycles[tuned.best]:.0f} cycles (slowest that ran: {max(timed):.0f}); results and this "
                    f"report are of that config")
        else:
            note = (f"autotune: key {tuned.key} seen before: the cached fastest config, {describe(cfg)}, was used "
                    f"(chosen when its first launch {how})")
    tr.notes.append(note)
    rows = ranking(tuned, _clock_mhz(gpu) if gpu is not None else None)
    if timed:
        for r in rows:
            if r["cycles"] is None:
                what = f"could not run: {r['error']}"
            else:
                us = f" ({r['us']:,.2f} us)" if r["us"] is not None else ""
                what = f"{r['cycles']:,.0f} cycles{us}, " + ("fastest" if r["rank"] == 1 else
                                                                f"{r['vs_best']:.2f}x the fastest")
            tr.notes.append(f"autotune rank {r['rank']}/{len(rows)}: {r['config']}: {what}"
                            + (" <- chosen" if r["chosen"] else ""))
    tr.meta["autotune"] = {
        "key": repr(tuned.key), "cached": not fresh, "chosen": describe(cfg), "seconds": tuned.seconds,
        "configs": [{"config": describe(c), "cycles": t, "error": w or None}
                    for c, t, w in zip(tuned.configs, tuned.cycles, tuned.why)],
        "ranking": rows,
    }


def _verbose() -> bool:
    """``triton.knobs.autotuning.print`` (or ``TRITON_PRINT_AUTOTUNING=1``): print what Triton's autotuner prints."""
    from . import knobs
    return bool(knobs.autotuning.print)


def _fn_name(tuner) -> str:
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    while fn is not None and not isinstance(fn, types.FunctionType) and hasattr(fn, "fn"):
        fn = fn.fn
    return getattr(fn, "__name__", "kernel")


def bench(tuner, args, config, meta, *, execute_spec, resolve, gpu) -> list:
    """Triton's private ``Autotuner._bench(*args, config=, **meta)`` (FlagGems' LibTuner calls it): the simulated
    time of one config on these arguments, in ms, as Triton's ``do_bench`` quantiles ``[median, p20, p80]``
    (one simulation: the three are equal); a config that runs out of resources (or fails a static_assert) gives
    ``[inf, inf, inf]``.  ``meta`` carries the launch's ``grid`` (Triton's ``kernel[grid]`` passes it there)."""
    meta = dict(meta)
    grid = meta.pop("grid")
    meta.pop("warmup", None)
    if _verbose():
        print(f"Autotuning kernel {_fn_name(tuner)} with config {config}")
    conflicts = meta.keys() & (getattr(config, "kwargs", {}) or {}).keys()
    if conflicts:
        raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}."
                         " Make sure that you don't re-define auto-tuned symbols.")
    named = {**dict(zip(getattr(tuner, "arg_names", []) or [], args)), **meta, **_all_kwargs(config)}
    if getattr(config, "pre_hook", None):
        config.pre_hook(named)
    hook = getattr(tuner, "pre_hook", None)
    if hook is not None:
        hook(named)
    try:
        tr = execute_spec(resolve(tuner, config=config), grid, list(args), meta, record=True, gpu=gpu)
    except (LaunchError, CompileError) as e:
        msg = str(e)
        if not _config_failure(msg):
            raise
        if _verbose():
            print(f"Autotuning failed with {e}")
        return [float("inf")] * 3
    post = getattr(tuner, "post_hook", None)
    if post is not None:
        post(named, exception=None)
    if _trace.benchmarker is None:
        return [0.0] * 3
    mhz = _clock_mhz(gpu) or 1000.0
    ms = float(_trace.benchmarker(tr, gpu)) / (mhz * 1e3)
    return [ms, ms, ms]
