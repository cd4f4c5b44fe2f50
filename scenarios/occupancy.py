"""Occupancy: fewer resident warps hide less memory latency: shared memory, registers or block size can cap them.
Prints the small-size table; ``gpusim scenario occupancy`` runs it at full size beside the H100's measured times."""
from _common import main

main("occupancy")
