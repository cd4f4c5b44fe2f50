"""Run kernels/ files' launch() under Triton's interpreter and save their outputs (used by the contract tests).

    TRITON_INTERPRET=1 python tests/triton_interp_runner.py CASES.json OUT_DIR

CASES.json: a list of [name, kernel file, launch() keyword arguments].  For each case OUT_DIR/<name>.npz holds
the launch's outputs (keys: json of the output index) and the interpreter's wall time ("__seconds__").
Numpy arguments become CPU torch tensors sharing their memory (one tensor per distinct array, so steps that
share a buffer share it here too, and a pointer table of the arrays' host addresses stays valid).
"""
import importlib.util
import json
import os
import sys
import time

import numpy as np
import torch


def _numpy2_index_shim():
    """Triton 3.6's interpreter implements ``tensor.__index__`` as ``int(handle.data)`` on a 1-element 1-D array,
    which numpy >= 2.3 rejects ("only 0-dimensional arrays can be converted to Python scalars"), so
    ``range(tl.cdiv(K, BLOCK_K))`` fails under the interpreter.  In this child process only, index the single
    element instead."""
    if int(np.__version__.split(".")[0]) < 2:
        return
    from triton.runtime import interpreter
    orig = interpreter._patch_lang_tensor

    def patched(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))
    interpreter._patch_lang_tensor = patched


_numpy2_index_shim()


def _interpreter_gaps():
    """The interpreter has no libdevice (its stubs return None): numpy bodies for them (gpusim.validate.cpumodes);
    device-side tensor descriptors ask for global scratch memory: CPU torch memory."""
    from gpusim.validate.cpumodes import patch_triton_interpreter_libdevice
    patch_triton_interpreter_libdevice()
    import triton
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))


_interpreter_gaps()


def run_case(path, kwargs):
    spec = importlib.util.spec_from_file_location("kfile_" + os.path.basename(path)[:-3], path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    L = m.launch(**kwargs)
    steps = L.get("steps") or [L]
    tensors = {}

    def conv(a):
        if isinstance(a, np.ndarray):
            if id(a) not in tensors:
                tensors[id(a)] = torch.from_numpy(a)
            return tensors[id(a)]
        if type(a).__name__ == "TensorDescriptor" and isinstance(getattr(a, "base", None), np.ndarray):
            # a host descriptor over a numpy array: the same descriptor over the torch tensor sharing its memory
            # (gpusim's TensorDescriptor is also Triton's once Triton is imported)
            return type(a)(conv(a.base), a.shape, a.strides, a.block_shape, getattr(a, "padding", "zero"))
        return a
    t0 = time.perf_counter()
    for st in steps:
        st["kernel"][st["grid"]](*[conv(a) for a in st["args"]], **st.get("meta", {}))
    dt = time.perf_counter() - t0
    res = {"__seconds__": np.array(dt)}
    for k in L["outputs"]:
        if isinstance(k, str):                      # an array reached through a pointer table: named in buffers
            arr = L["buffers"][k]
        else:
            arr = steps[k[0]]["args"][k[1]] if isinstance(k, (list, tuple)) else steps[-1]["args"][k]
        res[json.dumps(k)] = np.asarray(arr)
    return res


def main():
    cases = json.load(open(sys.argv[1]))
    out_dir = sys.argv[2]
    for name, path, kwargs in cases:
        np.savez(os.path.join(out_dir, name + ".npz"), **run_case(path, kwargs))


if __name__ == "__main__":
    main()
