"""How many CTAs fit on one SM: the CUDA occupancy calculator for a GPU config.

Four limits bound the CTAs resident on an SM: warps (64 on H100), CTA slots (32), registers (65536, allocated
per warp in units of 256) and shared memory (per-CTA bytes plus the 1 KB the system reserves, rounded to
128 B, against the carve-out the driver picks).  The smallest limit wins; it is the *limiter* a report names.
The driver picks the smallest shared-memory carve-out that does not lower occupancy; what is left of the
unified SRAM is L1 data cache.

It lives at the package's base (it needs only the GPU config) so that both the timing engine and the front
ends' launch checks use it: a cooperative launch (``cuda.cg.this_grid().sync()``) must fit all its CTAs on the
chip at once (``max_coresident_ctas``).  ``gpusim.timing.occupancy`` re-exports it.
"""
from __future__ import annotations

from dataclasses import dataclass

from .config import GPUConfig
from .errors import LaunchError


@dataclass(frozen=True)
class Occupancy:
    ctas_per_sm: int
    warps_per_cta: int
    limiter: str                    # "warps" | "ctas" | "registers" | "shared_memory"
    limits: dict[str, int]          # CTAs per SM each resource allows
    registers_per_thread: int       # after allocation rounding
    shared_bytes_per_cta: int       # as allocated (with reserve and rounding)
    carveout_bytes: int             # shared memory configured per SM
    l1_bytes: int                   # what remains for the L1 data cache
    max_warps: int

    @property
    def warps_per_sm(self) -> int:
        return self.ctas_per_sm * self.warps_per_cta

    @property
    def theoretical_pct(self) -> float:
        """``sm__maximum_warps_per_active_cycle_pct``."""
        return 100.0 * self.warps_per_sm / self.max_warps


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(gpu: GPUConfig, threads_per_cta: int, regs_per_thread: int, shared_bytes_per_cta: int,
              kernel: str = "") -> Occupancy:
    """Theoretical occupancy of a launch; raises LaunchError for launches the GPU would refuse."""
    sm = gpu.sm
    where = f"kernel {kernel!r}: " if kernel else ""
    if threads_per_cta < 1:
        raise LaunchError(f"{where}a block needs at least one thread")
    if threads_per_cta > sm.max_threads_per_cta:
        raise LaunchError(f"{where}{threads_per_cta} threads per block exceeds the limit of "
                          f"{sm.max_threads_per_cta} on {gpu.name}")
    if shared_bytes_per_cta > sm.max_shared_per_cta_bytes:
        raise LaunchError(f"{where}{shared_bytes_per_cta} bytes of shared memory per block exceeds the limit of "
                          f"{sm.max_shared_per_cta_bytes} bytes on {gpu.name}")
    regs = max(1, min(regs_per_thread, sm.max_registers_per_thread))
    if regs_per_thread > sm.max_registers_per_thread:
        raise LaunchError(f"{where}{regs_per_thread} registers per thread exceeds {sm.max_registers_per_thread}")
    warps = -(-threads_per_cta // sm.warp_size)
    limits: dict[str, int] = {}
    limits["warps"] = sm.max_warps // warps
    limits["ctas"] = sm.max_ctas
    limits["threads"] = sm.max_threads // (warps * sm.warp_size)
    regs_per_warp = _round_up(regs * sm.warp_size, sm.register_alloc_unit)
    limits["registers"] = sm.registers // (regs_per_warp * warps)
    smem = 0
    if shared_bytes_per_cta > 0 or sm.shared_reserved_per_cta_bytes:
        smem = _round_up(shared_bytes_per_cta + sm.shared_reserved_per_cta_bytes, sm.shared_alloc_unit_bytes)
    others = min(limits["warps"], limits["ctas"], limits["threads"], limits["registers"])
    # the driver picks the smallest carve-out that keeps the occupancy the other limits allow
    carveouts = sorted(k * 1024 for k in sm.shared_carveouts_kb)
    carve = carveouts[-1]
    for c in carveouts:
        if smem == 0 or c // smem >= others:
            carve = c
            break
    limits["shared_memory"] = (carve // smem) if smem else sm.max_ctas
    if limits["shared_memory"] == 0:
        # need the largest carve-out to fit even one CTA
        carve = carveouts[-1]
        limits["shared_memory"] = carve // smem
    order = ["warps", "threads", "ctas", "registers", "shared_memory"]
    ctas = min(limits[k] for k in order)
    if ctas < 1:
        raise LaunchError(f"{where}a block of {threads_per_cta} threads with {regs} registers per thread and "
                          f"{shared_bytes_per_cta} B shared memory does not fit on one SM of {gpu.name}")
    # name the binding limit: at full occupancy nothing is worth raising ("warps"); in a tie prefer the
    # resource the kernel's author controls (registers, then shared memory they asked for)
    if ctas * warps >= sm.max_warps:
        limiter = "warps"
    else:
        tie_order = ["registers", "shared_memory", "warps", "threads", "ctas"]
        if shared_bytes_per_cta == 0:
            tie_order.remove("shared_memory")
            tie_order.append("shared_memory")
        limiter = next(k for k in tie_order if limits[k] == ctas)
    if limiter == "threads":
        limiter = "warps"
    limits.pop("threads")
    return Occupancy(ctas_per_sm=ctas, warps_per_cta=warps, limiter=limiter, limits=limits,
                     registers_per_thread=regs, shared_bytes_per_cta=smem, carveout_bytes=carve,
                     l1_bytes=gpu.sm.l1_shared_bytes - carve, max_warps=sm.max_warps)


def max_coresident_ctas(gpu: GPUConfig, threads_per_cta: int, regs_per_thread: int, shared_bytes_per_cta: int,
                        kernel: str = "") -> int:
    """CTAs of one launch the whole chip holds at once (SMs x CTAs per SM): the largest grid a cooperative
    launch accepts (``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` x ``multiProcessorCount``, what numba's
    ``max_cooperative_grid_blocks`` returns)."""
    occ = occupancy(gpu, threads_per_cta, regs_per_thread, shared_bytes_per_cta, kernel)
    return occ.ctas_per_sm * gpu.chip.sm_count
