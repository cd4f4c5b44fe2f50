"""gpusim sweep (gpusim/sweeper.py), gpusim run --gpu a,b,c, and gpusim.triton.testing (do_bench, perf_report).

Small sizes: a 4096-element Triton vector add simulates in a tenth of a second.  Every row is compared with a
direct simulation of the same launch (``api.simulate_launch``), not with numbers written here.
"""
from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np
import pytest

from gpusim import sweeper
from gpusim.api import fresh_addresses, simulate, simulate_launch
from gpusim.cli import load_kernel_file, main
from gpusim.config import load_gpu
from gpusim.errors import ConfigError, UsageError

ROOT = Path(__file__).resolve().parents[1]
VADD = ROOT / "kernels" / "tl_vector_add.py"


def _spec(tmp_path, body: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(f'kernel = "{VADD}"\n' + body)
    return p


SPEC = """gpu = ["h100", "a100"]
[config]
"dram.efficiency" = [0.5, 0.9]
[params]
n = 4096
BLOCK = [256, 1024]
[derived]
gbps_min = "min_bytes / us / 1e3"
[plot]
x = "BLOCK"
y = "us"
"""


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    spec = _spec(d, SPEC)
    res = sweeper.sweep(spec, jobs=1, out=str(d / "out"), progress=False)
    return spec, res


def test_expansion_order_columns_and_units(tmp_path):
    sp = sweeper.load_spec(_spec(tmp_path, SPEC))
    pts = sp.points()
    assert len(pts) == 2 * 2 * 1 * 2
    assert pts[0] == {"gpu": "h100", "dram.efficiency": 0.5, "n": 4096, "BLOCK": 256}
    assert pts[1]["BLOCK"] == 1024 and pts[2]["dram.efficiency"] == 0.9 and pts[4]["gpu"] == "a100"
    assert sp.columns[:5] == ["point", "gpu", "dram.efficiency", "n", "BLOCK"]
    assert sp.columns[-1] == "gbps_min" and "tflops" in sp.columns
    # a *_bytes parameter given in MiB
    sp2 = sweeper.load_spec(_spec(tmp_path, '[config]\n"l2.size_mb" = [10, 40]\n[params]\nn = 4096\n', "mb.toml"))
    assert sweeper.overrides_of(sp2.axes, sp2.points()[1]) == {"l2": {"size_bytes": 40 << 20}}


@pytest.mark.parametrize("body, match", [
    ('[config]\n"l2.size_mbb" = 3\n', r"s\.toml:3: config override 'l2.size_mbb'.*did you mean 'l2.size_mb'"),
    ('[config]\n"dramm.efficiency" = 3\n', r"s\.toml:3: .*unknown section 'dramm' \(did you mean 'dram'\?\)"),
    ('[config]\n"dram.efficiency" = [0.5, 7.0]\n', r"s\.toml:3: on h100 with dram.efficiency=7.0: .*out of range"),
    ('[params]\nnn = 4096\n', r"s\.toml:3: no parameter 'nn' in launch\(\) \(did you mean 'n'\?\)"),
    ('[params]\nn = "big"\n', r"s\.toml:3: n = big: parameter n of launch\(\) expects an int"),
    ('[derived]\nx = "us * flopz"\n', r"s\.toml:3: derived column x: no column 'flopz' \(did you mean 'flops'\?\)"),
    ('[derived]\nx = "__import__(1)"\n', r"s\.toml:3: .*calls may only be to"),
    ('[plot]\nx = "M"\ny = "us"\n', r"s\.toml:3: plot column 'M' is not a column"),
    ('[params]\nBLOCK = [256, 512, 256]\n', r"s\.toml:3: BLOCK lists 256 twice"),
    ('gpus = "h100"\n', r"s\.toml:2: unknown key 'gpus' in the sweep spec \(did you mean 'gpu'\?\)"),
])
def test_spec_mistakes_name_the_spec_line(tmp_path, body, match):
    with pytest.raises((UsageError, ConfigError), match=match):
        sweeper.load_spec(_spec(tmp_path, body))


def test_rows_equal_direct_simulations(serial):
    spec, res = serial
    rows = _csv(res.csv)
    assert len(rows) == len(res.rows) == 8 and [int(r["point"]) for r in rows] == list(range(8))
    mod = load_kernel_file(str(VADD))
    cycles = set()
    for r in res.rows:
        cfg = load_gpu(r["gpu"]).with_overrides(dram={"efficiency": r["dram.efficiency"]})
        with fresh_addresses():                      # as a sweep point runs: whatever this process still holds
            launch = mod.launch(n=r["n"], BLOCK=r["BLOCK"])
            (rep,) = simulate_launch(launch, cfg)
        assert r["status"] == "ok" and r["error"] is None
        assert r["cycles"] == rep.cycles and r["kernels"] == 1
        assert r["us"] == pytest.approx(rep.cycles / cfg.chip.sm_clock_mhz, rel=1e-12)
        assert r["dram_bytes_read"] == rep["dram_bytes_read"]
        assert r["occupancy_achieved_pct"] == pytest.approx(rep["occupancy_achieved_pct"])
        assert r["occupancy_limiter"] == rep["occupancy_limiter"]
        assert r["flops"] == launch["flops"] and r["tflops"] == pytest.approx(launch["flops"] / r["us"] * 1e-6)
        assert r["gbps_min"] == pytest.approx(launch["min_bytes"] / r["us"] / 1e3)
        cycles.add((r["gpu"], r["dram.efficiency"], r["BLOCK"], r["cycles"]))
    # the override reaches the engine: half the DRAM efficiency, a slower kernel (for each block size)
    by = {(g, e, b): c for g, e, b, c in cycles}
    assert len(by) == 8
    for b in (256, 1024):
        assert by[("h100", 0.5, b)] > by[("h100", 0.9, b)]
    # the CSV holds the same numbers (floats written in full)
    for r, c in zip(res.rows, rows):
        assert int(c["cycles"]) == r["cycles"] and float(c["us"]) == r["us"] and c["status"] == "ok"
    assert res.html is not None and "plotly" in res.html.read_text()[:200000]


def test_parquet_holds_the_rows(serial):
    pq = pytest.importorskip("pyarrow.parquet")
    spec, res = serial
    assert res.parquet is not None
    t = pq.read_table(res.parquet).to_pylist()
    assert [r["cycles"] for r in t] == [r["cycles"] for r in res.rows] and t[3]["gpu"] == res.rows[3]["gpu"]


def test_the_package_exports_sweep_and_tune():
    import gpusim
    from gpusim.tuner import tune
    assert gpusim.sweep is sweeper.sweep and gpusim.tune is tune


def test_failing_point_is_a_row_and_the_sweep_goes_on(tmp_path):
    spec = _spec(tmp_path, '[params]\nn = 4096\ndtype = ["float16", "float64", "float32"]\n')
    res = sweeper.sweep(spec, jobs=1, out=str(tmp_path / "o"), progress=False)
    st = [r["status"] for r in res.rows]
    assert st == ["ok", "error", "ok"] and res.errors == 1
    err = res.rows[1]["error"]
    assert "\n" not in err and "tl_vector_add.py:" in err and "ValueError: dtype must be" in err
    assert res.rows[1]["cycles"] is None
    rows = _csv(res.csv)
    assert rows[1]["status"] == "error" and rows[1]["cycles"] == "" and rows[1]["error"] == err
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "o")]) == 1   # resumed; exit 1


