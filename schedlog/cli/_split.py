"""The log commands' use of the other cores: the second part of a long log's check in a child
process (docs/decisions.md, "A long log is checked in two parts"), and ``validate`` of many logs
in a few children (:func:`fork_map`; docs/decisions.md, "Validating many logs").

Only the ``schedlog`` command forks, and only for ``validate``, ``replay`` and ``repair``, which
run no threads: library code never does. :func:`fork_split` is the ``split`` of
:func:`schedlog.invariant.fastcheck.fast_check`, which decides what the work is and what its
result means; whatever happens here (no fork, a child that dies, a short result), the check's
outcome is the same, only slower.
"""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Final, TypeVar, cast

_T = TypeVar("_T")
_R = TypeVar("_R")

__all__ = ["fork_map", "fork_split", "split_available", "usable_cores"]

#: A result travels as its pickled length (this many bytes, little-endian) then its pickle.
_LENGTH: Final = 8
#: The bytes of results a child writes to its pipe at once (less than a pipe holds).
_BUFFER: Final = 1 << 14


def usable_cores() -> int:
    """The cores this process may run on (1 where there is no ``os.fork``)."""
    if not hasattr(os, "fork"):
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def split_available() -> bool:
    """Whether a child process can run beside this one on another core."""
    return usable_cores() >= 2


def fork_map(work: Callable[[_T], _R], items: Sequence[_T], workers: int) -> Iterator[_R]:
    """``map(work, items)``, in order, computed by ``workers`` child processes (item ``i`` by
    child ``i % workers``) while this one only collects. A child that cannot start, dies or
    gives a short result leaves the rest of its items to this process, so the results are the
    same as ``map``'s whatever happens to the children; an exception of ``work`` is raised here,
    when this process computes that item itself. Results must pickle."""
    children: list[_Results | None] = [
        _start(work, items[number::workers]) for number in range(workers)
    ]
    try:
        for index, item in enumerate(items):
            read = children[index % workers]
            result = read() if read is not None else None
            if result is None:
                children[index % workers] = None  # that child is gone: its items are done here
                yield work(item)
            else:
                yield cast(_R, result[0])
    finally:  # also when the caller stops early: a child still writing gets a broken pipe
        for read in children:
            if read is not None:
                read.close()


class _Results:
    """The results a child writes, read one at a time; ``()`` once it has no more."""

    def __init__(self, fd: int, pid: int) -> None:
        self.pipe = open(fd, "rb", closefd=True)  # noqa: SIM115 - closed by close()
        self.pid = pid

    def __call__(self) -> tuple[object] | None:
        size = self.pipe.read(_LENGTH)
        if len(size) != _LENGTH:
            self.close()
            return None
        data = self.pipe.read(int.from_bytes(size, "little"))
        try:
            return (pickle.loads(data),)
        except Exception:  # a torn pickle: the child died while writing
            self.close()
            return None

    def close(self) -> None:
        if not self.pipe.closed:
            self.pipe.close()
            os.waitpid(self.pid, 0)


def _start(work: Callable[[_T], _R], items: Sequence[_T]) -> _Results | None:
    """A child that writes ``work(item)`` of each of ``items`` to a pipe: the reader of its
    results, or None when it cannot start."""

    def write(fd: int) -> None:
        # The parent's objects go to the collector's permanent generation: a collection here
        # never walks them (nor copies their pages). The results leave a buffer-full at a
        # time, not one write each; the parent waits for them in order either way.
        gc.freeze()
        with open(fd, "wb", buffering=_BUFFER, closefd=True) as pipe:
            for item in items:
                data = pickle.dumps(work(item), pickle.HIGHEST_PROTOCOL)
                pipe.write(len(data).to_bytes(_LENGTH, "little") + data)

    child = _fork_writer(write)
    return None if child is None else _Results(child[1], child[0])


def _fork_writer(write: Callable[[int], None]) -> tuple[int, int] | None:
    """Fork a child that runs ``write`` on the write end of a new pipe and leaves at once,
    without any clean-up (nothing of the parent's is flushed twice): the child's pid and the
    read end, or None when there is no child."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:
        try:
            os.close(read_end)
            write(write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def fork_split(work: Callable[[], bytes]) -> Callable[[], bytes | None]:
    """Run ``work`` in a child process; what waits for the child and returns the bytes it gave
    (None when there is no child)."""

    def write(fd: int) -> None:
        view = memoryview(work())
        while view:
            view = view[os.write(fd, view) :]

    child = _fork_writer(write)
    if child is None:
        return _nothing
    pid, read_end = child

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
