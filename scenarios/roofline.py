"""The roofline: below the ridge a kernel is bound by bandwidth (FLOPs are free), above it by the compute ceiling.
Prints the small-size table; ``gpusim scenario roofline`` runs it at full size beside the H100's measured times."""
from _common import main

main("roofline")
