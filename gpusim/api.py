"""The user's entry points: ``simulate`` one launch, ``session`` to time every launch in a block of code,
``simulate_launch`` for a kernel file's ``launch()`` description (one kernel or several steps).

    report = gpusim.simulate(vector_add, (4096,), (256,), a, b, out)             # CUDA-style: grid, block, args
    report = gpusim.simulate(add_kernel, (64,), x, y, out, n, BLOCK=1024)       # Triton-style: grid, args, meta
"""
from __future__ import annotations

import contextlib
import difflib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from . import compilers
from . import trace as trace_mod
from .config import GPUConfig, load_gpu
from .errors import GpusimError, LaunchSpecError
from .metrics import Report, build_report
from .timing import Engine
from .timing.sampling import run_sampled


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
               progress: "Callable[[int], None] | bool | None" = None, exact: bool = False,
               sampling: bool | None = None) -> Report:
    """Replay a trace on the timing engine and build its report.

    ``progress``: None shows a CTA progress bar when stderr is a terminal and the grid is large
    (``progress.cta_progress``); False shows none; a callable is called with the number of CTAs retired.
    A grid of many alike waves is replayed sampled (``gpusim.timing.sampling``: the waves up to its steady state
    and the last ones, the middle extrapolated; the report says which in ``context["sampling"]``); ``exact=True``
    (or ``sampling=False``) replays every CTA.
    """
    t0 = time.perf_counter() if t_start is None else t_start
    if progress is None:
        from .progress import cta_progress
        progress = cta_progress(tr.n_ctas)
    elif progress is False or progress is True:
        progress = None if progress is False else _cta_bar(tr.n_ctas)
    t1 = time.perf_counter()
    res = run_sampled(tr, gpu, sampling=False if exact else sampling, record_timeline=record_timeline,
                      policy=policy, progress=progress)
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
             progress: "Callable[[int], None] | bool | None" = None, compiler: str | None = None,
             exact: bool = False, sampling: bool | None = None, **kw: Any) -> Report:
    """Run one kernel launch on the simulated GPU: compute its results and time it.

    CUDA-style kernels: ``simulate(kernel, grid, block, *args, shared_bytes=0, max_registers=None)``.
    Triton-style kernels: ``simulate(kernel, grid, *args, **meta)`` with constexprs, num_warps, num_stages.
    ``gpu`` is a preset name or a TOML config path.  ``progress``: see ``time_trace`` (by default a progress
    bar over the grid's CTAs on a terminal, nothing otherwise).  ``compiler``: where registers and shared memory
    come from, ``"auto"`` / ``"builtin"`` / ``"real"`` (``gpusim.compilers``; None: ``$GPUSIM_COMPILER``, else
    auto).  ``exact`` / ``sampling``: see ``time_trace`` (a large grid's timing replay is sampled by default;
    the kernel's outputs are always computed for every CTA).  Returns a ``Report``.
    """
    cfg = load_gpu(gpu)
    t0 = time.perf_counter()
    with compilers.use(compiler):
        tr = trace_kernel(kernel, grid, *args, gpu=cfg, frontend=frontend, **kw)
    return time_trace(tr, cfg, record_timeline=record_timeline, policy=policy, t_start=t0, progress=progress,
                      exact=exact, sampling=sampling)


@dataclass
class Session:
    """Collects a Report for every kernel launched inside ``with gpusim.session(...)``."""

    gpu: GPUConfig
    record_timeline: bool = False
    reports: list[Report] = field(default_factory=list)
    exact: bool = False

    def _observe(self, tr: trace_mod.KernelTrace) -> None:
        self.reports.append(time_trace(tr, self.gpu, record_timeline=self.record_timeline, exact=self.exact))

    @property
    def last(self) -> Report:
        if not self.reports:
            raise GpusimError("no kernel was launched in this session")
        return self.reports[-1]

    def total_cycles(self) -> float:
        return sum(r.cycles for r in self.reports)


