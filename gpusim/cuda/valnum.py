"""Value numbering of the SIMT front end, as LLVM's GVN and instcombine leave the code ptxas sees: the same
arithmetic on the same values under the same mask is one instruction whose value is reused (``2 * i`` written
twice), and an index ``u + c`` that keeps ``u``'s sign is the address of ``u`` with an immediate offset
(``a[2 * i + 1]`` next to ``a[2 * i]``: ``LDG.E.64 [R2.64+0x8]``).  Values are ``values.V``; their key
(``V.key``) is what the numbering and the address reuse (``indexing``) compare."""
from __future__ import annotations

from .values import V

#: entries of a chunk's value table past which it is forgotten (bounds memory; a miss only costs an instruction)
TABLE_MAX = 4096


def numbered(hit, r, const: bool, nn: bool, base=None, pow2: int = 0, deps=()) -> V:
    """The value ``r`` as a ``V``: with ``hit`` (key, deps) of an earlier identical computation, that one's key and
    deps (no instruction); else ``deps``.  ``base``/``pow2``: its provenance (``V.base``, ``V.pow2``)."""
    v = V(r, hit[1] if hit is not None else deps, const, nn)
    if hit is not None:
        v.sid = hit[0]
    v.base, v.pow2 = base, pow2
    return v


def remember(table: dict, key, v: V) -> V:
    """Enter ``v`` in the value ``table`` under ``key`` (the operation, its types, operands and mask); return it."""
    if len(table) > TABLE_MAX:
        table.clear()
    table[key] = (v.key(), v.deps)
    return v


def operand_key(v: V):
    """An operand's identity for value numbering: a constant by its type and value, a runtime value by its key."""
    if v.const:
        return ("c", v.v.dtype.str, v.v.tobytes())
    return v.key()


def log2_const(k: V) -> int:
    """m when the constant ``k`` is 2^m with m >= 1, else 0."""
    if k.v.dtype.kind not in "iu":
        return 0
    n = int(k.v)
    return n.bit_length() - 1 if n > 1 and n & (n - 1) == 0 else 0


def provenance(op: str, a: V, b: V, ct) -> tuple:
    """(base, pow2) of an integer ``op`` result (see ``V.base``, ``V.pow2``): ``u * 2^m`` is a multiple of 2^m;
    ``u + c`` / ``c + u`` / ``u - (-c)`` with a constant c >= 0 keeps u's sign when u >= 0, or when u is a
    multiple of 2^m and c < 2^m."""
    if ct.kind not in "iu" or a.const == b.const:
        return None, 0
    k, u = (a, b) if a.const else (b, a)
    if op == "mul":
        return None, log2_const(k)
    if op in ("lshift",) and k is b:
        n = int(k.v)
        return None, n if 0 < n < 63 else 0
    if op == "add" or (op == "sub" and k is b):
        c = int(k.v) if op == "add" else -int(k.v)
        if c >= 0 and (u.nn or (u.pow2 and c < (1 << u.pow2))):
            return (u.key(), c), 0
    return None, 0
