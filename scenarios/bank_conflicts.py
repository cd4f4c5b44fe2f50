"""Shared-memory bank conflicts: lane i reading word i*stride hits gcd(stride, 32) times the same bank: stride 32 is
32-way, 33 is free.  Prints the small-size table; ``gpusim scenario bank_conflicts`` runs it at full size beside
the H100's measured times."""
from _common import main

main("bank_conflicts")
