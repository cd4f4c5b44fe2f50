"""gpusim accepts exactly the numba-cuda kernels numba-cuda 0.30's real compiler accepts
(``tests/cuda_strict_corpus.py``).

For every case of the corpus: gpusim gives the corpus's verdict, and a rejection is one ``GpusimError`` that names
the construct (the words the real compiler's message names) and the kernel file and line.  The contract test
re-reads each verdict off the real compiler (``cuda.compile_ptx`` for sm_90 on this CPU host, with NVVM), wherever
numba-cuda can compile, so the corpus cannot drift from what the GPU would run.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.errors import GpusimError

sys.path.insert(0, str(Path(__file__).parent))
from cuda_strict_corpus import CASES, HEAD, N_ARG, N_ELEMS  # noqa: E402

GPUSIM_HEAD = HEAD.replace("from numba import cuda", "from gpusim import cuda")
IDS = [c["name"] for c in CASES]


def _load(tmp_path, c, head):
    path = tmp_path / f"nbcorpus_{c['name']}.py"
    path.write_text(head + c["src"])
    spec = importlib.util.spec_from_file_location(f"nbcorpus_{c['name']}_{abs(hash(head))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def _arg(t, rng):
    """A launch argument of numba type expression ``t``: ``T[::1]`` an array, ``int64`` N_ARG, a float 1.5."""
    if t.endswith("[::1]"):
        return (rng.random(N_ELEMS) * 4).astype(np.dtype(t[:-len("[::1]")]))
    return N_ARG if t.startswith("int") else 1.5


def _simulate(mod, c):
    rng = np.random.default_rng(0)
    args = [_arg(t, rng) for t in c["launch"]]
    return gpusim.simulate(mod.k, c["grid"], c["block"], *args, progress=False)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_gpusim_gives_the_real_compilers_verdict(tmp_path, c):
    mod, path = _load(tmp_path, c, GPUSIM_HEAD)
    if c["expect"] == "accept":
        _simulate(mod, c)
        return
    with pytest.raises(GpusimError) as ei:
        _simulate(mod, c)
    msg = str(ei.value)
    for word in c["names"]:
        assert word.lower() in msg.lower(), f"{c['name']}: {msg!r} does not name {word!r}"
    assert f"{path}:" in msg and "in kernel 'k'" in msg, \
        f"{c['name']}: the message does not name the kernel file, line and kernel: {msg!r}"
    assert "\n" not in msg.strip()


def test_the_corpus_has_both_verdicts():
    n_acc = sum(c["expect"] == "accept" for c in CASES)
    n_rej = sum(c["expect"] == "reject" for c in CASES)
    assert n_acc >= 40 and n_rej >= 40 and len(CASES) >= 90
    # numba names nothing of the construct for these two (an AttributeError inside its lowering)
    unnamed = {"generator_kernel", "recursive_device_function"}
    assert all(bool(c["names"]) == (c["name"] not in unnamed) for c in CASES if c["expect"] == "reject")


@pytest.fixture(scope="module")
def numba_compile_ptx():
    """numba-cuda's ``compile_ptx`` and its type namespace; skipped with the reason when it cannot run here."""
    try:
        if not hasattr(np, "row_stack"):     # numba-cuda registers an overload for np.row_stack (numpy 2.5 removed)
            np.row_stack = np.vstack
        from numba import cuda, types as nbt
        from gpusim.compilers import _numba
        from gpusim.errors import CompilerUnavailable
        _numba.available()
    except (ImportError, CompilerUnavailable) as e:
        pytest.skip(f"numba-cuda's compiler cannot run here: {e}")

    def probe(a):
        a[0] = 1.0
    try:
        with _numba._target_device((9, 0)):
            cuda.compile_ptx(probe, (nbt.float32[::1],), cc=(9, 0))
    except Exception as e:                  # noqa: BLE001 - NVVM / libdevice missing: no compiler here
        pytest.skip(f"numba-cuda's compiler cannot run here: {type(e).__name__}: {e}")
    return cuda.compile_ptx, vars(nbt), _numba._target_device


