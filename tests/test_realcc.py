"""The real compilers in the loop (gpusim.compilers): registers and shared memory from Triton's pipeline and from
numba-cuda + ptxas, compiled on this host for sm_90 without a GPU, equal what cuobjdump reads from the cubin and
what the committed compile record (records/compile_sm90_local.json, read with cuobjdump) says; the cache, the
switch, the report line and rejected kernels.

The rest of the suite runs with GPUSIM_COMPILER=builtin (conftest.py); these tests opt into the real compiler.
Each test gets an empty cache directory (GPUSIM_CACHE_DIR) unless it shares the module's.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpusim import compilers
from gpusim.compilers import _tools
from gpusim.errors import CompileError, UsageError

ROOT = Path(__file__).resolve().parent.parent
RECORD = json.loads((ROOT / "gpusim/validate/records/compile_sm90_local.json").read_text())

try:
    import triton
    TRITON = None
except ImportError as e:                                    # pragma: no cover - Triton is a test dependency here
    triton, TRITON = None, f"Triton is not installed ({e}): the real Triton compiler cannot run"
needs_triton = pytest.mark.skipif(TRITON is not None, reason=TRITON or "")


def _record(case, step=0):
    return RECORD["cases"][case]["kernels"][step]


def _cuobjdump(cubin_file) -> dict:
    out = subprocess.run([_tools.tool("cuobjdump"), "--dump-resource-usage", cubin_file], capture_output=True,
                         text=True, check=True).stdout
    import re
    return {k: int(re.search(rf"\b{k}:(\d+)", out).group(1)) for k in ("REG", "SHARED", "LOCAL")}


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("gpusim-cache")


@pytest.fixture
def shared_cache(cache_root, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(cache_root))
    compilers.clear_memory_cache()
    return cache_root / "compile"


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path))
    compilers.clear_memory_cache()
    return tmp_path / "compile"


def _load(name):
    from gpusim.cli import load_kernel_file
    return load_kernel_file(str(ROOT / "kernels" / name))


def _triton_trace(launch, mode="real"):
    from gpusim.triton import trace_launch
    with compilers.use(mode):
        return trace_launch(launch["kernel"], launch["grid"], launch["args"], launch["meta"])


def _cuda_trace(launch, mode="real"):
    from gpusim.cuda import trace_launch
    with compilers.use(mode):
        return trace_launch(launch["kernel"], launch["grid"], launch["block"], launch["args"],
                            shared_bytes=launch.get("shared_bytes", 0))


# ---- Triton ---------------------------------------------------------------------------------------------------

@needs_triton
def test_triton_vector_add_registers_equal_cuobjdump(shared_cache):
    tr = _triton_trace(_load("tl_vector_add.py").launch(n=4096))
    c = tr.meta["compiler"]
    assert c["used"] == "real" and c["label"] == f"triton {triton.__version__}, sm_90a"
    cubin = next(shared_cache.glob("*.cubin"))
    ru = _cuobjdump(str(cubin))
    assert c["registers"] == ru["REG"] == _record("tl_vector_add_n4096")["n_regs"] == 20
    assert tr.regs_per_thread == 20                      # the trace (occupancy) uses it
    assert c["shared_bytes"] == tr.shared_bytes_per_cta == _record("tl_vector_add_n4096")["shared_bytes"] == 0
    assert tr.meta["registers"]["estimate"] != 20 or tr.meta["registers"]["compiled"] == 20
    # the SASS read back: 16-byte vector loads and stores (fp16 x 8), attributed to the kernel's lines
    sass = json.loads(next(shared_cache.glob("*.json")).read_text())["sass"]
    assert sass["mem_widths"] == {"LDG": {"128": 2}, "STG": {"128": 1}}
    first = compilers.def_line(_load("tl_vector_add.py").add_kernel.fn)
    assert {int(k) for k in sass["lines"]} <= set(range(first, first + 8))


@needs_triton
def test_triton_matmul_config_registers_and_shared_memory(shared_cache):
    """A 64x64x32 fp16 matmul config (4 warps, 4 stages): registers equal cuobjdump's and the record's;
    shared memory equals Triton's metadata.shared in the record (4 stages x (64x32 + 32x64) x 2 B)."""
    launch = _load("tl_matmul.py").launch(M=128, N=128, K=128, BM=64, BN=64, BK=32, num_warps=4, num_stages=4)
    tr = _triton_trace(launch)
    c = tr.meta["compiler"]
    rec = _record("tl_matmul_1408_64x64x32")
    assert (rec["num_warps"], rec["num_stages"]) == (4, 4)
    cubins = sorted(shared_cache.glob("*.cubin"), key=os.path.getmtime)
    assert c["registers"] == _cuobjdump(str(cubins[-1]))["REG"] == rec["n_regs"] == 60
    assert c["shared_bytes"] == tr.shared_bytes_per_cta == rec["shared_bytes"] == 4 * (64 * 32 + 32 * 64) * 2
    assert tr.regs_per_thread == 60
    assert c["spill_store_bytes"] == 0


