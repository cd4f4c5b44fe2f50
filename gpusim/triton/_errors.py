"""Triton's exception classes (``triton.errors``, ``triton.runtime.errors``, ``triton.compiler.errors``).

Scripts catch them as on a GPU (``try: kernel[grid](...) except triton.runtime.errors.OutOfResources:``, an
autotune prune function, ``pytest.raises(triton.CompilationError)``), so gpusim raises these very classes: each is
also the gpusim error the command line reports when the script does not catch it (``OutOfResources`` is a
``LaunchError``: reported at the script's launch line; ``CompilationError`` a ``CompileError``: at the kernel's
line).  Names, constructors and messages are Triton 3.6's.
"""
from __future__ import annotations

from typing import Optional

from ..errors import CompileError, LaunchError, UnsupportedConstruct


class TritonError(Exception):
    """``triton.errors.TritonError``: the base of everything Triton raises."""


class OutOfResources(TritonError, LaunchError):
    """``triton.runtime.errors.OutOfResources``: a compiled kernel needs more shared memory (or threads) than the
    GPU has; raised at its launch, before anything runs."""

    def __init__(self, required=0, limit=0, name=""):
        self.required, self.limit, self.name = required, limit, name
        self.gpusim_where = ""          # file:line of the kernel, named when no script line is found
        super().__init__(f"out of resource: {name}, Required: {required}, Hardware limit: {limit}. Reducing block "
                         f"sizes or `num_stages` may help.")

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class InterpreterError(TritonError):
    def __init__(self, error_message: Optional[str] = None):
        self.error_message = error_message
        super().__init__(error_message or "")

    def __str__(self) -> str:
        return self.error_message or ""


class PTXASError(TritonError):
    def __init__(self, error_message: Optional[str] = None):
        self.error_message = error_message
        super().__init__(error_message or "")

    def __str__(self) -> str:
        return f"PTXAS error: {self.error_message or ''}"


class AutotunerError(TritonError):
    def __init__(self, error_message: Optional[str] = None):
        self.error_message = error_message
        super().__init__(error_message or "")

    def __str__(self) -> str:
        return f"Autotuner error: {self.error_message or ''}"


class CompilationError(CompileError, TritonError):
    """``triton.compiler.errors.CompilationError``: gpusim's compile-time refusal of a kernel (a ``CompileError``
    naming the kernel's file:line).  Built as gpusim's (``message, file=, line=, kernel=``) or as Triton's
    (``src, node, error_message``)."""

    source_line_count_max_in_message = 12

    def __init__(self, *args, **kw):
        if len(args) >= 2 and not kw and (args[0] is None or isinstance(args[0], str)) and \
                hasattr(args[1], "_fields"):
            src, node = args[0], args[1]          # Triton's (src, node, error_message)
            self.src, self.node = src, node
            self.error_message = args[2] if len(args) > 2 else None
            line = getattr(node, "lineno", 0)
            super().__init__(self.error_message or "", line=line)
            return
        super().__init__(*args, **kw)
        self.src, self.node, self.error_message = None, None, self.message


class CompileTimeAssertionFailure(CompilationError):
    """``tl.static_assert`` failed."""


class UnsupportedLanguageConstruct(CompilationError, UnsupportedConstruct):
    """A Python construct Triton's compiler refuses in a kernel (``try``, ``break``, a lambda ...)."""


def as_triton(exc: BaseException) -> BaseException:
    """gpusim's ``CompileError`` raised at a launch, as Triton's class (``CompilationError``, or
    ``CompileTimeAssertionFailure`` for a failed ``static_assert``): the same object, its class narrowed."""
    if type(exc) is CompileError:
        cls = CompileTimeAssertionFailure if str(exc.message).startswith("Static assert failed") else CompilationError
        exc.__class__ = cls
        exc.src, exc.node, exc.error_message = None, None, exc.message
    return exc

