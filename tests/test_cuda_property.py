"""Random SIMT kernels: the warp-vectorized executor must agree with the one-thread-at-a-time reference.

Hypothesis writes small kernels as source text — nested lane-varying ``if/elif/else``, ``for`` loops with
lane-varying bounds, ``while`` loops, ``break``/``continue``/``return``, ternaries, ``and``/``or``, masked
stores and atomics — and random launch shapes (partial warps, 2-D blocks, several chunks).
"""
import importlib.util
import itertools
import os
import tempfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpusim.cuda.launch as LM
from gpusim.cuda.reference import run_reference

_DIR = tempfile.mkdtemp(prefix="gpusim_prop_")
_count = itertools.count()

HEADER = """\
import math
import numpy as np
from gpusim import cuda


@cuda.jit
def kern(a, out, fo, cnt):
    tid = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y
    i = cuda.blockIdx.x * (cuda.blockDim.x * cuda.blockDim.y) + tid
    x = a[i % a.shape[0]]
    y = i % 7
    f = 0.5
"""
FOOTER = """\
    out[i, 0] = x
    out[i, 1] = y
    fo[i] = f
"""


@st.composite
def int_expr(draw, loopvars, depth=0):
    atoms = ["x", "y", "i", "tid", "a[abs(x) % a.shape[0]]", "a[(y + i) % 5]"] + list(loopvars)
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            return draw(st.sampled_from(atoms))
        return str(draw(st.integers(-9, 30)))
    kind = draw(st.integers(0, 6))
    a = draw(int_expr(loopvars, depth + 1))
    b = draw(int_expr(loopvars, depth + 1))
    if kind == 0:
        return f"({a} + {b})"
    if kind == 1:
        return f"({a} - {b})"
    if kind == 2:
        return f"({a} * {b} % 101)"
    if kind == 3:
        return f"({a} // {draw(st.integers(1, 7))})"
    if kind == 4:
        return f"({a} % {draw(st.sampled_from([2, 3, 5, -3]))})"
    if kind == 5:
        return f"({a} if {draw(cond(loopvars, depth + 1))} else {b})"
    return f"{draw(st.sampled_from(['min', 'max']))}({a}, {b})"


@st.composite
def cond(draw, loopvars, depth=0):
    kind = draw(st.integers(0, 6))
    e = draw(int_expr(loopvars, depth + 1))
    if kind == 0:
        return f"{e} > {draw(st.sampled_from(['x', 'y', '10', 'i']))}"
    if kind == 1:
        return f"({e}) % {draw(st.integers(2, 4))} == {draw(st.integers(0, 1))}"
    if kind == 2:
        return f"tid % 2 == {draw(st.integers(0, 1))}"
    if kind == 3 and depth < 2:
        return f"({draw(cond(loopvars, depth + 1))} and {draw(cond(loopvars, depth + 1))})"
    if kind == 4 and depth < 2:
        return f"({draw(cond(loopvars, depth + 1))} or {draw(cond(loopvars, depth + 1))})"
    if kind == 5:
        return f"not ({e} < 5)"
    return f"f > {draw(st.sampled_from(['1.0', '3.5', 'x * 0.01']))}"