def test_resume_skips_rows_already_written(serial, tmp_path):
    spec, res = serial
    full = res.csv.read_text()
    out = tmp_path / "r"
    out.mkdir()
    lines = full.splitlines(keepends=True)
    # header + points 0, 3, 5 (as if they finished first), then a row cut by the interruption
    (out / "sweep.csv").write_text(lines[0] + lines[1] + lines[4] + lines[6] + lines[7][:20])
    again = sweeper.sweep(spec, jobs=1, out=str(out), progress=False)
    assert again.skipped == 3 and again.ran == 5
    assert (out / "sweep.csv").read_text() == full
    # everything done: nothing runs
    third = sweeper.sweep(spec, jobs=1, out=str(out), progress=False)
    assert third.ran == 0 and third.skipped == 8 and (out / "sweep.csv").read_text() == full


def test_resume_refuses_a_table_of_another_spec(serial, tmp_path):
    spec, res = serial
    out = tmp_path / "x"
    out.mkdir()
    (out / "sweep.csv").write_text("point,M,status\n0,1,ok\n")
    with pytest.raises(UsageError, match="written by another spec"):
        sweeper.sweep(spec, jobs=1, out=str(out), progress=False)


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_process_pool_equals_serial(serial, tmp_path, monkeypatch, start):
    spec, res = serial
    monkeypatch.setenv("GPUSIM_SWEEP_START", start)
    assert sweeper._start_method() == start
    par = sweeper.sweep(spec, jobs=2, out=str(tmp_path / "p"), progress=False)
    assert par.csv.read_text() == res.csv.read_text()


