"""Held-out-family error (gpusim/validate/holdout.py): the refit without a family, checked on a synthetic model
whose best parameter per family is known."""
import re

import pytest

from gpusim.validate import holdout as ho
from gpusim.validate.suite import CASES, Case

# two families; family "a" alone prefers x = 1, family "b" alone prefers x = 3; the preset's value is 2
CS = [Case(f"{fam}{i}", "kernels/none.py", {}, fam) for fam in "ab" for i in range(3)]
CS.append(Case("c0", "kernels/none.py", {}, "c"))                    # a family no fit uses
FIT = ho.Fit("l2", "x", prior=5.0, candidates=(1.0, 2.0, 3.0), metric="cycles", cases=r"^[ab]\d$")
BEST = {"a": 1.0, "b": 3.0, "c": 2.0}
PRESET = 2.0


def measured(name):
    return {"cycles": 100.0}


def predict(name, over):
    x = over.get("l2", {}).get("x", PRESET)
    return {"cycles": 100.0 * (1 + 0.1 * (x - BEST[name[0]]) ** 2)}


def test_refit_without_family_uses_the_other_familys_best_value():
    res = {r.family: r for r in ho.holdout(predict, measured, CS, fits=[FIT])}
    # in-sample: x = 2 costs each of a and b 10%; c is at its best
    assert res["a"].in_sample_mape == pytest.approx(10.0)
    # without a, the fit sees only b and picks 3: a is then 40% off
    assert res["a"].refit == {"l2.x": 3.0}
    assert res["a"].held_out_mape == pytest.approx(40.0)
    assert res["b"].refit == {"l2.x": 1.0}
    assert res["b"].held_out_mape == pytest.approx(40.0)
    # c informed no fit: the preset stands, held out = in sample
    assert res["c"].refit == {}
    assert res["c"].held_out_mape == res["c"].in_sample_mape == pytest.approx(0.0)
    assert res["a"].worst[1] == pytest.approx(40.0)


def test_prior_when_the_family_held_every_fit_case():
    fit = ho.Fit("l2", "x", prior=5.0, candidates=(1.0, 2.0, 3.0), metric="cycles", cases=r"^a\d$")
    res = {r.family: r for r in ho.holdout(predict, measured, CS, fits=[fit])}
    assert res["a"].refit == {"l2.x": 5.0}
    assert res["a"].held_out_mape == pytest.approx(160.0)
    assert res["b"].refit == {}
    assert "all families" in ho.format_results(list(res.values()))


def test_choose_is_the_argmin_of_the_fit_metric():
    table = {(v, c.name): predict(c.name, {"l2": {"x": v}}) for c in CS[:6] for v in FIT.candidates}
    assert ho.choose(FIT, table, measured, set(), CS) == 2.0          # both families: the middle
    assert ho.choose(FIT, table, measured, {"a0", "a1", "a2"}, CS) == 3.0


def test_fits_name_real_cases_and_parameters():
    """Every hand fit of CALIBRATION.md names suite cases that exist, a real parameter, and holds the preset's
    value among its candidates (so the in-sample fit is one of the choices)."""
    from gpusim.config import load_gpu
    cfg = load_gpu("h100")
    text = open("CALIBRATION.md").read()
    for f in ho.FITS:
        assert f.fit_cases(CASES), f.param
        assert all(not c.startswith(("nb_", "scn_", "tlb_")) for c in f.fit_cases(CASES))
        value = getattr(getattr(cfg, f.section), f.param)
        assert value in f.candidates, (f.param, value)
        for v in f.candidates + (f.prior,):               # each is a value the preset accepts
            cfg.with_overrides(**{f.section: {f.param: v}})
        assert re.search(rf"`{f.section}\.{f.param}`", text), f.param


