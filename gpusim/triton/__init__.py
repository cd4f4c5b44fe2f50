"""``gpusim.triton``: Triton-compatible tile programs, executed functionally and lowered to a warp trace.

Use it like ``triton``::

    from gpusim import triton
    from gpusim.triton import language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
                 mask=offs < n)

    add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)      # numpy arrays or CPU torch tensors

A launch runs every program of the grid (in chunks) at once on numpy arrays; program-varying control flow
runs in masked lockstep.  ``trace_launch`` also lowers the launch the way Triton 3.x compiles it for the
chosen GPU (``_lower``) and returns the ``KernelTrace`` the timing engine replays.  A plain ``kernel[grid](...)``
only computes, unless ``gpusim.trace.launch_observers`` is non-empty (inside ``gpusim.session()``): then it
records and publishes the trace.  Real ``@triton.jit`` functions are accepted too (their source is re-run).

Host side: ``triton.runtime.driver.active`` answers for the simulated GPU (device properties, target);
``kernel.warmup(...)`` gives ``n_regs`` / ``metadata.shared`` estimates; ``data_ptr(array)`` is the device address
a launch gives a numpy array (or CPU torch tensor), to build pointer tables a kernel casts with
``.to(tl.pointer_type(...))`` (tutorial 08); ``@autotune`` simulates every config of a new key and keeps the
fastest; ``testing.do_bench`` / ``testing.perf_report`` time a tutorial's benchmark section by simulation.
"""
from __future__ import annotations

import functools
import sys
import types

from .. import trace as _trace
from ..errors import CompileError
from . import _kernels, language, runtime, testing
from ._dtypes import constexpr
from ._buffers import data_ptr
from ._launch import execute, resolve, run_launch, trace_launch

#: the Triton release whose language and lowering this front end follows (scripts check ``triton.__version__``)
__version__ = "3.6.0"

__all__ = ["jit", "JITFunction", "KernelInterface", "OutOfResources", "CompilationError", "TensorWrapper",
           "reinterpret", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language",
           "trace_launch", "run_launch", "constexpr", "runtime", "testing", "data_ptr", "set_allocator", "TritonError",
           "InterpreterError", "knobs", "compiler", "errors", "constexpr_function"]



def set_allocator(allocator):
    """``triton.set_allocator``: accepted; the global scratch of device-side tensor descriptors is simulated."""
    global _allocator
    _allocator = allocator


_allocator = None


class TensorWrapper:
    """``triton.reinterpret(tensor, dtype)``'s value: ``tensor``'s memory, passed to a kernel as a pointer to
    ``dtype`` (as Triton's ``triton.runtime.jit.TensorWrapper``)."""

    def __init__(self, base, dtype):
        self.dtype = dtype
        self.base = base
        self.data = getattr(base, "data", None)
        self.device = getattr(base, "device", None)
        self.shape = base.shape

    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"

    def element_size(self):
        return self.base.element_size()

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base)

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)


def reinterpret(tensor, dtype):
    """``triton.reinterpret``: view a tensor's memory as ``dtype`` at a kernel launch."""
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr") or hasattr(tensor, "__array_interface__"):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"Cannot reinterpret a {type(tensor)}.")


#: ``triton.runtime.jit.type_canonicalisation_dict`` (Triton's ``_utils``): dtype names to Triton's short names
type_canonicalisation_dict = {
    "bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
    "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15", "float8_e4m3fn": "fp8e4nv",
    "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2": "fp8e5", "float8e5b16": "fp8e5b16",
    "float8_e5m2fnuz": "fp8e5b16", "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32",
    "float32": "fp32", "double": "fp64", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int": "i32", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "void": "void",
}
type_canonicalisation_dict.update({v: v for v in list(type_canonicalisation_dict.values())})


def cdiv(x, y):
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    n = int(n)
    if n <= 1:
        return 1
    return 1 << (n - 1).bit_length()


class KernelInterface:
    """``triton.KernelInterface``: ``kernel[grid](*args)`` is ``kernel.run(*args, grid=grid, warmup=False)``;
    libraries derive their launch wrappers from it (FlagGems' ``LibEntry``)."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def warmup(self, *args, grid, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def run(self, *args, grid, warmup, **kwargs):
        raise NotImplementedError("run not implemented")


class KernelParam:
    """A parameter of a JIT function as Triton's ``JITFunction.params`` lists it."""

    def __init__(self, num: int, param, options: dict):
        from ._kernels import _is_constexpr_annotation
        self.num = num
        self._param = param
        self.name = param.name
        self.default = param.default
        self.annotation = param.annotation
        self.has_default = param.default is not param.empty
        self.is_constexpr = _is_constexpr_annotation(param.annotation)
        dns = options.get("do_not_specialize") or ()
        self.do_not_specialize = num in dns or param.name in dns
        dnsa = options.get("do_not_specialize_on_alignment") or ()
        self.do_not_specialize_on_alignment = num in dnsa or param.name in dnsa
        self.is_const = False

    def __repr__(self):
        return f"KernelParam({self.num}, {self.name!r}, constexpr={self.is_constexpr})"


