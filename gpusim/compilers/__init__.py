"""The real compilers in the loop, without a GPU: Triton's own pipeline and numba-cuda + ``ptxas`` build the
kernel for the simulated GPU's compute capability on the host, and gpusim reads back what they allocated.

Room modelled: the compiler's register allocator and shared-memory planner.  A front end describes the launch's
specialization (a ``TritonRequest`` / ``NumbaRequest``: the kernel function, argument types, integer values and
divisibility, constexprs, ``num_warps`` / ``num_stages``); ``compile_for`` returns a ``Compiled`` with registers
per thread, shared memory per CTA (bytes), spills and stack (bytes per thread) exactly as ``ptxas -v`` reports
them, and the static SASS (opcode histogram, per source line; ``_sass``).  The front end then feeds those into
its occupancy / resource model instead of its built-in estimate.

Which compiler is used is the *mode* (``mode()``): ``GPUSIM_COMPILER`` in the environment, or ``use(mode)`` /
``gpusim run --compiler``, one of

* ``auto`` (the default): the real compiler when it is importable and compiles the kernel, else the built-in
  estimate with a report note saying why;
* ``builtin``: always the built-in estimate (gpusim's own register / shared-memory model);
* ``real``: the real compiler or an error (``CompilerUnavailable`` when it is missing, ``CompileError`` naming
  the kernel's file:line when it rejects the kernel).

Compiled results are cached on disk (``_cache``): ``$GPUSIM_CACHE_DIR/compile/`` or
``$XDG_CACHE_HOME/gpusim/compile/`` (``~/.cache/gpusim/compile/``), keyed by the kernel's source (and the
sources and values of what it references), the specialization, the options, the compiler versions and the
target; a corrupt entry is compiled again.

Layering: this package imports only the base (``errors``) and the standard library; Triton and numba-cuda are
optional and imported lazily.  The front ends import it; it never imports a front end.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import CompileError, CompilerUnavailable, UsageError
from . import _cache
from ._cache import cache_dir, def_line
from ._result import Compiled

MODES = ("auto", "builtin", "real")
ENV = "GPUSIM_COMPILER"
DEFAULT_MODE = "auto"
BUILTIN_LABEL = "built-in estimate"

__all__ = ["MODES", "ENV", "DEFAULT_MODE", "BUILTIN_LABEL", "Compiled", "TritonRequest", "NumbaRequest", "Outcome",
           "mode", "use", "compile_for", "cache_dir", "def_line", "STATS", "clear_memory_cache",
           "CompilerUnavailable"]

_override: list[str] = []

#: what happened in this process: real compilations, disk-cache hits, in-memory hits, failures
STATS = {"compiles": 0, "disk_hits": 0, "memory_hits": 0, "failures": 0}


def _check(m: str, where: str) -> str:
    m = (m or "").strip().lower()
    if m not in MODES:
        raise UsageError(f"{where}: unknown compiler mode {m!r}; choose one of {', '.join(MODES)}")
    return m


def mode() -> str:
    """The compiler mode in force: ``use(...)``'s, else ``$GPUSIM_COMPILER``, else ``auto``."""
    if _override:
        return _override[-1]
    env = os.environ.get(ENV, "")
    if env.strip():
        return _check(env, f"{ENV}={env}")
    return DEFAULT_MODE


@contextlib.contextmanager
def use(m: str | None) -> Iterator[str]:
    """Use compiler mode ``m`` (``auto``/``builtin``/``real``) inside the block; ``None`` keeps the current one."""
    if m is None:
        yield mode()
        return
    _override.append(_check(m, "compiler"))
    try:
        yield _override[-1]
    finally:
        _override.pop()