@contextlib.contextmanager
def fresh_addresses() -> Iterator[None]:
    """Simulated device addresses as in a new process for the block: a gc, then both front ends' address spaces
    empty (the first array gets the base address), the live allocations back after.  Addresses hash to L2 slices
    and DRAM channels, so a launch's cycles otherwise depend on the arrays the process still holds (sweep points,
    validation cases: a few tenths of a percent, up to 3% on a one-wave matmul)."""
    import gc
    from .cuda.memory import ADDRESS_SPACE
    from .triton._buffers import fresh_space
    gc.collect()
    with ADDRESS_SPACE.fresh(), fresh_space():
        yield


@contextlib.contextmanager
def session(gpu: "str | GPUConfig" = "h100", record_timeline: bool = False, exact: bool = False) -> Iterator[Session]:
    """Time every ``kernel[grid, block](...)`` / ``kernel[grid](...)`` launch made inside the block (``exact``:
    replay every CTA instead of sampling)."""
    s = Session(load_gpu(gpu), record_timeline=record_timeline, exact=exact)
    trace_mod.launch_observers.append(s._observe)
    try:
        yield s
    finally:
        trace_mod.launch_observers.remove(s._observe)


# ---- kernel files: their launch() description ----------------------------------------------------------

#: keys of one kernel launch (a single-kernel launch dict, or one of its "steps"); see kernels/README.md
STEP_KEYS = {
    "kernel": "the kernel (numba-cuda / Triton / gpusim)",
    "grid": "blocks (CUDA) or programs (Triton): a tuple, or for Triton a callable(meta) -> tuple",
    "block": "threads per block (CUDA only)",
    "shared_bytes": "dynamic shared memory per block (CUDA only)",
    "args": "the kernel's arguments, in order",
    "meta": "constexpr values, num_warps, num_stages (Triton only)",
}
#: keys of a launch dict besides those of a step
LAUNCH_KEYS = {
    "steps": "several kernels in sequence: a list of {kernel, grid, block/meta, args, shared_bytes}",
    "outputs": "indices into args that the kernel writes ((step, index) pairs with steps)",
    "reference": "callable returning the expected outputs, computed with numpy",
    "rtol": "relative tolerance of the output check",
    "atol": "absolute tolerance of the output check",
    "flops": "useful floating-point operations (roofline)",
    "min_bytes": "fewest DRAM bytes the work needs",
    "buffers": "arrays a kernel reaches only through a table of their addresses, by name: reference() may "
               "return outputs keyed by these names",
}
#: Triton launch options: they belong in "meta"
META_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")
_KEY_ALIASES = {"shared_mem": "shared_bytes", "smem": "shared_bytes", "dynamic_shared_bytes": "shared_bytes",
                "shared_memory": "shared_bytes", "threads": "block", "block_dim": "block", "blockDim": "block",
                "grid_dim": "grid", "gridDim": "grid", "kernels": "steps", "expected": "reference",
                "ref": "reference", "arguments": "args", "constexprs": "meta", "kwargs": "meta"}


def _kernel_name(kernel: Any) -> str:
    for obj in (kernel, getattr(kernel, "fn", None), getattr(kernel, "py_func", None)):
        n = getattr(obj, "__name__", None)
        if isinstance(n, str):
            return n
    return type(kernel).__name__


