"""Register spills: the local-memory loads and stores ptxas adds when a tile program needs more registers than a
thread may hold (255, or fewer under ``maxnreg``).

Only the real compiler knows them: its SASS (``compilers._sass.loops``) gives, for each loop, the ``LDL`` /
``STL`` instructions (and their widths) one iteration runs, and those outside every loop, and how many times the
warp waits for reloads (an instruction reading a register an ``LDL`` has not yet delivered).  ``SpillPlan``
matches the SASS loops to the kernel's runtime loops by the source line of their back edge (the ``for`` /
``while`` statement) and ``SpillLowering`` emits them into the trace: at the start of each iteration its reloads
in as many dependent groups as there are waits (each group's latency is exposed once: an L1 hit costs little, a
miss to L2 or DRAM a lot), its stores spread over the groups, the iteration's other ops after the last group;
the code outside the loops once, after the program's last op.

Local memory is interleaved per warp: lane ``l`` keeps 32-bit word ``o`` of its frame at
``frame_base + o * 128 + l * 4``, so a full warp's 32-bit ``LDL`` is one 128 B line (four 32 B sectors), a 64-bit
one two lines.  The hardware gives each resident warp a frame of ``stack_bytes * 32`` bytes, so the frames of the
CTAs resident on the chip (SMs x CTAs per SM) bound the footprint the spills keep in L1 / L2: program ``p`` uses
the frames of slot ``p mod slots``.  Without the real compiler there is no spill traffic (the built-in register
estimate only caps the count).  Units: bytes, 128 B lines.
"""
from __future__ import annotations

import numpy as np

from ..trace import LOCAL_BASE, MemAccess, OpKind, Pipe, Space
from ._layouts import WARP

_LINE = 128


