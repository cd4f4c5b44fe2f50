"""Occupancy limited by registers: the same grid-stride copy, holding 0, 32, 64 or 128 values in registers.

Each ``copy_holdR`` kernel loads ``R`` coefficients before its copy loop and uses them only after it (a Horner
polynomial in the last value the thread copied), so the compiler must keep ``R`` registers live across the
loop.  The loop itself is the same in all four: one 4-byte load and store per iteration.  The register file
(64 K 32-bit registers per SM) then decides how many 256-thread blocks fit on an SM: about 8 blocks (64
warps) with no held values, fewer as ``R`` grows (``launch__occupancy_limit_registers``); with fewer warps
in flight the copy has fewer loads in flight and falls below the DRAM bandwidth, as in
``grid_stride_copy.py`` where shared memory sets the limit.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def copy_hold0(a, w, out, held):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    last = np.float32(0.0)
    while i < out.size:
        v = a[i]
        out[i] = v
        last = v
        i += step
    t = cuda.grid(1)
    if t < held.size:
        held[t] = last


@cuda.jit
def copy_hold32(a, w, out, held):
    # 32 values loaded before the copy and used only after it: 32 registers live across the loop
    h0, h1, h2, h3, h4, h5, h6, h7 = w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]
    h8, h9, h10, h11, h12, h13, h14, h15 = w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]
    h16, h17, h18, h19, h20, h21, h22, h23 = w[16], w[17], w[18], w[19], w[20], w[21], w[22], w[23]
    h24, h25, h26, h27, h28, h29, h30, h31 = w[24], w[25], w[26], w[27], w[28], w[29], w[30], w[31]
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    last = np.float32(0.0)
    while i < out.size:
        v = a[i]
        out[i] = v
        last = v
        i += step
    t = cuda.grid(1)
    if t < held.size:
        s = h0
        s = s * last + h1
        s = s * last + h2
        s = s * last + h3
        s = s * last + h4
        s = s * last + h5
        s = s * last + h6
        s = s * last + h7
        s = s * last + h8
        s = s * last + h9
        s = s * last + h10
        s = s * last + h11
        s = s * last + h12
        s = s * last + h13
        s = s * last + h14
        s = s * last + h15
        s = s * last + h16
        s = s * last + h17
        s = s * last + h18
        s = s * last + h19
        s = s * last + h20
        s = s * last + h21
        s = s * last + h22
        s = s * last + h23
        s = s * last + h24
        s = s * last + h25
        s = s * last + h26
        s = s * last + h27
        s = s * last + h28
        s = s * last + h29
        s = s * last + h30
        s = s * last + h31
        held[t] = s


@cuda.jit
def copy_hold64(a, w, out, held):
    # 64 values loaded before the copy and used only after it: 64 registers live across the loop
    h0, h1, h2, h3, h4, h5, h6, h7 = w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]
    h8, h9, h10, h11, h12, h13, h14, h15 = w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]
    h16, h17, h18, h19, h20, h21, h22, h23 = w[16], w[17], w[18], w[19], w[20], w[21], w[22], w[23]
    h24, h25, h26, h27, h28, h29, h30, h31 = w[24], w[25], w[26], w[27], w[28], w[29], w[30], w[31]
    h32, h33, h34, h35, h36, h37, h38, h39 = w[32], w[33], w[34], w[35], w[36], w[37], w[38], w[39]
    h40, h41, h42, h43, h44, h45, h46, h47 = w[40], w[41], w[42], w[43], w[44], w[45], w[46], w[47]
    h48, h49, h50, h51, h52, h53, h54, h55 = w[48], w[49], w[50], w[51], w[52], w[53], w[54], w[55]
    h56, h57, h58, h59, h60, h61, h62, h63 = w[56], w[57], w[58], w[59], w[60], w[61], w[62], w[63]
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    last = np.float32(0.0)
    while i < out.size:
        v = a[i]
        out[i] = v
        last = v
        i += step
    t = cuda.grid(1)
    if t < held.size:
        s = h0
        s = s * last + h1
        s = s * last + h2
        s = s * last + h3
        s = s * last + h4
        s = s * last + h5
        s = s * last + h6
        s = s * last + h7
        s = s * last + h8
        s = s * last + h9
        s = s * last + h10
        s = s * last + h11
        s = s * last + h12
        s = s * last + h13
        s = s * last + h14
        s = s * last + h15
        s = s * last + h16
        s = s * last + h17
        s = s * last + h18
        s = s * last + h19
        s = s * last + h20
        s = s * last + h21
        s = s * last + h22
        s = s * last + h23
        s = s * last + h24
        s = s * last + h25
        s = s * last + h26
        s = s * last + h27
        s = s * last + h28
        s = s * last + h29
        s = s * last + h30
        s = s * last + h31
        s = s * last + h32
        s = s * last + h33
        s = s * last + h34
        s = s * last + h35
        s = s * last + h36
        s = s * last + h37
        s = s * last + h38
        s = s * last + h39
        s = s * last + h40
        s = s * last + h41
        s = s * last + h42
        s = s * last + h43
        s = s * last + h44
        s = s * last + h45
        s = s * last + h46
        s = s * last + h47
        s = s * last + h48
        s = s * last + h49
        s = s * last + h50
        s = s * last + h51
        s = s * last + h52
        s = s * last + h53
        s = s * last + h54
        s = s * last + h55
        s = s * last + h56
        s = s * last + h57
        s = s * last + h58
        s = s * last + h59
        s = s * last + h60
        s = s * last + h61
        s = s * last + h62
        s = s * last + h63
        held[t] = s


@cuda.jit
def copy_hold128(a, w, out, held):
    # 128 values loaded before the copy and used only after it: 128 registers live across the loop
    h0, h1, h2, h3, h4, h5, h6, h7 = w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]
    h8, h9, h10, h11, h12, h13, h14, h15 = w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]
    h16, h17, h18, h19, h20, h21, h22, h23 = w[16], w[17], w[18], w[19], w[20], w[21], w[22], w[23]
    h24, h25, h26, h27, h28, h29, h30, h31 = w[24], w[25], w[26], w[27], w[28], w[29], w[30], w[31]
    h32, h33, h34, h35, h36, h37, h38, h39 = w[32], w[33], w[34], w[35], w[36], w[37], w[38], w[39]
    h40, h41, h42, h43, h44, h45, h46, h47 = w[40], w[41], w[42], w[43], w[44], w[45], w[46], w[47]
    h48, h49, h50, h51, h52, h53, h54, h55 = w[48], w[49], w[50], w[51], w[52], w[53], w[54], w[55]
    h56, h57, h58, h59, h60, h61, h62, h63 = w[56], w[57], w[58], w[59], w[60], w[61], w[62], w[63]
    h64, h65, h66, h67, h68, h69, h70, h71 = w[64], w[65], w[66], w[67], w[68], w[69], w[70], w[71]
    h72, h73, h74, h75, h76, h77, h78, h79 = w[72], w[73], w[74], w[75], w[76], w[77], w[78], w[79]
    h80, h81, h82, h83, h84, h85, h86, h87 = w[80], w[81], w[82], w[83], w[84], w[85], w[86], w[87]
    h88, h89, h90, h91, h92, h93, h94, h95 = w[88], w[89], w[90], w[91], w[92], w[93], w[94], w[95]
    h96, h97, h98, h99, h100, h101, h102, h103 = w[96], w[97], w[98], w[99], w[100], w[101], w[102], w[103]
    h104, h105, h106, h107, h108, h109, h110, h111 = w[104], w[105], w[106], w[107], w[108], w[109], w[110], w[111]
    h112, h113, h114, h115, h116, h117, h118, h119 = w[112], w[113], w[114], w[115], w[116], w[117], w[118], w[119]
    h120, h121, h122, h123, h124, h125, h126, h127 = w[120], w[121], w[122], w[123], w[124], w[125], w[126], w[127]
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    last = np.float32(0.0)
    while i < out.size:
        v = a[i]
        out[i] = v
        last = v
        i += step
    t = cuda.grid(1)
    if t < held.size:
        s = h0
        s = s * last + h1
        s = s * last + h2
        s = s * last + h3
        s = s * last + h4
        s = s * last + h5
        s = s * last + h6
        s = s * last + h7
        s = s * last + h8
        s = s * last + h9
        s = s * last + h10
        s = s * last + h11
        s = s * last + h12
        s = s * last + h13
        s = s * last + h14
        s = s * last + h15
        s = s * last + h16
        s = s * last + h17
        s = s * last + h18
        s = s * last + h19
        s = s * last + h20
        s = s * last + h21
        s = s * last + h22
        s = s * last + h23
        s = s * last + h24
        s = s * last + h25
        s = s * last + h26
        s = s * last + h27
        s = s * last + h28
        s = s * last + h29
        s = s * last + h30
        s = s * last + h31
        s = s * last + h32
        s = s * last + h33
        s = s * last + h34
        s = s * last + h35
        s = s * last + h36
        s = s * last + h37
        s = s * last + h38
        s = s * last + h39
        s = s * last + h40
        s = s * last + h41
        s = s * last + h42
        s = s * last + h43
        s = s * last + h44
        s = s * last + h45
        s = s * last + h46
        s = s * last + h47
        s = s * last + h48
        s = s * last + h49
        s = s * last + h50
        s = s * last + h51
        s = s * last + h52
        s = s * last + h53
        s = s * last + h54
        s = s * last + h55
        s = s * last + h56
        s = s * last + h57
        s = s * last + h58
        s = s * last + h59
        s = s * last + h60
        s = s * last + h61
        s = s * last + h62
        s = s * last + h63
        s = s * last + h64
        s = s * last + h65
        s = s * last + h66
        s = s * last + h67
        s = s * last + h68
        s = s * last + h69
        s = s * last + h70
        s = s * last + h71
        s = s * last + h72
        s = s * last + h73
        s = s * last + h74
        s = s * last + h75
        s = s * last + h76
        s = s * last + h77
        s = s * last + h78
        s = s * last + h79
        s = s * last + h80
        s = s * last + h81
        s = s * last + h82
        s = s * last + h83
        s = s * last + h84
        s = s * last + h85
        s = s * last + h86
        s = s * last + h87
        s = s * last + h88
        s = s * last + h89
        s = s * last + h90
        s = s * last + h91
        s = s * last + h92
        s = s * last + h93
        s = s * last + h94
        s = s * last + h95
        s = s * last + h96
        s = s * last + h97
        s = s * last + h98
        s = s * last + h99
        s = s * last + h100
        s = s * last + h101
        s = s * last + h102
        s = s * last + h103
        s = s * last + h104
        s = s * last + h105
        s = s * last + h106
        s = s * last + h107
        s = s * last + h108
        s = s * last + h109
        s = s * last + h110
        s = s * last + h111
        s = s * last + h112
        s = s * last + h113
        s = s * last + h114
        s = s * last + h115
        s = s * last + h116
        s = s * last + h117
        s = s * last + h118
        s = s * last + h119
        s = s * last + h120
        s = s * last + h121
        s = s * last + h122
        s = s * last + h123
        s = s * last + h124
        s = s * last + h125
        s = s * last + h126
        s = s * last + h127
        held[t] = s

KERNELS = {0: copy_hold0, 32: copy_hold32, 64: copy_hold64, 128: copy_hold128}


def _reference(a, w, n, threads, held_values):
    t = np.arange(threads)
    last = np.zeros(threads, np.float64)
    live = t < n
    last_i = t[live] + ((n - 1 - t[live]) // threads) * threads
    last[live] = a[last_i]
    s = np.zeros(threads, np.float64) if held_values == 0 else np.full(threads, float(w[0]))
    for k in range(1, held_values):
        s = s * last + float(w[k])
    return (last if held_values == 0 else s).astype(np.float32)


def launch(n: int = 1 << 20, held_values: int = 64, blocks: int = 264, block: int = 256, seed: int = 0) -> dict:
    """``held_values``: 0, 32, 64 or 128 registers held across the copy loop; ``blocks`` x ``block`` threads
    copy ``n`` floats with a grid-stride loop (the suite uses 1056 blocks: one full wave at full occupancy)."""
    if held_values not in KERNELS:
        raise ValueError(f"held_values must be one of {sorted(KERNELS)}, got {held_values}")
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    w = rng.uniform(-1.0, 1.0, max(held_values, 1)).astype(np.float32)
    out = np.zeros(n, np.float32)
    threads = blocks * block
    held = np.zeros(threads, np.float32)
    return {
        "kernel": KERNELS[held_values],
        "grid": (blocks,),
        "block": (block,),
        "shared_bytes": 0,
        "args": [a, w, out, held],
        "meta": {},
        "outputs": [2, 3],
        "reference": lambda: {2: a.copy(), 3: _reference(a, w, n, threads, held_values)},
        "rtol": 1e-4, "atol": 1e-3,
        "flops": 2 * threads * max(held_values - 1, 0),
        "min_bytes": 2 * 4 * n,
    }
