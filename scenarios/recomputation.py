"""Recomputation: recomputing three sigmoids in the backward pass is cheaper than storing and re-reading their
activations.  Prints the small-size table; ``gpusim scenario recomputation`` runs it at full size beside the H100's
measured times."""
from _common import main

main("recomputation")
