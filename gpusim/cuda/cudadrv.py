"""``numba.cuda.cudadrv`` as far as kernel files' host code names it: ``from numba.cuda.cudadrv.devicearray import
DeviceNDArray`` (type hints, ``isinstance`` checks) and ``devicearray.is_cuda_ndarray`` / ``auto_device``; the
device arrays are gpusim's (``memory.DeviceNDArray``).  The driver itself is not simulated."""
from __future__ import annotations

import types as _types

from .memory import DeviceNDArray


def _is_cuda_ndarray(obj) -> bool:
    return isinstance(obj, DeviceNDArray)


def _auto_device(obj, stream=0, copy=True, user_explicit=False):
    """numba's ``devicearray.auto_device``: (a device array, whether it was copied)."""
    from . import to_device
    if isinstance(obj, DeviceNDArray):
        return obj, False
    return to_device(obj), True


devicearray = _types.ModuleType("numba.cuda.cudadrv.devicearray")
devicearray.__doc__ = "gpusim's stand-in for numba.cuda.cudadrv.devicearray"
devicearray.DeviceNDArray = DeviceNDArray
devicearray.DeviceRecord = DeviceNDArray
devicearray.DeviceNDArrayBase = DeviceNDArray
devicearray.is_cuda_ndarray = _is_cuda_ndarray
devicearray.auto_device = _auto_device

#: the modules ``numba_cuda_is_gpusim`` installs
MODULES = {"numba.cuda.cudadrv.devicearray": devicearray}
