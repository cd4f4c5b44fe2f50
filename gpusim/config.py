"""The GPU as data: a frozen configuration with the source of every number.

A preset is a TOML file in ``gpusim/presets/``.  Every parameter is written either as a plain value or as
``{ value = ..., source = "..." }``; the loader keeps the sources so a report can say where a number came
from (whitepaper, microbenchmark, "calibrated on H100 by gpusim validate calibrate", or "assumed").  A user
file may say ``inherit = "h100"`` and override any subset of parameters.

Units live in the names: ``*_cycles`` are SM clock cycles, ``*_bytes`` bytes, ``*_mhz`` megahertz,
``*_ns`` nanoseconds, ``*_per_clk`` per SM clock.

Each parameter's schema sits on its field in ``chip_specs.py``: ``P(unit, lo, hi, choices=..., pow2=..., ...)`` (its
type is the annotation).  ``load_gpu`` checks every value against it, then the rules between parameters (``_check``), and
raises one ConfigError naming file:line, key, value, allowed range and unit; unknown sections and keys get a
did-you-mean.  ``schema()`` lists them all (``gpusim gpus -v`` shows the units).
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import tomllib
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError  # noqa: F401  (re-exported: gpusim.config.ConfigError)

# the sections' declarations (re-exported: gpusim.config.ChipSpec, gpusim.config.P, ...)
from .chip_specs import (MMA_TYPES, PIPES, ChipSpec, DRAMSpec, L1Spec, L2Spec, P, SMSpec,  # noqa: F401
                         TensorSpec)

PRESET_DIR = Path(__file__).with_name("presets")


@dataclass(frozen=True)
class GPUConfig:
    """A whole GPU.  ``sources`` maps "section.param" to where its value came from."""

    chip: ChipSpec
    sm: SMSpec
    l1: L1Spec
    l2: L2Spec
    dram: DRAMSpec
    tensor: TensorSpec
    preset: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    # choices the loader made for the user (a parameter a user config left out took gpusim's default);
    # every report simulated on this config carries them in Report.notes
    notes: tuple[str, ...] = field(default=(), compare=False, hash=False)

    # ---- derived quantities -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.chip.name

    def l2_stream_bytes(self) -> float:
        """Bytes of distinct lines a streaming footprint (each line read or written by one SM) keeps in the L2: its
        share of the size, less a far copy for every line homed in another partition than its reader's (partitioned
        with far copies: (partitions - 1) / partitions of the lines, each one line more)."""
        l2 = self.l2
        n = l2.size_bytes * l2.capacity_fraction
        if l2.partitioned and l2.far_copies and l2.partitions > 1:
            n /= 2 - 1 / l2.partitions
        return n

    def dram_bytes_per_cycle(self) -> float:
        """Sustained DRAM bandwidth in bytes per SM clock."""
        return self.dram.peak_bandwidth_gbps * 1e9 * self.dram.efficiency / (self.chip.sm_clock_mhz * 1e6)

    def at_sm_clock(self, mhz: float) -> "GPUConfig":
        """This GPU with its SMs at ``mhz``: the memory side (L2, DRAM) keeps its own clocks, so its latencies in
        SM cycles and its bandwidths in bytes per SM cycle scale by the ratio (DRAM bandwidth and row misses follow
        from ``sm_clock_mhz``); the SMs' own costs (L1, shared memory, pipes, launch) stay in SM cycles."""
        f = mhz / self.chip.sm_clock_mhz
        if f == 1.0:
            return self
        l2, dram = self.l2, self.dram
        return dataclasses.replace(
            self, chip=dataclasses.replace(self.chip, sm_clock_mhz=mhz),
            l2=dataclasses.replace(l2, near_latency_cycles=round(l2.near_latency_cycles * f),
                                   far_latency_cycles=round(l2.far_latency_cycles * f),
                                   atomic_latency_cycles=round(l2.atomic_latency_cycles * f),
                                   bytes_per_clk_per_slice=l2.bytes_per_clk_per_slice / f,
                                   write_bytes_per_clk_per_slice=l2.write_bytes_per_clk_per_slice / f),
            dram=dataclasses.replace(dram, latency_cycles=round(dram.latency_cycles * f)))

    def clocked_for(self, has_mma: bool) -> "GPUConfig":
        """The configuration a kernel runs at: ``chip.sm_clock_tensor_mhz`` when it issues MMA instructions (and
        the preset sets one), else this one."""
        t = self.chip.sm_clock_tensor_mhz
        return self.at_sm_clock(t) if has_mma and t > 0 else self

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / self.chip.sm_clock_mhz

    def peak_flops_per_clk(self, kind: str = "fp32") -> float:
        """Peak FLOP per clock of the whole chip: FMA pipes count 2 FLOP per lane."""
        if kind in self.tensor.flops_per_clk_per_sm:
            return self.tensor.flops_per_clk_per_sm[kind] * self.chip.sm_count
        return 2 * self.sm.pipe_lanes_per_clk[kind] * self.chip.sm_count

    def with_overrides(self, **sections: dict[str, Any]) -> "GPUConfig":
        """A copy with some parameters changed: ``cfg.with_overrides(l2={"size_bytes": 100 << 20})``.

        The new values are checked as a config file's are (type, range, cross-field rules): ConfigError."""
        where = "with_overrides()"
        problems: list[tuple[str, str, str]] = []
        S = schema()
        out = self
        for sec, changes in sections.items():
            if sec not in _SECTIONS:
                problems.append((sec, f"unknown section {sec!r}{_hint(sec, _SECTIONS)}; sections: "
                                      f"{', '.join(_SECTIONS)}", where))
                continue
            if not isinstance(changes, dict):
                problems.append((sec, f"{sec}: expected a dict of parameters, got {_show(changes)}", where))
                continue
            vals = {}
            for k, v in changes.items():
                key = f"{sec}.{k}"
                if key not in S:
                    problems.append((key, f"[{sec}] has unknown parameter {k!r}{_hint(k, _names(sec))}", where))
                    continue
                try:
                    vals[k] = check_value(S[key], v)
                except _Bad as b:
                    problems.append((key, str(b), where))
            if vals:
                out = dataclasses.replace(out, **{sec: dataclasses.replace(getattr(out, sec), **vals)})
        if problems:
            raise _config_error(problems)
        src = dict(out.sources)
        for sec, changes in sections.items():
            for k in changes:
                src[f"{sec}.{k}"] = "override"
        out = dataclasses.replace(out, sources=src)
        _check(out, lambda *keys: where)
        return out

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("sources")
        d.pop("notes")
        return d


