"""Lowering tile ops to per-warp instruction groups, the way Triton 3.6 lowers them on Hopper (and Ampere).

One program = one CTA of ``num_warps`` warps.  Every tile op becomes ``Op``s of the trace (``gpusim.trace``);
what each unit of work costs is the data in ``costs.py`` (read off Triton 3.6's sm_90 SASS and checked against
the H100's Nsight Compute counts); the lowering decides how many units an op has.  ``Recorder`` (here) is the
composition of one module per compiler pass / room of the chip: ``_layouts`` (encodings, element maps),
``_coalescing`` (the LSU's coalescer over a chunk of programs), ``_lower_base`` (recorded ops, emission,
backward layout propagation), ``_lower_elementwise`` (arith and index arithmetic), ``_lower_memory`` (loads and
stores: layout, vector width, addresses, cp.async), ``_lower_dot`` (wgmma / mma.sync / FMA), ``_lower_tma`` (tensor descriptors: TMA bulk copies), ``_lower_reduce``
(reductions, scans), ``_lower_loops`` (loops, software pipelining), ``_resources`` (registers and shared
memory), ``_tables`` (joining the chunk tables).  In short:

* Layouts.  A load/store gets Triton's *coalesced* blocked layout (``Coalesce`` pass): order by decreasing
  contiguity of the pointer (ties keep the lower dimension first: a pointer contiguous in no dimension, like the
  B tile of an odd-strided matmul, walks its lanes down dimension 0), ``sizePerThread`` along the fastest dim =
  min(alignment, 16 B / element, elements per thread), threads of a warp filling the fastest dim first, then
  warps (``BlockedEncodingAttr``).  A dot result has the MMA layout; other values inherit their operand's
  layout.  A load whose value is only used by math in another layout (FlashAttention backward's row statistics
  next to an MMA tile) takes that layout, as Triton's layout propagation rematerializes it there.
* Values that have no layout of their own (index arithmetic: ``tl.arange``, offsets, masks, pointers) get the
  layouts of the ops that consume them, as Triton propagates layouts backwards from its anchors: a probe run
  records each site's consumer layouts; a value used in two layouts is computed twice.  Such an op costs one
  instruction per *distinct register value* per thread: along a dimension where the value is affine with a
  compile-time step (``pid * BLOCK + tl.arange``) one register covers all of a thread's elements (the rest
  are immediate offsets); along other dimensions every run of contiguous (or equal) elements needs its own.
* Vector width of a global access = min(sizePerThread, alignment = min(divisibility / element bytes,
  contiguity), mask constancy) from the joined AxisInfo of the pointer (``_axisinfo``).  Each thread issues
  ``elements_per_thread / vec`` instructions of ``vec * element_bytes`` bytes; lane addresses go through the
  coalescer (``coalesce_global``), vectorized across all programs of a chunk.  A masked load first sets its
  destination registers to ``other``.
* ``tl.dot``: Hopper ``wgmma.mma_async`` (MMAv3, m64nNk16 / k8 tf32 / k32 int8) when num_warps % 4 == 0,
  M % 64 == 0 and N % 8 == 0; else ``mma.sync`` m16n8k16 (MMAv2) with ``ldmatrix`` from shared memory (also
  on the a100 / rtx3090 presets); fp32 with ``input_precision="ieee"`` and fp64 use FMA.  Operands loaded from
  global memory are staged through shared memory (Triton's NVMMA 128-byte-swizzled layout; stores into it are
  one instruction per register vector of the load's layout, with the bank conflicts of that layout).
  warpsPerCTA follows ``warpsPerTileV3/V2``; a dot whose result feeds another dot (FlashAttention) puts all
  warps along M.
* Software pipelining (``num_stages``, ``tl.range(num_stages=)``): a load inside a runtime loop whose value
  reaches a dot operand (directly or through elementwise math) and whose vector is >= 4 B becomes ``cp.async``
  (ASYNC_COPY) into a ring of ``num_stages`` shared buffers; the copy for iteration i + num_stages - 1 is
  issued at the start of iteration i (copies for iterations 0 .. num_stages - 2 form the prologue), and an
  ASYNC_WAIT at the load's place waits for its own iteration's copy.
* Tensor descriptors (``_lower_tma``): a ``desc.load`` is a Hopper TMA bulk copy -- one ASYNC_COPY of one
  instruction issued by one thread of warp 0 (UTMALDG) whose requests are the box's in-bounds 128 B lines, an
  mbarrier wait (ASYNC_WAIT + the CTA barrier every warp waits at), then wgmma reads the box from shared memory
  or an ld.shared brings it to registers; in a runtime loop it is multi-buffered like a cp.async.  A
  ``desc.store`` stages the tile in shared memory (STSM) and one thread copies it out (UTMASTG).
* Reductions: in-thread combines, ``log2(lanes)`` shuffle+combine steps, and across warps Triton's round trip
  through shared memory (partials stored, barrier, read back and shuffled, result stored, barrier, read).
  Register tiles in the MMA layout reach a blocked store through shared memory (STS, barrier, LDS/LDSM).

Shared memory per CTA (bytes) = the largest, over loops (and the code outside loops), of: sum over that loop's
pipelined loads of num_stages x tile bytes (num_stages - 1 for a load that reaches a dot only through other
math) + staged dot operands (a loop-invariant one, like FlashAttention's Q, is staged once) + the largest
reduction / layout-conversion scratch (Triton's allocator reuses memory between sequential loops).  This equals
Triton 3.6's ``metadata.shared`` for every kernel of the suite.  Registers per thread: ``register_estimate``.
Shared-memory accesses are modelled without bank conflicts: Triton's NVMMA 128-byte swizzle makes the staging
stores, ldmatrix reads and conversion scratch conflict-free (the H100's small measured counts grow with the
number of K iterations, not with the address pattern); a reduction's partials are read by their owner warps only.
"""
from __future__ import annotations

