"""Constructs of Triton kernels copied verbatim from public repositories that gpusim had to learn (probe rounds
over vLLM, SGLang, FlagGems, fla, Triton's own tests ...): each reproduced by a small kernel of this file and
checked against numpy, or the exact error line Triton 3.6 gives."""
from __future__ import annotations

import inspect
import textwrap
import warnings

import numpy as np
import pytest

import gpusim.api  # noqa: F401  (the engine times autotune configs)
from gpusim import triton
from gpusim.errors import CompileError
from gpusim.triton import language as tl


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn.fn)
    for i, ln in enumerate(lines):
        if text in ln:
            return first + i
    raise AssertionError(text)


# ---- `if` on a one-element block: Triton 3.6 unsplats it with a warning ------------------------------------------

@triton.jit
def unsplat_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.program_id(0) + tl.arange(0, 1))
    if x > 0:
        tl.store(out_ptr + tl.program_id(0), 1)
    else:
        tl.store(out_ptr + tl.program_id(0), 2)


@triton.jit
def two_element_if_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 2))
    if x > 0:
        tl.store(out_ptr, 1)
    tl.store(out_ptr + 1, 2)


def test_if_on_a_one_element_block_is_its_element_with_tritons_warning():
    x = np.array([1.0, -1.0, 3.0, -2.0], np.float32)
    out = np.zeros(4, np.int32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        unsplat_kernel[(4,)](x, out)            # the programs disagree: masked lockstep
    np.testing.assert_array_equal(out, np.where(x > 0, 1, 2))
    msgs = [x for x in w if "If conditional called with multidimensional Tensor" in str(x.message)]
    assert msgs and '"if (x > 0).item()"' in str(msgs[0].message)
    assert msgs[0].lineno == _line_of(unsplat_kernel, "if x > 0")


def test_if_on_a_two_element_block_is_refused_at_the_if_line():
    with pytest.raises(CompileError) as ei:
        two_element_if_kernel[(1,)](np.ones(2, np.float32), np.zeros(2, np.int32))
    assert "Boolean value of Tensor with more than one value is ambiguous" in str(ei.value)
    assert ei.value.line == _line_of(two_element_if_kernel, "if x > 0")       # not the statement's last line


# ---- tl.core.* names, JITFunction's attributes, triton.reinterpret ---------------------------------------------

@triton.jit
def core_names_kernel(x_ptr, y_ptr, N: tl.core.constexpr, M: tl.core.constexpr):
    o = tl.arange(0, N)
    x: tl.core.tensor = tl.load(x_ptr + o)
    if isinstance(x, tl.core.tensor):
        x = x * 2
    if isinstance(x.dtype, tl.core.dtype):
        x = x + M
    tl.store(y_ptr + o, x)


def test_tl_core_names_in_annotations_and_isinstance():
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    core_names_kernel[(1,)](x, y, 16, 3)
    np.testing.assert_array_equal(y, 2 * x + 3)


def test_jit_function_exposes_tritons_attributes():
    k = core_names_kernel
    assert k.src.startswith("def core_names_kernel(x_ptr, y_ptr, N: tl.core.constexpr")       # no decorator
    assert k.__name__ == "core_names_kernel" and k.fn.__name__ == "core_names_kernel"
    assert k.arg_names == ["x_ptr", "y_ptr", "N", "M"]
    assert k.starting_line_number == inspect.getsourcelines(k.fn)[1]
    assert [p.name for p in k.params] == k.arg_names
    assert k.parse().body[0].name == "core_names_kernel"


@triton.jit
def clear_sign_kernel(x_ptr, y_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y_ptr + o, tl.load(x_ptr + o) & 0x7FFFFFFF)


def test_reinterpret_passes_the_memory_as_another_dtype():
    a = np.array([-1.5, 2.0, -3.25, 0.0, -0.0, 7.0, -8.5, 1e-3], np.float32)
    b = np.zeros_like(a)
    clear_sign_kernel[(1,)](triton.reinterpret(a, tl.int32), triton.reinterpret(b, tl.int32), 8)
    np.testing.assert_array_equal(b, np.abs(a))
    w = triton.reinterpret(a, tl.int32)
    assert triton.reinterpret(w, tl.uint32).base is a and w.shape == a.shape
    with pytest.raises(TypeError):
        triton.reinterpret(3, tl.int32)


# ---- a library's subclass of Triton's Autotuner (fla's CachedAutotuner) ------------------------------------------

class _CachedAutotuner(triton.Autotuner):
    """After fla's: Triton's constructor signature, ``run(*args, **kwargs)`` over ``super().run``."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs):
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs)
        self.kernel_name = fn.fn.__name__ if hasattr(fn, "fn") else fn.__name__
        self.runs = 0

    def run(self, *args, **kwargs):
        self.runs += 1
        return super().run(*args, **kwargs)


def _cached_autotune(configs, key):
    return lambda fn: _CachedAutotuner(fn, fn.arg_names, configs, key, None, None, pre_hook=None, post_hook=None)


@_cached_autotune([triton.Config({"B": 16}), triton.Config({"B": 64})], key=["n"])
@triton.jit
def add_one_kernel(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)


def test_a_subclass_of_autotuner_with_tritons_constructor_tunes_and_runs():
    from gpusim.triton import _autotune
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    add_one_kernel[lambda m: (triton.cdiv(100, m["B"]),)](x, y, 100)
    np.testing.assert_array_equal(y, x + 1)
    assert add_one_kernel.runs == 1 and add_one_kernel.kernel_name == "add_one_kernel"
    assert _autotune.tuner_of(add_one_kernel) is add_one_kernel
    assert add_one_kernel.arg_names == ["x_ptr", "y_ptr", "n", "B"] and add_one_kernel.keys == ["n"]
    assert not add_one_kernel.user_defined_pre_hook


# ---- host code: torch.compiler.disable / torch.compile in a script ------------------------------------------------

def test_torch_compiler_disable_and_compile_in_a_script(tmp_path, capsys):
    """``@torch.compiler.disable`` imports torch._dynamo, whose modules probe for triton's compiler: under gpusim they
    see no triton package (as on a host without it); ``torch.compile``'d host code runs eagerly."""
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "compiler_disable.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def inc(x_ptr, N: tl.constexpr):
            o = tl.arange(0, N)
            tl.store(x_ptr + o, tl.load(x_ptr + o) + 1)


        @torch.compiler.disable
        def f(x):
            inc[(1,)](x, 16)
            return x


        @torch.compile
        def g(x):
            return x * 2 + 1


        print("disable", float(f(torch.zeros(16, device="cuda")).sum()))
        print("compile", g(torch.ones(4, device="cuda")).tolist())
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    out = capsys.readouterr().out
    assert "disable 16.0" in out and "compile [3.0, 3.0, 3.0, 3.0]" in out


# ---- tl.map_elementwise and a helper's `return` under a condition the programs disagree on ------------------------

@triton.jit
def _compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def map_compare_kernel(X, Y, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    tl.store(Z + tl.arange(0, BLOCK), tl.map_elementwise(_compare, x, y))


@triton.jit
def _divmod(a, b):
    return a // b, a % b


@triton.jit
def map_divmod_kernel(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    c, d = tl.map_elementwise(_divmod, a, b)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@triton.jit
def _selu(x, alpha):
    if x > 0:
        return x
    return alpha * (tl.exp(x) - 1)


@triton.jit
def map_selu_kernel(X, Y, n, alpha, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + o, mask=o < n)
    tl.store(Y + o, tl.map_elementwise(_selu, x, alpha), mask=o < n)


def test_map_elementwise_runs_the_scalar_function_per_element():
    rs = np.random.RandomState(17)
    x = rs.randint(-5, 5, 128).astype(np.int32)
    y = rs.randint(-5, 5, 128).astype(np.int32)
    z = np.zeros_like(x)
    map_compare_kernel[(1,)](x, y, z, BLOCK=128)
    np.testing.assert_array_equal(z, (x > y).astype(np.int32) - (y > x).astype(np.int32))
    a = rs.randint(0, 1000, 256).astype(np.uint32)
    b = rs.randint(1, 50, 256).astype(np.uint32)
    c, d = np.zeros_like(a), np.zeros_like(a)
    map_divmod_kernel[(1,)](a, b, c, d, BLOCK=256)
    np.testing.assert_array_equal(c, a // b)
    np.testing.assert_array_equal(d, a % b)
    xs = rs.randn(1000).astype(np.float32)
    ys = np.zeros_like(xs)
    map_selu_kernel[(8,)](xs, ys, 1000, 1.5, BLOCK=128)
    np.testing.assert_allclose(ys, np.where(xs > 0, xs, 1.5 * (np.exp(xs) - 1)), rtol=1e-6, atol=1e-6)


@triton.jit
def _pick(flag, a, b):
    if flag > 0:
        return a * 2, b
    elif flag == 0:
        return a, b * 3
    return a + b, b - a


@triton.jit
def helper_return_kernel(F, X, OUT, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    flag = tl.load(F + pid)                       # differs between programs
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + pid * BLOCK + offs)
    u, v = _pick(flag, x, x + 1.0)
    tl.store(OUT + pid * BLOCK + offs, u + 10 * v)


def test_a_helpers_return_under_a_program_varying_condition():
    flags = np.array([1, 0, -1, 1, -2, 0], np.int32)
    x = np.random.default_rng(3).standard_normal((6, 16)).astype(np.float32)
    out = np.zeros_like(x)
    helper_return_kernel[(6,)](flags, x, out, BLOCK=16)
    f = flags[:, None]
    u = np.where(f > 0, 2 * x, np.where(f == 0, x, x + (x + 1)))
    v = np.where(f > 0, x + 1, np.where(f == 0, 3 * (x + 1), (x + 1) - x))
    np.testing.assert_allclose(out, u + 10 * v, rtol=1e-6)


# ---- FlagGems' launch wrappers: KernelInterface, params, the compiled kernel relaunched, pointer-like arguments -------

class _StridedBuffer:
    """After FlagGems': an object with ``data_ptr()`` and ``dtype`` over another array's memory."""

    def __init__(self, base, offset):
        self._base = base
        self.dtype = base.dtype
        self._data_ptr = base.__array_interface__["data"][0] + offset * base.dtype.itemsize

    def data_ptr(self):
        return self._data_ptr


class _LibEntry(triton.KernelInterface):
    """After FlagGems' LibEntry: the first launch through ``fn.run``, later ones through the compiled kernel with
    the non-constexpr arguments only."""

    def __init__(self, fn):
        self.fn = fn
        self.jit_function = fn
        self.compiled = None

    def run(self, *args, grid, warmup=False, **kwargs):
        if self.compiled is None:
            self.compiled = self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
            return self.compiled
        names = [p.name for p in self.jit_function.params if not p.is_constexpr]
        self.compiled[grid](*[dict(zip(self.jit_function.arg_names, args), **kwargs)[n] for n in names])
        return self.compiled


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, F: tl.constexpr, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + o, F * tl.load(x_ptr + o, mask=o < n), mask=o < n)


def test_a_kernel_interface_wrapper_relaunches_the_compiled_kernel_with_pointer_like_arguments():
    k = _LibEntry(_scale_kernel)
    assert [(p.num, p.name, p.is_constexpr) for p in _scale_kernel.params][3:] == [(3, "F", True), (4, "B", True)]
    assert triton.runtime.Autotuner is triton.Autotuner and triton.runtime.JITFunction is triton.JITFunction
    x = np.arange(40, dtype=np.float32)
    y = np.zeros(50, np.float32)
    with gpusim.api.session():                 # as under `gpusim run`: a launch returns the compiled kernel
        ck = k[(3,)](x, y, 40, F=3.0, B=16)
        assert ck is not None and ck.n_regs > 0
        np.testing.assert_array_equal(y[:40], 3 * x)
        k[(3,)](x, _StridedBuffer(y, 10), 40, F=3.0, B=16)        # the second launch: constexprs of the first
    np.testing.assert_array_equal(y[10:50], 3 * x)


# ---- Triton's error classes: OutOfResources caught by the script, CompilationError, static_assert -----------------

def test_a_script_catches_out_of_resources_and_tritons_error_classes_import(tmp_path, capsys):
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "oor.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl
        import triton.runtime
        from triton.runtime.errors import OutOfResources
        from triton.compiler.errors import CompilationError, CompileTimeAssertionFailure, UnsupportedLanguageConstruct
        from triton.errors import TritonError
        assert triton.runtime.OutOfResources is OutOfResources is triton.OutOfResources
        assert triton.CompilationError is CompilationError and issubclass(OutOfResources, TritonError)


        @triton.jit
        def mm(A, B, C, K, BM: tl.constexpr, BK: tl.constexpr):
            rm = tl.program_id(0) * BM + tl.arange(0, BM)
            rn = tl.program_id(1) * BM + tl.arange(0, BM)
            rk = tl.arange(0, BK)
            acc = tl.zeros((BM, BM), dtype=tl.float32)
            for k in range(0, K, BK):
                a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
                b = tl.load(B + (k + rk)[:, None] * K + rn[None, :])
                acc += tl.dot(a, b)
            tl.store(C + rm[:, None] * K + rn[None, :], acc)


        @triton.jit
        def sa(X, B: tl.constexpr):
            tl.static_assert(B == 3, "B must be 3")


        K = 256
        a = torch.randn(K, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, K, device="cuda", dtype=torch.float16)
        c = torch.empty(K, K, device="cuda", dtype=torch.float32)
        for BM in (256, 64):
            try:
                mm[(K // BM, K // BM)](a, b, c, K, BM=BM, BK=128, num_stages=4)
                print("ran", BM)
                break
            except OutOfResources as e:
                print("caught", BM, e.name, e.required > e.limit, str(e).startswith("out of resource: shared memory"))
        print("matches", torch.allclose(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2))
        try:
            sa[(1,)](a, B=4)
        except CompileTimeAssertionFailure as e:
            print("static_assert", isinstance(e, CompilationError), isinstance(e, TritonError))
        mm[(1, 1)](a, b, c, K, BM=256, BK=128, num_stages=4)
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 2
    cap = capsys.readouterr()
    assert "caught 256 shared memory True True" in cap.out and "ran 64" in cap.out and "matches True" in cap.out
    assert "static_assert True True" in cap.out
    # uncaught: reported at the script's launch line (the last line of the script)
    n = len(f.read_text().rstrip("\n").splitlines())
    assert f"oor.py:{n}: out of resource: shared memory" in cap.err


@triton.jit
def _try_kernel(X):
    try:
        x = 1
    except Exception:
        pass


def test_a_construct_triton_refuses_is_its_unsupported_language_construct():
    from gpusim.triton._errors import CompilationError, UnsupportedLanguageConstruct
    with pytest.raises(UnsupportedLanguageConstruct) as ei:
        _try_kernel[(1,)](np.zeros(1, np.float32))
    assert isinstance(ei.value, CompilationError) and isinstance(ei.value, triton.TritonError)
    assert ei.value.line == _line_of(_try_kernel, "try:")


# ---- triton.knobs, Autotuner._bench (FlagGems' LibTuner), Config's str ------------------------------------------

def test_knobs_read_set_and_autotuning_print(capsys, monkeypatch):
    from gpusim.triton import knobs
    monkeypatch.delenv("TRITON_PRINT_AUTOTUNING", raising=False)
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    assert knobs.autotuning.print is False and knobs.runtime.interpret is False
    assert knobs.cache.dir.endswith("/.triton/cache") and knobs.compilation.always_compile is False
    with knobs.cache.scope():
        knobs.cache.dir = "/tmp/gpusim-knob"
        assert knobs.cache.dir == "/tmp/gpusim-knob"
        import os
        assert os.environ["TRITON_CACHE_DIR"] == "/tmp/gpusim-knob"     # as Triton: propagated to the environment
    assert knobs.cache.dir.endswith("/.triton/cache")
    tuned = triton.autotune([triton.Config({"B": 32}, num_warps=1), triton.Config({"B": 64}, num_warps=2)],
                            key=["n"])(add_one_kernel.fn)
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    with knobs.autotuning.scope():
        knobs.autotuning.print = True
        tuned[lambda m: (triton.cdiv(100, m["B"]),)](x, y, 100)
    out = capsys.readouterr().out
    np.testing.assert_array_equal(y, x + 1)
    assert "Autotuning kernel add_one_kernel with config B: 32, num_warps: 1, num_ctas: 1, num_stages: 3, " \
           "maxnreg: None" in out
    assert "Triton autotuning for function add_one_kernel,\nwith key as (100, 'float32', 'float32'),\nfinished " \
           "after" in out and "best config selected: B: " in out


def test_autotuner_bench_returns_the_simulated_ms_of_one_config():
    tuner = triton.autotune([triton.Config({"B": 32}, num_warps=1), triton.Config({"B": 1024}, num_warps=4)],
                            key=["n"])(add_one_kernel)
    n = 1 << 16
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    tuner.nargs = dict(zip(tuner.arg_names, (x, y, n)))
    grid = lambda m: (triton.cdiv(n, m["B"]),)
    times = [tuner._bench(x, y, n, config=c, grid=grid, warmup=False) for c in tuner.configs]
    assert all(isinstance(t, list) and len(t) == 3 and t[0] == t[1] == t[2] > 0 for t in times)
    assert times[0][0] < 1.0                  # ms: a 64K-element add is microseconds
    np.testing.assert_array_equal(y, x + 1)


# ---- a block pointer's `.type`, a tile's `.type`, `.to(block type)` ----------------------------------------------

@triton.jit
def bptr_type_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    xb = tl.make_block_ptr(X, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0), block_shape=(BM, BN), order=(1, 0))
    yb = tl.make_block_ptr(Y, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0), block_shape=(BM, BN), order=(1, 0))
    x = tl.load(xb, boundary_check=(0, 1)).to(tl.float32)
    tl.static_assert(yb.type.is_ptr() and yb.type.element_ty.is_block())
    tl.static_assert(yb.type.element_ty.element_ty == tl.float16)
    tl.static_assert(yb.dtype.element_ty.shape[0] == BM)
    tl.static_assert(x.type.is_block() and x.type.scalar == tl.float32 and x.type.shape[1] == BN)
    tl.store(yb, (x * 2).to(yb.type.element_ty), boundary_check=(0, 1))


def test_block_pointer_type_and_cast_to_its_element_type():
    x = np.random.default_rng(0).standard_normal((50, 30)).astype(np.float16)
    y = np.zeros_like(x)
    bptr_type_kernel[(4,)](x, y, 50, 30, BM=16, BN=32)
    np.testing.assert_array_equal(y, (x.astype(np.float32) * 2).astype(np.float16))


# ---- constexpr arguments arrive wrapped: `dtype.value`, `N.value` -------------------------------------------------

@triton.jit
def _cvt_helper(x, dtype: tl.constexpr, n):
    if dtype.value == tl.float16:
        return x.to(tl.float16)
    return x.to(dtype) + n.value


@triton.jit
def constexpr_value_kernel(X, Y, N, BLOCK: tl.constexpr, DT: tl.constexpr):
    o = tl.arange(0, BLOCK)
    y = _cvt_helper(tl.load(X + o, mask=o < N), DT, 3)
    tl.store(Y + o, y, mask=o < N)
    tl.static_assert(BLOCK.value == 128)


def test_value_of_a_constexpr_argument_in_a_kernel_and_a_helper():
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    constexpr_value_kernel[(1,)](x, y, 100, BLOCK=128, DT=tl.float32)
    np.testing.assert_array_equal(y, x + 3)


# ---- triton.language.standard's helpers, triton.language.math, triton.constexpr_function ----------------------

@triton.constexpr_function
def _twice(n):
    return 2 * n


@triton.jit
def stdlib_kernel(X, Y, N: tl.constexpr):
    from_std = tl.standard
    o = tl.arange(0, N)
    x = tl.load(X + o)
    n_dims: tl.constexpr = from_std._log2(N)
    tl.static_assert(from_std._is_power_of_two(N) and _twice(N) == 2 * N)
    for i in tl.static_range(1, n_dims + 1):
        x = from_std._bitonic_merge(x, i, 2 if i < n_dims else 0, n_dims)
    tl.store(Y + o, x)
    s = tl.reduce(x, 0, from_std._sum_combine)
    idt: tl.constexpr = tl.core.get_int_dtype(32, True)
    tl.store(Y + N + o, (tl.full((N,), s, tl.float32) + tl.math.exp2(tl.zeros((N,), tl.float32)) - 1).to(idt))


def test_standard_library_helpers_and_constexpr_function():
    import importlib
    x = np.random.default_rng(1).permutation(64).astype(np.float32)
    y = np.zeros(128, np.float32)
    stdlib_kernel[(1,)](x, y, N=64)
    np.testing.assert_array_equal(y[:64], np.sort(x))
    np.testing.assert_array_equal(y[64:], np.full(64, x.sum()))
    from gpusim.triton.language import _get_int_dtype, _log2
    assert _log2(1024) == 10 and _get_int_dtype(16, False) == tl.uint16
    # a module gpusim builds in memory has a spec: find_spec + exec_module (xformers' libdevice_find) copy it
    spec = importlib.util.find_spec("gpusim.triton.language.extra.libdevice")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.rsqrt is tl.extra.libdevice.rsqrt


# ---- tl.where between pointers into two arguments (xformers' rope) ----------------------------------------------

@triton.jit
def where_ptr_kernel(A, B, OUT, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.where(pid == 0, A, B)
    o = tl.arange(0, BLOCK)
    tl.store(OUT + pid * N + o, tl.load(src + o, mask=o < N), mask=o < N)


def test_where_between_pointers_of_two_arguments():
    a = np.arange(10, dtype=np.float32)
    b = -np.arange(10, dtype=np.float32)
    out = np.zeros(20, np.float32)
    where_ptr_kernel[(2,)](a, b, out, 10, BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([a, b]))


# ---- atomics through a pointer chosen among arguments (xformers' tiled matmul, split-K) ---------------------------

@triton.jit
def where_atomic_kernel(C1, C2, X, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    c = tl.where(pid % 2 == 0, C1, C2)
    o = tl.arange(0, BLOCK)
    tl.atomic_add(c + o, tl.load(X + pid * N + o, mask=o < N), mask=o < N)


def test_atomic_add_through_a_pointer_into_another_argument():
    x = np.arange(40, dtype=np.float32).reshape(4, 10)
    c1 = np.zeros(10, np.float32)
    c2 = np.ones(10, np.float32)
    where_atomic_kernel[(4,)](c1, c2, x, 10, BLOCK=16)
    np.testing.assert_array_equal(c1, x[0] + x[2])
    np.testing.assert_array_equal(c2, 1 + x[1] + x[3])


# ---- triton.testing's device queries; the perf model gets Triton's arguments ------------------------------------

def test_testing_device_queries_answer_for_the_simulated_gpu():
    from gpusim.triton import testing
    from gpusim.triton.runtime import driver
    p = driver.active.utils.get_device_properties(0)
    assert testing.get_dram_gbps() == p["mem_clock_rate"] * p["mem_bus_width"] * 2 / 1e6 / 8
    clock = testing.nvsmi(["clocks.max.sm"])[0] * 1e3
    assert testing.get_max_tensorcore_tflops(tl.float16, clock) == p["multiprocessor_count"] * 4 * clock * 512 * 1e-9
    assert testing.get_max_simd_tflops(tl.float32, clock) == p["multiprocessor_count"] * 4 * clock * 32 * 1e-9
    testing.assert_close(np.ones(3), np.ones(3) + 1e-3)
    with pytest.raises(AssertionError):
        testing.assert_close(np.ones(3), np.ones(3) + 1e-1)


def test_prune_functions_get_the_positional_arguments_and_the_launch_meta_apart():
    seen = []

    def perf_model(x_ptr, y_ptr, n, B, num_warps, num_stages, num_ctas, **kw):
        seen.append((n, B, kw.get("EXTRA")))
        return B

    @triton.autotune([triton.Config({"B": 64}), triton.Config({"B": 32}), triton.Config({"B": 128})], key=["n"],
                     prune_configs_by={"perf_model": perf_model, "top_k": 2,
                                       "early_config_prune": lambda cfgs, nargs, **kw: [
                                           c for c in cfgs if "EXTRA" not in nargs and kw["EXTRA"] == 5]})
    @triton.jit
    def k(x_ptr, y_ptr, n, EXTRA: tl.constexpr, B: tl.constexpr):
        o = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) + EXTRA, mask=o < n)

    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    k[lambda m: (triton.cdiv(100, m["B"]),)](x, y, 100, EXTRA=5)
    np.testing.assert_array_equal(y, x + 5)
    assert sorted(seen) == [(100, 32, 5), (100, 64, 5), (100, 128, 5)]


# ---- host code: an operator's CUDA kernel registered with torch.library ------------------------------------------

def test_a_torch_library_cuda_kernel_serves_the_scripts_cuda_tensors(tmp_path, capsys):
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "lib_op.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl

        lib = torch.library.Library("gpusim_probe", "FRAGMENT")
        lib.define("twice(Tensor x) -> Tensor")


        @triton.jit
        def twice_kernel(x_ptr, y_ptr, n, B: tl.constexpr):
            o = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)


        @torch.library.impl(lib, "twice", "Meta")
        def _(x):
            return torch.empty_like(x)


        @torch.library.impl(lib, "twice", "CUDA")
        def twice_cuda(x):
            y = torch.empty_like(x)
            twice_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), B=64)
            return y


        x = torch.arange(100, dtype=torch.float32, device="cuda")
        print("twice", torch.equal(torch.ops.gpusim_probe.twice(x), 2 * x))
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    assert "twice True" in capsys.readouterr().out


