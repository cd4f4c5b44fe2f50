"""``gpusim.cuda.random``: numba-cuda's xoroshiro128+ random number generators (``numba.cuda.random``).

    from gpusim.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

    @cuda.jit
    def k(out, states):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = xoroshiro128p_uniform_float32(states, i)

    states = create_xoroshiro128p_states(n_threads, seed=42)     # one generator per thread
    k[blocks, threads](out, states)

The streams are bit-identical to numba-cuda's for the same seed: a generator's state is two uint64 words
(``xoroshiro128p_dtype``, a record array of ``s0``, ``s1``); ``create_xoroshiro128p_states`` seeds the first
with splitmix64 (``s0 = s1 = splitmix64(seed)``), advances it ``subsequence_start`` times by 2**64 steps
(``xoroshiro128p_jump``), and makes each next generator the previous one jumped by 2**64 steps.  A step
(``xoroshiro128p_next``) returns ``s0 + s1`` and updates the state (xoroshiro128+ with rotations 55, 14, 36);
``uniform_float64`` is ``(x >> 11) * 2**-53``, ``uniform_float32`` that value rounded to float32; the normal
variates are Box-Muller's first value from two float32 uniforms (numba draws float32 uniforms for the float64
normal too, and so does this).

The state transition is linear over GF(2), so a jump is a 128x128 bit matrix: the host initialises n states with
O(log n) matrix powers applied to whole blocks of states with numpy (numba jits the sequential loop instead; the
result is the same).  The device functions are host functions too (as numba's, which are CPU-jitted): called on
a numpy record array they update it in place; inside a kernel the compiler maps them onto the SIMT machine
(``devlib.DeviceLibrary.rng``), which loads and stores each lane's state and records the integer instructions
numba's code compiles to.
"""
from __future__ import annotations

import math

import numpy as np

from . import types as _types

__all__ = ["xoroshiro128p_dtype", "xoroshiro128p_type", "create_xoroshiro128p_states", "init_xoroshiro128p_states",
           "init_xoroshiro128p_state", "xoroshiro128p_next", "xoroshiro128p_jump", "xoroshiro128p_uniform_float32",
           "xoroshiro128p_uniform_float64", "xoroshiro128p_normal_float32", "xoroshiro128p_normal_float64",
           "DEVICE_FUNCTIONS"]

xoroshiro128p_dtype = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
xoroshiro128p_type = _types.from_dtype(xoroshiro128p_dtype)

_U64 = np.uint64
_M64 = (1 << 64) - 1
#: xoroshiro128+'s jump polynomial (2**64 steps), low word first
JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)
TWO_PI_FLOAT32 = np.float32(2 * math.pi)
TWO_PI_FLOAT64 = np.float64(2 * math.pi)


# ---- the algorithm, on numpy uint64 arrays (any shape; wraps modulo 2**64) --------------------------------------

def splitmix64(seed) -> np.ndarray:
    """The first state word from a seed (both words of the first generator take it)."""
    with np.errstate(over="ignore"):
        z = np.asarray(seed).astype(_U64) + _U64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
        return z ^ (z >> _U64(31))


def _rotl(x, k: int):
    return (x << _U64(k)) | (x >> _U64(64 - k))


def next_state(s0, s1):
    """One step: (result, new s0, new s1)."""
    result = s0 + s1
    s1 = s1 ^ s0
    return result, _rotl(s0, 55) ^ s1 ^ (s1 << _U64(14)), _rotl(s1, 36)


def jump_state(s0, s1):
    """The state 2**64 steps on (xoroshiro128+'s jump function, step by step)."""
    a0 = np.zeros_like(s0)
    a1 = np.zeros_like(s1)
    for word in JUMP:
        for b in range(64):
            if (word >> b) & 1:
                a0 = a0 ^ s0
                a1 = a1 ^ s1
            _, s0, s1 = next_state(s0, s1)
    return a0, a1


def unit_float64(x):
    """uint64 -> float64 in [0, 1): the top 53 bits times 2**-53."""
    return (np.asarray(x) >> _U64(11)).astype(np.float64) * np.float64(1.0 / (1 << 53))


def unit_float32(x):
    return unit_float64(x).astype(np.float32)


# ---- jumps as GF(2) matrices: column b is the jump of the state with only bit b set ------------------------------

def _apply(cols, s0, s1):
    """The linear map with columns ``cols`` ((128,) s0 words, (128,) s1 words) applied to states s0, s1."""
    c0, c1 = cols
    r0 = np.zeros_like(s0)
    r1 = np.zeros_like(s1)
    for b in range(128):
        w = s0 if b < 64 else s1
        bit = (w >> _U64(b % 64)) & _U64(1)
        m = _U64(0) - bit                      # all ones where the bit is set
        r0 ^= c0[b] & m
        r1 ^= c1[b] & m
    return r0, r1


_JUMP_COLS = None


def _jump_cols():
    global _JUMP_COLS
    if _JUMP_COLS is None:
        e0 = np.array([(1 << b) if b < 64 else 0 for b in range(128)], dtype=object).astype(_U64)
        e1 = np.array([0 if b < 64 else (1 << (b - 64)) for b in range(128)], dtype=object).astype(_U64)
        _JUMP_COLS = jump_state(e0, e1)
    return _JUMP_COLS