@needs_triton
def test_triton_specialization_matches_gpusims_assumption(fresh_cache):
    """Triton's binder decides divisibility by 16 from the values gpusim gives it: n = 4096 and aligned pointers
    are divisible, n = 1000 is not, a pointer one fp16 element into its array is not; gpusim assumes the same
    (no note), and the register counts differ as the SASS does (scalar loads for the unaligned pointer)."""
    mod = _load("tl_vector_add.py")
    from gpusim.triton import trace_launch
    x = np.ones(1001, np.float16)
    y = np.ones(1000, np.float16)
    out = np.zeros(1000, np.float16)
    with compilers.use("real"):
        tr = trace_launch(mod.add_kernel, (1,), [x[1:], y, out, 1000], {"BLOCK": 1024})
    res = compilers._cache.load(next(fresh_cache.glob("*.json")).stem)
    assert res.signature["divisibility_16"] == ["out_ptr", "y_ptr"]
    assert not any("specialized" in n for n in tr.notes)
    assert res.sass["mem_widths"]["LDG"].get("16", 0) >= 8    # x: 16-bit loads, one element each


# ---- numba-cuda -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def numba_ok(tmp_path_factory):
    """Skip when numba-cuda cannot compile here (not installed, or libnvvm / libnvrtc missing), with the reason."""
    pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")
    from gpusim.compilers import NumbaRequest, _numba

    def k(a):
        a[0] = 1.0
    old = os.environ.get("GPUSIM_CACHE_DIR")
    os.environ["GPUSIM_CACHE_DIR"] = str(tmp_path_factory.mktemp("probe"))
    try:
        _numba.available()
        compilers.compile_for(NumbaRequest(k, [["array", np.dtype(np.float32), 1, "C"]], {}, (9, 0), "k"), "real")
    except compilers.CompilerUnavailable as e:
        pytest.skip(str(e))
    finally:
        if old is None:
            os.environ.pop("GPUSIM_CACHE_DIR", None)
        else:
            os.environ["GPUSIM_CACHE_DIR"] = old
    return True


def test_numba_matmul_tiled_registers_and_shared_memory(numba_ok, shared_cache):
    tr = _cuda_trace(_load("matmul_tiled.py").launch(n=64))
    c = tr.meta["compiler"]
    assert c["used"] == "real" and c["label"].startswith("numba-cuda ") and c["label"].endswith(", sm_90")
    cubins = sorted(shared_cache.glob("*.cubin"), key=os.path.getmtime)
    ru = _cuobjdump(str(cubins[-1]))
    assert c["registers"] == ru["REG"] == _record("matmul_tiled_n256")["n_regs"] == 32
    # two 16 x 16 fp32 tiles; cuobjdump's SHARED adds the 1 KB sm_90 reserves per CTA that uses shared memory
    assert c["shared_bytes"] == tr.shared_bytes_per_cta == 2 * 16 * 16 * 4 == ru["SHARED"] - 1024
    assert tr.regs_per_thread == 32


def test_numba_small_kernel_gets_the_16_register_floor(numba_ok, shared_cache):
    """ptxas gives vector_add 15 registers (the record's cuobjdump count); 16 are allocated (Nsight's
    launch__registers_per_thread in records/ncu_1of2.json), as the estimate's floor."""
    tr = _cuda_trace(_load("vector_add.py").launch(n=1024))
    assert tr.meta["compiler"]["registers"] == _record("vector_add_n1024")["n_regs"] == 15
    assert tr.regs_per_thread == 16


def test_numba_rejected_kernel(numba_ok, fresh_cache, tmp_path):
    """cuda.atomic.max on int8: numba has no such atomic.  Every mode: an error at the call's line."""
    f = tmp_path / "nb_atomic_i8.py"
    f.write_text(textwrap.dedent('''
        import numpy as np
        from numba import cuda


        @cuda.jit
        def k(a, out):
            i = cuda.grid(1)
            if i < a.size:
                cuda.atomic.max(out, 0, a[i])


        def launch():
            a = np.arange(64, dtype=np.int8)
            out = np.zeros(1, np.int8)
            return {"kernel": k, "grid": (1,), "block": (64,), "args": [a, out]}
        '''))
    from gpusim.cli import load_kernel_file
    launch = load_kernel_file(str(f)).launch()
    with pytest.raises(CompileError) as ei:
        _cuda_trace(launch, "real")
    assert f"{f}:10" in str(ei.value) and "numba-cuda" in str(ei.value) and "atomic.max" in str(ei.value)
    # gpusim's own front end is as strict (numba-cuda's atomic typing), so auto and builtin refuse it too
    for mode in ("auto", "builtin"):
        with pytest.raises(CompileError) as ei:
            _cuda_trace(launch, mode)
        assert f"{f}:10" in str(ei.value) and "atomic.max" in str(ei.value) and "int8" in str(ei.value)