# ---- tl.random (triton.language.random): Triton's test_random.py reaches the Philox helpers through it -----------

@triton.jit
def random_module_kernel(inp, out, n: tl.constexpr):
    idx = tl.arange(0, n)
    tl.store(out + idx, tl.random.uint_to_uniform_float(tl.load(inp + idx)))


def test_tl_random_module_names_the_philox_helpers():
    x = np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max], np.int32)
    out = np.zeros(2, np.float32)
    random_module_kernel[(1,)](x, out, 2)
    assert out[0] == out[1] and 1.0 - np.finfo(np.float32).eps <= out[0] < 1.0
    import sys
    assert sys.modules["gpusim.triton.language.random"].randint is tl.randint


# ---- a tensor of the simulated GPU is on cuda:0 (GemLite: `fp4_vals[t.device.index]`; unsloth: device.type) --------

def test_a_scripts_cuda_tensor_has_device_index_zero(tmp_path, capsys):
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "dev_index.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def add_kernel(x_ptr, t_ptr, y_ptr, n, B: tl.constexpr):
            o = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) + tl.load(t_ptr), mask=o < n)


        table = [torch.tensor([3.0], device="cuda:%d" % i) for i in range(torch.cuda.device_count())]
        x = torch.arange(100, dtype=torch.float32, device="cuda")
        y = torch.empty_like(x)
        with torch.cuda.device(x.device.index):
            add_kernel[(2,)](x, table[x.device.index], y, x.numel(), B=64)
        print("index", x.device.index, torch.equal(y, x + 3), torch.empty(2, device=x.device).is_cuda)
        # unsloth's grouped GEMM: `assert X.device.type == "cuda"`; the device's tensors are host tensors all the same
        assert x.device.type == "cuda" and str(x.device) == "cuda:0" and x.device == torch.device("cuda", 0)
        z = torch.zeros(4, device=x.device).to(x.device) + x.new_ones(4)
        print("type", x.device.type, y.cpu().numpy()[:2].tolist(), z.sum().item(), z.device.type)
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    out = capsys.readouterr().out
    assert "index 0 True True" in out and "type cuda [3.0, 4.0] 4.0 cuda" in out


