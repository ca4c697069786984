"""The second part of a long log's check, in a child process: the log commands' use of a second
core (docs/decisions.md, "A long log is checked in two parts").

Only the ``schedlog`` command forks, and only for ``validate``, ``replay`` and ``repair``, which
run no threads: library code never does. :func:`fork_split` is the ``split`` of
:func:`schedlog.invariant.fastcheck.fast_check`, which decides what the work is and what its
result means; whatever happens here (no fork, a child that dies, a short result), the check's
outcome is the same, only slower.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["fork_split", "split_available"]


def split_available() -> bool:
    """Whether a child process can run beside this one on another core."""
    if not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores >= 2


def fork_split(work: Callable[[], bytes]) -> Callable[[], bytes | None]:
    """Run ``work`` in a child process; what waits for the child and returns the bytes it gave
    (None when there is no child)."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return _nothing
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return _nothing
    if pid == 0:  # the child: write the result and leave at once, without any clean-up
        try:
            os.close(read_end)
            view = memoryview(work())
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(0)
    os.close(write_end)

    def wait() -> bytes:
        parts = []
        with open(read_end, "rb", buffering=0, closefd=True) as pipe:
            while part := pipe.read(1 << 20):
                parts.append(part)
        os.waitpid(pid, 0)
        return b"".join(parts)

    return wait


def _nothing() -> None:
    return None
