"""``gpusim bench SCRIPT``: run a Triton tutorial (a script with a ``perf_report`` benchmark section) unchanged on
the simulated GPU.

While the script runs, ``import triton`` (and ``triton.language``, ``triton.testing``, ``triton.runtime``,
``triton.tools...``, ``triton.language.extra...``) gives ``gpusim.triton``'s modules, as ``NUMBA_ENABLE_CUDASIM``
hands numba's simulator to ``from numba import cuda``; other ``triton.*`` modules (the compiler, the profiler)
raise ImportError.  So ``triton.testing.do_bench`` returns simulated time and ``benchmark.run(...)`` prints the
simulated table and writes its plotly chart (``--save-path DIR``, default ``bench_out``) without an edit to the
file.  ``--gpu`` picks the preset (``triton.runtime.driver.active``).  Torch tensors stay on the CPU:
``driver.active.get_active_torch_device()`` is ``cpu``.  A script that calls CUDA through torch
(``torch.cuda.synchronize()``) fails at that line (a KernelFileError naming it).
"""
from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import sys
from pathlib import Path

from .compilers._displaced import Displaced
from .errors import KernelFileError

#: the ``triton`` modules a script may import, and the gpusim modules that stand in for them
ALIASES = {
    "triton": "gpusim.triton", "triton.language": "gpusim.triton.language", "triton.testing": "gpusim.triton.testing",
    "triton.runtime": "gpusim.triton.runtime", "triton.tools": "gpusim.triton.tools",
    "triton.tools.tensor_descriptor": "gpusim.triton.tools.tensor_descriptor",
    "triton.language.extra": "gpusim.triton.language.extra",
    "triton.language.extra.libdevice": "gpusim.triton.language.extra.libdevice",
    "triton.language.extra.cuda": "gpusim.triton.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "gpusim.triton.language.extra.cuda.libdevice",
}


class _NoOtherTriton:
    """While gpusim.triton stands in for triton, the real package's other modules are not importable."""

    def find_spec(self, name, path=None, target=None):
        if (name == "triton" or name.startswith("triton.")) and name not in ALIASES:
            raise ImportError(f"{name}: not available under gpusim bench (gpusim.triton stands in for triton: "
                              f"{', '.join(sorted(ALIASES))})")
        return None


@contextlib.contextmanager
def triton_is_gpusim():
    """``import triton`` gives gpusim.triton inside the block (sys.modules restored after)."""
    mods = {}
    for real, ours in ALIASES.items():
        mods[real] = sys.modules.get(ours) or importlib.import_module(ours)
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
        with _UserCode(str(p)), triton_is_gpusim():
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
