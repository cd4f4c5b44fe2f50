"""The user's entry points: ``simulate`` one launch, ``session`` to time every launch in a block of code,
``simulate_launch`` for a kernel file's ``launch()`` description (one kernel or several steps).

    report = gpusim.simulate(vector_add, (4096,), (256,), a, b, out)             # CUDA-style: grid, block, args
    report = gpusim.simulate(add_kernel, (64,), x, y, out, n, BLOCK=1024)       # Triton-style: grid, args, meta
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from . import trace as trace_mod
from .config import GPUConfig, load_gpu
from .errors import GpusimError
from .metrics import Report, build_report
from .timing import Engine


def frontend_of(kernel: Any) -> str:
    """'cuda' or 'triton' for a kernel object of either gpusim front end or of real numba-cuda / Triton."""
    mod = type(kernel).__module__ or ""
    if getattr(kernel, "_gpusim_frontend", None):
        return kernel._gpusim_frontend
    if mod.startswith("triton") or hasattr(kernel, "arg_names") and hasattr(kernel, "fn"):
        return "triton"
    if mod.startswith("numba") or hasattr(kernel, "py_func"):
        return "cuda"
    if callable(kernel):
        return "cuda"
    raise GpusimError(f"cannot simulate {kernel!r}: not a kernel of gpusim.cuda, gpusim.triton, numba-cuda or Triton")


def trace_kernel(kernel: Any, grid: Any, *args: Any, gpu: GPUConfig, frontend: str | None = None,
                 **kw: Any) -> trace_mod.KernelTrace:
    """Execute a launch functionally and return its trace (the kernel's outputs are written in place)."""
    fe = frontend or frontend_of(kernel)
    if fe == "cuda":
        if not args:
            raise GpusimError("a CUDA-style launch needs a block shape: simulate(kernel, grid, block, *args)")
        from .cuda import trace_launch
        block, kargs = args[0], args[1:]
        return trace_launch(kernel, grid, block, list(kargs), shared_bytes=kw.pop("shared_bytes", 0), gpu=gpu,
                            max_registers=kw.pop("max_registers", None), **kw)
    from .triton import trace_launch
    return trace_launch(kernel, grid, list(args), dict(kw), gpu=gpu)


def time_trace(tr: trace_mod.KernelTrace, gpu: GPUConfig, *, record_timeline: bool = False,
               policy: str | None = None, t_start: float | None = None,
               progress: "Callable[[int], None] | bool | None" = None) -> Report:
    """Replay a trace on the timing engine and build its report.

    ``progress``: None shows a CTA progress bar when stderr is a terminal and the grid is large
    (``progress.cta_progress``); False shows none; a callable is called with the number of CTAs retired.
    """
    t0 = time.perf_counter() if t_start is None else t_start
    if progress is None:
        from .progress import cta_progress
        progress = cta_progress(tr.n_ctas)
    elif progress is False or progress is True:
        progress = None if progress is False else _cta_bar(tr.n_ctas)
    t1 = time.perf_counter()
    res = Engine(tr, gpu, record_timeline=record_timeline, policy=policy).run(progress=progress)
    t2 = time.perf_counter()
    return build_report(tr, gpu, res, wall_s=t2 - t0, timing_s=t2 - t1)


def _benchmark(tr: trace_mod.KernelTrace, gpu: "GPUConfig | str") -> float:
    """Cycles of a trace on the engine, for a front end's autotuner (``trace.benchmarker``)."""
    cfg = gpu if isinstance(gpu, GPUConfig) else load_gpu(gpu)
    return float(Engine(tr, cfg).run(progress=None).cycles)


trace_mod.benchmarker = _benchmark


def _cta_bar(total: int):
    """A CTA bar even off a terminal or for a small grid (``progress=True``)."""
    from tqdm import tqdm
    bar = tqdm(total=total, desc="CTAs", unit="CTA", leave=False, mininterval=0.3)

    def step(done: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return step


def simulate(kernel: Any, grid: Any, *args: Any, gpu: "str | GPUConfig" = "h100", record_timeline: bool = False,
             policy: str | None = None, frontend: str | None = None,
             progress: "Callable[[int], None] | bool | None" = None, **kw: Any) -> Report:
    """Run one kernel launch on the simulated GPU: compute its results and time it.

    CUDA-style kernels: ``simulate(kernel, grid, block, *args, shared_bytes=0, max_registers=None)``.
    Triton-style kernels: ``simulate(kernel, grid, *args, **meta)`` with constexprs, num_warps, num_stages.
    ``gpu`` is a preset name or a TOML config path.  ``progress``: see ``time_trace`` (by default a progress
    bar over the grid's CTAs on a terminal, nothing otherwise).  Returns a ``Report``.
    """
    cfg = load_gpu(gpu)
    t0 = time.perf_counter()
    tr = trace_kernel(kernel, grid, *args, gpu=cfg, frontend=frontend, **kw)
    return time_trace(tr, cfg, record_timeline=record_timeline, policy=policy, t_start=t0, progress=progress)


@dataclass
class Session:
    """Collects a Report for every kernel launched inside ``with gpusim.session(...)``."""

    gpu: GPUConfig
    record_timeline: bool = False
    reports: list[Report] = field(default_factory=list)

    def _observe(self, tr: trace_mod.KernelTrace) -> None:
        self.reports.append(time_trace(tr, self.gpu, record_timeline=self.record_timeline))

    @property
    def last(self) -> Report:
        if not self.reports:
            raise GpusimError("no kernel was launched in this session")
        return self.reports[-1]

    def total_cycles(self) -> float:
        return sum(r.cycles for r in self.reports)


@contextlib.contextmanager
def session(gpu: "str | GPUConfig" = "h100", record_timeline: bool = False) -> Iterator[Session]:
    """Time every ``kernel[grid, block](...)`` / ``kernel[grid](...)`` launch made inside the block."""
    s = Session(load_gpu(gpu), record_timeline=record_timeline)
    trace_mod.launch_observers.append(s._observe)
    try:
        yield s
    finally:
        trace_mod.launch_observers.remove(s._observe)


# ---- kernel files: their launch() description ----------------------------------------------------------

def launch_steps(launch: dict) -> list[dict]:
    """The steps of a kernel file's launch description (one step for a single kernel)."""
    if "steps" in launch:
        return list(launch["steps"])
    return [{k: launch[k] for k in ("kernel", "grid", "block", "args", "meta", "shared_bytes") if k in launch}]


def simulate_step(step: dict, gpu: GPUConfig, record_timeline: bool = False) -> Report:
    kernel = step["kernel"]
    fe = frontend_of(kernel)
    grid = step["grid"]
    if fe == "cuda":
        return simulate(kernel, grid, step["block"], *step["args"], gpu=gpu, record_timeline=record_timeline,
                        shared_bytes=step.get("shared_bytes", 0))
    return simulate(kernel, grid, *step["args"], gpu=gpu, record_timeline=record_timeline,
                    **step.get("meta", {}))


def simulate_launch(launch: dict, gpu: "str | GPUConfig" = "h100", record_timeline: bool = False,
                    progress: Callable[[int, int], None] | None = None) -> list[Report]:
    """Simulate every step of a launch description; returns one Report per kernel launched."""
    cfg = load_gpu(gpu)
    steps = launch_steps(launch)
    out = []
    for i, st in enumerate(steps):
        out.append(simulate_step(st, cfg, record_timeline))
        if progress:
            progress(i + 1, len(steps))
    return out


def check_outputs(launch: dict) -> list[tuple[Any, float, bool]]:
    """Compare a launch's outputs (after it ran) with its numpy reference: (output, max abs error, ok)."""
    ref = launch["reference"]()
    steps = launch_steps(launch)
    rtol, atol = launch.get("rtol", 1e-5), launch.get("atol", 1e-6)
    res = []
    for key, expected in ref.items():
        if isinstance(key, tuple):
            got = steps[key[0]]["args"][key[1]]
        else:
            got = (launch["args"] if "args" in launch else steps[-1]["args"])[key]
        got = np.asarray(got.copy_to_host() if hasattr(got, "copy_to_host") else got)
        exp = np.asarray(expected)
        err = float(np.max(np.abs(got.astype(np.float64) - exp.astype(np.float64)))) if exp.size else 0.0
        ok = bool(np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol,
                              equal_nan=False))
        res.append((key, err, ok))
    return res