@st.composite
def block(draw, depth, loopvars, in_loop, counter):
    n = draw(st.integers(1, 3))
    lines = []
    pad = "    " * (depth + 1)
    for _ in range(n):
        kind = draw(st.integers(0, 14 if depth < 3 else 5))
        if kind >= 12:     # loops and the jumps out of them, more often
            kind = (10 if in_loop else 8) if kind < 14 else 11
        if kind <= 1:
            v = draw(st.sampled_from(["x", "y"]))
            lines.append(f"{pad}{v} = ({draw(int_expr(loopvars))}) % 1009")
        elif kind == 2:
            lines.append(f"{pad}y += ({draw(int_expr(loopvars))}) % 13")
        elif kind == 3:
            lines.append(f"{pad}f = f * 0.5 + {draw(int_expr(loopvars))}")
        elif kind == 4:
            lines.append(f"{pad}out[i, 2] = {draw(int_expr(loopvars))}")
        elif kind == 5:
            if draw(st.booleans()):
                lines.append(f"{pad}f = math.sqrt(abs(f) + 1.0)")
            else:
                lines.append(f"{pad}cuda.atomic.add(cnt, tid % 4, 1)")
        elif kind in (6, 7):
            lines.append(f"{pad}if {draw(cond(loopvars))}:")
            lines += draw(block(depth + 1, loopvars, in_loop, counter))
            if draw(st.booleans()):
                lines.append(f"{pad}elif {draw(cond(loopvars))}:")
                lines += draw(block(depth + 1, loopvars, in_loop, counter))
            if draw(st.booleans()):
                lines.append(f"{pad}else:")
                lines += draw(block(depth + 1, loopvars, in_loop, counter))
        elif kind == 8:
            k = f"k{next(counter)}"
            rng = draw(st.sampled_from(["range(x % 4)", "range(i % 3 + 1)", "range(3)", "range(tid % 3, 5)",
                                        "range(y % 5, 0, -1)", "range(20)"]))
            lines.append(f"{pad}for {k} in {rng}:")
            lines += draw(block(depth + 1, loopvars + [k], True, counter))
        elif kind == 9:
            c = f"c{next(counter)}"
            lines.append(f"{pad}{c} = 0")
            lines.append(f"{pad}while {c} < (x % 3) + {draw(st.integers(0, 2))}:")
            lines.append(f"{pad}    {c} += 1")
            lines += draw(block(depth + 1, loopvars + [c], True, counter))
        elif kind == 10 and in_loop:
            lines.append(f"{pad}if {draw(cond(loopvars))}:")
            if draw(st.booleans()):
                lines.append(f"{pad}    y += 1")
            lines.append(f"{pad}    {draw(st.sampled_from(['break', 'continue']))}")
        elif kind == 11:
            lines.append(f"{pad}if {draw(cond(loopvars))}:")
            lines.append(f"{pad}    return")
        else:
            lines.append(f"{pad}x = {draw(int_expr(loopvars))} % 1009 if {draw(cond(loopvars))} else y")
    return lines


@st.composite
def kernels(draw):
    body = draw(block(0, [], False, itertools.count()))
    src = HEADER + "\n".join(body) + "\n" + FOOTER
    grid = draw(st.integers(1, 3))
    blk = (draw(st.sampled_from([1, 7, 32, 33, 50, 64])), draw(st.integers(1, 2)))
    chunk = draw(st.sampled_from([64, 1 << 20]))
    record = draw(st.booleans())
    return src, grid, blk, chunk, record


def _load(src):
    path = os.path.join(_DIR, f"k{next(_count)}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kern


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kernels())
def test_vectorized_equals_one_thread_at_a_time(case):
    src, grid, blk, chunk, record = case
    kern = _load(src)
    n = grid * blk[0] * blk[1]
    rng = np.random.default_rng(n)
    a = rng.integers(-50, 200, size=11).astype(np.int64)

    def fresh():
        return [a.copy(), np.full((n, 3), -1, np.int64), np.full(n, -1.0), np.zeros(4, np.int64)]

    ref = fresh()
    run_reference(kern, grid, blk, ref)
    got = fresh()
    old = LM.CHUNK_THREADS
    LM.CHUNK_THREADS = chunk
    try:
        tr = LM.run(kern, grid, blk, got, record=record)
    finally:
        LM.CHUNK_THREADS = old
    if record:
        tr.check()
    np.testing.assert_array_equal(got[1], ref[1], err_msg=src)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-12, atol=0, err_msg=src)
    np.testing.assert_array_equal(got[3], ref[3], err_msg=src)
