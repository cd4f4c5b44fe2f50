"""Tile/burst alignment: a Triton matmul at K = N = 1409 cannot prove its rows 16-byte aligned, so every load
becomes a 2-byte scalar access and the pipelined cp.async path is lost -- many times slower than at 1408."""
from _common import run, table

rows = []
for n in (1408, 1409):
    m = run("tl_matmul.py", M=n, N=n, K=n)
    vw = sorted(set(v for v in m["meta"].get("vector_widths", {}).values())) if isinstance(
        m["meta"].get("vector_widths"), dict) else m["meta"].get("vector_widths")
    rows.append([n, str(vw), f"{m['inst_executed']:,}", f"{m['cycles']:,.0f}"])
table(rows, ["size", "load vector widths", "warp instructions", "cycles"])
