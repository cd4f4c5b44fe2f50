"""The execution of one chunk of programs, and where in the kernel's source an op comes from.

``State``: the programs' ids, the stack of active-program masks that program-varying control flow pushes
(masked lockstep), the programs that returned, and the recorder that lowers each op into the trace (None for
purely functional runs).  The one being executed is ``_core.ST``.  ``user_site`` / ``user_line``: the kernel
source line (and static-op key) of the innermost kernel frame, for error messages and the trace's lines.
"""
from __future__ import annotations

import sys

import numpy as np


# ---------------------------------------------------------------------------------------------------------
# execution state
# ---------------------------------------------------------------------------------------------------------

#: calls of the running launch that gpusim executes as no-ops (``tl.device_print`` ...): its report notes them
IGNORED_CALLS: set = set()
_CODE_INFO: dict = {}            # code object -> (filename, function name) of transformed kernel code


class State:
    """One lockstep execution of a chunk of programs."""

    def __init__(self, *, pids: np.ndarray, grid, num_warps: int, num_stages: int, kernel_name: str,
                 rec=None, probe: bool = False, buffers=(), first_program: int = 0):
        self.P = int(pids.shape[0])
        self.pids = pids                       # int32 (P, 3)
        self.grid = tuple(grid)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.kernel_name = kernel_name
        self.rec = rec
        self.probe = probe
        self.buffers = list(buffers)
        self.first_program = first_program
        self.masks: list[np.ndarray] = []
        self.retired: np.ndarray | None = None
        self._active: np.ndarray | None = None
        self.max_numel = 1
        # programs that wait on each other (a spin lock): see ``defer`` / ``next_round``
        self.write_epoch = 0                   # memory changes so far (a spinning loop makes none)
        self.in_while = 0                      # depth of `while` loops being executed
        self.write_idx = np.zeros(self.P, np.int64)    # per program: stores / atomics executed this round
        self.deferred: np.ndarray | None = None        # programs set aside this round (waiting on others)
        self.defer_point = np.zeros(self.P, np.int64)  # their write_idx where they started waiting
        self.defer_at: np.ndarray | None = None        # replay: writes before this index already happened
        self.atomic_log: list | None = None            # (write index per program, old values) of each atomic
        self.replayed: dict = {}                       # (program, write index) -> old values to return
        self.spin_site: tuple = ("", 0)

    # ---- active programs ---------------------------------------------------------------------------
    def active(self) -> np.ndarray | None:
        """bool (P,) of programs executing the current op; None = all of them."""
        return self._active

    def _update(self):
        a = self.masks[-1] if self.masks else None
        if self.retired is not None:
            a = ~self.retired if a is None else (a & ~self.retired)
        if a is not None and a.all():
            a = None
        self._active = a

    def push(self, mask: np.ndarray | None):
        base = self._active
        if mask is None:
            m = base if base is not None else np.ones(self.P, bool)
        else:
            m = mask if base is None else (mask & base)
        self.masks.append(m)
        self._update()
        return m

    def pop(self):
        self.masks.pop()
        self._update()

    def any_active(self) -> bool:
        return self._active is None or bool(self._active.any())

    def rec_active(self) -> np.ndarray | None:
        """Programs whose current op goes into the trace: the active ones, less those replaying (a round after
        a wait re-executes a program up to where it waited; that part was recorded in its first round)."""
        a = self._active
        if self.defer_at is None:
            return a
        rep = self.write_idx < self.defer_at
        if not rep.any():
            return a
        return ~rep if a is None else (a & ~rep)

    def replaying(self) -> np.ndarray | None:
        """bool (P,): programs whose next store / atomic already happened in an earlier round (skip it)."""
        if self.defer_at is None:
            return None
        rep = self.write_idx < self.defer_at
        return rep if rep.any() else None

    def count_writes(self, programs: np.ndarray | None):
        """Programs (bool (P,), None = all active) executed one more store / atomic."""
        a = self._active if programs is None else programs
        if a is None:
            self.write_idx += 1
        else:
            self.write_idx += a

    def defer(self, programs: np.ndarray, since: np.ndarray, site):
        """``programs`` wait for others that cannot run until this round ends (a spin lock's holder is masked
        off while they spin): they stop here and run again in the next round from the start, replaying their
        first ``since`` stores / atomics (already done) without redoing them."""
        if self.deferred is None:
            self.deferred = np.zeros(self.P, bool)
        self.deferred |= programs
        self.defer_point = np.where(programs, since, self.defer_point)
        self.spin_site = site
        self.retired = programs.copy() if self.retired is None else (self.retired | programs)
        self._update()

    def next_round(self):
        """Start the next round: only the deferred programs run, replaying up to where they waited."""
        d = self.deferred
        self.defer_at = np.where(d, self.defer_point, 0)
        rep = {}
        for idx, old in (self.atomic_log or ()):
            sel = np.nonzero(d & (idx >= 0) & (idx < self.defer_at))[0]
            for p in sel.tolist():
                rep[(p, int(idx[p]))] = old[p] if old.shape[0] > 1 else old[0]
        self.replayed = rep
        self.atomic_log = [] if self.atomic_log is not None else None
        self.write_idx = np.zeros(self.P, np.int64)
        self.retired = ~d
        self.deferred = None
        self.masks = []
        self._update()

    def retire(self) -> bool:
        """``return`` under a program-varying condition: the active programs stop.  True if none remain."""
        a = self._active
        if a is None:
            self.retired = np.ones(self.P, bool)
        else:
            self.retired = a.copy() if self.retired is None else (self.retired | a)
        self._update()
        return bool(self.retired.all())


# ---- locating the user's source line ------------------------------------------------------------------

def user_site():
    """(filename, line, site key) of the innermost kernel-source frame calling into tl.

    The site key identifies a static operation: the chain of (code, instruction offset) of all kernel-source
    frames, so a helper inlined at two call sites gives two sites (as Triton inlines it twice).
    """
    f = sys._getframe(1)
    first = None
    key = []
    while f is not None:
        info = _CODE_INFO.get(f.f_code)
        if info is not None:
            if first is None:
                first = (info[0], f.f_lineno)
            key.append((id(f.f_code), f.f_lasti))
        f = f.f_back
    if first is None:
        return "", 0, ()
    return first[0], first[1], tuple(key)


def user_line() -> tuple[str, int]:
    f = sys._getframe(1)
    while f is not None:
        info = _CODE_INFO.get(f.f_code)
        if info is not None:
            return info[0], f.f_lineno
        f = f.f_back
    return "", 0
