"""Built-in estimate vs the real compiler, over the validation suite's kernels, on a host without a GPU.

    python -m gpusim.validate.compiler_compare [--cases REGEX] [--all] [--json FILE]

For every step of every selected case, the launch is traced once with the real compiler in the loop
(``gpusim.compilers``, mode ``real``): the trace's meta holds both gpusim's built-in register / shared-memory
estimate and what Triton (or numba-cuda + ptxas) allocated.  Printed per kernel and summarized:

* registers per thread: the estimate against ptxas' count with the 16-register floor the hardware allocates
  (what occupancy uses, and what Nsight's ``launch__registers_per_thread`` reports); MAPE and the worst case;
* shared memory per CTA (bytes), estimate against compiled;
* instructions: the static SASS count (NOP padding excluded) against the trace's *distinct instruction groups*
  (each distinct (source line, SASS label) the cost tables recorded, counted once with its instructions) --
  both static, but loops the compiler unrolls multiply the SASS, and repeated identical groups on one line
  merge in the trace, so this relates the two only roughly; per pipe as well.

Cases of the same kernel whose specialization compiles identically share one compile (the cache), not one trace.
``--all`` includes the cases tagged heavy (slow to trace).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

from .. import compilers
from ..api import launch_steps, trace_kernel
from ..config import load_gpu
from . import suite


def _distinct_groups(tr) -> tuple[int, dict]:
    seen: dict = {}
    for t in tr.tables:
        for op in t.ops:
            key = (op.line, op.label or op.kind.name, op.pipe.key)
            if key not in seen:
                seen[key] = op.n_inst
    per_pipe: dict = {}
    for (_, _, pipe), n in seen.items():
        per_pipe[pipe] = per_pipe.get(pipe, 0) + n
    return sum(seen.values()), per_pipe


def compare_case(case, gpu) -> list[dict]:
    launch = suite.load_case(case)
    rows = []
    for i, st in enumerate(launch_steps(launch)):
        t0 = time.perf_counter()
        with compilers.use("real"):
            if "block" in st:
                tr = trace_kernel(st["kernel"], st["grid"], st["block"], *st["args"], gpu=gpu,
                                  shared_bytes=st.get("shared_bytes", 0))
            else:
                tr = trace_kernel(st["kernel"], st["grid"], *st["args"], gpu=gpu, **(st.get("meta") or {}))
        c = tr.meta["compiler"]
        regs = tr.meta["registers"]
        est = int(regs["estimate"])
        est_alloc = min(255, max(16, est))
        if tr.frontend == "triton":
            smem_est = int(tr.meta["shared_memory"].get("estimate", tr.shared_bytes_per_cta))
        else:
            smem_est = int(tr.meta.get("shared_static_bytes_estimate", tr.meta["shared_static_bytes"])) + \
                int(tr.meta.get("shared_dynamic_bytes", 0))
        groups, groups_pipe = _distinct_groups(tr)
        rows.append({
            "case": case.name, "step": i, "kernel": tr.name, "frontend": tr.frontend, "compiler": c["label"],
            "regs_builtin": est_alloc, "regs_builtin_raw": est, "regs_ptxas": int(c["registers"]),
            "regs_real": max(16, int(c["registers"])), "smem_builtin": smem_est,
            "smem_real": int(tr.shared_bytes_per_cta), "spill_store_bytes": int(c.get("spill_store_bytes", 0)),
            "sass_static": int(c.get("sass_instructions", 0)), "sass_per_pipe": c.get("sass_per_pipe", {}),
            "trace_groups": groups, "trace_groups_per_pipe": groups_pipe, "regs_basis": regs.get("basis", {}),
            "wall_s": round(time.perf_counter() - t0, 2)})
    return rows


def _pct(a, b) -> float:
    return 100.0 * (a - b) / b if b else (0.0 if a == b else math.inf)


def distinct(rows: list[dict]) -> list[dict]:
    """One row per distinct compiled kernel (the same kernel, specialization and estimate over several sizes or
    dynamic shared memory sizes: vector_add at 8 sizes is one), so that a sweep does not weigh more than a kernel
    compiled once."""
    seen, out = set(), []
    for r in rows:
        k = (r["kernel"], r["frontend"], r["regs_builtin"], r["regs_ptxas"], r["sass_static"])
        if k not in seen:
            seen.add(k)
            out.append(r)
    return out


def summarize(rows: list[dict]) -> dict:
    out = {}
    for fe in ("cuda", "triton", "all", "distinct cuda", "distinct triton", "distinct all"):
        base = distinct(rows) if fe.startswith("distinct") else rows
        f = fe.split()[-1]
        sel = [r for r in base if f == "all" or r["frontend"] == f]
        if not sel:
            continue
        errs = [abs(_pct(r["regs_builtin"], r["regs_real"])) for r in sel]
        worst = max(sel, key=lambda r: abs(_pct(r["regs_builtin"], r["regs_real"])))
        smem_exact = sum(1 for r in sel if r["smem_builtin"] == r["smem_real"])
        sass = sum(r["sass_static"] for r in sel)
        groups = sum(r["trace_groups"] for r in sel)
        out[fe] = {"kernels": len(sel), "regs_mape_pct": round(sum(errs) / len(errs), 1),
                   "regs_mae": round(sum(abs(r["regs_builtin"] - r["regs_real"]) for r in sel) / len(sel), 1),
                   "regs_exact": sum(1 for r in sel if r["regs_builtin"] == r["regs_real"]),
                   "regs_worst": f"{worst['case']}:{worst['kernel']} {worst['regs_builtin']} vs {worst['regs_real']}",
                   "smem_exact": smem_exact, "sass_static_total": sass, "trace_groups_total": groups}
    return out


def format_rows(rows: list[dict]) -> str:
    head = (f"{'case':<30} {'kernel':<20} {'regs est':>8} {'real':>5} {'err':>6}  {'smem est':>9} {'real':>8}  "
            f"{'SASS':>5} {'groups':>6}")
    lines = [head]
    for r in rows:
        lines.append(f"{r['case']:<30} {r['kernel'][:20]:<20} {r['regs_builtin']:>8} {r['regs_real']:>5} "
                     f"{_pct(r['regs_builtin'], r['regs_real']):>+5.0f}%  {r['smem_builtin']:>9} {r['smem_real']:>8}  "
                     f"{r['sass_static']:>5} {r['trace_groups']:>6}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpusim.validate.compiler_compare", description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="regex of case names")
    ap.add_argument("--all", action="store_true", help="include the cases tagged heavy")
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--json", metavar="FILE", help="write the rows and the summary as JSON")
    a = ap.parse_args(argv)
    gpu = load_gpu(a.gpu)
    cases = [c for c in suite.select(a.cases) if a.all or "heavy" not in c.tags]
    rows, failed = [], []
    for c in cases:
        try:
            rows.extend(compare_case(c, gpu))
        except Exception as e:                                 # noqa: BLE001 - report and go on with the others
            failed.append((c.name, f"{type(e).__name__}: {e}"))
            print(f"{c.name}: {type(e).__name__}: {' '.join(str(e).split())[:300]}", file=sys.stderr)
            continue
        print(format_rows(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(format_rows(rows))
    summ = summarize(rows)
    print()
    for fe, s in summ.items():
        print(f"{fe:<15} {s['kernels']:>3} kernels: registers MAPE {s['regs_mape_pct']:.1f} % (mean abs "
              f"{s['regs_mae']:.1f}, exact {s['regs_exact']}), worst {s['regs_worst']}; shared memory exact "
              f"{s['smem_exact']}/{s['kernels']}; static SASS {s['sass_static_total']} vs trace groups "
              f"{s['trace_groups_total']}")
    if failed:
        print(f"\n{len(failed)} case(s) failed: " + ", ".join(n for n, _ in failed))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "summary": summ, "failed": failed}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