from . import costs as K
from ._coalescing import coalesce_programs, shared_ideal
from ._layouts import WARP, Layout, blocked, coords, default_layout, distinct_values, elem_map, mma_layout
from ._lower_base import Facts, LoweringBase, RecOp
from ._lower_dot import DotLowering
from ._lower_elementwise import ElementwiseLowering, affine
from ._lower_loops import LoopLowering, _Loop
from ._lower_memory import MemoryLowering
from ._lower_reduce import ReduceLowering
from ._lower_tma import TmaLowering
from ._lower_spill import SpillLowering, SpillPlan
from ._resources import Region, Stats, register_estimate, shared_estimate
from ._tables import merge_tables

__all__ = ["Recorder", "Facts", "Stats", "Region", "RecOp", "Layout", "WARP", "affine", "blocked", "coords",
           "default_layout", "distinct_values", "elem_map", "mma_layout", "coalesce_programs", "shared_ideal",
           "register_estimate", "shared_estimate", "merge_tables"]


class Recorder(MemoryLowering, TmaLowering, DotLowering, ReduceLowering, ElementwiseLowering, LoopLowering,
               SpillLowering, LoweringBase):
    """Lowers the tile ops of one chunk of programs into the op list of one OpTable."""

    def __init__(self, gpu, num_warps: int, num_stages: int, P: int, facts: Facts, stats: Stats, probe=False,
                 n_ptr_args: int = 0, n_scalar_args: int = 0, spill: SpillPlan | None = None, first: int = 0):
        self.gpu = gpu
        self.spill = spill                   # ptxas's register spills (``_lower_spill``), None: none / not known
        self.first = first                   # the chunk's first program
        self.W = num_warps
        self.S = num_stages
        self.P = P
        self.facts = facts
        self.stats = stats
        self.probe = probe
        self.ops: list[RecOp] = []
        self.loops: list[_Loop] = []
        self.hopper = gpu.tensor.mma_kind == "wgmma"
        self._staged: dict = {}
        self._div_setup: set = set()
        self._advanced: set = set()
        self._reduce_setup = False
        self.n_desc = -1                     # descriptors the program has made in the kernel (their scratch slots)
        self._access_cache: dict = {}        # (site, store) -> what _global_access needs to reuse its last requests
        self._const_done: set = set()
        self._const_keep: list = []
        # the program's fixed code: stack pointer, thread index, descriptors, its arguments, EXIT
        self._cost(K.PROGRAM, 1, (), line=0)
        if n_ptr_args:
            self._cost(K.POINTER_ARG, n_ptr_args, (), line=0)
        if n_scalar_args:
            self._cost(K.SCALAR_ARG, n_scalar_args, (), line=0)
