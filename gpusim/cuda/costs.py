"""What one Python construct of a SIMT kernel costs in warp instructions, per pipe.

The front end records, for every construct a warp executes, the SASS-like instruction groups that
numba-cuda's compiler (numba -> NVVM -> ptxas) emits for it.  Every count lives here, as data, so that the
per-construct costs can be calibrated without touching the executor.

THESE ARE INITIAL ESTIMATES, read off typical sm_90 SASS of numba-cuda kernels and libdevice sources; they are
to be calibrated against ``smsp__inst_executed.sum`` measured by Nsight Compute on the numba-cuda build of the
same kernels (``gpusim validate``).  Units: warp instructions per executing warp.

Keys:
  ``(op, dtype)``          arithmetic in computation dtype ("float32", "float64", "float16", "int32",
                           "int64", "uint32", "uint64", "bool"); op in add sub mul fma truediv floordiv mod
                           pow neg abs min max cmp bitop shift not
  ``(op, dtype, "const")`` the same op when the right operand is a compile-time constant (cheaper divisions)
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

#: register estimate: registers every thread holds regardless of the kernel (stack pointer R1, the zero
#: register's companions, address temporaries numba keeps for its array structs).  Set so the estimate has no
#: mean bias against ptxas' counts for the kernels/ files in gpusim/validate/records/compile_sm90_local.json
#: (mean absolute error there: ~5 registers; worst: row/col walks, which ptxas unrolls, -10).
REGISTERS_BASE = 8

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
for _dt, _w in (("int32", 1), ("uint32", 1), ("int64", 2), ("uint64", 2)):
    COSTS[("add", _dt)] = [(INT, _w, "IADD3")]              # 64-bit: IADD3 + IADD3.X
    COSTS[("sub", _dt)] = [(INT, _w, "IADD3")]
    COSTS[("neg", _dt)] = [(INT, _w, "IADD3")]
    COSTS[("mul", _dt)] = [(INT, 1 if _w == 1 else 3, "IMAD")]  # 64-bit: IMAD.WIDE.U32 + 2 IMAD
    COSTS[("fma", _dt)] = [(INT, 1 if _w == 1 else 3, "IMAD")]
    COSTS[("cmp", _dt)] = [(INT, _w, "ISETP")]              # 64-bit: ISETP + ISETP.EX
    COSTS[("bitop", _dt)] = [(INT, _w, "LOP3")]
    COSTS[("shift", _dt)] = [(INT, _w, "SHF")]
    COSTS[("abs", _dt)] = [(INT, _w + 1, "IABS")]
    COSTS[("min", _dt)] = [(INT, _w, "IMNMX")]
    COSTS[("max", _dt)] = [(INT, _w, "IMNMX")]
    COSTS[("not", _dt)] = [(INT, 1, "PLOP3")]
    # division by a runtime value: software sequence (no integer divider); by a constant: mul-hi + shifts
    COSTS[("floordiv", _dt)] = [(INT, 18 if _w == 1 else 44, "IMAD.HI"), (SFU, 1, "MUFU.RCP"),
                                 (BRANCH, 1 if _w == 1 else 2, "BRA")]
    COSTS[("mod", _dt)] = COSTS[("floordiv", _dt)] + [(INT, 2, "IMAD")]
    COSTS[("floordiv", _dt, "const")] = [(INT, 3 * _w, "IMAD.HI")]
    COSTS[("mod", _dt, "const")] = [(INT, 4 * _w, "IMAD.HI")]
    COSTS[("truediv", _dt)] = COSTS[("truediv", "float64")]  # ints are converted to float64 first
    COSTS[("pow", _dt)] = [(INT, 12, "IMAD"), (BRANCH, 3, "BRA")]
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
    "exp": [(SFU, 1, "MUFU.EX2"), (FP32, 8, "FFMA")],
    "exp2": [(SFU, 1, "MUFU.EX2"), (FP32, 3, "FMUL")],
    "expm1": [(SFU, 1, "MUFU.EX2"), (FP32, 14, "FFMA")],
    "log": [(SFU, 1, "MUFU.LG2"), (FP32, 12, "FFMA"), (INT, 3, "LOP3")],
    "log2": [(SFU, 1, "MUFU.LG2"), (FP32, 4, "FMUL")],
    "log10": [(SFU, 1, "MUFU.LG2"), (FP32, 12, "FFMA"), (INT, 3, "LOP3")],
    "log1p": [(SFU, 1, "MUFU.LG2"), (FP32, 16, "FFMA"), (INT, 3, "LOP3")],
    "sin": [(FP32, 22, "FFMA"), (INT, 8, "IMAD"), (BRANCH, 2, "BRA")],
    "cos": [(FP32, 22, "FFMA"), (INT, 8, "IMAD"), (BRANCH, 2, "BRA")],
    "tan": [(FP32, 26, "FFMA"), (INT, 8, "IMAD"), (SFU, 1, "MUFU.RCP"), (BRANCH, 2, "BRA")],
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
    "fabs": [(FP32, 1, "FADD")],
    "copysign": [(INT, 1, "LOP3")],
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
COSTS[("sqrt", "float64")] = [(SFU, 1, "MUFU.RSQ64H"), (FP64, 8, "DFMA"), (BRANCH, 1, "BRA")]

# ---- control flow ---------------------------------------------------------------------------------------
COSTS[("branch",)] = [(BRANCH, 1, "BRA")]                  # conditional branch of if / loop test
COSTS[("diverge",)] = [(BRANCH, 1, "BSSY"), (BRANCH, 1, "BSYNC")]  # warps whose lanes split
COSTS[("loop_inc",)] = [(INT, 2, "IADD3")]                 # 64-bit range counter increment
COSTS[("loop_test",)] = [(INT, 2, "ISETP"), (BRANCH, 1, "BRA")]
COSTS[("select",)] = [(INT, 1, "SEL")]                     # ternary / merged value
COSTS[("shortcircuit",)] = [(INT, 1, "PLOP3")]
COSTS[("exit",)] = [(BRANCH, 1, "EXIT")]
COSTS[("barrier",)] = [(BRANCH, 1, "BAR.SYNC")]
COSTS[("syncwarp",)] = [(BRANCH, 1, "WARPSYNC")]
COSTS[("membar",)] = [(LSU, 1, "MEMBAR")]

# ---- special registers and indexing ---------------------------------------------------------------------
COSTS[("sreg",)] = [(INT, 1, "S2R")]                       # first read of %tid / %ctaid (CSE'd after)
COSTS[("grid", 1)] = [(INT, 1, "IMAD"), (INT, 1, "SHF.R.S32.HI")]   # ctaid*ntid+tid in 32 bit, sign-extended
COSTS[("grid", 2)] = COSTS[("grid", 1)] * 2
COSTS[("grid", 3)] = COSTS[("grid", 1)] * 3
COSTS[("gridsize", 1)] = [(INT, 1, "IMAD")]
COSTS[("gridsize", 2)] = [(INT, 2, "IMAD")]
COSTS[("gridsize", 3)] = [(INT, 3, "IMAD")]
# numba array indexing: per signed runtime index a negative-index wraparound (ISETP + SEL of i or i+dim),
# then the 64-bit address: base + sum(i_k * stride_k)
COSTS[("index_wrap",)] = [(INT, 2, "ISETP+SEL")]
COSTS[("index_addr", 1)] = [(INT, 2, "IMAD.WIDE")]
COSTS[("index_addr", 2)] = [(INT, 4, "IMAD.WIDE")]
COSTS[("index_addr", 3)] = [(INT, 6, "IMAD.WIDE")]
COSTS[("index_addr_shared", 1)] = [(INT, 1, "LEA")]      # 32-bit shared-window address
COSTS[("index_addr_shared", 2)] = [(INT, 2, "IMAD")]
COSTS[("index_addr_shared", 3)] = [(INT, 3, "IMAD")]
COSTS[("warp_shuffle",)] = [(LSU, 1, "SHFL")]
COSTS[("warp_vote",)] = [(INT, 1, "VOTE")]
COSTS[("popc",)] = [(INT, 1, "POPC")]
COSTS[("bitfn",)] = [(INT, 2, "FLO")]

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
