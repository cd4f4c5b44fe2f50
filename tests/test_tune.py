"""gpusim tune (gpusim/tuner.py) and the autotune ranking in a report's notes.

The ranking must agree with simulating each config on its own: the autotuner's cycles for a config are the
cycles ``gpusim.simulate`` gives that config's launch, and the ranks sort them.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpusim.api import simulate, simulate_launch
from gpusim.cli import load_kernel_file, main
from gpusim.errors import UsageError
from gpusim.tuner import ranking, tune

ROOT = Path(__file__).resolve().parents[1]

AUTOTUNED = textwrap.dedent('''\
    """An autotuned row scale (test file): the last config needs more shared memory than an SM has."""
    import numpy as np
    from gpusim import triton
    from gpusim.triton import language as tl

    CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4),
               triton.Config({"BLOCK": 128}, num_warps=1), triton.Config({"BLOCK": 2048}, num_warps=8)]


    @triton.jit
    def scale_plain(x, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) * 3.0, mask=m)


    scale = triton.autotune(configs=CONFIGS, key=["n"])(scale_plain)


    def launch(n: int = 1 << 15):
        x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        return {"kernel": scale, "grid": lambda meta: (triton.cdiv(n, meta["BLOCK"]),), "args": [x, out, n],
                "outputs": [1], "reference": lambda: {1: x * 3.0}}
    ''')


@pytest.fixture()
def autotuned(tmp_path):
    p = tmp_path / "autotuned_scale.py"
    p.write_text(AUTOTUNED)
    return p


def test_autotune_ranking_agrees_with_single_simulations(autotuned):
    (res,) = tune(str(autotuned))
    # as data, for comparing picks with records (the same simulations: the same order)
    rows = ranking(str(autotuned))
    # the same simulations: the same cycles per config.  (Within 0.5%: simulated addresses are first fit among the
    # arrays alive in the process, so a suite run's leftovers can move a line to another L2 slice; two configs
    # 0.2% apart may then swap ranks -- see DEVIATIONS.md.)
    by_tune = {r["config"]: r["cycles"] for r in res.rows}
    assert {r["config"] for r in rows} == set(by_tune) and rows[0]["params"]["BLOCK"] > 0
    for r in rows:
        assert r["cycles"] == pytest.approx(by_tune[r["config"]], rel=5e-3)
    assert [r["cycles"] for r in rows] == sorted(r["cycles"] for r in rows)
    mod = load_kernel_file(str(autotuned))
    n = 1 << 15
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    single = {}
    for c in mod.CONFIGS:
        rep = simulate(mod.scale_plain, (-(-n // c.kwargs["BLOCK"]),), x, np.zeros(n, np.float32), n,
                       **c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages)
        single[f"BLOCK={c.kwargs['BLOCK']}, num_warps={c.num_warps}, num_stages={c.num_stages}"] = rep
    assert len(res.rows) == 4 and res.mode == "autotune" and "32768" in res.key
    for r in res.rows:
        assert r["cycles"] == pytest.approx(single[r["config"]].cycles, rel=5e-3)      # (addresses: see above)
        assert r["us"] == pytest.approx(single[r["config"]]["time_us"], rel=5e-3)
    cyc = [r["cycles"] for r in res.rows]
    assert cyc == sorted(cyc) and [r["rank"] for r in res.rows] == [1, 2, 3, 4]
    assert res.rows[0]["chosen"] and sum(r["chosen"] for r in res.rows) == 1
    # vs_best is of the unrounded cycles; the rows show them rounded to integers (0.5 / 5000 ~ 1e-4)
    assert res.rows[0]["vs_best"] == 1.0 and res.rows[-1]["vs_best"] == pytest.approx(cyc[-1] / cyc[0], rel=1e-3)


MM_AUTOTUNED = """\
import importlib.util
from gpusim import triton

