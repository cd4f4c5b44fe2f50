"""Compiler pass: name resolution and static evaluation, as numba freezes a kernel's globals at compile time.

``classify`` tags what a global name refers to: the ``cuda`` module (``numba.cuda`` or ``gpusim.cuda``, whatever
the kernel's file bound it to) and its attribute paths, ``math``/``numpy``/``numba`` functions and types,
compile-time constants (int, float, bool, tuples of them), numpy arrays (constant arrays) and device functions.
``StaticResolver`` follows name/attribute chains rooted at globals (``static``) and evaluates the compile-time
expressions of array shapes and dtypes (``static_eval``).
"""
from __future__ import annotations

import ast
import enum
import math
import operator
import types
import weakref

import numpy as np

from ..errors import CompileError, UnsupportedConstruct
from .analysis import _contains
from . import types as _nbtypes
from .arith import FP16_FUNCTIONS, MATH_FUNCTIONS
from .complexmath import CMATH_FUNCTIONS
from .values import const
from .vectors import STUBS as VECTOR_STUBS


class NeedsArgDtypes(Exception):
    """The kernel declares an array with an argument's dtype (``cuda.shared.array(n, dtype=a.dtype)``): it is
    compiled per set of argument dtypes, as numba-cuda compiles it per argument types (raised by the expression
    rewriter, caught by ``compiler`` and ``launch``)."""


_BUILTINS = {range: "range", min: "min", max: "max", abs: "abs", int: "int", float: "float", bool: "bool",
             len: "len", print: "print", round: "round", pow: "pow", isinstance: "isinstance", tuple: "tuple",
             complex: "complex", sum: "sum", divmod: "divmod", ord: "ord", slice: "slice"}
#: math functions numba-cuda 0.30 refuses in a kernel (each checked with compile_ptx for sm_90); math.cbrt among
#: them (``cuda.cbrt`` is the CUDA one)
_NUMBA_MATH_REFUSED = {"cbrt", "comb", "dist", "factorial", "fsum", "gcd", "isclose", "isqrt", "lcm", "perm", "prod",
                       "ulp"}
_MATHFN = {getattr(math, k): k for k in dir(math) if callable(getattr(math, k)) and k in MATH_FUNCTIONS
           and k not in _NUMBA_MATH_REFUSED}
_NPFN = {}
for _k, _n in (("sqrt", "sqrt"), ("exp", "exp"), ("exp2", "exp2"), ("expm1", "expm1"), ("log", "log"),
               ("log2", "log2"), ("log10", "log10"), ("log1p", "log1p"), ("sin", "sin"), ("cos", "cos"),
               ("tan", "tan"), ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"),
               ("cosh", "cosh"), ("tanh", "tanh"), ("arcsinh", "asinh"), ("arccosh", "acosh"),
               ("arctanh", "atanh"), ("fabs", "fabs"), ("isnan", "isnan"), ("isinf", "isinf"),
               ("isfinite", "isfinite"), ("power", "pow"), ("arctan2", "atan2"), ("hypot", "hypot"),
               ("fmod", "fmod"), ("copysign", "copysign"), ("nextafter", "nextafter"), ("cbrt", "cbrt"), ("degrees", "degrees"),
               ("radians", "radians")):
    _NPFN[getattr(np, _k)] = _n
