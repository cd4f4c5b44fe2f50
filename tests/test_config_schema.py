"""The GPU config schema: every parameter has a type, unit and valid range next to its dataclass field; loading
checks them.  Fuzzed: a config with one parameter given a wrong-type or out-of-range value always fails with a
ConfigError naming that parameter; one with in-range values either loads (and then simulates a small kernel)
or fails with a ConfigError -- never another exception.
"""
from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusim.api import time_trace
from gpusim.config import _SECTIONS, ConfigError, P, Param, check_config, load_gpu, preset_names, schema
from gpusim.errors import GpusimError

from synthetic import streaming_trace

H100 = load_gpu("h100")
SCHEMA = schema()
KEYS = sorted(SCHEMA)


def test_every_field_has_a_schema_entry():
    for sec, cls in _SECTIONS.items():
        for f in dataclasses.fields(cls):
            p = SCHEMA[f"{sec}.{f.name}"]
            assert p.unit, p.key
            assert p.kind in ("int", "float", "str", "bool", "tuple", "list", "dict"), p.key
            if p.kind in ("str", "bool"):
                continue
            if p.choices is None:
                lo, hi = p.range
                assert lo is not None and hi is not None and lo <= hi, p.key
            if p.kind == "dict":
                assert p.keys and p.required, p.key
    assert len(SCHEMA) == sum(len(dataclasses.fields(c)) for c in _SECTIONS.values())


def test_a_field_without_schema_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Extra:
        ok: int = P("cycles", 0, 10)
        new_param: int = 3

    import gpusim.config as config
    saved = dict(config._SECTIONS), config._SCHEMA
    config._SECTIONS["extra"], config._SCHEMA = Extra, None
    try:
        with pytest.raises(TypeError, match="Extra.new_param has no schema"):
            config.schema()
    finally:
        config._SECTIONS.clear()
        config._SECTIONS.update(saved[0])
        config._SCHEMA = saved[1]


@pytest.mark.parametrize("name", preset_names())
def test_presets_load_cleanly(name):
    cfg = load_gpu(name)
    check_config(cfg, name)
    assert not cfg.notes
    assert set(cfg.sources) == set(SCHEMA)          # gpus -v lists every parameter


def test_with_overrides_is_checked():
    with pytest.raises(ConfigError, match=r"chip\.sm_count = 0 is out of range"):
        H100.with_overrides(chip={"sm_count": 0})
    with pytest.raises(ConfigError, match=r"did you mean 'size_bytes'"):
        H100.with_overrides(l2={"size_byte": 1 << 20})
    assert H100.with_overrides(l2={"size_bytes": 1 << 20}).l2.size_bytes == 1 << 20


def test_inherit_relative_to_the_file_and_cycles(tmp_path):
    (tmp_path / "base.toml").write_text('inherit = "h100"\n[chip]\nsm_count = 66\n')
    (tmp_path / "child.toml").write_text('inherit = "base.toml"\n[chip]\nname = "half"\n')
    cfg = load_gpu(tmp_path / "child.toml")
    assert cfg.chip.sm_count == 66 and cfg.chip.name == "half"
    (tmp_path / "loop.toml").write_text('inherit = "loop.toml"\n')
    with pytest.raises(ConfigError, match="cycle"):
        load_gpu(tmp_path / "loop.toml")


# ---- fuzzing -------------------------------------------------------------------------------------------

def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


_DIR = tempfile.TemporaryDirectory(prefix="gpusim-schema-")


def load_with(key: str, value=None, *, changes: dict | None = None, n: list = [0]):
    """Load an h100-inheriting config file that sets ``key`` to ``value`` (or every key of ``changes``)."""
    changes = changes if changes is not None else {key: value}
    by_sec: dict[str, list[str]] = {}
    for k, v in changes.items():
        sec, name = k.split(".")
        by_sec.setdefault(sec, []).append(f"{name} = {toml_value(v)}")
    n[0] += 1
    path = Path(_DIR.name) / f"fuzz{n[0]}.toml"
    path.write_text('inherit = "h100"\n' + "".join(f"\n[{sec}]\n" + "\n".join(lines) + "\n"
                                                  for sec, lines in by_sec.items()))
    return load_gpu(path)


