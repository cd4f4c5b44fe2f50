"""A corpus of small Triton kernels, each accepted or rejected by Triton 3.6's real compiler for sm_90.

Each case is one ``@triton.jit`` kernel ``k`` (source text), the signature and constexprs the real compiler is
given (``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))``), launch options, and the verdict:
``"accept"``, or ``"reject"`` with ``names``: words the error must contain so that it names the same construct the
real compiler names.  The verdicts were read off the real compiler (``tests/test_triton_strict.py`` re-checks them
wherever Triton is installed); gpusim must give the same verdict for every case.

Arguments for a gpusim launch are made from the signature: ``*fp32`` a random float32 array of ``N_ELEMS``
elements, ``i32`` the integer ``N_ARG``; constexprs and options go in as meta.
"""
from __future__ import annotations

N_ELEMS = 1024
N_ARG = 256

HEAD = "import triton\nimport triton.language as tl\n\n\n"

CASES: list[dict] = []


def case(name, src, sig, const=None, options=None, expect="accept", names=(), helpers=""):
    CASES.append({"name": name, "src": src.strip("\n") + "\n", "sig": sig, "const": dict(const or {}),
                  "options": dict(options or {}), "expect": expect, "names": tuple(names), "helpers": helpers})


P1 = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
B = {"BLOCK": 128}

# ---------------------------------------------------------------------------------------------- accepted

case("copy", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(x_ptr + offs, x * 2.0, mask=offs < n)
""", P1, B)

case("cache_modifiers_and_eviction_policies", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs, mask=offs < n, cache_modifier=".cg")
    b = tl.load(x_ptr + offs, mask=offs < n, eviction_policy="evict_last")
    c = tl.load(x_ptr + offs, mask=offs < n, volatile=True)
    d = tl.load(x_ptr + offs, mask=offs < n, cache_modifier=".cv")
    tl.store(x_ptr + offs, a + b + c + d, mask=offs < n, cache_modifier=".cs")
""", P1, B)

case("eviction_policy_with_a_cache_modifier", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, cache_modifier=".cg", eviction_policy="evict_first") + 1.0)
""", P1, B, expect="reject", names=("evict_first", "cannot be combined", ".cg"))

case("volatile_load_with_a_cache_modifier", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, cache_modifier=".ca", volatile=True) + 1.0)
""", P1, B, expect="reject", names=("volatile", "cannot be combined", ".ca"))

case("unknown_load_cache_modifier", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, cache_modifier=".lu") + 1.0)
""", P1, B, expect="reject", names=("cache modifier", ".lu"))

case("unknown_store_cache_modifier", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0, cache_modifier=".ca")
""", P1, B, expect="reject", names=("cache modifier", ".ca"))

case("unknown_eviction_policy", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, eviction_policy="evict_normal") + 1.0)
""", P1, B, expect="reject", names=("eviction policy", "evict_normal"))

case("tuple_unpack_and_ternary", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    a, b = tl.program_id(0), BLOCK
    c = a if a > 0 else 1
    offs = a * b + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + c, mask=offs < n)
""", P1, B)

case("for_range_and_static_range", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n // BLOCK):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    for j in tl.static_range(2):
        acc = acc * 0.5
    tl.store(x_ptr + offs, acc)
""", P1, B)

case("while_scalar_condition", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i = 0
    while i < n // BLOCK:
        tl.store(x_ptr + i * BLOCK + offs, tl.load(x_ptr + i * BLOCK + offs) + 1.0)
        i += 1
""", P1, B)

case("nested_jit_call", """
@triton.jit
def twice(x):
    return x * 2

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs)))
""", P1, B)

case("builtin_min_on_scalars", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    m = min(n - pid * BLOCK, BLOCK)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=tl.arange(0, BLOCK) < m) + 1.0,
             mask=tl.arange(0, BLOCK) < m)
""", P1, B)

case("if_on_scalar", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if pid % 2 == 0:
        x = x + 1.0
    else:
        x = x - 1.0
    tl.store(x_ptr + offs, x)
""", P1, B)

