"""gpusim.cuda: what SIMT kernels compute — control flow under masks, numba typing, atomics, shared/local
memory, device functions, grids, the DeviceNDArray API, and the errors bad kernels and launches raise."""
import cmath
import math

import numpy as np
import pytest

from gpusim import cuda
from gpusim.cuda import trace_launch
from gpusim.errors import BarrierDivergence, CompileError, LaunchError, OutOfBounds, UnsupportedConstruct
from gpusim.trace import Pipe, Space

TILE = 4            # a global constant read by kernels (frozen at compile time, as numba does)
THIS = __file__


def run(kernel, grid, block, *args, shared=0):
    tr = trace_launch(kernel, grid, block, list(args), shared_bytes=shared)
    tr.check()
    return tr


# ---- control flow -----------------------------------------------------------------------------------------

@cuda.jit
def k_nested_if(a, out):
    i = cuda.grid(1)
    if i < out.size:
        x = a[i]
        if x % 3 == 0:
            if x % 2 == 0:
                y = 10
            else:
                y = 11
        elif x % 3 == 1:
            y = 20
        else:
            y = 30 if x > 50 else 31
        out[i] = y + x


def test_nested_divergent_if_elif_else():
    a = np.arange(100, dtype=np.int64)
    out = np.full(100, -1, np.int64)
    run(k_nested_if, 4, 32, a, out)           # 128 threads, 28 idle
    y = np.where(a % 3 == 0, np.where(a % 2 == 0, 10, 11), np.where(a % 3 == 1, 20, np.where(a > 50, 30, 31)))
    np.testing.assert_array_equal(out, y + a)


@cuda.jit
def k_loops(out):
    i = cuda.grid(1)
    s = 0
    for k in range(i % 7):              # lane-varying trip count
        s += k
    t = 0
    for k in range(i, 3 * i, 2):        # lane-varying start and stop, step 2
        t += 1
    u = 0
    for k in range(i % 5, -1, -1):      # negative step
        u = u * 2 + k
    n = i
    steps = 0
    while n != 1 and n > 0:             # Collatz: lane-varying while
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    out[i, 0] = s
    out[i, 1] = t
    out[i, 2] = u
    out[i, 3] = steps


def test_loops_with_lane_varying_bounds_and_while():
    out = np.zeros((96, 4), np.int64)
    run(k_loops, 3, 32, out)
    for i in range(96):
        u = 0
        for k in range(i % 5, -1, -1):
            u = u * 2 + k
        n, steps = i, 0
        while n != 1 and n > 0:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        assert list(out[i]) == [sum(range(i % 7)), len(range(i, 3 * i, 2)), u, steps], i


@cuda.jit
def k_break_continue_return(out):
    i = cuda.grid(1)
    out[i, 0] = -1
    acc = 0
    for k in range(20):
        if k == i % 11:
            break
        if k % 3 == 1:
            continue
        acc += k
    out[i, 1] = acc
    j = 0
    while True:
        j += 1
        if j * j > i:
            break
    out[i, 2] = j
    if i % 4 == 3:
        return
    out[i, 0] = i
    for k in range(5):
        if k == 2 and i % 2 == 0:
            return                      # return from inside a loop
    out[i, 3] = 7


def test_break_continue_early_return():
    out = np.full((64, 4), -5, np.int64)
    run(k_break_continue_return, 2, 32, out)
    for i in range(64):
        acc = 0
        for k in range(20):
            if k == i % 11:
                break
            if k % 3 == 1:
                continue
            acc += k
        j = 0
        while True:
            j += 1
            if j * j > i:
                break
        returned_early = i % 4 == 3
        exp = [-1 if returned_early else i, acc, j, -5 if (returned_early or i % 2 == 0) else 7]
        assert list(out[i]) == exp, (i, list(out[i]), exp)


@cuda.jit
def k_short_circuit(a, out):
    i = cuda.grid(1)
    # a has fewer elements than threads: the right operand must only be evaluated where i < a.size
    if i < a.size and a[i] > 0:
        out[i] = 1
    elif i >= a.size or a[i] < -5:
        out[i] = 2
    else:
        out[i] = 3
    b = not (i % 2 == 0)
    if b:
        out[i] += 10


def test_short_circuit_guards_loads():
    a = np.array([1, -1, -10, 0, 5], np.int64)
    out = np.zeros(8, np.int64)
    run(k_short_circuit, 1, 8, a, out)
    exp = np.array([1, 3, 2, 3, 1, 2, 2, 2]) + np.array([0, 10] * 4)
    np.testing.assert_array_equal(out, exp)


# ---- typing ---------------------------------------------------------------------------------------------------

@cuda.jit
def k_typing(a, out):
    i = cuda.grid(1)
    x = a[i]                                   # float32
    out[i, 0] = x * np.float32(0.1)           # float32 * float32 -> float32
    out[i, 1] = x * 0.1                        # float32 * float64 literal -> float64
    out[i, 2] = i / 2                          # int / int -> float64
    out[i, 3] = (i - 5) // 2                   # floor division on negatives (Python semantics)
    out[i, 4] = (i - 5) % 3
    out[i, 5] = math.sqrt(x)                   # float32 in, float32 out
    out[i, 6] = math.floor(-x)                 # floor -> int
    out[i, 7] = x + 1                          # float32 + int64 -> float64
    out[i, 8] = np.float32(x / np.float32(3.0))


