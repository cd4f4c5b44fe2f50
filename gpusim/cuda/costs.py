"""What one Python construct of a SIMT kernel costs in warp instructions, per pipe.

The front end records, for every construct a warp executes, the SASS instruction groups that numba-cuda's
compiler (numba -> NVVM -> ptxas, sm_90) emits for it.  Every count lives here, as data, so that the
per-construct costs can be calibrated without touching the executor.

Calibration (``python -m gpusim.validate.cuda_calibration --pipes`` prints the fit): the counts of the constructs the
validation suite uses were read off the sm_90 SASS of the suite's kernels as numba-cuda 0.30 / CUDA 13 builds
them (the opcode histograms are committed in ``gpusim/validate/records/timing.json``, ``sass_histogram``) and
checked against ``smsp__inst_executed.sum`` and its per-pipe split measured by Nsight Compute on an H100
(``records/ncu_*.json``).  Each calibrated entry names the record it was fit to.  Entries the suite never
exercises (most math functions, float division) are estimates from libdevice / typical SASS.

What numba's code looks like, in short: every value is 64-bit (``int64`` indices, 64-bit address arithmetic
as pairs of 32-bit instructions: ``IADD3`` + ``IMAD.X``, ``LEA`` + ``LEA.HI.X``); every array access with a
signed runtime index carries Python's negative-index wraparound, done without a branch (``i + (i >> 63 &
dim)``: ``SHF`` + ``LOP3`` + ``IADD3`` + ``IMAD.X``); an array's data pointer, shape and size are kernel
parameters read from the constant bank (``ULDC.64``, once per kernel: loop-invariant); ``range`` loops run
numba's range iterator (a per-iteration compare-and-select on a 64-bit count, ``ISETP``/``SEL``), and LLVM
runtime-unrolls innermost loops with a runtime trip count by ``LOOP_UNROLL_FACTOR`` (see
``unroll.unroll_loops``).

Pipes: ``Pipe.INT`` is the ALU pipe (integer add/logic/shift/compare/select), ``Pipe.FP32`` the FMA pipe, which
on sm_90 also runs the IMAD family (``IMAD``, ``IMAD.WIDE``, ``IMAD.X``, ``IMAD.MOV``, ``IMAD.SHL``):
integer multiply-adds and the high halves of 64-bit adds go there (vector add: ``pipe_fma`` = 5 per warp = 3
``IMAD.X`` + ``IMAD.WIDE`` + ``FADD``).  ``Pipe.UNIFORM`` holds constant-bank reads (``ULDC``, ``LDC``) and
uniform-datapath ops; ``Pipe.BRANCH`` branches and convergence barriers (``BRA``, ``BSSY``, ``BSYNC``,
``EXIT``).  ``gpusim.validate.cuda_calibration.ncu_pipe`` maps an op to the Nsight pipe it counts on.

Units: warp instructions per executing warp.

Keys:
  ``(op, dtype)``          arithmetic in computation dtype ("float32", "float64", "float16", "int32",
                           "int64", "uint32", "uint64", "bool"); op in add sub mul fma truediv floordiv mod
                           pow neg abs min max cmp bitop shift not
  ``(op, dtype, "const")`` the same op when the right operand is a compile-time constant (cheaper divisions,
                           multiplications, masks)
  ``(math_fn, dtype)``     libdevice functions (``math.sin`` -> ``__nv_sinf`` for float32)
  ``("cvt", src, dst)``    conversions, src/dst in "f16" "f32" "f64" "i32" "i64" "u32" "u64" "b"
  control flow and indexing constructs under their own names (see the entries).

Each entry is a list of ``(Pipe, n_inst, label)``; an empty list means "free" (folded into another
instruction).  ``FLOPS_PER_LANE`` counts useful floating-point operations for the roofline.
"""
from __future__ import annotations

from ..trace import Pipe

FP32, FP64, FP16, INT, SFU, LSU, BRANCH, UNIFORM = (Pipe.FP32, Pipe.FP64, Pipe.FP16, Pipe.INT, Pipe.SFU,
                                                    Pipe.LSU, Pipe.BRANCH, Pipe.UNIFORM)

#: constant-trip ``range`` loops with at most this many iterations are fully unrolled (LLVM's full unroll):
#: no loop overhead, and the loop counter is a compile-time constant (index arithmetic folds into offsets).
LOOP_UNROLL_MAX_TRIP = 16

#: innermost loops with a runtime trip count are runtime-unrolled by this factor (LLVM's loop unroller in
#: numba-cuda's NVVM pipeline): the body is repeated 4 times with one trip test and back-edge branch per 4
#: iterations, and a remainder loop runs the last ``trip % 4`` iterations one at a time.  Seen in every loop of
#: the suite's sm_90 SASS that qualifies: ``row_col_sum`` has 5 ``LDG.E`` (an unrolled body of 4 plus the
#: remainder), ``math_fp32`` 20 FFMA (4 chains x (4 + 1)), ``grid_stride_copy`` 4 + 1 LDG/STG pairs.  Loops
#: whose body holds a barrier (convergent), an inner runtime loop, ``break``/``continue``/``return``, and
#: ``while`` loops whose trip count LLVM cannot compute are not unrolled (``matmul_tiled``'s tile loop).
LOOP_UNROLL_FACTOR = 4

#: in straight-line code from fully unrolled constant-trip loops, a load is scheduled at most this many ops
#: ahead of its place (ptxas' list scheduling, bounded by the registers the early results occupy)
HOIST_WINDOW = 12

#: bytes of the shared-memory vector loads (LDS.128) LLVM's load/store vectorizer forms from adjacent loads
SHARED_VECTOR_BYTES = 16

#: libdevice functions whose inlined code is large (a slow path: Payne-Hanek range reduction, ...): a loop that
#: calls one exceeds the unroller's size threshold and is not unrolled (math_sin's loop: one iteration per trip)
NO_UNROLL_MATH = frozenset({"sin", "cos", "tan", "pow", "lgamma", "gamma", "erfc", "atan2"})

