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
