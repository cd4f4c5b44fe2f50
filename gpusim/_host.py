"""Host-process helpers: nothing here models the GPU."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for a block (or, as ``@gc_paused()``, a function); the previous
    state is restored on exit.  A simulation allocates millions of short-lived objects and forms no reference
    cycles that must be reclaimed meanwhile, while the collector would rescan the long-lived ones (the trace,
    caches, cache state) again and again (70% of the 512 tiled matmul's engine time before it was paused)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


_EXEC_N = [0]


def _future_flags() -> int:
    import __future__
    out = 0
    for n in __future__.all_feature_names:
        out |= getattr(__future__, n).compiler_flag
    return out


_FUTURE_FLAGS = _future_flags()


@contextlib.contextmanager
def exec_sources_kept():
    """Inside the block, a source string given to ``exec`` keeps its text where ``inspect`` finds it (a file name of
    its own in ``linecache``): kernels a script builds with ``exec`` from a template (numba-cuda's tests do) can be
    compiled from their source, as gpusim compiles every kernel."""
    import builtins
    import linecache
    import sys
    real = builtins.exec

    def exec_keeping_source(source, globals=None, locals=None, /, **kw):
        if isinstance(source, (str, bytes)):
            text = source.decode() if isinstance(source, bytes) else source
            _EXEC_N[0] += 1
            name = f"<gpusim-exec-{_EXEC_N[0]}>"
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)
            # as the builtin compiles it: with the calling code's __future__ flags (``from __future__ import
            # annotations`` leaves the annotations of a def built by exec unevaluated: torch._inductor's)
            flags = sys._getframe(1).f_code.co_flags & _FUTURE_FLAGS
            source = compile(text, name, "exec", flags=flags, dont_inherit=True)
        if globals is None:                  # exec(source) alone: the caller's namespaces, as the builtin takes them
            f = sys._getframe(1)
            globals, locals = f.f_globals, f.f_locals if locals is None else locals
        return real(source, globals, locals, **kw)

    builtins.exec = exec_keeping_source
    try:
        yield
    finally:
        builtins.exec = real