def _square(cols):
    return _apply(cols, cols[0], cols[1])


def _jump_power(s0, s1, times: int):
    """Jump the states ``times`` times (binary powering of the jump matrix)."""
    cols = _jump_cols()
    while times:
        if times & 1:
            s0, s1 = _apply(cols, s0, s1)
        times >>= 1
        if times:
            cols = _square(cols)
    return s0, s1


def _init_states(n: int, seed: int, subsequence_start: int = 0):
    """s0, s1 of generators 0..n-1: generator i is the seeded one jumped ``subsequence_start + i`` times."""
    s0 = np.empty(n, _U64)
    s1 = np.empty(n, _U64)
    if n == 0:
        return s0, s1
    z = splitmix64(np.uint64(int(seed) & _M64))
    with np.errstate(over="ignore"):
        return _init_from(n, z, subsequence_start, s0, s1)


def _init_from(n, z, subsequence_start, s0, s1):
    a, b = _jump_power(np.array([z], _U64), np.array([z], _U64), int(subsequence_start))
    s0[0], s1[0] = a[0], b[0]
    have = 1
    cols = _jump_cols()                      # J^have, doubling
    while have < n:
        m = min(have, n - have)
        s0[have:have + m], s1[have:have + m] = _apply(cols, s0[:m], s1[:m])
        have += m
        if have < n:
            cols = _square(cols)
    return s0, s1


# ---- host API ------------------------------------------------------------------------------------------------

def init_xoroshiro128p_states(states, seed, subsequence_start=0, stream=0):
    """Initialise a device (or host) array of ``xoroshiro128p_dtype`` states for parallel generators,
    each 2**64 steps after the previous one."""
    a = getattr(states, "_ary", states)
    if not isinstance(a, np.ndarray) or a.dtype != xoroshiro128p_dtype or a.ndim != 1:
        raise TypeError("states must be a 1-d array of xoroshiro128p_dtype")
    s0, s1 = _init_states(a.shape[0], seed, subsequence_start)
    a["s0"] = s0
    a["s1"] = s1


def create_xoroshiro128p_states(n, seed, subsequence_start=0, stream=0):
    """A new device array of ``n`` generator states, initialised as numba-cuda does for ``seed``."""
    from .memory import DeviceNDArray
    states = DeviceNDArray(np.zeros(int(n), dtype=xoroshiro128p_dtype))
    init_xoroshiro128p_states(states, seed, subsequence_start, stream)
    return states


# ---- device functions (host-callable, like numba's CPU-jitted ones; kernels get the SIMT version) --------------

def _rec(states):
    a = getattr(states, "_ary", states)
    if not isinstance(a, np.ndarray) or a.dtype != xoroshiro128p_dtype:
        raise TypeError("states must be an array of xoroshiro128p_dtype (create_xoroshiro128p_states)")
    return a


def init_xoroshiro128p_state(states, index, seed):
    """Seed ``states[index]`` with splitmix64(seed)."""
    a = _rec(states)
    z = splitmix64(np.uint64(int(seed) & _M64))
    a[int(index)] = (z, z)


def xoroshiro128p_next(states, index):
    """The next uint64 of ``states[index]``; advances it."""
    a = _rec(states)
    i = int(index)
    with np.errstate(over="ignore"):
        r, s0, s1 = next_state(a["s0"][i], a["s1"][i])
    a["s0"][i], a["s1"][i] = s0, s1
    return _U64(r)


def xoroshiro128p_jump(states, index):
    """Advance ``states[index]`` by 2**64 steps."""
    a = _rec(states)
    i = int(index)
    with np.errstate(over="ignore"):
        s0, s1 = jump_state(np.array([a["s0"][i]]), np.array([a["s1"][i]]))
    a["s0"][i], a["s1"][i] = s0[0], s1[0]


def xoroshiro128p_uniform_float64(states, index):
    """A float64 in [0, 1); advances ``states[index]``."""
    return np.float64(unit_float64(xoroshiro128p_next(states, index)))


def xoroshiro128p_uniform_float32(states, index):
    """A float32 in [0, 1); advances ``states[index]``."""
    return np.float32(unit_float32(xoroshiro128p_next(states, index)))


def xoroshiro128p_normal_float32(states, index):
    """A standard normal float32 (Box-Muller, first value); advances ``states[index]`` by two steps."""
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return np.float32(np.sqrt(-np.float32(2.0) * np.log(u1)) * np.cos(TWO_PI_FLOAT32 * u2))


def xoroshiro128p_normal_float64(states, index):
    """A standard normal float64 from two float32 uniforms (as numba-cuda draws it); two steps."""
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return np.float64(np.sqrt(-np.float64(2.0) * np.log(u1)) * np.cos(TWO_PI_FLOAT64 * u2))


#: the device functions a kernel may call (the compiler maps them, or numba's namesakes, onto the SIMT machine)
DEVICE_FUNCTIONS = ("xoroshiro128p_next", "xoroshiro128p_jump", "xoroshiro128p_uniform_float32",
                    "xoroshiro128p_uniform_float64", "xoroshiro128p_normal_float32", "xoroshiro128p_normal_float64",
                    "init_xoroshiro128p_state")
for _n in DEVICE_FUNCTIONS:
    globals()[_n]._gpusim_intrinsic = ("random", _n)
