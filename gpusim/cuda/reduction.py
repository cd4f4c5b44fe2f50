"""``cuda.reduce``: numba-cuda's reduction object (``numba.cuda.kernels.reduction.Reduce``), simulated as numba runs
it: the same kernel and the same launches.

    sum_reduce = cuda.reduce(lambda a, b: a + b)
    total = sum_reduce(array, init=0)            # the scalar (numba returns partials[0], a numpy scalar)

numba compiles the binary function as a device function into a block reduction kernel (blocks of 4 warps; each
thread folds a block-strided slice of the array, the warps reduce through shared memory with ``syncwarp``, the
four warp results are combined, thread 0 writes the block's partial) and launches it up to three times: over
the full 128-element blocks (at most 64 blocks), over the partial last block, then once more over the partials.
The kernel here is numba's, with its two slices of the shared array (``sm_partials[warpid, :]``) written as
two-index accesses (the SIMT machine indexes elements, not views) -- the same loads, stores and tree.  Every
launch is an ordinary kernel launch: inside ``gpusim.session()`` each one is recorded and timed.  Host-side
slices of device arrays (``arr[:size_full]``) are views of the same simulated memory, as numba's are.
"""
from __future__ import annotations

import numpy as np

_WARPSIZE = 32
_NUMWARPS = 4

# the ``gpusim.cuda`` package, which the reduction kernels are written against (as numba's are against
# ``numba.cuda``): the package hands itself over when it is imported, since it imports this module
_PACKAGE = None


def register_package(package) -> None:
    global _PACKAGE
    _PACKAGE = package


def _gpu_reduce_factory(fn, dtype):
    cuda = _PACKAGE

    reduce_op = cuda.jit(device=True)(fn)
    inner_sm_size = _WARPSIZE + 1          # plus one to avoid bank conflicts
    max_blocksize = _NUMWARPS * _WARPSIZE
    nbtype = np.dtype(dtype)

    @cuda.jit(device=True)
    def inner_warp_reduction(sm_partials, init):
        """Reduce within a warp (its row of ``sm_partials``)."""
        tid = cuda.threadIdx.x
        warpid = tid // _WARPSIZE
        laneid = tid % _WARPSIZE
        sm_partials[warpid, laneid] = init
        cuda.syncwarp()
        width = _WARPSIZE // 2
        while width:
            if laneid < width:
                old = sm_partials[warpid, laneid]
                sm_partials[warpid, laneid] = reduce_op(old, sm_partials[warpid, laneid + width])
            cuda.syncwarp()
            width //= 2

    @cuda.jit(device=True)
    def device_reduce_full_block(arr, partials, sm_partials):
        """Blocks of 128 threads fold the array's 128-element chunks round robin, then reduce in the block."""
        tid = cuda.threadIdx.x
        blkid = cuda.blockIdx.x
        blksz = cuda.blockDim.x
        gridsz = cuda.gridDim.x
        start = tid + blksz * blkid
        stop = arr.size
        step = blksz * gridsz
        tmp = arr[start]
        for i in range(start + step, stop, step):
            tmp = reduce_op(tmp, arr[i])
        cuda.syncthreads()
        inner_warp_reduction(sm_partials, tmp)
        cuda.syncthreads()
        if tid < 2:
            sm_partials[tid, 0] = reduce_op(sm_partials[tid, 0], sm_partials[tid + 2, 0])
            cuda.syncwarp()
        if tid == 0:
            partials[blkid] = reduce_op(sm_partials[0, 0], sm_partials[1, 0])

    @cuda.jit(device=True)
    def device_reduce_partial_block(arr, partials, sm_partials):
        """One block of ``arr.size`` (<= 128) threads."""
        tid = cuda.threadIdx.x
        blkid = cuda.blockIdx.x
        blksz = cuda.blockDim.x
        warpid = tid // _WARPSIZE
        laneid = tid % _WARPSIZE
        size = arr.size
        value = arr[tid]
        sm_partials[warpid, laneid] = value
        cuda.syncthreads()
        if (warpid + 1) * _WARPSIZE < size:
            inner_warp_reduction(sm_partials, value)
        else:
            if laneid == 0:
                base = warpid * _WARPSIZE
                for i in range(1, size - base):
                    sm_partials[warpid, 0] = reduce_op(sm_partials[warpid, 0], sm_partials[warpid, i])
        cuda.syncthreads()
        if tid == 0:
            num_active_warps = (blksz + _WARPSIZE - 1) // _WARPSIZE
            result = sm_partials[0, 0]
            for i in range(1, num_active_warps):
                result = reduce_op(result, sm_partials[i, 0])
            partials[blkid] = result

    def gpu_reduce_block_strided(arr, partials, init, use_init):
        tid = cuda.threadIdx.x
        sm_partials = cuda.shared.array((_NUMWARPS, inner_sm_size), dtype=nbtype)
        if cuda.blockDim.x == max_blocksize:
            device_reduce_full_block(arr, partials, sm_partials)
        else:
            device_reduce_partial_block(arr, partials, sm_partials)
        if use_init and tid == 0 and cuda.blockIdx.x == 0:
            partials[0] = reduce_op(partials[0], init)

    return cuda.jit(gpu_reduce_block_strided)


class Reduce:
    """A reduction by a binary function (``cuda.reduce(fn)`` / ``@cuda.reduce``); call it on an array."""

    _cache: dict = {}

    def __init__(self, functor):
        self._functor = functor
        self.__name__ = getattr(functor, "__name__", "reduce")
        self.__doc__ = getattr(functor, "__doc__", None)

    def _compile(self, dtype):
        key = (self._functor, np.dtype(dtype))
        kernel = self._cache.get(key)
        if kernel is None:
            kernel = self._cache[key] = _gpu_reduce_factory(self._functor, dtype)
        return kernel

    def __call__(self, arr, size=None, res=None, init=0, stream=0):
        """Reduce the 1-d ``arr`` (host or device array); return the result, or write it to ``res[0]``."""
        from .memory import DeviceNDArray
        cuda = _PACKAGE

        if not isinstance(arr, DeviceNDArray):
            arr = cuda.to_device(np.asarray(arr))
        if arr.ndim != 1:
            raise TypeError("only support 1D array")
        if size is not None:
            arr = arr[:size]
        init = arr.dtype.type(init)
        if arr.size < 1:
            return init
        kernel = self._compile(arr.dtype)
        blocksize = _NUMWARPS * _WARPSIZE
        size_full = (arr.size // blocksize) * blocksize
        size_partial = arr.size - size_full
        full_blockct = min(size_full // blocksize, _WARPSIZE * 2)
        partials_size = full_blockct + (1 if size_partial else 0)
        partials = cuda.device_array(shape=partials_size, dtype=arr.dtype)
        if size_full:
            kernel[full_blockct, blocksize, stream](arr[:size_full], partials[:full_blockct], init, True)
        if size_partial:
            kernel[1, size_partial, stream](arr[size_full:], partials[full_blockct:], init, not full_blockct)
        if partials.size > 1:
            kernel[1, partials_size, stream](partials, partials, init, False)
        if res is not None:
            res[:1].copy_to_device(partials[:1], stream=stream)
            return None
        return partials[0]


__all__ = ["Reduce"]