def _kernel_params(kernel: Any) -> list[str]:
    names = getattr(kernel, "arg_names", None)
    if isinstance(names, (list, tuple)):
        return [str(n) for n in names]
    import inspect
    for obj in (getattr(kernel, "fn", None), getattr(kernel, "py_func", None), kernel):
        try:
            return list(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            continue
    return []


def _unknown_key(key: str, d: dict, where: str, step: bool, fe: str | None, kernel: Any) -> LaunchSpecError:
    """The error for a key a launch dict (or a step of it) does not take, saying where it belongs."""
    allowed = list(STEP_KEYS) if step else list(STEP_KEYS) + list(LAUNCH_KEYS)
    val = d[key]
    if key in META_OPTIONS:
        if fe == "cuda":
            why = (f"{key} is a Triton option (it belongs in 'meta' of a Triton launch); kernel "
                   f"{_kernel_name(kernel)!r} is CUDA-style: its threads per block are 'block'")
        else:
            why = f"{key} belongs in 'meta' (\"meta\": {{\"{key}\": {val!r}}})"
    elif fe == "triton" and key in _kernel_params(kernel):
        why = (f"{key} is a parameter of kernel {_kernel_name(kernel)!r}: a constexpr goes in 'meta' "
               f"(\"meta\": {{\"{key}\": {val!r}}}), any other argument in 'args'")
    elif step and key in LAUNCH_KEYS:
        why = f"{key!r} belongs at the top level of the launch dict, not in a step"
    else:
        near = _KEY_ALIASES.get(key) or next(iter(difflib.get_close_matches(key, allowed, n=1)), None)
        why = (f"did you mean {near!r}? ({near}: {STEP_KEYS.get(near) or LAUNCH_KEYS.get(near)})" if near
               else f"the keys are {', '.join(allowed)} (kernels/README.md)")
    return LaunchSpecError(f"{where} has unknown key {key!r}: {why}", key=key)


def _check_step(st: Any, where: str, step: bool) -> None:
    if not isinstance(st, dict):
        raise LaunchSpecError(f"{where} must be a dict with kernel, grid, args..., got {type(st).__name__}",
                              key="steps")
    kernel = st.get("kernel")
    fe = None
    if kernel is not None:
        try:
            fe = frontend_of(kernel)
        except GpusimError as e:
            raise LaunchSpecError(f"{where}: 'kernel' is {e}", key="kernel") from None
    allowed = STEP_KEYS if step else {**STEP_KEYS, **LAUNCH_KEYS}
    for k in st:
        if k not in allowed:
            raise _unknown_key(k, st, where, step, fe, kernel)
    for k in ("kernel", "grid", "args"):
        if k not in st:
            raise LaunchSpecError(f"{where} has no {k!r} ({STEP_KEYS[k]})", key=k)
    if not isinstance(st["args"], (list, tuple)):
        raise LaunchSpecError(f"{where}: 'args' must be a list, got {type(st['args']).__name__}", key="args")
    meta = st.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise LaunchSpecError(f"{where}: 'meta' must be a dict, got {type(meta).__name__}", key="meta")
    name = _kernel_name(kernel)
    if fe == "cuda":
        if "block" not in st:
            raise LaunchSpecError(f"{where} has no 'block' (threads per block), which CUDA-style kernel "
                                  f"{name!r} needs", key="block")
        if meta:
            k0 = next(iter(meta))
            raise LaunchSpecError(f"{where}: 'meta' ({k0!r}...) holds Triton options and constexprs, but kernel "
                                  f"{name!r} is CUDA-style (its threads per block are 'block'; leave 'meta' out "
                                  f"or empty)", key="meta")
    elif fe == "triton":
        if "block" in st:
            raise LaunchSpecError(f"{where}: 'block' is for CUDA-style kernels; Triton kernel {name!r} runs "
                                  f"meta['num_warps'] x 32 threads per program", key="block")
        if st.get("shared_bytes"):
            raise LaunchSpecError(f"{where}: 'shared_bytes' is for CUDA-style kernels; Triton kernel {name!r} "
                                  f"allocates its own shared memory", key="shared_bytes")


def check_launch(launch: Any) -> None:
    """Check a kernel file's launch description against the convention of kernels/README.md: every key known
    and in its place (``num_warps`` in 'meta', ...), the required ones there.  Raises LaunchSpecError."""
    if not isinstance(launch, dict):
        raise LaunchSpecError(f"launch() must return a dict (see kernels/README.md), got {type(launch).__name__}")
    if "steps" in launch:
        steps = launch["steps"]
        if not isinstance(steps, (list, tuple)) or not steps:
            raise LaunchSpecError("the launch dict's 'steps' must be a non-empty list of dicts", key="steps")
        both = [k for k in STEP_KEYS if k in launch]
        if both:
            raise LaunchSpecError(f"the launch dict has both 'steps' and {both[0]!r}: with steps, each kernel's "
                                  f"{', '.join(STEP_KEYS)} go in its step", key=both[0])
        for k in launch:
            if k not in LAUNCH_KEYS:
                raise _unknown_key(k, launch, "the launch dict", False, None, None)
        for i, st in enumerate(steps):
            _check_step(st, f"steps[{i}]", True)
    else:
        _check_step(launch, "the launch dict", False)
    for k in ("rtol", "atol", "flops", "min_bytes"):
        v = launch.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))):
            raise LaunchSpecError(f"the launch dict's {k!r} must be a number, got {v!r}", key=k)
    if "reference" in launch and not callable(launch["reference"]):
        raise LaunchSpecError("the launch dict's 'reference' must be a callable returning the expected outputs",
                              key="reference")


