"""The log commands' use of the other cores: the second part of a long log's check in a child
process (docs/decisions.md, "A long log is checked in two parts"), and ``validate`` of many logs
in this process and a few children (:func:`fork_map`; docs/decisions.md, "Validating many
logs").

Only the ``schedlog`` command forks, and only for ``validate``, ``replay`` and ``repair``, which
run no threads: library code never does. :func:`fork_split` is the ``split`` of
:func:`schedlog.invariant.fastcheck.fast_check`, which decides what the work is and what its
result means; whatever happens here (no fork, a child that dies, a short result), the check's
outcome is the same, only slower.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Final, TypeVar, cast

_T = TypeVar("_T")
_R = TypeVar("_R")

__all__ = ["fork_map", "fork_split", "split_available", "usable_cores"]

#: A result travels as its pickled length (this many bytes, little-endian) then its pickle.
_LENGTH: Final = 8
#: The bytes of results a child writes to its pipe at once (less than a pipe holds).
_BUFFER: Final = 1 << 14
#: This process's run is this many hundredths of a child's: it also writes every result and
#: reads the children's.
_OWN_SHARE: Final = 85
#: The most bytes of results taken from a child's pipe in one read.
_READ: Final = 1 << 16
#: This process empties the children's pipes after every this many of its own items: an
#: empty pipe costs a system call and an exception, and a child writes a buffer of results
#: (:data:`_BUFFER`, a few dozen small results) at a time into a pipe that holds four.
_DRAIN_EVERY: Final = 8


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
    """``map(work, items)``, in order, in ``workers`` processes: ``items`` cut in ``workers``
    runs, the first (a little shorter, :data:`_OWN_SHARE`) computed here, its results given as
    they come, each other by a child process from its start. This process takes what the
    children wrote after every few of its own items (:data:`_DRAIN_EVERY`, so that no child
    waits long on a full pipe),
    then, for each child's run in turn, computes the run's items from its end backwards until
    they meet what the child gave, and gives the run in order. A child that cannot start, dies
    or gives a short result leaves the rest of its run to this process, so the results are the
    same as ``map``'s whatever happens to the children; an exception of ``work`` is raised
    here, in order, when this process computed that item itself. Results must pickle.

    Runs rather than every ``workers``-th item, and the ends of the children's runs taken
    back (docs/decisions.md, "Validating many logs: one call a small log, the first run in
    this process"): this process works too, reads a child's results in bulk, and never waits
    for a child that a loaded machine has descheduled."""
    if workers < 2:
        yield from map(work, items)
        return
    own = len(items) * _OWN_SHARE // (_OWN_SHARE + 100 * (workers - 1))
    cuts = [0] + [own + (len(items) - own) * n // (workers - 1) for n in range(workers)]
    runs = [items[cuts[number] : cuts[number + 1]] for number in range(workers)]
    children = [_start(work, run) for run in runs[1:]]
    try:
        for done, item in enumerate(runs[0], start=1):
            yield work(item)
            if not done % _DRAIN_EVERY:
                _drain(children)
        for number, run in enumerate(runs[1:]):
            yield from _finish(work, run, children, number)
    finally:  # also when the caller stops early
        for results in children:
            if results is not None:
                results.close()


def _drain(children: list[_Results | None]) -> None:
    for child in children:
        if child is not None:
            child.drain()


def _finish(
    work: Callable[[_T], _R], run: Sequence[_T], children: list[_Results | None], number: int
) -> Iterator[_R]:
    """The results of ``run``, child ``number``'s, in order: those the child gave from its
    start, and the others computed here from its end backwards while the child works (the
    other children's pipes emptied meanwhile); then the child is stopped."""
    child = children[number]
    given: list[object] = []
    taken: list[Callable[[], _R]] = []  # computed here, the last item first
    while True:
        if child is not None:
            child.drain()
            given += child.ready()
        if len(given) + len(taken) >= len(run):
            break
        _drain(children)
        taken.append(_computed(work, run[len(run) - 1 - len(taken)]))
    if child is not None:
        child.close()
        children[number] = None
    for result in given[: len(run) - len(taken)]:
        yield cast(_R, result)
    for computed in reversed(taken):
        yield computed()


def _computed(work: Callable[[_T], _R], item: _T) -> Callable[[], _R]:
    """``work(item)`` computed now: what gives its result, or raises its exception, later."""
    try:
        result = work(item)
    except Exception as exc:  # raised when its turn comes, after the results before it
        error = exc

        def fail() -> _R:
            raise error

        return fail
    return lambda: result


class _Results:
    """The results a child writes, taken without waiting: :meth:`drain` reads what the pipe
    holds, :meth:`ready` unpickles the whole results read so far."""

    def __init__(self, fd: int, pid: int) -> None:
        self.fd: int | None = fd
        self.pid = pid
        self.data = bytearray()
        self.start = 0  # where the next result begins in ``data``
        self.ended = False  # the child closed its end, or wrote a torn result
        os.set_blocking(fd, False)

    def drain(self) -> None:
        """Take what the child wrote so far, without waiting for more."""
        while self.fd is not None and not self.ended:
            try:
                part = os.read(self.fd, _READ)
            except BlockingIOError:
                return
            if part:
                self.data += part
            else:
                self.ended = True

    def ready(self) -> list[object]:
        """The results read whole since the last call, in order."""
        data, start, found = self.data, self.start, []
        while len(data) - start >= _LENGTH:
            end = start + _LENGTH + int.from_bytes(data[start : start + _LENGTH], "little")
            if len(data) < end:
                break
            try:
                found.append(pickle.loads(bytes(data[start + _LENGTH : end])))
            except Exception:  # a torn pickle: the child died while writing
                self.ended, self.data, self.start = True, bytearray(), 0
                return found
            start = end
        del data[:start]
        self.start = 0
        return found

    def close(self) -> None:
        """Stop the child (its results are no longer needed) and wait for it."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
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
