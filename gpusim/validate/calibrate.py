"""``gpusim validate calibrate``: fit the H100 preset's microarchitectural parameters to the microbenchmarks.

Each fitted parameter comes from one committed measurement (``records/micro*.json``), and the fit is made by
simulating the *same kernel* the GPU ran (``kernels/pointer_chase.py`` ...), so whatever the front end and
engine add around a memory access (numba's address arithmetic, the loop) is accounted for:

* ``sm.shared_latency_cycles``, ``l1.hit_latency_cycles``, ``l2.near/far_latency_cycles``,
  ``dram.latency_cycles``: pointer chase, cycles per hop = (cycles(h2) - cycles(h1)) / (h2 - h1) under ncu;
  the simulated per-hop cycles are brought to the measured ones (two fixed-point rounds).
* ``chip.launch_overhead_cycles``: the empty kernel's ``gpc__cycles_elapsed.max`` minus what the engine adds.
* ``dram.efficiency``: the best streaming copy (torch ``copy_``: bytes read + written per second) over the
  peak bandwidth -- the fraction of the bus a long stream keeps busy.
* ``l2.fetch_bytes``: DRAM bytes per element of the 128 B and 256 B strided gathers.

``--write`` stores the values (with their source) in ``gpusim/presets/h100.toml``; without it the fit is
only printed.  CALIBRATION.md explains each value.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..config import PRESET_DIR, GPUConfig, load_gpu
from . import records

# (micro name in the records, footprint bytes, stride, hop counts simulated)
CHASES = {
    "shared": ("shared", 16 * 1024, 4, (200, 600)),
    "l1": ("l1", 16 * 1024, 128, (400, 800)),
    "l2": ("l2", 4 * 1024 * 1024, 128, (32800, 33400)),
    "dram": ("dram", 256 * 1024 * 1024, 128, (300, 900)),
}
FAR_MINUS_NEAR = 180   # cycles: L2 far - near, from the pointer-chase ranges in DESIGN.md (260-300 vs 420-480)


def _sim_chase(gpu: GPUConfig, level: str, footprint: int, stride: int, hops: int) -> float:
    from ..api import simulate_launch
    from .suite import KERNELS_DIR, load_kernel_module
    mod = load_kernel_module(KERNELS_DIR / "pointer_chase.py")
    launch = mod.launch(level=level, hops=hops, footprint=footprint, stride=stride)
    return sum(r.cycles for r in simulate_launch(launch, gpu, exact=True))


def sim_per_hop(gpu: GPUConfig, level: str) -> float:
    name, fp, stride, (h1, h2) = CHASES[level]
    c1 = _sim_chase(gpu, "shared" if level == "shared" else "global", fp, stride, h1)
    c2 = _sim_chase(gpu, "shared" if level == "shared" else "global", fp, stride, h2)
    return (c2 - c1) / (h2 - h1)


def measured_values() -> dict[str, float]:
    d = records._load("micro_ncu.json")["derived"]
    t = records._load("micro.json")["derived"]
    empty = [c for n, c in records._load("micro_ncu.json")["cases"].items() if n.startswith("launch_empty")]
    out = {f"chase_{k}": v["cycles_per_hop"] for k, v in d["chase"].items()}
    out["copy_GBps"] = max(t["stream_GB_per_s"].values())
    g = d["granularity_dram_bytes_per_element"]
    out["fetch_bytes"] = min(g["granularity_128B"], g["granularity_256B"])
    cyc = [k["metrics"]["gpc__cycles_elapsed.max"] for c in empty for k in c["kernels"]]
    out["empty_kernel_cycles"] = min(cyc)
    return out


def fit(gpu: GPUConfig | None = None, rounds: int = 3, log=print) -> dict[tuple[str, str], tuple[float, str]]:
    """Return {(section, param): (value, source)} fitted to the records."""
    gpu = gpu or load_gpu("h100")
    meas = measured_values()
    fitted: dict[tuple[str, str], tuple[float, str]] = {}
    eff = meas["copy_GBps"] / gpu.dram.peak_bandwidth_gbps
    fitted[("dram", "efficiency")] = (round(eff, 3), f"calibrated: best streaming copy {meas['copy_GBps']:.0f} GB/s "
                                      f"(records/micro.json stream_copy_*) / peak")
    fb = 32 * round(meas["fetch_bytes"] / 32)
    fitted[("l2", "fetch_bytes")] = (fb, f"calibrated: {meas['fetch_bytes']:.1f} DRAM bytes per 4-byte gather at "
                                         f"128/256 B stride (records/micro_ncu.json granularity_*)")
    gpu = gpu.with_overrides(dram={"efficiency": fitted[("dram", "efficiency")][0]}, l2={"fetch_bytes": fb})
    targets = {"shared": ("sm", "shared_latency_cycles"), "l1": ("l1", "hit_latency_cycles"),
               "l2": ("l2", "near_latency_cycles"), "dram": ("dram", "latency_cycles")}
    for _ in range(rounds):
        for level, (sec, par) in targets.items():
            want = meas[f"chase_{level}"]
            got = sim_per_hop(gpu, level)
            cur = getattr(getattr(gpu, sec), par)
            if level == "l2" and gpu.l2.far_copies:
                # the chase's later passes find every line near (the partition kept copies of its far lines)
                new = max(gpu.l1.hit_latency_cycles + 1, round(cur + want - got))
                far = new + FAR_MINUS_NEAR
                gpu = gpu.with_overrides(l2={"near_latency_cycles": new, "far_latency_cycles": far})
                src = (f"calibrated: repeated pointer chase over 4 MB (records/micro_ncu.json chase_l2: {want:.1f} "
                       f"cycles/hop, every line near after the first pass); far = near + {FAR_MINUS_NEAR}")
                fitted[("l2", "near_latency_cycles")] = (new, src)
                fitted[("l2", "far_latency_cycles")] = (far, src)
            elif level == "l2":
                # the chasing SM finds half its lines in the near partition and half in the far one: move the
                # mean = (gpu.l2.near_latency_cycles + gpu.l2.far_latency_cycles) / 2 + want - got
                new, far = round(mean - FAR_MINUS_NEAR / 2), round(mean + FAR_MINUS_NEAR / 2)
                gpu = gpu.with_overrides(l2={"near_latency_cycles": new, "far_latency_cycles": far})
                src = (f"calibrated: pointer chase over 4 MB (records/micro_ncu.json chase_l2: {want:.1f} cycles/hop "
                       f"= mean of near and far); far = near + {FAR_MINUS_NEAR}")
                fitted[("l2", "near_latency_cycles")] = (new, src)
                fitted[("l2", "far_latency_cycles")] = (far, src)
            else:
                new = max(1, round(cur + want - got))
                gpu = gpu.with_overrides(**{sec: {par: new}})
                fitted[(sec, par)] = (new, f"calibrated: pointer chase (records/micro_ncu.json chase_{level}: "
                                           f"{want:.1f} cycles/hop)")
            log(f"  {level:<7} measured {want:7.1f} cycles/hop, simulated {got:7.1f} -> {sec}.{par} = {new}")
    # launch overhead: what the engine adds to an empty kernel besides the overhead itself
    from ..api import simulate
    from ..cuda import jit

    @jit
    def empty():
        pass
    base = simulate(empty, (1,), (32,), gpu=gpu).cycles - gpu.chip.launch_overhead_cycles
    lo = max(0, round(meas["empty_kernel_cycles"] - base))
    fitted[("chip", "launch_overhead_cycles")] = (lo, f"calibrated: empty kernel {meas['empty_kernel_cycles']:.0f} "
                                                      f"cycles (records/micro_ncu.json launch_empty_*) minus drain")
    return fitted


def _set_param(text: str, section: str, key: str, value, source: str) -> str:
    """Replace ``key = ...`` inside ``[section]`` of a preset's TOML text, keeping everything else."""
    m = re.search(rf"^\[{re.escape(section)}\]\s*$", text, re.M)
    if not m:
        raise ValueError(f"no [{section}] in preset")
    end = re.search(r"^\[", text[m.end():], re.M)
    stop = m.end() + (end.start() if end else len(text) - m.end())
    body = text[m.end():stop]
    val = repr(value) if not isinstance(value, bool) else str(value).lower()
    line = f'{key} = {{ value = {val}, source = "{source}" }}'
    pat = re.compile(rf"^{re.escape(key)}\s*=.*$", re.M)
    body = pat.sub(line, body, count=1) if pat.search(body) else body.rstrip("\n") + "\n" + line + "\n\n"
    return text[:m.end()] + body + text[stop:]


def write_preset(fitted: dict, path: Path | None = None) -> None:
    path = path or PRESET_DIR / "h100.toml"
    text = path.read_text()
    for (sec, key), (val, src) in fitted.items():
        text = _set_param(text, sec, key, val, src)
    path.write_text(text)


def calibrate(write: bool = False) -> int:
    print("fitting the h100 preset to records/micro*.json ...")
    fitted = fit()
    cur = load_gpu("h100")
    for (sec, key), (val, src) in fitted.items():
        print(f"{sec + '.' + key:<32} {getattr(getattr(cur, sec), key)!s:>8} -> {val!s:<8} {src}")
    if write:
        write_preset(fitted)
        print("written to gpusim/presets/h100.toml")
    return 0
