"""Two independent replays on two cores: one in a forked child process, one here.

Loop sampling replays the grid twice (the loop cut to ``J1`` and to ``J2`` repeats); the two replays share
nothing, so on a host with a second core the first runs in a child made with ``os.fork`` (it inherits the trace
copy-on-write: nothing is pickled on the way in) and sends its ``EngineResult`` back through a temporary file.
Only in the main process of a POSIX host with two or more CPUs (a sweep's or ``validate``'s pool workers already
fill the cores) and unless ``GPUSIM_NO_FORK`` is set; a child that fails is replaced by running its replay here,
so the result never depends on whether it forked.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import tempfile
from typing import Callable, TypeVar

T = TypeVar("T")
U = TypeVar("U")


def can_fork() -> bool:
    return (hasattr(os, "fork") and (os.cpu_count() or 1) >= 2 and not os.environ.get("GPUSIM_NO_FORK")
            and multiprocessing.current_process().name == "MainProcess")


def both(first: Callable[[], T], second: Callable[[], U]) -> tuple[T, U]:
    """``(first(), second())``, the first computed in a forked child when ``can_fork()``."""
    if not can_fork():
        return first(), second()
    fd, path = tempfile.mkstemp(prefix="gpusim-replay-", suffix=".pkl")
    os.close(fd)
    pid = os.fork()
    if pid == 0:                                      # the child: compute, write, leave without cleanup handlers
        code = 1
        try:
            r = first()
            with open(path, "wb") as f:
                pickle.dump(r, f, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        except BaseException:                         # noqa: BLE001  (the parent recomputes)
            pass
        os._exit(code)
    try:
        b = second()
    except BaseException:
        _reap(pid, kill=True)
        os.unlink(path)
        raise
    ok = _reap(pid) == 0
    a = None
    try:
        if ok:
            try:
                with open(path, "rb") as f:
                    a = pickle.load(f)
            except Exception:                         # noqa: BLE001  (a truncated file: recompute)
                ok = False
    finally:
        os.unlink(path)
    return (a if ok else first()), b


def _reap(pid: int, kill: bool = False) -> int:
    if kill:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
