"""``gpusim bench SCRIPT``: run a Triton tutorial (a script with a ``perf_report`` benchmark section) unchanged on
the simulated GPU.

While the script runs, ``import triton`` (and ``triton.language``, ``triton.testing``, ``triton.runtime``,
``triton.tools...``, ``triton.language.extra...``) gives ``gpusim.triton``'s modules, as ``NUMBA_ENABLE_CUDASIM``
hands numba's simulator to ``from numba import cuda``; other ``triton.*`` modules (the compiler, the profiler)
raise ImportError.  So ``triton.testing.do_bench`` returns simulated time and ``benchmark.run(...)`` prints the
simulated table and writes its plotly chart (``--save-path DIR``, default ``bench_out``) without an edit to the
file.  ``--gpu`` picks the preset (``triton.runtime.driver.active``).  Torch tensors stay on the CPU:
``driver.active.get_active_torch_device()`` is ``cpu``, and while the script runs the simulated GPU is torch's
``cuda`` device (``torch_cuda_is_host``): ``device="cuda"``, ``.cuda()`` and ``.to("cuda")`` give host tensors,
``tensor.is_cuda`` is true and ``tensor.device`` is ``cuda:0``, and ``torch.cuda``'s queries (``is_available``, ``synchronize``,
``get_device_properties`` ...) answer for the simulated GPU.  CUDA streams, events and graphs are not there (torch's
own error, at the script's line).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import runpy
import sys
from pathlib import Path

from .compilers._displaced import Displaced
from .errors import KernelFileError

#: the ``triton`` modules a script may import, and the gpusim modules that stand in for them
ALIASES = {
    "triton": "gpusim.triton", "triton.language": "gpusim.triton.language", "triton.testing": "gpusim.triton.testing",
    "triton.language.core": "gpusim.triton.language", "triton.language.standard": "gpusim.triton.language",
    "triton.runtime": "gpusim.triton.runtime", "triton.tools": "gpusim.triton.tools",
    # where libraries find the decorators' classes (torch.library.wrap_triton: isinstance(k, (JITFunction, Autotuner)))
    "triton.runtime.autotuner": "gpusim.triton", "triton.runtime.jit": "gpusim.triton",
    "triton.profiler": "gpusim.triton.profiler",
    "triton._C": "gpusim.triton._libtriton", "triton._C.libtriton": "gpusim.triton._libtriton",
    "triton.tools.tensor_descriptor": "gpusim.triton.tools.tensor_descriptor",
    "triton.language.extra": "gpusim.triton.language.extra",
    "triton.language.extra.libdevice": "gpusim.triton.language.extra.libdevice",
    "triton.language.extra.cuda": "gpusim.triton.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "gpusim.triton.language.extra.cuda.libdevice",
    # Triton's error classes (scripts catch OutOfResources / CompilationError) and its settings namespace
    "triton.errors": "gpusim.triton._errors", "triton.runtime.errors": "gpusim.triton._errors",
    "triton.compiler": "gpusim.triton.compiler", "triton.compiler.errors": "gpusim.triton._errors",
    "triton.knobs": "gpusim.triton.knobs", "triton.language.math": "gpusim.triton.language.math",
    "triton.language.random": "gpusim.triton.language.random",
}


#: modules of the real triton package that are plain Python over torch (no compiler, no GPU): while gpusim stands in
#: for triton they are loaded from the installed package's own file, when it is installed
#: (tutorial 10: ``from triton.tools.mxfp import MXFP4Tensor``)
REAL_PURE = {"triton.tools.mxfp": ("tools", "mxfp.py"), "triton._internal_testing": ("_internal_testing.py",)}


def _real_pure_spec(name: str):
    """The spec of ``name`` (in ``REAL_PURE``) from the installed triton package's file, or None."""
    import importlib.machinery
    pkg = importlib.machinery.PathFinder.find_spec("triton")
    if pkg is None or not pkg.submodule_search_locations:
        return None
    f = Path(list(pkg.submodule_search_locations)[0]).joinpath(*REAL_PURE[name])
    return importlib.util.spec_from_file_location(name, f) if f.is_file() else None


