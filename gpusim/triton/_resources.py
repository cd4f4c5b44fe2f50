"""Registers per thread and shared memory per CTA, as Triton's allocators hand them out.

A ``Region`` is what is live while one loop runs (or outside every loop): pipeline buffers, staged dot
operands, reduction / layout-conversion scratch (``AllocateSharedMemory`` reuses shared memory between
sequential loops), and the register tiles ptxas must keep.  ``Stats`` collects the regions and the decisions
reported in a trace's ``meta``; ``register_estimate`` / ``shared_estimate`` take the region that needs the
most.  Units: registers per thread, bytes per CTA.
"""
from __future__ import annotations

from . import costs as K


class Region:
    """Resources live while one loop runs (or outside every loop): Triton's allocator reuses shared memory and
    registers between sequential loops, so a kernel needs the maximum over regions, not the sum."""

    def __init__(self):
        self.pipe: dict = {}        # pipelined load site -> num_stages x tile bytes
        self.staging: dict = {}     # staged dot operand -> bytes
        self.scratch = 0            # largest reduction / layout-conversion scratch (bytes)
        self.acc: dict = {}         # dot site -> fp32 accumulator registers per thread
        self.frag: dict = {}        # dot site -> operand fragment registers per thread
        self.loads: dict = {}       # non-pipelined load site -> registers per thread
        self.addr: dict = {}        # pointer site -> 64-bit address registers per thread kept live in the loop
        self.res: dict = {}         # dot site (no accumulator input) -> fp32 result registers per thread
        self.ew = 0                 # largest elementwise float tile, registers per thread
        self.carry = 0              # tiles a loop of two or more trips carries (its accumulators), registers per thread
        self.mfn = 0                # elements per thread through a multi-instruction math function or Philox

    def smem(self) -> int:
        return int(sum(self.pipe.values()) + sum(self.staging.values()) + self.scratch)

    def features(self) -> dict:
        return {"dot_accumulators": int(sum(self.acc.values())), "dot_results": int(sum(self.res.values())),
                "dot_operand_fragments": int(sum(self.frag.values())), "loaded_tiles": int(sum(self.loads.values())),
                "addresses": int(sum(self.addr.values())), "elementwise": int(self.ew),
                # carried tiles other than the dot accumulators (counted above): ``acc += tl.load(...)`` in a loop
                "carried_tiles": max(0, int(self.carry) - int(sum(self.acc.values())) - int(sum(self.res.values()))),
                "math_fn_elements": int(self.mfn)}

    def regs(self) -> int:
        return int(sum(K.REG_WEIGHTS[k] * v for k, v in self.features().items()))


class Stats:
    """Per-launch results shared by all chunks: shared memory, register basis, decisions for ``meta``."""

    def __init__(self):
        self.regions: dict = {}           # innermost runtime loop (site key) or None -> Region
        self.mem_sites: dict = {}         # "file:line" -> vector decision
        self.dots: dict = {}
        self.flops = 0.0
        self.math_fns: set = set()        # libdevice transcendental functions used (sin, cos, log, ...)
        self.waits: dict = {}             # "file:line" of a spin loop -> [programs that waited, most rounds]

    def region(self, key) -> Region:
        r = self.regions.get(key)
        if r is None:
            r = self.regions[key] = Region()
        return r


# ---------------------------------------------------------------------------------------------------------
# registers and shared memory
# ---------------------------------------------------------------------------------------------------------

def register_estimate(stats: Stats, num_warps: int) -> tuple[int, dict]:
    """Registers per thread: a base plus, for the loop (or the code outside loops) that needs the most, a
    weighted sum of the register tiles live there (``costs.REG_WEIGHTS``: dot accumulators and results, operand
    fragments held in registers, loaded tiles, 64-bit addresses of pointers advanced in the loop, the largest
    elementwise temporary).  Returns (estimate before the 255 cap, basis)."""
    key, reg = None, Region()
    for k, r in stats.regions.items():
        if r.regs() > reg.regs() or (key is None and r.regs() == reg.regs() and r.regs()):
            key, reg = k, r
    basis = {"base": K.REG_BASE}
    basis.update(reg.features())
    extra = max(0, len(stats.math_fns) - 1)
    basis["extra_libdevice_functions"] = extra
    est = K.REG_BASE + reg.regs() + K.REG_PER_EXTRA_LIBDEVICE_FN * extra
    return int(round(est)), basis


def shared_estimate(stats: Stats) -> tuple[int, dict]:
    reg = Region()
    for r in stats.regions.values():
        if r.smem() > reg.smem():
            reg = r
    basis = {"pipeline_buffers": int(sum(reg.pipe.values())), "dot_operand_staging": int(sum(reg.staging.values())),
             "scratch": reg.scratch,
             "formula": "max over loops (and the code outside loops) of pipeline buffers + staged dot operands + the "
                        "largest reduction/layout-conversion scratch; pipeline buffer = num_stages x tile bytes per "
                        "cp.async-pipelined load"}
    return reg.smem(), basis


def check_shared(spec, smem: int, limit: int) -> None:
    """Triton's ``CompiledKernel._init_handles``: a kernel needing more shared memory per CTA than the GPU's opt-in
    limit raises ``OutOfResources`` at its launch."""
    if smem > limit:
        from ._rewrite import source_of
        from . import _errors
        _, first, file = source_of(spec.fn)
        e = _errors.OutOfResources(int(smem), int(limit), "shared memory")
        e.gpusim_where = f"{file}:{first}: kernel {spec.name!r}"
        raise e