# ---- tl.dot_scaled (GemLite's MXFP GEMMs): operands upcast to bf16 times their scales, as Triton on an H100 ---------

@triton.jit
def dot_scaled_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                      FA: tl.constexpr, PA: tl.constexpr, RHS_K_PACK: tl.constexpr):
    KA: tl.constexpr = K // PA
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * KA + tl.arange(0, KA)[None, :])
    if RHS_K_PACK:
        b = tl.load(b_ptr + tl.arange(0, K // 2)[:, None] * N + tl.arange(0, N)[None, :])
    else:
        b = tl.load(b_ptr + tl.arange(0, K)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :])
    sa = tl.load(as_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    sb = tl.load(bs_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    acc = tl.full((M, N), 1.0, tl.float32)
    c = tl.dot_scaled(a, sa, FA, b, sb, "e2m1", acc, rhs_k_pack=RHS_K_PACK)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@triton.jit
def dot_scaled_bad_scale_kernel(a_ptr, s_ptr, c_ptr):
    a = tl.load(a_ptr + tl.arange(0, 16)[:, None] * 32 + tl.arange(0, 32)[None, :])
    s = tl.load(s_ptr + tl.arange(0, 16)[:, None] + tl.arange(0, 1)[None, :])
    c = tl.dot_scaled(a, s, "e2m1", a.trans(), None, "e2m1")
    tl.store(c_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], c)


_FP4 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def _e4m3(raw):
    e, m = (raw >> 3) & 15, (raw & 7).astype(np.float32)
    mag = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e.astype(np.float32) - 7))
    return np.where(raw >> 7, -mag, mag).astype(np.float32)


