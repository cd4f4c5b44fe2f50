"""numba-cuda documentation example: sessionization (``sessionize``: session boundaries from user ids and time
gaps, then a grid-wide barrier ``cuda.cg.this_grid().sync()`` taken only by the boundary threads, then each
boundary thread labels its session by looking ahead), exactly as the example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_sessionize.py at
tag v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level, with the
``session_timeout`` it reads as a module global); only the import is switched and the host code is in
``launch()`` (the example's own 28 events).  The example launches with ``sessionize.forall(len(ids))``;
``launch()`` gives that grid explicitly.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda

# Set the timeout to one hour
session_timeout = np.int64(np.timedelta64("3600", "s"))


@cuda.jit
def sessionize(user_id, timestamp, results):
    gid = cuda.grid(1)
    size = len(user_id)

    if gid >= size:
        return

    # Determine session boundaries
    is_first_datapoint = gid == 0
    if not is_first_datapoint:
        new_user = user_id[gid] != user_id[gid - 1]
        timed_out = (
            timestamp[gid] - timestamp[gid - 1] > session_timeout
        )
        is_sess_boundary = new_user or timed_out
    else:
        is_sess_boundary = True

    # Determine session labels
    if is_sess_boundary:
        # This thread marks the start of a session
        results[gid] = gid

        # Make sure all session boundaries are written
        # before populating the session id
        grid = cuda.cg.this_grid()
        grid.sync()

        look_ahead = 1
        # Check elements 'forward' of this one
        # until a new session boundary is found
        while results[gid + look_ahead] == 0:
            results[gid + look_ahead] = gid
            look_ahead += 1
            # Avoid out-of-bounds accesses by the last thread
            if gid + look_ahead == size - 1:
                results[gid + look_ahead] = gid
                break


def launch(tpb: int = 128) -> dict:
    """The example's data: 28 events of 4 users."""
    ids = np.array([1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4])
    sec = np.array([1, 2, 3, 5000, 5001, 5002, 1, 2, 3, 1, 2, 5000, 5001, 10000, 10001, 10002, 10003, 15000,
                    150001, 1, 5000, 50001, 15000, 20000, 25000, 25001, 25002, 25003],
                   dtype="datetime64[ns]").astype("int64")  # Cast to int64 for compatibility
    # Create a vector to hold the results
    results = np.zeros(len(ids))
    expect = [0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 11, 11, 13, 13, 13, 13, 17, 18, 19, 20, 21, 21, 23, 24, 24, 24,
              24]
    return {
        "kernel": sessionize,
        "grid": ((len(ids) + tpb - 1) // tpb,),
        "block": (tpb,),
        "shared_bytes": 0,
        "args": [ids, sec, results],
        "outputs": [2],
        "reference": lambda: {2: np.array(expect, np.float64)},
        "rtol": 0, "atol": 0,
        "flops": 0,
        "min_bytes": 3 * 8 * len(ids),
    }
