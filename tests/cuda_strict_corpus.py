"""A corpus of small numba-cuda kernels, each accepted or rejected by numba-cuda 0.30's real compiler for sm_90.

Each case is one ``@cuda.jit`` kernel ``k`` (source text, after ``HEAD``), the argument types the real compiler
is given (``cuda.compile_ptx(k, types, cc=(9, 0))``: numba type expressions, arrays C-contiguous as numba's
dispatcher types a numpy array at launch, Python ints ``int64``), the launch shape, and the verdict:
``"accept"``, or ``"reject"`` with ``names``: words the error must contain so that it names the same construct the
real compiler names.  The verdicts were read off the real compiler (``tests/test_cuda_strict.py`` re-checks them
wherever numba-cuda and NVVM are installed); gpusim must give the same verdict for every case.

Arguments for a gpusim launch are made from the types (``launch`` where they differ from the compiled signature,
as for ``*args``): an array ``T[::1]`` is an array of ``N_ELEMS`` elements of dtype ``T`` (random values in
[0, 4)), ``int64`` the integer ``N_ARG``, ``float64`` / ``float32`` the float 1.5.  Numba's errors without a word
naming the construct (an ``AttributeError`` inside its lowering) have no ``names``.
"""
from __future__ import annotations

N_ELEMS = 64
N_ARG = 16

HEAD = "import math\nimport numpy as np\nfrom numba import cuda\n\n\n"

CASES: list[dict] = []


def case(name, src, sig=("float32[::1]",), expect="accept", names=(), grid=(1,), block=(32,), launch=None):
    """``launch``: the types of the launch's arguments where they differ from ``sig`` (``*args`` flattened)."""
    CASES.append({"name": name, "src": src.strip("\n") + "\n", "sig": tuple(sig), "expect": expect,
                  "names": tuple(names), "grid": grid, "block": block, "launch": tuple(launch or sig)})


A = ("float32[::1]",)
AN = ("float32[::1]", "int64")

# ---------------------------------------------------------------------------------------------- accepted

case("copy_scale", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = a[i] * 2.0
""")

case("cache_hint_loads_and_stores", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        v = cuda.ldcg(a, i) + cuda.ldca(a, i) + cuda.ldcs(a, i) + cuda.ldlu(a, i) + cuda.ldcv(a, i)
        cuda.stcs(a, i, v)
        cuda.stcg(a, i, cuda.ldcg(a, i) * 2.0)
""")

case("thread_block_indices", """
@cuda.jit
def k(a):
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i < a.shape[0] and cuda.gridDim.x == 1:
        a[i] += 1.0
""")

case("tuple_pack_unpack", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    t = (1, 2.5)
    p, q = t
    if i < len(a):
        a[i] = p + q + t[0]
""")

case("range_with_step", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    acc = 0
    for j in range(0, n, 4):
        acc += j
    for j in range(n, 0, -3):
        acc -= 1
    if i < a.size:
        a[i] = acc
""", AN)

case("math_functions", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        a[i] = math.sqrt(x) + math.exp(-x) + math.sin(x) + math.floor(x) + math.pow(x, 2.0) + math.fabs(x)
""")

case("local_array", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    buf = cuda.local.array((4,), np.float32)
    for j in range(4):
        buf[j] = j * 0.5
    if i < a.size:
        a[i] = buf[0] + buf[3]
""")

case("shared_array_and_syncthreads", """
@cuda.jit
def k(a):
    s = cuda.shared.array(32, dtype=np.float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    a[t] = s[31 - t]
""")

case("device_function", """
@cuda.jit(device=True)
def twice(x):
    return 2 * x


@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = twice(a[i]) + 1
""")

case("atomic_add_float32", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    cuda.atomic.add(a, 0, 1.0)
""")

case("atomic_max_int32_and_cas", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    cuda.atomic.max(a, 0, i)
    cuda.atomic.cas(a, 1, 0, i)
""", ("int32[::1]",))

case("atomic_add_float64", """
@cuda.jit
def k(a):
    cuda.atomic.add(a, 0, 0.25)
""", ("float64[::1]",))

