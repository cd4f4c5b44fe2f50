"""``JITFunction.warmup(...)``: a compiled-kernel object carrying the simulator's resource estimates.

Triton's ``warmup`` compiles without launching and returns a ``CompiledKernel``; tutorial 02 reads its
``n_regs`` and ``metadata.shared`` (after ``_init_handles()``) to size a persistent grid, then launches it with
``kernel[grid](*all_args)``.  Here the kernel is executed and lowered on private copies of the array arguments
(nothing the caller holds is written) over the given grid, and the object reports the lowering's estimates:
``n_regs`` (registers per thread, ``_resources.register_estimate``, capped at 255), ``n_spills`` (the excess, as
ptxas spills it), ``metadata.shared`` (bytes of shared memory per CTA, ``shared_estimate``), ``metadata.num_warps``
/ ``num_stages`` / ``num_ctas`` / ``name`` / ``target``.  With the real compiler in the loop (``gpusim.compilers``,
mode auto or real) ``n_regs`` and ``metadata.shared`` are Triton's own (ptxas' register count, at least 16) and
``n_spills`` is Triton's: the local memory bytes per thread / 4.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

KernelMetadata = namedtuple("KernelMetadata", ["name", "num_warps", "num_stages", "num_ctas", "shared", "target",
                                               "maxnreg", "cluster_dims", "hash", "debug", "enable_fp_fusion"])


def _private(a):
    if isinstance(a, np.ndarray):
        return a.copy()
    if (type(a).__module__ or "").startswith("torch"):
        return a.clone()
    return a


class CompiledKernel:
    """What ``warmup`` returns; ``kernel[grid](*args)`` launches the kernel with the warmup's options."""

    def __init__(self, kernel, trace, options: dict, target):
        self.kernel = kernel
        self.trace = trace
        self.options = dict(options)
        meta = trace.meta
        self.name = trace.name
        self.n_regs = int(trace.regs_per_thread)
        self.n_spills = int(meta.get("registers", {}).get("spilled_registers", 0))
        self.n_max_threads = 1024
        self.metadata = KernelMetadata(
            name=trace.name, num_warps=int(meta["num_warps"]), num_stages=int(meta["num_stages"]),
            num_ctas=int(options.get("num_ctas", 1) or 1), shared=int(trace.shared_bytes_per_cta), target=target,
            maxnreg=options.get("maxnreg"), cluster_dims=(1, 1, 1), hash="gpusim", debug=False,
            enable_fp_fusion=True)
        self.asm: dict = {}
        self.module = None
        self.function = None

    def _init_handles(self):
        return None

    @property
    def packed_metadata(self):
        return self.metadata

    def __getitem__(self, grid):
        def runner(*args, stream=None):
            from . import _launch
            return self._launch(grid, args)
        return runner

    def _launch(self, grid, args):
        from . import _launch
        from .. import trace as _trace
        spec = _launch.resolve(self.kernel)
        names = [p.name for p in spec.params]
        kwargs = {k: v for k, v in self.options.items() if k in _launch._META_KEYS}
        # Triton's launcher takes every argument, constexprs too; a constexpr given here must match the warmup's.
        # Given only the other arguments (FlagGems' LibEntry relaunches so), the constexprs are the first launch's.
        plain = [n for n in names if n not in spec.constexprs]
        if len(args) < len(names) and len(args) == len(plain) and self._call is not None:
            a0, k0 = self._call
            first = dict(zip(names, a0))
            first.update(k0)
            kw = {n: first[n] for n in spec.constexprs if n in first}
            kw.update(zip(plain, args))
            kw.update({k: v for k, v in k0.items() if k in _launch._META_KEYS})
        else:
            kw = dict(zip(names, args))
        kw.update(kwargs)
        tr = _launch.execute(self.kernel, grid, [], kw, record=bool(_trace.launch_observers), gpu=self._gpu)
        if tr is not None:
            _trace.publish_launch(tr)

    _gpu = "h100"
    _call = None           # (args, kwargs) of the launch that returned this kernel

    def __repr__(self):
        return (f"CompiledKernel({self.name}, n_regs={self.n_regs}, n_spills={self.n_spills}, "
                f"shared={self.metadata.shared}, num_warps={self.metadata.num_warps})")


def warmup(kernel, args, kwargs, grid, gpu):
    """``kernel.warmup(*args, grid=grid, **kwargs)``: lower the launch on private copies of its arrays."""
    from . import _launch
    from .runtime import driver
    priv_args = [_private(a) for a in args]
    priv_kw = {k: _private(v) for k, v in kwargs.items()}
    tr = _launch.execute(kernel, grid, priv_args, priv_kw, record=True, gpu=gpu)
    ck = CompiledKernel(kernel, tr, kwargs, driver.active.get_current_target())
    ck._gpu = gpu
    return ck
