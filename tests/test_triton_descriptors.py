"""Tensor descriptors (``TensorDescriptor``, ``tl.make_tensor_descriptor``, ``desc.load`` / ``desc.store``): their
semantics against numpy and Triton's interpreter, their lowering to Hopper TMA bulk copies, and the tutorials
that use them (06 fused attention, 09 persistent matmul) at small sizes."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpusim import triton as gtriton
from gpusim.trace import OpKind, Space
from gpusim.triton import trace_launch
from gpusim.triton.tools.tensor_descriptor import TensorDescriptor

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import tma_kernels as TK  # noqa: E402


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _gpusim_args(args):
    return [TensorDescriptor(x[1], x[2], x[3], x[4]) if isinstance(x, tuple) and x and x[0] == "desc" else x
            for x in args]


def _run_case(name, trace=False):
    kname, grid, args, meta, oi = TK.cases()[name]
    gtriton.set_allocator(lambda size, align, stream: np.empty(size, np.int8))
    k = getattr(TK, kname)
    gargs = _gpusim_args(args)
    tr = trace_launch(k, grid, gargs, meta) if trace else gtriton.run_launch(k, grid, gargs, meta)
    return args, meta, args[oi], tr


# ---- semantics against numpy -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["load_inbounds", "load_shift", "load_neg"])
def test_descriptor_load_zero_fills_out_of_bounds(name):
    args, meta, out, _ = _run_case(name)
    np.testing.assert_array_equal(out, TK.reference(name, args, meta))


def test_descriptor_store_is_clipped_to_the_shape():
    args, meta, out, _ = _run_case("copy_clip")
    np.testing.assert_array_equal(out, TK.reference("copy_clip", args, meta))
    assert np.all(out[37:] == 7.0) and np.all(out[:, 40:] == 7.0)      # nothing written outside [M, N]


def test_descriptor_3d_box():
    args, meta, out, _ = _run_case("box_3d")
    np.testing.assert_array_equal(out, TK.reference("box_3d", args, meta))


def test_host_descriptor_checks_and_fields():
    a = np.zeros((64, 32), np.float16)
    d = TensorDescriptor.from_tensor(a, [16, 32])
    assert d.shape == [64, 32] and d.strides == [32, 1] and d.block_shape == [16, 32]
    with pytest.raises(AssertionError):
        TensorDescriptor(a, [64, 32], [32, 2], [16, 32])             # last dimension not contiguous
    with pytest.raises(AssertionError):
        TensorDescriptor(np.zeros((4, 3), np.float32), [4, 3], [3, 1], [4, 4])   # 12-byte rows


def test_device_descriptor_attributes_and_block_check(monkeypatch):
    from gpusim.errors import CompileError
    monkeypatch.setenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "1")     # the kernel reports into `seen` (a probe)
    from gpusim.triton import language as tl

    seen = {}

    @gtriton.jit
    def k(p, BN: tl.constexpr):
        d = tl.make_tensor_descriptor(p, shape=[8, 64], strides=[64, 1], block_shape=[4, BN])
        seen["bs"], seen["dt"] = d.block_shape, d.dtype
        seen["is"] = isinstance(d, tl.tensor_descriptor)
    gtriton.run_launch(k, (1,), [np.zeros((8, 64), np.float16)], {"BN": 16})
    assert seen == {"bs": (4, 16), "dt": tl.float16, "is": True}          # a tuple, as block_type.shape in Triton 3.6
    with pytest.raises(CompileError, match="at least 16 bytes"):
        gtriton.run_launch(k, (1,), [np.zeros((8, 64), np.float16)], {"BN": 4})


# ---- against Triton's interpreter --------------------------------------------------------------------------

@pytest.mark.contract
def test_descriptors_match_triton_interpreter(tmp_path):
    for mod in ("triton", "torch"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed")
    out = tmp_path / "interp.npz"
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, str(Path(TK.__file__)), str(out)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    interp = np.load(out)
    for name in TK.cases():
        _, _, mine, _ = _run_case(name)
        np.testing.assert_array_equal(mine, interp[name], err_msg=name)


# ---- lowering: TMA bulk copies --------------------------------------------------------------------------------

def _box_sectors(a_addr, shape_rows, row_bytes, starts):
    """Analytic sectors of boxes: per box row, the 32 B sectors its bytes cover."""
    n = 0
    for r0, c0 in starts:
        for r in range(r0, r0 + shape_rows):
            lo = a_addr(r, c0)
            n += (lo + row_bytes - 1) // 32 - lo // 32 + 1
    return n


def test_descriptor_load_is_one_bulk_copy_per_cta():
    _, meta, _, tr = _run_case("load_inbounds", trace=True)
    W = tr.warps_per_cta
    copies = [(t, i, op) for t, i, op in tr.iter_ops() if op.kind == OpKind.ASYNC_COPY]
    assert copies and all(op.label.startswith("UTMALDG") and op.n_inst == 1 for _, _, op in copies)
    # no per-thread global loads: the loaded box is read from shared memory only
    assert not [op for _, _, op in tr.iter_ops() if op.kind == OpKind.LOAD and op.mem.space != Space.SHARED]
    n_sectors = 0
    for t, i, op in copies:
        lanes = t.active[i].reshape(t.n_ctas, W)
        assert np.all(lanes[:, 0] == 1) and np.all(lanes[:, 1:] == 0)       # one thread of warp 0 issues it
        per_warp = op.mem.sectors_per_warp().reshape(t.n_ctas, W)
        assert np.all(per_warp[:, 1:] == 0)
        n_sectors += int(per_warp.sum())
    # 4 boxes of 16 rows x 32 fp32 of a (70, 48) fp32 array (device allocations are 4 KB aligned): row r covers
    # bytes [192 r, 192 r + 128), i.e. exactly the 32 B sectors that range touches
    expect = sum((192 * r + 127) // 32 - (192 * r) // 32 + 1 for r in range(64))
    assert n_sectors == expect == 256
    waits = [op for _, _, op in tr.iter_ops() if op.kind == OpKind.ASYNC_WAIT]
    assert waits and all(op.label.startswith("SYNCS.PHASECHK") for op in waits)


def test_descriptor_sectors_are_the_in_bounds_box():
    # the boxes past the tensor's end fetch only their in-bounds rows and columns
    _, meta, _, tr = _run_case("copy_clip", trace=True)
    loads = [op for _, _, op in tr.iter_ops() if op.kind == OpKind.ASYNC_COPY]
    stores = [op for _, _, op in tr.iter_ops() if op.kind == OpKind.STORE and op.mem.space == Space.GLOBAL]
    assert len(stores) == len(loads) and all(op.label.startswith("UTMASTG") for op in stores)
    got = sum(int(op.mem.bytes_requested) for op in loads)
    assert got == 37 * 40 * 4                                          # exactly the descriptor's elements, once
    assert sum(int(op.mem.bytes_requested) for op in stores) == 37 * 40 * 4


def test_descriptor_loads_in_a_loop_are_pipelined_and_feed_wgmma_from_shared():
    rng = np.random.default_rng(1)
    M = N = 256
    K = 256
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    gtriton.set_allocator(lambda size, align, stream: np.empty(size, np.int8))
    tr = trace_launch(TK.desc_matmul_kernel, (2, 2), [a, b, c, M, N, K],
                      dict(BM=128, BN=128, BK=64, num_warps=4, num_stages=3))
    ref = (a.astype(np.float32) @ b.astype(np.float32).T).astype(np.float16)
    assert np.abs(c.astype(np.float32) - ref.astype(np.float32)).max() <= 0.125
    t = tr.tables[0]
    kinds = [op.kind for op in t.ops]
    first_mma = kinds.index(OpKind.MMA)
    # the prologue issues num_stages - 1 = 2 iterations' boxes (A and B) before the first wgmma; iteration 0 issues
    # the boxes of iteration 2 after its wgmma (as Triton does); the wgmma reads both operands from the TMA buffers
    assert sum(1 for k in kinds[:first_mma] if k == OpKind.ASYNC_COPY) == 4
    assert sum(1 for k in kinds if k == OpKind.ASYNC_COPY) == 2 * (K // 64)
    mma = t.ops[first_mma]
    assert any(t.ops[d].kind == OpKind.ASYNC_WAIT for d in mma.deps)
    assert not [op for op in t.ops[:first_mma] if op.kind == OpKind.STORE]
    # 3 stages x (16 KB + 16 KB) of boxes + 3 mbarriers: Triton 3.6's metadata.shared for this kernel is 98328
    assert tr.shared_bytes_per_cta == 98328
    from gpusim.timing.engine import run
    assert run(tr).cycles > 0


# ---- the tutorials ---------------------------------------------------------------------------------------------
# Triton's tutorial files are not part of this repository (code fetched from other repositories is not committed
# here, and no installable package ships them): put 06-fused-attention.py / 09-persistent-matmul.py, with a
# numpy launch(), as kernels/tut06_fused_attention.py / kernels/tut09_persistent_matmul.py to run these.


def _tutorial(stem):
    path = ROOT / "kernels" / f"{stem}.py"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in this checkout (see the note above)")
    return _load(path, stem)

@pytest.mark.parametrize("causal", [False, True])
def test_tutorial06_fused_attention_forward(causal):
    from gpusim.api import simulate_launch
    m = _tutorial("tut06_fused_attention")
    L = m.launch(Z=1, H=2, N_CTX=256, HEAD_DIM=64, causal=causal)
    simulate_launch(L, "h100")
    o, ref = L["buffers"]["o"], L["reference"]()["o"]
    assert np.abs(o.astype(np.float32) - ref.astype(np.float32)).max() <= 1e-2
    Mv, Mref = L["steps"][0]["args"][1], L["reference"]()[(0, 1)]
    np.testing.assert_allclose(Mv, Mref, atol=1e-3)


def test_tutorial09_persistent_matmul():
    from gpusim.api import simulate_launch
    m = _tutorial("tut09_persistent_matmul")
    L = m.launch(M=512, N=512, K=512)
    reps = simulate_launch(L, "h100")
    assert len(reps) == 5
    for k, v in L["reference"]().items():
        if isinstance(k, str):
            out = L["buffers"][k]
            assert np.abs(out.astype(np.float32) - v.astype(np.float32)).max() <= 1.0
            continue
        out = L["steps"][k[0]]["args"][k[1]]
        assert np.abs(out.astype(np.float32) - v.astype(np.float32)).max() <= 1.0
    by_name = {r.trace.name: r for r in reps}
    # Triton 3.6's metadata.shared for matmul_kernel_descriptor_persistent (128x128x64, 2 stages, subtiled
    # epilogue): 2 x (16 KB + 16 KB) boxes + the 16 KB store staging + 2 mbarriers
    assert by_name["matmul_kernel_descriptor_persistent"].trace.shared_bytes_per_cta == 81936
    tma = [r for r in reps if "tma" in r.trace.name or "descriptor" in r.trace.name]
    assert tma and all(any(op.kind == OpKind.ASYNC_COPY and op.label.startswith("UTMALDG")
                           for _, _, op in r.trace.iter_ops()) for r in tma)


def test_descriptors_made_in_the_kernel_against_the_h100_record():
    """tl.make_tensor_descriptor in the kernel (tut_persistent_mm_desc_1024, full size), held to its ncu record:
    each of the 3 descriptors is copied to the global scratch by one 32-lane ATOMG of warp 0 (4 sectors a program
    and descriptor: the record's l1tex atom sectors), the TMA copies pass no LSU pipe (the record counts 0 global
    load and store requests and sectors), the other warps run the guards around the thread-0 field writes, and the
    instructions executed are within 15% of the record (the tile prologue is leaner than ptxas': DEVIATIONS.md)."""
    from gpusim.api import launch_steps, trace_kernel
    from gpusim.config import load_gpu
    from gpusim.metrics import trace_counts
    from gpusim.validate import records, suite
    case = suite.case_by_name("tut_persistent_mm_desc_1024")
    st = launch_steps(suite.load_case(case))[0]
    tr = trace_kernel(st["kernel"], st["grid"], *st["args"], gpu=load_gpu("h100"), **st.get("meta", {}))
    m = records.kernel_metrics(case.name)[0]
    c = trace_counts(tr)
    for key, metric in (("gld_req", "requests_pipe_lsu_mem_global_op_ld"),
                        ("gld_sectors", "sectors_pipe_lsu_mem_global_op_ld"),
                        ("gst_req", "requests_pipe_lsu_mem_global_op_st"),
                        ("gst_sectors", "sectors_pipe_lsu_mem_global_op_st")):
        assert c[key] == m[f"l1tex__t_{metric}.sum"] == 0, key
    src = (ROOT / case.kernel_file).read_text().splitlines()
    made = {i + 1 for i, ln in enumerate(src) if "= tl.make_tensor_descriptor(" in ln}
    assert len(made) == 3
    atom_sectors = 0
    per_warp = np.zeros(tr.warps_per_cta)
    for t, i, op in tr.iter_ops():
        warps = np.ones(t.n_warps, bool) if t.active is None else t.active[i] > 0
        if op.kind == OpKind.ATOMIC:
            assert warps.reshape(-1, tr.warps_per_cta)[:, 1:].sum() == 0          # warp 0 alone
            atom_sectors += int(np.unpackbits(op.mem.smask.astype(np.uint8)[:, None], axis=1)[:, 4:].sum())
        if op.line in made:
            per_warp += op.n_inst * warps.reshape(-1, tr.warps_per_cta).sum(axis=0)
    assert atom_sectors == m["l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum"] == 768
    per_warp /= tr.n_ctas
    assert per_warp[0] > 3 * 80 and np.all((per_warp[1:] >= 3 * 24) & (per_warp[1:] <= 3 * 34)), per_warp
    e = c["inst"] / m["smsp__inst_executed.sum"] - 1
    assert abs(e) <= 0.15, f"{100 * e:+.1f}%"