@pytest.mark.parametrize("fa,rhs_k_pack", [("e2m1", True), ("e2m1", False), ("e4m3", True)])
def test_dot_scaled_upcasts_microscaled_operands(fa, rhs_k_pack):
    rng = np.random.default_rng(1)
    M, N, K = 16, 32, 64
    if fa == "e2m1":
        a = rng.integers(0, 256, (M, K // 2), dtype=np.uint8)
        av = np.stack([_FP4[a & 15], _FP4[a >> 4]], -1).reshape(M, K)         # the low nibble first, along K
    else:
        a = (rng.integers(0, 0x77, (M, K), dtype=np.uint8) | (rng.integers(0, 2, (M, K)) << 7)).astype(np.uint8)
        av = _e4m3(a)
    if rhs_k_pack:
        b = rng.integers(0, 256, (K // 2, N), dtype=np.uint8)
        bv = np.stack([_FP4[b & 15], _FP4[b >> 4]], 1).reshape(K, N)
    else:
        b = rng.integers(0, 256, (K, N // 2), dtype=np.uint8)
        bv = np.stack([_FP4[b & 15], _FP4[b >> 4]], -1).reshape(K, N)
    sa = rng.integers(120, 134, (M, K // 32), dtype=np.uint8)
    sb = rng.integers(120, 134, (N, K // 32), dtype=np.uint8)
    sb[0, 0] = 0                                                                # e8m0 0 is 2^-127
    c = np.zeros((M, N), np.float32)
    dot_scaled_kernel[(1,)](a, sa, b, sb, c, M, N, K, fa, 2 if fa == "e2m1" else 1, rhs_k_pack)
    fa_ = np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, 1)
    fb_ = np.repeat(2.0 ** (sb.astype(np.float64) - 127), 32, 1).T
    ref = 1.0 + (av * fa_) @ (bv * fb_)
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-6)


def test_dot_scaled_refuses_a_scale_of_the_wrong_shape_with_tritons_message():
    with pytest.raises(CompileError) as ei:
        dot_scaled_bad_scale_kernel[(1,)](np.zeros((16, 32), np.uint8), np.zeros(16, np.uint8),
                                          np.zeros((16, 16), np.float32))
    assert "lhs_scale must be a tensor of shape [16, 2]. Got [16, 1]" in str(ei.value)
    assert ei.value.line == _line_of(dot_scaled_bad_scale_kernel, "c = tl.dot_scaled")


# ---- tl.extra.cuda.num_warps() / num_threads() (constexprs of the launch) and `while tl.condition(c)` --------------

@triton.jit
def launch_warps_kernel(y_ptr, n, B: tl.constexpr):
    nw: tl.constexpr = tl.extra.cuda.num_warps()
    nt: tl.constexpr = tl.extra.cuda.num_threads()
    i = 0
    while tl.condition(i < n, disable_licm=True):
        i += 2
    tl.store(y_ptr + tl.arange(0, B), tl.full((B,), nw * 1000 + nt, tl.int32) + i)


def test_extra_cuda_num_warps_and_while_condition():
    for nw in (1, 4):
        y = np.zeros(8, np.int32)
        launch_warps_kernel[(1,)](y, 5, B=8, num_warps=nw)
        np.testing.assert_array_equal(y, nw * 1000 + nw * 32 + 6)


# ---- Python integers in integer arithmetic take the tensor's type (SGLang's int4 KV unpacking: `k_int8 & 0xF0`) ----

@triton.jit
def int4_unpack_kernel(k_ptr, out_ptr, N: tl.constexpr, D: tl.constexpr):
    x = tl.load(k_ptr + tl.arange(0, N)[:, None] * D + tl.arange(0, D)[None, :])
    low = (x & 0xF).to(tl.int8) - 8
    high = ((x & 0xF0) >> 4).to(tl.int8) - 8
    tl.store(out_ptr + tl.arange(0, N)[:, None] * 2 * D + tl.arange(0, 2 * D)[None, :], tl.interleave(low, high))


def test_int_scalars_are_checked_against_the_computation_type():
    raw = np.random.default_rng(0).integers(0, 256, (8, 16)).astype(np.uint8)
    out = np.zeros((8, 32), np.int8)
    int4_unpack_kernel[(1,)](raw, out, 8, 16)                      # uint8: 0xF0 fits
    r = raw.astype(np.int32)
    np.testing.assert_array_equal(out, np.stack([(r & 15) - 8, (r >> 4) - 8], -1).reshape(8, 32))
    with pytest.raises(CompileError) as ei:
        int4_unpack_kernel[(1,)](raw.view(np.int8), out, 8, 16)    # int8: as Triton 3.6 refuses it
    assert "Scalar 240 is out of range for type int8" in str(ei.value)
    assert ei.value.line == _line_of(int4_unpack_kernel, "high = ")


# ---- tuple arguments (Triton's test_tensor_descriptor: `kernel[(1,)](out, inp, inp.shape, inp.stride(), BLOCK)`) ------

@triton.jit
def tuple_args_kernel(out_ptr, a_ptr, shape, strides, BLOCK_SHAPE):
    desc = tl.make_tensor_descriptor(a_ptr, shape=shape, strides=strides, block_shape=BLOCK_SHAPE)
    assert desc.block_shape == [BLOCK_SHAPE[0], BLOCK_SHAPE[1]]
    ndim: tl.constexpr = len(BLOCK_SHAPE)
    block = desc.load((0, ) * ndim)
    idx = tl.arange(0, BLOCK_SHAPE[0])[:, None] * BLOCK_SHAPE[1] + tl.arange(0, BLOCK_SHAPE[1])[None, :]
    tl.store(out_ptr + idx, block + shape[0] * 1000 + strides[0])


def test_tuple_arguments_of_scalars_and_constexprs():
    torch = pytest.importorskip("torch")
    a = torch.arange(3 * 40, dtype=torch.float32).reshape(3, 40)[:, :29]      # not contiguous: strides (40, 1)
    out = torch.zeros(4, 32)
    tuple_args_kernel[(1,)](out, a, a.shape, a.stride(), (tl.constexpr(4), tl.constexpr(32)))
    ref = torch.zeros(4, 32)
    ref[:3, :29] = a
    np.testing.assert_array_equal(out.numpy(), (ref + 3 * 1000 + 40).numpy())


def test_scripts_import_tritons_internal_testing_helpers(tmp_path, capsys):
    pytest.importorskip("torch")
    import importlib.util
    if importlib.util.find_spec("triton") is None:          # loaded from the installed package's own file
        pytest.skip("triton is not installed")
    from gpusim.cli import main
    f = tmp_path / "internal_testing.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl
        from triton._internal_testing import is_hopper, is_cuda, numpy_random, to_triton, unwrap_tensor, tma_dtypes
        from triton._internal_testing import supports_tma


        @triton.jit
        def copy_kernel(x_ptr, y_ptr, B: tl.constexpr):
            tl.store(y_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)))


        x = to_triton(numpy_random((64, ), "bfloat16"), device="cuda", dst_type="bfloat16")
        y = torch.empty_like(unwrap_tensor(x))
        copy_kernel[(1, )](x, y, B=64)
        print("helpers", is_hopper(), is_cuda(), supports_tma(), torch.equal(unwrap_tensor(x), y),
              triton.runtime.jit.TensorWrapper is triton.TensorWrapper)
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    assert "helpers True True True True True" in capsys.readouterr().out


def test_a_custom_ops_kernel_sees_the_scripts_cuda_tensors(tmp_path, capsys):
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "custom_op_device.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def add_kernel(x_ptr, t_ptr, y_ptr, n, B: tl.constexpr):
            o = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) + tl.load(t_ptr), mask=o < n)


        tables = [torch.tensor([2.0], device="cuda")]


        @torch.library.custom_op("gpusim_probe::add_table", mutates_args=())
        def add_table(x: torch.Tensor) -> torch.Tensor:
            y = torch.empty_like(x)
            add_kernel[(2,)](x, tables[x.device.index], y, x.numel(), B=64)
            print("inside", x.is_cuda, x.device.index)
            return y


        x = torch.arange(100, dtype=torch.float32, device="cuda")
        print("added", torch.equal(add_table(x), x + 2))
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    out = capsys.readouterr().out
    assert "inside True 0" in out and "added True" in out


# ---- `x_ptr: tl.const`: a pointer to constant data; a store through it is refused as Triton 3.6 refuses it ---------

@triton.jit
def const_arg_kernel(x_ptr: tl.const, y_ptr, B: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)) * 2)


@triton.jit
def store_to_const_kernel(x_ptr: tl.const, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)) * 2)