@dataclass
class TritonRequest:
    """A Triton launch's specialization, as the tile front end bound it.

    ``params``: one entry per kernel parameter, in order: ``("ptr", dtype_name, address)`` (Triton dtype name,
    ``fp16``; the device address gpusim gave it), ``("desc", dtype_name, address, shape, strides, block_shape,
    padding)`` (a host ``TensorDescriptor``), ``("int", value)``, ``("float", value)``, ``("bool", value)``,
    ``("none",)``, ``("constexpr", value)`` (a Triton dtype as ``("dtype", name)``).  ``options``: num_warps,
    num_stages and the other launch options Triton takes (maxnreg, enable_fp_fusion ...).  ``jit_options``: the
    real ``@triton.jit``'s do_not_specialize / do_not_specialize_on_alignment / noinline / debug when known."""

    fn: Any
    params: list
    options: dict
    capability: tuple
    name: str = ""
    file: str = ""
    line: int = 0
    jit_options: dict = field(default_factory=dict)

    frontend = "triton"


@dataclass
class NumbaRequest:
    """A SIMT launch's argument types, as numba's dispatcher would type them.

    ``argtypes``: one per parameter: ``("array", np.dtype, ndim, layout)``, ``("scalar", np.dtype)``,
    ``("tuple", [..])``, ``("cpointer", np.dtype)``.  ``options``: fastmath, opt, debug, max_registers (ptxas
    ``--maxrregcount``)."""

    py_func: Any
    argtypes: list
    options: dict
    capability: tuple
    name: str = ""
    file: str = ""
    line: int = 0

    frontend = "cuda"


@dataclass
class Outcome:
    """What ``compile_for`` decided: the real compiler's result (or None: use the built-in estimate), the label
    the report prints after ``compiler:``, and a note when auto mode fell back (why)."""

    result: Compiled | None
    label: str
    note: str = ""
    mode: str = DEFAULT_MODE

    def meta(self) -> dict:
        """What a trace's ``meta["compiler"]`` records."""
        d = {"label": self.label, "mode": self.mode, "used": "real" if self.result is not None else "builtin"}
        if self.note:
            d["fallback_reason"] = self.note
        if self.result is not None:
            d.update(self.result.summary())
        return d


_MEMORY: dict = {}          # key -> Compiled (this process)
_FAILED: dict = {}          # key -> exception text (auto mode does not retry a failed compile in this process)


def clear_memory_cache() -> None:
    """Forget this process' compiled results (the disk cache stays); for tests."""
    _MEMORY.clear()
    _FAILED.clear()


def _backend(req):
    if isinstance(req, TritonRequest):
        from . import _triton as B
    elif isinstance(req, NumbaRequest):
        from . import _numba as B
    else:
        raise TypeError(f"not a compile request: {req!r}")
    return B


def compile_for(req: "TritonRequest | NumbaRequest", m: str | None = None) -> Outcome:
    """Registers / shared memory for a launch: the real compiler's (cached) or None for the built-in estimate,
    according to the mode (``m`` or ``mode()``)."""
    m = _check(m, "compiler") if m is not None else mode()
    if m == "builtin":
        return Outcome(None, BUILTIN_LABEL, mode=m)
    B = _backend(req)
    try:
        B.available()                      # raises CompilerUnavailable with the reason
        key = _cache.key(B.key_parts(req))
    except CompilerUnavailable as e:
        if m == "real":
            raise
        return Outcome(None, BUILTIN_LABEL, note=str(e), mode=m)
    hit = _MEMORY.get(key)
    if hit is not None:
        STATS["memory_hits"] += 1
        return Outcome(hit, hit.compiler, mode=m)
    hit = _cache.load(key)
    if hit is not None:
        STATS["disk_hits"] += 1
        _MEMORY[key] = hit
        return Outcome(hit, hit.compiler, mode=m)
    if key in _FAILED and m == "auto":
        return Outcome(None, BUILTIN_LABEL, note=_FAILED[key], mode=m)
    t0 = time.perf_counter()
    try:
        res, cubin = B.compile(req)
    except (CompileError, CompilerUnavailable) as e:
        STATS["failures"] += 1
        if m == "real":
            raise
        _FAILED[key] = str(e)
        return Outcome(None, BUILTIN_LABEL, note=str(e), mode=m)
    res.compile_s = round(time.perf_counter() - t0, 3)
    STATS["compiles"] += 1
    _cache.store(key, res, cubin)
    _MEMORY[key] = res
    return Outcome(res, res.compiler, mode=m)