#: register estimate (``launch._registers``): ptxas' count is ``REGISTERS_BASE`` + a weighted sum of terms
#: measured on the kernel.  The terms and what they stand for:
#:   live_variables             peak over the kernel's statements of the 32-bit words of its live runtime
#:                              variables (64-bit = 2; array and scalar parameters 0: instructions read them
#:                              from the constant bank; compile-time constants 0)
#:   range_iterators            numba's range iterator state of the deepest nest of runtime loops (64-bit
#:                              count, + 64-bit value when the body reads the variable), a countable while's
#:                              trip counter
#:   unrolled_loads_in_flight   results of the loads of the other 3 iterations of a runtime-unrolled body,
#:                              issued ahead of their uses (``unroll.unroll_pressure``)
#:   math_scratch               libdevice scratch (``MATH_REGISTERS``: sinf's slow path)
#:   expression_temporaries     deepest expression (Sethi-Ullman): ptxas schedules it into the registers the
#:                              other terms count, so the fit gives it no weight
#:   device_functions, local_arrays_in_registers   (no kernel of the records has them; weight 1)
#: The base and weights: a live 32-bit word costs one register (ptxas keeps every value live across a loop in its
#: own register: ``reg_hold_copy`` holding 32/64/128 values needs 56/88/152, slope 1.0), the rest a grid search,
#: rounded, minimizing the mean |error| against ``launch__registers_per_thread`` of the 14 in-sample SIMT kernels
#: and the 4 register-hold scenario kernels of records/ncu_*.json (ptxas of CUDA 13.0, sm_90), with every in-sample
#: kernel within 4; see ``REGISTERS_ERROR``.  (A least-squares fit on the 14 in-sample kernels alone had given live
#: words 0.5 and base 14: it missed the register-hold kernels by up to 64 and numba's documentation examples by 14
#: on average; these weights miss those by 1 and 6.)  A numba iterator costs more than its 4 words (2.25 per
#: word): ptxas keeps its select chain's copies.
REGISTERS_BASE = 12
REGISTERS_WEIGHTS = {"live_variables": 1.0, "range_iterators": 2.25, "unrolled_loads_in_flight": 0.5,
                     "math_scratch": 1.0, "expression_temporaries": 0.0, "device_functions": 1.0,
                     "local_arrays_in_registers": 1.0}

#: scratch registers libdevice functions need beyond their argument and result (math_sin: 26 registers)
MATH_REGISTERS = {"sin": 6, "cos": 6, "tan": 6}

#: the estimate's stated error against ``launch__registers_per_thread`` of the records: the error the tests hold
#: it to (tests/test_cuda_calibration.py) -- mean |error| 1.7 registers, at most 4, over the 14 in-sample SIMT
#: kernels (1.5 over those and the register-hold kernels; 6.0 over numba's documentation examples, held out)
REGISTERS_ERROR = "+-4 registers (mean |error| 1.7) over the 14 in-sample SIMT kernels of the H100 records"

_FP_PIPE = {"float32": FP32, "float64": FP64, "float16": FP16}
_FP_PREFIX = {"float32": "F", "float64": "D", "float16": "H"}

COSTS: dict[tuple, list[tuple[Pipe, int, str]]] = {}


def _fp(op: str, n32: int, label: str, n64: int | None = None, n16: int | None = None) -> None:
    for dt, n in (("float32", n32), ("float64", n32 if n64 is None else n64),
                  ("float16", n32 if n16 is None else n16)):
        COSTS[(op, dt)] = [(_FP_PIPE[dt], n, _FP_PREFIX[dt] + label)] if n else []


# ---- floating-point arithmetic --------------------------------------------------------------------------
_fp("add", 1, "ADD")
_fp("sub", 1, "ADD")
_fp("mul", 1, "MUL")
_fp("fma", 1, "FMA")
_fp("neg", 1, "ADD")                    # usually an operand modifier; counted as one instruction
_fp("abs", 1, "ADD")
_fp("min", 1, "MNMX", n64=2)            # no DMNMX: DSETP + FSEL pair
_fp("max", 1, "MNMX", n64=2)
_fp("cmp", 1, "SETP")
# IEEE division: reciprocal approximation + Newton steps + slow-path check
COSTS[("truediv", "float32")] = [(SFU, 1, "MUFU.RCP"), (FP32, 7, "FFMA"), (BRANCH, 1, "BRA")]
COSTS[("truediv", "float64")] = [(SFU, 1, "MUFU.RCP64H"), (FP64, 9, "DFMA"), (BRANCH, 1, "BRA")]
COSTS[("truediv", "float16")] = [(SFU, 1, "MUFU.RCP"), (FP32, 4, "FFMA")]
# floor division / modulo on floats: division, floor, fix-ups (numba follows Python semantics)
COSTS[("floordiv", "float32")] = COSTS[("truediv", "float32")] + [(FP32, 2, "FRND.FLOOR")]
COSTS[("floordiv", "float64")] = COSTS[("truediv", "float64")] + [(FP64, 2, "FRND.F64.FLOOR")]
COSTS[("mod", "float32")] = [(FP32, 12, "FFMA"), (INT, 4, "LOP3"), (BRANCH, 1, "BRA")]
COSTS[("mod", "float64")] = [(FP64, 16, "DFMA"), (INT, 6, "LOP3"), (BRANCH, 1, "BRA")]
COSTS[("pow", "float32")] = [(SFU, 2, "MUFU.LG2"), (FP32, 24, "FFMA"), (INT, 6, "LOP3")]
COSTS[("pow", "float64")] = [(FP64, 50, "DFMA"), (INT, 12, "LOP3"), (SFU, 1, "MUFU.RCP64H")]
for _dt in ("float16",):
    for _op in ("floordiv", "mod", "pow"):
        COSTS[(_op, _dt)] = COSTS[(_op, "float32")]