_NPBUILTIN = {np.abs: "abs", np.absolute: "abs", np.minimum: "min", np.maximum: "max"}
#: numpy reductions of a whole array a kernel may call (each thread reduces the array: ``devlib.array_sum``)
_NPREDUCE = {np.sum: "sum"}
#: numpy's arithmetic ufuncs, by the chunk's operator names (a scalar call is the operator; with an output
#: array, ``np.add(a, b, out)``, a loop over the elements: ``devlib.ufunc_out``)
#: the operator module's functions numba types (``reduce(operator.add, v)``): what the call lowers to
_PYOPS = {getattr(operator, n): ("binop", o) for n, o in (
    ("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "truediv"), ("floordiv", "floordiv"),
    ("mod", "mod"), ("pow", "pow"), ("lshift", "lshift"), ("rshift", "rshift"), ("and_", "bitand"),
    ("or_", "bitor"), ("xor", "bitxor"))}
_PYOPS.update({getattr(operator, n): ("compare", n) for n in ("lt", "le", "gt", "ge", "eq", "ne")})
_PYOPS.update({operator.neg: ("unop", "neg"), operator.pos: ("unop", "pos"), operator.invert: ("unop", "invert"),
               operator.not_: ("unop", "not")})

_NPBINOP = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "truediv",
            np.floor_divide: "floordiv", np.remainder: "mod", np.power: "pow", np.bitwise_and: "bitand",
            np.bitwise_or: "bitor", np.bitwise_xor: "bitxor", np.left_shift: "lshift", np.right_shift: "rshift"}

_CUDA_VALUE = {("threadIdx",): "tid", ("blockIdx",): "ctaid", ("blockDim",): "ntid", ("gridDim",): "nctaid"}
_CUDA_PREFIXES = {(), ("threadIdx",), ("blockIdx",), ("blockDim",), ("gridDim",), ("shared",), ("local",),
                  ("const",), ("atomic",), ("cg",), ("random",), ("types",), ("fp16",)}
_CUDA_CALLS = {("grid",), ("gridsize",), ("shared", "array"), ("local", "array"), ("const", "array_like"),
               ("syncthreads",), ("syncwarp",), ("threadfence",), ("threadfence_block",),
               ("threadfence_system",), ("shfl_sync",), ("shfl_up_sync",), ("shfl_down_sync",),
               ("shfl_xor_sync",), ("ballot_sync",), ("all_sync",), ("any_sync",), ("eq_sync",), ("activemask",),
               ("lanemask_lt",), ("match_any_sync",), ("match_all_sync",), ("selp",), ("popc",),
               ("fma",), ("brev",), ("clz",), ("ffs",), ("cbrt",), ("syncthreads_count",),
               ("syncthreads_and",), ("syncthreads_or",), ("cg", "this_grid"),
               ("ldca",), ("ldcg",), ("ldcs",), ("ldlu",), ("ldcv",), ("stcg",), ("stcs",), ("stwb",), ("stwt",)}
_ATOMICS = {"add", "sub", "max", "min", "exch", "cas", "compare_and_swap", "and_", "or_", "xor", "inc", "dec",
            "nanmax", "nanmin"}


def _numba_dtype(obj):
    """numpy dtype of a numba type object (numba.float32, numba.types.int64), or None."""
    mod = type(obj).__module__ or ""
    if not mod.startswith("numba"):
        return None
    try:
        from numba.np.numpy_support import as_dtype
        return np.dtype(as_dtype(obj))
    except Exception:
        try:
            return np.dtype(str(obj))
        except Exception:
            return None


#: submodules of ``numba.cuda`` / ``gpusim.cuda`` a kernel may name (``from numba.cuda import cg, random``)
_CUDA_SUBMODULES = {"cg": ("cg",), "random": ("random",), "fp16": ("fp16",)}


def _intrinsic(obj):
    """("cudarandom", name) for the ``cuda.random`` device functions, gpusim's or numba's; else None."""
    tag = getattr(obj, "_gpusim_intrinsic", None)
    if isinstance(tag, tuple) and tag[0] == "random":
        return ("cudarandom", tag[1])
    if isinstance(tag, tuple) and tag[0] == "cg":
        return ("cuda", tag)
    pf = getattr(obj, "py_func", None)
    if isinstance(pf, types.FunctionType) and (pf.__module__ or "").endswith("cuda.random"):
        from .random import DEVICE_FUNCTIONS
        if pf.__name__ in DEVICE_FUNCTIONS:
            return ("cudarandom", pf.__name__)
    return None


