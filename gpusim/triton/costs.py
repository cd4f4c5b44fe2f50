"""What one tile operation costs in warp instructions, as Triton 3.6 + ptxas emit it for sm_90.

The lowering (``_lower``) decides *how many units* a tile op has per thread (elements, distinct values, vectors,
HGMMAs, loop iterations ...) from the layouts; this table says what each unit costs, per pipe.  Every number
here was read off the SASS that Triton 3.6.0 (ptxas 12.8) produces for the kernels in ``kernels/tl_*.py``
(compiled for sm_90 without a GPU: ``python -m gpusim.validate.collect --compile-check``; the opcode histograms
are in ``gpusim/validate/records/compile_sm90_local.json``) and checked against the dynamic counts the H100
measured (``smsp__inst_executed.sum`` and ``smsp__inst_executed_pipe_*`` in ``records/ncu_*.json``).  Those
records are the calibration set; ``tests/test_triton_calibration.py`` holds the lowering to them.

Pipes follow Nsight Compute's instruction pipes, so a trace's per-pipe counts compare with the records:
``INT`` is the *alu* pipe (IADD3, LOP3, SHF, LEA, ISETP, SEL, PRMT, MOV, CS2R, FMNMX, FSEL, FSETP, F2FP),
``FP32`` the *fma* pipe (FADD, FMUL, FFMA and the whole IMAD family: IMAD, IMAD.WIDE, IMAD.MOV, IMAD.HI),
``FP16`` the fma-lite half (HADD2/HMUL2/HFMA2, HADD2.F32 conversions), ``SFU`` the *xu* pipe (MUFU, F2I, I2F),
``LSU`` loads/stores/shuffles (LDG, STG, LDS, STS, LDSM, LDGSTS, SHFL), ``BRANCH`` the cbu/adu pipes (BRA, EXIT,
BAR, LDC, DEPBAR), ``UNIFORM`` the uniform datapath (U* instructions: shared-memory slot and wgmma descriptor
arithmetic), ``TENSOR`` HGMMA/HMMA.

Each entry is a list of ``(Pipe, n_inst, label)``; ``n_inst`` may be fractional (per element of a packed
pair, for instance): the lowering multiplies by the unit count and rounds up once per op.
"""
from __future__ import annotations

from ..trace import Pipe

INT, FP32, FP16, FP64, SFU, LSU, BRANCH, UNIFORM = (Pipe.INT, Pipe.FP32, Pipe.FP16, Pipe.FP64, Pipe.SFU, Pipe.LSU,
                                                    Pipe.BRANCH, Pipe.UNIFORM)

# ---- per program (CTA) ---------------------------------------------------------------------------------------
#: every kernel: LDC R1 (stack pointer), S2R SR_TID.X, ULDC.64 (global memory descriptor), EXIT.  The vector
#: add (tl_vector_add_*: 28 instructions per warp, all of them straight-line) is 4 of these + 3 LDC.64 pointer
#: arguments + 1 ULDC scalar argument + its tile ops.
PROGRAM = [(BRANCH, 3, "LDC+S2R.TID+EXIT"), (LSU, 1, "ULDC.64")]
#: tl.program_id: S2R SR_CTAID (special registers are read through the adu/cbu side, not the alu)
PROGRAM_ID = [(BRANCH, 1, "S2R.CTAID")]
#: each pointer argument the kernel uses (LDC.64 of its value), each scalar argument (ULDC/LDC).
POINTER_ARG = [(BRANCH, 1, "LDC.64")]
SCALAR_ARG = [(UNIFORM, 1, "ULDC")]

# ---- index arithmetic (per distinct register value of the result, see _layouts.distinct_values) ----------------
#: tl.arange: the thread's coordinate along one dimension of a layout (SHF/LOP3 of SR_TID).
ARANGE = [(INT, 2, "SHF+LOP3")]
INT_OP = {
    "add": [(INT, 1, "IADD3")], "sub": [(INT, 1, "IADD3")],
    "mul": [(FP32, 1, "IMAD")], "shl": [(INT, 1, "SHF")], "shr": [(INT, 1, "SHF")],
    "and": [(INT, 1, "LOP3")], "or": [(INT, 1, "LOP3")], "xor": [(INT, 1, "LOP3")], "lop": [(INT, 1, "LOP3")],
    "icmp": [(INT, 1, "ISETP")], "sel": [(INT, 1, "SEL")], "imnmx": [(INT, 1, "VIMNMX")],
    "icvt": [(INT, 1, "SGXT")], "abs": [(INT, 1, "IABS")],
}
#: integer division / remainder by a compile-time constant: IMAD.HI + shifts (a power of two: shifts with the
#: sign fix-up).  By a runtime value: the reciprocal sequence of tl_matmul's program grouping (I2F.RP, MUFU.RCP,
#: F2I, IMAD.HI, two conditional corrections, sign fix-ups): ~11 per value (``% M`` of the 4 tile rows of each
#: thread in tl_matmul_*: 4 IABS + 4 IMAD.HI + ... in its SASS), plus the divisor's reciprocal once per op.
INT_DIV_CONST = [(INT, 2, "SHF+LEA.HI"), (FP32, 1, "IMAD.HI")]
INT_DIV = [(INT, 6, "IABS+ISETP+SEL"), (FP32, 5, "IMAD.HI+IMAD")]
INT_DIV_SETUP = [(SFU, 3, "I2F.RP+MUFU.RCP+F2I"), (FP32, 4, "IMAD"), (INT, 1, "IABS")]
#: 64-bit address of a pointer tensor: a scalar base + 32-bit offsets is one IMAD.WIDE (or LEA + LEA.HI.X);
#: advancing a tensor of 64-bit pointers (``ptrs += step``) is IADD3 + IMAD.X per distinct address.
ADDR_FROM_BASE = [(FP32, 1, "IMAD.WIDE")]
ADDR_ADVANCE = [(INT, 1, "IADD3"), (FP32, 1, "IMAD.X")]
#: the row index arithmetic of each further address of a 2-D tile (LOP3 / IADD3 / LEA per row held)
ADDR_ROW = [(INT, 2, "LOP3+LEA")]