_SECTIONS = {"chip": ChipSpec, "sm": SMSpec, "l1": L1Spec, "l2": L2Spec, "dram": DRAMSpec, "tensor": TensorSpec}
_TOP_KEYS = ("inherit", "preset")     # top-level keys of a config file besides its sections


@dataclass(frozen=True)
class Param:
    """One parameter's schema, read off its dataclass field (see ``P``)."""

    section: str
    name: str
    type: Any                  # the annotation: int, float, str, bool, tuple[int, int], tuple[int, ...], dict[str, int]
    unit: str
    range: tuple[float | None, float | None]
    choices: tuple | None = None
    pow2: bool = False
    multiple_of: int | None = None
    keys: tuple[str, ...] | None = None
    required: tuple[str, ...] | None = None
    why: str = ""
    has_default: bool = False

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def kind(self) -> str:
        """'int' | 'float' | 'str' | 'bool' | 'tuple' (fixed length) | 'list' (tuple[X, ...]) | 'dict'."""
        t = self.type
        if t in (int, float, str, bool):
            return t.__name__
        origin = typing.get_origin(t)
        if origin is dict:
            return "dict"
        if origin is tuple:
            return "list" if Ellipsis in typing.get_args(t) else "tuple"
        raise TypeError(f"{self.key}: no schema kind for type {t!r}")

    @property
    def elem(self) -> type:
        """The element type of a tuple/list/dict parameter (the type itself otherwise)."""
        args = typing.get_args(self.type)
        return args[-1] if self.kind == "dict" else args[0] if args else self.type

    def describe(self) -> str:
        """The allowed values in words: '1 to 1024 SMs', 'one of 'gto', 'lrr''."""
        if self.choices is not None:
            c = " or ".join(_show(x) for x in self.choices)
            return f"{c}{' ' + self.unit if self.unit not in ('text', 'flag') else ''}"
        lo, hi = self.range
        if lo is None and hi is None:
            return self.unit
        return f"{_num(lo)} to {_num(hi)} {self.unit}"


