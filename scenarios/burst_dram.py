"""Burst-mode DRAM: DRAM moves whole sectors and bursts: a 4 B chunk per 256 B row costs 8x (or more) the bytes it
uses.  Prints the small-size table; ``gpusim scenario burst_dram`` runs it at full size beside the H100's measured
times."""
from _common import main

main("burst_dram")
