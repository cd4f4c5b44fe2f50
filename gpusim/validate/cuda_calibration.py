"""Per-construct instruction costs held against the H100 records: predicted vs measured, per Nsight pipe.

The SIMT front end charges every construct the warp instructions numba-cuda's compiler emits for it
(``gpusim/cuda/costs.py``).  This module makes the fit reproducible: it traces the non-heavy CUDA suite cases
(functional execution only, no timing) and prints, per case and per warp, ``smsp__inst_executed.sum`` and its
split over Nsight Compute's pipes next to the committed H100 measurement (``gpusim/validate/records/ncu_*.json``),
together with the active threads per instruction and the register estimate::

    python -m gpusim.validate.cuda_calibration [--cases REGEX] [--pipes]

Nsight's pipes are not gpusim's ``Pipe``: ``ncu_pipe`` maps an op to the pipe Nsight counts it on, by its
label (the SASS opcode):

==========  ==============================================================================================
alu         integer add/logic/shift/compare/select: IADD3, LOP3, SHF, SEL, ISETP, LEA, PLOP3, IMNMX, FSEL,
            FSETP, FMNMX, MOV, CS2R, VOTE (gpusim ``Pipe.INT``)
fma         FFMA/FADD/FMUL and the IMAD family (IMAD, IMAD.WIDE, IMAD.X, IMAD.MOV, IMAD.SHL, IMAD.HI,
            IMAD.IADD) -- integer multiply-adds issue on the FMA pipe on sm_90 (gpusim ``Pipe.FP32``)
fp64        DFMA, DADD, DMUL, DSETP and fp64 conversions (``Pipe.FP64``)
xu          MUFU, I2F/F2I/F2F, POPC, FLO, BREV (``Pipe.SFU``)
lsu         LDG/STG/LDS/STS/LDL/STL/ATOM/RED, SHFL, S2R of %tid (``Pipe.LSU``)
adu         LDC (constant-bank loads), S2R of %ctaid, S2UR, BAR (barriers)
cbu         EXIT, BSSY, BSYNC, WARPSYNC, CALL, RET
uniform     the uniform datapath (UIADD3, USEL, ...)
other       instructions Nsight's pipe counters leave out: BRA, ULDC (uniform constant loads), UMOV
==========  ==============================================================================================

These assignments were read off the records: vector add's 42 warp instructions per warp split 20 alu /
5 fma (3 IMAD.X + IMAD.WIDE + FADD) / 4 lsu / 2 adu / 2 cbu, and the 9 left over are its 9 ULDC; a loop's
back-edge BRA shows up in no pipe counter (``row_col_sum``: 256 groups of 4 iterations, 266 left over).
"""
from __future__ import annotations

import argparse
import math
import re
import sys

from ..trace import WARP, OpKind, Pipe

NCU_PIPES = ("alu", "fma", "fp64", "xu", "lsu", "adu", "cbu", "uniform", "other")

_BY_PIPE = {Pipe.INT: "alu", Pipe.FP32: "fma", Pipe.FP16: "fma", Pipe.FP64: "fp64", Pipe.SFU: "xu",
            Pipe.LSU: "lsu", Pipe.TENSOR: "other"}


def ncu_pipe(op) -> str:
    """The Nsight Compute pipe (``smsp__inst_executed_pipe_<name>``) an op's instructions count on."""
    lab = op.label
    if op.kind == OpKind.BARRIER or lab.startswith("BAR"):
        return "adu"
    if lab.startswith("S2R.CTAID") or lab.startswith("LDC") or lab.startswith("S2UR"):
        return "adu"
    if lab.startswith("ULDC") or lab.startswith("BRA") or lab.startswith("UMOV"):
        return "other"
    if op.pipe == Pipe.BRANCH:
        return "cbu"
    if op.pipe == Pipe.UNIFORM:
        return "uniform"
    return _BY_PIPE.get(op.pipe, "other")


def trace_counts(tr) -> dict:
    """Warp instructions of a trace per Nsight pipe, plus totals (like ``KernelTrace.instruction_counts``)."""
    import numpy as np
    per = dict.fromkeys(NCU_PIPES, 0)
    inst = thread = 0
    for t in tr.tables:
        if t.active is None:
            wa = np.full(len(t.ops), t.n_warps, np.int64)
            la = wa * WARP
        else:
            wa = np.count_nonzero(t.active, axis=1)
            la = t.active.sum(axis=1, dtype=np.int64)
        for i, op in enumerate(t.ops):
            n = op.n_inst * int(wa[i])
            per[ncu_pipe(op)] += n
            inst += n
            thread += op.n_inst * int(la[i])
    warps = tr.n_ctas * tr.warps_per_cta
    return {"inst": inst, "thread_inst": thread, "per_pipe": per, "warps": warps, "regs": tr.regs_per_thread}


def predicted(case) -> list[dict]:
    """Trace every step of a suite case (values computed, no timing); one count dict per kernel."""
    from ..api import launch_steps
    from ..cuda.launch import trace_launch
    from .suite import load_case
    out = []
    for st in launch_steps(load_case(case)):
        tr = trace_launch(st["kernel"], st["grid"], st["block"], list(st["args"]),
                          shared_bytes=st.get("shared_bytes", 0) or 0)
        out.append(trace_counts(tr))
    return out


