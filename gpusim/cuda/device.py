"""The simulated device as numba-cuda's host API shows it: ``cuda.get_current_device()`` / ``cuda.gpus`` /
``cuda.current_context()`` with the preset's attributes, and ``cuda.event()`` pairs that measure the *simulated*
time (ms) of the kernels launched between their ``record()`` calls.

The device is the GPU of a listening ``gpusim.session`` or the default preset (``launch.DEFAULT_GPU``).  Events
time launches with the timing engine the package installs as ``trace.benchmarker`` (a front end does not import
the engine): the first ``record()`` starts keeping the traces of later launches (until the last recorded event is
dropped), ``elapsed_time`` replays those between two records.
"""
from __future__ import annotations

import contextlib
import re
import weakref

from ..config import load_gpu
from ..errors import GpusimError
from .. import trace as trace_mod
from .launch import DEFAULT_GPU, _observer_gpu


def _gpu():
    return _observer_gpu() or load_gpu(DEFAULT_GPU)


class Device:
    """``cuda.get_current_device()``: name, ``compute_capability`` and the CUDA device attributes numba exposes
    (``MAX_THREADS_PER_BLOCK``, ``MULTIPROCESSOR_COUNT``, ``WARP_SIZE``, ...), read off the preset."""

    id = 0

    def __init__(self, cfg=None):
        cfg = cfg or _gpu()
        self._cfg = cfg
        c, sm = cfg.chip, cfg.sm
        self.name = c.name.encode()
        self.compute_capability = tuple(c.compute_capability)
        self.uuid = "GPU-gpusim-" + cfg.preset if getattr(cfg, "preset", None) else "GPU-gpusim"
        self._attrs = {
            "MAX_THREADS_PER_BLOCK": sm.max_threads_per_cta,
            "MAX_BLOCK_DIM_X": 1024, "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64,
            "MAX_GRID_DIM_X": 2 ** 31 - 1, "MAX_GRID_DIM_Y": 65535, "MAX_GRID_DIM_Z": 65535,
            "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024,
            "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": sm.max_shared_per_cta_bytes,
            "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": sm.max_shared_per_sm_bytes,
            "MAX_REGISTERS_PER_BLOCK": sm.registers,
            "MAX_REGISTERS_PER_MULTIPROCESSOR": sm.registers,
            "WARP_SIZE": sm.warp_size,
            "MULTIPROCESSOR_COUNT": c.sm_count,
            "MAX_THREADS_PER_MULTI_PROCESSOR": sm.max_threads,
            "MAX_BLOCKS_PER_MULTIPROCESSOR": sm.max_ctas,
            "CLOCK_RATE": int(c.sm_clock_mhz * 1000),
            "MEMORY_CLOCK_RATE": int(cfg.dram.mem_clock_mhz * 1000),
            "GLOBAL_MEMORY_BUS_WIDTH": cfg.dram.bus_width_bits,
            "L2_CACHE_SIZE": cfg.l2.size_bytes,
            "COMPUTE_CAPABILITY_MAJOR": c.compute_capability[0],
            "COMPUTE_CAPABILITY_MINOR": c.compute_capability[1],
            "TOTAL_CONSTANT_MEMORY": 64 * 1024,
            "CONCURRENT_KERNELS": 1, "ECC_ENABLED": 1, "UNIFIED_ADDRESSING": 1, "COOPERATIVE_LAUNCH": 1,
        }

    def __getattr__(self, name):
        attrs = self.__dict__.get("_attrs", {})
        if name in attrs:
            return attrs[name]
        raise AttributeError(f"the simulated device has no attribute {name!r} (gpusim knows: "
                             f"{', '.join(sorted(attrs))})")

    def get_device_identity(self):
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}

    def reset(self):
        pass

    def __enter__(self):        # ``with cuda.gpus[0]:`` (numba's _DeviceContextManager): the one simulated device
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"<CUDA device {self.id} '{self.name.decode()}' (simulated by gpusim)>"