class SpillPlan:
    """The spill instructions of one compiled kernel: per runtime loop (by its statement's line) and outside."""

    def __init__(self, sass: dict, stack_bytes: int, slots: int):
        self.frame = max(4, int(stack_bytes))           # bytes per thread
        self.slots = max(1, int(slots))                 # CTA slots on the chip that hold frames
        self.per_loop: dict[int, dict] = {}             # line -> {"LDL"/"STL": {bits: n}}
        self.waits: dict[int, int] = {}                 # line -> reload waits per iteration
        size = {}
        for lp in sass.get("loops", ()):
            local = lp.get("local") or {}
            if not local:
                continue
            ln = int(lp["line"])
            # a loop the compiler versioned (two back edges on one line): the larger body is the main one
            if ln not in self.per_loop or lp["instructions"] > size[ln]:
                self.per_loop[ln] = local
                self.waits[ln] = int(lp.get("reload_waits", 1))
                size[ln] = lp["instructions"]
        self.outside = sass.get("local_outside") or {}
        self.outside_waits = int(sass.get("reload_waits_outside", 1))

    @classmethod
    def of(cls, result, cfg, num_warps: int) -> "SpillPlan | None":
        """The plan of a real compilation (``compilers.Compiled``) that spills, else None."""
        if result is None or not (result.spill_store_bytes or result.spill_load_bytes) or not result.stack_bytes:
            return None
        sass = result.sass or {}
        if "loops" not in sass:
            return None
        from ..errors import LaunchError
        from ..occupancy import occupancy
        try:
            per_sm = occupancy(cfg, WARP * num_warps, max(16, result.registers), result.shared_bytes).ctas_per_sm
        except LaunchError:
            per_sm = 1
        return cls(sass, result.stack_bytes, cfg.chip.sm_count * max(1, per_sm))

    @staticmethod
    def _n(counts: dict, base: str) -> int:
        return sum(int(n) for n in counts.get(base, {}).values())

    def describe(self) -> dict:
        """What a trace's meta keeps: instructions and reload waits per iteration by loop line, outside the loops,
        frame, slots."""
        return {"per_iteration": {str(ln): c for ln, c in sorted(self.per_loop.items())},
                "reload_waits": {str(ln): w for ln, w in sorted(self.waits.items())},
                "outside": self.outside, "reload_waits_outside": self.outside_waits,
                "frame_bytes": self.frame, "frame_slots": self.slots}

    def summary(self) -> str:
        parts = [f"{self._n(c, 'LDL')} LDL ({self.waits[ln]} waits) + {self._n(c, 'STL')} STL per iteration of the "
                 f"loop at line {ln}" for ln, c in sorted(self.per_loop.items())]
        parts.append(f"{self._n(self.outside, 'LDL')} LDL + {self._n(self.outside, 'STL')} STL outside loops")
        return (", ".join(parts) + f" (per warp; frames of {self.frame} B per thread in {self.slots} CTA slots, "
                f"cached in L1 and L2 like other local memory)")

    @staticmethod
    def widths(counts: dict) -> list[int]:
        """The bits of each instruction of ``{bits: n}``, widest first."""
        return [b for b, n in sorted(((int(b), int(n)) for b, n in counts.items()), reverse=True) for _ in range(n)]

    def access(self, widths: list[int], first_program: int, P: int, W: int, word: int = 0) -> MemAccess | None:
        """The accesses of spill instructions of ``widths`` bits for programs ``first_program`` .. ``+P`` (over
        their P * W warps), the first at frame word ``word``, each at the words after the previous one's, wrapping
        round the frame; None when there are none."""
        if not widths:
            return None
        words, masks = [], []
        fw = max(1, self.frame // 4)
        o = word % fw
        for bits in widths:
            w = max(1, bits // 32)
            if o + w > fw:
                o = 0
            for j in range(w):
                words.append(o + j)
                masks.append(0xF if bits >= 32 else (0x3 if bits == 16 else 0x1))
            o += w
        slot = ((first_program + np.arange(P, dtype=np.int64)) % self.slots)[:, None] * W \
            + np.arange(W, dtype=np.int64)[None, :]                  # (P, W): the warp's frame on the chip
        lines = LOCAL_BASE // _LINE + slot.reshape(-1, 1) * fw + np.asarray(words, np.int64)[None, :]
        ptr = np.arange(P * W + 1, dtype=np.int64) * len(words)
        sectors = sum(bin(m).count("1") for m in masks)
        return MemAccess(space=Space.LOCAL, bytes_per_lane=4, bytes_requested=sectors * 32 * P * W, ptr=ptr,
                         line=lines.reshape(-1), smask=np.tile(np.asarray(masks, np.uint8), P * W))


def _split(xs: list, k: int) -> list[list]:
    """``xs`` in ``k`` consecutive parts as even as possible."""
    n = len(xs)
    return [xs[i * n // k:(i + 1) * n // k] for i in range(k)]


class SpillLowering:
    """``Recorder``'s spill hooks (``self.spill``: a SpillPlan or None; ``self.first``: the chunk's first
    program)."""

    def _spill_ops(self, counts: dict, waits: int, line: int):
        """Emit one run of spill code: its reloads in ``waits`` groups, each group waited for before the next is
        issued (the code between two waits needs the values of the group before), its stores spread over the
        groups.  Returns the last reload op (None when there is none)."""
        sp = self.spill
        lds, sts = sp.widths(counts.get("LDL", {})), sp.widths(counts.get("STL", {}))
        k = max(1, min(len(lds), waits))
        last = None
        wl = ws = 0
        for ld, st in zip(_split(lds, k), _split(sts, k)):
            mem = sp.access(st, self.first, self.P, self.W, ws)
            if mem is not None:
                self._emit(OpKind.STORE, Pipe.LSU, len(st), (), mem, label="STL (spill)", line=line)
                ws += sum(max(1, b // 32) for b in st)
            mem = sp.access(ld, self.first, self.P, self.W, wl)
            if mem is not None:
                last = self._emit(OpKind.LOAD, Pipe.LSU, len(ld), (last,), mem, label="LDL (spill)", line=line)
                wl += sum(max(1, b // 32) for b in ld)
        return last

    def spill_iteration(self, lp, line: int) -> None:
        """At the start of an iteration of runtime loop ``lp``: the spills its SASS loop runs per iteration."""
        if self.spill is None or self.probe:
            return
        counts = self.spill.per_loop.get(lp.line)
        if counts:
            lp.gates.append((len(self.ops), self._spill_ops(counts, self.spill.waits.get(lp.line, 1), line)))

    def spill_gate(self, lp) -> None:
        """At the loop's end (before the pipeliner reorders it): every op of an iteration that the reorder keeps in
        it waits for that iteration's reloads."""
        gates = lp.gates
        if not gates:
            return
        for i, (start, gate) in enumerate(gates):
            if gate is None:
                continue
            end = gates[i + 1][0] if i + 1 < len(gates) else len(self.ops)
            for o in self.ops[start:end]:
                if o.loop is not lp and o.label[-7:] != "(spill)":
                    o.deps.append(gate)

    def spill_outside(self) -> None:
        """After the program's last op: the spills outside every loop."""
        if self.spill is not None and not self.probe and self.spill.outside:
            self._spill_ops(self.spill.outside, self.spill.outside_waits, 0)