def schema() -> dict[str, Param]:
    """Every config parameter's schema, keyed "section.name"."""
    global _SCHEMA
    if _SCHEMA is None:
        out = {}
        for sec, cls in _SECTIONS.items():
            hints = typing.get_type_hints(cls)
            for f in fields(cls):
                md = f.metadata
                if "unit" not in md:
                    raise TypeError(f"{cls.__name__}.{f.name} has no schema: declare it with config.P(...)")
                has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
                out[f"{sec}.{f.name}"] = Param(sec, f.name, hints[f.name], md["unit"], md["range"], md["choices"],
                                               md["pow2"], md["multiple_of"], md["keys"], md["required"], md["why"],
                                               has_default)
        _SCHEMA = out
    return _SCHEMA


_SCHEMA: dict[str, Param] | None = None


class _Bad(Exception):
    """One parameter's value is wrong (the message names it)."""


def _num(x: Any) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)
    return f"{x:g}" if isinstance(x, float) else str(x)


def _show(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _hint(word: str, options) -> str:
    near = difflib.get_close_matches(str(word), list(options), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _names(sec: str) -> list[str]:
    return [f.name for f in fields(_SECTIONS[sec])]


_TYPE_WORDS = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false"}


def _scalar(p: Param, key: str, v: Any, t: type) -> Any:
    """Check one scalar against type ``t`` and the parameter's range/choices; returns it."""
    word = _TYPE_WORDS[t.__name__]
    unit = f" ({p.unit})" if p.unit not in ("text", "flag") else ""
    if t is bool:
        if not isinstance(v, bool):
            raise _Bad(f"{key}: expected {word}, got {_show(v)}")
        return v
    if t is str:
        if not isinstance(v, str):
            raise _Bad(f"{key}: expected {word}, got {_show(v)}")
        if not v.strip():
            raise _Bad(f"{key}: expected a non-empty string")
    elif t is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Bad(f"{key}: expected {word}{unit}, got {_show(v)}")
    elif t is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Bad(f"{key}: expected {word}{unit}, got {_show(v)}")
        if not math.isfinite(v):
            raise _Bad(f"{key}: expected a finite number{unit}, got {v}")
    why = f" ({p.why})" if p.why else ""
    if p.choices is not None:
        if v not in p.choices:
            near = _hint(v, [c for c in p.choices if isinstance(c, str)]) if isinstance(v, str) else ""
            raise _Bad(f"{key} = {_show(v)} is not allowed{near}: must be {p.describe()}{why}")
        return v
    lo, hi = p.range
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise _Bad(f"{key} = {_show(v)} is out of range: allowed {p.describe()}{why}")
    if p.pow2 and (v <= 0 or int(v) & (int(v) - 1)):
        raise _Bad(f"{key} = {_show(v)} must be a power of two ({p.unit})")
    if p.multiple_of and v % p.multiple_of:
        raise _Bad(f"{key} = {_show(v)} must be a multiple of {p.multiple_of} {p.unit}{why}")
    return v


def check_value(p: Param, v: Any) -> Any:
    """Check a value against a parameter's schema; return it normalized (lists become tuples).  Raises _Bad."""
    kind, key = p.kind, p.key
    if kind in ("int", "float", "str", "bool"):
        return _scalar(p, key, v, p.type)
    ew = _TYPE_WORDS[p.elem.__name__].split(" ", 1)[1]
    if kind in ("tuple", "list"):
        n = len(typing.get_args(p.type))
        want = f"a list of {n} {ew}s" if kind == "tuple" else f"a list of {ew}s"
        if not isinstance(v, (list, tuple)) or (kind == "tuple" and len(v) != n) or (kind == "list" and not v):
            raise _Bad(f"{key}: expected {want} ({p.unit}), got {_show(v)}")
        return tuple(_scalar(p, f"{key}[{i}]", x, p.elem) for i, x in enumerate(v))
    # dict
    if not isinstance(v, dict):
        raise _Bad(f"{key}: expected a table of {ew}s ({p.unit}) keyed by {', '.join(p.keys or ())}, got {_show(v)}")
    for k in v:
        if p.keys is not None and k not in p.keys:
            raise _Bad(f"{key} has unknown key {k!r}{_hint(k, p.keys)}; keys: {', '.join(p.keys)}")
    missing = [k for k in (p.required or ()) if k not in v]
    if missing:
        raise _Bad(f"{key} lacks {', '.join(repr(m) for m in missing)} (it needs {', '.join(p.required)}; a table "
                   "given in a config that inherits replaces the inherited table whole)")
    return {k: _scalar(p, f"{key}.{k}", x, p.elem) for k, x in v.items()}


# ---- reading TOML files ---------------------------------------------------------------------------------

def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


_ALIASES = {"h100_sxm": "h100", "h100_sxm5": "h100", "a100_sxm": "a100", "3090": "rtx3090", "rtx_3090": "rtx3090"}


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it: {e.strerror or e}") from None


_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_\-]+)\s*\]")


