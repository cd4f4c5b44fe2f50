"""The real compiler's modules while a gpusim front end stands in for them.

``gpusim run`` on a script (and ``gpusim bench``) makes ``import triton`` give ``gpusim.triton`` and
``from numba import cuda`` give ``gpusim.cuda`` for as long as the script runs, and the script's launches happen
inside that block.  The stand-in registers what it displaced here (``Displaced``); the compiler backends compile
inside ``real_modules(prefix)``, which puts the real modules back for that time only, so a script run unchanged
still gets the real compiler's registers and SASS.  Modules the compiler imports meanwhile are kept for the
stand-in to restore at its exit.  Nothing here models the GPU."""
from __future__ import annotations

import contextlib
import sys

#: an absent attribute, in ``Displaced.attrs``
MISSING = object()


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


class Displaced:
    """A stand-in's record: ``prefix`` (``"triton"``, ``"numba.cuda"``), ``real`` (the real modules under it that
    were in ``sys.modules`` at its start), ``guard`` (its ``sys.meta_path`` finder that refuses the other real
    modules, or None) and ``attrs`` (``[obj, name, real value]`` of attributes it rebound, e.g. ``numba.cuda``)."""

    stack: list = []

    def __init__(self, prefix: str, guard=None, attrs: list | None = None):
        self.prefix, self.guard, self.attrs = prefix, guard, attrs or []
        self.real = {k: v for k, v in sys.modules.items() if _under(k, prefix)}

    def __enter__(self) -> "Displaced":
        Displaced.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        Displaced.stack.remove(self)

    def restore(self) -> None:
        """At the stand-in's exit: the real modules (and attributes) back, the stand-in's entries gone."""
        for k in [k for k in sys.modules if _under(k, self.prefix)]:
            del sys.modules[k]
        sys.modules.update(self.real)
        for obj, name, v in self.attrs:
            _set(obj, name, v)


def _set(obj, name: str, v) -> None:
    if v is MISSING:
        obj.__dict__.pop(name, None)
    else:
        setattr(obj, name, v)


@contextlib.contextmanager
def real_modules(prefix: str):
    """Within the block the modules under ``prefix`` are the real ones, also while a stand-in is active."""
    d = next((d for d in reversed(Displaced.stack) if d.prefix == prefix), None)
    if d is None:
        yield
        return
    stand = {k: v for k, v in sys.modules.items() if _under(k, prefix)}
    stand_attrs = [obj.__dict__.get(name, MISSING) for obj, name, _ in d.attrs]
    for k in stand:
        del sys.modules[k]
    sys.modules.update(d.real)
    for obj, name, v in d.attrs:
        _set(obj, name, v)
    guarded = d.guard is not None and d.guard in sys.meta_path
    if guarded:
        sys.meta_path.remove(d.guard)
    try:
        yield
    finally:
        d.real.update({k: v for k, v in sys.modules.items() if _under(k, prefix)})
        for k in [k for k in sys.modules if _under(k, prefix)]:
            del sys.modules[k]
        sys.modules.update(stand)
        for entry, v in zip(d.attrs, stand_attrs):
            now = entry[0].__dict__.get(entry[1], MISSING)
            if entry[2] is MISSING and now is not MISSING:
                entry[2] = now                         # imported for the compiler: restored at the stand-in's exit
            _set(entry[0], entry[1], v)
        if guarded:
            sys.meta_path.insert(0, d.guard)
