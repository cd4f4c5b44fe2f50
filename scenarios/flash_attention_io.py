"""FlashAttention vs naive attention: the naive version writes the N x N score matrix to DRAM and reads it
back twice; FlashAttention keeps it on chip (online softmax), so its DRAM traffic is just Q, K, V and O."""
from _common import run, table

rows = []
for name, f in (("naive (3 kernels)", "tl_attention_naive.py"), ("flash attention", "tl_flash_attn_fwd.py")):
    m = run(f, Z=1, H=2, N_CTX=1024, HEAD_DIM=64)
    rows.append([name, m["kernels"], f"{(m['dram_bytes_read'] + m['dram_bytes_write']) / 2**20:.1f}",
                 f"{m['cycles']:,.0f}"])
table(rows, ["attention", "kernels", "DRAM MiB", "cycles"])
