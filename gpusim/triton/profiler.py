"""``triton.profiler`` (proton) under gpusim: a script that profiles its launches runs unchanged.

Proton measures launches on a GPU; here every launch is simulated and reported by gpusim itself (its report, the
``--json`` rows, ``gpusim.triton.testing.do_bench``), so sessions and scopes are accepted and record nothing:
``start`` / ``activate`` / ``deactivate`` / ``finalize``, ``scope(name, metrics=...)`` as a context manager or a
decorator, ``enter_scope`` / ``exit_scope``.  ``triton.profiler.viewer`` (reading a profile file back) is not
provided: there is no profile file.
"""
from __future__ import annotations

import functools


def start(name: str | None = None, *, context: str = "shadow", data: str = "tree", backend=None, hook=None,
          **options) -> int:
    """A profiling session (its id); nothing is recorded."""
    return 0


def activate(session: int | None = None) -> None:
    return None


def deactivate(session: int | None = None, **options) -> None:
    return None


def finalize(session: int | None = None, output_format: str | None = None) -> None:
    return None


def enter_scope(name: str, *, triton_op: bool = False, metrics: dict | None = None) -> int:
    return 0


def exit_scope(triton_op: bool = False, metrics: dict | None = None) -> int:
    return 0


class scope:
    """``with proton.scope(name, metrics):`` / ``@proton.scope(name)``: the block runs as it is."""

    def __init__(self, name: str, metrics: dict | None = None):
        self.name = name
        self.metrics = metrics

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped
