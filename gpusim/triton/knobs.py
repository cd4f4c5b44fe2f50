"""``triton.knobs`` (Triton 3.4+): the settings namespace scripts read and set, with Triton 3.6's names.

    triton.knobs.autotuning.print = True          # gpusim prints what Triton's autotuner prints
    triton.knobs.cache.dir = "/tmp/cache"         # accepted (and exported to TRITON_CACHE_DIR, as Triton does)
    with triton.knobs.runtime.scope(): ...

Each knob reads its environment variable until set; setting one also sets the variable (``propagate_env``), and
``knobs.<group>.<name> = knobs.env`` goes back to the variable.  gpusim honours ``autotuning.print``; the others
are accepted and kept (they steer Triton's compiler, cache and backends, which gpusim does not run).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Optional


class Env:
    pass


env = Env()
propagate_env: bool = True
_NOTHING = object()


def getenv(key: str, default=None):
    v = os.getenv(key)
    return default if v is None or v.strip() == "" else v.strip()


def getenv_bool(key: str, default=False):
    v = getenv(key)
    return default if v is None else v.lower() in ("1", "true", "on")


def setenv(key: str, value: Optional[str]) -> None:
    if not propagate_env:
        return
    if value is not None:
        os.environ[key] = value
    elif key in os.environ:
        del os.environ[key]


def toenv(val: Any):
    if val is None:
        return (None,)
    t = type(val)
    if t is bool:
        return ("1" if val else "0",)
    if t is str:
        return (val,)
    if t is int:
        return (str(val),)
    return None


class env_base:
    def __init__(self, key: str) -> None:
        self.key = key

    def __set_name__(self, objclass, name: str) -> None:
        self.name = name

    def __get__(self, obj, objclass=None):
        if obj is None:
            return self
        py_val = obj.__dict__.get(self.name, _NOTHING)
        if py_val is _NOTHING:
            return self.get()
        return self.transform(py_val)

    def get(self):
        raise NotImplementedError()

    def __set__(self, obj, value) -> None:
        if isinstance(value, Env):
            obj.__dict__.pop(self.name, None)
        else:
            obj.__dict__[self.name] = value
            if env_val := toenv(value):
                setenv(self.key, env_val[0])

    def __delete__(self, obj) -> None:
        obj.__dict__.pop(self.name, None)

    def transform(self, val):
        return val


class env_str(env_base):
    def __init__(self, key: str, default: str):
        super().__init__(key)
        self.default = default

    def get(self) -> str:
        return getenv(self.key, self.default)


class env_str_callable_default(env_base):
    def __init__(self, key: str, default_factory):
        super().__init__(key)
        self.default_factory = default_factory

    def get(self) -> str:
        v = getenv(self.key)
        return self.default_factory() if v is None else v


class env_bool(env_base):
    def __init__(self, key: str, default: bool = False) -> None:
        super().__init__(key)
        self.default = default

    def get(self) -> bool:
        return getenv_bool(self.key, self.default)


class env_int(env_base):
    def __init__(self, key: str, default: int = 0) -> None:
        super().__init__(key)
        self.default = default

    def get(self) -> int:
        v = getenv(self.key)
        if v is None:
            return self.default
        try:
            return int(v)
        except ValueError as exc:
            raise RuntimeError(f"Unable to use {self.key}={v}: expected int") from exc


class env_class(env_base):
    def __init__(self, key: str, type: str) -> None:
        super().__init__(key)
        self.type = type

    def get(self):
        v = getenv(self.key)
        if v is None:
            return None
        comps = v.split(":", 1)
        if len(comps) != 2:
            raise RuntimeError(f"Unable to read {self.key}: '{v}' isn't of the form MODULE:CLASS")
        import importlib
        return getattr(importlib.import_module(comps[0]), comps[1])


class env_opt_str(env_base):
    def get(self) -> Optional[str]:
        return getenv(self.key)


class env_opt_bool(env_base):
    def get(self):
        return getenv_bool(self.key, None)


@dataclass
class NvidiaTool:
    path: str
    version: str


class env_nvidia_tool(env_base):
    """An NVIDIA tool's path (``knobs.nvidia.ptxas.path``): the variable's, else the tool's name (gpusim runs no
    tool through these knobs); its version is that of the ptxas Triton 3.6 ships (12.8), which scripts parse
    (``triton._internal_testing.supports_tma``)."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        super().__init__(f"TRITON_{binary.upper().replace('-', '_')}_PATH")

    def get(self) -> NvidiaTool:
        return self.transform(getenv(self.key))

    def transform(self, path) -> NvidiaTool:
        return path if isinstance(path, NvidiaTool) else NvidiaTool(path or self.binary, "12.8")


class HookChain:
    """A chain of hooks called in order (``knobs.runtime.launch_enter_hook.add(f)``)."""

    def __init__(self, reversed: bool = False):
        self.calls: list = []
        self.reversed = reversed

    def add(self, func) -> None:
        if func not in self.calls:
            self.calls.append(func)

    def remove(self, func) -> None:
        if func in self.calls:
            self.calls.remove(func)

    def __call__(self, *args, **kwargs):
        for call in (self.calls if not self.reversed else reversed(self.calls)):
            call(*args, **kwargs)


class base_knobs:
    @property
    def knob_descriptors(self) -> dict:
        return {k: v for k, v in type(self).__dict__.items() if isinstance(v, env_base)}

    @property
    def knobs(self) -> dict:
        return {k: getattr(self, k) for k in self.knob_descriptors}

    def copy(self):
        res = type(self)()
        res.__dict__.update(self.__dict__)
        return res

    def reset(self):
        for knob in self.knob_descriptors:
            delattr(self, knob)
        return self

    @contextmanager
    def scope(self):
        initial_env = {knob.key: getenv(knob.key) for knob in self.knob_descriptors.values()}
        orig = dict(self.__dict__)
        try:
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(orig)
            for k, v in initial_env.items():
                if v is not None:
                    os.environ[k] = v
                elif k in os.environ:
                    del os.environ[k]


class build_knobs(base_knobs):
    cc = env_opt_str("CC")
    cudacrt_path = env_opt_str("TRITON_CUDACRT_PATH")
    cudart_path = env_opt_str("TRITON_CUDART_PATH")
    impl = None

    @property
    def backend_dirs(self) -> set:
        return {p for p in (self.cudacrt_path, self.cudart_path) if p is not None}


class redis_knobs(base_knobs):
    key_format = env_str("TRITON_REDIS_KEY_FORMAT", "triton:{key}:{filename}")
    host = env_str("TRITON_REDIS_HOST", "localhost")
    port = env_int("TRITON_REDIS_PORT", 6379)


class cache_knobs(base_knobs):
    home_dir = env_str("TRITON_HOME", os.path.expanduser("~/"))
    dump_dir = env_str_callable_default("TRITON_DUMP_DIR", lambda: cache.get_triton_dir("dump"))
    override_dir = env_str_callable_default("TRITON_OVERRIDE_DIR", lambda: cache.get_triton_dir("override"))
    dir = env_str_callable_default("TRITON_CACHE_DIR", lambda: cache.get_triton_dir("cache"))
    manager_class = env_class("TRITON_CACHE_MANAGER", "CacheManager")
    remote_manager_class = env_class("TRITON_REMOTE_CACHE_BACKEND", "RemoteCacheBackend")

    def get_triton_dir(self, dirname: str) -> str:
        return os.path.join(self.home_dir, ".triton", dirname)


class compilation_knobs(base_knobs):
    override = env_bool("TRITON_KERNEL_OVERRIDE")
    dump_ir = env_bool("TRITON_KERNEL_DUMP")
    dump_ir_extract_di_local_variables = env_bool("LLVM_EXTRACT_DI_LOCAL_VARIABLES")
    store_binary_only = env_bool("TRITON_STORE_BINARY_ONLY")
    always_compile = env_bool("TRITON_ALWAYS_COMPILE")
    use_ir_loc = env_opt_str("USE_IR_LOC")
    enable_asan = env_bool("TRITON_ENABLE_ASAN")
    disable_line_info = env_bool("TRITON_DISABLE_LINE_INFO")
    front_end_debugging = env_bool("TRITON_FRONT_END_DEBUGGING")
    allow_non_constexpr_globals = env_bool("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")
    instrumentation_mode: str = env_str("TRITON_INSTRUMENTATION_MODE", "").get()
    listener = None