class _Context:
    def __init__(self):
        self.device = Device()

    def get_memory_info(self):
        """(free, total) bytes: the capacity in the preset's name (``... 80GB``; 80 GB when it names none), all
        free: allocations are host arrays."""
        m = re.search(r"(\d+)\s*GB", self.device.name.decode())
        total = int(m.group(1) if m else 80) * 1024 ** 3
        return total, total

    def synchronize(self):
        pass

    def reset(self):
        pass


class _Gpus:
    """``cuda.gpus``: one simulated device."""

    def __len__(self):
        return 1

    def __getitem__(self, i):
        if i not in (0, -1):
            raise IndexError(f"gpusim simulates one device (cuda.gpus[{i}])")
        return Device()

    def __iter__(self):
        return iter([Device()])

    @property
    def current(self):
        return Device()


gpus = _Gpus()


def get_current_device() -> Device:
    return Device()


def current_context(devnum=None) -> _Context:
    return _Context()


def select_device(device_id: int) -> Device:
    if device_id != 0:
        raise GpusimError(f"gpusim simulates one device: cuda.select_device({device_id})")
    return Device()


def close():
    pass


def profile_start():
    pass


def profile_stop():
    pass


@contextlib.contextmanager
def defer_cleanup():
    yield


# ---- events -----------------------------------------------------------------------------------------------------

class _LaunchLog:
    """The traces of the launches since the first event was recorded (one listener for all events)."""

    def __init__(self):
        self.traces: list = []
        self.ms: dict = {}

    def __call__(self, tr) -> None:
        self.traces.append(tr)


_LOG: _LaunchLog | None = None
_LIVE = [0]                        # recorded events still alive: the log is dropped with the last of them


def _release() -> None:
    global _LOG
    _LIVE[0] -= 1
    if _LOG is not None and _LIVE[0] <= 0:
        if _LOG in trace_mod.launch_observers:
            trace_mod.launch_observers.remove(_LOG)
        _LOG = None


class Event:
    """``cuda.event()``: ``record()`` marks a point among the launches; ``elapsed_time(end)`` is the simulated time
    in ms of the kernels launched between this event's record and ``end``'s (back to back, as one stream runs
    them), on the session's GPU or the default preset."""

    def __init__(self, timing=True):
        self.timing = timing
        self._at: int | None = None
        self._log: _LaunchLog | None = None

    def record(self, stream=0):
        global _LOG
        if _LOG is None:
            _LOG = _LaunchLog()
            trace_mod.launch_observers.append(_LOG)
        self._at = len(_LOG.traces)
        if self._log is None:
            _LIVE[0] += 1
            weakref.finalize(self, _release)
        self._log = _LOG

    def synchronize(self):
        pass

    def wait(self, stream=0):
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, evtend: "Event") -> float:
        if not self.timing or not evtend.timing:
            raise GpusimError("elapsed_time of an event made with timing=False (numba raises too)")
        if self._at is None or evtend._at is None:
            raise GpusimError("elapsed_time needs both events recorded (event.record()) first")
        bench = trace_mod.benchmarker
        if bench is None:
            raise GpusimError("event timing needs the timing engine: import gpusim")
        if self._log is not evtend._log:
            raise GpusimError("elapsed_time of two events recorded in different event logs (one was recorded "
                              "after every earlier event had been dropped)")
        log = self._log
        cfg = _gpu()
        lo, hi = sorted((self._at, evtend._at))
        ms = 0.0
        for i in range(lo, hi):
            key = (i, id(cfg))
            if key not in log.ms:
                log.ms[key] = float(bench(log.traces[i], cfg)) / (cfg.chip.sm_clock_mhz * 1e3)
            ms += log.ms[key]
        return ms if evtend._at >= self._at else -ms


def event(timing=True) -> Event:
    return Event(timing)


def event_elapsed_time(evtstart: Event, evtend: Event) -> float:
    return evtstart.elapsed_time(evtend)
