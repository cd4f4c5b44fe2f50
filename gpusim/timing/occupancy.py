"""The occupancy calculator (re-exported from ``gpusim.occupancy``, where it lives so that the front ends' launch
checks can use it without importing the timing engine)."""
from ..occupancy import Occupancy, max_coresident_ctas, occupancy

__all__ = ["Occupancy", "occupancy", "max_coresident_ctas"]
