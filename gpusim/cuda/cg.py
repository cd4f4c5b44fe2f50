"""``gpusim.cuda.cg``: cooperative groups, as ``numba.cuda.cg``: ``this_grid()`` and the grid group's ``sync()``.

Kernel-side only: inside a kernel the compiler maps ``cuda.cg.this_grid()`` onto the SIMT machine
(``devlib.DeviceLibrary.this_grid``) and marks the kernel cooperative (``launch.run``: the whole grid resident,
run as one chunk).  On the host these names raise, as numba's do outside a kernel.
"""
from __future__ import annotations

from .devlib import GridGroup

__all__ = ["this_grid", "GridGroup"]


def this_grid():
    """The grid group of the running kernel (kernel-side only)."""
    raise RuntimeError("cuda.cg.this_grid() can only be used inside a kernel")


this_grid._gpusim_intrinsic = ("cg", "this_grid")