case("if_elif_else", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < 8:
        a[i] = 1.0
    elif i < 16:
        a[i] = 2.0
    else:
        a[i] = 3.0
""")

case("while_break_continue", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    j = 0
    acc = 0.0
    while True:
        j += 1
        if j % 2 == 0:
            continue
        if j > n:
            break
        acc += j
    a[i] = acc
""", AN)

case("early_return", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i >= a.size:
        return
    a[i] = -a[i]
""")

case("int_float_mixing", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    x = i * 0.5 + n
    y = i // 3 + n % 5
    a[i] = x + y
""", AN)

case("np_float32_cast", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = np.float32(i) * np.float32(0.5) + np.int32(3)
""")

case("abs_min_max_round", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = abs(a[i] - 2.0) + min(a[i], 1.0) + max(i, 3) + round(a[i])
""")

case("ternary_and_chained_compare", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    if 0 <= i < n and not (i == 5 or i == 7):
        a[i] = 1.0 if a[i] > 2.0 else 0.0
""", AN)

case("grid_2d_and_gridsize", """
@cuda.jit
def k(a):
    x, y = cuda.grid(2)
    w, h = cuda.gridsize(2)
    if x < a.size:
        a[x] = y + w + h
""")

case("global_constant_tuple", """
COEF = (1.0, 2.0, 3.0)


@cuda.jit
def k(a):
    i = cuda.grid(1)
    acc = 0.0
    for c in COEF:
        acc += c
    a[i] = acc + COEF[1]
""")

case("shared_array_global_const_shape", """
TILE = 16


@cuda.jit
def k(a):
    s = cuda.shared.array((TILE, TILE), np.float32)
    t = cuda.threadIdx.x
    if t < TILE:
        s[t, 0] = t
    cuda.syncthreads()
    if t < TILE:
        a[t] = s[t, 0]
""")

case("warp_shuffle_and_syncwarp", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    v = a[i]
    v += cuda.shfl_down_sync(0xFFFFFFFF, v, 1)
    cuda.syncwarp()
    a[i] = v
""")

case("print_simple", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i == 0:
        print("value", i, a[0])
""")

case("iterate_over_array", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    acc = 0.0
    for v in a:
        acc += v
    if i == 0:
        a[0] = acc
""")

case("bool_and_bitwise_ints", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    m = (i & 3) | (i << 2) ^ (i >> 1)
    b = i > 4
    if b:
        a[i] = m
""")

case("assert_statement", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    assert i >= 0
    a[i] = 1.0
""")

case("local_array_2d", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    m = cuda.local.array((2, 3), dtype=np.int32)
    for r in range(2):
        for c in range(3):
            m[r, c] = r * c
    a[i] = m[1, 2]
""")

case("nested_device_functions", """
@cuda.jit(device=True)
def sq(x):
    return x * x


@cuda.jit(device=True)
def norm2(x, y):
    return math.sqrt(sq(x) + sq(y))


@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = norm2(a[i], 1.0)
""")

case("power_operator", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = a[i] ** 2 + 2 ** 3
""")

case("reassign_same_type", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    x = n
    x = x * 2 + i
    a[i] = x
""", AN)

# ------------------------------------- what kernel authors try: each verdict is the real compiler's (some accept)

case("list_literal", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    xs = [1.0, 2.0, 3.0]
    a[i] = xs[1]
""", expect="reject", names=('list',))

case("list_comprehension", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    xs = [j * 2 for j in range(4)]
    a[i] = xs[1]
""", expect="reject", names=('list',))

case("dict_literal", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    d = {0: 1.0, 1: 2.0}
    a[i] = d[1]
""", expect="reject", names=('dict',))

case("set_literal", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    s = {1, 2, 3}
    a[i] = len(s)
""", expect="reject", names=('set',))

case("string_concat", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    s = "ab" + "c"
    a[i] = len(s)
""")

case("print_fstring", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    print(f"thread {i}")
""", expect="reject", names=('str',))

case("print_percent_format", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    print("thread %d" % i)
""", expect="reject", names=('mod', 'str'))

case("try_except", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    try:
        a[i] = 1.0
    except Exception:
        a[i] = 0.0
""", expect="reject", names=('try',))

case("generator_kernel", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    yield i
""", expect="reject", names=())