def test_dask_local_cluster_equals_local(serial, tmp_path):
    distributed = pytest.importorskip("distributed")
    spec, res = serial
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dk = sweeper.sweep(spec, dask=cluster, out=str(tmp_path / "d"), progress=False)
    assert dk.csv.read_text() == res.csv.read_text()


# ---- gpusim run --gpu a,b ---------------------------------------------------------------------------------

def test_run_several_presets_side_by_side(capsys):
    assert main(["run", str(VADD), "-p", "n=4096", "--gpu", "h100,a100"]) == 0
    out = capsys.readouterr().out
    head = next(ln for ln in out.splitlines() if "h100" in ln and "a100" in ln)
    assert head.split() == ["h100", "a100"]
    cyc = next(ln for ln in out.splitlines() if ln.strip().startswith("cycles")).split()[1:]
    mod = load_kernel_file(str(VADD))
    want = [simulate_launch(mod.launch(n=4096), g)[0].cycles for g in ("h100", "a100")]
    assert [int(c.replace(",", "")) for c in cyc] == want
    assert "h100: output 2: matches" in out and "a100: output 2: matches" in out
    assert main(["run", str(VADD), "--gpu", "h100,h100"]) == 2
    assert "h100 is given twice" in capsys.readouterr().err


# ---- gpusim.triton.testing --------------------------------------------------------------------------------

from gpusim import triton                                   # noqa: E402
from gpusim.triton import language as tl                   # noqa: E402


@triton.jit
def _scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def _launch_scale(x, out):
    _scale[(triton.cdiv(x.size, 512),)](x, out, x.size, BLOCK=512)


def test_do_bench_is_the_reports_time():
    x = np.random.default_rng(0).standard_normal(8192).astype(np.float32)
    out = np.zeros_like(x)
    ms = triton.testing.do_bench(lambda: _launch_scale(x, out))
    np.testing.assert_array_equal(out, x * 2)
    rep = simulate(_scale, (triton.cdiv(x.size, 512),), x, out, x.size, BLOCK=512)
    assert ms == pytest.approx(rep["time_us"] / 1e3, rel=1e-12)
    # two launches per call: the sum
    two = triton.testing.do_bench(lambda: (_launch_scale(x, out), _launch_scale(out, x)))
    assert two == pytest.approx(2 * ms, rel=0.05) and two != ms
    q = triton.testing.do_bench(lambda: _launch_scale(x, out), quantiles=[0.5, 0.2, 0.8])
    assert q == [pytest.approx(ms)] * 3
    assert triton.testing.do_bench(lambda: _launch_scale(x, out), return_mode="all") == [pytest.approx(ms)]
    assert math.isnan(triton.testing.do_bench(lambda: x + 1))          # no gpusim kernel: missing
    with pytest.raises(ValueError, match="return_mode"):
        triton.testing.do_bench(lambda: None, return_mode="avg")
    # the current GPU: driver.active.set_gpu
    triton.runtime.driver.active.set_gpu("a100")
    try:
        a100 = triton.testing.do_bench(lambda: _launch_scale(x, out))
    finally:
        triton.runtime.driver.active.set_gpu(None)
    rep = simulate(_scale, (triton.cdiv(x.size, 512),), x, out, x.size, BLOCK=512, gpu="a100")
    assert a100 == pytest.approx(rep["time_us"] / 1e3, rel=1e-12)


