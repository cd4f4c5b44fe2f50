"""Tiling: a 16x16 shared-memory tile loads each matrix element once per tile instead of once per output.  Prints the
small-size table; ``gpusim scenario tiling`` runs it at full size beside the H100's measured times."""
from _common import main

main("tiling")