class autotuning_knobs(base_knobs):
    cache = env_bool("TRITON_CACHE_AUTOTUNING")
    print = env_bool("TRITON_PRINT_AUTOTUNING")


class runtime_knobs(base_knobs):
    interpret = env_bool("TRITON_INTERPRET")
    debug: bool = env_bool("TRITON_DEBUG").get()
    override_arch = env_opt_str("TRITON_OVERRIDE_ARCH")
    launch_enter_hook = HookChain()
    launch_exit_hook = HookChain(reversed=True)
    kernel_load_start_hook = HookChain()
    kernel_load_end_hook = HookChain(reversed=True)
    jit_cache_hook = None
    jit_post_compile_hook = None
    add_stages_inspection_hook = None


class language_knobs(base_knobs):
    fp32_default = env_opt_str("TRITON_F32_DEFAULT")
    default_fp_fusion = env_bool("TRITON_DEFAULT_FP_FUSION", True)


class nvidia_knobs(base_knobs):
    cuobjdump = env_nvidia_tool("cuobjdump")
    nvdisasm = env_nvidia_tool("nvdisasm")
    ptxas = env_nvidia_tool("ptxas")
    ptxas_blackwell = env_nvidia_tool("ptxas-blackwell")
    dump_nvptx = env_bool("NVPTX_ENABLE_DUMP")
    disable_ptxas_opt = env_bool("DISABLE_PTXAS_OPT")
    ptxas_options = env_opt_str("PTXAS_OPTIONS")
    mock_ptx_version = env_opt_str("TRITON_MOCK_PTX_VERSION")
    dump_ptxas_log = env_bool("TRITON_DUMP_PTXAS_LOG")
    libdevice_path = env_opt_str("TRITON_LIBDEVICE_PATH")
    libcuda_path = env_opt_str("TRITON_LIBCUDA_PATH")


class amd_knobs(base_knobs):
    use_buffer_ops = env_bool("AMDGCN_USE_BUFFER_OPS", True)
    use_buffer_atomics = env_bool("AMDGCN_USE_BUFFER_ATOMICS", True)
    buffer_ops_analyze_small_tensor_range = env_bool("AMDGCN_ANALYZE_SMALL_TENSOR_RANGE", False)
    dump_amdgcn = env_bool("AMDGCN_ENABLE_DUMP")
    libhip_path = env_opt_str("TRITON_LIBHIP_PATH")
    use_block_pingpong = env_opt_bool("TRITON_HIP_USE_BLOCK_PINGPONG")
    use_in_thread_transpose = env_opt_bool("TRITON_HIP_USE_IN_THREAD_TRANSPOSE")
    use_async_copy = env_bool("TRITON_HIP_USE_ASYNC_COPY")
    scalarize_packed_fops = env_bool("AMDGCN_SCALARIZE_PACKED_FOPS")


class proton_knobs(base_knobs):
    disable = env_bool("TRITON_PROTON_DISABLE", False)
    cupti_lib_dir = env_str("TRITON_CUPTI_LIB_PATH", "")
    enable_nvtx = env_bool("TRITON_ENABLE_NVTX", True)


build = build_knobs()
redis = redis_knobs()
cache = cache_knobs()
compilation = compilation_knobs()
autotuning = autotuning_knobs()
runtime = runtime_knobs()
language = language_knobs()
nvidia = nvidia_knobs()
amd = amd_knobs()
proton = proton_knobs()


def refresh_knobs():
    runtime.debug = env_bool("TRITON_DEBUG").get()
    compilation.instrumentation_mode = env_str("TRITON_INSTRUMENTATION_MODE", "").get()
