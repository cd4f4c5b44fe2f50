"""Tuning: every candidate configuration of a kernel file simulated and ranked by simulated time.

    gpusim tune kernels/my_autotuned.py [-p M=1024]            # a kernel decorated with @triton.autotune
    gpusim tune kernels/tl_matmul.py --configs tiles.toml      # any kernel file: candidate launch() parameters

An autotuned kernel (``@triton.autotune(configs=[...], key=[...])``) is launched as the file's ``launch()``
describes; the autotuner (``triton/_autotune.py``) simulates every config (after ``prune_configs_by``) for the
launch's key values and keeps the fastest, as Triton times them on the GPU.  Its ranking is read back from the
launch's trace.  With ``--configs FILE`` (TOML: ``[[config]]`` tables of launch() parameters, e.g. BM, BN, BK,
num_warps, num_stages), each config is the file's ``launch(**params, **config)``, simulated in full (in a pool
of ``--jobs`` processes) and ranked.  A config that cannot run (out of resources: shared memory over the limit,
too many threads) is listed as such, last.

``ranking(...)`` returns the rows as data (rank, config, params, cycles, us, vs_best, chosen, error): the hook for
comparing tune picks with H100 records (``gpusim.validate``).
"""
from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import load_gpu
from .errors import UsageError


@dataclass
class TuneResult:
    """The ranking of one tuning: rows fastest first (``kernel`` names the autotuned kernel, or the file)."""

    file: str
    gpu: str
    mode: str                       # "autotune" (the kernel's own configs) | "configs" (--configs FILE)
    rows: list[dict[str, Any]]
    key: str = ""                   # autotune: the tuning key
    kernel: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def chosen(self) -> dict | None:
        return next((r for r in self.rows if r["chosen"]), None)

    def to_dict(self) -> dict:
        return {"file": self.file, "gpu": self.gpu, "mode": self.mode, "kernel": self.kernel, "key": self.key,
                "rows": self.rows, "notes": self.notes}

    def __str__(self) -> str:
        head = (f"{self.kernel} on {self.gpu}: {len(self.rows)} configs"
                + (f" for key {self.key}" if self.key else "") + ", ranked by simulated time")
        w = max([len(r["config"]) for r in self.rows] + [6])
        lines = [head, f"{'rank':>4}  {'config':<{w}}  {'cycles':>12}  {'us':>10}  {'vs best':>8}"]
        for r in self.rows:
            if r["cycles"] is None:
                lines.append(f"{r['rank']:>4}  {r['config']:<{w}}  {'-':>12}  {'-':>10}  {'-':>8}  failed: "
                             f"{r['error']}")
            else:
                lines.append(f"{r['rank']:>4}  {r['config']:<{w}}  {r['cycles']:>12,.0f}  {r['us']:>10,.2f}  "
                             f"{r['vs_best']:>7.2f}x" + ("  <- chosen" if r["chosen"] else ""))
        c = self.chosen
        if c is not None:
            lines.append(f"chosen: {c['config']} ({c['us']:,.2f} us)")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _configs_file(path: str) -> list[tuple[dict, str]]:
    """[(params, where)] of a configs TOML file: ``[[config]]`` tables (or ``configs = [{...}, ...]``)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--configs {path}: {'no such file' if not p.exists() else 'not a file'}")
    try:
        with open(p, "rb") as f:
            raw = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    unknown = [k for k in raw if k not in ("config", "configs")]
    items = raw.get("config", raw.get("configs"))
    if unknown or not isinstance(items, list) or not items or not all(isinstance(c, dict) for c in items):
        raise UsageError(f"{path}: a configs file is a list of launch() parameter sets: [[config]] tables "
                         f"(e.g. [[config]] BM = 128 / BN = 128 / num_warps = 8), one per candidate")
    headers = [i for i, ln in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if re.match(r"^\s*\[\[\s*configs?\s*\]\]", ln)]
    out = []
    for i, c in enumerate(items):
        line = headers[i] if i < len(headers) else 0
        where = f"{path}:{line}" if line else f"{path} (config {i + 1})"
        bad = [k for k, v in c.items() if isinstance(v, (dict, list))]
        if bad:
            raise UsageError(f"{where}: {bad[0]} must be one value (a configs file lists candidates, not a "
                             f"product; gpusim sweep expands products)")
        out.append((c, where))
    return out


def _describe(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _autotuned(launch: dict) -> list[tuple[int, Any]]:
    from .api import launch_steps
    from .triton._autotune import tuner_of
    return [(i, st["kernel"]) for i, st in enumerate(launch_steps(launch)) if tuner_of(st["kernel"]) is not None]


def tune(file: str, params: dict | None = None, gpu: str = "h100", configs: str | None = None,
         jobs: int | None = 1) -> list[TuneResult]:
    """Rank the configs of a kernel file (see the module docstring): one TuneResult per autotuned kernel the
    launch runs, or one for ``configs`` (a TOML file).  ``params``: launch() parameters (typed values)."""
    from .api import launch_steps, simulate_launch
    from .kernelfile import check_params, load_kernel_file, make_launch
    from .triton._autotune import forget
    cfg = load_gpu(gpu)
    mod = load_kernel_file(file)
    line = getattr(getattr(mod.launch, "__code__", None), "co_firstlineno", 0)
    params = check_params(mod.launch, dict(params or {}), lambda k: f"{file}:{line}" if line else file)
    if configs is not None:
        return [_tune_configs(file, mod, params, cfg, gpu, configs, jobs)]
    launch = make_launch(mod, params, file)
    tuned = _autotuned(launch)
    if not tuned:
        names = ", ".join(sorted({getattr(getattr(s["kernel"], "fn", s["kernel"]), "__name__", "?")
                                  for s in launch_steps(launch)}))
        raise UsageError(f"{file}: kernel {names} is not autotuned (@triton.autotune(configs=[...], key=[...])); "
                         f"give --configs CONFIGS.toml (a list of launch() parameter sets) to rank candidates")
    for _, k in tuned:
        forget(k)                      # every config simulated afresh for this launch's key
    from .kernelfile import _UserCode
    with _UserCode(file):
        reports = simulate_launch(launch, cfg)
    out = []
    for i, k in tuned:
        info = (reports[i].trace.meta if reports[i].trace is not None else {}).get("autotune")
        name = reports[i].kernel
        if info is None:               # a single config: Triton does not benchmark it
            out.append(TuneResult(file, cfg.name, "autotune", [], kernel=name,
                                  notes=["the autotuner has one config: nothing to rank"]))
            continue
        rows = [{k2: v for k2, v in r.items() if k2 != "kwargs"} | {"params": r["kwargs"]} for r in info["ranking"]]
        out.append(TuneResult(file, cfg.name, "autotune", rows, key=info["key"], kernel=name))
    return out


def _tune_configs(file, mod, params, cfg, gpu, configs_path, jobs) -> TuneResult:
    from . import sweeper
    from .kernelfile import check_params
    items = _configs_file(configs_path)
    for c, where in items:
        clash = [k for k in c if k in params]
        if clash:
            raise UsageError(f"{where}: {clash[0]} is given both with -p and in the config")
        check_params(mod.launch, c, lambda k, w=where: w)
    tasks = [{"index": i, "values": {}, "kernel": os.path.abspath(file), "gpu": gpu, "overrides": {},
              "params": {**params, **c}, "check": False, "source": None} for i, (c, _) in enumerate(items)]
    rows = {r["point"]: r for r in sweeper._local(tasks, jobs or (os.cpu_count() or 1))}
    timed = [rows[i]["cycles"] for i in rows if rows[i]["status"] != "error"]
    best = min(timed) if timed else None
    order = sorted(rows, key=lambda i: (rows[i]["status"] == "error", rows[i]["cycles"] or 0, i))
    out = []
    for rank, i in enumerate(order, 1):
        r = rows[i]
        ok = r["status"] != "error"
        out.append({"rank": rank, "config": _describe(items[i][0]), "params": dict(items[i][0]),
                    "cycles": r["cycles"] if ok else None, "us": r["us"] if ok else None,
                    "vs_best": r["cycles"] / best if ok and best else None,
                    "chosen": ok and rank == 1, "error": r["error"] if not ok else None})
    return TuneResult(file, cfg.name, "configs", out, kernel=Path(file).name)


def ranking(file: str, params: dict | None = None, gpu: str = "h100", configs: str | None = None) -> list[dict]:
    """The ranking rows of ``tune`` (every autotuned kernel's, in launch order) as plain dicts, for comparison
    with records: rank, config, params, cycles, us, vs_best, chosen, error (plus kernel and key)."""
    return [{**r, "kernel": t.kernel, "key": t.key} for t in tune(file, params, gpu, configs) for r in t.rows]


def cmd_tune(a) -> int:
    from .kernelfile import _parse_params, launch_params, load_kernel_file
    raw = _parse_params(a.param)
    params = launch_params(load_kernel_file(a.file).launch, raw, a.file) if raw else {}
    results = tune(a.file, params, a.gpu, a.configs, a.jobs)
    if a.json:
        print(json.dumps([r.to_dict() for r in results], indent=1, default=str))
    else:
        print("\n\n".join(str(r) for r in results))
    return 0


def add_parser(sub) -> None:
    t = sub.add_parser("tune", help="simulate every config of an autotuned kernel (or of --configs) and rank them")
    t.add_argument("file")
    t.add_argument("-p", "--param", action="append", default=[], help="launch() parameter, key=value")
    t.add_argument("--gpu", default="h100", help="preset name (gpusim gpus) or a .toml config file")
    t.add_argument("--configs", metavar="TOML", help="candidate launch() parameter sets ([[config]] tables) for a "
                                                     "kernel that is not autotuned")
    t.add_argument("--jobs", "-j", type=int, default=None, help="worker processes for --configs (default: all cores)")
    t.add_argument("--json", action="store_true", help="print the rankings as JSON")
    t.set_defaults(fn=cmd_tune)