# ---- integer arithmetic ---------------------------------------------------------------------------------
# 64-bit adds are IADD3 + IMAD.X (the high half with carry runs on the FMA pipe: ncu counts IMAD.X as
# pipe_fma, vector_add); 64-bit multiplies are IMAD.WIDE.U32 + 2 IMAD + IMAD.IADD (strided_read: a[i*stride];
# row_col_sum col walk: i * m.shape[1]).
for _dt, _w in (("int32", 1), ("uint32", 1), ("int64", 2), ("uint64", 2)):
    _add = [(INT, 1, "IADD3")] if _w == 1 else [(INT, 1, "IADD3"), (FP32, 1, "IMAD.X")]
    COSTS[("add", _dt)] = _add
    COSTS[("sub", _dt)] = _add
    COSTS[("neg", _dt)] = _add
    COSTS[("mul", _dt)] = [(FP32, 1 if _w == 1 else 4, "IMAD")]
    COSTS[("mul", _dt, "const")] = [(FP32, _w, "IMAD.SHL")]     # by a constant: shift / IMAD.WIDE by immediate
    COSTS[("fma", _dt)] = [(FP32, 1 if _w == 1 else 4, "IMAD")]
    COSTS[("cmp", _dt)] = [(INT, _w, "ISETP")]              # 64-bit: ISETP + ISETP.EX
    COSTS[("bitop", _dt)] = [(INT, _w, "LOP3")]
    COSTS[("bitop", _dt, "const")] = [(INT, 1, "LOP3")]       # with a small constant: the high half folds
    COSTS[("shift", _dt)] = [(INT, _w, "SHF")]
    COSTS[("abs", _dt)] = [(INT, _w + 1, "IABS")]
    COSTS[("min", _dt)] = [(INT, _w, "IMNMX")]
    COSTS[("max", _dt)] = [(INT, _w, "IMNMX")]
    COSTS[("not", _dt)] = [(INT, 1, "PLOP3")]
    # division by a runtime value: numba checks the divisor for zero (ZeroDivisionError), then ptxas' division
    # takes a 32-bit fast path when both operands fit (I2F.U32.RP + MUFU.RCP + F2I + IMAD.HI Newton step +
    # fix-ups inside BSSY/BSYNC), then Python's floor semantics fix the sign.  Fit to divergence_g*
    # ((threadIdx.x // group) % 2: pipe_xu 3, the fast path's 36 instructions + 4 for the zero check).
    COSTS[("floordiv", _dt)] = [(INT, 12, "ISETP+SEL+LOP3"), (FP32, 16, "IMAD.HI"), (SFU, 3, "MUFU.RCP"),
                                 (BRANCH, 2, "BSSY+BSYNC"), (BRANCH, 3, "BRA")]
    COSTS[("mod", _dt)] = COSTS[("floordiv", _dt)] + [(FP32, 2, "IMAD")]
    # by a constant: multiply-high and shifts; by a power of two (divergence_g*: % 2): LEA.HI + LOP3 + a
    # 64-bit subtract
    COSTS[("floordiv", _dt, "const")] = [(INT, 2 * _w, "SHF+LEA.HI"), (FP32, _w, "IMAD.HI")]
    COSTS[("mod", _dt, "const")] = [(INT, 3, "LEA.HI+LOP3+IADD3"), (FP32, 2, "IMAD.X")]
    COSTS[("truediv", _dt)] = COSTS[("truediv", "float64")]  # ints are converted to float64 first
    COSTS[("pow", _dt)] = [(FP32, 12, "IMAD"), (BRANCH, 3, "BRA")]
# a signed 64-bit dividend the compiler cannot bound (cuda.grid(1), a loaded or computed int64; not a special
# register widened from 32 bits, as in divergence_g*) also gets numba's overflow test (INT64_MIN // -1: ISETP.EQ
# + ISETP.NE.AND.EX pairs, PLOP3, the result registers zeroed) inside one more BSSY/BSYNC: burst_read's
# ``i // words_per_chunk`` and ``i % words_per_chunk`` run 50 and 42 instructions per warp in numba-cuda 0.30.4
# + ptxas 13.5 SASS (132 for the kernel, the H100 records too), the bounded dividend's 41
COSTS[("int64_min_check", "floordiv")] = [(INT, 7, "ISETP+PLOP3+IMAD.MOV (INT64_MIN // -1)"),
                                          (BRANCH, 2, "BSSY+BSYNC")]
COSTS[("int64_min_check", "mod")] = [(INT, 4, "ISETP+PLOP3 (INT64_MIN % -1)")]
COSTS[("bitop", "bool")] = [(INT, 1, "PLOP3")]
COSTS[("min", "bool")] = [(INT, 1, "PLOP3")]
COSTS[("max", "bool")] = [(INT, 1, "PLOP3")]
COSTS[("cmp", "bool")] = [(INT, 1, "PLOP3")]
COSTS[("not", "bool")] = []                                  # predicate negation is free
for _k in ("float32", "float64", "float16"):
    COSTS[("not", _k)] = COSTS[("cmp", _k)]

# ---- conversions ----------------------------------------------------------------------------------------
COSTS[("cvt", "f32", "f64")] = [(FP64, 1, "F2F.F64.F32")]
COSTS[("cvt", "f64", "f32")] = [(FP64, 1, "F2F.F32.F64")]
COSTS[("cvt", "f16", "f32")] = [(FP32, 1, "HADD2.F32")]
COSTS[("cvt", "f32", "f16")] = [(FP32, 1, "F2FP.F16.F32")]
COSTS[("cvt", "f16", "f64")] = [(FP32, 1, "HADD2.F32"), (FP64, 1, "F2F.F64.F32")]
COSTS[("cvt", "f64", "f16")] = [(FP64, 1, "F2F.F16.F64")]
for _i in ("i32", "u32", "i64", "u64", "b"):
    COSTS[("cvt", _i, "f32")] = [(SFU, 1, "I2F")]
    COSTS[("cvt", _i, "f16")] = [(SFU, 1, "I2F.F16")]
    COSTS[("cvt", _i, "f64")] = [(FP64, 1, "I2F.F64")]
    COSTS[("cvt", "f32", _i)] = [(SFU, 1, "F2I.TRUNC")]
    COSTS[("cvt", "f16", _i)] = [(SFU, 1, "F2I.TRUNC")]
    COSTS[("cvt", "f64", _i)] = [(FP64, 1, "F2I.F64.TRUNC")]
