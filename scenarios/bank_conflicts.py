"""Shared-memory bank conflicts: lane i reads word i * stride.  32 banks of 4 bytes serve a warp in
gcd(stride, 32) wavefronts; stride 33 (padding) is conflict-free again."""
from _common import run, table

rows = []
for stride in (1, 2, 4, 8, 16, 32, 33):
    m = run("bank_conflicts.py", stride=stride, reps=16, blocks=4)
    per = m["shared_ld_bank_conflicts"] / max(1, m["shared_ld_wavefronts"] - m["shared_ld_bank_conflicts"])
    rows.append([stride, f"{m['shared_ld_bank_conflicts']:,}", f"{per:.0f}", f"{m['cycles']:,.0f}"])
table(rows, ["stride", "bank conflicts", "conflicts/request", "cycles"])
