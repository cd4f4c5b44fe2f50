"""Online softmax: FlashAttention vs naive attention: FlashAttention keeps the N x N scores on chip (online softmax):
DRAM traffic grows with N, not N^2.  Prints the small-size table; ``gpusim scenario flash_attention`` runs it at
full size beside the H100's measured times."""
from _common import main

main("flash_attention")