class _NoOtherTriton:
    """While gpusim.triton stands in for triton, the real package's other modules are not importable (but for the
    plain-Python ones of ``REAL_PURE``)."""

    def find_spec(self, name, path=None, target=None):
        if name in REAL_PURE:
            spec = _real_pure_spec(name)
            if spec is not None:
                return spec
        if (name == "triton" or name.startswith("triton.")) and name not in ALIASES:
            e = ImportError(f"{name}: not available under gpusim (gpusim.triton stands in for triton: "
                            f"{', '.join(sorted(ALIASES))})")
            e.gpusim_refusal = True          # the user's import, refused on purpose: reported at its line
            raise e
        return None


@contextlib.contextmanager
def triton_is_gpusim():
    """``import triton`` gives gpusim.triton inside the block (sys.modules restored after)."""
    mods = {}
    for real, ours in ALIASES.items():
        mods[real] = sys.modules.get(ours) or importlib.import_module(ours)
    # ``import triton.runtime.autotuner as m`` reads the submodule as an attribute of its parent
    for real, mod in mods.items():
        parent, _, leaf = real.rpartition(".")
        if parent in mods and not hasattr(mods[parent], leaf):
            setattr(mods[parent], leaf, mod)
    guard = _NoOtherTriton()
    # the real compiler gets the real modules back while it compiles a kernel launched inside this block
    shelf = Displaced("triton", guard)
    for k in list(shelf.real):
        sys.modules.pop(k, None)
    sys.modules.update(mods)
    sys.meta_path.insert(0, guard)
    try:
        with shelf:
            yield
    finally:
        sys.meta_path.remove(guard)
        shelf.restore()


class _DeviceProperties:
    """``torch.cuda.get_device_properties(...)`` of the simulated GPU (the fields scripts read)."""

    def __init__(self, cfg):
        self.name = cfg.chip.name
        self.major, self.minor = cfg.chip.compute_capability
        self.multi_processor_count = cfg.chip.sm_count
        self.warp_size = cfg.sm.warp_size
        self.max_threads_per_multi_processor = cfg.sm.max_threads
        self.regs_per_multiprocessor = cfg.sm.registers
        self.shared_memory_per_block_optin = cfg.sm.max_shared_per_cta_bytes
        self.shared_memory_per_multiprocessor = cfg.sm.max_shared_per_sm_bytes
        self.L2_cache_size = cfg.l2.size_bytes

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"multi_processor_count={self.multi_processor_count}, L2_cache_size={self.L2_cache_size >> 20}MB)")


class _OneDevice:
    """``torch.cuda.device(i)`` on the simulated GPU: a context manager that selects the one device there is."""

    def __init__(self, device=None):
        self.idx = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Stream:
    """A CUDA stream of the simulated GPU: launches run in order, so there is nothing to wait for."""

    cuda_stream = 0

    def synchronize(self):
        return None

    def wait_stream(self, other):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@contextlib.contextmanager