for _a in ("i32", "u32", "i64", "u64", "b"):
    for _b in ("i32", "u32", "i64", "u64", "b"):
        if _a != _b:
            COSTS[("cvt", _a, _b)] = [(INT, 1, "SHF.R.S32.HI" if _b in ("i64", "u64") else "MOV")]
COSTS[("cvt", "b", "i64")] = [(INT, 1, "SEL")]
COSTS[("cvt", "f32", "b")] = COSTS[("cmp", "float32")]
COSTS[("cvt", "f64", "b")] = COSTS[("cmp", "float64")]

# ---- math functions (libdevice) -------------------------------------------------------------------------
_MATH32 = {   # fn: [(pipe, n, label)] for float32 (libdevice __nv_*f, non-fast-math)
    "sqrt": [(SFU, 1, "MUFU.RSQ"), (FP32, 5, "FFMA"), (BRANCH, 1, "BRA")],
    # expf: FFMA.SAT + FFMA.RM + FADD + 2 FFMA + IMAD.SHL + MUFU.EX2, and a final scaling multiply that fuses
    # with a following add (math_exp's unrolled body: 59 per 4 iterations = 4 x (FMUL + expf 7 + FFMA + iterator
    # 5) + BRA + 2 IMAD.MOV; pipe_xu 16 = one MUFU.EX2 per call)
    "exp": [(SFU, 1, "MUFU.EX2"), (FP32, 6, "FFMA")],
    "exp2": [(SFU, 1, "MUFU.EX2"), (FP32, 3, "FMUL")],
    "expm1": [(SFU, 1, "MUFU.EX2"), (FP32, 14, "FFMA")],
    "log": [(SFU, 1, "MUFU.LG2"), (FP32, 12, "FFMA"), (INT, 3, "LOP3")],
    "log2": [(SFU, 1, "MUFU.LG2"), (FP32, 4, "FMUL")],
    "log10": [(SFU, 1, "MUFU.LG2"), (FP32, 12, "FFMA"), (INT, 3, "LOP3")],
    "log1p": [(SFU, 1, "MUFU.LG2"), (FP32, 16, "FFMA"), (INT, 3, "LOP3")],
    # sinf/cosf fast path (|x| < 105615): FMUL by 2/pi, F2I + I2FP, 3-FFMA Cody-Waite reduction, then the
    # polynomial with FSEL/IMAD.MOV quadrant selects, inside BSSY/BSYNC around the Payne-Hanek slow path
    # (math_sin: 26 per call; pipe_xu 1 (F2I), pipe_cbu 2)
    "sin": [(FP32, 15, "FFMA"), (INT, 6, "FSETP+LOP3+FSEL"), (SFU, 1, "F2I.NTZ"), (BRANCH, 2, "BSSY+BSYNC"),
            (BRANCH, 2, "BRA")],
    "cos": [(FP32, 15, "FFMA"), (INT, 6, "FSETP+LOP3+FSEL"), (SFU, 1, "F2I.NTZ"), (BRANCH, 2, "BSSY+BSYNC"),
            (BRANCH, 2, "BRA")],
    "tan": [(FP32, 18, "FFMA"), (INT, 6, "FSETP+LOP3+FSEL"), (SFU, 2, "F2I+MUFU.RCP"),
            (BRANCH, 2, "BSSY+BSYNC"), (BRANCH, 2, "BRA")],
    "asin": [(FP32, 18, "FFMA"), (SFU, 1, "MUFU.RSQ")],
    "acos": [(FP32, 20, "FFMA"), (SFU, 1, "MUFU.RSQ")],
    "atan": [(FP32, 18, "FFMA"), (SFU, 1, "MUFU.RCP")],
    "atan2": [(FP32, 24, "FFMA"), (SFU, 1, "MUFU.RCP"), (BRANCH, 1, "BRA")],
    "sinh": [(SFU, 2, "MUFU.EX2"), (FP32, 16, "FFMA")],
    "cosh": [(SFU, 2, "MUFU.EX2"), (FP32, 12, "FFMA")],
    "tanh": [(SFU, 2, "MUFU.EX2"), (FP32, 14, "FFMA"), (BRANCH, 1, "BRA")],
    "asinh": [(SFU, 2, "MUFU.LG2"), (FP32, 18, "FFMA")],
    "acosh": [(SFU, 2, "MUFU.LG2"), (FP32, 18, "FFMA")],
    "atanh": [(SFU, 1, "MUFU.LG2"), (FP32, 16, "FFMA")],
    "erf": [(FP32, 16, "FFMA"), (SFU, 1, "MUFU.EX2")],
    "erfc": [(FP32, 22, "FFMA"), (SFU, 2, "MUFU.EX2")],
    "lgamma": [(FP32, 60, "FFMA"), (SFU, 3, "MUFU.LG2"), (BRANCH, 3, "BRA")],
    "gamma": [(FP32, 60, "FFMA"), (SFU, 3, "MUFU.EX2"), (BRANCH, 3, "BRA")],
    "pow": COSTS[("pow", "float32")],
    "hypot": [(FP32, 8, "FFMA"), (SFU, 1, "MUFU.RSQ")],
    "fmod": COSTS[("mod", "float32")],
    "remainder": COSTS[("mod", "float32")],
    "ldexp": [(INT, 4, "SHF+IADD3+ISETP+LOP3"), (FP32, 2, "FMUL")],
    "frexp": [(INT, 4, "SHF+LOP3+IADD3"), (FP32, 2, "FSETP+FMUL")],
    "modf": [(FP32, 2, "FRND.TRUNC+FADD")],
    "fabs": [(FP32, 1, "FADD")],
    "copysign": [(INT, 1, "LOP3")],
    # libdevice __nv_nextafterf: the bits stepped by one toward y (compares, an add, selects for 0/NaN)
    "nextafter": [(FP32, 3, "FSETP"), (INT, 5, "IADD3+LOP3+SEL")],
    "floor": [(FP32, 1, "FRND.FLOOR")],
    "ceil": [(FP32, 1, "FRND.CEIL")],
    "trunc": [(FP32, 1, "FRND.TRUNC")],
    "round": [(FP32, 1, "FRND")],
    "isnan": [(FP32, 1, "FSETP.NAN")],
    "isinf": [(FP32, 1, "FSETP")],
    "isfinite": [(FP32, 1, "FSETP")],
    "degrees": [(FP32, 1, "FMUL")],
    "radians": [(FP32, 1, "FMUL")],
    "rsqrt": [(SFU, 1, "MUFU.RSQ"), (FP32, 3, "FFMA")],
    "cbrt": [(SFU, 2, "MUFU.LG2"), (FP32, 10, "FFMA")],
}
_SCALE64 = {FP32: FP64, FP16: FP64}
for _fn, _entries in _MATH32.items():
    COSTS[(_fn, "float32")] = _entries
    COSTS[(_fn, "float16")] = _entries
    # double precision: libdevice's __nv_* run on the FP64 pipe, roughly twice the instructions
    COSTS[(_fn, "float64")] = [(_SCALE64.get(p, p), n * 2 if p == FP32 else n,
                                ("D" + lab[1:]) if p == FP32 else lab) for p, n, lab in _entries]
