"""The timing engine: CTA scheduler, SMs and their warp schedulers, and the memory hierarchy (simpy).

``run(trace, gpu)`` replays a ``KernelTrace`` and returns an ``EngineResult``; it never computes values.
"""
from .engine import Engine, EngineResult, run
from .occupancy import Occupancy, occupancy

__all__ = ["Engine", "EngineResult", "run", "Occupancy", "occupancy"]
