"""Row walk vs column walk of an n x n matrix, one thread per row (or column).  The column walk is coalesced
(4 sectors per request); the row walk is not (32), but each thread reuses its row's 128 B line from L1 over
the next 31 iterations.  On an H100 the row walk wins at these sizes: measure before you believe a rule."""
from _common import run, table

rows = []
for walk in ("row", "col"):
    m = run("row_col_sum.py", n=512, walk=walk)
    rows.append([walk, f"{m['gld_sectors_per_request']:.0f}", f"{m['l1_hit_rate_pct']:.0f}%",
                 f"{m['dram_bytes_read'] / 2**20:.2f}", f"{m['cycles']:,.0f}"])
table(rows, ["walk", "sectors/request", "L1 hit rate", "DRAM MiB read", "cycles"])