COSTS[("sqrt", "float64")] = [(SFU, 1, "MUFU.RSQ64H"), (FP64, 12, "DFMA+DMUL+DSETP"), (FP32, 4, "IMAD"),
                              (INT, 5, "IADD3+ISETP+MOV"), (BRANCH, 3, "BRA+BSSY+BSYNC")]
# libdevice's double exp and log (numba-cuda 0.30 + ptxas 13 for sm_90, SASS read off: __nv_exp 59 instructions
# on its path -- 22 UMOVs of the polynomial's 64-bit constants, 14 DFMA, no MUFU; __nv_log 84 with one
# MUFU.RCP64H); records/h200/ncu_wild.json: the numba GBM step (one exp) 103 warp instructions per thread-warp
# measured, 59 with exp's old estimate (13); Black-Scholes (3 exp, 1 log, 1 sqrt, 4 divisions) 480 against 235.
# (A division's fast path stays at 11: nb_montecarlo's 1.0 / x is exact with it.)
COSTS[("exp", "float64")] = [(FP64, 20, "DFMA+DADD+DMUL+DSETP"), (FP32, 7, "IMAD"),
                             (INT, 9, "SHF+IADD3+FSETP+FSEL+LEA+MOV"), (UNIFORM, 22, "UMOV"),
                             (BRANCH, 3, "BRA+BSSY+BSYNC")]
COSTS[("log", "float64")] = [(SFU, 1, "MUFU.RCP64H"), (FP64, 30, "DFMA+DADD+DMUL"), (FP32, 12, "IMAD"),
                             (INT, 18, "LOP3+ISETP+MOV+FSEL+VIADD+LEA"), (UNIFORM, 20, "UMOV"),
                             (BRANCH, 3, "BRA+BSSY+BSYNC")]

# ---- control flow ---------------------------------------------------------------------------------------
# An ``if`` on a lane-varying condition opens a convergence region: BSSY, the predicated BRA, and BSYNC where
# the sides join -- executed by every warp that reaches the ``if``, divergent or not (the compiler cannot
# know).  divergence_g32 vs g16: pipe_cbu 7 vs 9 per warp, the same BSSY/BSYNC in both; reduction: 8 tree
# steps x (BSSY + BRA + BSYNC) per warp.  An ``if`` whose body ends the kernel (``if i < n: ...`` as the last
# statement, or ``if ...: return``) needs no join: one predicated EXIT/BRA (vector_add: ``@P0 EXIT``).  A
# condition that is uniform (a constant, a parameter, a loop counter, %ctaid) branches without BSSY/BSYNC.
COSTS[("branch",)] = [(BRANCH, 1, "BRA")]                  # uniform or tail if, the jump over an else arm
COSTS[("if_varying",)] = [(BRANCH, 1, "BSSY"), (BRANCH, 1, "BRA")]
COSTS[("join",)] = [(BRANCH, 1, "BSYNC")]
COSTS[("branch_exit",)] = [(BRANCH, 1, "EXIT")]           # if at the kernel's end: @P EXIT
COSTS[("loop_region",)] = [(BRANCH, 1, "BSSY")]           # a loop whose trip count varies across lanes
COSTS[("select",)] = [(INT, 1, "SEL")]                     # ternary / merged value
COSTS[("shortcircuit",)] = [(INT, 1, "PLOP3")]
COSTS[("exit",)] = [(BRANCH, 1, "EXIT")]
COSTS[("barrier",)] = [(BRANCH, 1, "BAR.SYNC")]
COSTS[("syncwarp",)] = [(BRANCH, 1, "WARPSYNC")]
# cuda.threadfence_block / threadfence / threadfence_system: MEMBAR.CTA (cheap) and the GPU/system-scope fences,
# which the timing engine holds the warp at for sm.membar_gpu_cycles
COSTS[("membar",)] = [(LSU, 1, "MEMBAR.SC.GPU")]
COSTS[("membar", "block")] = [(LSU, 1, "MEMBAR.CTA")]
COSTS[("membar", "system")] = [(LSU, 1, "MEMBAR.SC.SYS")]

