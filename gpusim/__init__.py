"""gpusim: a pure-Python GPU execution-model simulator.

Write a kernel as a numba.cuda-style thread program (``gpusim.cuda``) or a Triton-style tile program
(``gpusim.triton``); ``gpusim.simulate`` runs it on a modelled GPU, computing its results and predicting its
cycles, occupancy, memory traffic and stalls.  Import direction: front ends -> trace -> timing -> metrics -> viz.
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["simulate", "session", "load_gpu", "preset_names", "Report", "sweep", "tune"]

from . import trace as _trace


def _benchmark(tr, gpu):
    """The timing engine as ``trace.benchmarker`` (autotune, ``triton.testing.do_bench``), imported when first
    used: a front end never imports the engine, and ``from gpusim import triton`` stays light."""
    from . import api
    return api._benchmark(tr, gpu)


if _trace.benchmarker is None:
    _trace.benchmarker = _benchmark


def __getattr__(name: str):
    # the API pulls in the timing engine (simpy); keep `from gpusim import cuda` light for kernel files
    if name in ("simulate", "session", "Report"):
        from . import api
        return getattr(api, name)
    if name == "sweep":
        from .sweeper import sweep
        return sweep
    if name == "tune":
        from .tuner import tune
        return tune
    if name in ("load_gpu", "preset_names"):
        from . import config
        return getattr(config, name)
    raise AttributeError(f"module 'gpusim' has no attribute {name!r}")