case("reduce_and_where", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.sum(x, axis=0)
    tl.store(x_ptr + offs, tl.where(x > 0, x / s, 0.0))
""", P1, B)

case("constexpr_tuple_shape", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :]
    x = tl.load(x_ptr + r)
    tl.store(x_ptr + r, tl.trans(tl.trans(x)) + tl.zeros((8, 16), dtype=tl.float32))
""", P1, B)

case("tuple_literal_of_tensors", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    t = (tl.load(x_ptr + offs), tl.load(x_ptr + BLOCK + offs))
    tl.store(x_ptr + offs, t[0] + t[1])
""", P1, B)

case("early_return_on_scalar", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
""", P1, B)

case("num_warps_8", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
""", P1, {"BLOCK": 512}, {"num_warps": 8})

# ---------------------------------------------------------------------------------------------- rejected

case("python_list_append", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    parts = []
    offs = tl.arange(0, BLOCK)
    parts.append(tl.load(x_ptr + offs))
    tl.store(x_ptr + offs, parts[0])
""", P1, B, expect="reject", names=("append",))

case("dict_literal", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    d = {"a": 1}
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + d["a"])
""", P1, B, expect="reject", names=("Dict",))

case("arange_not_power_of_two", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
""", P1, B, expect="reject", names=("power of 2",))

case("arange_runtime_bound", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
""", P1, B, expect="reject", names=("arange",))

case("zeros_runtime_shape", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    z = tl.zeros((n,), dtype=tl.float32)
    tl.store(x_ptr + tl.arange(0, BLOCK), z)
""", P1, B, expect="reject", names=("constexpr",))

case("shape_mismatch", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    a = tl.arange(0, 64)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, (a + b).to(tl.float32))
""", P1, B, expect="reject", names=("incompatible",))

case("if_on_tensor", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if x > 0:
        x = x + 1.0
    tl.store(x_ptr + offs, x)
""", P1, B, expect="reject", names=("bool",))

case("dot_k_too_small", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 16)[:, None] * 8 + tl.arange(0, 8)[None, :]
    a = tl.load(x_ptr + r).to(tl.float16)
    c = tl.dot(a, tl.trans(a))
    tl.store(x_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], c)
""", P1, B, expect="reject", names=("16",))

case("dot_shape_mismatch", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :]
    s = tl.arange(0, 16)[:, None] * 32 + tl.arange(0, 32)[None, :]
    a = tl.load(x_ptr + r)
    b = tl.load(x_ptr + s)
    tl.store(x_ptr + r, tl.dot(a, b))
""", P1, B, expect="reject", names=("dot",))

case("store_to_integer", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(n + offs, tl.load(x_ptr + offs))
""", P1, B, expect="reject", names=("ptr",))

case("try_except", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    try:
        x = tl.load(x_ptr + offs)
    except Exception:
        x = tl.zeros((BLOCK,), dtype=tl.float32)
    tl.store(x_ptr + offs, x)
""", P1, B, expect="reject", names=("Try",))

case("lambda", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    f = lambda v: v * 2
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, f(tl.load(x_ptr + offs)))
""", P1, B, expect="reject", names=("Lambda",))

case("call_plain_python_function", """
def plain(v):
    return v * 2

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, plain(tl.load(x_ptr + offs)))
""", P1, B, expect="reject", names=("plain",))

case("global_non_constexpr", """
SCALE = 3.0

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * SCALE)
""", P1, B, expect="reject", names=("global",))

case("index_tensor_with_int", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x + x[0])
""", P1, B, expect="reject", names=("index",))

case("reshape_wrong_numel", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.reshape(tl.load(x_ptr + offs), (3, 5))
    tl.store(x_ptr + offs, tl.reshape(x, (BLOCK,)))
""", P1, B, expect="reject", names=("reshape",))

case("static_assert_false", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK < 64, "BLOCK too big")
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
""", P1, B, expect="reject", names=("BLOCK too big",))

case("num_warps_not_power_of_two", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
""", P1, B, {"num_warps": 3}, expect="reject", names=("num_warps",))

case("block_too_large", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
""", P1, {"BLOCK": 1 << 21}, expect="reject", names=("numel",))

case("undefined_name", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + undefined_thing)
""", P1, B, expect="reject", names=("undefined_thing",))

case("with_statement", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    with open("f") as f:
        pass
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
""", P1, B, expect="reject", names=())

