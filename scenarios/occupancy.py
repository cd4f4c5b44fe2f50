"""Occupancy: the same grid-stride copy with more dynamic shared memory per block fits fewer blocks per SM.
Fewer resident warps hide less DRAM latency, so the copy slows down once occupancy falls far enough."""
from _common import run, table

rows = []
for kb in (0, 16, 48, 100, 200):
    m = run("grid_stride_copy.py", n=1 << 18, dyn_shared_bytes=kb * 1024)
    rows.append([kb, m["ctas_per_sm"], m["occupancy_limiter"], f"{m['occupancy_theoretical_pct']:.1f}%",
                 f"{m['cycles']:,.0f}"])
table(rows, ["dyn smem KB", "blocks/SM", "limiter", "theoretical occupancy", "cycles"])