# ---- loops ------------------------------------------------------------------------------------------------
# numba's ``range`` iterator keeps a 64-bit remaining count: each iteration compares it with 0 and updates it
# with selects (ISETP.GT + ISETP.GT.AND.EX + SEL + IADD3 + IMAD.X: math_fp32/math_fp64/divergence unrolled
# bodies, 25 = 4 x (FFMA + 5) + BRA); when the loop variable is used, the value is advanced the same way
# (5 more: row_col_sum, 91 per 4 iterations = 4 x (LDG + FADD + 9 address + 10 iterator) + 5 trip test).
COSTS[("range_iter", False)] = [(INT, 4, "ISETP+SEL+IADD3"), (FP32, 1, "IMAD.X")]
COSTS[("range_iter", True)] = [(INT, 8, "ISETP+SEL+IADD3"), (FP32, 2, "IMAD.X")]
# the value used only in 32-bit arithmetic (``e & mask``, see ``arith.Arith.narrow``): SEL + IMAD.IADD
# (bank_conflicts' reps loop: 57 per 4 iterations = 4 x (LDS + FADD + 4 address + 7 iterator) + 5 trip test)
COSTS[("range_iter", "narrow")] = [(INT, 5, "ISETP+SEL+IADD3"), (FP32, 2, "IMAD.X")]
# iterator set-up (count = max(stop - start, 0) by selects) and the test that skips an empty loop
COSTS[("range_setup",)] = [(INT, 8, "ISETP+SEL"), (FP32, 1, "IMAD.X"), (BRANCH, 1, "BRA")]
# a runtime step divides (stop - start) by it: the 32-bit fast path of the 64-bit division (bank_conflicts'
# ``range(t, SIZE, cuda.blockDim.x)``: I2F + MUFU.RCP + F2I, pipe_xu 3)
COSTS[("range_setup_div",)] = [(INT, 10, "ISETP+SEL+LOP3"), (FP32, 14, "IMAD.HI"), (SFU, 3, "MUFU.RCP"),
                               (BRANCH, 2, "BSSY+BSYNC"), (BRANCH, 2, "BRA")]
# a runtime-unrolled loop computes ``trip % 4`` and the number of groups, and branches around the unrolled and
# the remainder loops (math_fp32: 17 + 1 instructions between the range set-up and the unrolled body)
COSTS[("unroll_setup",)] = [(INT, 11, "LOP3+ISETP+SEL+IADD3"), (FP32, 3, "IMAD.X"), (BRANCH, 3, "BRA")]
# ... and when the body reads the loop variable, its value is carried beside the count: the remainder loop's and
# the unrolled loop's starting values (IADD3 pairs, zeroed IMAD.MOVs; cold_burst's ``a[i + j * n]`` over ``range(k)``:
# 90 instructions per warp at k = 1 in numba-cuda 0.30.4 + ptxas 13.5 SASS and on the H100, 80 without them)
COSTS[("unroll_setup", "used")] = COSTS[("unroll_setup",)] + [(INT, 5, "IADD3+SEL (loop value)"),
                                                              (FP32, 5, "IMAD.MOV+IMAD.X (loop value)")]
# a countable ``while`` (grid-stride loop) has its trip count computed, (n - i + step - 1) // step, by the
# same 32-bit division (grid_stride_copy, reduction_n16777216_b1056: pipe_xu 3)
COSTS[("while_setup",)] = [(INT, 20, "ISETP+SEL+LOP3+IADD3"), (FP32, 20, "IMAD.HI"), (SFU, 3, "MUFU.RCP"),
                           (BRANCH, 2, "BSSY+BSYNC"), (BRANCH, 3, "BRA")]
# trip test of each remainder iteration of an unrolled loop: a separate 64-bit counter (IADD3 + IMAD.X +
# ISETP.NE pair) and the back-edge branch; an unrolled group keeps one of them, and only the branch when the
# loop variable is unused (the iterator's last compare decides).  A loop that is not unrolled needs only the
# branch (math_sin: 34 instructions per iteration = sinf 26 + FFMA + LDC.64 + iterator 5 + BRA; matmul_tiled's
# tile loop).
COSTS[("loop_counter",)] = [(INT, 3, "IADD3+ISETP"), (FP32, 1, "IMAD.X")]
COSTS[("loop_branch",)] = [(BRANCH, 1, "BRA")]