# ---- floating-point elementwise (per element, fp16/bf16 packed two per instruction) ---------------------------
FLOAT_OP = {
    "add": [(FP32, 1, "FADD")], "sub": [(FP32, 1, "FADD")], "mul": [(FP32, 1, "FMUL")],
    "fma": [(FP32, 1, "FFMA")], "abs": [(FP32, 1, "FADD.FTZ")],
    "fmnmx": [(INT, 1, "FMNMX")], "fcmp": [(INT, 1, "FSETP")], "sel": [(INT, 1, "FSEL")],
    "frnd": [(FP32, 1, "FRND")],
    # tl.exp: x * log2(e), then ex2.approx.f32 (not .ftz): ptxas guards denormal results with FSETP and two
    # predicated FMULs (tl_softmax_*: 5 instructions per element around each MUFU.EX2)
    "exp": [(FP32, 3, "FMUL"), (INT, 1, "FSETP"), (SFU, 1, "MUFU.EX2")],
    # tl.math.exp2: ex2.approx.ftz.f32, one MUFU (fa_fwd_*: 68 MUFU.EX2 and nothing else per 64 + 4 values)
    "exp2": [(SFU, 1, "MUFU.EX2")],
    # tl.log / tl.math.log2 are libdevice polynomials (__nv_logf/__nv_log2f), not MUFU.LG2: 28 instructions
    # per element in fa_fwd_*'s epilogue (m_i + log2(l_i))
    "log2": [(FP32, 20, "FFMA.FTZ"), (INT, 7, "FSETP+FSEL+IADD3"), (SFU, 1, "I2FP")],
    "log": [(FP32, 20, "FFMA.FTZ"), (INT, 7, "FSETP+FSEL+IADD3"), (SFU, 1, "I2FP")],
    # sin/cos: __nv_sinf/__nv_cosf fast path (range reduction by pi/2 in three FFMAs, a polynomial, the
    # |x| >= 105615 slow-path branch never taken): tl_sincos_unfused sin_kernel 246 and cos_kernel 262
    # instructions per warp for 8 elements per thread, of which ~25 are the load/store/index code
    "sin": [(FP32, 15, "FFMA.FTZ"), (INT, 8, "FSEL+LOP3+MOV"), (SFU, 1, "F2I"), (BRANCH, 2.5, "BSSY+BRA+BSYNC")],
    "cos": [(FP32, 16, "FFMA.FTZ"), (INT, 9, "FSEL+LOP3+MOV"), (SFU, 1, "F2I"), (BRANCH, 2.5, "BSSY+BRA+BSYNC")],
    # sin and cos of the same value share the range reduction (tl_sincos fused: 467 instructions per warp, one
    # F2I per element where the two unfused kernels have one each)
    "cos_after_sin": [(FP32, 15, "FFMA.FTZ"), (INT, 9, "FSEL+LOP3+MOV"), (BRANCH, 2.5, "BSSY+BRA+BSYNC")],
    "sin_after_cos": [(FP32, 14, "FFMA.FTZ"), (INT, 8, "FSEL+LOP3+MOV"), (BRANCH, 2.5, "BSSY+BRA+BSYNC")],
    "erf": [(FP32, 14, "FFMA"), (INT, 3, "FSEL"), (SFU, 1, "MUFU.EX2")],
    "rsqrt": [(SFU, 1, "MUFU.RSQ"), (INT, 1, "FSETP"), (FP32, 2, "FMUL")],
    "sqrt": [(SFU, 1, "MUFU.RSQ"), (FP32, 4, "FFMA"), (INT, 2, "FSETP+FSEL")],
    # a / b in fp32 (div.full.f32): a per-element scaling (predicated FMULs against huge/tiny divisors) and the
    # multiply by the reciprocal; the reciprocal itself is DIV_RCP per distinct divisor (tl_softmax: 3 FMULs per
    # element and one MUFU.RCP per row; fa_fwd's acc / l_i: FMUL 0.25 + FSEL + FMUL 2^24 + FMUL per element)
    "truediv": [(FP32, 3, "FMUL"), (INT, 0.5, "FSEL")],
}
#: tl.philox / tl.rand*: per element and round, from the SASS of Triton 3.6 (ptxas 12.8, sm_90) for
#: ``tl.store(X + offs, tl.randint(seed, offs))`` at 4 and 8 elements per thread (the difference: 117 IMAD, 74
#: LOP3 per 4 elements for 10 rounds): the two 32x32->64 multiplies (IMAD.WIDE.U32, hi and lo halves) and the
#: three-input xors (LOP3) of each round; the key schedule (k0 += 0x9E3779B9, k1 += 0xBB67AE85) once per round
#: per thread (about 20 IADD3 per thread whatever the elements).  A 64-bit Philox costs twice as much (estimate).
#: ``tl.rand`` adds the conversion (SHF/LOP3 + I2FP + FMUL per element, costed as those ops); ``tl.randn``
#: log + sqrt + cos (libdevice, costed as those ops).
PHILOX_ROUND = [(FP32, 2.9, "IMAD.WIDE.U32+IMAD"), (INT, 1.85, "LOP3")]
PHILOX_KEY_ROUND = [(INT, 2, "IADD3")]
#: libdevice functions (``tl.extra.libdevice.*``), per fp32 element: the instructions of a kernel that applies
#: the function once per thread, minus those of the same kernel copying its input (Triton 3.6 + ptxas 12.8,
#: sm_90, one element per thread), by pipe.  These are *static* counts: functions with a rarely taken slow path
#: (atan/asinh/atan2/erfinv/div_rn/tgamma call a subroutine; sin/cos/tan carry the Payne-Hanek reduction) are
#: counted with it, an upper bound of what executes; fp64 arguments cost twice (an estimate).
LIBDEVICE = {
    "acos": [(FP32, 13, "FADD+FFMA+FMUL"), (INT, 3, "FSETP+HFMA2"), (SFU, 1, "MUFU")],
    "acosh": [(FP32, 36, "FADD+FFMA+FMUL"), (INT, 24, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+SH"), (SFU, 3, "I2FP+MUFU"), (BRANCH, 5, "BRA+BSSY+BSYNC")],
    "asin": [(FP32, 11, "FADD+FFMA+FMUL"), (INT, 7, "FSETP+HFMA2+LOP3+MOV+SEL"), (SFU, 1, "MUFU")],
    "asinh": [(FP32, 40, "FADD+FFMA+FMUL+IMAD"), (INT, 47, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+PL"), (SFU, 9, "I2FP+MUFU"), (BRANCH, 16, "BRA+BSSY+BSYNC+CALL+RET")],
    "atan": [(FP32, 33, "FADD+FFMA+FMUL+IMAD"), (INT, 45, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+PL"), (SFU, 6, "MUFU"), (BRANCH, 17, "BRA+BSSY+BSYNC+CALL+RET")],
    "atan2": [(FP32, 69, "FADD+FFMA+FMUL+IMAD"), (INT, 101, "FMNMX+FSETP+IADD3+ISETP+LOP3+MOV+PLOP3+S"), (SFU, 9, "FCHK+MUFU"), (BRANCH, 41, "BRA+BSSY+BSYNC+CALL+RET")],
    "atanh": [(FP32, 21, "FADD+FFMA+FMUL"), (INT, 16, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+SE"), (SFU, 2, "I2FP+MUFU"), (BRANCH, 3, "BRA+BSSY+BSYNC")],
    "cbrt": [(FP32, 6, "FADD+FFMA+FMUL"), (INT, 3, "FSEL+FSETP"), (SFU, 3, "MUFU")],
    "ceil": [(FP32, 1, "FRND")],
    "cos": [(FP32, 31, "DMUL+FADD+FFMA+FMUL+IMAD"), (INT, 32, "FSEL+FSETP+IADD3+ISETP+LOP3+MOV+SHF+VIAD"), (SFU, 4, "F2F+F2I+I2F+I2FP"), (BRANCH, 5, "BRA+BSSY+BSYNC")],
    "cosh": [(FP32, 11, "FADD+FFMA+FMUL+FRND"), (INT, 7, "FSEL+FSETP+HFMA2+LOP3+SHF"), (SFU, 2, "MUFU")],
    "cospi": [(FP32, 14, "FADD+FFMA+FMUL+FRND"), (INT, 10, "FSEL+FSETP+HFMA2+IADD3+LOP3+MOV+SHF"), (SFU, 1, "F2I")],
    "div_rn": [(FP32, 22, "FADD+FFMA+IMAD"), (INT, 34, "FSETP+ISETP+LOP3+MOV+PLOP3+SEL+SHF+VIADD"), (SFU, 4, "FCHK+MUFU"), (BRANCH, 28, "BRA+BREAK+BSSY+BSYNC+CALL+RET")],
    "erf": [(FP32, 15, "FADD+FFMA+FMUL+IMAD"), (INT, 11, "FSEL+FSETP+HFMA2+LOP3+MOV+SHF"), (SFU, 1, "MUFU")],
    "erfc": [(FP32, 37, "FADD+FFMA+FMUL+FRND"), (INT, 10, "FSEL+FSETP+HFMA2+LOP3+MOV+SHF"), (SFU, 3, "MUFU")],
    "erfinv": [(FP32, 33, "FADD+FFMA+FMUL+IMAD"), (INT, 36, "FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+PLOP3+S"), (SFU, 7, "MUFU"), (BRANCH, 16, "BRA+BSSY+BSYNC+CALL+RET")],
    "exp": [(FP32, 7, "FADD+FFMA+FMUL"), (INT, 3, "HFMA2+MOV+SHF"), (SFU, 1, "MUFU")],
    "exp10": [(FP32, 7, "FADD+FFMA+FMUL"), (INT, 3, "HFMA2+MOV+SHF"), (SFU, 1, "MUFU")],
    "exp2": [(SFU, 1, "MUFU")],
    "expm1": [(FP32, 15, "FADD+FFMA+FMUL+FRND"), (INT, 10, "FSEL+FSETP+HFMA2"), (SFU, 1, "MUFU")],
    "fast_dividef": [(FP32, 1, "FMUL"), (SFU, 1, "MUFU")],
    "fast_expf": [(FP32, 1, "FMUL"), (SFU, 1, "MUFU")],
    "fast_logf": [(FP32, 1, "FMUL"), (SFU, 1, "MUFU")],
    "fast_tanf": [(FP32, 2, "FMUL"), (SFU, 3, "MUFU")],
    "floor": [(FP32, 1, "FRND")],
    "fmod": [(FP32, 26, "FADD+FFMA+FMUL+FRND+IMAD"), (INT, 26, "FSEL+FSETP+IADD3+ISETP+LOP3+SEL+SHF+VIMN"), (SFU, 2, "MUFU"), (BRANCH, 13, "BRA+BSSY+BSYNC")],
    "hypot": [(FP32, 7, "FADD+FFMA+FMUL"), (INT, 8, "FSEL+FSETP+LOP3+VIMNMX"), (SFU, 1, "MUFU")],
    "lgamma": [(FP32, 127, "FADD+FFMA+FMUL+FRND"), (INT, 62, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+R2"), (SFU, 7, "F2I+I2FP+MUFU"), (BRANCH, 16, "BRA+BSSY+BSYNC")],
    "log": [(FP32, 15, "FADD+FFMA+FMUL"), (INT, 11, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+SH"), (SFU, 1, "I2FP")],
    "log10": [(FP32, 16, "FADD+FFMA+FMUL"), (INT, 11, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+SH"), (SFU, 1, "I2FP")],
    "log1p": [(FP32, 16, "FADD+FFMA+FMUL"), (INT, 12, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+SH"), (SFU, 1, "I2FP"), (BRANCH, 3, "BRA+BSSY+BSYNC")],
    "log2": [(FP32, 17, "FADD+FFMA+FMUL"), (INT, 11, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+SH"), (SFU, 1, "I2FP")],
    "pow": [(FP32, 61, "FADD+FFMA+FMUL+FRND"), (INT, 51, "FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+MOV+PL"), (SFU, 3, "I2FP+MUFU"), (BRANCH, 5, "BRA+BSSY+BSYNC")],
    "rint": [(FP32, 1, "FRND")],
    "round": [(FP32, 2, "FADD+FRND"), (INT, 2, "HFMA2+LOP3")],
    "rsqrt": [(SFU, 1, "MUFU")],
    "sin": [(FP32, 31, "DMUL+FADD+FFMA+FMUL+IMAD"), (INT, 30, "FSEL+FSETP+IADD3+ISETP+LOP3+MOV+R2P+SHF+"), (SFU, 4, "F2F+F2I+I2F+I2FP"), (BRANCH, 5, "BRA+BSSY+BSYNC")],
    "sinh": [(FP32, 17, "FADD+FFMA+FMUL+FRND"), (INT, 11, "FSEL+FSETP+HFMA2+LOP3+MOV+SHF"), (SFU, 2, "MUFU"), (BRANCH, 4, "BRA+BSSY+BSYNC")],
    "sinpi": [(FP32, 14, "FADD+FFMA+FMUL+FRND"), (INT, 8, "FSEL+FSETP+HFMA2+MOV+R2P+SHF"), (SFU, 1, "F2I")],
    "sqrt": [(SFU, 1, "MUFU")],
    "tan": [(FP32, 29, "DMUL+FADD+FFMA+FMUL+IMAD"), (INT, 29, "FSEL+FSETP+IADD3+ISETP+LOP3+SHF+VIADD"), (SFU, 5, "F2F+F2I+I2F+I2FP+MUFU"), (BRANCH, 5, "BRA+BSSY+BSYNC")],
    "tanh": [(FP32, 10, "FADD+FFMA+FMUL"), (INT, 7, "FSEL+FSETP+HFMA2+LOP3+MOV+SHF"), (SFU, 2, "MUFU"), (BRANCH, 4, "BRA+BSSY+BSYNC")],
    "tgamma": [(FP32, 80, "FADD+FFMA+FMUL+FRND"), (INT, 80, "FMNMX+FSEL+FSETP+HFMA2+IADD3+ISETP+LOP3+"), (SFU, 8, "F2I+MUFU"), (BRANCH, 40, "BRA+BSSY+BSYNC+CALL+RET")],
    "trunc": [(FP32, 1, "FRND")],
    # not compiled here (estimates): the fast_* intrinsics are one MUFU plus a scaling FMUL
    "fast_sinf": [(FP32, 1, "FMUL"), (SFU, 1, "MUFU.SIN")], "fast_cosf": [(FP32, 1, "FMUL"), (SFU, 1, "MUFU.COS")],
    "fast_log2f": [(SFU, 1, "MUFU.LG2")], "fast_log10f": [(FP32, 1, "FMUL"), (SFU, 1, "MUFU.LG2")],
    "fast_exp10f": [(FP32, 1, "FMUL"), (SFU, 1, "MUFU.EX2")],
    "fast_powf": [(FP32, 1, "FMUL"), (SFU, 2, "MUFU.LG2+MUFU.EX2")], "nearbyint": [(FP32, 1, "FRND")],
    "copysign": [(INT, 1, "LOP3")], "saturatef": [(FP32, 1, "FADD.SAT")],
}
# the rest of libdevice (estimates from the PTX each maps to: one instruction with a rounding modifier, a
# conversion on the xu pipe, a bit cast that is no instruction at all ...)
for _m in ("rn", "rz", "rd", "ru"):
    for _op in ("add", "sub", "mul"):
        LIBDEVICE[f"{_op}_{_m}"] = [(FP32, 1, f"F{_op.upper()}.{_m.upper()}")]
    for _t in ("int", "uint", "ll", "ull"):
        LIBDEVICE[f"float2{_t}_{_m}"] = [(SFU, 1, "F2I")]
        LIBDEVICE[f"double2{_t}_{_m}"] = [(SFU, 1, "F2I.F64")]
        LIBDEVICE[f"{_t}2float_{_m}"] = [(FP32 if _t in ("int", "uint") else SFU, 1, "I2FP" if _t in ("int", "uint")
                                          else "I2F.S64")]
    LIBDEVICE[f"double2float_{_m}"] = [(SFU, 1, "F2F.F32.F64")]
    LIBDEVICE[f"rcp_{_m}"] = [(SFU, 1, "MUFU.RCP"), (FP32, 4, "FFMA"), (INT, 2, "FSETP")]
for _m in ("rz", "rd", "ru"):
    LIBDEVICE[f"div_{_m}"] = LIBDEVICE["div_rn"]
    LIBDEVICE[f"sqrt_{_m}"] = [(SFU, 1, "MUFU.RSQ"), (FP32, 4, "FFMA"), (INT, 2, "FSETP")]
    LIBDEVICE[f"fma_{_m}"] = [(FP32, 1, "FFMA")]
for _n in ("float_as_int", "float_as_uint", "int_as_float", "uint_as_float", "double_as_longlong",
           "longlong_as_double", "double2hiint", "double2loint", "hiloint2double"):
    LIBDEVICE[_n] = [(INT, 1, "MOV")]
LIBDEVICE.update({"int2double_rn": [(SFU, 1, "I2F.F64")], "uint2double_rn": [(SFU, 1, "I2F.F64")],
                  "llrint": [(SFU, 1, "F2I.S64")], "llround": [(FP32, 2, "FADD+FRND"), (SFU, 1, "F2I.S64")],
                  "popc": [(SFU, 1, "POPC")], "clz": [(SFU, 1, "FLO"), (INT, 1, "IADD3")], "brev": [(INT, 1, "BREV")],
                  "ffs": [(INT, 2, "BREV+IADD3"), (SFU, 1, "FLO")], "mul24": [(FP32, 1, "IMAD")],
                  "sad": [(INT, 2, "IABS+IADD3")], "hadd": [(INT, 2, "IADD3+SHF")], "rhadd": [(INT, 2, "IADD3+SHF")],
                  "byte_perm": [(INT, 1, "PRMT")], "ilogb": [(INT, 4, "SHF+LOP3+IADD3+SEL")],
                  "logb": [(INT, 4, "SHF+LOP3+IADD3+SEL"), (FP32, 1, "I2FP")], "ldexp": [(FP32, 2, "FMUL"), (INT, 4, "SHF+IADD3+ISETP+SEL")],
                  "scalbn": [(FP32, 2, "FMUL"), (INT, 4, "SHF+IADD3+ISETP+SEL")],
                  "rsqrt_rn": [(SFU, 1, "MUFU.RSQ"), (FP32, 5, "FFMA"), (INT, 2, "FSETP")],
                  "rcp64h": [(SFU, 1, "MUFU.RCP64H")]})
# tl.inline_asm_elementwise: the one PTX instruction (_ops_asm), as the SASS it becomes
for _op in ("tanh", "ex2", "lg2", "rcp", "rsqrt", "sqrt", "sin", "cos"):
    for _ftz in ("", ".ftz"):
        LIBDEVICE[f"asm.{_op}.approx{_ftz}.f32"] = [(SFU, 1, f"MUFU.{_op.upper()}")]
for _op in ("add.f32", "sub.f32", "mul.f32", "fma.rn.f32", "mul.lo.s32", "mul.lo.u32", "mul.hi.u32", "mul.hi.s32"):
    LIBDEVICE[f"asm.{_op}"] = [(FP32, 1, "FFMA" if _op.endswith("f32") else "IMAD")]
for _op in ("max.f32", "min.f32", "abs.f32", "neg.f32", "mov.b32", "and.b32", "or.b32", "xor.b32", "not.b32",
            "shl.b32", "shr.u32", "shr.s32", "add.s32", "sub.s32", "shf.l.wrap.b32", "shf.r.wrap.b32"):
    LIBDEVICE[f"asm.{_op}"] = [(INT, 1, _op.split(".")[0].upper())]
LIBDEVICE["asm.popc.b32"] = [(SFU, 1, "POPC")]
LIBDEVICE_DEFAULT = [(FP32, 12, "FFMA (estimate)"), (INT, 8, "FSETP+FSEL (estimate)"), (SFU, 1, "MUFU (estimate)")]
LIBDEVICE_NO_FP64 = ("floor", "ceil", "trunc", "rint", "round", "nearbyint")
DIV_RCP = [(SFU, 1, "MUFU.RCP"), (INT, 2, "FSETP"), (FP32, 2, "FMUL")]
#: fp16/bf16 arithmetic: packed pairs (HADD2/HMUL2/HFMA2; some issue as HFMA2.MMA on the tensor pipe).
HALF_OP = [(FP16, 0.5, "HADD2")]
#: conversions, per element
CVT_F16_TO_F32 = [(FP16, 1, "HADD2.F32")]
CVT_F32_TO_F16 = [(INT, 0.5, "F2FP.F16.F32.PACK_AB")]
CVT_INT_TO_F32 = [(FP32, 1, "I2FP.F32.S32")]     # the fma pipe on sm_90 (rw_write_*: 9 fma-pipe instructions per warp)
CVT_F32_TO_INT = [(SFU, 1, "F2I.TRUNC")]
CVT_F64 = [(FP64, 1, "F2F.F64")]
#: a constant tile materialized in registers (a dot's zero accumulator): CS2R per 64 bits (tl_matmul_1409: 32
#: CS2R for the 64 fp32 accumulator registers of each thread; with a software pipeline it is done twice, 64).
MATERIALIZE = [(INT, 0.5, "CS2R")]

# ---- global memory -------------------------------------------------------------------------------------------
#: the destination registers of a masked load are set to ``other`` first: CS2R per 8 bytes for zeros
#: (tl_vector_add: 4 CS2R for two masked 16-byte loads), MOV per 4 bytes for other values (tl_softmax's -inf:
#: 4 MOV/HFMA2.MMA for one 16-byte load), PRMT per element of a 2-byte load (tl_matmul_1409: 64 PRMT for 64
#: LDG.E.U16 per thread and iteration).
OTHER_ZERO_PER_8B = [(INT, 1, "CS2R")]
OTHER_VALUE_PER_4B = [(INT, 1, "MOV")]
OTHER_NARROW = [(INT, 1, "PRMT")]
#: a 2-byte load inside a loop (not vectorizable, so not cp.async): its address is rebuilt every iteration from
#: a base register and the running offset, and the halves are moved between registers: per load instruction
#: (tl_matmul_1409_128x128x64: 446 instructions per iteration for 64 LDG.E.U16 per thread, i.e. LDG + PRMT +
#: STS.U16 + 2 pointer-advance + these 1.8; tl_matmul_1409_64x64x32: 274 for 32)
NARROW_LOAD_IN_LOOP = [(FP32, 1.0, "IMAD.WIDE"), (FP32, 1.0, "IMAD.MOV")]

#: a 0-d atomic (tutorial 05's spin lock ``while tl.atomic_cas(Lock, 0, 1) == 1``), from the SASS Triton 3.6
#: compiles ``_layer_norm_bwd_dx_fused`` to for sm_90: BAR.SYNC (the broadcast slot's reuse); operand setup
#: (MOV, HFMA2.MMA, IMAD.U32, MOV, IMAD.MOV.U32); BSSY + @!P BRA around thread 0's part + BSYNC; the default
#: ``sem="acq_rel"``: MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR before and CCTL.IVALL after ATOMG.E.CAS.STRONG.GPU;
#: then (compare-and-swap: its old value is used) STS by thread 0, BAR.SYNC, LDS by every thread.  An xchg whose
#: value is unused (``tl.atomic_xchg(Lock, 0)``) writes RZ and has no broadcast.
SCALAR_ATOMIC_SETUP = [(INT, 3, "MOV+HFMA2.MMA+MOV"), (FP32, 2, "IMAD.U32+IMAD.MOV"), (BRANCH, 3, "BSSY+BRA+BSYNC")]
SCALAR_ATOMIC_FENCE = [(BRANCH, 3, "MEMBAR.ALL.GPU+ERRBAR+CGAERRBAR")]
SCALAR_ATOMIC_ACQUIRE = [(LSU, 1, "CCTL.IVALL")]

# ---- software pipelining (cp.async ring), per loop iteration ------------------------------------------------
#: per pipelined load: the commit (LDGDEPBAR) and the ring-slot address arithmetic in uniform registers.
#: per predicate of a masked cp.async: the source-size operand (SEL 16/0), and-ed with the pipeliner's
#: iteration guard (SEL) and turned back into a predicate (ISETP.NE): tl_matmul_1408_128x128x64's loop has
#: 10 SEL and 6 ISETP.NE.U32 for the 5 distinct predicates of its 8 LDGSTS.
PIPE_LOAD_ITER = [(LSU, 1, "LDGDEPBAR"), (UNIFORM, 2, "UIADD3+ULEA")]
PIPE_MASK = [(INT, 3, "SEL+SEL+ISETP.NE")]
#: per iteration of a loop holding pipelined loads: wait for the oldest copy group (DEPBAR.LE), the barrier
#: before reading the ring slot and the one before overwriting it (BAR.SYNC x2), the three @!PT LDS that ptxas
#: puts before each LDGSTS group, the ring index and the iteration-valid predicate: tl_matmul_1408_*, fa_fwd_*,
#: fa_bwd_* loops all carry this block (26..38 uniform instructions per iteration in total with the dots').
PIPE_ITER = [(BRANCH, 3, "DEPBAR.LE+BAR.SYNC x2"), (UNIFORM, 14, "USEL+UISETP+ULEA+UMOV"),
             (INT, 4, "ISETP.LE+VIADD+PLOP3")]
#: each group of LDGSTS (one per iteration, and each prologue stage) starts with three @!PT LDS RZ, [RZ]
PIPE_GROUP = [(LSU, 3, "@!PT LDS")]
#: a runtime loop's own control: counter update, compare, branch.
LOOP_ITER = [(INT, 2, "VIADD+ISETP.NE"), (BRANCH, 1, "BRA")]

# ---- tensor cores (wgmma) --------------------------------------------------------------------------------------
#: per warpgroup MMA (one tl.dot): WARPGROUP.ARRIVE, descriptor arithmetic in uniform registers (per HGMMA and
#: a base), and the wait (WARPGROUP.DEPBAR).  fa_fwd_d64: 2 dots of 8 HGMMA per iteration, 36 uniform
#: instructions per iteration in all; tl_matmul_1408_128x128x64: 1 dot of 4 HGMMA, 29.
WGMMA = [(BRANCH, 2, "WARPGROUP.ARRIVE+DEPBAR"), (UNIFORM, 2, "ULEA+ULOP3+UMOV")]
WGMMA_PER_INST = [(UNIFORM, 1, "UIADD3.64")]
#: operands written to shared memory by regular stores (not cp.async) must be fenced for the async proxy
#: (tl_matmul_1409: MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S + two BAR.SYNC per iteration).
WGMMA_FENCE = [(BRANCH, 2, "MEMBAR+FENCE.VIEW.ASYNC")]

# ---- layout conversions through shared memory -------------------------------------------------------------------
#: the barriers around one round of a register -> shared -> register conversion
CONVERT_ROUND = [(BRANCH, 2, "BAR.SYNC x2")]
#: a reduction across warps (Triton's ReduceOp lowering, tl_softmax_*): the partials go to shared memory
#: (STS by one lane per group), barrier, each warp reads them back (LDS), reduces them with log2(warps)
#: shuffle steps, writes the result (STS), barrier, everyone reads it (LDS); plus the lane/warp index
#: arithmetic and the barrier that guards the scratch buffer's reuse.
REDUCE_SETUP = [(INT, 5, "LOP3+ISETP+LEA")]

# ---- instruction order ----------------------------------------------------------------------------------------------
#: issue slots of independent straight-line work between a global load and its first use beyond which the load is
#: issued just before the use (``_lower_base._sink_loads``), as ptxas places it: the dropout tutorial's loads sit
#: after its ~350 Philox instructions in the SASS; loads whose use follows within a few instructions stay put.
LOAD_SINK_MIN_SLOTS = 64

# ---- registers per thread ----------------------------------------------------------------------------------------
#: estimate = REG_BASE + sum(REG_WEIGHTS[f] * registers of tile kind f), for the loop (or the code outside loops)
#: that needs the most, + REG_PER_EXTRA_LIBDEVICE_FN per libdevice function (sin, cos, log ...) beyond the first.
#: The features are registers-per-thread counts the lowering knows (fp32 dot accumulators and dot results, dot
#: operand fragments held in registers, loaded tiles, the 64-bit addresses of pointers advanced in a loop, the
#: largest elementwise fp32 tile, the tiles a loop of two or more trips carries besides its dot accumulators
#: (``acc += tl.load(...)``), the elements per thread that go through a multi-instruction math function or
#: Philox).  The weights are a coordinate-descent fit, rounded to 1/8, to ptxas' counts (Triton 3.6, sm_90a, on
#: this host: ``python -m gpusim.validate.compiler_compare``) of the 51 distinct Triton kernels of the suite,
#: minimizing the per-case MAPE of the 100 Triton cases (a case takes its kernels' maximum, as
#: ``launch__registers_per_thread`` is compared) under constraints: every in-sample kernel within the gate of
#: tests/test_triton_calibration.py (8 registers or 20%), and the allocations that decide a measured occupancy
#: kept (tl_matmul_1409/2049_64x64x32 at 89-96: 5 CTAs per SM; the attention backward's preprocess at 40 or
#: below).  14.0% -> 9.2% (2026-11-27; the earlier fit, on 29 kernels, had no carried-tile or
#: math-function term and left the tutorials' layer norm (-72%) and the Philox / asin kernels (-34%) far off).
#: Remaining: tl_matmul_1409/2049_128x128x64 (below), the persistent tutorials (TMA needs fewer), sin/cos kernels.
REG_BASE = 14
REG_WEIGHTS = {"dot_accumulators": 1.5, "dot_results": 0.625, "dot_operand_fragments": 1.0, "loaded_tiles": 0.25,
               "addresses": 0.75, "elementwise": 0.5, "carried_tiles": 1.25, "math_fn_elements": 1.375}
REG_PER_EXTRA_LIBDEVICE_FN = 24
#: registers per 64-bit address of a pointer advanced in a loop that feeds 2-byte loads: ptxas rebuilds part of
#: them from a base each iteration (NARROW_LOAD_IN_LOOP): 1 instead of 2 keeps tl_matmul_1409_64x64x32 at 96 or
#: below (its occupancy, 5 CTAs per SM, depends on it).  The 128x128x64 variant keeps more of its 64 addresses
#: (ptxas: 254, estimate ~180; one CTA per SM either way): see DEVIATIONS.md.
REG_NARROW_ADDRESS = 1.0


# ---- Hopper TMA (tensor descriptors), read off Triton 3.6's sm_90a SASS of descriptor loads/stores --------------
#: tl.make_tensor_descriptor in the kernel: warp 0 fills the 128-byte CUtensorMap in shared memory field by field
#: (LDS/LOP3/STS read-modify-writes under BSSY/BRA guards), copies it to the global scratch from
#: triton.set_allocator (ATOMG.E.EXCH, 32 lanes x 4 B), and fences the tensormap proxy (UTMACCTL.IV, DEPBAR);
#: about 100 instructions of warp 0, then a barrier for all warps.
TMA_MAKE_DESC = [(INT, 30, "LOP3+IMAD+SHF"), (LSU, 26, "LDS+STS (descriptor fields)"),
                 (BRANCH, 24, "BSSY+BRA+BSYNC")]
#: ... then the copy (ATOMG.E.EXCH.STRONG.GPU, one per lane: a global atomic the lowering records as such, so the
#: fence below waits for its round trip to the L2: DEPBAR {5,4,3,2,1,0})
TMA_MAKE_DESC_FENCE = [(UNIFORM, 6, "UTMACCTL.IV+UTMACMDFLUSH+DEPBAR")]
#: where the descriptors written by the kernel live (triton.set_allocator's global scratch, one 128 B tensormap per
#: descriptor and program): an address range no buffer uses, for the timing model's caches
TMA_SCRATCH_BASE = 1 << 46
TMA_SCRATCH_PER_PROGRAM = 1024
#: the same descriptor in the other warps: each field's guard (``@P0 BRA`` over the thread-0 body, BSSY/BSYNC),
#: the predicated-off stores, WARPSYNC/NOP around the copy: 24-34 instructions per descriptor in Triton 3.6's
#: SASS of tutorial 09's device-side descriptors (warps 1-7; warp 0 runs the body, diverged, 88-117)
TMA_MAKE_DESC_SKIP = [(BRANCH, 16, "BRA+BSSY+BSYNC (guards skipped)"), (INT, 5, "WARPSYNC+NOP"),
                      (LSU, 4, "@!P0 LDS/STS (predicated off)"), (UNIFORM, 2, "UIADD3+ULEA")]
#: per descriptor load, in every warp: electing the issuing thread (ELECT, VOTEU), the box coordinates and the
#: shared slot in uniform registers, the barrier ptxas puts before each UTMALDG, the expect-tx arrive on the
#: stage's mbarrier (SYNCS.ARRIVE.TRANS64).  The UTMALDG itself is one instruction of one thread (the ASYNC_COPY).
TMA_ISSUE = [(UNIFORM, 5, "ELECT+VOTEU+UIADD3"), (INT, 2, "ISETP (elected lane, stage in range)"),
             (BRANCH, 1, "BAR.SYNC"), (INT, 1, "SYNCS.ARRIVE.TRANS64")]
#: per wait on a stage's mbarrier in a pipelined loop: the phase bit flipped and shifted into the try-wait's operand
#: (LOP3, IMAD.U32) and the retry branch after SYNCS.PHASECHK.TRANS64.TRYWAIT (tutorial 09's K loop: 68
#: instructions per iteration and warp in Triton 3.6's SASS, 4 of them HGMMA)
TMA_WAIT = [(INT, 2, "LOP3+IMAD.U32 (mbarrier phase)"), (BRANCH, 1, "@!P BRA (try-wait retry)")]
#: per stage of a pipelined loop's TMA ring, around each run of the loop: the mbarrier initialized before it
#: (SYNCS.EXCH.64 by one thread, a barrier) and invalidated after it (SYNCS.CCTL.IV, a barrier)
MBARRIER_INIT = [(UNIFORM, 2, "UIADD3+SYNCS.EXCH.64 (mbarrier init)"), (BRANCH, 1, "BAR.SYNC")]
MBARRIER_INVAL = [(UNIFORM, 2, "ELECT+SYNCS.CCTL.IV (mbarrier inval)"), (BRANCH, 1, "BAR.SYNC")]
#: per descriptor store: the box coordinates in uniform registers and the elected thread (then one UTMASTG), and
#: the wait until the bulk copy has read the staging buffer before it is reused (UTMACMDFLUSH, DEPBAR.LE SB0).
TMA_STORE_ISSUE = [(UNIFORM, 3, "ELECT+UMOV")]
TMA_STORE_DRAIN = [(UNIFORM, 1, "UTMACMDFLUSH"), (BRANCH, 1, "DEPBAR.LE SB0")]
#: bytes of one mbarrier in shared memory (one per buffered stage of TMA loads)
MBARRIER_BYTES = 8
