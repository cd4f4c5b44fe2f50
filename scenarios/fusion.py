"""Kernel fusion: sin(x)^2 + cos(x)^2 as one kernel vs five kernels that each read and write DRAM.  The fused
kernel moves 2 arrays' worth of bytes; the unfused chain moves 12."""
from _common import run, table

rows = []
for fused in (True, False):
    m = run("tl_sincos.py", n=1 << 20, fused=fused)
    rows.append(["fused" if fused else "unfused", m["kernels"],
                 f"{(m['dram_bytes_read'] + m['dram_bytes_write']) / 2**20:.1f}", f"{m['cycles']:,.0f}"])
table(rows, ["version", "kernels", "DRAM MiB", "cycles"])
