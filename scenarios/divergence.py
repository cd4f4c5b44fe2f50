"""Warp divergence: a warp whose threads branch both ways runs both paths, one after the other, with lanes masked off.
Prints the small-size table; ``gpusim scenario divergence`` runs it at full size beside the H100's measured times."""
from _common import main

main("divergence")
