"""The SIMT machine of the CUDA front end: all threads of a chunk of CTAs executing one kernel in lockstep.

Picture the hardware's warps side by side: a *chunk* of ``C`` consecutive CTAs, each padded to whole warps of
32 lanes, ``P`` lanes per CTA.  Every runtime value is a numpy array with one element per lane, stored with
broadcasting so that it costs only what it varies over: shape ``(C, P)`` in general, ``(1, P)`` for values
that depend on the thread index only (the same in every CTA), ``(C, 1)`` for per-CTA values, and a numpy
scalar for values uniform over the chunk.  The rewritten kernel (see ``compiler.py``) calls the chunk for
every operation; each call acts on all lanes at once under the current *active mask*.

Control flow is structured: an ``if`` on a lane-varying condition runs both sides under complementary masks
(a side no lane takes is skipped), loops run while any lane is active, ``break``/``continue``/``return``
remove lanes from the mask until the construct they leave ends, and lanes reconverge at the end of each
construct (its immediate post-dominator).  Assignments under a partial mask merge (``where(mask, new,
old)``); loads, stores and atomics act on active lanes only.

While executing, the chunk records its trace (``gpusim.trace.OpTable``): one ``Op`` per instruction group
a warp issues, with per-warp active-lane counts, the coalesced lines/sectors of global and local accesses,
the shared-memory wavefronts, and the scoreboard dependencies (``deps``) on pending loads -- transitive through
ALU results, so an address computed from a loaded value depends on it.  Instruction counts per construct come
from ``costs.py`` and follow what numba-cuda's compiler emits: pure computations (address arithmetic,
conversions, repeated loads with no store in between) are computed once and reused, as the compiler's CSE and
loop-invariant code motion do; when the table is built, innermost runtime loops are rewritten as LLVM's runtime
unrolling compiles them, loads hoisted ahead of their uses (``unroll_loops``).  Units: bytes for addresses, warp
instructions for counts.

This module holds the launch (``Launch``) and the chunk (``Chunk``), composed of one mixin per room of the
machine, each in its own module:

- ``values.py``     runtime values, numba's typing, active-lane masks, array references
- ``recording.py``  the trace recorder (ops, lane-count rows) -- the base of the mixins
- ``arith.py``      the ALU: arithmetic, comparisons, conversions, math, bit intrinsics
- ``control.py``    the SIMT stack: if/else, loops, break/continue/return, reconvergence, masked assignment
- ``indexing.py``   address generation: arrays, indexing, bounds checks, index arithmetic
- ``views.py``      array slicing: views (``a[lo:hi:step]``, ``a[i, :]``), their elements, stores into slices
- ``memaccess.py``  the load/store unit: loads, stores, coalescing and bank-conflict summaries
- ``atomics.py``    the atomic units
- ``warp.py``       barriers, shuffles, votes
- ``devlib.py``     device libraries: ``cuda.random``, cooperative groups' grid sync, ufuncs on arrays
- ``unroll.py``     LLVM's runtime loop unrolling, applied when the trace table is built (``Chunk.table``)

The chunk itself keeps its geometry (CTAs, warps, lanes), the special registers and ``table``, where the
recorded ops and the unrolling pass meet.  Switches for tests and experiments: ``UNROLL`` here,
``memaccess.MEM_CACHE``.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedConstruct
from ..trace import WARP, Op, OpTable
from .arith import MATH_FUNCTIONS, Arith
from .complexmath import ComplexMath
from .atomics import Atomics
from .control import Control, Frame
from .devlib import DeviceLibrary
from .indexing import Indexing
from .memaccess import MemoryAccess
from .views import Views
from .recording import Recording
from .records import Records
from .unroll import LoopRecord, unroll_loops, unroll_pressure
from .values import (BOOL, EMPTY, Dim3, F32, F64, I32, I64, U32, U64, UNDEF, ArrayRef, ArrayView, GlobalArray, LocalArray,
                     Mask, Shape, SharedArray, SubArray, V, arith_type, const, m_and, m_andnot, m_or, unify)
from .vectors import Vectors
from .warp import WarpOps

# the chunk and the launch, and (re-exported) the names other modules and tests know from here
__all__ = ["Launch", "Chunk", "UNROLL", "CHUNK_MEMORY_BYTES", "V", "UNDEF", "const", "Mask", "EMPTY", "m_and",
           "m_andnot", "m_or", "arith_type", "unify", "BOOL", "I32", "I64", "U32", "U64", "F32", "F64", "ArrayRef",
           "GlobalArray", "SharedArray", "LocalArray", "SubArray", "ArrayView", "Shape", "LoopRecord", "MATH_FUNCTIONS",
           "unroll_loops", "unroll_pressure"]

#: rewrite innermost runtime loops as LLVM's runtime unrolling compiles them (``unroll_loops``); False keeps the
#: ops as executed, iteration by iteration (tests and experiments)
UNROLL = True

#: most bytes of simulated shared + local memory one chunk may allocate (bounds chunk size)
CHUNK_MEMORY_BYTES = 256 << 20


# ---- the launch (shared by all chunks) ------------------------------------------------------------------------

class Launch:
    """Facts of one launch that every chunk shares: shapes, thread indices, shared/local layouts."""

    def __init__(self, ck, grid, block, dyn_shared, cfg, record, chunk_threads):
        self.ck = ck
        self.grid = grid
        self.block = block
        self.cfg = cfg
        self.record = record
        self.tpc = block[0] * block[1] * block[2]
        self.wpc = -(-self.tpc // WARP)
        self.P = self.wpc * WARP
        self.n_ctas = grid[0] * grid[1] * grid[2]
        self.C = max(1, min(self.n_ctas, chunk_threads // self.P))
        # keep a chunk's shared and local memory bounded (they are allocated per CTA / per thread)
        per_cta = ck.shared_static_bytes + dyn_shared + self.P * ck.local_frame_bytes
        if per_cta:
            self.C = max(1, min(self.C, CHUNK_MEMORY_BYTES // per_cta))
        p = np.arange(self.P, dtype=np.int64)
        bx, by = block[0], block[1]
        self.tid = [(p % bx).astype(np.int32)[None, :], ((p // bx) % by).astype(np.int32)[None, :],
                    (p // (bx * by)).astype(np.int32)[None, :]]
        self.laneid = (p % WARP).astype(np.int32)[None, :]
        self.padded = self.P != self.tpc
        self.exist = (p < self.tpc)[None, :] if self.padded else None
        warp_lanes = np.full(self.wpc, WARP, np.uint8)
        if self.padded:
            warp_lanes[-1] = self.tpc - (self.wpc - 1) * WARP
        self.warp_lanes = warp_lanes
        self.dyn_shared = dyn_shared
        self.shared_static = ck.shared_static_bytes
        self.dyn_offset = ck.dyn_shared_offset
        self.shared_total = self.dyn_offset + dyn_shared if ck.uses_dynamic_shared or dyn_shared else \
            self.shared_static
        self.shared_total = max(self.shared_total, self.shared_static)
        self.local_frame = ck.local_frame_bytes
        self.banks = cfg.sm.shared_banks
        self.bank_bytes = cfg.sm.shared_bank_bytes
        self.local_runtime_slots: set = set()
        self.var_dtypes: dict = {}
        self.raised = None              # the first raising thread's (class, args, line, block, thread)
        self.param_words = 0            # 8-byte words of scalar kernel parameters (read from the constant bank)
        # facts for the register estimate (see launch._registers)
        self.var_runtime: set = set()   # variables ever assigned a runtime value
        self.iter_words = 0             # registers of the open range iterators at the deepest nesting
        self.unroll_words = 0           # load results in flight in an unrolled group, beyond one iteration's
        self.math_regs = 0              # scratch registers of the libdevice functions called

    def block_of(self, cta: int) -> tuple:
        gx, gy, _ = self.grid
        return (cta % gx, (cta // gx) % gy, cta // (gx * gy))

    def thread_of(self, p: int) -> tuple:
        bx, by, _ = self.block
        return (p % bx, (p // bx) % by, p // (bx * by))


# ---- the chunk ----------------------------------------------------------------------------------------------

class Chunk(Recording, Arith, ComplexMath, Control, Indexing, Views, Records, Vectors, MemoryAccess, Atomics, WarpOps,
            DeviceLibrary):
    """``_rt`` of the rewritten kernel: executes ``C`` consecutive CTAs in lockstep and records their trace."""

    def __init__(self, launch: Launch, first_cta: int, n_ctas: int):
        L = launch
        self.L = L
        self.ck = L.ck
        self.first = first_cta
        self.C = n_ctas
        self.P = L.P
        self.wpc = L.wpc
        self.n_warps = n_ctas * L.wpc
        self.recording = L.record
        cta = first_cta + np.arange(n_ctas, dtype=np.int64)
        gx, gy = L.grid[0], L.grid[1]
        self.ctaid = [(cta % gx).astype(np.int32)[:, None], ((cta // gx) % gy).astype(np.int32)[:, None],
                      (cta // (gx * gy)).astype(np.int32)[:, None]]
        # ``full``: every thread of the chunk; ``base``: every thread that has not exited the kernel (after a
        # top-level ``if ...: return`` it is the surviving lanes, so assignments there need no merge)
        self.full = self.base = Mask(L.exist)
        self.mask = self.base
        self.loop_depth = 0
        self.narrowed = False           # inside ``e`` of ``e & small_constant``: 32-bit integer arithmetic
        self.frames: list[Frame] = []
        self.n_returns = 0
        self.n_lost = 0
        # trace
        self.ops: list[Op] = []
        self.op_rows: list[int] = []
        self.rows: list[np.ndarray] = []
        self.row_total: list[int] = []
        self.flops = 0
        self._sreg_seen: set = set()
        self._fields_seen: set = set()       # kernel parameters read (array data/shape/size, descriptor)
        self._signs_seen: set = set()        # index values whose sign (for wraparound) is computed
        self._wraps_seen: set = set()        # (index value, array, dim) wrapped already
        self._cvt_seen: set = set()          # (value, type) conversions computed already
        self._row_cse: set = set()           # (array, dim, index value): high halves of a row offset
        self._addr_cse: dict = {}
        self._view_cse: dict = {}            # views and element offsets of views computed already (views.py)
        self._arith_cse: dict = {}           # (op, operands, mask) -> (value key, deps): pure arithmetic done once
        self._vec_loads: dict = {}           # shared-memory vector loads of the current straight-line region
        self._load_cse: dict = {}            # loads since the last store / barrier, by element (redundant-load
        #                                      elimination: LLVM's GVN reuses a loaded value, LICM hoists it)
        self._loops: list[LoopRecord] = []   # loop executions, for unroll_loops
        self._straight: list[tuple[int, int]] = []   # op spans of fully unrolled constant-trip loops
        self._open_loops: list[LoopRecord] = []
        self._iter_words = 0
        self._mem_cache: dict = {}
        self._last_parts = ((), 0)
        # memory
        self.shared_buf = np.zeros((n_ctas, -(-L.shared_total // 16) * 16), np.uint8) if L.shared_total else None
        self._shared: dict = {}
        self._local: dict = {}
        self._thread_row = None
        if self.recording:
            full = np.tile(L.warp_lanes, n_ctas)
            self.base.rid = self._add_row(full)

    def table(self) -> OpTable:
        if not self.ops:
            return OpTable(self.first, self.C, self.wpc, [], np.zeros((0, self.n_warps), np.uint8))
        if self._loops or self._straight:
            self.L.unroll_words = max(self.L.unroll_words, unroll_pressure(self.ops, self._loops))
            if UNROLL:
                self.ops, self.op_rows = unroll_loops(self.ops, self.op_rows, self._loops, straight=self._straight)
            self._loops = []
            self._straight = []
        ids = np.asarray(self.op_rows, dtype=np.int64)
        full_id = self.full.rid
        if not self.L.padded and np.all(ids == full_id):
            active = None
        else:
            active = np.stack(self.rows)[ids]
        return OpTable(self.first, self.C, self.wpc, self.ops, active)

    # ---- special registers ------------------------------------------------------------------------------------
    def sreg(self, name, dim, line) -> V:
        """A special register: %tid/%ctaid/%laneid (S2R), %ntid/%nctaid (constant bank); read once per kernel."""
        if name == "tid":
            v = self.L.tid[dim]
        elif name == "ctaid":
            v = self.ctaid[dim]
        elif name == "ntid":
            v = np.int32(self.L.block[dim])
        elif name == "nctaid":
            v = np.int32(self.L.grid[dim])
        elif name == "laneid":
            v = self.L.laneid
        else:  # pragma: no cover
            raise self._err(UnsupportedConstruct, f"special register {name}", line)
        if self.recording and (name, dim) not in self._sreg_seen and self.mask is not EMPTY:
            self._sreg_seen.add((name, dim))
            self._rec(("sreg", name), line)
        return V(v, (), False)

    def dim3(self, name, line) -> Dim3:
        return Dim3(name)

    def grid(self, n, line):
        out = []
        for d in range(n):
            t = self.sreg("tid", d, line).v
            b = self.sreg("ctaid", d, line).v
            self.sreg("ntid", d, line)
            out.append(V(b.astype(I64) * self.L.block[d] + t, (), False))
        if self.recording and self.mask is not EMPTY:
            self._rec(("grid", n), line)
        return out[0] if n == 1 else tuple(out)

    def gridsize(self, n, line):
        out = []
        for d in range(n):
            self.sreg("ntid", d, line)
            self.sreg("nctaid", d, line)
            out.append(V(np.int64(self.L.block[d] * self.L.grid[d]), (), False))
        if self.recording and self.mask is not EMPTY:
            self._rec(("gridsize", n), line)
        return out[0] if n == 1 else tuple(out)