def classify(obj):
    """What a global name refers to, as a tag the compiler dispatches on."""
    if isinstance(obj, types.ModuleType):
        n = obj.__name__
        if n in ("numba.cuda", "gpusim.cuda") or n.endswith(".numba.cuda"):
            return ("cuda", ())
        if n == "math" or n in ("gpusim.cuda.libdevice", "numba.cuda.libdevice"):
            return ("math", obj)
        if n == "cmath":
            return ("cmath", obj)
        if n == "numpy":
            return ("np", obj)
        if n == "numba" or n.startswith("numba.") and ("types" in n) or n == "gpusim.cuda.types":
            return ("numba", obj)
        head, _, tail = n.rpartition(".")
        if head in ("numba.cuda", "gpusim.cuda") and tail in _CUDA_SUBMODULES:
            return ("cuda", _CUDA_SUBMODULES[tail])
        return ("unknown", obj)
    if isinstance(obj, enum.Enum):
        return classify(enum_value(obj))     # numba types an enum member by its value (IntEnum: as int64)
    it = _intrinsic(obj)
    if it is not None:
        return it
    if isinstance(obj, _nbtypes.Scalar):
        return ("dtype", obj.dtype)
    if isinstance(getattr(obj, "_gpusim_vector", None), str):
        return ("vector", obj._gpusim_vector)    # cuda.float32x4, cuda.float4: a vector type's constructor
    if isinstance(getattr(type(obj), "_gpusim_untyped", None), str):
        return ("untyped", type(obj)._gpusim_untyped)   # a CUDA ufunc: numba-cuda has no type for it in a kernel
    if getattr(obj, "_gpusim_frontend", None) == "cuda" or \
            isinstance(getattr(obj, "py_func", None), types.FunctionType):
        sigs = getattr(obj, "signatures", None)
        if getattr(obj, "device", False) and isinstance(sigs, list) and len(sigs) == 1 and \
                isinstance(sigs[0], _nbtypes.Signature):
            _DEVFN_SIGNATURE[obj.py_func] = sigs[0]
        return ("devfn", obj.py_func)       # gpusim / numba-cuda device functions, numba @njit helpers
    if isinstance(obj, bool) or isinstance(obj, (int, float, np.bool_)) or isinstance(obj, np.number):
        return ("const", obj)
    try:
        if obj in _BUILTINS:
            return ("builtin", _BUILTINS[obj])
        if obj in _MATHFN:
            return ("mathfn", _MATHFN[obj])
        if obj in _NPFN:
            return ("mathfn", _NPFN[obj])
        if obj in _NPBUILTIN:
            return ("npufunc", _NPBUILTIN[obj])
        if obj in _NPBINOP:
            return ("npbinop", _NPBINOP[obj])
        if obj in _NPREDUCE:
            return ("npreduce", _NPREDUCE[obj])
        if obj in _PYOPS:
            return ("pyop",) + _PYOPS[obj]
    except TypeError:          # unhashable
        pass
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return ("dtype", np.dtype(obj))
    if isinstance(obj, np.dtype):
        return ("dtype", obj)
    nd = _numba_dtype(obj)
    if nd is not None:
        return ("dtype", nd)
    if isinstance(obj, types.FunctionType):
        return ("pyfunc", obj)              # a plain Python function: numba-cuda cannot call it from a kernel
    if isinstance(obj, tuple) and all(classify(x)[0] in ("const", "ctuple") for x in obj):
        return ("ctuple", obj)
    if isinstance(obj, np.ndarray):
        return ("array", obj)
    if type(obj).__name__ in ("DeviceNDArray", "FakeCUDAArray") and isinstance(getattr(obj, "_ary", None),
                                                                            np.ndarray):
        return ("devarray", obj)            # a global device array: captured by pointer, not frozen
    if type(obj).__name__ == "ExternFunction" or getattr(obj, "_gpusim_extern", None) is not None:
        return ("extern", obj)
    if obj is None:
        return ("none", None)
    return ("unknown", obj)


