"""Wave quantization: 132 SMs run 132 tiles at once: 133 tiles take two waves, nearly twice the time of 132.  Prints
the small-size table; ``gpusim scenario wave_quantization`` runs it at full size beside the H100's measured times."""
from _common import main

main("wave_quantization")