class JITFunction(KernelInterface):
    """A ``@triton.jit`` kernel: ``kernel[grid](*args, **meta)`` launches it."""

    _gpusim_frontend = "triton"

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        functools.update_wrapper(self, fn)
        import inspect
        self.signature = inspect.signature(fn)
        self.params = [KernelParam(i, p, options) for i, p in enumerate(self.signature.parameters.values())]
        self.arg_names = list(self.signature.parameters)
        self.do_not_specialize = list(options.get("do_not_specialize") or ())
        self.noinline = bool(options.get("noinline", False))
        self.debug = options.get("debug")
        self.__globals__ = fn.__globals__
        self.kernel_cache = [{}]

    @functools.cached_property
    def _src_lines(self):
        import inspect
        try:
            return inspect.getsourcelines(self.fn)
        except OSError as e:
            raise ValueError("@jit functions should be defined in a Python file") from e

    @property
    def raw_src(self):
        return self._src_lines[0]

    @property
    def starting_line_number(self) -> int:
        return self._src_lines[1]

    @property
    def src(self) -> str:
        """Triton's ``JITFunction.src``: the function's source without its decorators."""
        import re
        import textwrap
        src = textwrap.dedent("".join(self.raw_src))
        m = re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE)
        return src[m.start():] if m else src

    def parse(self):
        import ast
        return ast.parse(self.src)

    @property
    def cache_key(self) -> str:
        """Triton's ``cache_key``: a hash of the function's source (here without its callees')."""
        import hashlib
        return hashlib.sha256((self.src + str(self.starting_line_number)).encode()).hexdigest()

    def __getitem__(self, grid):
        return functools.partial(self.run, grid=grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        return _run(self, grid, args, kwargs)

    def warmup(self, *args, grid, **kwargs):
        """Triton's ``warmup``: a compiled-kernel object (``n_regs``, ``n_spills``, ``metadata.shared``,
        ``metadata.num_warps`` ...) with the simulator's estimates; ``kernel[grid](*args)`` launches it.  The
        launch is lowered on copies of the array arguments (see ``_compiled``)."""
        from . import _compiled
        return _compiled.warmup(self, args, kwargs, grid, _session_gpu())

    def __call__(self, *args, **kwargs):
        from . import _core, _kernels
        if _core.ST is None:
            raise TypeError(f"{self.fn.__name__} is a @triton.jit function: launch it with "
                            f"{self.fn.__name__}[grid](...)")
        return _kernels._Helper(self.fn)(*args, **kwargs)

    def __repr__(self):
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"


def _run(kernel, grid, args, kwargs):
    """Launch ``kernel`` (a JITFunction, Autotuner or Heuristics); as Triton's launch, return the compiled kernel
    (scripts read its n_regs, n_spills, metadata.shared; libraries relaunch it with ``ck[grid](*args)``)."""
    record = bool(_trace.launch_observers)
    gpu = _session_gpu()
    try:
        tr = execute(kernel, grid, args, kwargs, record=record, gpu=gpu)
    except CompileError as e:          # gpusim's refusal at compile time: raised as Triton's class
        errors.as_triton(e)
        raise
    if tr is None:
        return None
    _trace.publish_launch(tr)
    from ._compiled import CompiledKernel
    from .runtime import driver
    ck = CompiledKernel(kernel, tr, kwargs, driver.active.get_current_target())
    ck._gpu = gpu
    ck._call = (tuple(args), dict(kwargs))
    return ck


def _session_gpu():
    """The GPU of the innermost observing session (an observer may carry ``gpu``), else the H100 preset."""
    for f in reversed(_trace.launch_observers):
        g = getattr(f, "gpu", None) or getattr(getattr(f, "__self__", None), "gpu", None)
        if g is not None:
            return g
    return "h100"


def jit(fn=None, **options):
    """``@triton.jit`` and ``@triton.jit(...)`` (options are accepted and ignored)."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)


class Config:
    """``triton.Config``: meta-parameters and launch options of one autotuning candidate."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None, **_):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self):
        return {**self.kwargs, **{k: v for k, v in (("num_warps", self.num_warps), ("num_stages", self.num_stages),
                                                    ("num_ctas", self.num_ctas), ("maxnreg", self.maxnreg))
                                  if v is not None}}

    def __repr__(self):
        return f"Config({self.kwargs}, num_warps={self.num_warps}, num_stages={self.num_stages})"

    def __str__(self):
        res = [f"{k}: {v}" for k, v in self.kwargs.items()]
        res += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                f"maxnreg: {self.maxnreg}"]
        return ", ".join(res)

    def __hash__(self):
        return hash((*self.all_kwargs().items(), self.pre_hook))

    def __eq__(self, other):
        if not isinstance(other, Config):
            return NotImplemented
        return self.all_kwargs() == other.all_kwargs() and self.pre_hook == other.pre_hook