@pytest.mark.contract
@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_real_compiler_gives_the_corpus_verdict(tmp_path, c, numba_compile_ptx):
    compile_ptx, nbt, target_device = numba_compile_ptx
    mod, _ = _load(tmp_path, c, HEAD)
    sig = tuple(eval(t, dict(nbt)) for t in c["sig"])        # noqa: S307 - numba type expressions of the corpus
    try:
        with target_device((9, 0)):     # device functions are compiled for get_current_device(): answer sm_90
            compile_ptx(mod.k.py_func, sig, cc=(9, 0))
        verdict, msg = "accept", ""
    except Exception as e:   # numba's errors have no common base class (TypingError, TypeError, AttributeError...)
        verdict, msg = "reject", f"{type(e).__name__}: {e}"
    assert verdict == c["expect"], f"{c['name']}: the real compiler says {verdict}: {msg[:400]}"
    for word in c["names"]:
        assert word.lower() in msg.lower(), f"{c['name']}: the real compiler's message {msg[:400]!r} lacks {word!r}"


def _case(name):
    return next(c for c in CASES if c["name"] == name)


def test_rewritten_constructs_compute_numbas_results(tmp_path):
    """The accepted loops gpusim rewrites into loops over range() (gpusim/cuda/desugar.py), compile-time
    strings, array sums, inlined closures, isinstance, slice stores,
    range() of a float, ``*args``, ``for/while ... else``, divmod,
    max/min of an array, a float atomic index, tuple
    comparison, concatenation, runtime indices and ``in``, ``is None`` and starred arguments give numba's values, and ``raise`` ends only the raising thread."""
    rng = np.random.default_rng(1)
    a = rng.random(N_ELEMS).astype(np.float32)
    mod, _ = _load(tmp_path, _case("global_constant_tuple"), GPUSIM_HEAD)
    out = a.copy()
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert np.all(out[:32] == 1.0 + 2.0 + 3.0 + 2.0) and np.array_equal(out[32:], a[32:])
    mod, _ = _load(tmp_path, _case("iterate_over_array"), GPUSIM_HEAD)
    out = a.copy()
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert out[0] == pytest.approx(float(a.sum()), rel=1e-5) and np.array_equal(out[1:], a[1:])
    mod, _ = _load(tmp_path, _case("enumerate_and_zip"), GPUSIM_HEAD)
    out = a.copy()
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert out[0] == 0 * 0 + 1 * 1 + 2 * 2 + (0 + 0) + (1 + 1)
    mod, _ = _load(tmp_path, _case("string_concat"), GPUSIM_HEAD)     # compile-time strings fold
    out = a.copy()
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert np.all(out[:32] == 3.0)
    src = "@cuda.jit\ndef k(a, o):\n    i = cuda.grid(1)\n    o[i] = np.sum(a) + a.sum()\n"   # per-thread sums
    mod, _ = _load(tmp_path, {"name": "sums", "src": src}, GPUSIM_HEAD)
    o = np.zeros(32, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), a, o, progress=False)
    assert np.allclose(o, 2 * float(a.sum()), rtol=1e-5)
    src = ("@cuda.jit\ndef k(a, o):\n    i = cuda.grid(1)\n    def sq(x):\n        return x * x + a[0]\n"
           "    g = lambda x, y: x - y\n    o[i] = sq(a[i]) + g(i, 1.0)\n")     # closures, inlined as numba's
    mod, _ = _load(tmp_path, {"name": "closures", "src": src}, GPUSIM_HEAD)
    o = np.zeros(32, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), a, o, progress=False)
    assert np.allclose(o, a[:32] * a[:32] + a[0] + np.arange(32) - 1.0)
    src = ("@cuda.jit\ndef k(a, b, o):\n    o[0] = isinstance(a[0], float)\n    o[1] = isinstance(b[0], float)\n"
           "    o[2] = isinstance(a[0], np.float32)\n    o[3] = isinstance((1, 2), tuple)\n")
    mod, _ = _load(tmp_path, {"name": "isinst", "src": src}, GPUSIM_HEAD)
    o = np.full(4, 9, np.int32)
    gpusim.simulate(mod.k, (1,), (1,), a, a.astype(np.float64), o, progress=False)
    assert list(o) == [0, 1, 1, 1]      # numba: a float32 is not an instance of float, a float64 is
    src = ("@cuda.jit\ndef k(a, o, x):\n    a[1:5] = 7.0\n    a[-2:] = 3.0\n    a[::3] = 1.0\n    c = 0\n"
           "    for j in range(x):\n        c += 1\n    o[0] = c\n")
    mod, _ = _load(tmp_path, {"name": "slices", "src": src}, GPUSIM_HEAD)
    b, o = np.zeros(10), np.zeros(1, np.int64)
    gpusim.simulate(mod.k, (1,), (1,), b, o, 2.5, progress=False)
    assert list(b) == [1, 7, 7, 1, 7, 0, 1, 0, 3, 1] and o[0] == 2     # numba's values (its CPU target)
    mod, _ = _load(tmp_path, {"name": "varargs", "src": "@cuda.jit\ndef k(a, *rest):\n    a[0] = rest[0] + rest[1]\n"},
                   GPUSIM_HEAD)
    b = np.zeros(2, np.float32)
    gpusim.simulate(mod.k, (1,), (1,), b, 1.5, 2, progress=False)          # *rest is the tuple (1.5, 2)
    assert b[0] == 3.5
    mod, _ = _load(tmp_path, _case("for_else_and_while_else"), GPUSIM_HEAD)   # else: the lanes that did not break
    out = np.zeros(32, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert list(out[:9]) == [2, 2, 2, 2, 3, 3, 3, 1, 3]
    mod, _ = _load(tmp_path, _case("divmod_and_max_min_of_array"), GPUSIM_HEAD)
    out = a.copy()
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)     # divmod(-7, 2) == (-4, 1), Python's signs
    assert np.allclose(out[:32], -40 + 1 + a.max() - a.min())
    mod, _ = _load(tmp_path, _case("atomic_with_a_float_index"), GPUSIM_HEAD)
    out = np.zeros(4, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)         # index 1.5 -> 1
    assert list(out) == [0, 32, 0, 0]
    mod, _ = _load(tmp_path, _case("tuple_comparison"), GPUSIM_HEAD)
    out = np.zeros(32, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert list(np.flatnonzero(out)) == [i for i in range(32) if (i // 4, i % 4) < (1, 2)]
    mod, _ = _load(tmp_path, _case("starred_call_arguments"), GPUSIM_HEAD)
    out = np.zeros(2, np.float32)
    gpusim.simulate(mod.k, (1,), (1,), out, progress=False)
    assert out[0] == 2 + 123
    mod, _ = _load(tmp_path, _case("in_tuple_and_is_none"), GPUSIM_HEAD)
    out = np.zeros(32, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert list(np.flatnonzero(out)) == [1, 5]
    mod, _ = _load(tmp_path, _case("in_range"), GPUSIM_HEAD)
    out = np.zeros(32, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), out, N_ARG, progress=False)
    assert list(np.flatnonzero(out)) == list(range(5, N_ARG))
    mod, _ = _load(tmp_path, _case("tuple_concatenation_and_repetition"), GPUSIM_HEAD)
    out = np.zeros(2, np.float32)
    gpusim.simulate(mod.k, (1,), (1,), out, progress=False)
    assert out[0] == 3 + 4
    mod, _ = _load(tmp_path, _case("tuple_indexed_by_a_runtime_value"), GPUSIM_HEAD)
    out = np.zeros(32, np.float32)
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    t = (1.0, 2.0, 3.0)
    assert list(out) == [t[i % 3] + t[-(i % 3) - 1] * 10 for i in range(32)]
    src = ("@cuda.jit\ndef k(a):\n    i = cuda.grid(1)\n    if i % 2 == 1:\n        raise ValueError('odd')\n"
           "    a[i] = 7.0\n")
    mod, _ = _load(tmp_path, {"name": "raise_half", "src": src}, GPUSIM_HEAD)
    out = a.copy()
    gpusim.simulate(mod.k, (1,), (32,), out, progress=False)
    assert np.all(out[:32:2] == 7.0) and np.array_equal(out[1:32:2], a[1:32:2])


def test_the_command_line_prints_one_line_naming_file_line_kernel_and_construct(tmp_path):
    """``gpusim run`` of a numba-cuda kernel file (``from numba import cuda``: gpusim's stand-in without a driver)
    that numba refuses: exit status 2 and ``gpusim: error: FILE:LINE, in kernel 'k': <numba's words>``."""
    from test_cli_errors import run_cli, user_error
    c = _case("plain_python_function")
    src = HEAD + c["src"] + ("\n\ndef launch():\n    a = np.zeros(32, np.float32)\n"
                             "    return {'kernel': k, 'grid': (1,), 'block': (32,), 'args': [a]}\n")
    (tmp_path / "nb_plain.py").write_text(src)
    line = src.splitlines().index("    a[i] = helper(a[i])") + 1
    user_error(run_cli(tmp_path, "run", "nb_plain.py"), f"nb_plain.py:{line}, in kernel 'k': ",
               "Untyped global name 'helper'")
