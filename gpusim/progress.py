"""Progress bars for long simulations: shown on a terminal, silent otherwise (tqdm's ``disable=None``).

tqdm is used rather than a hand-written bar because it already handles terminal detection, rate estimates
and clean teardown on errors.
"""
from __future__ import annotations

import sys


class StepProgress:
    """Callable ``(done, total)`` that drives a tqdm bar on stderr when stderr is a terminal."""

    def __init__(self, desc: str, unit: str = "kernel"):
        self.desc, self.unit, self.bar = desc, unit, None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=self.desc, unit=self.unit, disable=None, leave=False,
                            file=sys.stderr)
        self.bar.n = done
        self.bar.refresh()
        if done >= total:
            self.bar.close()


def cta_progress(total: int, desc: str = "CTAs"):
    """A callable ``(done)`` for the engine: advances a bar over the grid's CTAs (None off a terminal)."""
    if not sys.stderr.isatty() or total < 2000:
        return None
    from tqdm import tqdm
    bar = tqdm(total=total, desc=desc, unit="CTA", leave=False, file=sys.stderr, mininterval=0.3)

    def step(done: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return step
