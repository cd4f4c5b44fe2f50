"""numba-cuda documentation example: 1-D heat equation with a grid-wide barrier (``solve_heat_equation``:
``cuda.cg.this_grid()`` / ``grid.sync()`` between time steps, two buffers swapped each step), exactly as the
example writes it.

Source: https://github.com/NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_laplace.py at tag
v0.30.4 (the text of the installed numba-cuda 0.30.4 package).  BSD-2-Clause, Copyright (c) 2025 NVIDIA
CORPORATION & AFFILIATES.  The kernel is unchanged (lifted from the test method to module level); only the
import is switched and the host code is in ``launch()``.  The example launches with
``solve_heat_equation.forall(len(data))``; ``launch()`` gives the same grid explicitly (``tpb`` threads per
block, as many blocks as needed), a cooperative launch since the kernel syncs the grid.
"""
import numpy as np

try:                                   # the real front end when it is installed ...
    from numba import cuda
except ImportError:                    # ... otherwise gpusim's numba.cuda-compatible one
    from gpusim import cuda


@cuda.jit
def solve_heat_equation(buf_0, buf_1, timesteps, k):
    i = cuda.grid(1)

    # Don't continue if our index is outside the domain
    if i >= len(buf_0):
        return

    # Prepare to do a grid-wide synchronization later
    grid = cuda.cg.this_grid()

    for step in range(timesteps):
        # Select the buffer from the previous timestep
        if (step % 2) == 0:
            data = buf_0
            next_data = buf_1
        else:
            data = buf_1
            next_data = buf_0

        # Get the current temperature associated with this point
        curr_temp = data[i]

        # Apply formula from finite difference equation
        if i == 0:
            # Left wall is held at T = 0
            next_temp = curr_temp + k * (data[i + 1] - (2 * curr_temp))
        elif i == len(data) - 1:
            # Right wall is held at T = 0
            next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp))
        else:
            # Interior points are a weighted average of their neighbors
            next_temp = curr_temp + k * (
                data[i - 1] - (2 * curr_temp) + data[i + 1]
            )

        # Write new value to the next buffer
        next_data[i] = next_temp

        # Wait for every thread to write before moving on
        grid.sync()


def heat_reference(data, niter, k):
    """numpy: the two buffers after ``niter`` steps (step s reads buffer s % 2 and writes the other)."""
    bufs = [data.copy(), np.zeros_like(data)]
    for step in range(niter):
        cur, nxt = bufs[step % 2], bufs[(step + 1) % 2]
        lap = np.empty_like(cur)
        lap[0] = cur[1] - 2 * cur[0]
        lap[-1] = cur[-2] - 2 * cur[-1]
        lap[1:-1] = cur[:-2] - 2 * cur[1:-1] + cur[2:]
        nxt[:] = cur + k * lap
    return bufs


def launch(size: int = 1001, niter: int = 100, k: float = 0.25, tpb: int = 128) -> dict:
    """The example's problem (1001 points, the middle one at 10000) for ``niter`` steps (the example: 10000)."""
    data = np.zeros(size)
    # Middle element is made very hot
    data[size // 2] = 10000
    buf_0 = data.copy()
    # This extra array is used for synchronization purposes
    buf_1 = np.zeros_like(buf_0)
    return {
        "kernel": solve_heat_equation,
        "grid": ((size + tpb - 1) // tpb,),
        "block": (tpb,),
        "shared_bytes": 0,
        "args": [buf_0, buf_1, niter, k],
        "outputs": [0, 1],
        "reference": lambda: dict(enumerate(heat_reference(data, niter, k))),
        "rtol": 1e-12, "atol": 1e-9,
        "flops": 4 * size * niter,
        "min_bytes": 2 * 8 * size,
    }
