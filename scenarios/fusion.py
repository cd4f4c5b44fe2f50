"""Operator fusion: one kernel that keeps intermediates in registers moves 4 B per element; five kernels move 26.
Prints the small-size table; ``gpusim scenario fusion`` runs it at full size beside the H100's measured times."""
from _common import main

main("fusion")
