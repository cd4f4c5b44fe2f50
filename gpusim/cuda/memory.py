"""Device memory as the SIMT front end sees it: one simulated address space, device arrays, and the per-warp
memory-access summaries (coalesced 128 B lines / 32 B sectors, shared-memory wavefronts) of a whole chunk.

Every array a kernel touches gets a base address in one simulated global address space, aligned to 256 bytes
like ``cudaMalloc``, stable for the life of the array object (two launches with the same arrays see the same
addresses; views of one buffer share its allocation).  Local memory lives in a separate window
(``LOCAL_BASE``) with the hardware's interleaved layout: lane ``l`` of warp ``w`` keeps element byte offset
``o`` (element size ``s``) at ``LOCAL_BASE + w * 32 * frame + o * 32 + l * s``, so the lanes of a warp that
access the same local element touch consecutive words.

The summaries produce exactly what ``gpusim.trace.coalesce_global`` / ``shared_access`` would for the same
lane addresses, but compute each distinct per-warp address *pattern* once: a warp's lines and sectors only
shift when all its addresses shift by a multiple of 128 bytes, and a shared-memory conflict degree is
invariant under any common shift.  Units: bytes.
"""
from __future__ import annotations

import contextlib
import weakref

import numpy as np

from ..trace import LOCAL_BASE, WARP, MemAccess, Space, data_wavefronts, coalesce_global, first_fit, shared_wavefronts

GLOBAL_BASE = 1 << 32          # first device address handed out (bytes)
ALLOC_ALIGN = 256              # cudaMalloc alignment (bytes)


class AddressSpace:
    """Simulated device addresses, keyed by the root buffer of each numpy array: first fit among the live
    allocations (``trace.first_fit``), so freed memory is reused as ``cudaMalloc``'s caching allocator does."""

    def __init__(self, base: int = GLOBAL_BASE):
        self._base = base
        self._blocks: dict[int, tuple[weakref.ref, int, int]] = {}

    @staticmethod
    def _root(a: np.ndarray) -> np.ndarray:
        while isinstance(a.base, np.ndarray):
            a = a.base
        return a

    def address_of(self, a: np.ndarray) -> int:
        """Device byte address of ``a``'s first element."""
        root = self._root(a)
        key = id(root)
        hit = self._blocks.get(key)
        if hit is None or hit[0]() is not root:
            nbytes = max(int(root.nbytes), 1)
            self._blocks = {k: v for k, v in self._blocks.items() if v[0]() is not None}
            base = first_fit(((b, n) for _, b, n in self._blocks.values()), nbytes, self._base, ALLOC_ALIGN)
            try:
                ref = weakref.ref(root)
            except TypeError:          # pragma: no cover - ndarrays support weakrefs
                ref = (lambda r=root: r)
            self._blocks[key] = (ref, base, nbytes)
            hit = self._blocks[key]
        off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return hit[1] + off


    @contextlib.contextmanager
    def fresh(self):
        """No allocation live for the block (the first array gets the base address), the live ones back after."""
        saved, self._blocks = self._blocks, {}
        try:
            yield
        finally:
            self._blocks = saved

    def resolve(self, addr: int):
        """(root array, byte offset) of the allocation holding device address ``addr``, or None."""
        for ref, base, nbytes in self._blocks.values():
            if base <= addr < base + nbytes:
                root = ref()
                if root is not None:
                    return root, addr - base
        return None


ADDRESS_SPACE = AddressSpace()


# ---- device arrays (the host API of numba.cuda) ------------------------------------------------------------

