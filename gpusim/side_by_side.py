"""One kernel file simulated on several GPU presets, side by side (``gpusim run FILE --gpu h100,h200,a100``): cycles,
time (us), occupancy, hit rates, DRAM traffic and the top warp states in one table, a column per preset."""
from __future__ import annotations

from .config import GPUConfig, load_gpu
from .errors import UsageError
from .sweeper import _forget_tuning

# ---- one kernel file on several GPUs, side by side (gpusim run FILE --gpu h100,h200,a100) ------------------

#: rows of the side-by-side table: (report key, label); then the top warp states
SIDE_BY_SIDE = [("cycles", "cycles"), ("time_us", "time (us)"), ("ipc", "IPC"), ("waves", "waves"),
                ("occupancy_theoretical_pct", "occupancy theoretical %"),
                ("occupancy_achieved_pct", "occupancy achieved %"), ("occupancy_limiter", "occupancy limiter"),
                ("ctas_per_sm", "CTAs per SM"), ("inst_executed", "warp instructions"),
                ("l1_hit_rate_pct", "L1 hit %"), ("l2_hit_rate_pct", "L2 hit %"),
                ("dram_bytes_read", "DRAM bytes read"), ("dram_bytes_write", "DRAM bytes written"),
                ("dram_bandwidth_gbps", "DRAM GB/s"), ("dram_bandwidth_pct_of_peak", "DRAM % of peak")]


def run_presets(file: str, params: dict, gpus: list[str]) -> list[tuple[GPUConfig, list, list]]:
    """Simulate a kernel file's launch(**params) on each GPU (a fresh launch() each): [(config, reports,
    output checks)]."""
    from .api import check_outputs, simulate_launch
    from .kernelfile import _UserCode, load_kernel_file, make_launch
    cfgs = [load_gpu(g) for g in gpus]
    mod = load_kernel_file(file)
    out = []
    for cfg in cfgs:
        _forget_tuning(mod)
        launch = make_launch(mod, params, file)
        with _UserCode(file):
            reports = simulate_launch(launch, cfg)
            checks = check_outputs(launch) if "reference" in launch else []
        out.append((cfg, reports, checks))
        del launch                     # its arrays freed before the next preset's are placed (trace.first_fit)
    return out


def side_by_side(results: list[tuple[GPUConfig, list, list]], names: list[str]) -> str:
    """One column per GPU: the time, occupancy, cache and DRAM counters of each kernel, then its top warp
    states (cycles per warp), then the total over the kernels when there are several."""
    from .metrics import _fmt
    n_k = len(results[0][1])
    lines = []
    width = max(len(n) for n in names) + 2
    col_w = max(14, width)

    def row(label, vals):
        lines.append(f"  {label:<32}" + "".join(f"{v:>{col_w}}" for v in vals))
    for k in range(n_k):
        reps = [res[1][k] for res in results]
        lines.append(f"kernel {reps[0].kernel}  grid {tuple(reps[0].context.get('grid', ()))} "
                     f"block {tuple(reps[0].context.get('block', ()))}")
        row("", names)
        for key, label in SIDE_BY_SIDE:
            if all(r.metrics.get(key) is None for r in reps):
                continue
            row(label, [_fmt(r.get(key)) if r.get(key) is not None else "-" for r in reps])
        totals: dict[str, float] = {}
        for r in reps:
            for key, m in r.metrics.items():
                if key.startswith("stall_") and key != "stall_selected":
                    totals[key] = totals.get(key, 0.0) + float(m.value)
        top = [k2 for k2, v in sorted(totals.items(), key=lambda t: -t[1]) if v > 0][:4]
        if top:
            lines.append("  warp states (cycles per warp)")
        for key in top:
            row(f"  {key[6:]}", [_fmt(r.get(key, 0.0)) for r in reps])
        lines.append("")
    if n_k > 1:
        row(f"all {n_k} kernels: cycles", [_fmt(sum(float(r.cycles) for r in res[1])) for res in results])
        row("all kernels: time (us)", [_fmt(sum(float(r.cycles) for r in res[1]) / res[0].chip.sm_clock_mhz)
                                       for res in results])
        lines.append("")
    for (cfg, _, checks), name in zip(results, names):
        for key, err, ok in checks:
            lines.append(f"{name}: output {key}: {'matches' if ok else 'DOES NOT MATCH'} the numpy reference "
                         f"(max abs error {err:.3g})")
    notes = []
    for (cfg, reps, _), name in zip(results, names):
        for r in reps:
            for n in r.notes:
                if n not in notes and not n.startswith("autotune rank"):
                    notes.append(f"{name}: {n}")
    if notes:
        lines.append("\nnotes:")
        lines.extend(f"  {n}" for n in notes)
    return "\n".join(lines).rstrip()


def cmd_run_presets(a) -> int:
    """``gpusim run FILE --gpu h100,h200,a100``: the presets side by side (``--json``: every report)."""
    from .kernelfile import _parse_params, launch_params, load_kernel_file
    names = [g.strip() for g in a.gpu.split(",")]
    if any(not n for n in names):
        raise UsageError(f"--gpu {a.gpu}: an empty name in the list (give e.g. --gpu h100,h200,a100)")
    dup = [n for i, n in enumerate(names) if n in names[:i]]
    if dup:
        raise UsageError(f"--gpu {a.gpu}: {dup[0]} is given twice")
    if a.html or a.trace:
        raise UsageError(f"--{'html' if a.html else 'trace'} shows one GPU: give one preset with --gpu (or run "
                         f"once per preset)")
    for n in names:
        load_gpu(n)                                    # a bad name fails before anything runs
    raw = _parse_params(a.param)
    params = launch_params(load_kernel_file(a.file).launch, raw, a.file)
    results = run_presets(a.file, params, names)
    ok = all(c[2] for _, _, checks in results for c in checks)
    if a.json:
        payload = {"file": a.file, "outputs_match_reference": ok,
                   "gpus": {n: {"reports": [r.to_dict() for r in reps],
                                "checks": [{"output": str(k), "max_abs_error": e, "ok": o} for k, e, o in checks]}
                            for n, (_, reps, checks) in zip(names, results)}}
        import json
        print(json.dumps(payload, indent=1, default=str))
    else:
        print(side_by_side(results, names))
    return 0 if ok else 1
