"""``triton._C.libtriton`` under gpusim: the cuBLAS handle Triton's tutorials compare against.

``nvidia.cublas.CublasLt(workspace).matmul(a, b, c)`` computes ``c = a @ b.T`` (``b`` given as N x K, as cuBLASLt
takes it in tutorial 09) on the host, in float32, so a script's reference results are right; it is a library call,
not a kernel: gpusim does not simulate it (no report, no simulated time).  Nothing else of Triton's C++ module is
provided.
"""
from __future__ import annotations

import sys
import types


class CublasLt:
    def __init__(self, workspace=None):
        self.workspace = workspace

    def matmul(self, a, b, c) -> None:
        """``c = a @ b.T`` (b: N x K), computed on the host."""
        if (type(a).__module__ or "").startswith("torch"):
            c.copy_((a.float() @ b.float().T).to(c.dtype))
        else:
            c[...] = (a.astype("float32") @ b.astype("float32").T).astype(c.dtype)


nvidia = types.SimpleNamespace(cublas=types.SimpleNamespace(CublasLt=CublasLt))
libtriton = sys.modules[__name__]          # ``triton._C.libtriton`` and ``triton._C`` are this module