def measured(case_name: str) -> list[dict]:
    """The records' counts for a case, in the shape of ``trace_counts``."""
    from .records import kernel_metrics
    out = []
    for r in kernel_metrics(case_name):
        warps = int(r["launch__grid_size"]) * -(-int(r["launch__block_size"]) // WARP)
        inst = float(r["smsp__inst_executed.sum"])
        per = {p: float(r.get(f"smsp__inst_executed_pipe_{p}.sum", 0)) for p in NCU_PIPES if p != "other"}
        per["other"] = inst - sum(per.values())
        out.append({"inst": inst, "thread_inst": inst * float(r["smsp__thread_inst_executed_per_inst_executed.ratio"]),
                    "per_pipe": per, "warps": warps, "regs": int(r["launch__registers_per_thread"])})
    return out


def cases(pattern: str | None = None) -> list:
    """The non-heavy CUDA suite cases (those the calibration is held to; not the held-out families nor the scenario
    cases), optionally
    filtered."""
    from .suite import CASES, in_sample
    rx = re.compile(pattern) if pattern else None
    return [c for c in CASES if c.frontend == "cuda" and "heavy" not in c.tags and in_sample(c)
            and (rx is None or rx.search(c.name))]


def compare(pattern: str | None = None, progress=None) -> list[dict]:
    """One row per case: predicted and measured counts (summed over the case's kernels)."""
    rows = []
    for c in cases(pattern):
        meas = measured(c.name)
        if not meas:
            continue
        pred = predicted(c)
        rows.append({"case": c.name, "pred": _sum(pred), "meas": _sum(meas)})
        if progress:
            progress(c.name)
    return rows


def _sum(ks: list[dict]) -> dict:
    out = {"inst": 0.0, "thread_inst": 0.0, "warps": 0, "regs": 0, "per_pipe": dict.fromkeys(NCU_PIPES, 0.0)}
    for k in ks:
        out["inst"] += k["inst"]
        out["thread_inst"] += k["thread_inst"]
        out["warps"] += k["warps"]
        out["regs"] = max(out["regs"], k["regs"])
        for p, v in k["per_pipe"].items():
            out["per_pipe"][p] += v
    return out


def summary(rows: list[dict]) -> dict:
    """MAPE and worst case of inst_executed, registers (absolute) and threads per instruction."""
    def stats(errs):
        a = [abs(e) for _, e in errs]
        w = max(errs, key=lambda t: abs(t[1]))
        return {"mean_abs": sum(a) / len(a), "max_abs": abs(w[1]), "worst": w[0]}
    inst = [(r["case"], 100.0 * (r["pred"]["inst"] - r["meas"]["inst"]) / r["meas"]["inst"]) for r in rows]
    regs = [(r["case"], float(r["pred"]["regs"] - r["meas"]["regs"])) for r in rows]
    tpi = [(r["case"], r["pred"]["thread_inst"] / r["pred"]["inst"] - r["meas"]["thread_inst"] / r["meas"]["inst"])
           for r in rows]
    return {"inst_pct": stats(inst), "regs": stats(regs), "threads_per_inst": stats(tpi), "n": len(rows)}


def format_rows(rows: list[dict], pipes: bool = False) -> str:
    head = f"{'case':<28}{'inst/warp':>10}{'meas':>10}{'err':>7}{'thr/inst':>9}{'meas':>7}{'regs':>5}{'meas':>5}"
    if pipes:
        head += "  " + " ".join(f"{p:>13}" for p in NCU_PIPES)
    lines = [head]
    for r in rows:
        p, m = r["pred"], r["meas"]
        w = m["warps"] or 1
        err = 100.0 * (p["inst"] - m["inst"]) / m["inst"] if m["inst"] else math.nan
        s = (f"{r['case']:<28}{p['inst'] / w:>10.1f}{m['inst'] / w:>10.1f}{err:>+6.1f}%"
             f"{p['thread_inst'] / max(p['inst'], 1):>9.2f}{m['thread_inst'] / max(m['inst'], 1):>7.2f}"
             f"{p['regs']:>5d}{m['regs']:>5d}")
        if pipes:
            s += "  " + " ".join(f"{p['per_pipe'][k] / w:>6.1f}/{m['per_pipe'][k] / w:<6.1f}" for k in NCU_PIPES)
        lines.append(s)
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpusim.validate.cuda_calibration", description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="regular expression on case names (default: every non-heavy CUDA case)")
    ap.add_argument("--pipes", action="store_true", help="also print per-pipe counts per warp (predicted/measured)")
    a = ap.parse_args(argv)
    rows = compare(a.cases, progress=lambda n: print(f"  traced {n}", file=sys.stderr))
    print(format_rows(rows, a.pipes))
    s = summary(rows)
    i, r, t = s["inst_pct"], s["regs"], s["threads_per_inst"]
    print(f"\n{s['n']} cases: inst_executed MAPE {i['mean_abs']:.1f}% (max {i['max_abs']:.1f}%, {i['worst']}); "
          f"registers mean |err| {r['mean_abs']:.1f} (max {r['max_abs']:.0f}, {r['worst']}); "
          f"threads/inst max |err| {t['max_abs']:.2f} ({t['worst']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