# ---- special registers, parameters and indexing ----------------------------------------------------------
# every kernel starts by loading its stack pointer (LDC R1, c[0x28]) and ends with EXIT
COSTS[("kernel_entry",)] = [(UNIFORM, 1, "LDC")]
COSTS[("sreg", "tid")] = [(LSU, 1, "S2R")]                 # first read (CSE'd after); pipe_lsu
COSTS[("sreg", "laneid")] = [(LSU, 1, "S2R")]
COSTS[("sreg", "ctaid")] = [(LSU, 1, "S2R.CTAID")]         # pipe_adu (vector_add: adu = LDC + this S2R)
COSTS[("sreg", "ntid")] = [(UNIFORM, 1, "ULDC")]           # %ntid, %nctaid live in the constant bank
COSTS[("sreg", "nctaid")] = [(UNIFORM, 1, "ULDC")]
# cuda.grid(1) = ctaid * ntid + tid as int64: the sign of tid (SHF) and one IMAD.WIDE (vector_add)
COSTS[("grid", 1)] = [(INT, 1, "SHF.R.S32.HI"), (FP32, 1, "IMAD.WIDE")]
COSTS[("grid", 2)] = COSTS[("grid", 1)] * 2
COSTS[("grid", 3)] = COSTS[("grid", 1)] * 3
COSTS[("gridsize", 1)] = [(UNIFORM, 1, "UIMAD.WIDE")]      # reduction: pipe_uniform 2 with the grid-stride while
COSTS[("gridsize", 2)] = [(UNIFORM, 2, "UIMAD.WIDE")]
COSTS[("gridsize", 3)] = [(UNIFORM, 3, "UIMAD.WIDE")]
# kernel parameters: a scalar parameter is read from the constant bank once (ULDC.64 / LDC.64, 8 bytes each:
# divergence reads group, iters and the float32 pair a, b with 3); an array's data pointer, each shape entry
# and its size are parameters too, read once per kernel at their first use (vector_add: 8 ULDC.64 = out.size
# + 3 x (data + shape) + the global-memory descriptor)
COSTS[("param",)] = [(UNIFORM, 1, "ULDC.64")]
COSTS[("array_field",)] = [(UNIFORM, 1, "ULDC.64")]
COSTS[("global_desc",)] = [(UNIFORM, 1, "ULDC.64")]       # desc[UR4] of LDG.E/STG.E, once per kernel
# the shared-memory window of the CTA (sm_90 clusters): S2UR SR_CgaCtaId + UMOV + ULEA, once per kernel that
# touches shared memory (reduction: pipe_adu 12 = LDC + S2R + 9 BAR + this S2UR ...; pipe_uniform 2)
COSTS[("shared_base",)] = [(UNIFORM, 1, "S2UR"), (UNIFORM, 1, "UMOV"), (UNIFORM, 1, "ULEA")]
# numba array indexing.  Negative-index wraparound of a signed runtime index, branch-free: i + (i >> 63 & dim)
# = 2 SHF (sign, duplicated by ptxas) + 2 LOP3 + IADD3 + IMAD.X; a second wrap of the same index value (another
# array) reuses the sign (vector_add: 20 ALU/IMAD.X for a[i], b[i], out[i] = 6 + 4 + 4 + 3 x 2 address).  A
# dimension of compile-time size (shared and local arrays) wraps with LOP3 + LEA.HI (reduction, bank_conflicts).
COSTS[("index_wrap",)] = [(INT, 5, "SHF+LOP3+IADD3"), (FP32, 1, "IMAD.X")]
COSTS[("index_wrap_cse",)] = [(INT, 3, "LOP3+IADD3"), (FP32, 1, "IMAD.X")]
COSTS[("index_wrap_const",)] = [(INT, 2, "LOP3+LEA.HI")]
# the wrap of an index u * 2^m: its add is a scaled one, LEA + LEA.HI.X (i + (i >> 63 & dim) with i = 2 * j:
# LEA R0, P0, R2, R5, 0x1), which takes over the product's shift: the pair costs 2 less (rmw_rec_inplace: 28
# instructions per warp on the H100, numba-cuda 0.30.4 SASS: SHF x2, LOP3 x2, LEA, LEA.HI.X for a[2 * i])
COSTS[("index_wrap_scaled",)] = [(INT, 4, "SHF+LOP3")]
# the 64-bit address: base + flat * itemsize (LEA + LEA.HI.X); each leading dimension adds its index times the
# row stride: IMAD.WIDE.U32 per access (fused with the add), plus the high halves (2 IMAD + IMAD.IADD) unless
# that index is the same value as in an earlier access (row_col_sum: row walk 9, column walk 12 address
# instructions per iteration)
COSTS[("index_addr", 1)] = [(INT, 2, "LEA+LEA.HI.X")]
COSTS[("index_row", "global")] = [(FP32, 1, "IMAD.WIDE.U32")]
COSTS[("index_row_hi", "global")] = [(FP32, 3, "IMAD+IMAD.IADD")]
# shared and local memory: 32-bit addresses in the shared window (LEA of the element offset; a leading
# dimension is one IMAD)
COSTS[("index_addr_shared", 1)] = [(INT, 1, "LEA")]
COSTS[("index_row", "shared")] = [(FP32, 1, "IMAD")]
COSTS[("index_row_hi", "shared")] = []
# array slicing (views.py), read off the sm_90 SASS numba-cuda 0.30.4 + ptxas 13.5 build for ``a[1:]``, ``a[i:]``,
# ``a[lo:hi]``, ``a[::2]`` and ``m[r, 1:]`` of global arrays (static counts of straight-line kernels): a slice of a
# dimension whose bounds or length are not compile-time constants runs numba's fix_slice and the length
# (``a[1:]``: 8, ISETP/SEL pairs and the 64-bit subtract); each runtime bound adds its wraparound and clamp and the
# data pointer's move (``a[i:]``: 14); two runtime bounds are also compared with each other (``a[lo:hi]``: 31); a
# constant step other than 1 divides the length by it (``a[::2]``: 18; a runtime step: the integer division).  A
# view numba types non-contiguous (layout 'A': a step, a slice left of the last index) keeps its strides at run
# time: each runtime index is multiplied by its stride (``index_row`` + ``index_row_hi``, as a leading dimension).
COSTS[("slice_dim",)] = [(INT, 6, "ISETP+SEL+IADD3 (fix_slice: clamp, length)"), (FP32, 2, "IMAD.X")]
COSTS[("slice_bound",)] = [(INT, 5, "SHF+LOP3+ISETP+SEL (a runtime bound: wrap, clamp)"), (FP32, 1, "IMAD.X")]
COSTS[("slice_span",)] = [(INT, 10, "ISETP.EX+SEL (runtime start against runtime stop)"), (INT, 1, "IADD3.X")]
COSTS[("slice_step", "const")] = [(INT, 7, "SHF+LEA.HI+IADD3 (length / step)"), (FP32, 3, "IMAD.X")]
# ---- device libraries (devlib.py) ---------------------------------------------------------------------------
# cuda.random: one xoroshiro128+ step on 64-bit words held as 32-bit halves -- the 64-bit add s0 + s1 (IADD3 +
# IMAD.X), s1 ^= s0 (2 LOP3), rotl(s0, 55) and rotl(s1, 36) (2 SHF.L.W funnel shifts each), s1 << 14 (2 SHF),
# the three-way xor (2 LOP3); the state's loads and stores are recorded as memory ops.  Estimates from the PTX
# numba emits for numba/cuda/random.py (the suite has no RNG kernel).
COSTS[("rng_next",)] = [(INT, 11, "SHF.L.W+LOP3+IADD3"), (FP32, 1, "IMAD.X")]
# uint64 -> [0, 1): x >> 11 (SHF.R.U64 on the halves), I2F.F64.U64, DMUL by 2**-53 (float32: and F2F)
COSTS[("rng_unit", "float64")] = [(INT, 2, "SHF.R.U64"), (FP64, 1, "I2F.F64.U64"), (FP64, 1, "DMUL")]
COSTS[("rng_unit", "float32")] = COSTS[("rng_unit", "float64")] + [(FP64, 1, "F2F.F32.F64")]
# xoroshiro128p_jump: 128 steps, fully unrolled (constant polynomial): the steps and the xors of the set bits
COSTS[("rng_jump",)] = [(INT, 1664, "SHF.L.W+LOP3 (128 steps)"), (FP32, 128, "IMAD.X")]
# splitmix64: 64-bit add, two xor-shift-multiply rounds (IMAD.WIDE.U32 + 2 IMAD per 64-bit multiply), xor-shift
COSTS[("rng_splitmix",)] = [(INT, 14, "SHF+LOP3+IADD3"), (FP32, 7, "IMAD.WIDE.U32+IMAD")]
# cooperative groups: cuda.cg.this_grid() reads the grid handle (cudaCGGetIntrinsicHandle: the launch's
# environment register); grid.sync() calls cudaCGSynchronize (libcudadevrt): the call, thread 0's test and a
# GPU-scope fence, the block barriers, one thread's arrival atomic and spin on the barrier word -- the wait
# for the whole grid is the GRID_SYNC op, which the timing engine holds until every live warp of the grid has
# arrived (engine: release = last arrival + the barrier's round trips, see Engine.grid_sync_cycles)
COSTS[("cg_this_grid",)] = [(UNIFORM, 2, "S2UR+UMOV (grid handle)")]
# its fence is part of the calibrated chip.grid_sync_base_cycles, hence not labelled as a GPU-scope MEMBAR here
COSTS[("grid_sync_call",)] = [(INT, 6, "CALL+ISETP+BRA (cudaCGSynchronize)"), (LSU, 1, "FENCE (grid sync)")]
COSTS[("grid_sync",)] = [(BRANCH, 2, "BAR.SYNC x2 + grid barrier (ATOM.E.ADD, spin LD.E.STRONG.GPU)")]
COSTS[("warp_shuffle",)] = [(LSU, 1, "SHFL")]
# complex numbers (numba lowers them to pairs of floats): per operation, the float instructions on the pair
for _ct, _p, _pre in (("complex64", FP32, "F"), ("complex128", FP64, "D")):
    COSTS[("add", _ct)] = COSTS[("sub", _ct)] = [(_p, 2, _pre + "ADD")]
    COSTS[("neg", _ct)] = [(_p, 2, _pre + "ADD")]
    COSTS[("mul", _ct)] = [(_p, 4, _pre + "MUL+" + _pre + "FMA")]
    COSTS[("truediv", _ct)] = [(_p, 11, _pre + "FMA"), (SFU, 1, "MUFU.RCP"), (INT, 4, "FSETP+FSEL")]
    COSTS[("pow", _ct)] = [(_p, 70, _pre + "FMA"), (SFU, 6, "MUFU"), (INT, 20, "FSETP+FSEL"), (BRANCH, 4, "BRA")]
    COSTS[("abs", _ct)] = [(_p, 8, _pre + "FMA"), (SFU, 1, "MUFU.RSQ"), (INT, 3, "FSETP+FSEL")]
    COSTS[("cmp", _ct)] = [(INT, 3, "FSETP+PLOP3")]
    COSTS[("cmath", _ct)] = [(_p, 40, _pre + "FMA"), (SFU, 3, "MUFU"), (INT, 12, "FSETP+FSEL"), (BRANCH, 2, "BRA")]
