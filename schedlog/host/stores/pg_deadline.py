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
    """Shuts ``conn``'s socket down once ``seconds`` pass without :meth:`progress`."""

    def __init__(self, conn: psycopg.Connection[Any], seconds: float) -> None:
        self._conn = conn
        self._seconds = seconds
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stopped = False
        self.fired = False
        self._timer: threading.Timer | None = None
        self._arm(seconds)

    def _arm(self, after: float) -> None:
        timer = threading.Timer(after, self._check)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def progress(self) -> None:
        self._last = time.monotonic()

    def _check(self) -> None:
        with self._lock:
            if self._stopped:
                return
            left = self._last + self._seconds - time.monotonic()
            if left > 0:
                self._arm(left)
                return
            self.fired = True
        # shutdown acts on the socket, not the descriptor: the dup is closed at once
        with contextlib.suppress(OSError, psycopg.Error):
            sock = socket.socket(fileno=os.dup(self._conn.pgconn.socket))
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.close()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()


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
