"""Wave quantization: 128x128 output tiles of a square matmul.  At 1408 there are 121 tiles, fewer than
the 132 SMs (one wave); at 1536 there are 144: a second, nearly empty wave costs almost as much as the first."""
from _common import run, table

rows = []
for n in (1280, 1408, 1536):
    m = run("tl_matmul.py", M=n, N=n, K=n)
    tiles = (n // 128) ** 2
    rows.append([n, tiles, f"{m['waves']:.2f}", f"{m['cycles']:,.0f}", f"{2 * n**3 / m['cycles'] / 132:,.0f}"])
table(rows, ["size", "tiles", "waves", "cycles", "FLOP/cycle/SM"])