def test_readme_sections_per_gpu_with_populations_and_holdout(tmp_path):
    """`validate report --readme`: the H100's section holds the populations and the held-out-family table; another
    GPU's section goes after it, and rewriting a section leaves the other as it was."""
    from gpusim.validate.accuracy import update_readme
    from gpusim.validate.compare import Row
    rows = [Row("a0", "stream", {"cycles": 110.0}, {"cycles": 100.0}),
            Row("b0", "nb_docs", {"cycles": 70.0}, {"cycles": 100.0}),
            Row("c0", "scn_burst", {"cycles": 100.0}, {"cycles": 100.0})]
    info = {"gpu": "GPU X", "driver": "1", "cuda": "13", "sm_clock_mhz": 1980, "date": "today"}
    readme = tmp_path / "README.md"
    readme.write_text("# t\n\n## Accuracy\n\n<!-- accuracy:begin -->\nSTALE TEXT\n<!-- accuracy:end -->\n\n## After\n")
    hold = [ho.FamilyResult("stream", ["a0"], 10.0, 25.0, {"l2.capacity_fraction": 1.0})]
    update_readme(rows, info, readme=readme, holdout=hold, docs=tmp_path)
    update_readme(rows, info, readme=readme, gpu="h200", docs=tmp_path)
    text = readme.read_text()
    h100 = text[text.index("<!-- accuracy:begin -->"):text.index("<!-- accuracy:end -->")]
    assert "| in-sample (calibrated on) | 1 | 10.0% |" in h100
    assert "| held-out families" in h100 and "| 1 | 30.0% |" in h100
    assert "| stream | 1 | 10.0% | 25.0% | `l2.capacity_fraction` = 1 |" in h100
    assert "STALE TEXT" not in text and text.index("<!-- accuracy:h200:begin -->") > text.index("<!-- accuracy:end -->")
    assert text.index("<!-- accuracy:h200:end -->") < text.index("## After")
    update_readme(rows[:1], info, readme=readme, docs=tmp_path)          # the H100's again: H200's stays
    again = readme.read_text()
    assert again.count("accuracy:h200:begin") == 1 and again.count("GPU X") == 3
    assert (tmp_path / "accuracy.svg").exists() and (tmp_path / "accuracy_h200.svg").exists()


def test_run_holdout_batches_the_predictions_it_needs(monkeypatch):
    """run_holdout on the real suite with a stand-in simulator: the preset's predictions and each fit's candidates
    first, then the held-out family's cases with the refitted values; nothing is predicted twice, and a family no fit
    used costs only its own cases."""
    from gpusim.validate import records
    calls = []

    def fake(args):
        name, gpu, over = args
        calls.append((name, repr(over)))
        m = records.measured(name)
        x = over.get("dram", {}).get("row_miss_ns", 12.0)
        return {"cycles": m["cycles"] * (1 + abs(x - 6.0) / 100), "dram_bytes_write": m.get("dram_bytes_write", 0)}
    monkeypatch.setattr(ho, "_predict_override", fake)
    res = ho.run_holdout(families=["strided"])
    (r,) = res
    assert r.family == "strided" and r.refit == {"dram.row_miss_ns": 6.0}
    assert r.held_out_mape == pytest.approx(0.0) and r.in_sample_mape == pytest.approx(6.0)
    assert len(calls) == len(set(calls))
    fit = next(f for f in ho.FITS if f.param == "row_miss_ns")
    assert len(calls) == len(fit.fit_cases(CASES)) * len(fit.candidates) + len(r.cases) + \
        len([n for n in r.cases if n not in fit.fit_cases(CASES)])
    calls.clear()
    (m,) = ho.run_holdout(families=["math"])
    assert m.refit == {} and len(calls) == len(m.cases)


def test_run_holdout_cache_keeps_the_refits_predictions(monkeypatch, tmp_path):
    """--holdout-cache: the predictions made with overrides are written as they come and not made again; those with
    the preset as it is come from the report's own cache (``base``), so a rerun without it predicts only those."""
    from gpusim.validate import records
    calls = []

    def fake(args):
        name, gpu, over = args
        calls.append(name)
        x = over.get("dram", {}).get("row_miss_ns", 12.0)
        return {"cycles": records.measured(name)["cycles"] * (1 + abs(x - 6.0) / 100)}
    monkeypatch.setattr(ho, "_predict_override", fake)
    cache = tmp_path / "refits.json"
    (first,) = ho.run_holdout(families=["strided"], cache=str(cache))
    assert cache.exists() and len(calls) > len(first.cases)
    calls.clear()
    (again,) = ho.run_holdout(families=["strided"], cache=str(cache))
    assert sorted(calls) == sorted(first.cases)           # only the preset's own predictions, not in the file
    assert again.held_out_mape == pytest.approx(first.held_out_mape) and again.refit == first.refit