def test_perf_report_prints_rows_and_writes_html(tmp_path, capsys):
    sizes = [2048, 8192]

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["size"], x_vals=sizes, line_arg="provider", line_vals=["triton", "numpy"],
        line_names=["Triton", "NumPy"], styles=[("blue", "-"), ("green", "--")], ylabel="GB/s",
        plot_name="scale-performance", args={}, x_log=True))
    def bench(size, provider):
        x = np.ones(size, np.float32)
        out = np.zeros_like(x)
        fn = (lambda: _launch_scale(x, out)) if provider == "triton" else (lambda: np.multiply(x, 2, out=out))
        ms, lo, hi = triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
        gbps = lambda t: 2 * size * 4 * 1e-9 / (t * 1e-3)   # noqa: E731
        return gbps(ms), gbps(hi), gbps(lo)

    table = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "scale-performance:"
    assert out[1].split() == ["size", "Triton", "(GB/s)", "NumPy", "(GB/s)"]
    assert [ln.split()[:2] for ln in out[2:4]] == [["0", "2048"], ["1", "8192"]]
    assert all(ln.split()[3] == "NaN" for ln in out[2:4])
    assert "NumPy: not simulated at 2 of 2 points" in out[4]
    for i, size in enumerate(sizes):
        x = np.ones(size, np.float32)
        rep = simulate(_scale, (triton.cdiv(size, 512),), x, np.zeros_like(x), size, BLOCK=512)
        want = 2 * size * 4 * 1e-9 / (rep["time_us"] * 1e-6)
        assert float(out[2 + i].split()[2]) == pytest.approx(want, rel=1e-5)
    assert len(table.rows if hasattr(table, "rows") and not hasattr(table, "iloc") else table) == 2
    html = (tmp_path / "scale-performance.html").read_text()
    assert "Plotly.newPlot" in html and "Triton (GB" in html and "NumPy (GB" in html
    assert (tmp_path / "plotly.min.js").exists()
    assert "scale-performance.html" in (tmp_path / "results.html").read_text()
    csv_rows = _csv(tmp_path / "scale-performance.csv")
    assert [int(r["size"]) for r in csv_rows] == sizes and csv_rows[0]["NumPy (GB/s)"] == ""


ADD_KERNEL = '''\
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)
'''

TUTORIAL = '''\
import numpy as np
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


''' + ADD_KERNEL + '''

def add(x, y):
    output = np.empty_like(x)
    grid = lambda meta: (triton.cdiv(x.size, meta["BLOCK_SIZE"]), )
    add_kernel[grid](x, y, output, x.size, BLOCK_SIZE=1024)
    return output


@triton.testing.perf_report(triton.testing.Benchmark(
    x_names=["size"], x_vals=[4096, 16384], x_log=True, line_arg="provider", line_vals=["triton", "numpy"],
    line_names=["Triton", "NumPy"], styles=[("blue", "-"), ("green", "-")], ylabel="GB/s",
    plot_name="vector-add-performance", args={}))
def benchmark(size, provider):
    x = np.ones(size, np.float32)
    y = np.ones(size, np.float32)
    quantiles = [0.5, 0.2, 0.8]
    if provider == "numpy":
        ms, min_ms, max_ms = triton.testing.do_bench(lambda: x + y, quantiles=quantiles)
    if provider == "triton":
        ms, min_ms, max_ms = triton.testing.do_bench(lambda: add(x, y), quantiles=quantiles)
    gbps = lambda ms: 3 * x.size * x.itemsize * 1e-9 / (ms * 1e-3)
    return gbps(ms), gbps(max_ms), gbps(min_ms)


benchmark.run(print_data=True, show_plots=True)
'''


