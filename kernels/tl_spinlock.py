"""Spin locks and atomic round trips: the microbenchmarks behind gpusim's lock and fence timing.

* ``spin_lock_kernel``: every program takes one lock (``while tl.atomic_cas(Lock, 0, 1) == 1: pass``), appends
  its id to ``Order`` in a short critical section, and gives the lock back (``tl.atomic_xchg(Lock, 0)``), the way
  the layer-norm tutorial guards its partial sums.  G programs hand the lock on G - 1 times: the time per extra
  program is the cost of one hand-off under contention (the holder's critical section and release, the next
  spinner's successful compare-and-swap).
* ``atomic_chain_kernel``: one program, N atomics in a dependent chain (each address depends on the previous
  result), with ``sem="relaxed"`` (the L2 atomic round trip) or the default ``acq_rel`` (plus the fences Triton
  puts around it: MEMBAR.ALL.GPU before, CCTL.IVALL after).

Both run under gpusim and under real Triton (``gpusim.validate.lock_micro`` times them on the GPU).
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    import triton
    import triton.language as tl
except ImportError:                    # ... otherwise gpusim's Triton-compatible one
    from gpusim import triton
    from gpusim.triton import language as tl


@triton.jit
def spin_lock_kernel(Lock, Count, Order):
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    c = tl.load(Count)
    tl.store(Order + c, tl.program_id(0))
    tl.store(Count, c + 1)
    tl.debug_barrier()                 # the critical section's stores issued before the lock is given back
    tl.atomic_xchg(Lock, 0)


@triton.jit
def atomic_chain_kernel(P, Out, N, SEM: tl.constexpr):
    v = tl.atomic_add(P, 1, sem=SEM)
    for _ in range(1, N):
        # the old value is below 2**30, so the offset is 0, but the address waits for the previous result
        v = tl.atomic_add(P + (v >> 30), 1, sem=SEM)
    tl.store(Out, v)


def launch(kind: str = "lock", G: int = 64, num_warps: int = 4, N: int = 256, sem: str = "relaxed") -> dict:
    """``kind="lock"``: G programs of ``num_warps`` warps take the lock in turn; ``kind="chain"``: one program
    issues N dependent atomics with semantics ``sem`` ("relaxed" or "acq_rel")."""
    if kind == "lock":
        lock = np.zeros(1, np.int32)
        count = np.zeros(1, np.int32)
        order = np.full(G, -1, np.int32)
        return {"kernel": spin_lock_kernel, "grid": (G,), "args": [lock, count, order],
                "meta": {"num_warps": num_warps},
                "outputs": ["count"],            # and `order`: a permutation of the program ids (any order)
                "buffers": {"count": count, "order": order},
                "reference": lambda: {"count": np.array([G], np.int32)}}
    if kind == "chain":
        p = np.zeros(1, np.int32)
        out = np.zeros(1, np.int32)
        return {"kernel": atomic_chain_kernel, "grid": (1,), "args": [p, out, N],
                "meta": {"SEM": sem, "num_warps": num_warps},
                "outputs": ["out"], "buffers": {"out": out},
                "reference": lambda: {"out": np.array([N - 1], np.int32)}}
    raise ValueError(f"kind must be 'lock' or 'chain', not {kind!r}")