# conversions to and from complex: the real part converted, the imaginary part set (or dropped)
for _src in ("f16", "f32", "f64", "i32", "i64", "u32", "u64", "b", "c64", "c128"):
    for _dst in ("c64", "c128"):
        if _src != _dst:
            COSTS[("cvt", _src, _dst)] = [(FP64 if "64" in _src + _dst or "128" in _src + _dst else FP32, 2, "F2F")]
COSTS[("warp_vote",)] = [(INT, 1, "VOTE")]
COSTS[("warp_match",)] = [(LSU, 1, "MATCH")]                 # match.any/all.sync: compares through the shuffle unit
COSTS[("sreg", "lanemask_lt")] = [(LSU, 1, "S2R")]          # %lanemask_lt
COSTS[("popc",)] = [(SFU, 1, "POPC")]
COSTS[("bitfn",)] = [(SFU, 2, "FLO")]

#: useful floating-point operations per active lane, for the roofline (``KernelTrace.flops``)
FLOPS_PER_LANE = {"add": 1, "sub": 1, "mul": 1, "fma": 2}


def mem_label(kind: str, space: str, nbytes: int, op: str = "") -> str:
    """SASS-like name of a memory instruction: ``LDG.E.32``, ``STS.64``, ``ATOMG.E.ADD``, ``RED.E.ADD``."""
    bits = nbytes * 8
    if kind == "atomic":
        base = {"global": "ATOMG.E", "shared": "ATOMS", "global_red": "RED.E"}[space]
        return f"{base}.{op.upper()}.{bits}"
    pre = {"load": "LD", "store": "ST"}[kind] + {"global": "G.E", "shared": "S", "local": "L", "const": "C"}[space]
    if space == "const":
        return f"LDC.{bits}"
    return f"{pre}.{bits}"


def cost(key: tuple) -> list[tuple[Pipe, int, str]]:
    """The instruction groups of ``key`` (falls back from ``(op, dtype, "const")`` to ``(op, dtype)``)."""
    c = COSTS.get(key)
    if c is None and len(key) == 3 and key[2] == "const":
        c = COSTS.get(key[:2])
    if c is None:
        raise KeyError(f"no cost entry for {key!r} in gpusim/cuda/costs.py")
    return c