def test_bench_runs_an_unchanged_tutorial(tmp_path, capsys):
    script = tmp_path / "tutorial.py"
    script.write_text(TUTORIAL)
    out_dir = tmp_path / "plots"
    assert main(["bench", str(script), "--gpu", "a100", "--save-path", str(out_dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "vector-add-performance:" and len(out) == 5 and "NumPy: not simulated" in out[4]
    x, y = np.ones(16384, np.float32), np.ones(16384, np.float32)
    rep = simulate(_scale_free_add(), (16,), x, y, np.empty_like(x), x.size, BLOCK_SIZE=1024, gpu="a100")
    assert float(out[3].split()[2]) == pytest.approx(3 * 16384 * 4 * 1e-9 / (rep["time_us"] * 1e-6), rel=1e-5)
    assert (out_dir / "vector-add-performance.html").exists()
    import sys
    assert "triton" not in sys.modules or sys.modules["triton"].__name__ == "triton"   # the alias is undone


def _scale_free_add():
    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
                 mask=mask)
    return add_kernel


def test_the_readme_example_spec_expands_to_its_points():
    """docs/examples/matmul_sweep.toml (README, "Sweeps, tuning ..."): 2 GPUs x 3 M x 2 BM = 12 points, the
    kernel path resolved next to the spec, the plot's columns known."""
    sp = sweeper.load_spec(ROOT / "docs" / "examples" / "matmul_sweep.toml")
    pts = sp.points()
    assert len(pts) == 12
    fixed = {"N": 512, "K": 512, "BN": 128}
    assert pts[0] == {"gpu": "h100", "M": 256, "BM": 64, **fixed}
    assert pts[-1] == {"gpu": "h200", "M": 1024, "BM": 128, **fixed}
    assert "tflops" in sp.columns and "M" in sp.columns


TORCH_CUDA_SCRIPT = '''\
import torch
import triton
import triton.language as tl


''' + ADD_KERNEL + '''

def add(x, y):
    output = torch.empty_like(x)
    assert x.is_cuda and y.is_cuda and output.is_cuda
    n_elements = output.numel()
    add_kernel[lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


assert torch.cuda.is_available()
torch.manual_seed(0)
x = torch.rand(98432, device="cuda")
y = torch.rand(98432, device=torch.device("cuda:0")).cuda().to("cuda")
out = add(x, y)
torch.cuda.synchronize()
assert torch.equal(out, x + y)
props = torch.cuda.get_device_properties("cuda")
print("SMS", props.multi_processor_count, torch.cuda.get_device_capability(), torch.cuda.get_device_name())
'''


def test_a_script_written_for_torch_on_cuda_runs_on_the_simulated_gpu(tmp_path, capsys):
    """Public Triton code allocates with ``device="cuda"`` and asserts ``is_cuda``: under ``gpusim run`` on a host
    whose torch has no CUDA, torch's cuda device is the simulated GPU (host memory); after the script it is not."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch has a CUDA device here: scripts use it unchanged")
    script = tmp_path / "add_cuda.py"
    script.write_text(TORCH_CUDA_SCRIPT)
    assert main(["run", str(script), "--gpu", "h200"]) == 0
    out = capsys.readouterr().out
    h200 = load_gpu("h200")
    assert f"SMS {h200.chip.sm_count} (9, 0) {h200.chip.name}" in out and "kernel add_kernel" in out
    assert not torch.cuda.is_available()                    # undone after the script
    with pytest.raises((AssertionError, RuntimeError)):
        torch.rand(4, device="cuda")


def test_a_points_row_does_not_depend_on_the_arrays_the_process_holds(tmp_path):
    """The simulated device addresses are a first fit among the live allocations; a sweep point runs in an empty
    address space, so its row is the same in a fresh worker and in a process that still holds other launches'
    arrays (the fresh-clone CI once saw 5,357 against 5,371 cycles between the serial and the spawned run)."""
    from gpusim.cuda.memory import ADDRESS_SPACE
    from gpusim.triton._buffers import ADDRESSES
    spec = _spec(tmp_path, '[params]\nn = 4096\n')
    first = sweeper.sweep(spec, jobs=1, out=str(tmp_path / "a"), progress=False).rows[0]
    held = [np.zeros(k * 1000 + 37, np.float32) for k in range(1, 6)]     # live, registered, odd sizes
    for h in held:
        ADDRESS_SPACE.address_of(h)
        ADDRESSES.address(h.ctypes.data, h.nbytes, h)
    n_cuda, n_tl = len(ADDRESS_SPACE._blocks), len(ADDRESSES.by_ptr)
    again = sweeper.sweep(spec, jobs=1, out=str(tmp_path / "b"), progress=False).rows[0]
    assert again == first and first["status"] == "ok"
    assert len(ADDRESS_SPACE._blocks) == n_cuda and len(ADDRESSES.by_ptr) == n_tl   # restored after the point
    assert all(ADDRESS_SPACE.address_of(h) for h in held)