class Autotuner(KernelInterface):
    """``@triton.autotune``: for each new key (the ``key`` arguments' values and the arguments' dtypes) every
    config is simulated on the launch's arguments and timed by the engine; the fastest is cached for the key and
    launched (Triton benchmarks each config on the GPU the same way).  See ``_autotune``."""

    _gpusim_frontend = "triton"

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, prune_configs_by=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None,
                 cache_results=False):
        # Triton 3.6's signature: libraries subclass it (fla's CachedAutotuner) and call super().__init__(...)
        self.fn = fn
        self.configs = list(configs) if configs else [Config({})]
        self.keys = list(key or [])
        self.key = self.keys
        self.arg_names = list(arg_names) if arg_names is not None else getattr(fn, "arg_names", [])
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.pre_hook = pre_hook or (lambda kwargs, reset_only=False: 0)
        self.post_hook = post_hook or (lambda kwargs, exception: 0)
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.use_cuda_graph, self.cache_results = use_cuda_graph, cache_results
        self.num_warmups, self.num_reps = warmup, rep
        self._do_bench = do_bench
        self.base_fn = fn
        while hasattr(self.base_fn, "fn") and not isinstance(self.base_fn, types.FunctionType):
            self.base_fn = self.base_fn.fn
        prune_configs_by = prune_configs_by or {}
        self.perf_model = prune_configs_by.get("perf_model")
        self.configs_top_k = prune_configs_by.get("top_k", 1.0)
        self.early_config_prune = prune_configs_by.get("early_config_prune")
        self.fn_name = getattr(fn, "__name__", None)
        self.cache: dict = {}                 # key -> the chosen Config (as Triton's)
        self._gpusim_tuned: dict = {}         # key -> what the simulation found (_autotune._Tuned)
        self.best_config = None
        self.configs_timings = None

    def __getitem__(self, grid):
        return functools.partial(self.run, grid=grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        return _run(self, grid, args, kwargs)

    def _bench(self, *args, config, **meta):
        """Triton's ``_bench``: one config's simulated time in ms, ``[median, p20, p80]`` (``meta`` holds ``grid``)."""
        from . import _autotune, _launch
        return _autotune.bench(self, args, config, meta, execute_spec=_launch.execute, resolve=_launch.resolve,
                               gpu=_session_gpu())

    def prune_configs(self, kwargs: dict) -> list:
        """Triton's ``prune_configs``: ``early_config_prune`` then ``perf_model``'s top_k (on ``self.nargs``)."""
        from ._autotune import _prune
        return _prune(self, dict(getattr(self, "nargs", None) or {}), kwargs)


def autotune(configs, key=None, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=False):
    return lambda fn: Autotuner(fn, getattr(fn, "arg_names", None), configs, key, reset_to_zero, restore_value,
                                pre_hook=pre_hook, post_hook=post_hook, prune_configs_by=prune_configs_by,
                                warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                                cache_results=cache_results)


class Heuristics(KernelInterface):
    """``@triton.heuristics({"NAME": lambda args: ...})``: meta-parameters computed from the arguments."""

    _gpusim_frontend = "triton"

    def __init__(self, fn, arg_names, values=None):
        if values is None:                     # gpusim's older (fn, values)
            arg_names, values = None, arg_names
        self.fn = fn
        self.values = dict(values)
        self.arg_names = list(arg_names) if arg_names is not None else getattr(fn, "arg_names", [])

    def __getitem__(self, grid):
        return functools.partial(self.run, grid=grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        return _run(self, grid, args, kwargs)


def heuristics(values):
    return lambda fn: Heuristics(fn, getattr(fn, "arg_names", None), values)


from ._errors import (CompilationError, InterpreterError, OutOfResources, TritonError,  # noqa: E402
                      CompileTimeAssertionFailure, UnsupportedLanguageConstruct, PTXASError, AutotunerError)
from . import _stdlib  # noqa: E402
from ._stdlib import constexpr_function  # noqa: E402
_stdlib.HELPER = _kernels._Helper           # the standard library's JIT helpers are called as any helper
from . import _errors as errors, compiler, knobs  # noqa: E402  (``triton.errors``, ``triton.compiler``, ``triton.knobs``)

# ``triton.runtime``'s names, as Triton exports them there too (``triton.runtime.Autotuner`` ...)
for _n in ("Autotuner", "Config", "Heuristics", "autotune", "heuristics", "JITFunction", "KernelInterface",
           "TensorWrapper", "reinterpret", "OutOfResources", "InterpreterError"):
    setattr(runtime, _n, globals()[_n])
del _n
# ``triton.runtime.jit`` is Triton's module (``triton.runtime.jit.TensorWrapper``, ``.type_canonicalisation_dict``,
# ``.jit``): this package, which has those names
runtime.jit = sys.modules[__name__]
runtime.errors = errors
compiler.errors = errors

_kernels.register_package(sys.modules[__name__])      # a kernel's ``triton`` global is rebound to this package