case("generator_expression_sum", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = sum(j for j in range(4))
""", expect="reject", names=('yield',))

case("recursive_device_function", """
@cuda.jit(device=True)
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = fact(i)
""", expect="reject", names=())

case("star_args_kernel", """
@cuda.jit
def k(a, *rest):
    i = cuda.grid(1)
    a[i] = rest[0]
""", ("float32[::1]", "UniTuple(float64, 1)"), launch=("float32[::1]", "float64"))

case("plain_python_function", """
def helper(x):
    return x + 1.0


@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = helper(a[i])
""", expect="reject", names=('untyped global name', 'helper'))

case("np_sum_of_array", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = np.sum(a)
""")

case("np_empty", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    t = np.empty(4, np.float32)
    a[i] = t[0]
""", expect="reject", names=('empty',))

case("np_zeros", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    t = np.zeros(4)
    a[i] = t[0]
""", expect="reject", names=('zeros',))

case("array_expression", """
@cuda.jit
def k(a):
    b = a + 1.0
    a[0] = b[0]
""", expect="reject", names=('NRT required',))

case("array_sum_method", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = a.sum()
""")

case("kernel_returns_value", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = 1.0
    return i
""", expect="reject", names=('void return type',))

case("unify_int_and_tuple", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    x = n
    if i > 3:
        x = (1, 2)
    a[i] = x
""", AN, expect="reject", names=('cannot unify',))

case("unify_array_and_scalar", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    if i > 3:
        n = a
    a[i] = n
""", AN, expect="reject", names=('cannot unify',))

case("float_index", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i * 0.5] = 1.0
""", expect="reject", names=('index type', 'float64'))

case("shared_array_runtime_shape", """
@cuda.jit
def k(a, n):
    s = cuda.shared.array(n, np.float32)
    s[0] = 1.0
    a[0] = s[0]
""", AN, expect="reject", names=('shared.array',))

case("shared_array_shape_computed_from_globals", """
BLOCK = 32
RADIUS = 3


@cuda.jit
def k(a):
    s = cuda.shared.array(BLOCK + 2 * RADIUS, np.float32)
    s[0] = 1.0
    a[0] = s[0]
