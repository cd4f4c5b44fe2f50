"""What every scenario script does: print its scenario's table at the small size (``gpusim.scenario``).

The scenarios themselves (variants, small sizes, headline) live in ``gpusim/scenario_catalog.py``; the command
``gpusim scenario NAME`` runs one at full size, with the H100's measured times beside the simulated ones.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def main(name: str) -> None:
    """Print scenario ``name`` at the small size (what its golden ``.out`` holds)."""
    from gpusim import scenario
    print(scenario.format_text(scenario.run(name, small=True)), end="")
