"""Errors a user sees, each naming where it applies: file:line, kernel, block and thread (or program id)."""
from __future__ import annotations


class GpusimError(Exception):
    """Base class of everything gpusim raises on purpose."""


class KernelError(GpusimError):
    """A problem in a kernel's source or its execution, located in the user's file.

    ``where`` is ``file:line``; ``kernel`` the kernel's name; ``block``/``thread`` (SIMT) or ``program`` (tile)
    the coordinates of the first offending thread or program instance.
    """

    def __init__(self, message: str, *, file: str = "", line: int = 0, kernel: str = "",
                 block: tuple | None = None, thread: tuple | None = None, program: tuple | None = None):
        self.message = message
        self.file, self.line, self.kernel = file, line, kernel
        self.block, self.thread, self.program = block, thread, program
        parts = []
        if file:
            parts.append(f"{file}:{line}" if line else file)
        if kernel:
            parts.append(f"in kernel {kernel!r}")
        if block is not None:
            parts.append(f"block {tuple(block)}")
        if thread is not None:
            parts.append(f"thread {tuple(thread)}")
        if program is not None:
            parts.append(f"program id {tuple(program)}")
        prefix = ", ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class UnsupportedConstruct(KernelError):
    """A Python construct or library call the front end does not implement."""


class CompileError(KernelError):
    """A static error Triton or numba would report at compile time (types, shapes, missing constexpr)."""


class OutOfBounds(KernelError):
    """A global/shared memory access outside its array (what compute-sanitizer would report)."""


class BarrierDivergence(KernelError):
    """A barrier reached by only part of a CTA: on hardware this deadlocks or misbehaves."""


class LaunchError(GpusimError):
    """A launch the GPU would refuse: too many threads per block, too much shared memory, bad grid."""


class CooperativeLaunchTooLarge(LaunchError):
    """A cooperative launch (a kernel using ``cuda.cg.this_grid()``) whose grid cannot be resident at once:
    CUDA's ``cudaErrorCooperativeLaunchTooLarge`` / ``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``."""
