"""Kernel argument memory: ``Buffer`` (one argument's whole allocation as a flat array of its storage dtype) and
the fake device addresses (``ADDRESSES``: 4 KB aligned, stable while the memory lives, like cudaMalloc's) that
the lowering coalesces on.  Units: elements, bytes.
"""
from __future__ import annotations

import contextlib
import weakref

import numpy as np

from ..errors import UnsupportedConstruct
from ..trace import first_fit
from ._dtypes import ROUNDED, dtype, to_compute


# ---------------------------------------------------------------------------------------------------------
# buffers: kernel argument memory with fake device addresses
# ---------------------------------------------------------------------------------------------------------

class _AddressSpace:
    """Fake device addresses for host memory, stable while the memory lives (4 KB aligned, like cudaMalloc; first
    fit among the live allocations, so freed memory is reused and addresses do not depend on earlier launches).

    Keyed by the host address of an allocation's first byte, so the same array (or torch storage) gets the
    same device address in every launch of a process (multi-kernel sequences share cache lines)."""

    BASE = 1 << 36

    def __init__(self):
        self.by_ptr: dict[int, int] = {}
        self.span: dict[int, int] = {}         # host pointer -> bytes held (with a 4 KB guard after)

    def address(self, host_ptr: int, nbytes: int, owner=None) -> int:
        a = self.by_ptr.get(host_ptr)
        if a is None:
            span = (nbytes + 4095) // 4096 * 4096 + 4096
            a = first_fit(((self.by_ptr[p], n) for p, n in self.span.items()), span, self.BASE, 4096)
            self.by_ptr[host_ptr] = a
            self.span[host_ptr] = span
            if owner is not None:
                try:
                    weakref.finalize(owner, self._free, host_ptr)
                except TypeError:
                    pass
        return a

    def _free(self, host_ptr: int) -> None:
        self.by_ptr.pop(host_ptr, None)
        self.span.pop(host_ptr, None)


ADDRESSES = _AddressSpace()


class Buffer:
    """One argument's memory: ``flat`` is a 1-D view of the whole underlying allocation (storage dtype)."""

    __slots__ = ("flat", "dtype", "base_addr", "n", "name", "elem_bytes", "shadow", "reads", "__weakref__")

    def __init__(self, flat: np.ndarray, dt: dtype, base_addr: int, name: str):
        self.flat = flat
        self.dtype = dt
        self.base_addr = base_addr
        self.n = flat.shape[0]
        self.name = name
        self.elem_bytes = dt.itemsize
        self.shadow = None      # fp16/bf16: the whole buffer in float32 once it is re-read (saves conversions)
        self.reads = 0

    def take(self, idx: np.ndarray) -> np.ndarray:
        """Values at element indices ``idx`` (all in bounds), in the compute dtype."""
        dt = self.dtype
        if dt in ROUNDED:
            if self.shadow is None:
                self.reads += idx.size
                if self.reads > self.n + self.n // 2:          # re-read: convert the whole buffer once
                    self.shadow = to_compute(dt, self.flat)
                else:
                    return to_compute(dt, self.flat.take(idx))
            return self.shadow.take(idx)
        return self.flat.take(idx)

    def put(self, idx: np.ndarray, raw: np.ndarray):
        self.flat[idx] = raw
        if self.shadow is not None:
            self.shadow[idx] = to_compute(self.dtype, raw)