def _bad_scalars(p: Param, t: type, draw) -> object:
    """A value for an element of type ``t`` that the schema must refuse."""
    lo, hi = p.range
    wrong_type = {int: ["big", True, 1.5, [1], {"a": 1}], float: ["big", False, [1.0], float("nan"), float("inf")],
                  str: [5, True, 1.5, [""], ""], bool: ["yes", 1, 0.0, ["true"]]}[t]
    options = list(wrong_type)
    if t in (int, float):
        if p.choices is not None:
            options.append(draw(st.integers(-10**6, 10**6).filter(lambda x: x not in p.choices)))
        else:
            step = st.integers(1, 10**9) if t is int else st.floats(1e-3, 1e9)
            if lo is not None:
                options.append(lo - draw(step))
            if hi is not None:
                options.append(hi + draw(step))
            if p.pow2:
                options.append(3 if lo <= 3 <= hi else 12)
            if p.multiple_of:
                options.append(lo + p.multiple_of // 2)
    elif t is str and p.choices is not None:
        options.append(draw(st.text("abcdefghijklmnopqrstuvwxyz.", min_size=1, max_size=8)
                            .filter(lambda s: s not in p.choices)))
    return draw(st.sampled_from(options))


@st.composite
def bad_mutation(draw):
    key = draw(st.sampled_from(KEYS))
    p = SCHEMA[key]
    current = getattr(getattr(H100, p.section), p.name)
    if p.kind in ("int", "float", "str", "bool"):
        return key, _bad_scalars(p, p.type, draw)
    if p.kind in ("tuple", "list"):
        how = draw(st.sampled_from(["type", "element", "length"]))
        if how == "type":
            return key, draw(st.sampled_from(["x", 5, {"a": 1}]))
        if how == "length":
            return key, [] if p.kind == "list" else list(current) + [0]
        i = draw(st.integers(0, len(current) - 1))
        v = list(current)
        v[i] = _bad_scalars(p, p.elem, draw)
        return key, v
    how = draw(st.sampled_from(["type", "entry", "unknown key", "missing key"]))
    if how == "type":
        return key, draw(st.sampled_from(["x", 5, [1, 2]]))
    v = dict(current)
    if how == "unknown key":
        v[draw(st.sampled_from(["bogus", "fp23", "tensor_cores"]))] = 1
    elif how == "missing key":
        del v[draw(st.sampled_from(list(p.required)))]
    else:
        k = draw(st.sampled_from(sorted(v)))
        v[k] = _bad_scalars(p, p.elem, draw)
    return key, v


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bad_mutation())
def test_bad_values_are_config_errors_naming_the_key(mutation):
    key, value = mutation
    with pytest.raises(ConfigError) as e:
        load_with(key, value)
    assert e.value.key == key and key in str(e.value), (key, value, str(e.value))
    assert "fuzz" in str(e.value)                    # names the file
    sec, name = key.split(".")
    with pytest.raises(ConfigError) as e:
        H100.with_overrides(**{sec: {name: value}})
    assert e.value.key == key and key in str(e.value)


def _good_scalar(p: Param, t: type, draw):
    if p.choices is not None:
        return draw(st.sampled_from(p.choices))
    lo, hi = p.range
    if t is bool:
        return draw(st.booleans())
    if t is str:
        return draw(st.text("abcdefghijklmnopqrstuvwxyz ABC0123456789_-", min_size=1, max_size=12)
                    .filter(str.strip))
    if t is int:
        x = draw(st.one_of(st.integers(lo, min(hi, lo + 64)), st.integers(lo, hi), st.just(hi)))
        if p.pow2:
            x = 1 << draw(st.integers(max(0, math.ceil(math.log2(max(lo, 1)))), int(math.log2(hi))))
        if p.multiple_of:
            x = max(lo, x - x % p.multiple_of)
        return x
    return draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))


@st.composite
def good_mutation(draw):
    key = draw(st.sampled_from(KEYS))
    p = SCHEMA[key]
    current = getattr(getattr(H100, p.section), p.name)
    if p.kind in ("int", "float", "str", "bool"):
        return key, _good_scalar(p, p.type, draw)
    if p.kind == "tuple":
        return key, [_good_scalar(p, p.elem, draw) for _ in current]
    if p.kind == "list":
        return key, draw(st.lists(st.builds(lambda: None), min_size=1, max_size=6).map(
            lambda xs: [_good_scalar(p, p.elem, draw) for _ in xs]))
    v = dict(current)
    for k in draw(st.lists(st.sampled_from(sorted(p.keys)), max_size=4)):
        v[k] = _good_scalar(p, p.elem, draw)
    return key, v


TRACE = streaming_trace(2048, block=128)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(good_mutation(), min_size=1, max_size=6))
def test_in_range_values_never_raise_an_internal_error(mutations):
    try:
        cfg = load_with("", changes=dict(mutations))
    except ConfigError:
        return                                        # a cross-field rule refused it: a user error, fine
    try:
        rep = time_trace(TRACE, cfg, progress=False)
    except GpusimError:
        return                                        # e.g. the launch does not fit the modified SM
    assert rep.cycles > 0


def test_a_write_side_slower_than_a_tenth_of_a_byte_per_clock_is_refused():
    """l2.write_bytes_per_clk_per_slice: 0 turns the limit off; a positive rate below 0.1 B/clk (a denormal one
    would make every store take forever) is a ConfigError naming the key, not a run that never ends."""
    with pytest.raises(ConfigError, match=r"l2\.write_bytes_per_clk_per_slice \(1e-06\) must be 0"):
        H100.with_overrides(l2={"write_bytes_per_clk_per_slice": 1e-6})
    assert H100.with_overrides(l2={"write_bytes_per_clk_per_slice": 0.0}).l2.write_bytes_per_clk_per_slice == 0
    assert H100.with_overrides(l2={"write_bytes_per_clk_per_slice": 0.1}).l2.write_bytes_per_clk_per_slice == 0.1