def test_const_pointer_arguments():
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    const_arg_kernel[(1,)](x, y, B=16)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(CompileError) as ei:
        store_to_const_kernel[(1,)](x, B=16)
    assert "Cannot store to a constant pointer" in str(ei.value)
    assert ei.value.line == _line_of(store_to_const_kernel, "tl.store(")


# ---- `print(B0, N0)` in a kernel is tl.device_print with a non-string prefix: refused as Triton 3.6 refuses it ------

@triton.jit
def print_prefix_kernel(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    print("x", n)
    tl.store(y_ptr + o, tl.load(x_ptr + o) + 1)


@triton.jit
def print_constexpr_first_kernel(x_ptr, n, B: tl.constexpr):
    print(B, n)
    tl.store(x_ptr + tl.arange(0, B), tl.zeros([B], tl.float32))


@triton.jit
def print_tensor_first_kernel(x_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    print(r)
    tl.store(x_ptr + r, r.to(tl.float32))


def test_print_in_a_kernel_needs_a_string_prefix():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    print_prefix_kernel[(1,)](x, y, 8, B=8)
    np.testing.assert_array_equal(y, x + 1)
    with pytest.raises(CompileError) as ei:
        print_constexpr_first_kernel[(1,)](x, 8, B=8)
    assert "8 is not string" in str(ei.value)
    assert ei.value.line == _line_of(print_constexpr_first_kernel, "print(B, n)")
    with pytest.raises(CompileError) as ei:
        print_tensor_first_kernel[(1,)](x, B=8)
    assert "int32[8] is not string" in str(ei.value)        # the tensor named as Triton names it


# ---- torch.set_default_device("cuda") in a script (Triton-Puzzles' GPU mode): factory functions give host tensors ---

def test_set_default_device_cuda_in_a_script(tmp_path, capsys):
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "default_device.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def double(x_ptr, y_ptr, N: tl.constexpr):
            o = tl.arange(0, N)
            tl.store(y_ptr + o, tl.load(x_ptr + o) * 2)


        torch.set_default_device("cuda")
        x = torch.rand(32) - 0.5
        y = torch.zeros(32)
        double[(1,)](x, y, 32)
        print("doubled", torch.equal(y, 2 * x), x.is_cuda, torch.arange(4).sum().item())
    '''))
    import torch
    before = torch.get_default_device()
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    assert "doubled True True 6" in capsys.readouterr().out
    assert torch.get_default_device() == before


# ---- triton.compiler.CompiledKernel (unsloth's grouped GEMM annotates with it) -----------------------------------

def test_triton_compiler_compiled_kernel_is_what_a_launch_returns(tmp_path, capsys):
    pytest.importorskip("torch")
    from gpusim.cli import main
    f = tmp_path / "compiled_kernel.py"
    f.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def iota(x_ptr, B: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, B), tl.arange(0, B).to(tl.float32))


        def log_kernel_info(compiled_kernel: triton.compiler.CompiledKernel):
            return compiled_kernel.name, compiled_kernel.n_regs > 0


        x = torch.zeros(16, device="cuda")
        ck = iota[(1,)](x, B=16)
        print("compiled", isinstance(ck, triton.compiler.CompiledKernel), log_kernel_info(ck), x[:3].tolist())
    '''))
    assert main(["run", str(f), "--compiler", "builtin"]) == 0
    assert "compiled True ('iota', True) [0.0, 1.0, 2.0]" in capsys.readouterr().out


# ---- Python's range in a kernel with keywords: Triton 3.6 reads the positional bounds and ignores the keywords ------

@triton.jit
def range_keywords_kernel(x_ptr, y_ptr, N: tl.constexpr, B: tl.constexpr, FLATTEN: tl.constexpr):
    o = tl.arange(0, B)
    acc = tl.zeros([B], tl.float32)
    for i in range(N, flatten=FLATTEN):                 # unsloth's grouped GEMM
        acc += tl.load(x_ptr + i * B + o)
    tl.store(y_ptr + o, acc)


def test_python_range_in_a_kernel_ignores_keywords():
    x = np.arange(3 * 8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    range_keywords_kernel[(1,)](x, y, 3, 8, True)
    np.testing.assert_array_equal(y, x.reshape(3, 8).sum(0))