""", expect="reject", names=('shared.array',))

case("shared_array_local_const_shape", """
@cuda.jit
def k(a):
    N = 48
    s = cuda.shared.array(N, np.float32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    a[t] = s[N - 1 - t]
""")

case("shared_array_local_const_tuple_shape", """
@cuda.jit
def k(a):
    shape = (4, 8)
    s = cuda.shared.array(shape, np.float32)
    t = cuda.threadIdx.x
    s[t // 8, t % 8] = t
    cuda.syncthreads()
    a[t] = s[t % 4, t // 4]
""")

case("shared_array_local_shape_assigned_twice", """
@cuda.jit
def k(a):
    N = 32
    if a[0] > 1.0:
        N = 64
    s = cuda.shared.array(N, np.float32)
    s[0] = 1.0
    a[0] = s[0]
""", expect="reject", names=('shared.array',))

case("device_function_passed_a_function_a_dtype_and_a_shape", """
@cuda.jit(device=True)
def bump(a, n, dt, op):
    s = cuda.shared.array(n, dt)
    t = cuda.threadIdx.x
    s[t % n] = 0
    cuda.syncthreads()
    op(s, t % n, 1)
    cuda.syncthreads()
    a[t] = s[t % n]


@cuda.jit
def k(a):
    bump(a, 8, np.float32, cuda.atomic.add)
""")

case("grid_of_a_runtime_dimension", """
@cuda.jit
def k(a, n):
    i = cuda.grid(n)
    a[0] = i
""", AN, expect="reject", names=('RequireLiteralValue',))

case("vote_with_a_float_mask", """
@cuda.jit
def k(a):
    i = cuda.threadIdx.x
    a[i] = cuda.all_sync(1.0, a[i] > 0.5)
""", expect="reject", names=('Mask type must be an integer',))

case("vote_with_a_float_predicate", """
@cuda.jit
def k(a):
    i = cuda.threadIdx.x
    a[i] = cuda.any_sync(0xFFFFFFFF, a[i])
""", expect="reject", names=('Predicate must be an integer or boolean',))

case("vote_with_an_int_predicate", """
@cuda.jit
def k(a):
    i = cuda.threadIdx.x
    a[i] = cuda.eq_sync(0xFFFFFFFF, i % 2)
""")

case("shared_array_padded_tile_shape", """
TILE = 16


@cuda.jit
def k(a):
    s = cuda.shared.array((TILE, TILE + 1), np.float32)
    s[0, 0] = 1.0
    a[0] = s[0, 0]
""", expect="reject", names=('shared.array',))

case("shared_array_shape_folded_from_literals", """
@cuda.jit
def k(a):
    s = cuda.shared.array(64 * 33, np.float32)
    s[0] = 1.0
    a[0] = s[0]
""")

case("syncthreads_count_of_a_comparison", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    c = cuda.syncthreads_count(a[i] > 1.0)
    if i == 0:
        a[0] = c
""", expect="reject", names=('syncthreads_count',))

case("syncthreads_or_of_an_int", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    c = cuda.syncthreads_or(1 if a[i] > 1.0 else 0)
    if i == 0:
        a[0] = c
""")

case("shared_array_python_float_dtype", """
@cuda.jit
def k(a):
    s = cuda.shared.array(16, float)
    s[0] = 1.0
    a[0] = s[0]
""", expect="reject", names=('shared.array', 'float'))

case("local_array_runtime_shape", """
@cuda.jit
def k(a, n):
    buf = cuda.local.array(n, np.float32)
    buf[0] = 1.0
    a[0] = buf[0]
""", AN, expect="reject", names=('local.array',))

case("local_array_python_int_dtype", """
@cuda.jit
def k(a):
    buf = cuda.local.array(4, int)
    buf[0] = 1
    a[0] = buf[0]
""", expect="reject", names=('local.array', 'int'))

case("atomic_add_int8", """
@cuda.jit
def k(a):
    cuda.atomic.add(a, 0, 1)
""", ("int8[::1]",), expect="reject", names=('add', 'int8'))

case("atomic_max_float16", """
@cuda.jit
def k(a):
    cuda.atomic.max(a, 0, a[1])
""", ("float16[::1]",), expect="reject", names=('max', 'float16'))

case("syncthreads_with_argument", """
@cuda.jit
def k(a):
    cuda.syncthreads(1)
    a[0] = 1.0
""", expect="reject", names=('syncthreads',))

case("grid_without_ndim", """
@cuda.jit
def k(a):
    i = cuda.grid()
    a[0] = 1.0
""", expect="reject", names=('grid', 'ndim'))

case("grid_4d", """
@cuda.jit
def k(a):
    i = cuda.grid(4)
    a[0] = 1.0
""", expect="reject", names=('can only be 1, 2, 3',))

case("threadidx_w", """
@cuda.jit
def k(a):
    i = cuda.threadIdx.w
    a[0] = 1.0
""", expect="reject", names=("unknown attribute 'w'",))

case("tuple_item_assignment", """
@cuda.jit
def k(a):
    t = (1, 2)
    t[0] = 3
    a[0] = t[0]
""", expect="reject", names=('setitem', 'tuple'))

case("with_statement", """
@cuda.jit
def k(a):
    with open("x") as f:
        a[0] = 1.0
""", expect="reject", names=('with',))

case("unsupported_math_function", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = math.factorial(i)
""", expect="reject", names=("unknown attribute 'factorial'",))

case("float_bitwise_and", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = a[i] & 3
""", expect="reject", names=('and_', 'float32'))

case("range_of_float", """
@cuda.jit
def k(a):
    for j in range(2.5):
        a[0] = j
""")

case("global_list", """
G = [1.0, 2.0]


@cuda.jit
def k(a):
    a[0] = G[0]
""", expect="reject", names=('list',))

case("store_none_in_array", """
@cuda.jit
def k(a):
    a[0] = None
""", expect="reject", names=('setitem', 'none'))

case("string_compare", """
@cuda.jit
def k(a):
    s = "x"
    if s == "x":
        a[0] = 1.0
""")

case("undefined_name", """
@cuda.jit
def k(a):
    a[0] = undefined_thing + 1
""", expect="reject", names=("name 'undefined_thing' is not defined",))

case("class_in_kernel", """
@cuda.jit
def k(a):
    class P:
        pass
    a[0] = 1.0
""", expect="reject", names=('class',))

case("raise_exception", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i > 1000:
        raise ValueError("bad")
    a[i] = 1.0
""")

case("inner_function_closure", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    def f(x):
        return x + a[0]
    a[i] = f(1.0)
""")

case("lambda_in_kernel", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    f = lambda x: x * 2
    a[i] = f(a[i])
""")

case("slice_assign_scalar", """
@cuda.jit
def k(a):
    a[0:4] = 1.0
""")

case("enumerate_and_zip", """
@cuda.jit
def k(a):
    acc = 0
    for j, v in enumerate(range(3)):
        acc += j * v
    for p, q in zip(range(2), range(2)):
        acc += p + q
    a[0] = acc
""")

case("isinstance_check", """
@cuda.jit
def k(a):
    if isinstance(a[0], float):
        a[0] = 1.0
""")

case("for_else_and_while_else", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    for j in range(4):
        if j == i:
            break
    else:
        a[i] = 1.0
    n = 0
    while n < 3:
        n += 1
        if i == 7:
            break
    else:
        a[i] += 2.0
""")

case("sum_builtin_of_array", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i == 0:
        a[0] = sum(a)
""")

case("chained_and_nested_tuple_assignment", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    x = y = a[i]
    (p, q), r = (1, 2), 3
    a[i] = x + y + p + q + r
""")

case("device_function_default_and_keyword_args", """
@cuda.jit(device=True)
def f(x, y=2.0):
    return x + y


@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = f(a[i]) + f(x=1.0, y=a[i])
""")

case("print_array", """
@cuda.jit
def k(a):
    print(a)
""", expect="reject", names=("printing unimplemented", "array"))

case("bool_array_index", """
@cuda.jit
def k(a):
    a[True] = 1.0
""", expect="reject", names=("bool",))

case("del_statement", """
@cuda.jit
def k(a):
    x = 1
    del x
    a[0] = 1.0
""", expect="reject", names=("del",))

case("global_statement", """
@cuda.jit
def k(a):
    global G
    G = 1
    a[0] = 1.0
""", expect="reject", names=("global",))

case("assign_array_shape", """
@cuda.jit
def k(a):
    a.shape = (2, 2)
""", expect="reject", names=("shape",))

case("string_getitem", """
@cuda.jit
def k(a):
    s = "abc"
    a[0] = len(s[1])
""", expect="reject", names=("getitem", "str"))

case("tuple_append", """
@cuda.jit
def k(a):
    t = (1, 2)
    t.append(3)
""", expect="reject", names=("append", "tuple"))

case("shape_index_out_of_range", """
@cuda.jit
def k(a):
    a[0] = a.shape[2]
""", expect="reject", names=("tuple index out of range",))

case("local_array_zero_length", """
@cuda.jit
def k(a):
    s = cuda.local.array(0, np.float32)
    a[0] = 1.0
""", expect="reject", names=("array length <= 0",))

case("local_array_float_shape", """
@cuda.jit
def k(a):
    s = cuda.local.array(4.0, np.float32)
    a[0] = 1.0
""", expect="reject", names=("local.array",))

case("shfl_sync_missing_lane", """
@cuda.jit
def k(a):
    a[0] = cuda.shfl_sync(0xFFFFFFFF, a[0])
""", expect="reject", names=("shfl_sync",))

case("grid_of_a_string", """
@cuda.jit
def k(a):
    i = cuda.grid("1")
""", expect="reject", names=("grid",))

case("len_of_an_int", """
@cuda.jit
def k(a):
    a[0] = len(5)
""", expect="reject", names=("len", "int"))

case("divmod_and_max_min_of_array", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    q, r = divmod(-7, 2)
    hi = max(a)
    lo = min(a)
    cuda.syncthreads()
    a[i] = q * 10 + r + hi - lo
""")

case("atomic_with_a_float_index", """
@cuda.jit
def k(a):
    cuda.atomic.add(a, 1.5, 1.0)
""")

case("tuple_comparison", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    t = (i // 4, i % 4)
    if t < (1, 2) and (1, 2) != t:
        a[i] = 1.0
""")

case("starred_call_arguments", """
@cuda.jit(device=True)
def f(x, y, z):
    return x * 100 + y * 10 + z


@cuda.jit
def k(a):
    t = (1, 2)
    a[0] = max(*t) + f(*t, 3)
""")

case("real_imag_conjugate_and_ord", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = a[i].real + a[i].imag + a[i].conjugate() + ord("a")
""")

case("math_cbrt", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = math.cbrt(a[i])
""", expect="reject", names=("cbrt",))

case("math_gcd", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = math.gcd(i, 6)
""", expect="reject", names=("gcd",))

case("print_with_keyword_argument", """
@cuda.jit
def k(a):
    print("x", end="")
""", expect="reject", names=("print()", "keyword arguments"))

case("ballot_of_a_float", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    b = cuda.ballot_sync(0xFFFFFFFF, a[i])
    a[i] = b
""", expect="reject", names=("ballot_sync", "float32"))

case("array_dtype_by_name_and_grid_ndim_keyword", """
@cuda.jit
def k(a):
    i = cuda.grid(ndim=1)
    s = cuda.shared.array(32, "float32")
    s[i] = a[i]
    cuda.syncthreads()
    a[i] = s[31 - i]
""")

case("integer_atomics_on_64_and_unsigned", """
@cuda.jit
def k(a, u):
    cuda.atomic.exch(a, 0, 1)
    cuda.atomic.cas(a, 1, 0, 2)
    cuda.atomic.inc(u, 0, 5)
    cuda.atomic.xor(u, 1, 3)
""", ("int64[::1]", "uint32[::1]"))

case("shuffle_float64_and_fma", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    v = cuda.shfl_xor_sync(0xFFFFFFFF, a[i], 1)
    a[i] = cuda.fma(v, 2.0, a[i])
""", ("float64[::1]",))

case("atomic_add_int16", """
@cuda.jit
def k(a):
    cuda.atomic.add(a, 0, 1)
""", ("int16[::1]",), expect="reject", names=("add", "int16"))

case("atomic_add_float16", """
@cuda.jit
def k(a):
    cuda.atomic.add(a, 0, a[1])
""", ("float16[::1]",), expect="reject", names=("add", "float16"))

case("atomic_tuple_index_on_1d_array", """
@cuda.jit
def k(a):
    cuda.atomic.add(a, (0,), 1.0)
""", expect="reject", names=("Cannot cast UniTuple",))

case("shuffle_a_bool", """
@cuda.jit
def k(a):
    x = cuda.shfl_sync(0xFFFFFFFF, True, 0)
    a[0] = x
""", expect="reject", names=("shfl_sync",))

case("syncwarp_with_two_arguments", """
@cuda.jit
def k(a):
    cuda.syncwarp(1, 2)
    a[0] = 1.0
""", expect="reject", names=("syncwarp",))

case("threadfence_with_an_argument", """
@cuda.jit
def k(a):
    cuda.threadfence(1)
    a[0] = 1.0
""", expect="reject", names=("threadfence",))

case("activemask_with_an_argument", """
@cuda.jit
def k(a):
    x = cuda.activemask(1)
    a[0] = x
""", expect="reject", names=("activemask",))

case("syncthreads_count_of_a_float", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    n = cuda.syncthreads_count(a[i])
    a[i] = n
""", expect="reject", names=("syncthreads_count", "float32"))

case("in_tuple_and_is_none", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    x = None
    if i in (1, 2, 5) and x is None and i not in (2,):
        a[i] = 1.0
""")

case("tuple_concatenation_and_repetition", """
@cuda.jit
def k(a):
    t = (1, 2) + (3,)
    u = (4,) * 2
    a[0] = t[2] + u[1]
""")

case("tuple_inplace_add", """
@cuda.jit
def k(a):
    t = (1, 2)
    t += (3,)
    a[0] = t[2]
""", expect="reject", names=("iadd", "tuple"))

case("device_function_returns_its_local_array", """
@cuda.jit(device=True)
def f():
    s = cuda.local.array(4, np.float32)
    s[0] = 1.0
    return s


@cuda.jit
def k(a):
    b = f()
    a[0] = b[0]
""", expect="reject", names=("Only accept returning of array passed into the function as argument",))

case("tuple_indexed_by_a_runtime_value", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    t = (1.0, 2.0, 3.0)
    a[i] = t[i % 3] + t[-(i % 3) - 1] * 10
""")

case("mixed_tuple_indexed_by_a_runtime_value", """
@cuda.jit
def k(a):
    i = cuda.grid(1)
    t = (1, 2.0)
    a[i] = t[i % 2]
""", expect="reject", names=("tuple",))

case("in_range", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    if i in range(2, n) and i not in range(5):
        a[i] = 1.0
""", AN)

case("device_function_returns_array_or_number_on_a_path_never_taken", """
@cuda.jit(device=True)
def f(x, arr):
    if x < 100.0:
        return x * 2.0
    return (arr[0] - arr) / x


@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = f(a[i], a)
""", expect="reject", names=("Can't unify return type", "array(float32, 1d"))

case("device_function_returns_tuples_of_two_lengths", """
@cuda.jit(device=True)
def f(x):
    if x > 2.0:
        return (x, x)
    return (x, x, x)


@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = f(a[i])[0]
""", expect="reject", names=("Can't unify return type", "UniTuple(float32 x 2)", "UniTuple(float32 x 3)"))

case("device_function_returns_number_tuple_or_none", """
@cuda.jit(device=True)
def f(x, n):
    if x > 2.0:
        return 1
    if x > 1.0:
        return x * 0.5
    for j in range(n):
        if x < j:
            return (x + j) / 2
    return


@cuda.jit(device=True)
def g(x):
    if x > 1.0:
        return (x, 1)
    return (2, x)


@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    r = f(a[i], n)
    if r is not None:
        a[i] = r + g(a[i])[1]
""", AN)

case("dim3_as_a_value", """
@cuda.jit(device=True)
def width(d):
    return d.x * d.y


@cuda.jit
def k(a):
    d = cuda.blockDim
    t = cuda.threadIdx
    if t.x == 40:
        print(cuda.gridDim, d, cuda.blockIdx, t)
    a[t.x] = width(d) + t.x
""")

case("dim3_indexed", """
@cuda.jit
def k(a):
    d = cuda.blockDim
    a[0] = d[0]
""", expect="reject", names=("getitem", "Dim3"))

# ---- probe round 5 ----------------------------------------------------------------------------------------------

case("device_function_with_clashing_returns_called_only_on_an_untaken_path", """
@cuda.jit(device=True)
def f(x, arr):
    if x < 100.0:
        return x * 2.0
    return (arr[0] - arr) / x


@cuda.jit(device=True)
def g(arr, i):
    tmp = cuda.local.array(4, np.float32)
    for d in range(4):
        tmp[d] = arr[d]
    return f(arr[i], tmp)


@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i > 1000:
        a[i] = g(a, i)
""", expect="reject", names=("Can't unify return type",))

case("operator_function_passed_to_a_device_function", """
import operator


@cuda.jit(device=True)
def fold(func, val):
    for i in range(5):
        val = func(val, cuda.shfl_xor_sync(0xffffffff, val, 1 << i))
    return val


@cuda.jit
def k(a):
    i = cuda.grid(1)
    a[i] = fold(operator.add, a[i]) + fold(max, a[i]) + operator.mul(a[i], 2.0)
""")

case("global_namedtuple_fields_and_a_tuple_valued_conditional", """
from collections import namedtuple

CFG = namedtuple("CFG", ["lo", "hi"])(np.float32(0.5), np.float32(2.0))


@cuda.jit
def k(a):
    i = cuda.grid(1)
    lo, hi = (CFG.lo, CFG.hi) if i % 2 == 0 else (np.float32(0), np.float32(1))
    a[i] = min(max(a[i], lo), hi) + CFG[1]
""")

case("integer_literal_past_int64_is_uint64", """
@cuda.jit
def k(a, n):
    i = cuda.grid(1)
    v = n + i
    if (v & 0xFFFFFFFF00000000) == 0 and (v & 0x8000000000000000) == 0:
        a[i] = 1.0
""", AN)

case("variable_read_before_its_first_assignment_in_a_loop", """
@cuda.jit
def k(a, n):
    for i in range(n):
        if i > 0:
            a[i] = prev
        prev = a[i]
""", AN, expect="reject", names=("Variable 'prev' is not defined",))

case("variable_assigned_on_one_branch_then_read", """
@cuda.jit
def k(a, n):
    for i in range(n):
        if i == 0:
            acc = 0.0
        acc += a[i]
        a[i] = acc
""", AN)
