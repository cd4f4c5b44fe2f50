"""``triton.runtime`` as far as host code of the tutorials reaches into it: ``driver.active``.

    from gpusim.triton.runtime import driver
    props = driver.active.utils.get_device_properties(0)      # the simulated GPU's, as Triton's CUDA driver
    target = driver.active.get_current_target()                # GPUTarget("cuda", 90, 32) on the H100 preset
    DEVICE = driver.active.get_active_torch_device()           # torch.device("cpu"): tensors gpusim can simulate

The GPU is the H100 preset unless ``driver.active.set_gpu(name_or_config)`` (or an observing
``gpusim.session(gpu=...)``) names another.  Triton's ``get_device_properties`` reads the CUDA driver:
``max_shared_mem`` (opt-in shared memory per block), ``max_num_regs`` (registers per block), ``multiprocessor_count``,
``warpSize``, ``sm_clock_rate`` / ``mem_clock_rate`` (kHz), ``mem_bus_width`` (bits); here they come from the preset.
"""
from __future__ import annotations

from typing import NamedTuple

from .. import trace as _trace
from ..config import GPUConfig, load_gpu


class GPUTarget(NamedTuple):
    """``triton.backends.compiler.GPUTarget``."""

    backend: str
    arch: int
    warp_size: int


def _current_gpu() -> GPUConfig:
    g = _DRIVER._gpu
    if g is None:
        for f in reversed(_trace.launch_observers):
            g = getattr(f, "gpu", None) or getattr(getattr(f, "__self__", None), "gpu", None)
            if g is not None:
                break
    g = g if g is not None else "h100"
    return g if isinstance(g, GPUConfig) else load_gpu(g)


class _Utils:
    def get_device_properties(self, device=None) -> dict:
        cfg = _current_gpu()
        return {
            "max_shared_mem": cfg.sm.max_shared_per_cta_bytes,
            "max_num_regs": cfg.sm.registers,
            "multiprocessor_count": cfg.chip.sm_count,
            "warpSize": cfg.sm.warp_size,
            "sm_clock_rate": int(cfg.chip.sm_clock_mhz * 1000),
            "mem_clock_rate": int(cfg.dram.mem_clock_mhz * 1000),
            "mem_bus_width": cfg.dram.bus_width_bits,
        }


class _Driver:
    """``triton.runtime.driver.active`` for the simulated GPU."""

    def __init__(self):
        self._gpu = None
        self.utils = _Utils()

    def set_gpu(self, gpu: "GPUConfig | str | None"):
        self._gpu = gpu

    def get_current_target(self) -> GPUTarget:
        cfg = _current_gpu()
        major, minor = cfg.chip.compute_capability
        return GPUTarget("cuda", 10 * major + minor, cfg.sm.warp_size)

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_device_interface(self):
        import torch
        return torch.cpu

    def get_benchmarker(self):
        raise NotImplementedError("gpusim times kernels with gpusim.simulate / gpusim.session, not do_bench")


_DRIVER = _Driver()


class _DriverConfig:
    """``triton.runtime.driver``: ``.active`` is the simulated GPU's driver."""

    @property
    def active(self) -> _Driver:
        return _DRIVER

    def set_active(self, driver):
        raise NotImplementedError("gpusim's driver cannot be replaced")

    def reset_active(self):
        return None


driver = _DriverConfig()

__all__ = ["driver", "GPUTarget"]