# ---- the cache ----------------------------------------------------------------------------------------------

@needs_triton
def test_cache_hit_on_second_call_and_corrupt_entry_recompiled(fresh_cache):
    launch = _load("tl_vector_add.py").launch(n=4096)
    s0 = dict(compilers.STATS)
    _triton_trace(launch)
    assert compilers.STATS["compiles"] == s0["compiles"] + 1
    entries = list(fresh_cache.glob("*.json"))
    assert len(entries) == 1
    compilers.clear_memory_cache()                       # a new process: only the disk cache is left
    tr = _triton_trace(launch)
    assert compilers.STATS["compiles"] == s0["compiles"] + 1 and compilers.STATS["disk_hits"] == s0["disk_hits"] + 1
    assert tr.meta["compiler"]["registers"] == 20
    entries[0].write_text('{"compiler": "triton", "registers": ')     # truncated
    compilers.clear_memory_cache()
    tr = _triton_trace(launch)
    assert compilers.STATS["compiles"] == s0["compiles"] + 2
    assert tr.meta["compiler"]["registers"] == 20
    assert json.loads(entries[0].read_text())["registers"] == 20   # rewritten


@needs_triton
def test_cache_key_follows_source_and_specialization(fresh_cache):
    from gpusim.compilers import TritonRequest, _cache, _triton
    mod = _load("tl_vector_add.py")
    base = dict(fn=mod.add_kernel.fn, params=[("ptr", "fp16", 4096), ("ptr", "fp16", 8192), ("ptr", "fp16", 12288),
                                              ("int", 4096), ("constexpr", 1024)],
                options={"num_warps": 4, "num_stages": 3}, capability=(9, 0), name="add_kernel")
    k0 = _cache.key(_triton.key_parts(TritonRequest(**base)))
    assert k0 == _cache.key(_triton.key_parts(TritonRequest(**base)))
    for change in ({"params": base["params"][:3] + [("int", 4097), ("constexpr", 1024)]},
                   {"options": {"num_warps": 8, "num_stages": 3}}, {"capability": (8, 0)}):
        assert _cache.key(_triton.key_parts(TritonRequest(**{**base, **change}))) != k0


