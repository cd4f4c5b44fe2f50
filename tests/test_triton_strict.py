"""gpusim accepts exactly the Triton kernels Triton 3.6's real compiler accepts (``tests/triton_strict_corpus.py``).

For every case of the corpus: gpusim gives the corpus's verdict, and a rejection is one ``GpusimError`` that names
the construct (the words the real compiler's message names) and the kernel file and line.  The contract test
re-reads each verdict off the real compiler (``triton.compile`` for sm_90 on this CPU host), wherever Triton is
installed, so the corpus cannot drift from what the GPU would run.
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
from triton_strict_corpus import CASES, HEAD, N_ARG, N_ELEMS  # noqa: E402

GPUSIM_HEAD = "from gpusim import triton\nfrom gpusim.triton import language as tl\n\n\n"
IDS = [c["name"] for c in CASES]


def _load(tmp_path, c, head):
    path = tmp_path / f"corpus_{c['name']}.py"
    path.write_text(head + c["src"])
    spec = importlib.util.spec_from_file_location(f"corpus_{c['name']}_{abs(hash(head))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def _args(c):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(N_ELEMS).astype(np.float32) if t.startswith("*") else N_ARG
            for t in c["sig"].values() if t != "constexpr"]


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_gpusim_gives_the_real_compilers_verdict(tmp_path, c):
    mod, path = _load(tmp_path, c, GPUSIM_HEAD)
    if c["expect"] == "accept":
        gpusim.simulate(mod.k, (2,), *_args(c), **c["const"], **c["options"], progress=False)
        return
    with pytest.raises(GpusimError) as ei:
        gpusim.simulate(mod.k, (2,), *_args(c), **c["const"], **c["options"], progress=False)
    msg = str(ei.value)
    for word in c["names"]:
        assert word.lower() in msg.lower(), f"{c['name']}: {msg!r} does not name {word!r}"
    if "num_warps" not in c["options"] or c["options"]["num_warps"] in (1, 2, 4, 8, 16, 32):
        assert f"{path}:" in msg, f"{c['name']}: the message does not name the kernel file and line: {msg!r}"
    assert "\n" not in msg.strip()


def test_the_corpus_has_both_verdicts():
    verdicts = {c["expect"] for c in CASES}
    assert verdicts == {"accept", "reject"}
    assert len(CASES) >= 40


@pytest.mark.contract
@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_real_compiler_gives_the_corpus_verdict(tmp_path, c):
    pytest.importorskip("triton")
    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        import triton
    except ImportError as e:  # pragma: no cover
        pytest.skip(f"triton's compiler is not importable: {e}")
    mod, _ = _load(tmp_path, c, HEAD)
    try:
        triton.compile(ASTSource(fn=mod.k, signature=c["sig"], constexprs=c["const"]),
                       target=GPUTarget("cuda", 90, 32), options=c["options"])
        verdict, msg = "accept", ""
    except Exception as e:   # the real compiler's errors have no common base class
        verdict, msg = "reject", f"{type(e).__name__}: {e}"
    assert verdict == c["expect"], f"{c['name']}: the real compiler says {verdict}: {msg[-300:]}"
    for word in c["names"]:
        assert word.lower() in msg.lower(), f"{c['name']}: the real compiler's message {msg[-300:]!r} lacks {word!r}"


def test_ignored_calls_are_noted_in_the_report_only_when_made(tmp_path):
    src = ("@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
           "    x = tl.load(x_ptr + offs)\n{extra}    tl.store(x_ptr + offs, x + 1.0)\n")
    c = {"name": "noted", "src": src.format(extra="    tl.device_print(\"x\", x)\n"),
         "sig": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}}
    mod, _ = _load(tmp_path, c, GPUSIM_HEAD)
    rep = gpusim.simulate(mod.k, (1,), *_args(c), BLOCK=128, progress=False)
    assert any("device_print" in n for n in rep.notes)
    c2 = dict(c, name="plain", src=src.format(extra=""))
    mod2, _ = _load(tmp_path, c2, GPUSIM_HEAD)
    rep2 = gpusim.simulate(mod2.k, (1,), *_args(c2), BLOCK=128, progress=False)
    assert not any("device_print" in n for n in rep2.notes)
