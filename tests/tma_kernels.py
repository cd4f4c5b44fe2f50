"""Tensor-descriptor kernels for tests/test_triton_descriptors.py: real Triton kernels (the same source runs under
gpusim and under Triton's interpreter, see ``interp_main``)."""
import json
import os
import sys

import numpy as np

try:
    import triton
    import triton.language as tl
except ImportError:                                   # pragma: no cover
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def desc_load_kernel(in_desc, out_ptr, SHIFT_M: tl.constexpr, SHIFT_N: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr):
    """Each program loads the box at (pm * BM + SHIFT_M, pn * BN + SHIFT_N) of a host descriptor (out-of-bounds
    parts read 0) and writes it densely to out."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    x = in_desc.load([pm * BM + SHIFT_M, pn * BN + SHIFT_N])
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    tl.store(out_ptr + rows[:, None] * (tl.num_programs(1) * BN) + cols[None, :], x)


@triton.jit
def desc_copy_kernel(in_ptr, out_ptr, M, N, ld_in, ld_out, BM: tl.constexpr, BN: tl.constexpr):
    """Device descriptors: out[:M, :N] = 2 * in[:M, :N] box by box; the boxes past M and N are clipped."""
    src = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[ld_in, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[ld_out, 1], block_shape=[BM, BN])
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    x = src.load([pm * BM, pn * BN])
    dst.store([pm * BM, pn * BN], x * 2)


@triton.jit
def desc_3d_kernel(in_ptr, out_ptr, B, M, N, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """A 3-D descriptor: boxes of [BB, BM, BN], negated, stored through a second descriptor."""
    src = tl.make_tensor_descriptor(in_ptr, shape=[B, M, N], strides=[M * N, N, 1], block_shape=[BB, BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[B, M, N], strides=[M * N, N, 1], block_shape=[BB, BM, BN])
    pb = tl.program_id(0)
    pm = tl.program_id(1)
    x = src.load([pb * BB, pm * BM, 0])
    dst.store([pb * BB, pm * BM, 0], -x)


@triton.jit
def desc_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = a @ b.T through device descriptors (tutorial 09's loop without the persistent schedule)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        a = a_desc.load([pm * BM, k * BK])
        b = b_desc.load([pn * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


def cases(seed=0):
    """name -> (kernel name, grid, args (numpy arrays / ints / ('desc', array index, shape, strides, block)),
    meta, index of the output argument)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((70, 48)).astype(np.float32)
    out1 = np.zeros((5 * 16, 3 * 32), np.float32)
    out2 = np.zeros((5 * 16, 3 * 32), np.float32)
    big = rng.standard_normal((40, 64)).astype(np.float32)
    dst = np.full((40, 64), 7.0, np.float32)
    t3 = rng.standard_normal((5, 24, 32)).astype(np.float16)
    o3 = np.full((5, 24, 32), 3.0, np.float16)
    return {
        "load_shift": ("desc_load_kernel", (5, 3), [("desc", a, [70, 48], [48, 1], [16, 32]), out1],
                       dict(SHIFT_M=-5, SHIFT_N=8, BM=16, BN=32), 1),
        "load_inbounds": ("desc_load_kernel", (4, 1), [("desc", a, [70, 48], [48, 1], [16, 32]),
                                                       np.zeros((64, 32), np.float32)],
                          dict(SHIFT_M=0, SHIFT_N=0, BM=16, BN=32), 1),
        "load_neg": ("desc_load_kernel", (5, 3), [("desc", a, [70, 48], [48, 1], [16, 32]), out2],
                     dict(SHIFT_M=3, SHIFT_N=-16, BM=16, BN=32), 1),
        "copy_clip": ("desc_copy_kernel", (3, 2), [big, dst, 37, 40, 64, 64], dict(BM=16, BN=32), 1),
        "box_3d": ("desc_3d_kernel", (3, 2), [t3, o3, 5, 24, 32], dict(BB=2, BM=16, BN=32), 1),
    }


def reference(name, args, meta):
    """numpy expectation of the output argument."""
    if name.startswith("load"):
        _, a, shape, strides, block = args[0]
        out = np.zeros_like(args[1])
        BM, BN = meta["BM"], meta["BN"]
        for r in range(out.shape[0]):
            for c0 in range(0, out.shape[1], BN):
                pm, pn = r // BM, c0 // BN
                rr = r + meta["SHIFT_M"]
                for c in range(c0, c0 + BN):
                    cc = c + meta["SHIFT_N"]
                    if 0 <= rr < shape[0] and 0 <= cc < shape[1]:
                        out[r, c] = a[rr, cc]
        return out
    if name == "copy_clip":
        big, dst, M, N = args[0], args[1].copy(), args[2], args[3]
        dst[:M, :N] = 2 * big[:M, :N]
        return dst
    if name == "box_3d":
        return -args[0]
    raise KeyError(name)


def interp_main():
    """TRITON_INTERPRET=1 python tests/tma_kernels.py OUT.npz: every case under Triton's interpreter (torch CPU
    tensors, Triton's own TensorDescriptor); OUT.npz maps case name -> output."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    res = {}
    for name, (kname, grid, args, meta, oi) in cases().items():
        targs = []
        for x in args:
            if isinstance(x, tuple) and x and x[0] == "desc":
                targs.append(TensorDescriptor(torch.from_numpy(x[1]), x[2], x[3], x[4]))
            elif isinstance(x, np.ndarray):
                targs.append(torch.from_numpy(x))
            else:
                targs.append(x)
        globals()[kname][grid](*targs, **meta)
        res[name] = np.array(args[oi], copy=True)
    np.savez(sys.argv[1], **res)


if __name__ == "__main__":
    interp_main()
