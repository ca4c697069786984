"""Bounded waits on PostgreSQL (docs/reliability.md#slow-postgresql).

A server that stops answering (a frozen network path, a stalled host) leaves a query waiting
on its socket for ever: the server's ``statement_timeout`` never arrives, and TCP keeps the
connection open while a middlebox acknowledges. :func:`bounded` watches a connection while a
block uses it: when no progress was reported (:meth:`Watchdog.progress`) for
:data:`QUERY_DEADLINE_S`, it shuts the connection's socket down, so the waiting call fails at
once and the block raises :class:`~schedlog.host.stores.base.StoreUnavailableError`. The pool
discards the broken connection; the next use connects afresh (``connect_timeout`` bounds that).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Final

import psycopg
from psycopg_pool import ConnectionPool

from schedlog.host.stores.base import StoreUnavailableError

__all__ = ["QUERY_DEADLINE_S", "Watchdog", "bounded", "check_connection", "deadline_s"]

#: The longest a store call waits for the server without progress (seconds).
QUERY_DEADLINE_S: Final = 10.0


def deadline_s() -> float:
    """:data:`QUERY_DEADLINE_S`, read at each call (a test may lower it); also the longest
    wait for a free pool connection."""
    value: float = globals()["QUERY_DEADLINE_S"]
    return value


class Watchdog:
    """Shuts ``conn``'s socket down once ``seconds`` pass without :meth:`progress`.

    Watched by the process's one :class:`_Watcher` thread (a deadline in its heap), not by a
    thread of its own: a query costs a heap push, not a thread start (docs/decisions.md,
    "Burst on PostgreSQL: coalesced lease checks, one watchdog thread")."""

    def __init__(self, conn: psycopg.Connection[Any], seconds: float) -> None:
        self._conn = conn
        self._seconds = seconds
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stopped = False
        self.fired = False
        _WATCHER.watch(self, self._last + seconds)

    def progress(self) -> None:
        self._last = time.monotonic()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _check(self) -> float | None:
        """At a deadline (the watcher's thread): the next deadline when progress was made
        meanwhile, else None after shutting the socket down (or when stopped)."""
        with self._lock:
            if self._stopped:
                return None
            left = self._last + self._seconds - time.monotonic()
            if left > 0:
                return time.monotonic() + left
            self.fired = True
        # shutdown acts on the socket, not the descriptor: the dup is closed at once
        with contextlib.suppress(OSError, psycopg.Error):
            sock = socket.socket(fileno=os.dup(self._conn.pgconn.socket))
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.close()
        return None

    def stop(self) -> None:
        with self._lock:
            self._stopped = True


class _Watcher:
    """The one thread that watches every :class:`Watchdog` of the process: a heap of
    deadlines, slept on until the earliest. A stopped watchdog stays in the heap until it is
    at the top (then it is dropped without waiting). Started on first use, and again in a
    child after ``fork`` (threads do not survive it; :meth:`reset`)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Watchdog]] = []
        self._order = itertools.count()
        self._started = False

    def watch(self, dog: Watchdog, at: float) -> None:
        with self._cond:
            if not self._started:
                self._started = True
                thread = threading.Thread(target=self._run, name="schedlog-watchdog", daemon=True)
                thread.start()
            heapq.heappush(self._heap, (at, next(self._order), dog))
            if self._heap[0][2] is dog:  # earlier than what the thread sleeps until
                self._cond.notify()

    def _due(self) -> Watchdog:
        """The next watchdog whose deadline passed (waits for it)."""
        with self._cond:
            while True:
                heap = self._heap
                while heap and heap[0][2].stopped:
                    heapq.heappop(heap)
                if not heap:
                    self._cond.wait()
                    continue
                left = heap[0][0] - time.monotonic()
                if left <= 0:
                    return heapq.heappop(heap)[2]
                self._cond.wait(left)

    def _run(self) -> None:
        while True:
            dog = self._due()
            again = dog._check()  # outside the heap's lock: a shutdown may take a moment
            if again is not None:
                with self._cond:
                    heapq.heappush(self._heap, (again, next(self._order), dog))


_WATCHER: Final = _Watcher()
os.register_at_fork(after_in_child=_WATCHER.reset)


@contextlib.contextmanager
def bounded(conn: psycopg.Connection[Any], what: str = "a query") -> Iterator[Watchdog]:
    """Run the block under a :class:`Watchdog` of :data:`QUERY_DEADLINE_S` (read at each call,
    so a test may lower it); a failure after the watchdog fired is
    :class:`StoreUnavailableError`."""
    seconds = deadline_s()
    watchdog = Watchdog(conn, seconds)
    try:
        yield watchdog
    except psycopg.Error as exc:
        if watchdog.fired:
            raise StoreUnavailableError(
                f"PostgreSQL did not answer {what} within {seconds:g} s"
            ) from exc
        raise
    finally:
        watchdog.stop()


def check_connection(conn: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection before handing it out, bounded like a query."""
    with bounded(conn, "the connection check"):
        ConnectionPool.check_connection(conn)