def numpy_root(arr: np.ndarray):
    """(1-D view of the whole allocation holding ``arr``, element offset of ``arr[0...]``, owner)."""
    if arr.flags.c_contiguous and not isinstance(arr.base, np.ndarray):
        return arr.reshape(-1), 0, arr
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    itemsize = arr.dtype.itemsize
    if not root.flags.c_contiguous:
        if arr.flags.c_contiguous:
            return arr.reshape(-1), 0, arr
        raise UnsupportedConstruct("a non-contiguous array whose underlying memory is not contiguous")
    raw = root.reshape(-1).view(np.uint8)
    byte_off = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if byte_off % itemsize:
        if arr.flags.c_contiguous:
            return arr.reshape(-1), 0, arr
        raise UnsupportedConstruct("a strided view not aligned to its element size")
    flat = raw[:raw.shape[0] // itemsize * itemsize].view(arr.dtype)
    return flat, byte_off // itemsize, root


# ---------------------------------------------------------------------------------------------------------
# device addresses handed to the host: pointer tables (tutorial 08's grouped GEMM)
# ---------------------------------------------------------------------------------------------------------

class _Allocations:
    """Allocations whose device address left gpusim (``data_ptr``), so that an int64 the kernel casts to a
    pointer can be mapped back to memory: device base -> (root bytes, host base, owner)."""

    def __init__(self):
        self.by_dev: dict[int, tuple] = {}

    def add(self, raw: np.ndarray, host: int, owner=None) -> int:
        dev = ADDRESSES.address(host, raw.nbytes, owner)
        if dev not in self.by_dev:
            self.by_dev[dev] = (raw, host)
            if owner is not None:
                try:
                    weakref.finalize(owner, self.by_dev.pop, dev, None)
                except TypeError:
                    pass
        return dev

    def find(self, addr: int, host_too: bool = True):
        """(device base, root bytes) of the allocation holding device address ``addr`` (or, with ``host_too``,
        host address ``addr``: what ``torch.Tensor.data_ptr()`` gives), else None."""
        for dev, (raw, host) in self.by_dev.items():
            if dev <= addr < dev + raw.nbytes:
                return dev, raw, addr
            if host_too and host <= addr < host + raw.nbytes:
                return dev, raw, dev + (addr - host)
        return None


ALLOCATIONS = _Allocations()


@contextlib.contextmanager
def fresh_space():
    """No allocation live for the block (the first buffer gets ``_AddressSpace.BASE``; no device address handed
    out by ``data_ptr``), the live ones back after."""
    saved = ADDRESSES.by_ptr, ADDRESSES.span, ALLOCATIONS.by_dev
    ADDRESSES.by_ptr, ADDRESSES.span, ALLOCATIONS.by_dev = {}, {}, {}
    try:
        yield
    finally:
        ADDRESSES.by_ptr, ADDRESSES.span, ALLOCATIONS.by_dev = saved


def device_type(x) -> str:
    """Where a torch tensor's memory really is ("cpu" for the host tensors a script's ``cuda`` device gives, which
    say ``cuda`` to the script: ``bench.torch_cuda_is_host``)."""
    import torch
    with torch._C.DisableTorchFunction():
        return x.device.type


def _root_bytes(x):
    """(1-D uint8 view of the whole allocation holding ``x``, its host address, x's byte offset in it, owner)."""
    if isinstance(x, np.ndarray):
        flat, off, owner = numpy_root(x)
        raw = flat.view(np.uint8)
        return raw, raw.__array_interface__["data"][0], off * x.dtype.itemsize, owner
    mod = type(x).__module__ or ""
    if mod.startswith("torch"):
        import torch
        if device_type(x) != "cpu":
            raise UnsupportedConstruct("only CPU torch tensors can be simulated")
        st = x.untyped_storage()
        raw = torch.empty(0, dtype=torch.uint8).set_(st, 0, (st.nbytes(),), (1,)).numpy()
        return raw, st.data_ptr(), x.storage_offset() * x.element_size(), None
    raise UnsupportedConstruct(f"data_ptr: {type(x).__name__} is not an array gpusim can simulate")


def data_ptr(x) -> int:
    """The device address gpusim gives array ``x`` (numpy array or CPU torch tensor) in a launch: the value to put
    in a pointer table (``np.array([data_ptr(a), data_ptr(b)], np.int64)``) that a kernel loads and casts with
    ``.to(tl.pointer_type(tl.float16))``.  (A table of host addresses, ``torch.Tensor.data_ptr()``, works too.)"""
    raw, host, off, owner = _root_bytes(x)
    return ALLOCATIONS.add(raw, host, owner) + off


#: the host memory ranges the last scan saw, (first byte, end, weak reference to the array or tensor): a pointer
#: table's other entries are looked up here before another scan of the heap (each costs seconds in a process that
#: holds many objects, and a table of G arrays would otherwise cost G scans)
_HOST_INDEX: list = []


def _from_index(addr: int):
    for lo, hi, ref in _HOST_INDEX:
        if lo <= addr < hi:
            o = ref()
            if o is not None:
                data_ptr(o)
                return ALLOCATIONS.find(addr)
    return None


def find_host(addr: int):
    """An allocation that holds host address ``addr`` among the live numpy arrays and CPU torch tensors (a pointer
    table of ``data_ptr()`` values from tensors gpusim never saw); registered for next time."""
    hit = _from_index(addr)
    if hit is not None:
        return hit
    import gc
    import sys
    import warnings
    torch = sys.modules.get("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        objs = gc.get_objects()
        _HOST_INDEX[:] = _scan(objs, torch)
        del objs
    return _from_index(addr)


def _candidates(objs, depth: int = 3):
    """The objects themselves and what lists, tuples and dicts hold, ``depth`` levels down: numpy arrays are not
    tracked by the garbage collector (nor are dicts and tuples that hold only untracked objects), so they are found
    through the tracked containers that hold them."""
    seen: set[int] = set()
    stack = [(o, 0) for o in objs]
    while stack:
        o, d = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        yield o
        if d < depth:
            try:
                if isinstance(o, (list, tuple)):
                    stack.extend((x, d + 1) for x in o)
                elif isinstance(o, dict):
                    stack.extend((x, d + 1) for x in o.values())
            except (ReferenceError, RuntimeError):      # a dead weak proxy; a dict changing size under us
                continue


def _scan(objs, torch) -> list:
    """The memory ranges of the live numpy arrays and CPU torch tensors reachable from ``objs``, with weak references
    to them (an array or tensor without weak-reference support is left out)."""
    out = []
    for o in _candidates(objs):
        try:
            if isinstance(o, np.ndarray) and o.size:
                lo = o.__array_interface__["data"][0]
                out.append((lo, lo + o.nbytes, weakref.ref(o)))
            elif torch is not None and isinstance(o, torch.Tensor) and device_type(o) == "cpu" and o.numel():
                st = o.untyped_storage()
                lo = st.data_ptr()
                out.append((lo, lo + st.nbytes(), weakref.ref(o)))
        except Exception:          # noqa: BLE001 - objects mid-construction, non-CPU tensors, no weak references ...
            continue
    return out
