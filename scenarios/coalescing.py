"""Coalescing: a warp's 32 loads are served by as many 32 B sectors as they touch: stride 1 needs 4, stride >= 8 needs
32.  Prints the small-size table; ``gpusim scenario coalescing`` runs it at full size beside the H100's measured
times."""
from _common import main

main("coalescing")