def test_cache_dir_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "a"))
    assert compilers.cache_dir() == tmp_path / "a" / "compile"
    monkeypatch.delenv("GPUSIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert compilers.cache_dir() == tmp_path / "x" / "gpusim" / "compile"


# ---- the switch, the report --------------------------------------------------------------------------------

@needs_triton
def test_report_says_which_compiler(shared_cache):
    import gpusim
    mod = _load("tl_vector_add.py")
    L = mod.launch(n=4096)
    real = gpusim.simulate(L["kernel"], L["grid"], *L["args"], compiler="real", progress=False, **L["meta"])
    assert f"compiler: triton {triton.__version__}, sm_90a" in str(real).splitlines()[1]
    built = gpusim.simulate(L["kernel"], L["grid"], *L["args"], compiler="builtin", progress=False, **L["meta"])
    assert str(built).splitlines()[1] == "compiler: built-in estimate"
    assert built["registers_per_thread"] == built.context["trace_meta"]["registers"]["estimate"]
    assert real["registers_per_thread"] == 20


@needs_triton
def test_builtin_switch_honored(monkeypatch, fresh_cache, capsys):
    """GPUSIM_COMPILER=builtin (and --compiler builtin) compile nothing; --compiler real overrides the env."""
    from gpusim.cli import main
    monkeypatch.setenv("GPUSIM_COMPILER", "builtin")
    s0 = dict(compilers.STATS)
    tr = _triton_trace(_load("tl_vector_add.py").launch(n=4096), mode=None)
    assert tr.meta["compiler"] == {"label": "built-in estimate", "mode": "builtin", "used": "builtin"}
    assert compilers.STATS == s0 and not list(fresh_cache.glob("*"))
    f = str(ROOT / "kernels" / "tl_vector_add.py")
    assert main(["run", f, "-p", "n=4096", "--compiler", "builtin"]) == 0
    assert "compiler: built-in estimate" in capsys.readouterr().out
    assert compilers.STATS == s0
    assert main(["run", f, "-p", "n=4096", "--compiler", "real"]) == 0
    assert f"compiler: triton {triton.__version__}, sm_90a" in capsys.readouterr().out


def test_bad_mode_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv("GPUSIM_COMPILER", "fast")
    with pytest.raises(UsageError, match="GPUSIM_COMPILER=fast: unknown compiler mode 'fast'"):
        compilers.mode()
    from gpusim.cli import main
    assert main(["run", str(ROOT / "kernels" / "tl_vector_add.py"), "--compiler", "fast"]) == 2
    assert "invalid choice: 'fast'" in capsys.readouterr().err


LIBDEVICE_BY_NAME = textwrap.dedent('''
    import numpy as np
    import triton
    import triton.language as tl
    from triton.language.extra.libdevice import tanh
    from triton.language.extra import libdevice


    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(out_ptr + offs, tanh(x) + libdevice.abs(x) + libdevice.pow(x, 2.0), mask=offs < n)


    def launch():
        x = np.linspace(-2, 2, 1000).astype(np.float32)
        return {"kernel": k, "grid": (4,), "args": [x, np.zeros(1000, np.float32), 1000], "meta": {"BLOCK": 256}}
    ''')


@needs_triton
def test_libdevice_functions_imported_by_name_reach_the_real_compiler(fresh_cache, tmp_path):
    """``from triton.language.extra.libdevice import tanh`` (Liger-Kernel, unsloth): the kernel's globals are gpusim's
    libdevice functions, which the real compiler gets as Triton's own -- it compiles, and the registers are its."""
    f = tmp_path / "tl_libdevice_names.py"
    f.write_text(LIBDEVICE_BY_NAME)
    from gpusim.cli import load_kernel_file
    launch = load_kernel_file(str(f)).launch()
    tr = _triton_trace(launch, "real")
    assert tr.meta["compiler"]["used"] == "real", tr.meta["compiler"]
    assert tr.regs_per_thread == tr.meta["registers"]["compiled"] > 0
    x = launch["args"][0]
    want = np.tanh(x) + np.abs(x) + x * x
    np.testing.assert_allclose(launch["args"][1], want, rtol=1e-5, atol=1e-5)


CONSTEXPR_DEFAULT_KERNEL = textwrap.dedent('''
    import numpy as np
    from gpusim import triton
    from gpusim.triton import language as tl

    MODE_DOUBLE: tl.constexpr = tl.constexpr(0)
    MODE_COPY: tl.constexpr = tl.constexpr(3)


    @triton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr, mode: tl.constexpr = MODE_COPY):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        if mode == MODE_DOUBLE:
            x = x * 2
        tl.store(out_ptr + offs, x)


    def launch():
        x = np.arange(64, dtype=np.float32)
        return {"kernel": k, "grid": (1,), "args": [x, np.zeros(64, np.float32)], "meta": {"BLOCK": 64}}
    ''')


@needs_triton
def test_a_module_constexpr_as_a_parameters_default_reaches_the_real_compiler(fresh_cache, tmp_path):
    """``reduction: tl.constexpr = _REDUCTION_MODE_BATCHMEAN`` (Liger-Kernel's kl_div / tvd): a global named only in
    a default value is Triton's constexpr for the real compiler too (it refused gpusim's: "Unsupported function
    referenced: constexpr[3]"), and the default itself is Triton's. The kernel is gpusim's (as under ``gpusim run``
    of a script)."""
    f = tmp_path / "tl_constexpr_default.py"
    f.write_text(CONSTEXPR_DEFAULT_KERNEL)
    from gpusim.cli import load_kernel_file
    launch = load_kernel_file(str(f)).launch()
    tr = _triton_trace(launch, "real")
    assert tr.meta["compiler"]["used"] == "real", tr.meta["compiler"]
    np.testing.assert_array_equal(launch["args"][1], launch["args"][0])


SAME_NAME_HELPER_KERNEL = textwrap.dedent('''
    import numpy as np
    from gpusim import triton
    from gpusim.triton import language as tl


    @triton.jit
    def exp(x): return tl.exp(x.to(tl.float32))


    @triton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, exp(tl.load(x_ptr + offs)))


    def launch():
        x = np.linspace(-2, 2, 64).astype(np.float32)
        return {"kernel": k, "grid": (1,), "args": [x, np.zeros(64, np.float32)], "meta": {"BLOCK": 64}}
    ''')


@needs_triton
def test_a_helper_named_as_the_tl_function_it_calls_reaches_the_real_compiler(fresh_cache, tmp_path):
    """fla's ``def exp(x): return tl.exp(x.to(tl.float32))``: the helper's code object names ``exp`` (the attribute),
    which is the helper itself among the module's globals; rebinding it for the real compiler must not recurse
    (it did: "RecursionError: maximum recursion depth exceeded", and the built-in estimate was used)."""
    f = tmp_path / "tl_same_name_helper.py"
    f.write_text(SAME_NAME_HELPER_KERNEL)
    from gpusim.cli import load_kernel_file
    launch = load_kernel_file(str(f)).launch()
    tr = _triton_trace(launch, "real")
    assert tr.meta["compiler"]["used"] == "real", tr.meta["compiler"]
    np.testing.assert_allclose(launch["args"][1], np.exp(launch["args"][0]), rtol=1e-6)


LOOP_TYPE_KERNEL = textwrap.dedent('''
    import numpy as np
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.int32)
        for i in range(4):
            acc = acc + tl.load(x_ptr + i * BLOCK + offs)
        tl.store(out_ptr + offs, acc)


    def launch():
        x = np.ones(256, np.float32)
        return {"kernel": k, "grid": (1,), "args": [x, np.zeros(64, np.float32)], "meta": {"BLOCK": 64}}
    ''')


@needs_triton
def test_triton_rejected_kernel_is_refused_at_the_loop_line_as_triton_does(fresh_cache, tmp_path):
    """A loop-carried accumulator that changes type (int32 -> fp32): Triton's compiler rejects it at the loop's
    line; gpusim refuses it the same way in every compiler mode (the real compiler is not needed to know)."""
    f = tmp_path / "tl_loop_type.py"
    f.write_text(LOOP_TYPE_KERNEL)
    from gpusim.cli import load_kernel_file
    launch = load_kernel_file(str(f)).launch()
    for mode in ("real", "auto", "builtin"):
        with pytest.raises(CompileError) as ei:
            _triton_trace(launch, mode)
        msg = str(ei.value)
        assert msg.startswith(f"{f}:11, in kernel 'k': Loop-carried variable acc has initial type"), (mode, msg)
        assert "fp32" in msg


@needs_triton
def test_real_compiler_rejection_real_errors_auto_falls_back(fresh_cache, tmp_path, monkeypatch):
    """When the real compiler refuses a kernel gpusim accepts, ``real`` is that CompileError and ``auto`` uses the
    built-in estimate with a note saying why (the refusal is simulated here: gpusim accepts what Triton accepts)."""
    from gpusim.compilers import _triton as B
    from gpusim.cli import load_kernel_file
    launch = load_kernel_file(str(ROOT / "kernels" / "tl_vector_add.py")).launch(n=4096)

    def refuse(req):
        raise CompileError(f"Triton {triton.__version__} (sm_90a) rejects the kernel: out of resources",
                           file="k.py", line=3, kernel="add_kernel")
    monkeypatch.setattr(B, "compile", refuse)
    with pytest.raises(CompileError, match="rejects the kernel: out of resources"):
        _triton_trace(launch, "real")
    tr = _triton_trace(launch, "auto")
    assert tr.meta["compiler"]["used"] == "builtin"
    assert "rejects the kernel: out of resources" in tr.meta["compiler"]["fallback_reason"]
    assert any(n.startswith("compiler: the real compiler was not used") for n in tr.notes)


@needs_triton
def test_real_mode_without_triton_is_a_clear_error(monkeypatch, fresh_cache):
    """Triton missing: real mode raises CompilerUnavailable (the CLI's one-line error), auto falls back."""
    from gpusim.compilers import _triton
    monkeypatch.setattr(_triton, "_STATE", {"error": "Triton is not importable (ImportError: no module)"})
    launch = _load("tl_vector_add.py").launch(n=4096)
    with pytest.raises(compilers.CompilerUnavailable, match="Triton is not importable"):
        _triton_trace(launch, "real")
    tr = _triton_trace(launch, "auto")
    assert tr.meta["compiler"]["fallback_reason"] == "Triton is not importable (ImportError: no module)"


# ---- reading the tools' output (no compiler needed) ----------------------------------------------------------

PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Function properties for __internal_1_$__cuda_sm3x_div_rn_noftz_f32_slowpath
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'matmul_kernel' for 'sm_90a'
ptxas info    : Function properties for matmul_kernel
    24 bytes stack frame, 20 bytes spill stores, 28 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 11.791 ms
"""

NVDISASM = """
        .text.k:
	//## File "/src/k.py", line 21
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File "/src/k.py", line 24
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/              @!P0 LDG.E.U16 R8, desc[UR4][R2.64] ;
        /*0030*/                   FFMA R9, R4, R5, R6 ;
	//## File "/lib/helpers.py", line 7 inlined at "/src/k.py", line 30
        /*0040*/                   MUFU.RCP R10, R9 ;
        /*0050*/                   IMAD.WIDE R2, R0, 0x4, R2 ;
	//## File "/src/k.py", line 31
        /*0060*/                   STG.E desc[UR4][R2.64], R10 ;
        /*0070*/                   EXIT ;
        /*0080*/                   BRA 0x80;
        /*0090*/                   NOP;
"""


def test_ptxas_log_reading():
    """The entry function's numbers, not a helper's; every field from its line."""
    r = _tools.parse_ptxas_log(PTXAS_LOG)
    assert r == {"registers": 255, "barriers": 1, "smem": 2048, "stack_bytes": 24, "spill_store_bytes": 20,
                 "spill_load_bytes": 28}
    with pytest.raises(ValueError):
        _tools.parse_ptxas_log("ptxas info    : 0 bytes gmem\n")


def test_sass_reading_per_line_pipe_and_width():
    from gpusim.compilers import _sass
    s = _sass.summarize(NVDISASM, "/src/k.py")
    assert s["total"] == 10 and s["total_no_nop"] == 9
    assert s["lines"] == {"21": {"LDC": 1}, "24": {"LDG.E.128": 1, "LDG.E.U16": 1, "FFMA": 1},
                          "30": {"MUFU.RCP": 1, "IMAD.WIDE": 1}, "31": {"STG.E": 1, "EXIT": 1, "BRA": 1, "NOP": 1}}
    assert s["mem_widths"] == {"LDG": {"128": 1, "16": 1}, "STG": {"32": 1}}
    assert s["per_pipe"] == {"fp32": 2, "sfu": 1, "lsu": 3, "branch": 2, "uniform": 1, "other": 1}
    assert _sass.pipe_of("F2F.F64.F32") == "fp64" and _sass.pipe_of("ULDC.64") == "uniform"
    assert _sass.pipe_of("HGMMA.64x128x16.F32") == "tensor" and _sass.pipe_of("LOP3.LUT") == "int"


NVDISASM_LOOPS = """
	//## File "/src/k.py", line 10
        /*0000*/                   STL [R1+0x4], R2 ;
        /*0010*/                   STL.64 [R1+0x8], R4 ;
.L_x_0:
	//## File "/src/k.py", line 12
        /*0020*/                   LDL R2, [R1+0x4] ;
.L_x_1:
	//## File "/src/k.py", line 14
        /*0030*/                   LDL.LU.64 R4, [R1+0x8] ;
        /*0040*/                   STL.S16 [R1+0x10], R6 ;
        /*0050*/                   FFMA R7, R4, R5, R7 ;
	//## File "/src/k.py", line 13
        /*0060*/               @P1 BRA `(.L_x_1) ;
	//## File "/src/k.py", line 12
        /*0070*/                   STL [R1+0x4], R2 ;
        /*0080*/                   LDL R3, [R1+0xc] ;
        /*0090*/               @P0 BRA `(.L_x_0) ;
	//## File "/src/k.py", line 20
        /*00a0*/                   LDL R2, [R1+0x4] ;
        /*00b0*/                   EXIT ;
.L_x_2:
        /*00c0*/                   BRA `(.L_x_2);
"""


def test_sass_loops_and_their_local_memory():
    """Each backward branch closes a loop (the trap after EXIT, a branch to itself, is none); a loop's LDL/STL are
    its own body's (the inner loop's are not the outer's), by width; those in no loop are apart."""
    from gpusim.compilers import _sass
    s = _sass.summarize(NVDISASM_LOOPS, "/src/k.py")
    loops = sorted(s["loops"], key=lambda d: d["first"])
    assert [(d["line"], d["first"], d["last"]) for d in loops] == [(12, 0x20, 0x90), (13, 0x30, 0x60)]
    outer, inner = loops
    assert inner["parent"] == s["loops"].index(outer) and outer["parent"] == -1
    assert inner["instructions"] == 4 and inner["local"] == {"LDL": {"64": 1}, "STL": {"16": 1}}
    assert outer["instructions"] == 4 and outer["local"] == {"LDL": {"32": 2}, "STL": {"32": 1}}
    assert s["local_outside"] == {"STL": {"32": 1, "64": 1}, "LDL": {"32": 1}}
    # the warp waits where an instruction reads a reloaded register (FFMA R4; STL of R2), and at the end for a
    # reload still in flight (LDL R3 before the back edge; LDL R2 before EXIT)
    assert (inner["reload_waits"], outer["reload_waits"], s["reload_waits_outside"]) == (1, 2, 1)


def test_spill_accesses_are_interleaved_lines_of_the_warps_frame():
    """A full warp's 32-bit LDL is one 128 B line (4 sectors), a 64-bit one two lines, a 16-bit STL two sectors;
    the k-th instruction takes the frame words after the (k-1)-th's, wrapping round the frame; program p uses the
    frames of CTA slot p mod slots (one frame of stack_bytes * 32 B per warp)."""
    from gpusim.triton._lower_spill import LOCAL_BASE, SpillPlan
    from gpusim.trace import Space
    plan = SpillPlan({"loops": [], "local_outside": {}}, stack_bytes=64, slots=3)     # 16 words a frame
    widths = plan.widths({"32": 20, "64": 2})
    assert widths == [64] * 2 + [32] * 20
    acc = plan.access(widths, first_program=2, P=2, W=4)
    assert acc.space == Space.LOCAL
    per = np.diff(acc.ptr)
    assert per.tolist() == [24] * 8                     # 2 x 2 lines + 20 x 1 line per warp
    base = LOCAL_BASE // 128
    w0 = acc.line[:24] - base                           # program 2, warp 0: slot 2 -> frame 2 * 4 + 0
    assert w0[0] == 8 * 16 and (w0 - 8 * 16).tolist() == [0, 1, 2, 3] + list(range(4, 16)) + list(range(0, 8))
    w4 = acc.line[4 * 24:5 * 24] - base                 # program 3 -> slot 0: the first program's frames
    assert w4[0] == 0
    assert (acc.smask == 0xF).all() and acc.bytes_requested == 24 * 4 * 32 * 8
    acc16 = plan.access([16] * 3, 0, 1, 1, word=15)          # from the frame's last word on, wrapping
    assert acc16.smask.tolist() == [0x3] * 3 and acc16.bytes_requested == 3 * 2 * 32
    assert (acc16.line - base).tolist() == [15, 0, 1]
    assert plan.access([], 0, 1, 1) is None


@needs_triton
def test_register_spills_are_traced_per_loop_iteration(fresh_cache):
    """A matmul held to 64 registers per thread (``maxnreg``) spills; the trace carries, per warp, the SASS loop's
    LDL/STL once per iteration of its ``for`` (ceil(200 / 32) = 7) plus those outside the loop once, and they
    make the kernel slower than the same launch without its spills in the trace."""
    from gpusim import simulate
    from gpusim.triton import _lower_spill
    launch = _load("tl_matmul.py").launch(M=200, N=200, K=200, BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
    meta = dict(launch["meta"], maxnreg=64)
    tr = _triton_trace(dict(launch, meta=meta))
    sp = tr.meta["spills"]
    assert tr.regs_per_thread == 64 and tr.local_bytes_per_thread == sp["frame_bytes"] > 0
    (loop_line, per_it), = sp["per_iteration"].items()
    src = (ROOT / "kernels" / "tl_matmul.py").read_text().splitlines()
    assert src[int(loop_line) - 1].strip().startswith("for kk in range(")
    total = {b: sum(int(n) for n in per_it.get(b, {}).values()) * 7
             + sum(int(n) for n in sp["outside"].get(b, {}).values()) for b in ("LDL", "STL")}
    assert total["LDL"] > 0 and total["STL"] > 0
    got = {"LDL": 0, "STL": 0}
    for t in tr.tables:
        for o in t.ops:
            if o.label.endswith("(spill)"):
                got[o.label[:3]] += o.n_inst * t.n_ctas
                assert o.mem.space.name == "LOCAL"
    assert got == {b: total[b] * tr.grid[0] for b in got}
    assert any("traced as local-memory traffic from the SASS" in n for n in tr.notes)
    # Nsight's local requests are 128 B lines (an LDL.64 of a full warp is two)
    def count(per_inst):
        return {b: sum(int(n) * per_inst(int(bits)) for bits, n in per_it.get(b, {}).items()) * 7
                + sum(int(n) * per_inst(int(bits)) for bits, n in sp["outside"].get(b, {}).items())
                for b in ("LDL", "STL")}
    lines = count(lambda bits: max(1, bits // 32))
    sectors = count(lambda bits: 4 * (bits // 32) if bits >= 32 else bits // 8)
    with compilers.use("real"):
        rep = simulate(launch["kernel"], launch["grid"], *launch["args"], **meta)
        slow = rep.metrics["cycles"].value
        n_warps = tr.grid[0] * 4
        assert rep.metrics["local_ld_requests"].value == lines["LDL"] * n_warps
        assert rep.metrics["local_st_requests"].value == lines["STL"] * n_warps
        assert rep.metrics["local_ld_sectors"].value == sectors["LDL"] * n_warps
        assert rep.metrics["local_st_sectors"].value == sectors["STL"] * n_warps
        orig = _lower_spill.SpillPlan.of
        try:
            _lower_spill.SpillPlan.of = classmethod(lambda cls, *a: None)
            fast = simulate(launch["kernel"], launch["grid"], *launch["args"], **meta).metrics["cycles"].value
        finally:
            _lower_spill.SpillPlan.of = orig
    assert slow > fast * 1.1, (slow, fast)


# ---- scripts: their launches happen while gpusim's front ends stand in for triton / numba.cuda ------------------

SCRIPT_TRITON = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    DEVICE = triton.runtime.driver.active.get_active_torch_device()
    x = torch.rand(5000, device=DEVICE, dtype=torch.float16)
    y = torch.rand(5000, device=DEVICE, dtype=torch.float16)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(5000, 1024),)](x, y, out, 5000, BLOCK_SIZE=1024)
    assert torch.equal(out, x + y)
    try:
        import triton.backends          # the script itself still gets the stand-in's refusal
    except ImportError:
        print("REFUSED")
''')

SCRIPT_NUMBA = textwrap.dedent('''
    import numpy as np
    from numba import cuda

    @cuda.jit
    def axpy(a, x, y):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = a * x[i] + y[i]

    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    axpy[4, 256](np.float32(2.0), x, y)
    assert np.array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1)
    print("numba.cuda is", cuda.__name__)
''')


@needs_triton
def test_a_triton_script_gets_the_real_compiler(fresh_cache, tmp_path, capsys):
    """A tutorial-style script run unchanged (``gpusim run script.py``) launches inside the stand-in for triton;
    the compiler still compiles with the real Triton, and the stand-in stays in place for the script."""
    from gpusim.cli import main
    f = tmp_path / "add_script.py"
    f.write_text(SCRIPT_TRITON)
    assert main(["run", str(f), "--compiler", "real"]) == 0
    out = capsys.readouterr().out
    assert f"compiler: triton {triton.__version__}, sm_90a" in out and "REFUSED" in out
    assert compilers.STATS["compiles"] >= 1 and list(fresh_cache.glob("*.cubin"))
    import triton as after                                  # the real package is back after the script
    assert after is triton and not after.__name__.startswith("gpusim")
    assert hasattr(after, "compile")


def test_a_numba_script_gets_the_real_compiler(numba_ok, fresh_cache, tmp_path, capsys):
    from gpusim.cli import main
    f = tmp_path / "axpy_script.py"
    f.write_text(SCRIPT_NUMBA)
    assert main(["run", str(f), "--compiler", "real"]) == 0
    out = capsys.readouterr().out
    assert "numba.cuda is gpusim.cuda" in out                # the script ran on the stand-in ...
    assert "compiler: numba-cuda " in out and "compiler: built-in estimate" not in out   # ... compiled for real
    assert list(fresh_cache.glob("*.cubin"))
    import numba.cuda
    assert numba.cuda.__name__.startswith("numba") and hasattr(numba.cuda, "compile_ptx")


def test_a_kernel_built_by_a_factory_compiles_with_its_closure_rebound(numba_ok, fresh_cache):
    """``cuda.reduce``'s kernel refers to gpusim.cuda and its device functions through closure variables; the real
    compiler gets numba-cuda's (before: 'cuda.shared.array.targetoptions.get can only be used inside a kernel')."""
    from gpusim import cuda as gcuda
    from gpusim import session
    red = gcuda.reduce(lambda a, b: a + b)
    with compilers.use("real"), session() as s:
        total = red(np.arange(1000.0))
    assert total == pytest.approx(499500.0)
    assert s.reports and all(r.context["compiler"].startswith("numba-cuda ") for r in s.reports)
    assert all(r["registers_per_thread"] >= 16 for r in s.reports)


NUM_STAGES_PARAM = textwrap.dedent('''
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr, num_stages: tl.constexpr):
        for i in tl.range(tl.program_id(0), n, tl.num_programs(0), num_stages=num_stages):
            tl.store(x_ptr + i, i)
''')


@needs_triton
def test_a_kernel_parameter_named_like_a_launch_option_binds_the_parameter(fresh_cache, tmp_path):
    """Tutorial 02's kernel takes ``num_stages: tl.constexpr``: Triton binds the launch's ``num_stages`` to the
    parameter (the compile option keeps its default); gpusim's request passed it twice ('multiple values')."""
    from gpusim.cli import load_kernel_file
    f = tmp_path / "ns_kernel.py"
    f.write_text(NUM_STAGES_PARAM + "\n\ndef launch():\n    import numpy as np\n    x = np.zeros(100, np.float32)\n"
                 "    return {'kernel': k, 'grid': (4,), 'args': [x, 100], 'meta': {'BLOCK': 16, 'num_stages': 2}}\n")
    L = load_kernel_file(str(f)).launch()
    tr = _triton_trace(L, mode="real")
    c = tr.meta["compiler"]
    assert c["used"] == "real" and c["registers"] == _cuobjdump(str(next(fresh_cache.glob("*.cubin"))))["REG"]