def torch_cuda_is_host():
    """Inside the block torch's ``cuda`` device is the simulated GPU, its tensors in host memory (see the module's
    docstring); nothing happens when torch is not installed, or when it has a CUDA device of its own."""
    if importlib.util.find_spec("torch") is None:
        yield
        return
    import torch
    if torch.cuda.is_available():
        yield
        return
    from torch.overrides import TorchFunctionMode
    from .triton.runtime import _current_gpu
    is_cuda = torch._C.TensorBase.__dict__["is_cuda"]
    device_of = torch._C.TensorBase.__dict__["device"]
    cpu = torch.device("cpu")
    # a tensor of the simulated GPU is on device cuda:0 (the one GPU): `fp4_vals[x.device.index]`,
    # `torch.cuda.device(x.device.index)`, `assert x.device.type == "cuda"` (unsloth); torch calls given that device
    # make host tensors, and gpusim reads where the memory really is (``_buffers.device_type``)
    cuda0 = torch.device("cuda", 0)

    def host(d):
        if isinstance(d, torch.device):
            return cpu if d.type == "cuda" else d
        if isinstance(d, str) and (d == "cuda" or d.startswith("cuda:")):
            return cpu
        return d

    class _CudaIsHost(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            owner = getattr(func, "__self__", None)
            if owner is is_cuda:
                return True
            if owner is device_of:
                d = func(*args, **(kwargs or {}))
                return cuda0 if d.type == "cpu" else d
            if func is torch.Tensor.cuda:
                return args[0]
            kwargs = kwargs or {}
            if "device" in kwargs:
                kwargs = {**kwargs, "device": host(kwargs["device"])}
            if func is torch.Tensor.to:
                args = tuple(host(a) for a in args)
            return func(*args, **kwargs)

    answers = {
        "is_available": lambda: True, "is_initialized": lambda: True, "device_count": lambda: 1,
        "current_device": lambda: 0, "set_device": lambda device=None: None, "synchronize": lambda device=None: None,
        "get_device_name": lambda device=None: _current_gpu().chip.name,
        "get_device_capability": lambda device=None: tuple(_current_gpu().chip.compute_capability),
        "get_device_properties": lambda device=None: _DeviceProperties(_current_gpu()),
        "manual_seed": lambda seed: None, "manual_seed_all": lambda seed: None, "empty_cache": lambda: None,
        # library wrappers' `with torch.cuda.device(x.device.index):` / `with torch.cuda.stream(s):`: the one GPU
        "device": _OneDevice, "stream": lambda stream=None: contextlib.nullcontext(),
        "current_stream": lambda device=None: _Stream(), "default_stream": lambda device=None: _Stream(),
        "Stream": lambda *a, **k: _Stream(),
        "memory_allocated": lambda device=None: 0, "max_memory_allocated": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
    }
    # torch's own modules (torch._dynamo, imported by torch.compiler.disable / torch.compile) probe for the triton
    # package and import its compiler (triton.backends, triton.compiler): under the stand-in they see no triton, as
    # on a host without it, instead of failing at the import
    import builtins
    import torch.utils._triton as torch_triton
    has_triton = torch_triton.has_triton_package
    torch_triton.has_triton_package = _no_triton_package
    real_import = builtins.__import__

    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name.partition(".")[0] == "triton" and globals is not None and \
                str(globals.get("__name__", "")).startswith(_TORCH_COMPILER):
            raise ImportError(f"No module named {name!r} (torch's compiler sees no triton under gpusim)", name=name)
        return real_import(name, globals, locals, fromlist, level)
    builtins.__import__ = import_
    # torch.compile'd host code runs eagerly (same values: dynamo cannot trace tensors that say they are on cuda
    # while they live in host memory)
    real_compile = torch.compile
    torch.compile = _eager_compile
    saved = {k: torch.cuda.__dict__.get(k) for k in answers}
    for k, f in answers.items():
        setattr(torch.cuda, k, f)
    # torch.set_default_device("cuda") (Triton-Puzzles' GPU mode): factory functions then make host tensors. Torch
    # keeps its default-device mode below every other mode, so the device is translated where it is set
    real_set_default = torch.set_default_device
    default_before = torch.get_default_device()
    torch.set_default_device = functools.wraps(real_set_default)(lambda device: real_set_default(host(device)))
    # torch.library.wrap_triton(kernel)[grid](...) launches the kernel itself, as in eager mode with plain tensors
    wrap = None
    try:
        import torch._library.triton as wrap
        wrap_before = wrap.is_wrap_triton_enabled()
        wrap.wrap_triton_enabled.value = False
    except (ImportError, AttributeError):
        wrap = None
    # an operator's CUDA kernel (``torch.library.impl(lib, "op", "CUDA")``, ``custom_op(device_types="cuda")``)
    # serves the host tensors that stand for cuda ones: registered for CPU too
    real_impl = torch.library.Library.impl
    # the dispatcher runs an operator's Python kernel without the script's torch-function modes: the kernel is
    # wrapped to run inside this one again (its tensors say cuda there too: `x.is_cuda`, `x.device.index`)
    torch.library.Library.impl = _cuda_impl_on_host(real_impl, _CudaIsHost)
    try:
        with _CudaIsHost():
            yield
    finally:
        torch.set_default_device = real_set_default
        if torch.get_default_device() != default_before:
            real_set_default(default_before)
        torch.library.Library.impl = real_impl
        for k, f in saved.items():
            setattr(torch.cuda, k, f)
        torch_triton.has_triton_package = has_triton
        builtins.__import__ = real_import
        torch.compile = real_compile
        if wrap is not None:
            wrap.wrap_triton_enabled.value = wrap_before


def _in_mode(fn, mode):
    """``fn`` run inside a fresh ``mode`` (a torch-function mode) when called."""
    if not callable(fn):
        return fn

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with mode():
            return fn(*args, **kwargs)
    return run


def _cuda_impl_on_host(real_impl, mode):
    served = set()          # (namespace, op): its CUDA kernel also serves CPU (a CPU kernel of the script's yields)

    def impl(self, op_name, fn, dispatch_key="", **kw):
        fn = _in_mode(fn, mode)
        key = dispatch_key or self.dispatch_key
        op = (self.ns, str(getattr(op_name, "_name", op_name)).split("::")[-1])
        if key == "CPU" and op in served:
            return None
        out = real_impl(self, op_name, fn, dispatch_key, **kw)
        if key == "CUDA" and not _has_kernel(f"{op[0]}::{op[1]}", "CPU"):
            real_impl(self, op_name, fn, "CPU", **kw)
            served.add(op)
        return out
    return impl


def _has_kernel(qualname: str, key: str) -> bool:
    import torch
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(qualname, key))
    except (AttributeError, RuntimeError):
        return False


