"""Coalescing: out[i] = a[i * stride].  As the stride grows, a warp's 32 loads spread over more 32 B sectors
(4 per request when coalesced, 32 when every lane has its own sector), and DRAM moves bytes nobody uses."""
from _common import run, table

rows = []
for stride in (1, 2, 4, 8, 16, 32):
    m = run("strided_read.py", n=1 << 16, stride=stride)
    rows.append([stride, f"{m['gld_sectors_per_request']:.1f}", f"{m['gld_efficiency_pct']:.0f}%",
                 f"{m['dram_bytes_read'] / 2**20:.2f}", f"{m['cycles']:,.0f}"])
table(rows, ["stride", "sectors/request", "load efficiency", "DRAM MiB read", "cycles"])