def line_of(path: str, section: str | None, key: str | None = None) -> int:
    """The line of ``key`` in ``[section]`` of a TOML file (of the ``[section]`` header when key is None;
    of a top-level key when section is None); 0 when not found."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0
    cur = None
    pat = re.compile(r"^\s*[\"']?" + re.escape(key) + r"[\"']?\s*=") if key else None
    for i, ln in enumerate(text, 1):
        m = _HEADER.match(ln)
        if m:
            cur = m.group(1)
            if key is None and cur == section:
                return i
            continue
        if pat is not None and cur == section and pat.match(ln):
            return i
    return 0


def _at(path: str, section: str | None, key: str | None = None) -> str:
    """'path:line' of a key (just 'path' when the line is not found, or for non-files)."""
    if not path.endswith(".toml"):
        return path
    ln = line_of(path, section, key)
    return f"{path}:{ln}" if ln else path


def _config_error(problems: list[tuple[str, str, str]]) -> ConfigError:
    """One ConfigError (one line) from (key, message, location) problems."""
    msg = "; ".join(f"{loc}: {m}" if loc else m for _, m, loc in problems)
    return ConfigError(msg, key=problems[0][0], problems=[(k, m) for k, m, _ in problems])


def _check_file(raw: dict[str, Any], path: str) -> None:
    """The top level of one config file: sections, ``inherit``, ``preset`` -- nothing else."""
    problems = []
    all_params = {f.name: sec for sec, cls in _SECTIONS.items() for f in fields(cls)}
    for k, v in raw.items():
        if k in _TOP_KEYS:
            if not isinstance(v, str) or not v.strip():
                problems.append((k, f"{k} must be a string (a preset name or a .toml path), got {_show(v)}",
                                 _at(path, None, k)))
        elif k not in _SECTIONS:
            if isinstance(v, dict):
                problems.append((k, f"unknown section [{k}]{_hint(k, _SECTIONS)}; sections: {', '.join(_SECTIONS)}",
                                 _at(path, k)))
            elif k in all_params:
                problems.append((f"{all_params[k]}.{k}", f"{k} belongs in section [{all_params[k]}]",
                                 _at(path, None, k)))
            else:
                problems.append((k, f"unknown top-level key {k!r}{_hint(k, list(_TOP_KEYS) + list(_SECTIONS))}; "
                                    f"a config has [sections] ({', '.join(_SECTIONS)}) and optionally "
                                    'inherit = "h100"',
                                 _at(path, None, k)))
        elif not isinstance(v, dict):
            problems.append((k, f"{k} must be a section [{k}], got {_show(v)}", _at(path, None, k)))
    if problems:
        raise _config_error(problems)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for sec, vals in over.items():
        if sec in _TOP_KEYS:
            continue
        out.setdefault(sec, {}).update(vals)
    return out


def _resolve(name_or_path: str, base_dir: Path | None) -> tuple[Path, str]:
    """(file, preset name) for a preset name or a config file path (relative paths in ``inherit`` are tried
    next to the file that inherits first)."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path or "/" in name_or_path:
        tries = ([base_dir / p] if base_dir is not None and not p.is_absolute() else []) + [p]
        for t in tries:
            if t.is_file():
                return t, p.stem
        raise ConfigError(f"config file {name_or_path!r} does not exist" if not p.exists()
                          else f"{name_or_path!r} is not a file")
    key = name_or_path.strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    path = PRESET_DIR / f"{key}.toml"
    if not path.exists():
        raise ConfigError(f"unknown GPU preset {name_or_path!r}{_hint(key, preset_names() + list(_ALIASES))}; "
                          f"presets: {', '.join(preset_names())}; or give the path of a .toml config file")
    return path, key