def enum_value(member):
    """The value numba gives an enum member in a kernel: an IntEnum's (IntFlag's) as an int64, an Enum's its value."""
    if isinstance(member, int):
        return np.int64(int(member))
    return member.value


#: the one signature a device function was declared with (``cuda.jit("int32(int32)", device=True)``), by its Python
#: function: numba compiles the function for it alone and converts a call's arguments and result to its types
_DEVFN_SIGNATURE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def devfn_signature(py_func):
    """The signature a device function was declared with (its only one), else None."""
    return _DEVFN_SIGNATURE.get(py_func)


def _const_tuple(t):
    return tuple(_const_tuple(x) if isinstance(x, tuple) else const(x) for x in t)


class StaticResolver:
    """Resolution of names and attribute chains, and static evaluation, for ``compiler._FunctionCompiler``."""

    def static(self, node):
        """Tag of a name / attribute chain rooted at a global (None when rooted at a local)."""
        if isinstance(node, ast.Name):
            if node.id in self.bound:
                return self.bound[node.id]       # a parameter bound to the call site's static argument
            if node.id in self.locals:
                return None
            if node.id not in self.scope:
                raise self.compile_error(f"name {node.id!r} is not defined", node)
            return classify(self.scope[node.id])
        if isinstance(node, ast.Attribute):
            base = self.static(node.value)
            if base is None:
                return None
            if node.attr == "value" and isinstance(node.value, ast.Attribute):      # Color.red.value
                owner = self.static(node.value.value)
                if owner is not None and owner[0] == "unknown" and isinstance(owner[1], enum.EnumMeta):
                    return base
            return self.static_attr(base, node.attr, node)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, str) and isinstance(node.value, (ast.Name, ast.Attribute)):
            base = self.static(node.value)                   # Color["red"]: the member by its name
            if base is not None and base[0] == "unknown" and isinstance(base[1], enum.EnumMeta):
                if node.slice.value not in base[1].__members__:
                    raise self.compile_error(f"{base[1].__name__} has no member {node.slice.value!r}", node)
                return classify(base[1].__members__[node.slice.value])
        return None

    def static_attr(self, tag, attr, node):
        kind = tag[0]
        if kind == "cuda":
            path = tag[1] + (attr,)
            if path[0] == "random" and len(path) == 2:
                from .random import DEVICE_FUNCTIONS
                if attr in DEVICE_FUNCTIONS:
                    return ("cudarandom", attr)
                raise self.unsupported(f"cuda.random.{attr} in a kernel (only the device functions "
                                       f"{', '.join(DEVICE_FUNCTIONS)} run in kernels; create the states on the "
                                       "host with create_xoroshiro128p_states)", node)
            if (path[0] == "types" and len(path) == 2) or (len(path) == 1 and attr in _nbtypes.NAMESPACE):
                t = getattr(_nbtypes, attr, None)
                c = classify(t)
                if c[0] == "dtype":
                    return c
                raise self.unsupported(f"cuda.{'.'.join(path)} in a kernel", node)
            if path in _CUDA_PREFIXES or path in _CUDA_CALLS or path[:-1] in _CUDA_VALUE and attr in "xyz" \
                    or path in (("laneid",), ("warpsize",)) or (path[0] in ("atomic", "fp16") and len(path) == 2):
                if path[0] == "atomic" and len(path) == 2 and attr not in _ATOMICS:
                    raise self.unsupported(f"cuda.atomic.{attr}", node)
                if path[0] == "fp16" and len(path) == 2 and attr not in FP16_FUNCTIONS:
                    raise self.unsupported(f"cuda.fp16.{attr}", node)
                return ("cuda", path)
            if len(path) == 1 and attr in VECTOR_STUBS:
                return ("vector", VECTOR_STUBS[attr]._gpusim_vector)
            if path[:-1] in _CUDA_VALUE:
                raise self.compile_error(f"Unknown attribute {attr!r} of type Dim3 (cuda.{'.'.join(path)}: only "
                                         ".x, .y and .z)", node)
            raise self.unsupported(f"cuda.{'.'.join(path)}", node)
        if kind == "cmath":
            if attr not in CMATH_FUNCTIONS:
                raise self.unsupported(f"cmath.{attr}", node)
            return ("cmathfn", attr)
        if kind in ("math", "np", "numba"):
            mod = tag[1]
            if kind == "numba" and attr == "cuda":
                return ("cuda", ())
            if not hasattr(mod, attr):
                raise self.compile_error(f"module {mod.__name__!r} has no attribute {attr!r}", node)
            c = classify(getattr(mod, attr))
            if c[0] == "unknown" and kind == "math" and attr in _NUMBA_MATH_REFUSED:
                raise self.compile_error(f"Unknown attribute {attr!r} of module math (math.{attr} is not supported "
                                         "by numba-cuda)", node)
            if c[0] == "unknown":
                raise self.unsupported(f"{mod.__name__}.{attr}", node)
            return c
        if kind in ("const",):
            raise self.unsupported(f"attribute .{attr} of a constant", node)
        if kind == "unknown" and isinstance(tag[1], enum.EnumMeta):
            if attr not in tag[1].__members__:
                raise self.compile_error(f"Unknown attribute {attr!r} of type {tag[1].__name__}", node)
            return classify(tag[1].__members__[attr])        # Color.red: the member, typed by its value
        if kind == "unknown" and isinstance(tag[1], types.ModuleType):
            # any other module (operator, the script's own helper module ``vm.transform_device``): numba types
            # a module global and resolves its attributes as globals
            if not hasattr(tag[1], attr):
                raise self.compile_error(f"Unknown attribute {attr!r} of type Module({tag[1].__name__})", node)
            return classify(getattr(tag[1], attr))
        if kind == "ctuple" and attr in (getattr(type(tag[1]), "_fields", None) or ()):
            return classify(getattr(tag[1], attr))     # a global namedtuple: numba freezes it, fields and all
        if kind == "unknown" and isinstance(tag[1], np.void) and tag[1].dtype.names:
            # numba types a global record as a constant and lowers it with ``record.tostring()``, which numpy 2
            # removed: numba-cuda 0.30 under numpy 2 fails there, whichever field the kernel reads
            raise self.compile_error(f"'record' object has no attribute 'tostring' (the global record "
                                     f"{ast.unparse(node.value)!r}: numba-cuda lowers a constant record with numpy's "
                                     "removed tostring(); pass the record to the kernel as an argument)", node)
        return ("unknown", None)

    def _small_const(self, n) -> bool:
        """Is ``n`` a compile-time integer constant in [0, 2**32)?"""
        if _contains([n], (ast.Call, ast.Subscript)):
            return False
        try:
            v = self.static_eval(n)
        except (CompileError, UnsupportedConstruct):
            return False
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 <= int(v) < 2 ** 32

    # -- static evaluation (shapes and dtypes of shared/local arrays)
    def static_eval(self, n):
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Tuple):
            return tuple(self.static_eval(e) for e in n.elts)
        if isinstance(n, (ast.Name, ast.Attribute)):
            tag = self.static(n)
            if tag is None:
                raise self.compile_error(f"{ast.unparse(n)!r} must be a compile-time constant", n)
            if tag[0] in ("const", "ctuple", "dtype"):
                return tag[1]
            raise self.compile_error(f"{ast.unparse(n)!r} must be a compile-time constant", n)
        if isinstance(n, ast.BinOp) and type(n.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
                                                         ast.Pow, ast.LShift, ast.RShift):
            a, b = self.static_eval(n.left), self.static_eval(n.right)
            return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                    ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b,
                    ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b}[type(n.op)]()
        raise self.compile_error(f"{ast.unparse(n)!r} must be a compile-time constant", n)