def test_numba_typing_rules():
    a = np.linspace(0.3, 7.9, 16).astype(np.float32)
    out = np.zeros((16, 9), np.float64)
    tr = run(k_typing, 1, 16, a, out)
    i = np.arange(16)
    np.testing.assert_array_equal(out[:, 0], (a * np.float32(0.1)).astype(np.float64))
    np.testing.assert_array_equal(out[:, 1], a.astype(np.float64) * 0.1)
    assert not np.array_equal(out[:, 0], out[:, 1])     # the two typings really differ
    np.testing.assert_array_equal(out[:, 2], i / 2)
    np.testing.assert_array_equal(out[:, 3], (i - 5) // 2)
    np.testing.assert_array_equal(out[:, 4], (i - 5) % 3)
    np.testing.assert_array_equal(out[:, 5], np.sqrt(a).astype(np.float64))
    np.testing.assert_array_equal(out[:, 6], np.floor(-a.astype(np.float64)))
    np.testing.assert_array_equal(out[:, 7], a.astype(np.float64) + 1)
    np.testing.assert_array_equal(out[:, 8], (a / np.float32(3)).astype(np.float64))
    # the dtype decides the pipe: the float32 product is an FMUL, the float64 one a DMUL after an F2F
    labels = [(op.label, op.pipe, op.line) for op in tr.tables[0].ops]
    line0 = k_typing.py_func.__code__.co_firstlineno + 4
    assert ("FMUL", Pipe.FP32, line0) in labels
    assert ("DMUL", Pipe.FP64, line0 + 1) in labels
    assert ("F2F.F64.F32", Pipe.FP64, line0 + 1) in labels
    assert not any(lb == "DMUL" and ln == line0 for lb, _, ln in labels)


# ---- atomics ----------------------------------------------------------------------------------------------------

@cuda.jit
def k_atomics(a, counter, olds, fsum, mx, mn, flag, winners, exch, got):
    i = cuda.grid(1)
    olds[i] = cuda.atomic.add(counter, 0, 1)          # every thread on one address
    cuda.atomic.add(fsum, i % 3, a[i])
    cuda.atomic.max(mx, 0, a[i])
    cuda.atomic.min(mn, 0, a[i])
    old = cuda.atomic.cas(flag, 0, 0, i + 1)          # first thread wins
    if old == 0:
        cuda.atomic.add(winners, 0, 1)
    got[i] = cuda.atomic.exch(exch, 0, i)


def test_atomics_exact_under_contention():
    n = 300
    a = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    counter = np.zeros(1, np.int64)
    olds = np.zeros(n, np.int64)
    fsum = np.zeros(3, np.float32)
    mx = np.full(1, -np.inf, np.float32)
    mn = np.full(1, np.inf, np.float32)
    flag = np.zeros(1, np.int32)
    winners = np.zeros(1, np.int32)
    exch = np.full(1, -7, np.int64)
    got = np.zeros(n, np.int64)
    tr = run(k_atomics, 3, 100, a, counter, olds, fsum, mx, mn, flag, winners, exch, got)
    assert counter[0] == n
    np.testing.assert_array_equal(olds, np.arange(n))   # thread order is the atomic order
    for r in range(3):                                   # sequential float32 accumulation, thread order
        acc = np.float32(0)
        for v in a[r::3]:
            acc = np.float32(acc + v)
        assert fsum[r] == acc
    assert mx[0] == a.max() and mn[0] == a.min()
    assert flag[0] == 1 and winners[0] == 1
    # exch chain: thread i receives the value thread i-1 swapped in, thread 0 the initial -7
    assert exch[0] == n - 1 and got[0] == -7 and list(got[1:]) == list(range(n - 1))
    kinds = {op.label for op in tr.tables[0].ops}
    assert "ATOMG.E.ADD.64" in kinds and "RED.E.ADD.32" in kinds and "ATOMG.E.CAS.32" in kinds


@cuda.jit
def k_shared_histogram(x, hist):
    h = cuda.shared.array(8, np.int32)
    t = cuda.threadIdx.x
    if t < 8:
        h[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(h, x[i] % 8, 1)
    cuda.syncthreads()
    if t < 8:
        cuda.atomic.add(hist, t, h[t])


def test_shared_atomics_histogram():
    x = np.random.default_rng(2).integers(0, 1000, 1000)
    hist = np.zeros(8, np.int32)
    tr = run(k_shared_histogram, 8, 128, x, hist)
    np.testing.assert_array_equal(hist, np.bincount(x % 8, minlength=8))
    assert any(op.label.startswith("ATOMS.ADD") and op.mem.space == Space.SHARED for op in tr.tables[0].ops)


# ---- shared, dynamic shared and local memory --------------------------------------------------------------------

@cuda.jit
def k_reverse(a, out):
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = a[i]
    cuda.syncthreads()
    out[i] = s[cuda.blockDim.x - 1 - t]


def test_shared_memory_and_syncthreads():
    a = np.arange(256, dtype=np.float32)
    out = np.zeros_like(a)
    tr = run(k_reverse, 4, 64, a, out)
    np.testing.assert_array_equal(out, a.reshape(4, 64)[:, ::-1].ravel())
    assert tr.shared_bytes_per_cta == 256
    assert sum(op.label == "BAR.SYNC" for op in tr.tables[0].ops) == 1


@cuda.jit
def k_dynamic(a, out):
    f = cuda.shared.array(0, np.float32)        # the launch's dynamic shared memory ...
    w = cuda.shared.array(0, np.int32)          # ... seen through a second dtype (aliases it)
    st = cuda.shared.array(3, np.float64)       # a static array before it
    t = cuda.threadIdx.x
    st[0] = 1.0
    f[t] = a[t] * 2
    cuda.syncthreads()
    out[t, 0] = f[f.size - 1 - t]
    out[t, 1] = w[t]                            # the int32 view of the float bits
    out[t, 2] = f.size


def test_dynamic_shared_memory():
    a = np.arange(32, dtype=np.float32) + 0.5
    out = np.zeros((32, 3), np.float64)
    tr = run(k_dynamic, 1, 32, a, out, shared=128)
    np.testing.assert_array_equal(out[:, 0], (a * 2)[::-1])
    np.testing.assert_array_equal(out[:, 1], (a * 2).view(np.int32))
    assert (out[:, 2] == 32).all()
    assert tr.shared_bytes_per_cta == 24 + 128
    assert tr.meta["shared_static_bytes"] == 24


@cuda.jit
def k_local(a, out, k):
    i = cuda.grid(1)
    loc = cuda.local.array(8, np.float64)
    reg = cuda.local.array(2, np.float64)
    for j in range(8):
        loc[j] = a[i] * j
    reg[0] = 1.0
    reg[1] = a[i]
    out[i] = loc[(i + k) % 8] + reg[0] + reg[1] + loc[k % 8]   # runtime indices: local memory


def test_local_arrays():
    a = np.arange(64, dtype=np.float64)
    out = np.zeros(64)
    tr = run(k_local, 2, 32, a, out, 3)
    i = np.arange(64)
    np.testing.assert_array_equal(out, a * ((i + 3) % 8) + 1 + a + a * 3)
    local_ops = [op for op in tr.tables[0].ops if op.mem is not None and op.mem.space == Space.LOCAL]
    assert [op.label for op in local_ops] == ["LDL.64", "LDL.64"]  # the loop is unrolled: constant-index stores
    assert tr.local_bytes_per_thread == 64
    # lanes reading the same local element touch consecutive 8 B words: 256 B = 8 sectors in 2 lines per warp
    m = local_ops[1].mem
    assert list(m.sectors_per_warp()) == [8, 8] and list(m.lines_per_warp()) == [2, 2]
    # lanes reading different elements are 256 B apart: every lane its own sector
    assert list(local_ops[0].mem.sectors_per_warp()) == [32, 32]


# ---- device functions, grids --------------------------------------------------------------------------------

@cuda.jit(device=True)
def d_clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@cuda.jit(device=True)
def d_poly(x):
    return d_clamp(x * x - TILE, 0, 50) + 1


@cuda.jit(fastmath=True, debug=False)
def k_devfn(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = d_poly(a[i])


def test_device_functions_inline_with_divergent_returns():
    a = np.arange(-10, 30, dtype=np.int64)
    out = np.zeros_like(a)
    run(k_devfn, 2, 32, a, out)
    np.testing.assert_array_equal(out, np.clip(a * a - TILE, 0, 50) + 1)


@cuda.jit
def k_grid3(out):
    x, y, z = cuda.grid(3)
    nx, ny, nz = cuda.gridsize(3)
    if x < out.shape[2] and y < out.shape[1] and z < out.shape[0]:
        out[z, y, x] = x + 100 * y + 10000 * z + 1000000 * (nx + ny + nz) + cuda.blockIdx.z


@cuda.jit
def k_grid2(out):
    x, y = cuda.grid(2)
    if x < out.shape[1] and y < out.shape[0]:
        out[y, x] = cuda.threadIdx.x + 10 * cuda.threadIdx.y + 100 * cuda.blockIdx.x + 1000 * cuda.blockIdx.y


def test_2d_and_3d_grids():
    out = np.zeros((5, 6, 7), np.int64)
    run(k_grid3, (2, 2, 3), (4, 3, 2), out)
    z, y, x = np.meshgrid(np.arange(5), np.arange(6), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(out, x + 100 * y + 10000 * z + 1000000 * (8 + 6 + 6) + z // 2)
    o2 = np.zeros((10, 13), np.int64)
    run(k_grid2, (4, 3), (4, 4), o2)
    y, x = np.meshgrid(np.arange(10), np.arange(13), indexing="ij")
    np.testing.assert_array_equal(o2, x % 4 + 10 * (y % 4) + 100 * (x // 4) + 1000 * (y // 4))


@cuda.jit
def k_scale(a, s):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = a[i] * s


def test_device_array_api_and_plain_launch():
    h = np.arange(10, dtype=np.float32)
    d = cuda.to_device(h)
    assert d.shape == (10,) and d.size == 10 and d.dtype == np.float32 and d.ndim == 1
    k_scale[1, 32](d, 3.0)
    np.testing.assert_array_equal(h, np.arange(10))            # the host copy is untouched
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(10) * 3)
    buf = np.zeros(10, np.float32)
    d.copy_to_host(buf)
    assert buf[4] == 12 and d[4] == 12
    e = cuda.device_array((4, 3), dtype=np.int32)
    assert e.shape == (4, 3) and e.dtype == np.int32
    f = cuda.device_array_like(h)
    assert f.shape == h.shape and f.dtype == h.dtype
    k_scale[(1,), (16,), 0, 0](h, 2)                           # numpy arrays work in place too
    np.testing.assert_array_equal(h, np.arange(10) * 2)
    cuda.synchronize()
    assert cuda.is_available()
    with pytest.raises(LaunchError):
        k_scale(h, 2)                                          # no launch configuration


def test_device_attributes_and_events_time_the_launches_between_them():
    import gpusim
    from gpusim.config import load_gpu
    dev = cuda.get_current_device()
    h100 = load_gpu("h100")
    assert dev.compute_capability == (9, 0) and dev.MULTIPROCESSOR_COUNT == h100.chip.sm_count == 132
    assert dev.WARP_SIZE == 32 and dev.MAX_THREADS_PER_BLOCK == 1024 and dev.L2_CACHE_SIZE == 50 * 2 ** 20
    assert len(cuda.gpus) == 1 and cuda.gpus[0].name == dev.name == b"NVIDIA H100 SXM5 80GB"
    assert cuda.current_context().get_memory_info()[1] == 80 * 2 ** 30
    with pytest.raises(AttributeError, match="no attribute 'NOT_AN_ATTRIBUTE'"):
        dev.NOT_AN_ATTRIBUTE
    a = np.arange(1 << 14, dtype=np.float32)
    start, mid, end = cuda.event(), cuda.event(), cuda.event()
    start.record()
    k_scale[64, 256](a, 2.0)
    mid.record()
    k_scale[64, 256](a, 2.0)
    k_scale[64, 256](a, 2.0)
    end.record()
    end.synchronize()
    one, three = start.elapsed_time(mid), cuda.event_elapsed_time(start, end)
    # the same launch simulated by gpusim.simulate: the events give its simulated time, in ms
    rep = gpusim.simulate(k_scale, (64,), (256,), np.arange(1 << 14, dtype=np.float32), 2.0)
    assert one == pytest.approx(rep.cycles / (h100.chip.sm_clock_mhz * 1e3), rel=0.02)
    assert three == pytest.approx(3 * one, rel=0.05) and mid.elapsed_time(start) == pytest.approx(-one)
    with pytest.raises(gpusim.errors.GpusimError, match="timing=False"):
        cuda.event(timing=False).elapsed_time(end)


def test_plain_launch_publishes_a_trace_only_to_observers():
    import gpusim.trace as T
    seen = []
    T.launch_observers.append(seen.append)
    try:
        h = np.ones(64, np.float32)
        k_scale[2, 32](h, 2.0)
    finally:
        T.launch_observers.remove(seen.append)
    assert len(seen) == 1 and seen[0].grid == (2, 1, 1) and seen[0].name == "k_scale"
    k_scale[2, 32](h, 2.0)
    assert len(seen) == 1


@cuda.jit
def k_negative_index(a, out):
    i = cuda.threadIdx.x
    out[i] = a[-1 - i]


def test_negative_indices_wrap_around():
    a = np.arange(8, dtype=np.int64)
    out = np.zeros(8, np.int64)
    run(k_negative_index, 1, 8, a, out)
    np.testing.assert_array_equal(out, a[::-1])


# ---- errors -----------------------------------------------------------------------------------------------------

def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn.py_func)
    for k, ln in enumerate(lines):
        if text in ln:
            return start + k
    raise AssertionError(text)


@cuda.jit
def k_with(a):
    with open("x") as f:
        a[0] = 1


@cuda.jit
def k_listcomp(a):
    b = [x for x in range(3)]
    a[0] = b[0]


@cuda.jit
def k_try(a):
    try:
        a[0] = 1
    except Exception:
        pass


@pytest.mark.parametrize("kern,text,what", [(k_with, "with open", "'with' statement"),
                                            (k_listcomp, "b = [x", "list comprehension"),
                                            (k_try, "try:", "'try' statement")])
def test_unsupported_construct_names_file_line(kern, text, what):
    with pytest.raises(UnsupportedConstruct) as e:
        run(kern, 1, 1, np.zeros(1))
    msg = str(e.value)
    assert f"{THIS}:{_line_of(kern, text)}" in msg and what in msg
    assert e.value.line == _line_of(kern, text)


@cuda.jit
def k_oob(a, out):
    i = cuda.grid(1)
    out[i] = a[i + 1]


def test_out_of_bounds_global_names_thread_block_and_address():
    a = np.zeros(100, np.float32)
    out = np.zeros(128, np.float32)
    with pytest.raises(OutOfBounds) as e:
        run(k_oob, (2, 1), (64, 1), a, out)
    err = e.value
    assert err.block == (1, 0, 0) and err.thread == (35, 0, 0)      # i = 99 reads a[100]
    assert err.kernel == "k_oob" and err.line == _line_of(k_oob, "a[i + 1]")
    msg = str(err)
    assert "a[100]" in msg and "read" in msg and "0x" in msg and "block (1, 0, 0)" in msg and "thread (35, 0, 0)" in msg
    from gpusim.cuda.memory import ADDRESS_SPACE
    assert f"0x{ADDRESS_SPACE.address_of(a) + 400:x}" in msg


@cuda.jit
def k_shift_store(a, out):
    i = cuda.grid(1)
    out[i + 1] = a[i] * 2


def test_unit_stride_store_of_many_lanes_is_exact_and_still_bounds_checked():
    """A store whose lanes write consecutive elements (the slice-copy fast path, a million-lane chunk and more)
    writes the same values as numpy, and one element past the end is still the out-of-bounds error of its
    thread."""
    n = 1 << 13
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(n + 1, np.float32)
    run(k_shift_store, n // 256, 256, a, out)
    assert out[0] == 0 and np.array_equal(out[1:], 2 * a)
    with pytest.raises(OutOfBounds) as e:
        run(k_shift_store, n // 256, 256, a, np.zeros(n, np.float32))
    assert e.value.block == (n // 256 - 1, 0, 0) and e.value.thread == (255, 0, 0) and "write" in str(e.value)


@cuda.jit
def k_oob_shared(out):
    s = cuda.shared.array(16, np.int32)
    t = cuda.threadIdx.x
    s[t] = t
    out[t] = s[0]


def test_out_of_bounds_shared_write():
    with pytest.raises(OutOfBounds) as e:
        run(k_oob_shared, 1, 32, np.zeros(32, np.int32))
    assert e.value.thread == (16, 0, 0) and "write" in str(e.value) and "shared" in str(e.value)
    assert "s[16]" in str(e.value)


@cuda.jit
def k_barrier_div(a):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()
        a[t] = 1


@cuda.jit
def k_barrier_after_exit(a):
    t = cuda.threadIdx.x
    if t >= 20:
        return
    cuda.syncthreads()
    a[t] = 1


def test_barrier_divergence():
    with pytest.raises(BarrierDivergence) as e:
        run(k_barrier_div, 2, 32, np.zeros(32))
    err = e.value
    assert err.line == _line_of(k_barrier_div, "cuda.syncthreads()") and err.block == (0, 0, 0)
    assert "(16, 0, 0)" in str(err) and "(0, 0, 0)" in str(err)
    a = np.zeros(32)
    run(k_barrier_after_exit, 1, 32, a)        # exited threads do not count at a barrier
    assert a.sum() == 20


def test_launch_errors():
    a = np.zeros(10)
    with pytest.raises(LaunchError, match="1024"):
        run(k_scale, 1, 2048, a, 1.0)
    with pytest.raises(LaunchError, match="zero"):
        run(k_scale, 0, 32, a, 1.0)
    with pytest.raises(LaunchError, match="shared memory"):
        run(k_dynamic, 1, 32, a, np.zeros((32, 3)), shared=300 * 1024)
    with pytest.raises(LaunchError, match="arguments"):
        run(k_scale, 1, 32, a)


@cuda.jit
def k_store_float_index(a):
    a[1.5] = 0


def test_compile_errors():
    with pytest.raises(CompileError, match="integer"):
        run(k_store_float_index, 1, 1, np.zeros(3))


@cuda.jit
def k_atomic_max(a, out):
    i = cuda.grid(1)
    cuda.atomic.max(out, 0, a[i])


@cuda.jit
def k_atomic_add(a, out):
    i = cuda.grid(1)
    cuda.atomic.add(out, 0, a[i])


@cuda.jit
def k_atomic_inc(out):
    cuda.atomic.inc(out, 0, 7)


@pytest.mark.parametrize("kernel,dtype,ok", [
    (k_atomic_max, np.int8, False), (k_atomic_add, np.float16, False), (k_atomic_add, np.int16, False),
    (k_atomic_inc, np.int32, False), (k_atomic_inc, np.uint32, True), (k_atomic_max, np.int64, True),
    (k_atomic_add, np.float64, True)])
def test_atomics_typed_as_numba_cuda_types_them(kernel, dtype, ok):
    """numba-cuda's typing has atomics for 32/64-bit ints and floats only (inc/dec: unsigned): the others fail to
    compile there, so they are compile errors here too, naming the line."""
    out = np.zeros(1, dtype)
    args = (out,) if kernel is k_atomic_inc else (np.arange(32).astype(dtype), out)
    if ok:
        run(kernel, 1, 32, *args)
        return
    with pytest.raises(CompileError, match=f"has no implementation for a {np.dtype(dtype).name} array") as ei:
        run(kernel, 1, 32, *args)
    assert "test_cuda_semantics.py:" in str(ei.value)


# ---- less common features ---------------------------------------------------------------------------------------

LUT = np.array([1.5, 2.5, 3.5, 4.5], np.float64)
SIZES = (3, 4)


@cuda.jit
def k_warp_ops(a, out):
    i = cuda.grid(1)
    v = a[i]
    s = v
    off = 16
    while off > 0:
        s += cuda.shfl_down_sync(0xffffffff, s, off)
        off //= 2
    out[i, 0] = s
    out[i, 1] = cuda.shfl_sync(0xffffffff, v, 0)
    out[i, 2] = cuda.shfl_xor_sync(0xffffffff, v, 1)
    out[i, 3] = cuda.ballot_sync(0xffffffff, v > 10)
    out[i, 4] = cuda.syncthreads_count(1 if v > 10 else 0)   # an int: numba-cuda refuses a bool
    out[i, 5] = cuda.laneid


def test_warp_shuffles_and_votes():
    a = np.arange(64, dtype=np.int64)
    out = np.zeros((64, 6), np.int64)
    run(k_warp_ops, 2, 32, a, out)
    assert out[0, 0] == a[:32].sum() and out[32, 0] == a[32:].sum()
    assert list(out[:3, 1]) == [0, 0, 0] and list(out[32:35, 1]) == [32, 32, 32]
    np.testing.assert_array_equal(out[:, 2], a ^ 1)
    assert out[0, 3] == 0xFFFFF800 and out[40, 3] == 0xFFFFFFFF     # lanes 11..31 of warp 0 hold v > 10
    assert out[0, 4] == 21 and out[63, 4] == 32
    np.testing.assert_array_equal(out[:, 5], np.arange(64) % 32)


@cuda.jit
def k_warp_match(a, out):
    i = cuda.grid(1)
    v = a[i]
    out[i, 0] = cuda.match_any_sync(0xffffffff, v)
    m, same = cuda.match_all_sync(0xffffffff, v)
    out[i, 1] = m
    out[i, 2] = same
    out[i, 3] = cuda.lanemask_lt()
    out[i, 4] = cuda.eq_sync(0xffffffff, v > 2)
    out[i, 5] = cuda.selp(v > 2, v, a[0])


def test_warp_match_lanemask_eq_and_selp():
    # warp 0: values 0..3 repeating (four groups of 8 lanes); warp 1: one value in every lane
    a = np.concatenate([np.arange(32) % 4, np.full(32, 7)]).astype(np.int32)
    out = np.zeros((64, 6), np.int64)
    run(k_warp_match, 2, 32, a, out)
    group = [sum(1 << j for j in range(32) if j % 4 == g) for g in range(4)]
    np.testing.assert_array_equal(out[:32, 0], [group[j % 4] for j in range(32)])
    assert (out[32:, 0] == 0xFFFFFFFF).all()
    assert (out[:32, 1] == 0).all() and (out[:32, 2] == 0).all()           # warp 0: values differ
    assert (out[32:, 1] == 0xFFFFFFFF).all() and (out[32:, 2] == 1).all()
    np.testing.assert_array_equal(out[:, 3], [(1 << (j % 32)) - 1 for j in range(64)])
    assert (out[:32, 4] == 0).all() and (out[32:, 4] == 1).all()    # warp 0: only the lanes holding 3 say v > 2
    np.testing.assert_array_equal(out[:, 5], np.where(a > 2, a, a[0]))


@cuda.jit
def k_selp_mixed(a, out):
    i = cuda.grid(1)
    out[i] = cuda.selp(a[i] > 2, a[i], -a[i])      # numba: -int32 is int64, so selp(bool, int32, int64)


def test_selp_of_two_types_is_refused_as_numba_refuses_it():
    with pytest.raises(CompileError, match=r"selp\(bool, int32, int64\)") as ei:
        run(k_selp_mixed, 1, 32, np.arange(32, dtype=np.int32), np.zeros(32, np.int64))
    assert "test_cuda_semantics.py:" in str(ei.value)


@cuda.jit
def k_misc(a, out, pair):
    i = cuda.grid(1)
    t = cuda.const.array_like(LUT)
    sh = cuda.shared.array(shape=SIZES, dtype=np.float32)
    row = a[i % 2]                  # a is 2-D: a[i % 2] is one of its rows
    p, q = pair                     # a tuple argument
    sh[0, 0] = np.float32(1.25)
    x = row[1] + t[i % 4] + LUT[0] + p * q + sh[0, 0] + int(2.9)
    print("thread", i, x)           # accepted, prints nothing
    assert x > 0                    # ignored, as numba does
    out[i] = x + len(a) + a.shape[1] + a.ndim


def test_constant_arrays_subarrays_tuples_print():
    A = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = np.zeros(8)
    tr = run(k_misc, 1, 8, A, out, (2, 3.0))
    i = np.arange(8)
    np.testing.assert_array_equal(out, A[i % 2, 1] + LUT[i % 4] + 1.5 + 6.0 + 1.25 + 2 + 2 + 3 + 2)
    assert any(op.label == "LDC.64" for op in tr.tables[0].ops)     # constant-bank loads
    assert tr.shared_bytes_per_cta == 48


@cuda.jit
def k_write_const(out):
    t = cuda.const.array_like(LUT)
    t[0] = 1.0
    out[0] = t[0]


def test_constant_arrays_are_read_only():
    with pytest.raises(CompileError, match="constant"):
        run(k_write_const, 1, 1, np.zeros(1))


try:
    import numba
    from numba import float32 as nb_float32
except ImportError:          # pragma: no cover
    numba = None
    nb_float32 = np.float32


@cuda.jit
def k_numba_types(out):
    s = cuda.shared.array(4, dtype=nb_float32)
    i = cuda.threadIdx.x
    s[i] = numba.float32(i) / numba.float32(3)
    out[i] = s[i] * 3.0


@pytest.mark.skipif(numba is None, reason="numba not installed")
def test_numba_type_names():
    out = np.zeros(4)
    run(k_numba_types, 1, 4, out)
    np.testing.assert_array_equal(out, (np.arange(4, dtype=np.float32) / np.float32(3)).astype(np.float64) * 3.0)


@cuda.jit
def k_math(x, out):
    i = cuda.grid(1)
    v = x[i]
    out[i, 0] = math.floor(v)
    out[i, 1] = round(v)
    out[i, 2] = min(v, 0.5, i)
    out[i, 3] = math.erf(v)
    out[i, 4] = math.atan2(v, 1.5)
    out[i, 5] = math.isnan(v / v)
    out[i, 6] = v ** 2
    out[i, 7] = int(v * 3.7)
    out[i, 8] = math.exp(v) + math.log(abs(v) + 1) + math.tanh(v)


def test_math_and_builtins():
    x = np.linspace(-2, 3, 16)
    out = np.zeros((16, 9))
    run(k_math, 1, 16, x, out)
    np.testing.assert_array_equal(out[:, 0], np.floor(x))
    np.testing.assert_array_equal(out[:, 1], np.round(x))
    np.testing.assert_array_equal(out[:, 2], np.minimum(np.minimum(x, 0.5), np.arange(16)))
    np.testing.assert_allclose(out[:, 3], [math.erf(v) for v in x], rtol=1e-15)
    np.testing.assert_allclose(out[:, 4], np.arctan2(x, 1.5))
    np.testing.assert_array_equal(out[:, 5], x == 0)
    np.testing.assert_array_equal(out[:, 6], x ** 2)
    np.testing.assert_array_equal(out[:, 7], (x * 3.7).astype(np.int64))
    np.testing.assert_allclose(out[:, 8], np.exp(x) + np.log(np.abs(x) + 1) + np.tanh(x))


@cuda.jit
def k_math_pairs(x, out):
    i = cuda.grid(1)
    v = x[i]
    m, e = math.frexp(v)
    f, n = math.modf(v)
    out[i, 0] = m
    out[i, 1] = e
    out[i, 2] = f
    out[i, 3] = n
    out[i, 4] = math.remainder(v, 0.7)
    out[i, 5] = math.ldexp(v, 3)


def test_math_frexp_modf_remainder_ldexp_as_pythons():
    x = np.linspace(-7.3, 9.1, 32)
    out = np.zeros((32, 6))
    run(k_math_pairs, 1, 32, x, out)
    np.testing.assert_array_equal(out[:, :2], [math.frexp(v) for v in x])
    np.testing.assert_array_equal(out[:, 2:4], [math.modf(v) for v in x])
    np.testing.assert_array_equal(out[:, 4], [math.remainder(v, 0.7) for v in x])
    np.testing.assert_array_equal(out[:, 5], x * 8)


@cuda.jit
def k_fp16(r, x, y, z):
    i = cuda.grid(1)
    if i < r.shape[0]:
        r[i, 0] = cuda.fp16.hfma(x[i], y[i], z[i])                                  # one rounding
        r[i, 1] = cuda.fp16.hadd(cuda.fp16.hmul(x[i], y[i]), z[i])                  # two
        r[i, 2] = cuda.fp16.hmax(x[i], cuda.fp16.hneg(y[i]))
        r[i, 3] = cuda.fp16.hdiv(x[i], y[i]) if cuda.fp16.hgt(x[i], y[i]) else cuda.fp16.habs(z[i])


@cuda.jit
def k_fp16_f32(r, x):
    i = cuda.grid(1)
    r[i] = cuda.fp16.hadd(x[i], x[i])


@cuda.jit
def k_fp16_literal(r, x):
    i = cuda.grid(1)
    r[i] = cuda.fp16.hmul(x[i], 2)


def test_fp16_intrinsics_round_once_to_half():
    rng = np.random.default_rng(16)
    x, y, z = (rng.standard_normal(256).astype(np.float16) for _ in range(3))
    r = np.zeros((256, 4), np.float16)
    run(k_fp16, 2, 128, r, x, y, z)
    f = [v.astype(np.float64) for v in (x, y, z)]
    np.testing.assert_array_equal(r[:, 0], (f[0] * f[1] + f[2]).astype(np.float16))
    np.testing.assert_array_equal(r[:, 1], ((f[0] * f[1]).astype(np.float16).astype(np.float64) + f[2]).astype(np.float16))
    assert (r[:, 0] != r[:, 1]).any()                 # the fused one differs somewhere
    np.testing.assert_array_equal(r[:, 2], np.maximum(x, -y))
    np.testing.assert_array_equal(r[:, 3], np.where(x > y, (f[0] / f[1]).astype(np.float16), np.abs(z)))
    # numba-cuda 0.30 converts other numbers to float16 (its overload resolution; compile_ptx accepts
    # hadd(float32, float32) and hmul(float16, 2)): the arguments are rounded to half first
    xs = (rng.standard_normal(32) * 100).astype(np.float32)
    r16 = np.zeros(32, np.float16)
    run(k_fp16_f32, 1, 32, r16, xs)
    np.testing.assert_array_equal(r16, xs.astype(np.float16) + xs.astype(np.float16))
    r16 = np.zeros(32, np.float16)
    run(k_fp16_literal, 1, 32, r16, x[:32])
    np.testing.assert_array_equal(r16, x[:32] * np.float16(2))


@cuda.jit(device=True)
def _mandel(x, y, max_iters):
    c = complex(x, y)
    z = 0.0j
    for i in range(max_iters):
        z = z * z + c
        if (z.real * z.real + z.imag * z.imag) >= 4:
            return i
    return max_iters


@cuda.jit
def k_mandel(image, iters):
    x, y = cuda.grid(2)
    if y < image.shape[0] and x < image.shape[1]:
        image[y, x] = _mandel(-2.0 + x * 3.0 / image.shape[1], -1.0 + y * 2.0 / image.shape[0], iters)


@cuda.jit
def k_complex(z, w, out, zo):
    i = cuda.grid(1)
    v = z[i] * w + 1j
    out[i, 0] = abs(v)
    out[i, 1] = v.imag + z[i].conjugate().imag
    out[i, 2] = cmath.phase(z[i])
    out[i, 3] = cmath.exp(z[i]).real
    zo[i] = v / z[i]


@cuda.jit
def k_complex_bad(z, out):
    i = cuda.grid(1)
    out[i] = z[i]


def test_complex_numbers_as_numba_types_them_mandelbrot_included():
    image = np.zeros((24, 32), np.uint8)
    run(k_mandel, (4, 3), (8, 8), image, 20)
    ref = np.zeros_like(image)
    for yy in range(24):
        for xx in range(32):
            c = complex(-2.0 + xx * 3.0 / 32, -1.0 + yy * 2.0 / 24)
            z, n = 0j, 20
            for i in range(20):
                z = z * z + c
                if z.real * z.real + z.imag * z.imag >= 4:
                    n = i
                    break
            ref[yy, xx] = n
    np.testing.assert_array_equal(image, ref)
    assert (ref > 0).any() and (ref < 20).any()
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64)
    w = 0.5 - 0.25j
    out, zo = np.zeros((64, 4), np.float32), np.zeros(64, np.complex128)
    run(k_complex, 2, 32, z, w, out, zo)
    v = z.astype(np.complex128) * w + 1j                   # complex64 * complex128 -> complex128 (numba)
    np.testing.assert_allclose(out[:, 0], np.abs(v), rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], v.imag - z.imag, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out[:, 2], np.angle(z), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out[:, 3], np.exp(z).real, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(zo, v / z.astype(np.complex128), rtol=1e-6)
    with pytest.raises(CompileError, match="complex value cannot be stored") as ei:
        run(k_complex_bad, 1, 32, z[:32], np.zeros(32, np.float32))
    assert "test_cuda_semantics.py:" in str(ei.value)


@cuda.jit
def k_all_atomics(v, fa, ia, ua, old, m):
    i = cuda.grid(1)
    k = i % m                                     # m contended addresses per row
    x = v[i]
    old[i, 0] = cuda.atomic.add(fa, (0, k), x)    # float, result used: sequential rounding per address
    old[i, 1] = cuda.atomic.max(fa, (1, k), x)
    old[i, 2] = cuda.atomic.min(fa, (2, k), x)
    old[i, 3] = cuda.atomic.sub(ia, (0, k), i)
    old[i, 4] = cuda.atomic.exch(ia, (1, k), i)
    old[i, 5] = cuda.atomic.cas(ia, (2, k), i % 5, i)
    old[i, 6] = cuda.atomic.and_(ia, (3, k), 1000 - i)
    old[i, 7] = cuda.atomic.or_(ia, (4, k), i)
    old[i, 8] = cuda.atomic.xor(ia, (5, k), i * 7)
    old[i, 9] = cuda.atomic.inc(ua, (0, k), 5)
    old[i, 10] = cuda.atomic.dec(ua, (1, k), 4)
    old[i, 11] = cuda.atomic.max(ia, (6, 0), i % 17)


@pytest.mark.parametrize("n_threads,m", [(40, 3), (300, 3), (300, 150)])
def test_every_atomic_matches_sequential_thread_order(n_threads, m):
    """Few addresses (long per-address sequences) and many addresses (short ones) take different paths."""
    from gpusim.cuda.reference import run_reference
    rng = np.random.default_rng(n_threads)
    v = rng.standard_normal(n_threads).astype(np.float32)

    def fresh():
        fa = np.zeros((3, m), np.float32)
        fa[0] = 0.1
        fa[1] = -9
        fa[2] = 9
        ia = (np.arange(7 * m, dtype=np.int64) * 37 % 11).reshape(7, m)
        ua = (np.arange(2 * m, dtype=np.uint32) % 6).reshape(2, m)
        return [v.copy(), fa, ia, ua, np.zeros((n_threads, 12), np.float64), m]
    exp = fresh()
    run_reference(k_all_atomics, n_threads // 20, 20, exp)
    got = fresh()
    run(k_all_atomics, n_threads // 20, 20, *got)
    for g, e in zip(got[:5], exp[:5]):
        np.testing.assert_array_equal(g, e)


@cuda.jit
def k_inf(a, out):
    i = cuda.grid(1)
    m = float("inf")
    for k in range(a.shape[1]):
        m = min(m, a[i, k])
    out[i] = m if m < math.inf else -1.0


def test_float_inf_constants():
    a = np.array([[3.0, 1.0, 2.0], [np.inf, np.inf, np.inf]])
    out = np.zeros(2)
    run(k_inf, 1, 2, a, out)
    assert list(out) == [1.0, -1.0]


@cuda.jit
def k_bit_intrinsics(a, out):
    i = cuda.grid(1)
    out[i, 0] = cuda.clz(a[i])
    out[i, 1] = cuda.ffs(a[i])
    out[i, 2] = cuda.popc(a[i])
    out[i, 3] = cuda.brev(a[i])


def test_bit_intrinsics_32_bit():
    a = np.array([0, 1, 2, 3, 8, 12, 2 ** 31 - 1, -1] * 4, np.int32)
    out = np.zeros((32, 4), np.int64)
    run(k_bit_intrinsics, 1, 32, a, out)
    u = a.astype(np.uint32)
    assert list(out[:8, 0]) == [32 - int(v).bit_length() for v in u[:8]]
    assert list(out[:8, 1]) == [0 if v == 0 else (int(v) & -int(v)).bit_length() for v in u[:8]]
    assert list(out[:8, 2]) == [bin(int(v)).count("1") for v in u[:8]]
    assert list(out[:8, 3].astype(np.uint32)) == [int(f"{int(v):032b}"[::-1], 2) for v in u[:8]]


@cuda.jit
def k_dyn_maybe(out, words):
    d = cuda.shared.array(0, np.float32)
    t = cuda.threadIdx.x
    if words > 0:
        d[t % words] = t
    out[t] = d.size


def test_zero_dynamic_shared_memory():
    out = np.zeros(32)
    tr = run(k_dyn_maybe, 1, 32, out, 0)
    assert (out == 0).all() and tr.shared_bytes_per_cta == 0
    with pytest.raises(OutOfBounds):
        run(k_dyn_maybe, 1, 32, out, 1)          # a word the launch did not reserve
    run(k_dyn_maybe, 1, 32, out, 2, shared=8)
    assert (out == 2).all()


def test_cache_hint_loads_and_stores():
    """numba-cuda's ``cuda.ldcg`` (and ldca/ldcs/ldlu/ldcv) load ``array[i]`` with a PTX cache operator and
    ``cuda.stcs`` (stcg/stwb/stwt) store with one: the values are those of plain indexing; ``.cg`` and ``.cv``
    loads skip the L1 (every pass over the same 1 KB goes to the L2), the others are cached as a plain load."""
    import gpusim
    from gpusim import cuda as gcuda

    @gcuda.jit
    def reread(x, out, how):
        i = gcuda.grid(1)
        acc = 0.0
        for r in range(8):
            if how == 1:
                acc += gcuda.ldcg(x, gcuda.threadIdx.x)
            elif how == 2:
                acc += gcuda.ldcs(x, gcuda.threadIdx.x)
            else:
                acc += x[gcuda.threadIdx.x]
        gcuda.stcs(out, i, acc)

    x = np.arange(256, dtype=np.float32)
    mem = {}
    for how in (0, 1, 2):
        out = np.zeros(1024, np.float32)
        rep = gpusim.simulate(reread, 4, 256, x, out, how, progress=False)
        assert np.array_equal(out, np.tile(8 * x, 4))
        mem[how] = rep.engine.memory
    sectors = 4 * 8 * 8 * 4                     # 4 CTAs x 8 warps x 8 passes x 128 B
    assert all(m["l1_ld_sectors"] == sectors for m in mem.values())
    # every ldcg pass goes past the L1; the two SMs of a TPC (CTAs 2i, 2i+1) merge their reads of the same sectors
    # in flight on the way to the L2 (l2.merge_sms), so the L2 sees between 1/merge_sms of them and all
    from gpusim.config import load_gpu
    assert mem[1]["l1_ld_hit_sectors"] == 0
    assert sectors // load_gpu("h100").l2.merge_sms <= mem[1]["l2_rd_sectors"] <= sectors
    assert mem[1]["l2_rd_sectors"] > mem[0]["l2_rd_sectors"]
    assert mem[0]["l1_ld_hit_sectors"] == mem[2]["l1_ld_hit_sectors"] >= sectors // 2


def test_the_event_log_is_dropped_with_the_last_recorded_event():
    import gc
    import gpusim.trace as T
    before = len(T.launch_observers)
    e = cuda.event()
    e.record()
    assert len(T.launch_observers) == before + 1
    del e
    gc.collect()
    assert len(T.launch_observers) == before


# ---- device functions specialized on what the call passes (numba-cuda types it as a literal) ---------------------

@cuda.jit(device=True)
def _tally(out, keys, n_bins, bin_dtype, combine, to_bin):
    t = cuda.threadIdx.x
    hist = cuda.shared.array(n_bins, bin_dtype)       # the shape and dtype are the call's constants
    if t < n_bins:
        hist[t] = 0
    cuda.syncthreads()
    combine(hist, to_bin(keys[t]) % n_bins, 1)       # a function passed as an argument
    cuda.syncthreads()
    if t < n_bins:
        out[t] = hist[t]


@cuda.jit(device=True)
def _as_int(x):
    return int(x)


@cuda.jit
def k_tally(out, keys):
    _tally(out, keys, 16, np.int32, cuda.atomic.add, _as_int)


@cuda.jit
def k_tally_max(out, keys):
    _tally(out, keys, 8, np.int32, cuda.atomic.max, _as_int)


def test_device_function_specialized_on_functions_dtypes_and_shapes_it_is_passed():
    """numba-cuda's own atomics tests pass ``cuda.atomic.add``, a device function, a dtype and an array length to
    one device function: each call site compiles its own specialization (two here, of different shapes)."""
    keys = np.random.default_rng(3).integers(0, 1000, 64).astype(np.float64)
    out = np.zeros(16, np.int32)
    run(k_tally, (1,), (64,), out, keys)
    np.testing.assert_array_equal(out, np.bincount(keys.astype(np.int64) % 16, minlength=16))
    out8 = np.full(8, -1, np.int32)
    run(k_tally_max, (1,), (64,), out8, keys)
    assert (out8 == 1).sum() == len(set(keys.astype(np.int64) % 8)) and set(out8) <= {0, 1}


@cuda.jit
def k_atomic_max_min_nan(res, vals):
    i = cuda.threadIdx.x
    cuda.atomic.max(res, 0, vals[i])
    cuda.atomic.min(res, 1, vals[i])
    cuda.atomic.nanmax(res, 2, vals[i])
    cuda.atomic.max(res, 3, vals[i])


def test_float_atomic_max_and_min_ignore_a_nan_value_and_keep_a_nan_location():
    """numba-cuda's float atomic max/min are ``val > old ? val : old`` (its tests: a NaN value leaves the location,
    a NaN location stays NaN); nanmax treats a NaN location as missing."""
    vals = np.arange(32, dtype=np.float64) + 1
    vals[1::2] = np.nan
    res = np.array([0.0, 100.0, np.nan, np.nan])
    run(k_atomic_max_min_nan, (1,), (32,), res, vals)
    assert res[0] == np.nanmax(vals) and res[1] == np.nanmin(vals) and res[2] == np.nanmax(vals)
    assert np.isnan(res[3])


def _clz_into(ary, c):
    ary[0] = cuda.clz(c)


def _round_into(ary, c, ndigits):
    ary[0] = round(c, ndigits)


def test_an_eager_signature_gives_scalar_arguments_their_declared_type():
    """``cuda.jit("void(int32[:], int32)")``: the Python int passed is an int32 in the kernel (clz counts 32 bits;
    0xFFFFFFFF wraps to -1), as numba's dispatcher converts it -- not an int64."""
    k = cuda.jit("void(int32[:], int32)")(_clz_into)
    out = np.zeros(1, np.int32)
    for v, want in ((0x00100000, 11), (0xFFFFFFFF, 0), (0, 32)):
        k[1, 1](out, v)
        assert out[0] == want, (hex(v), out[0])
    k64 = cuda.jit("void(int32[:], int64)")(_clz_into)
    k64[1, 1](out, 0x00100000)
    assert out[0] == 43


def test_round_to_digits_as_numba_cuda_rounds():
    """``round(x, n)``: Python's result for ordinary values, and the value itself when scaling by 10**n overflows
    (numba-cuda's test_round_to_f4/f8_overflow)."""
    k8 = cuda.jit("void(float64[:], float64, int32)")(_round_into)
    k4 = cuda.jit("void(float32[:], float32, int32)")(_round_into)
    a8, a4 = np.zeros(1), np.zeros(1, np.float32)
    for v in np.random.default_rng(123).random(8):
        for nd in (-3, -1, 0, 1, 2, 5):
            k8[1, 1](a8, v, nd)
            assert a8[0] == round(v, nd), (v, nd, a8[0])
    k8[1, 1](a8, np.finfo(np.float64).max, 12)
    assert a8[0] == np.finfo(np.float64).max
    k4[1, 1](a4, np.finfo(np.float32).max, 300)
    assert a4[0] == np.finfo(np.float32).max


def _bit_count_into(ary, c):
    ary[0] = c.bit_count()


def test_int_bit_count_is_popc():
    for t, v, want in (("uint8", 0xFF, 8), ("uint16", 0xF0F0, 8), ("uint32", 0xFFFFFFFF, 32),
                       ("uint64", 0xFFFFFFFFFFFFFFFF, 64)):
        k = cuda.jit(f"void(int32[:], {t})")(_bit_count_into)
        out = np.zeros(1, np.int32)
        k[1, 1](out, getattr(np, t)(v))
        assert out[0] == want, (t, out[0])


@cuda.jit
def k_shared_histogram_many_warps(arr, histo):
    local = cuda.shared.array(128, np.int64)
    local[cuda.threadIdx.x] = 0
    cuda.syncthreads()
    for j in range(cuda.grid(1), arr.size, cuda.gridsize(1)):
        if arr[j] < 128:
            cuda.atomic.add(local, arr[j], 1)
    cuda.syncthreads()
    cuda.atomic.add(histo, cuda.threadIdx.x, local[cuda.threadIdx.x])


def test_shared_atomics_of_a_many_warp_table_are_timed():
    """Shared-memory atomics in a launch whose op table has more than five warps (a shared histogram, then a global
    one): the timing engine took the per-warp wavefront list of a shared atomic for a lock's record and failed."""
    import gpusim
    arr = np.random.default_rng(0).integers(32, 140, 50_000).astype(np.uint8)
    histo = np.zeros(128, np.int64)
    rep = gpusim.simulate(k_shared_histogram_many_warps, (16,), (128,), arr, histo, progress=False)
    np.testing.assert_array_equal(histo, np.bincount(arr[arr < 128], minlength=128))
    assert rep.cycles > 0 and rep["shared_bytes_per_cta"] == 1024


@cuda.jit
def k_spin_lock(x, mutex):
    while cuda.atomic.compare_and_swap(mutex, 0, 1) != 0:
        pass
    x[0] += 1
    cuda.atomic.exch(mutex, 0, 0)


def test_a_contended_spin_lock_is_refused_not_a_hang():
    """A numba-cuda spin lock that two blocks contend for: the holder's release comes after the loop, which gpusim
    runs in lockstep for the blocks of a chunk -- refused with the reason at the loop's line, not an endless loop.
    One block alone takes and releases the lock."""
    x, m = np.zeros(1), np.zeros(1, np.int64)
    run(k_spin_lock, (1,), (1,), x, m)
    assert x[0] == 1 and m[0] == 0
    with pytest.raises(UnsupportedConstruct, match="a loop around a compare-and-swap ran .* a spin lock") as e:
        run(k_spin_lock, (2,), (1,), np.zeros(1), np.zeros(1, np.int64))
    assert e.value.line == k_spin_lock.py_func.__code__.co_firstlineno + 2
