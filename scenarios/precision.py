"""Lower precision: ReLU in fp16 moves half the bytes of fp32: a memory-bound kernel runs up to twice as fast.  Prints
the small-size table; ``gpusim scenario precision`` runs it at full size beside the H100's measured times."""
from _common import main

main("precision")
