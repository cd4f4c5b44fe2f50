"""The lecture scenarios as data: each :class:`Scenario` (a lesson, its variants -- suite cases -- and a headline ratio)
of ``gpusim scenario``; ``scenario.py`` runs them, tabulates and draws them.

Layer: above ``validate`` (a variant is a case of ``gpusim.validate.suite``); ``scenario`` imports it.
"""
from __future__ import annotations

from dataclasses import dataclass

from .validate import suite

#: the dash shown where no measured value applies (small size, no records for the GPU)
NA = "—"


@dataclass(frozen=True)
class Variant:
    """One row of a scenario: ``case`` (a suite case name) at full size, ``small`` merged over its params for
    ``--small`` (None: not run at small size).  ``x`` / ``series`` place it on the scenario's figure."""
    label: str
    case: str
    small: dict | None = None
    x: float | None = None
    series: str = ""
    small_label: str = ""           # the row's label at small size when its parameters change what it says


@dataclass(frozen=True)
class Headline:
    """``metric`` of variant ``slow`` over that of variant ``fast`` (variant labels at full size); the lesson
    says it is above 1."""
    text: str
    slow: str
    fast: str
    metric: str = "time_us"


@dataclass(frozen=True)
class Column:
    """An extra column: ``key`` of the simulated metrics (and of the measured ones when ``hw``), ``fmt`` a
    format spec, ``scale`` divides the value."""
    head: str
    key: str
    fmt: str = ",.0f"
    hw: bool = False
    scale: float = 1.0


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    lesson: str                     # one line
    explain: str                    # a few sentences for the page
    variants: tuple
    headline: Headline
    columns: tuple = ()
    figure: str = "bars"            # "bars" (by label), "lines" (y over x, a line per series), "roofline"
    x_title: str = ""
    x_param: str = ""               # "lines": x is this launch parameter of the row (divided by x_div), at either size
    x_div: float = 1.0
    y_key: str = "time_us"
    y_title: str = "time (µs)"
    x_log: bool = False
    y_log: bool = False

    def small_variants(self) -> list[Variant]:
        return [v for v in self.variants if v.small is not None]

    def variant(self, label: str) -> Variant:
        return next(v for v in self.variants if v.label == label)

    def cases(self) -> list[suite.Case]:
        return [suite.case_by_name(v.case) for v in self.variants]

    def heavy(self, small: bool = False) -> list[str]:
        """Labels of the variants tagged ``heavy`` in the suite (minutes to simulate here); none at small size."""
        return [] if small else [v.label for v in self.variants if "heavy" in suite.case_by_name(v.case).tags]


def _mm(size: int) -> str:
    return f"tl_matmul_{size}_128x128x64"


