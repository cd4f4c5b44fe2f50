"""Errors a user sees, each naming where it applies: file:line, kernel, block and thread (or program id).

Everything gpusim raises on purpose for a mistake in its input is a ``GpusimError``; the command line prints
it as one line ``gpusim: error: ...`` and exits with ``EXIT_USER_ERROR``.  Any other exception escaping gpusim
is a bug in gpusim (``EXIT_INTERNAL_ERROR``, with the traceback).
"""
from __future__ import annotations

#: exit statuses of the ``gpusim`` command
EXIT_OK = 0                 # done; for ``gpusim run``: the outputs match the numpy reference
EXIT_MISMATCH = 1           # ``gpusim run``: simulated, but an output differs from the numpy reference
EXIT_USER_ERROR = 2         # a mistake in the input: kernel file, -p parameter, --gpu name, config file, options
EXIT_INTERNAL_ERROR = 3     # a bug in gpusim: an exception that is not a GpusimError
EXIT_INTERRUPTED = 130      # Ctrl-C

#: where to report internal errors
ISSUE_TRACKER = "the gpusim issue tracker (the project's GitHub issues)"


class GpusimError(Exception):
    """Base class of everything gpusim raises on purpose."""


class UsageError(GpusimError):
    """A mistake on the command line: an option, a ``-p key=value`` parameter."""


class ConfigError(GpusimError, ValueError):
    """A GPU configuration (preset name, TOML file, override) that cannot be used.

    ``key`` is the first offending parameter as ``section.name`` ('' when the problem is not one parameter's);
    ``problems`` lists every (key, message) found.
    """

    def __init__(self, message: str, *, key: str = "", problems: "list[tuple[str, str]] | None" = None):
        super().__init__(message)
        self.key = key
        self.problems = problems if problems is not None else [(key, message)]


class KernelFileError(GpusimError):
    """A kernel file that cannot be imported, or whose ``launch()``/``reference()`` raised: names file:line."""

    def __init__(self, message: str, *, file: str = "", line: int = 0):
        self.file, self.line = file, line
        where = f"{file}:{line}" if file and line else file
        super().__init__(f"{where}: {message}" if where else message)


class LaunchSpecError(GpusimError, ValueError):
    """A launch description (the dict a kernel file's ``launch()`` returns) gpusim cannot read: an unknown or
    misplaced key, a missing one, a value of the wrong kind.  ``key`` names the key."""

    def __init__(self, message: str, *, key: str = ""):
        super().__init__(message)
        self.key = key


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


class CompilerUnavailable(GpusimError):
    """The real compiler (Triton, or numba-cuda + ptxas) was asked for (``--compiler real``,
    ``GPUSIM_COMPILER=real``) but cannot run on this host: not installed, or a tool it needs is missing."""