def _raw(name_or_path: str, base_dir: Path | None = None, chain: tuple = ()
         ) -> tuple[dict[str, Any], str, str, dict[str, str]]:
    """(merged tables, preset name, file, where) for a preset name or a TOML file path; ``where`` maps
    "section.param" (and "section") to the file that set it."""
    path, stem = _resolve(name_or_path, base_dir)
    rp = path.resolve()
    if rp in chain:
        raise ConfigError(f"{path}: inherit makes a cycle: {' -> '.join(str(c) for c in chain + (rp,))}")
    if len(chain) >= 16:
        raise ConfigError(f"{path}: config inheritance is more than 16 levels deep")
    raw = _read(path)
    _check_file(raw, str(path))
    where = {}
    for sec, table in raw.items():
        if sec in _SECTIONS:
            where[sec] = str(path)
            for k in table:
                where[f"{sec}.{k}"] = str(path)
    name = raw.get("preset") or stem
    parent = raw.get("inherit")
    if parent:
        base, _, _, bwhere = _raw(str(parent), path.parent, chain + (rp,))
        bwhere.update(where)
        return _merge(base, raw), name, str(path), bwhere
    return raw, name, str(path), where


def load_gpu(name_or_path: "str | os.PathLike | GPUConfig" = "h100") -> GPUConfig:
    """Load a preset by name (``h100``, ``a100``, ``rtx3090``, ``h200``) or a TOML config file path.

    Every value is checked against the schema (type, range, unit; see ``P`` and ``schema()``) and the
    cross-field rules (``_check``); a problem raises ConfigError naming the file, line, key and allowed range."""
    if isinstance(name_or_path, GPUConfig):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise ConfigError(f"gpu must be a preset name, a .toml path or a GPUConfig, got {_show(name_or_path)}")
    name_or_path = os.fspath(name_or_path)
    raw, preset, origin, where = _raw(name_or_path)
    S = schema()
    sources: dict[str, str] = {}
    kwargs: dict[str, Any] = {}
    problems: list[tuple[str, str, str]] = []
    notes: list[str] = []
    for sec, cls in _SECTIONS.items():
        table = raw.get(sec)
        if table is None:
            problems.append((sec, f"missing section [{sec}]", origin))
            continue
        vals: dict[str, Any] = {}
        bad = False
        for k, v in table.items():
            key = f"{sec}.{k}"
            file = where.get(key, origin)
            loc = _at(file, sec, k)
            if key not in S:
                other = [s for s in _SECTIONS if s != sec and f"{s}.{k}" in S]
                hint = f" ({k} belongs in section [{other[0]}])" if other else _hint(k, _names(sec))
                problems.append((key, f"[{sec}] has unknown parameter {k!r}{hint}", loc))
                bad = True
                continue
            p = S[key]
            if isinstance(v, dict) and (p.kind != "dict" or "value" in v or "source" in v):
                extra = [x for x in v if x not in ("value", "source")]
                if extra or "value" not in v:
                    what = (f"unknown key {extra[0]!r}{_hint(extra[0], ('value', 'source'))}" if extra
                            else "no 'value'")
                    problems.append((key, f"{key}: {{ value = ..., source = \"...\" }} has {what}", loc))
                    bad = True
                    continue
                sources[key] = str(v.get("source", "unspecified"))
                v = v["value"]
            else:
                sources[key] = "user config" if not file.startswith(str(PRESET_DIR)) else "unspecified"
            try:
                vals[k] = check_value(p, v)
            except _Bad as b:
                problems.append((key, str(b), loc))
                bad = True
        for f in fields(cls):
            if f.name not in vals and not S[f"{sec}.{f.name}"].has_default and f.name not in table:
                problems.append((f"{sec}.{f.name}", f"[{sec}] is missing {f.name} "
                                 f"({S[f'{sec}.{f.name}'].describe()})", _at(where.get(sec, origin), sec)))
                bad = True
        if not bad:
            kwargs[sec] = cls(**vals)
            for f in fields(cls):
                key = f"{sec}.{f.name}"
                if f.name not in table:
                    file = where.get(sec, origin)
                    sources[key] = "gpusim default (not in the config)"
                    if not file.startswith(str(PRESET_DIR)):
                        notes.append(f"{file}: {key} not given; gpusim's default {getattr(kwargs[sec], f.name)} "
                                     f"{S[key].unit} was used")
    if problems:
        raise _config_error(problems)
    cfg = GPUConfig(preset=preset, sources=sources, notes=tuple(notes), **kwargs)

    def locate(*keys: str) -> str:
        files = [where.get(k, origin) for k in keys]
        users = [(f, k) for f, k in zip(files, keys) if not f.startswith(str(PRESET_DIR))]
        f, k = users[0] if users else (files[0], keys[0])
        sec, name = k.split(".", 1)
        return _at(f, sec, name)

    _check(cfg, locate)
    return cfg


