"""Tile and burst alignment: a Triton matmul whose sizes are not multiples of 16 loses its 16-byte vector loads:
several times slower.  Prints the small-size table; ``gpusim scenario tile_alignment`` runs it at full size beside
the H100's measured times."""
from _common import main

main("tile_alignment")
