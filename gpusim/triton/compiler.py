"""``triton.compiler`` as scripts reach into it: its error classes (``from triton.compiler import
CompilationError``, ``from triton.compiler.errors import CompileTimeAssertionFailure``) and ``CompiledKernel`` (what a
launch and ``warmup`` return; unsloth annotates with ``triton.compiler.CompiledKernel``).  gpusim compiles kernels
itself; ``triton.compiler.compile`` and the IR classes are not provided."""
from __future__ import annotations

from . import _errors as errors
from ._compiled import CompiledKernel
from ._errors import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct

__all__ = ["CompiledKernel", "CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct", "errors"]