def launch_steps(launch: dict) -> list[dict]:
    """The steps of a kernel file's launch description (one step for a single kernel).

    The description is checked first (``check_launch``): an unknown or misplaced key is a LaunchSpecError."""
    check_launch(launch)
    if "steps" in launch:
        return list(launch["steps"])
    return [{k: launch[k] for k in STEP_KEYS if k in launch}]


def simulate_step(step: dict, gpu: GPUConfig, record_timeline: bool = False, exact: bool = False,
                  sampling: bool | None = None) -> Report:
    kernel = step["kernel"]
    fe = frontend_of(kernel)
    grid = step["grid"]
    if fe == "cuda":
        return simulate(kernel, grid, step["block"], *step["args"], gpu=gpu, record_timeline=record_timeline,
                        shared_bytes=step.get("shared_bytes", 0), exact=exact, sampling=sampling)
    return simulate(kernel, grid, *step["args"], gpu=gpu, record_timeline=record_timeline, exact=exact,
                    sampling=sampling, **(step.get("meta") or {}))


def simulate_launch(launch: dict, gpu: "str | GPUConfig" = "h100", record_timeline: bool = False,
                    progress: Callable[[int, int], None] | None = None, compiler: str | None = None,
                    exact: bool = False, sampling: bool | None = None) -> list[Report]:
    """Simulate every step of a launch description; returns one Report per kernel launched.  ``compiler``,
    ``exact``, ``sampling``: see ``simulate``."""
    cfg = load_gpu(gpu)
    steps = launch_steps(launch)
    out = []
    for i, st in enumerate(steps):
        with compilers.use(compiler):
            out.append(simulate_step(st, cfg, record_timeline, exact=exact, sampling=sampling))
        if progress:
            progress(i + 1, len(steps))
    return out


def check_outputs(launch: dict) -> list[tuple[Any, float, bool]]:
    """Compare a launch's outputs (after it ran) with its numpy reference: (output, max abs error, ok)."""
    steps = launch_steps(launch)
    ref = launch["reference"]()
    if not isinstance(ref, dict):
        raise LaunchSpecError(f"the launch dict's reference() must return a dict {{output: expected array}}, got "
                              f"{type(ref).__name__}", key="reference")
    rtol, atol = launch.get("rtol", 1e-5), launch.get("atol", 1e-6)
    res = []
    for key, expected in ref.items():
        if isinstance(key, str):
            buffers = launch.get("buffers") or {}
            if key not in buffers:
                raise LaunchSpecError(f"reference() returned output {key!r}: not a name in the launch dict's "
                                      f"'buffers' ({', '.join(map(str, buffers)) or 'none given'})", key="reference")
            got = buffers[key]
        elif isinstance(key, (tuple, list)):
            if not (len(key) == 2 and 0 <= key[0] < len(steps) and 0 <= key[1] < len(steps[key[0]]["args"])):
                raise LaunchSpecError(f"reference() returned output {key!r}: not a (step, arg index) of the "
                                      f"{len(steps)} steps", key="reference")
            got = steps[key[0]]["args"][key[1]]
        else:
            args = launch["args"] if "args" in launch else steps[-1]["args"]
            if not isinstance(key, (int, np.integer)) or not -len(args) <= key < len(args):
                raise LaunchSpecError(f"reference() returned output {key!r}: not an index into the "
                                      f"{len(args)} args", key="reference")
            got = args[key]
        got = np.asarray(got.copy_to_host() if hasattr(got, "copy_to_host") else got)
        exp = np.asarray(expected)
        err = float(np.max(np.abs(got.astype(np.float64) - exp.astype(np.float64)))) if exp.size else 0.0
        ok = bool(np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol,
                              equal_nan=False))
        res.append((key, err, ok))
    return res