def _no_triton_package() -> bool:
    return False


def _eager_compile(model=None, **options):
    """``torch.compile`` while gpusim stands in: the function (or module) itself, as ``@torch.compile``,
    ``torch.compile(fn, ...)`` and ``torch.compile(...)(fn)`` give it."""
    if model is None:
        return lambda m: m
    return model


#: torch's compiler stack (torch.compile, torch.compiler.disable): under the stand-in it finds no triton package
_TORCH_COMPILER = ("torch._inductor", "torch._dynamo", "torch.utils._triton")


def run_script(path: str, gpu: str = "h100", save_path: str | None = "bench_out") -> dict:
    """Run a script as ``__main__`` with triton aliased to gpusim.triton on ``gpu``; its perf_report runs write
    under ``save_path`` (unless the script names its own).  Returns the script's globals."""
    from .config import load_gpu
    from .kernelfile import _UserCode
    from .triton.runtime import driver
    p = Path(path)
    if not p.is_file():
        raise KernelFileError(f"script {path!r} does not exist" if not p.exists() else f"{path}: not a file")
    cfg = load_gpu(gpu)
    old_env = os.environ.get("GPUSIM_BENCH_SAVE_PATH")
    old_gpu = driver.active._gpu
    old_argv = sys.argv
    try:
        if save_path:
            os.environ["GPUSIM_BENCH_SAVE_PATH"] = save_path
        driver.active.set_gpu(cfg)
        sys.argv = [str(p)]
        with _UserCode(str(p)), triton_is_gpusim(), torch_cuda_is_host():
            return runpy.run_path(str(p), run_name="__main__")
    finally:
        sys.argv = old_argv
        driver.active.set_gpu(old_gpu)
        if old_env is None:
            os.environ.pop("GPUSIM_BENCH_SAVE_PATH", None)
        else:
            os.environ["GPUSIM_BENCH_SAVE_PATH"] = old_env


def cmd_bench(a) -> int:
    run_script(a.script, a.gpu, a.save_path)
    if a.save_path and os.path.isdir(a.save_path):
        print(f"wrote {a.save_path}/", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="run a Triton tutorial's benchmark (perf_report / do_bench) on the simulated "
                                     "GPU: import triton gives gpusim.triton")
    b.add_argument("script")
    b.add_argument("--gpu", default="h100", help="preset name (gpusim gpus) or a .toml config file")
    b.add_argument("--save-path", default="bench_out", metavar="DIR",
                   help="where perf_report writes its tables and plotly charts (default bench_out)")
    b.set_defaults(fn=cmd_bench)