class DeviceNDArray:
    """An array in (simulated) device memory: numba's ``DeviceNDArray`` subset.

    Storage is a numpy array owned by this object; kernels read and write it in place.  ``copy_to_host``
    returns (or fills) a host copy.
    """

    __array_priority__ = 10

    def __init__(self, ary: np.ndarray, stream=0):
        self._ary = ary
        self.stream = stream

    # numba's attributes
    shape = property(lambda self: self._ary.shape)
    size = property(lambda self: self._ary.size)
    dtype = property(lambda self: self._ary.dtype)
    ndim = property(lambda self: self._ary.ndim)
    strides = property(lambda self: self._ary.strides)
    flags = property(lambda self: self._ary.flags)
    nbytes = property(lambda self: self._ary.nbytes)
    alloc_size = property(lambda self: self._ary.nbytes)

    @property
    def device_ctypes_pointer(self):
        return ADDRESS_SPACE.address_of(self._ary)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (version 3) with the array's simulated device address: a kernel taking a
        ``CPointer`` argument accepts ``data[0]`` and reaches this array through it."""
        a = self._ary
        return {"shape": a.shape, "strides": None if a.flags.c_contiguous else a.strides,
                "data": (ADDRESS_SPACE.address_of(a), False), "typestr": a.dtype.str, "version": 3}

    def copy_to_host(self, ary: np.ndarray | None = None, stream=0) -> np.ndarray:
        if ary is None:
            return self._ary.copy(order="K")        # the device array's layout (an F-order array stays F-order)
        if ary.shape != self._ary.shape:
            raise ValueError(f"copy_to_host: shape {ary.shape} differs from the device array's {self._ary.shape}")
        np.copyto(ary, self._ary, casting="no")
        return ary

    def copy_to_device(self, ary, stream=0) -> None:
        src = ary._ary if isinstance(ary, DeviceNDArray) else np.asarray(ary)
        if src.shape != self._ary.shape:
            raise ValueError(f"copy_to_device: shape {src.shape} differs from the device array's {self._ary.shape}")
        np.copyto(self._ary, src, casting="same_kind")

    def is_c_contiguous(self) -> bool:
        return bool(self._ary.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._ary.flags.f_contiguous)

    def reshape(self, *shape, order="C") -> "DeviceNDArray":
        return DeviceNDArray(self._ary.reshape(*shape, order=order))

    def ravel(self, order="C") -> "DeviceNDArray":
        return DeviceNDArray(self._ary.ravel(order=order))

    @property
    def T(self) -> "DeviceNDArray":
        return DeviceNDArray(self._ary.T)

    def transpose(self, axes=None) -> "DeviceNDArray":
        return DeviceNDArray(self._ary.transpose(axes))

    def view(self, dtype) -> "DeviceNDArray":
        """The same device memory as another dtype (numba's ``DeviceNDArray.view``)."""
        dt = getattr(dtype, "dtype", dtype)
        return DeviceNDArray(self._ary.view(np.dtype(dt if isinstance(dt, np.dtype) else dtype)))

    def split(self, section, stream=0) -> list:
        """numba's ``split``: views of ``section`` elements each (1-d arrays)."""
        if self._ary.ndim != 1:
            raise ValueError("only support 1d array")
        return [DeviceNDArray(self._ary[i:i + section]) for i in range(0, len(self._ary), section)]

    def getitem(self, item, stream=0):
        return self[item]

    def setitem(self, key, value, stream=0):
        self[key] = value

    def bind(self, stream=0) -> "DeviceNDArray":
        return DeviceNDArray(self._ary, stream)

    def __len__(self) -> int:
        return len(self._ary)

    def __getitem__(self, idx):
        r = self._ary[idx]
        return DeviceNDArray(r) if isinstance(r, np.ndarray) else r

    def __setitem__(self, idx, value):
        self._ary[idx] = value._ary if isinstance(value, DeviceNDArray) else value

    def __array__(self, dtype=None, copy=None):
        return self._ary.astype(dtype) if dtype is not None else self._ary

    def __repr__(self) -> str:
        return f"<gpusim.cuda.DeviceNDArray shape={self.shape} dtype={self.dtype}>"


def as_device_storage(x) -> np.ndarray | None:
    """The numpy storage a kernel argument refers to, or None when it is not an array."""
    if isinstance(x, DeviceNDArray):
        return x._ary
    if isinstance(x, np.ndarray):
        return x
    a = getattr(x, "_ary", None)            # numba's simulator FakeCUDAArray
    if isinstance(a, np.ndarray):
        return a
    if (type(x).__module__ or "").startswith("torch") and hasattr(x, "numpy") and hasattr(x, "detach"):
        # a torch tensor (host memory: under gpusim torch's cuda device is the host's): kernels write it in place
        try:
            return x.detach().numpy()
        except Exception:                   # noqa: BLE001 - a tensor numpy cannot view (on a real GPU, bf16...)
            return None
    if hasattr(x, "__cuda_array_interface__") or hasattr(x, "__array_interface__") and not np.isscalar(x):
        try:
            return np.asarray(x)
        except Exception:                   # pragma: no cover
            return None
    return None


# ---- per-warp access summaries ------------------------------------------------------------------------------

_HASH = np.random.default_rng(12345).integers(1, 2 ** 62, size=WARP, dtype=np.int64) | 1


def _dedupe(rel: np.ndarray):
    """(unique row indices, inverse) of the rows of ``rel`` (n, 32); None if a hash collision is seen."""
    h = rel @ _HASH                          # int64 wraparound hash of each row
    uniq, first, inv = np.unique(h, return_index=True, return_inverse=True)
    if len(uniq) == len(h):
        return None
    if not np.array_equal(rel, rel[first][inv]):
        return None
    return first, inv


def _unit_stride(addr: np.ndarray, step: int, rows: int = 2048) -> bool:
    """Whether every row of ``addr`` (n, lanes) steps by ``step`` from lane to lane: adjacent differences compared a
    block of ``rows`` rows at a time into reused buffers (they stay in cache; ~5x faster than whole-array
    temporaries on a 2^28-element grid), stopping at the first block that fails."""
    n, lanes = addr.shape
    if lanes < 2:
        return True
    m = min(rows, n)
    diff = np.empty((m, lanes - 1), np.int64)
    same = np.empty((m, lanes - 1), bool)
    for i in range(0, n, rows):
        a = addr[i:i + rows]
        k = a.shape[0]
        np.subtract(a[:, 1:], a[:, :-1], out=diff[:k])
        np.equal(diff[:k], step, out=same[:k])
        if not same[:k].all():
            return False
    return True


def _contiguous_rows(addr: np.ndarray, bytes_per_lane: int, space: Space) -> MemAccess | None:
    """``coalesce_rows`` of the commonest access, in closed form: every lane active, lane ``l`` at the warp's first
    address + ``l * bytes_per_lane``, and the first addresses all at one offset within a 128 B line (a unit-stride
    array walk).  Each warp then covers bytes ``[a0, a0 + 32 * bytes_per_lane)``: the same lines and sector masks,
    shifted.  None when the access is not of that kind."""
    lanes = addr.shape[1]
    a0 = addr[:, 0]
    if a0.min() < 0:
        return None
    off = int(a0[0]) & 127
    if np.any((a0 & 127) != off):
        return None
    if not _unit_stride(addr, bytes_per_lane):
        return None
    span = lanes * bytes_per_lane
    first_line = a0 >> 7
    n_lines = (off + span - 1) // 128 + 1
    masks = np.zeros(n_lines, np.uint8)                 # the sectors of each of the warp's lines
    for s in range(off // 32, (off + span - 1) // 32 + 1):
        masks[s // 4] |= 1 << (s % 4)
    n = addr.shape[0]
    line = (first_line[:, None] + np.arange(n_lines, dtype=np.int64)[None, :]).ravel()
    wf = None
    if n_lines > 1 and lanes == WARP:
        # the L1's data wavefronts (trace.data_wavefronts): the same for every warp, the rows being shifted copies
        row = addr[:1, None, :]
        one = data_wavefronts(row, row >= 0, bytes_per_lane, np.array([n_lines]), 1, 1)
        if one is not None:
            wf = np.full(n, int(one[0]), np.int32)
    return MemAccess(space=space, bytes_per_lane=bytes_per_lane, bytes_requested=n * lanes * bytes_per_lane,
                     ptr=np.arange(n + 1, dtype=np.int64) * n_lines, line=line, smask=np.tile(masks, n),
                     wavefronts=wf)


def coalesce_rows(addr: np.ndarray, bytes_per_lane: int, space: Space = Space.GLOBAL) -> MemAccess:
    """``coalesce_global`` for one instruction per warp: ``addr`` int64 (n_warps, 32), -1 = inactive lane."""
    n = addr.shape[0]
    if n < 64:
        return coalesce_global(addr, bytes_per_lane, space)
    fast = _contiguous_rows(addr, bytes_per_lane, space)
    if fast is not None:
        return fast
    valid = addr >= 0
    big = np.iinfo(np.int64).max
    mn = np.where(valid, addr, big).min(axis=1)
    anyv = mn != big
    base_line = np.where(anyv, mn >> 7, 0)                        # 128 B line of the lowest address
    rel = np.where(valid, addr - (base_line << 7)[:, None], -1)
    d = _dedupe(rel)
    if d is None:
        return coalesce_global(addr, bytes_per_lane, space)
    first, inv = d
    m = coalesce_global(rel[first], bytes_per_lane, space)
    counts_u = np.diff(m.ptr)
    counts = counts_u[inv]
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    total = int(ptr[-1])
    start = np.repeat(m.ptr[:-1][inv] - ptr[:-1], counts)
    idx = start + np.arange(total, dtype=np.int64)
    line = m.line[idx] + np.repeat(base_line, counts)
    return MemAccess(space=space, bytes_per_lane=bytes_per_lane,
                     bytes_requested=int(np.count_nonzero(valid)) * bytes_per_lane,
                     ptr=ptr, line=line, smask=m.smask[idx],
                     wavefronts=None if m.wavefronts is None else m.wavefronts[inv])


def shared_rows(addr: np.ndarray, bytes_per_lane: int, banks: int = 32, bank_bytes: int = 4) -> MemAccess:
    """``shared_access`` for one instruction per warp: ``addr`` int64 (n_warps, 32) offsets, -1 inactive."""
    n = addr.shape[0]
    valid = addr >= 0
    if n >= 64:
        big = np.iinfo(np.int64).max
        mn = np.where(valid, addr, big).min(axis=1)
        base = np.where(mn != big, (mn >> 7) << 7, 0)
        rel = np.where(valid, addr - base[:, None], -1)
        d = _dedupe(rel)
        if d is not None:
            first, inv = d
            wf, ideal, _ = shared_wavefronts(rel[first], bytes_per_lane, banks, bank_bytes)
            return MemAccess(space=Space.SHARED, bytes_per_lane=bytes_per_lane,
                             bytes_requested=int(np.count_nonzero(valid)) * bytes_per_lane,
                             wavefronts=wf[inv], shared_ideal_wavefronts=ideal[inv])
    wf, ideal, nbytes = shared_wavefronts(addr, bytes_per_lane, banks, bank_bytes)
    return MemAccess(space=Space.SHARED, bytes_per_lane=bytes_per_lane, bytes_requested=nbytes,
                     wavefronts=wf, shared_ideal_wavefronts=ideal)


def tile_access(m: MemAccess, times: int) -> MemAccess:
    """The access of ``times`` consecutive copies of the warps of ``m`` (same addresses)."""
    if times == 1:
        return m
    if m.space == Space.SHARED:
        return MemAccess(space=m.space, bytes_per_lane=m.bytes_per_lane, bytes_requested=m.bytes_requested * times,
                         wavefronts=np.tile(m.wavefronts, times),
                         shared_ideal_wavefronts=np.tile(m.shared_ideal_wavefronts, times))
    n = len(m.ptr) - 1
    per = np.diff(m.ptr)
    ptr = np.zeros(n * times + 1, np.int64)
    np.cumsum(np.tile(per, times), out=ptr[1:])
    return MemAccess(space=m.space, bytes_per_lane=m.bytes_per_lane, bytes_requested=m.bytes_requested * times,
                     ptr=ptr, line=np.tile(m.line, times), smask=np.tile(m.smask, times),
                     wavefronts=None if m.wavefronts is None else np.tile(m.wavefronts, times))