def check_config(cfg: GPUConfig, where: str = "config") -> GPUConfig:
    """Check every parameter of a GPUConfig built in Python (types, ranges, cross-field rules); ConfigError."""
    problems = []
    for key, p in schema().items():
        try:
            check_value(p, getattr(getattr(cfg, p.section), p.name))
        except _Bad as b:
            problems.append((key, str(b), where))
    if problems:
        raise _config_error(problems)
    _check(cfg, lambda *keys: where)
    return cfg


def _check(cfg: GPUConfig, locate) -> None:
    """Rules between parameters (each value is already in its own range).  ``locate(*keys)`` names where."""
    sm, l1, l2, dram = cfg.sm, cfg.l1, cfg.l2, cfg.dram
    problems = []

    def need(ok: bool, keys: tuple[str, ...], msg: str) -> None:
        if not ok:
            problems.append((keys[0], msg, locate(*keys)))

    need(sm.max_threads == sm.max_warps * sm.warp_size, ("sm.max_threads", "sm.max_warps"),
         f"sm.max_threads ({sm.max_threads}) must equal sm.max_warps ({sm.max_warps}) x sm.warp_size "
         f"({sm.warp_size}) = {sm.max_warps * sm.warp_size} threads")
    need(sm.max_threads_per_cta <= sm.max_threads, ("sm.max_threads_per_cta", "sm.max_threads"),
         f"sm.max_threads_per_cta ({sm.max_threads_per_cta}) exceeds sm.max_threads ({sm.max_threads}) threads")
    need(sm.max_shared_per_sm_bytes <= sm.l1_shared_bytes, ("sm.max_shared_per_sm_bytes", "sm.l1_shared_bytes"),
         f"sm.max_shared_per_sm_bytes ({sm.max_shared_per_sm_bytes}) exceeds sm.l1_shared_bytes "
         f"({sm.l1_shared_bytes}) bytes: shared memory is carved out of the unified L1/shared SRAM")
    cta_max = sm.max_shared_per_cta_bytes + sm.shared_reserved_per_cta_bytes
    need(cta_max <= sm.max_shared_per_sm_bytes,
         ("sm.max_shared_per_cta_bytes", "sm.shared_reserved_per_cta_bytes", "sm.max_shared_per_sm_bytes"),
         f"sm.max_shared_per_cta_bytes ({sm.max_shared_per_cta_bytes}) + sm.shared_reserved_per_cta_bytes "
         f"({sm.shared_reserved_per_cta_bytes}) = {cta_max} exceeds sm.max_shared_per_sm_bytes "
         f"({sm.max_shared_per_sm_bytes}) bytes")
    top = max(sm.shared_carveouts_kb) * 1024
    need(top == sm.max_shared_per_sm_bytes, ("sm.shared_carveouts_kb", "sm.max_shared_per_sm_bytes"),
         f"the largest of sm.shared_carveouts_kb ({max(sm.shared_carveouts_kb)} KB = {top} bytes) must equal "
         f"sm.max_shared_per_sm_bytes ({sm.max_shared_per_sm_bytes} bytes)")
    need(sm.registers >= sm.register_alloc_unit, ("sm.registers", "sm.register_alloc_unit"),
         f"sm.registers ({sm.registers}) is less than sm.register_alloc_unit ({sm.register_alloc_unit})")
    need(l2.write_bytes_per_clk_per_slice == 0 or l2.write_bytes_per_clk_per_slice >= 0.1,
         ("l2.write_bytes_per_clk_per_slice",),
         f"l2.write_bytes_per_clk_per_slice ({l2.write_bytes_per_clk_per_slice:g}) must be 0 (no write-side limit) "
         f"or at least 0.1 bytes/clock, the least l2.bytes_per_clk_per_slice takes")
    need(l2.slices >= l2.partitions, ("l2.slices", "l2.partitions"),
         f"l2.slices ({l2.slices}) must be at least l2.partitions ({l2.partitions}): each partition holds slices")
    need(l2.far_latency_cycles >= l2.near_latency_cycles, ("l2.far_latency_cycles", "l2.near_latency_cycles"),
         f"l2.far_latency_cycles ({l2.far_latency_cycles}) is less than l2.near_latency_cycles "
         f"({l2.near_latency_cycles}) cycles")
    need(l2.near_latency_cycles > l1.hit_latency_cycles, ("l2.near_latency_cycles", "l1.hit_latency_cycles"),
         f"l2.near_latency_cycles ({l2.near_latency_cycles}) must exceed l1.hit_latency_cycles "
         f"({l1.hit_latency_cycles}) cycles: an L2 hit includes the trip through L1")
    need(dram.row_bytes >= dram.interleave_bytes, ("dram.row_bytes", "dram.interleave_bytes"),
         f"dram.row_bytes ({dram.row_bytes}) is less than dram.interleave_bytes ({dram.interleave_bytes}) bytes")
    if problems:
        raise _config_error(problems)
