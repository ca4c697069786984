"""The PostgreSQL store's connections: the pool, reads retried on a lost connection, writes in
a transaction each, :meth:`PgConnection.atomic`, and the report of rows that do not decode.

The pool's own warnings reach the operator as ``store.pool_warning`` diagnostics.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar

import psycopg
import structlog
from psycopg_pool import ConnectionPool, PoolTimeout

from schedlog.host.stores import pg_queries as q
from schedlog.host.stores.base import StoredTask, StoreUnavailableError, StoreWriteError
from schedlog.host.stores.pg_deadline import bounded, deadline_s
from schedlog.host.stores.pg_listen import Listener
from schedlog.host.stores.pg_rows import InvalidRow, Row, decode_or_invalid, reason, redact_url

__all__ = ["LEASE_MS", "PgConnection", "configure"]

_log = structlog.get_logger("schedlog.host")
T = TypeVar("T")

#: Attempts (and the first back-off, doubled each time) of a read that lost its connection.
_READ_ATTEMPTS: Final = 4
_BACKOFF_S: Final = 0.05
#: A claim's lease on the database clock, renewed while the host works on it.
LEASE_MS: Final = 30_000


class _PoolDiagnostics(logging.Handler):
    """psycopg_pool's own warnings (a connection attempt that failed, a broken connection
    discarded) as ``store.pool_warning`` diagnostics, so that they reach the operator in the
    run's log format: without a handler, the standard library printed them as bare lines on
    stderr, breaking ``--log-format json``."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a malformed log call of the library: keep its template
            text = str(record.msg)
        _log.warning("store.pool_warning", error=text, message=f"schedule: connection pool: {text}")


_POOL_LOGGER: Final = logging.getLogger("psycopg.pool")
if not any(isinstance(h, _PoolDiagnostics) for h in _POOL_LOGGER.handlers):
    _POOL_LOGGER.addHandler(_PoolDiagnostics(logging.WARNING))


def configure(conn: psycopg.Connection[Any]) -> None:
    # A commit returns only once it is durable on the server (the default, made explicit).
    conn.execute(q.SYNCHRONOUS_COMMIT)


class PgConnection:
    """The connection state of one open PostgreSQL store (see :class:`PostgresTaskStore
    <schedlog.host.stores.postgres.PostgresTaskStore>`)."""

    def __init__(
        self, url: str, pool: ConnectionPool, lock: psycopg.Connection[Any], owner: str
    ) -> None:
        self.url = url
        #: This store's lease owner and ``application_name``: unique per open store.
        self.owner = owner
        #: How long a claim lasts on the database clock unless extended (ms).
        self.lease_ms = LEASE_MS
        self._pool = pool
        self._lock: psycopg.Connection[Any] | None = lock
        #: The open transaction of :meth:`atomic`, per thread: a write on the host's writer
        #: thread never joins a transaction the loop has open (``_tx``).
        self._local = threading.local()
        self._versions: dict[str, int] = {}
        self._claimed: dict[str, int] = {}
        self._invalid: set[str] = set()
        self._reported: set[tuple[str, int]] = set()
        self._listener: Listener | None = None
        #: The connection holding the session lock of the delivery in progress, if any.
        self._session_conn: psycopg.Connection[Any] | None = None

    @property
    def _tx(self) -> psycopg.Connection[Any] | None:
        """The connection of this thread's open :meth:`atomic` block, if any."""
        tx: psycopg.Connection[Any] | None = getattr(self._local, "tx", None)
        return tx

    @_tx.setter
    def _tx(self, conn: psycopg.Connection[Any] | None) -> None:
        self._local.tx = conn

    @property
    def path(self) -> str:
        return redact_url(self.url)

    def _read(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run a read on the open transaction, or on a pool connection, retrying a lost
        connection with back-off."""
        if self._tx is not None:
            return fn(self._tx)
        delay = _BACKOFF_S
        for attempt in range(_READ_ATTEMPTS):
            try:
                with self.connection() as conn:
                    return fn(conn)
            except StoreUnavailableError:
                raise  # already waited its bound: no retry (docs/reliability.md#slow-postgresql)
            except psycopg.OperationalError:
                if attempt == _READ_ATTEMPTS - 1:
                    raise
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _write(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run a write in its own transaction (or the open one); committed when it returns."""
        try:
            if self._tx is not None:
                return fn(self._tx)
            with self.connection() as conn, conn.transaction():
                return fn(conn)
        except psycopg.Error as exc:
            raise StoreWriteError(f"cannot write {self.path}: {reason(exc)}") from exc

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pool connection, watched by :func:`~schedlog.host.stores.pg_deadline.bounded`
        while the block uses it: waiting for a free one is bounded too."""
        wait = deadline_s()
        try:
            with self._pool.connection(timeout=wait) as conn, bounded(conn):
                yield conn
        except PoolTimeout as exc:
            raise StoreUnavailableError(
                f"no PostgreSQL connection became free within {wait:g} s"
            ) from exc

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction around the reads and writes inside: ``get`` locks the row it reads
        (``FOR UPDATE``) and ``replace`` compares-and-sets the row version it read."""
        if self._tx is not None:
            yield
            return
        try:
            with self.connection() as conn, conn.transaction():
                self._tx = conn
                try:
                    yield
                finally:
                    self._tx = None
                    self._versions.clear()
        except psycopg.Error as exc:
            raise StoreWriteError(f"cannot write {self.path}: {reason(exc)}") from exc

    def _report(self, bad: InvalidRow, version: int) -> None:
        if (bad.id, version) in self._reported:
            return
        self._reported.add((bad.id, version))
        _log.warning(
            "store.invalid_record",
            code="invalid-record",
            id=bad.id,
            message=(
                f"schedule: task {bad.id!r} in {self.path} is invalid and is left untouched "
                f"(not delivered): {bad.message}"
            ),
        )

    def _valid(self, row: Row) -> StoredTask | None:
        result = decode_or_invalid(row)
        if isinstance(result, InvalidRow):
            self._report(result, row[5])
            return None
        return result
