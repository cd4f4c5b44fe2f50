"""Warp divergence: threads branch on (threadIdx.x // group) % 2 into two loop bodies of equal cost.  With
group >= 32 every warp takes one side; below 32 each warp runs both sides with half its lanes masked off."""
from _common import run, table

rows = []
for group in (32, 16, 8, 4, 2, 1):
    m = run("divergence.py", n=1 << 13, group=group, iters=16)
    rows.append([group, f"{m['inst_executed']:,}", f"{m['threads_per_inst']:.1f}", f"{m['cycles']:,.0f}"])
table(rows, ["group", "warp instructions", "active threads/inst", "cycles"])