case("list_comprehension", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    xs = [tl.load(x_ptr + offs + i) for i in range(2)]
    tl.store(x_ptr + offs, xs[0])
""", P1, B, expect="reject", names=("comprehension",))

case("break_in_loop", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(0, 4):
        if i == 2:
            break
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
""", P1, B, expect="reject", names=("break",))

case("builtin_abs", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, abs(tl.load(x_ptr + offs)))
""", P1, B, expect="reject", names=("abs",))

case("global_constexpr", """
SCALE = tl.constexpr(3.0)

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * SCALE)
""", P1, B)

case("list_literal_as_shape", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.reshape(tl.load(x_ptr + offs), [2, BLOCK // 2])
    tl.store(x_ptr + offs, tl.reshape(x, [BLOCK]))
""", P1, B)

case("len_of_tuple_and_builtin_max", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    t = (1, 2, 3)
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + len(t) + max(n, 4))
""", P1, B)

case("continue_in_loop", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(0, 4):
        if i == 2:
            continue
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
""", P1, B, expect="reject", names=("continue",))

case("raise_statement", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if BLOCK > 4096:
        raise ValueError("too big")
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
""", P1, B)  # the branch is constexpr-false: never compiled

case("walrus", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, (y := tl.load(x_ptr + offs)) + y)
""", P1, B, expect="reject", names=("NamedExpr",))

case("fstring_static_print", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_print(f"BLOCK={BLOCK}")
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
""", P1, B)

case("kernel_returns_value", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
    return n
""", P1, B, expect="reject")  # fails in the MLIR pipeline, no construct named

case("chained_comparison_scalar", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if 0 <= pid < 2:
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
""", P1, B, expect="reject", names=("multiple comparison",))

case("set_literal", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    s = {1, 2}
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
""", P1, B, expect="reject", names=("Set",))

# ---- loop-carried values keep their type through range / while loops (static_range unrolls: no rule)
case("loop_carried_int_then_float", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    acc = 0
    for i in range(4):
        acc += tl.load(x_ptr + i)
    tl.store(x_ptr, acc)
""", P1, B, expect="reject", names=("Loop-carried variable acc", "int32", "fp32"))

case("loop_carried_scalar_then_block", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = 0.0
    for i in range(0, n, BLOCK):
        acc = acc + tl.load(x_ptr + i + offs)
    tl.store(x_ptr + offs, acc)
""", P1, B, expect="reject", names=("Loop-carried variable acc",))

case("loop_carried_while_dtype_change", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    i = 0
    s = tl.zeros([BLOCK], dtype=tl.float32)
    while i < n:
        s = s.to(tl.float16) + 1
        i += BLOCK
    tl.store(x_ptr + tl.arange(0, BLOCK), s)
""", P1, B, expect="reject", names=("Loop-carried variable s",))

case("loop_carried_consistent", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    cnt = 0
    for i in range(0, n, BLOCK):
        acc += tl.load(x_ptr + i + offs, mask=i + offs < n, other=0.0)
        cnt += 1
    for j in tl.static_range(2):
        acc = acc.to(tl.float16)
    tl.store(x_ptr + offs, acc.to(tl.float32) + cnt)
""", P1, B)

case("int8_and_out_of_range_scalar", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    q = tl.load(x_ptr + offs).to(tl.int8)
    hi = (q & 0xF0) >> 4
    tl.store(x_ptr + offs, hi.to(tl.float32))
""", P1, B, expect="reject", names=("Scalar 240 is out of range for type int8",))

case("uint8_and_in_range_scalar", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    q = tl.load(x_ptr + offs).to(tl.uint8)
    hi = (q & 0xF0) >> 4
    tl.store(x_ptr + offs, hi.to(tl.float32) + (q < 255).to(tl.float32))
""", P1, B)

case("unsigned_minus_negative_scalar", """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    q = tl.load(x_ptr + offs).to(tl.uint32)
    tl.store(x_ptr + offs, (q + -1).to(tl.float32))
""", P1, B, expect="reject", names=("unsigned tensor and a negative scalar",))