_spec = importlib.util.spec_from_file_location("_tl_matmul_for_tune", {path!r})
_m = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_m)
CONFIGS = [triton.Config({{"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}}, num_warps=4, num_stages=3),
           triton.Config({{"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8}}, num_warps=8, num_stages=5),
           triton.Config({{"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8}}, num_warps=2, num_stages=2)]
matmul = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(_m.matmul_kernel)


def launch(M: int = 64, N: int = 64, K: int = 64):
    d = _m.launch(M=M, N=N, K=K)
    d["kernel"], d["meta"] = matmul, {{}}
    d["grid"] = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    return d
"""


def test_out_of_resources_config_is_listed_last(tmp_path):
    """The tutorial's situation: an autotuned matmul whose largest tile needs more shared memory than an SM has."""
    p = tmp_path / "mm_autotuned.py"
    p.write_text(MM_AUTOTUNED.format(path=str(ROOT / "kernels" / "tl_matmul.py")))
    (res,) = tune(str(p), {"M": 96, "N": 64, "K": 64})
    last = res.rows[-1]
    assert last["cycles"] is None and not last["chosen"] and "BLOCK_M=256" in last["config"]
    assert "out of resource: shared memory" in last["error"]
    tl_matmul = load_kernel_file(str(ROOT / "kernels" / "tl_matmul.py"))
    for r in res.rows[:-1]:
        k = r["params"]
        (rep,) = simulate_launch(tl_matmul.launch(M=96, N=64, K=64, BM=k["BLOCK_M"], BN=k["BLOCK_N"],
                                                  BK=k["BLOCK_K"], num_warps=k["num_warps"],
                                                  num_stages=k["num_stages"]), "h100")
        # the same launch in one process, its arrays at other addresses: the L2's slices and sets (pairs of lines
        # since l2.slice_granule_lines = 2) see other lines -- up to a few percent (DEVIATIONS.md, Determinism)
        assert r["cycles"] == pytest.approx(rep.cycles, rel=0.03)
    assert res.rows[0]["cycles"] <= res.rows[1]["cycles"] and res.rows[0]["chosen"]
    text = str(res)
    assert "failed: " in text and "<- chosen" in text and "chosen: " + res.rows[0]["config"] in text


def test_run_of_an_autotuned_kernel_lists_the_ranking(autotuned, capsys):
    assert main(["run", str(autotuned)]) == 0
    out = capsys.readouterr().out
    ranks = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("autotune rank")]
    assert [r.split(":")[0] for r in ranks] == [f"autotune rank {i}/4" for i in range(1, 5)]
    assert ranks[0].endswith("fastest <- chosen") and "x the fastest" in ranks[-1]
    (res,) = tune(str(autotuned))
    assert [r.split(": ", 1)[1].rsplit(":", 1)[0] for r in ranks] == [r["config"] for r in res.rows]


TILES = """\
[[config]]
BM = 64
BN = 64
BK = 32
num_warps = 4
num_stages = 3

[[config]]
BM = 256
BN = 256
BK = 128
num_warps = 8
num_stages = 5

[[config]]
BM = 32
BN = 32
BK = 32
num_warps = 2
num_stages = 2
"""


def test_configs_file_ranks_candidates_like_single_runs(tmp_path):
    cfgs = tmp_path / "tiles.toml"
    cfgs.write_text(TILES)
    file = str(ROOT / "kernels" / "tl_matmul.py")
    (res,) = tune(file, {"M": 64, "N": 64, "K": 64}, configs=str(cfgs), jobs=1)
    assert res.mode == "configs" and len(res.rows) == 3
    mod = load_kernel_file(file)
    ran = [r for r in res.rows if r["cycles"] is not None]
    assert len(ran) == 2
    for r in ran:
        (rep,) = simulate_launch(mod.launch(M=64, N=64, K=64, **r["params"]), "h100")
        # the same launch in one process, its arrays at other addresses: the L2's slices and sets (pairs of lines
        # since l2.slice_granule_lines = 2) see other lines -- up to a few percent (DEVIATIONS.md, Determinism)
        assert r["cycles"] == pytest.approx(rep.cycles, rel=0.03)
    assert ran[0]["cycles"] <= ran[1]["cycles"] and ran[0]["chosen"]
    bad = res.rows[-1]
    assert bad["params"]["BM"] == 256 and "out of resource: shared memory" in bad["error"]
    # the same through the command line, as JSON
    assert main(["tune", file, "-p", "M=64", "-p", "N=64", "-p", "K=64", "--configs", str(cfgs), "-j", "1",
                 "--json"]) == 0


def test_tune_mistakes(tmp_path, autotuned, capsys):
    file = str(ROOT / "kernels" / "tl_vector_add.py")
    with pytest.raises(UsageError, match="is not autotuned.*--configs"):
        tune(file)
    bad = tmp_path / "bad.toml"
    bad.write_text("[[config]]\nBLOCK = 256\n\n[[config]]\nBLOKC = 512\n")
    with pytest.raises(UsageError, match=r"bad\.toml:4: no parameter 'BLOKC' in launch\(\) \(did you mean 'BLOCK'"):
        tune(file, configs=str(bad))
    bad.write_text("[[config]]\nBLOCK = [256, 512]\n")
    with pytest.raises(UsageError, match="must be one value"):
        tune(file, configs=str(bad))
    assert main(["tune", file]) == 2
    assert capsys.readouterr().err.startswith("gpusim: error: ")
    assert main(["tune", str(autotuned), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["mode"] == "autotune" and len(data[0]["rows"]) == 4


def test_the_readme_example_configs_file_lists_its_tiles():
    """docs/examples/matmul_configs.toml (README): four launch() parameter sets, in the file's order."""
    from gpusim.tuner import _configs_file
    cfgs = _configs_file(str(ROOT / "docs" / "examples" / "matmul_configs.toml"))
    assert [(c["BM"], c["BN"], c["BK"]) for c, _ in cfgs] == [(128, 128, 64), (64, 64, 32), (128, 256, 64),
                                                             (256, 256, 128)]