def _build() -> list[Scenario]:
    S = []
    # 1 -- divergence: the suite's sweep of run widths at 4x its size (four waves of blocks)
    S.append(Scenario(
        "divergence", "Warp divergence",
        "a warp whose threads branch both ways runs both paths, one after the other, with lanes masked off",
        "Threads branch on (threadIdx.x // group) % 2 into two loop bodies of equal cost. With group >= 32 every "
        "warp takes one side; below 32 each warp issues both sides with half its lanes masked off, so the "
        "warp-instruction count and the time go up while the active threads per instruction fall.",
        tuple(Variant(lbl, f"scn_divergence_n1048576_g{g}", {"n": 1 << 16, "iters": 32}) for g, lbl in
              ((32, "group 32 (uniform)"), (16, "group 16"), (1, "group 1"))),
        Headline("divergent / warp-uniform time", "group 1", "group 32 (uniform)"),
        (Column("threads/inst", "threads_per_inst", ".1f", hw=True),)))
    # 2 -- coalescing: stride sweep, row vs column walk
    var = [Variant(f"stride {s}", f"strided_read_s{s}", {"n": 1 << 18}, x=s, series="strided read")
           for s in (1, 2, 4, 8, 16, 32)]
    var += [Variant(f"{w} walk n=1024", f"row_col_sum_{w}_n1024", {"n": 256}, small_label=f"{w} walk n=256")
            for w in ("row", "col")]
    S.append(Scenario(
        "coalescing", "Coalescing",
        "a warp's 32 loads are served by as many 32 B sectors as they touch: stride 1 needs 4, stride >= 8 needs 32",
        "out[i] = a[i * stride]: as the stride grows a warp request spreads over more sectors, and DRAM moves "
        "bytes nobody uses. The row walk of an n x n matrix (one thread per row) is uncoalesced too, yet each "
        "thread reuses its 128 B line from L1 over the next iterations: on an H100 the row walk beats the "
        "column walk at these sizes. Measure before you believe a rule.",
        tuple(var), Headline("uncoalesced / coalesced time", "stride 32", "stride 1"),
        (Column("sectors/req", "gld_sectors_per_request", ".1f", hw=True),
         Column("DRAM MiB", "dram_mib", ".2f", hw=True)),
        figure="bars"))
    # 3 -- burst-mode DRAM
    var = [Variant(f"{c} B chunks", f"scn_burst_c{c}", {"n": 1 << 16}, x=c, series="aligned") for c in
           (4, 8, 16, 32, 64, 128, 256)]
    var += [Variant(f"{c} B chunks +16 B", f"scn_burst_c{c}_off16", {"n": 1 << 16}, x=c, series="16 B misaligned")
            for c in (32, 64, 128)]
    S.append(Scenario(
        "burst_dram", "Burst-mode DRAM",
        "DRAM moves whole sectors and bursts: a 4 B chunk per 256 B row costs 8x (or more) the bytes it uses",
        "The kernel reads n useful fp32 words, one chunk of chunk_bytes from each row of 256 B, and writes them "
        "densely. L2 and DRAM move whole 32 B sectors (and DRAM bursts are wider still), so small or misaligned "
        "chunks move many more bytes than they use. The headline compares the DRAM bytes read at 4 B chunks with "
        "the contiguous copy of the same useful bytes.",
        tuple(var), Headline("DRAM bytes read, 4 B chunks / contiguous", "4 B chunks", "256 B chunks",
                             "dram_bytes_read"),
        (Column("read B/useful B", "read_per_useful", ".2f", hw=True),),
        figure="lines", x_param="chunk_bytes", x_title="chunk bytes per 256 B row", y_key="read_per_useful",
        y_title="DRAM bytes read per useful byte", x_log=True))
    # 4 -- tiling
    var = []
    for n in (256, 512):
        var += [Variant(f"naive n={n}", f"matmul_naive_n{n}", {"n": n // 4}, x=n, series="naive",
                        small_label=f"naive n={n // 4}"),
                Variant(f"tiled n={n}", f"matmul_tiled_n{n}", {"n": n // 4}, x=n, series="16x16 tiles",
                        small_label=f"tiled n={n // 4}")]
    S.append(Scenario(
        "tiling", "Tiling",
        "a 16x16 shared-memory tile loads each matrix element once per tile instead of once per output",
        "The naive SIMT matmul reads a row of A and a column of B from global memory for every output; the tiled "
        "one stages 16x16 tiles of A and B in shared memory behind a barrier, so each global load is reused 16 "
        "times. (The suite's n=1024 pair is left out: minutes to simulate here.)",
        tuple(var), Headline("naive / tiled time", "naive n=512", "tiled n=512"),
        (Column("warp inst (M)", "inst_executed", ".2f", scale=1e6),
         Column("DRAM MiB", "dram_mib", ".1f", hw=True)),
        figure="lines", x_param="n", x_title="matrix size n", y_log=True))
    # 5 -- tile/burst alignment
    var = []
    smalls = {1024: 128, 1280: 256}
    for base in suite.ALIGN_BASES:
        for div, off in suite.ALIGN_OFFSETS.items():
            size = base + off
            sm = smalls.get(base)
            var.append(Variant(str(size), _mm(size), None if sm is None else {"M": sm + off, "N": sm + off,
                                                                              "K": sm + off},
                               x=size, series=f"divisible by {div}", small_label=str((sm or 0) + off)))
    S.append(Scenario(
        "tile_alignment", "Tile and burst alignment",
        "a Triton matmul whose sizes are not multiples of 16 loses its 16-byte vector loads: several times slower",
        "Triton specializes a kernel on which integer arguments are divisible by 16. A size divisible by 16 "
        "proves every row 16-byte aligned: 16-byte vector loads and the pipelined cp.async path. One more row "
        "(size divisible by 8 or 1) and every load becomes narrow. Throughput over the matrix size, one line per "
        "divisibility (128x128x64 tiles, 8 warps, 3 stages).",
        tuple(var), Headline("not divisible by 16 / divisible by 64: time", "1025", "1024"),
        (Column("TFLOP/s", "tflops", ".1f", hw=True),),
        figure="lines", x_param="M", x_title="M = N = K", y_key="tflops", y_title="TFLOP/s"))
    # 6 -- wave quantization
    S.append(Scenario(
        "wave_quantization", "Wave quantization",
        "132 SMs run 132 tiles at once: 133 tiles take two waves, nearly twice the time of 132",
        "A matmul of 128x256 output tiles (one CTA per SM at a time), M = 128 x tiles, N = 256, K = 2048. Time "
        "grows in steps of one wave of 132 tiles: the 133rd tile starts a second wave that costs about as much "
        "as the first.",
        tuple(Variant(f"{t} tiles", f"scn_wave_t{t}", {"K": 128}, x=t, series="128x256 tiles")
              for t in suite.WAVE_TILES),
        Headline("one tile past a full wave: time", "133 tiles", "132 tiles"),
        (Column("waves", "waves", ".2f", hw=True),),
        figure="lines", x_param="M", x_div=128, x_title="output tiles (132 SMs)"))
    # 7 -- operator fusion
    var = [Variant(f"{'fused' if f else 'unfused'} n=2^{p}", f"tl_sincos_{'fused' if f else 'unfused'}_n{1 << p}",
                   {"n": 1 << (p - 6)}, x=1 << p, series="fused" if f else "5 kernels",
                   small_label=f"{'fused' if f else 'unfused'} n=2^{p - 6}")
           for p in (20, 24) for f in (True, False)]
    S.append(Scenario(
        "fusion", "Operator fusion",
        "one kernel that keeps intermediates in registers moves 4 B per element; five kernels move 26",
        "sin(x)^2 + cos(x)^2 in fp16, as one Triton kernel or as five kernels that each read and write DRAM. "
        "Memory-bound either way: the time follows the bytes moved, and the chain also pays five launches.",
        tuple(var), Headline("unfused / fused time", "unfused n=2^24", "fused n=2^24"),
        (Column("kernels", "n_kernels", ".0f"), Column("DRAM MiB", "dram_mib", ".1f", hw=True)),
        figure="lines", x_param="n", x_title="elements", x_log=True, y_log=True))
    # 8 -- recomputation
    var = [Variant(f"{m} n=2^{p}", f"scn_recompute_{m}_n{1 << p}", {"n": 1 << (p - 3)}, x=1 << p, series=m,
                   small_label=f"{m} n=2^{p - 3}") for p in (20, 22, 24) for m in ("store", "recompute")]
    S.append(Scenario(
        "recomputation", "Recomputation",
        "recomputing three sigmoids in the backward pass is cheaper than storing and re-reading their activations",
        "Three stacked sigmoids, forward and backward, fp32. Storing the two intermediate activations costs "
        "36 B per element of DRAM traffic; recomputing them from x in the backward kernel costs 20 B and a few "
        "more instructions. On a memory-bound chip the FLOPs are free and the bytes are not.",
        tuple(var), Headline("store / recompute time", "store n=2^22", "recompute n=2^22"),
        (Column("DRAM MiB", "dram_mib", ".1f", hw=True),),
        figure="lines", x_param="n", x_title="elements", x_log=True, y_log=True))
    # 9 -- lower precision
    var = [Variant(f"{d} n=2^{p}", f"scn_relu_f{d[2:]}_n{1 << p}", {"n": 1 << (p - 4)}, x=1 << p, series=d,
                   small_label=f"{d} n=2^{p - 4}")
           for p in (18, 20, 22, 24) for d in ("fp32", "fp16")]
    S.append(Scenario(
        "precision", "Lower precision",
        "ReLU in fp16 moves half the bytes of fp32: a memory-bound kernel runs up to twice as fast",
        "y = max(x, 0) over n elements, fp32 (8 B per element) or fp16 (4 B). Small arrays are latency-bound and "
        "gain little; past a few MiB the time follows the bytes and fp16 approaches half of fp32.",
        tuple(var), Headline("fp32 / fp16 time", "fp32 n=2^24", "fp16 n=2^24"),
        (Column("DRAM MiB", "dram_mib", ".1f", hw=True),),
        figure="lines", x_param="n", x_title="elements", x_log=True, y_log=True))
    # 10 -- occupancy
    small_copy = {"n": 1 << 18}
    var = [Variant(f"smem {kb} KB/block", f"grid_stride_copy_smem{kb}k", small_copy, x=kb,
                   series="shared memory, 256-thread blocks") for kb in (0, 16, 48, 100, 200)]
    var += [Variant(f"smem {kb} KB/64-thr block", f"scn_occ_smem{kb}k_b64", small_copy, x=kb,
                    series="shared memory, 64-thread blocks") for kb in (0, 8, 16, 48, 100)]
    var += [Variant(f"{r} regs held", f"scn_occ_regs{r}", small_copy) for r in (0, 32, 64, 128)]
    var += [Variant(f"block {b}", f"scn_occ_block{b}", small_copy) for b in (32, 128, 1024)]
    S.append(Scenario(
        "occupancy", "Occupancy",
        "fewer resident warps hide less memory latency: shared memory, registers or block size can cap them",
        "The same grid-stride copy, with dynamic shared memory per block, with values held in registers across "
        "the loop, or with small blocks (at most 32 blocks per SM). Each limits the warps an SM holds; once too "
        "few are resident to keep enough loads in flight, the copy slows down.",
        tuple(var), Headline("1 vs 8 blocks per SM (shared memory): time", "smem 200 KB/block",
                             "smem 0 KB/block"),
        (Column("blocks/SM", "ctas_per_sm", ".0f"), Column("occupancy %", "occupancy_theoretical_pct", ".1f",
                                                           hw=True)),
        figure="bars"))
    # 11 -- bank conflicts
    S.append(Scenario(
        "bank_conflicts", "Shared-memory bank conflicts",
        "lane i reading word i*stride hits gcd(stride, 32) times the same bank: stride 32 is 32-way, 33 is free",
        "Shared memory has 32 banks of 4 bytes; a warp's load is served in as many wavefronts as the most "
        "requests any bank gets. Stride 2 costs 2, stride 32 costs 32; padding to stride 33 spreads the lanes "
        "over all banks again.",
        tuple(Variant(f"stride {s}", f"bank_conflicts_s{s}", {"reps": 64, "blocks": 16}) for s in
              (1, 2, 4, 8, 16, 32, 33)),
        Headline("32-way conflict / conflict-free time", "stride 32", "stride 1"),
        (Column("conflicts/req", "conflicts_per_request", ".1f", hw=True),)))
    # 12 -- FlashAttention vs naive attention
    var = []
    for n in (512, 1024, 2048, 4096):
        sm = n // 4
        var += [Variant(f"naive N={n}", f"attn_naive_d64_n{n}", {"Z": 1, "H": 4096 // sm, "N_CTX": sm}, x=n,
                        series="naive (S, P in DRAM)", small_label=f"naive N={sm}"),
                Variant(f"flash N={n}", f"fa_fwd_d64_n{n}", {"Z": 1, "H": 4096 // sm, "N_CTX": sm}, x=n,
                        series="FlashAttention", small_label=f"flash N={sm}")]
    S.append(Scenario(
        "flash_attention", "Online softmax: FlashAttention vs naive attention",
        "FlashAttention keeps the N x N scores on chip (online softmax): DRAM traffic grows with N, not N^2",
        "Naive attention writes the score matrix S and the probabilities P to DRAM and reads them back (three "
        "kernels). FlashAttention streams K and V blocks past each block of queries, rescaling a running "
        "softmax, so it reads Q, K, V and writes O only. Z * heads * N = 65536, head dim 64, fp16.",
        tuple(var), Headline("naive / flash time", "naive N=2048", "flash N=2048"),
        (Column("DRAM MiB", "dram_mib", ",.1f", hw=True),),
        figure="lines", x_param="N_CTX", x_title="sequence length N", x_log=True, y_log=True))
    # 13 -- roofline
    var = [Variant(f"{8 * it} FLOP per 8 B", f"scn_roofline_fma{it}", {"n": 1 << 18}) for it in (1, 4, 16, 64)]
    var += [Variant("fp16 matmul 2048^3", _mm(2048), {"M": 256, "N": 256, "K": 256},
                    small_label="fp16 matmul 256^3")]
    S.append(Scenario(
        "roofline", "The roofline",
        "below the ridge a kernel is bound by bandwidth (FLOPs are free), above it by the compute ceiling",
        "Chains of fp32 FMAs over a 2 x 16 MiB stream, 8 to 512 FLOP per element loaded and stored (8 B), and a "
        "tensor-core matmul. Part of the 16 MiB written stays in the 50 MB L2, so the intensity per DRAM byte is "
        "higher than per byte the program moves. "
        "Each kernel is placed at its arithmetic intensity and achieved FLOP/s under the preset's ceilings: "
        "16x the FLOPs costs about 2x the time until the kernel reaches the FP32 ceiling.",
        tuple(var), Headline("16x the FLOPs: time", "128 FLOP per 8 B", "8 FLOP per 8 B"),
        (Column("FLOP/B", "flop_per_byte", ",.1f", hw=True), Column("GFLOP/s", "gflops", ",.0f", hw=True)),
        figure="roofline"))
    return S


SCENARIOS: list[Scenario] = _build()
BY_NAME: dict[str, Scenario] = {s.name: s for s in SCENARIOS}
