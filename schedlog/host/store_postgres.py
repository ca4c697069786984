"""The PostgreSQL backend (``--store postgresql://…``), on psycopg 3 and psycopg_pool.

* The schema is versioned (:mod:`schedlog.host.pg_schema`); :func:`migrate` applies the missing
  forward migrations and :meth:`PostgresTaskStore.open` refuses any other version with
  ``version-mismatch``. A host never migrates implicitly.
* Every write is one transaction, committed with ``synchronous_commit = on`` before it returns.
  ``replace`` is a compare-and-set on the row version read by the last ``get`` of that task
  under the row lock of ``SELECT … FOR UPDATE`` inside :meth:`PostgresTaskStore.atomic`.
* Every row is strict-decoded when it is read and its engine columns (``session_id``, ``status``,
  ``next_at``) are compared with the decoded body. A row that fails is reported once with
  ``invalid-record`` and its id and then treated as absent: never delivered, never rewritten,
  while the other tasks keep working. The file backends refuse the whole store instead
  (docs/decisions.md, "PostgreSQL store: per-row invalid records").
* Opening takes no full load: the store is ready after a few catalog queries, whatever the
  number of tasks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, NamedTuple, TypeVar

import psycopg
import structlog
from psycopg_pool import ConnectionPool

from schedlog.errors import StoreOpenError
from schedlog.host.pg_schema import MIGRATION_LOCK, MIGRATIONS, NOTIFY_CHANNEL, SCHEMA_VERSION
from schedlog.host.store import StoredTask, StoreWriteError
from schedlog.host.task import InvalidTaskError, Task, decode_task, encode_task
from schedlog.rules.text import js_dumps
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = [
    "InvalidRow",
    "PostgresTaskStore",
    "StoreConflictError",
    "is_postgres_url",
    "migrate",
    "redact_url",
    "schema_version",
    "validate_postgres",
]

_log = structlog.get_logger("schedlog.host")
T = TypeVar("T")

_COLUMNS: Final = "seq, id, session_id, status, next_at, version, body"
_VERSION_TABLE: Final = "schedlog_schema"
#: Attempts (and the first back-off, doubled each time) of a read that lost its connection.
_READ_ATTEMPTS: Final = 4
_BACKOFF_S: Final = 0.05
_CONNECT_TIMEOUT_S: Final = 10

Row = tuple[int, str, str, str, int, int, str]
#: A claim's lease on the database clock, renewed while the host works on it.
LEASE_MS: Final = 30_000
#: Rows claimed per query (plus the other due rows of their sessions).
CLAIM_LIMIT: Final = 200
#: Seed of the session advisory-lock hash (``hashtextextended``).
SESSION_SEED: Final = 0x5C4ED1
_MAX_BACKOFF_S: Final = 5.0


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


def new_owner() -> str:
    """A lease owner unique to one open store: ``host:pid:random`` (at most 63 bytes, the
    length of a PostgreSQL ``application_name``)."""
    host = socket.gethostname().encode("ascii", "replace")[:40].decode()
    return f"{host}:{os.getpid()}:{secrets.token_hex(4)}"


def is_postgres_url(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """``url`` without its password, for messages and reports."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def _malformed(url: str, exc: BaseException) -> StoreOpenError:
    return StoreOpenError(
        "malformed-medium", f"cannot open schedule store {redact_url(url)}: {_reason(exc)}"
    )


def _reason(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _storable(key: str) -> bool:
    """Whether PostgreSQL text can hold ``key``: no NUL and no lone surrogate (no UTF-8 form).

    A key that cannot be stored was never written, so looking it up finds nothing.
    """
    if "\x00" in key:
        return False
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _connect(url: str, **kwargs: Any) -> psycopg.Connection[Any]:
    return psycopg.connect(url, connect_timeout=_CONNECT_TIMEOUT_S, **kwargs)


# --- schema ---------------------------------------------------------------------------------


def _version_of(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (_VERSION_TABLE,)).fetchone()
    if not row or not row[0]:
        return 0
    row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {_VERSION_TABLE}").fetchone()
    return int(row[0]) if row else 0


def schema_version(url: str) -> int:
    """The schema version of the database at ``url`` (0: never migrated)."""
    try:
        with _connect(url, autocommit=True) as conn:
            return _version_of(conn)
    except psycopg.Error as exc:
        raise _malformed(url, exc) from None


def migrate(url: str, target: int = SCHEMA_VERSION) -> dict[str, Any]:
    """Apply the forward migrations up to ``target``; ``{"store","from","to","applied"}``.

    Each migration is one transaction that also records its version, so an interrupted run
    leaves the database at the last completed step and the next run continues from there.
    """
    if not 0 <= target <= SCHEMA_VERSION:
        raise ValueError(f"unknown schema version {target}")
    applied: list[int] = []
    try:
        with _connect(url, autocommit=True) as conn:
            before = _version_of(conn)
            if before > SCHEMA_VERSION:
                raise StoreOpenError(
                    "version-mismatch",
                    f"schedule store {redact_url(url)} has schema version {before}, newer than "
                    f"this schedlog ({SCHEMA_VERSION})",
                )
            for migration in MIGRATIONS:
                if migration.version > target:
                    break
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                    conn.execute(
                        f"CREATE TABLE IF NOT EXISTS {_VERSION_TABLE} (version integer PRIMARY "
                        "KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
                    )
                    if _version_of(conn) >= migration.version:
                        continue
                    conn.execute(migration.sql.encode())
                    conn.execute(
                        f"INSERT INTO {_VERSION_TABLE} (version, name) VALUES (%s, %s)",
                        (migration.version, migration.name),
                    )
                applied.append(migration.version)
            after = _version_of(conn)
    except psycopg.Error as exc:
        raise _malformed(url, exc) from None
    return {"store": redact_url(url), "from": before, "to": after, "applied": applied}


def _check_version(conn: psycopg.Connection[Any], url: str) -> None:
    version = _version_of(conn)
    if version == SCHEMA_VERSION:
        return
    if version < SCHEMA_VERSION:
        hint = f"run `schedlog store migrate --store {redact_url(url)}`"
        what = "has no schedlog schema" if version == 0 else f"has schema version {version}"
        raise StoreOpenError(
            "version-mismatch",
            f"schedule store {redact_url(url)} {what}, this schedlog needs {SCHEMA_VERSION}: "
            f"{hint}",
        )
    raise StoreOpenError(
        "version-mismatch",
        f"schedule store {redact_url(url)} has schema version {version}, newer than this "
        f"schedlog ({SCHEMA_VERSION})",
    )


# --- rows -----------------------------------------------------------------------------------


def decode_row(row: Row) -> StoredTask:
    """Strict-decode one row and check its engine columns against the body, or raise
    :class:`InvalidTaskError` naming what failed."""
    seq, key, session_id, status, next_at, _version, body = row
    try:
        value = loads_strict(body)
    except JSONSyntaxError as exc:
        raise InvalidTaskError(f"schedule task body is not valid JSON: {exc.message}") from None
    task = decode_task(key, value)
    if session_id != task.session_id:
        raise InvalidTaskError(
            f"schedule task session_id {session_id!r} differs from sessionId {task.session_id!r}"
        )
    if status != task.effective_status:
        raise InvalidTaskError(
            f"schedule task status column {status!r} differs from the body's "
            f"{task.effective_status!r}"
        )
    if next_at != task.record.scheduled_at:
        raise InvalidTaskError(
            f"schedule task next_at {next_at} differs from scheduledAt "
            f"{task.record.scheduled_at} (epoch ms)"
        )
    return StoredTask(seq, task)


def _columns(task: Task) -> tuple[str, str, str, int, str]:
    """``(id, session_id, status, next_at, body)`` as the writer stores them."""
    body = js_dumps(encode_task(task))
    return task.id, task.session_id, task.effective_status, task.record.scheduled_at, body


class InvalidRow(NamedTuple):
    """A row that does not decode: its id and what failed."""

    id: str
    message: str


def _decode_or_none(row: Row) -> StoredTask | InvalidRow:
    try:
        return decode_row(row)
    except InvalidTaskError as exc:
        return InvalidRow(row[1], exc.message)


def validate_postgres(url: str, *, limit: int = 100) -> tuple[int, list[InvalidRow], int]:
    """Check the schema version and strict-decode every row, read-only.

    Returns ``(rows, invalid, invalid_count)``: the number of rows, the first ``limit`` rows
    that do not decode (by ``seq``) and how many do not in all. Raises :class:`StoreOpenError`
    when the database cannot be read or its schema version is not this schedlog's.
    """
    invalid: list[InvalidRow] = []
    bad = 0
    count = 0
    try:
        with _connect(url) as conn:
            conn.read_only = True
            _check_version(conn, url)
            with conn.cursor(name="schedlog_validate") as cur:
                cur.itersize = 2000
                cur.execute(f"SELECT {_COLUMNS} FROM schedlog_tasks ORDER BY seq")
                for row in cur:
                    count += 1
                    result = _decode_or_none(row)
                    if isinstance(result, InvalidRow):
                        bad += 1
                        if len(invalid) < limit:
                            invalid.append(result)
            conn.rollback()
    except psycopg.Error as exc:
        raise _malformed(url, exc) from None
    return count, invalid, bad


def _configure(conn: psycopg.Connection[Any]) -> None:
    # A commit returns only once it is durable on the server (the default, made explicit).
    conn.execute("SET synchronous_commit = on")


class StoreConflictError(StoreWriteError):
    """A compare-and-set found the row changed by another writer since it was read."""


# --- the store ------------------------------------------------------------------------------


class PostgresTaskStore:
    """A :class:`~schedlog.host.store.TaskStore` over one PostgreSQL database.

    Shared: any number of processes may open one database at once. Tools and remote operations
    write in one transaction each; several hosts deliver together through :meth:`claim_due`
    (``FOR UPDATE SKIP LOCKED`` and a lease on the database clock), :meth:`session_lock` and
    :meth:`commit_claimed` (which checks the lease and the row version).
    """

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
        self._tx: psycopg.Connection[Any] | None = None
        self._versions: dict[str, int] = {}
        self._claimed: dict[str, int] = {}
        self._invalid: set[str] = set()
        self._reported: set[tuple[str, int]] = set()
        self._listener: _Listener | None = None
        #: The connection holding the session lock of the delivery in progress, if any.
        self._session_conn: psycopg.Connection[Any] | None = None

    @property
    def path(self) -> str:
        return redact_url(self.url)

    @classmethod
    def open(cls, url: str) -> PostgresTaskStore:
        """Check the schema version, then open the connection pool (no task is read)."""
        owner = new_owner()
        try:
            lock = _connect(url, autocommit=True, application_name=owner)
        except psycopg.Error as exc:
            raise _malformed(url, exc) from None
        try:
            _check_version(lock, url)
            pool: ConnectionPool = ConnectionPool(
                url,
                min_size=1,
                max_size=4,
                kwargs={
                    "autocommit": True,
                    "connect_timeout": _CONNECT_TIMEOUT_S,
                    "application_name": owner,
                },
                configure=_configure,
                check=ConnectionPool.check_connection,
                open=False,
            )
            pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            lock.close()
            raise _malformed(url, exc) from None
        except BaseException:
            lock.close()
            raise
        return cls(url, pool, lock, owner)

    # --- connections ----------------------------------------------------------------------

    def _read(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run a read on the open transaction, or on a pool connection, retrying a lost
        connection with back-off."""
        if self._tx is not None:
            return fn(self._tx)
        delay = _BACKOFF_S
        for attempt in range(_READ_ATTEMPTS):
            try:
                with self._pool.connection() as conn:
                    return fn(conn)
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
            with self._pool.connection() as conn, conn.transaction():
                return fn(conn)
        except psycopg.Error as exc:
            raise StoreWriteError(f"cannot write {self.path}: {_reason(exc)}") from exc

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction around the reads and writes inside: ``get`` locks the row it reads
        (``FOR UPDATE``) and ``replace`` compares-and-sets the row version it read."""
        if self._tx is not None:
            yield
            return
        try:
            with self._pool.connection() as conn, conn.transaction():
                self._tx = conn
                try:
                    yield
                finally:
                    self._tx = None
                    self._versions.clear()
        except psycopg.Error as exc:
            raise StoreWriteError(f"cannot write {self.path}: {_reason(exc)}") from exc

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
        result = _decode_or_none(row)
        if isinstance(result, InvalidRow):
            self._report(result, row[5])
            return None
        return result

    # --- reads ----------------------------------------------------------------------------

    def tasks(self) -> Iterator[StoredTask]:
        """Every valid task in storage order, streamed through a server-side cursor."""
        with (
            self._pool.connection() as conn,
            conn.transaction(),
            conn.cursor(name="schedlog_tasks") as cur,
        ):
            cur.itersize = 2000
            cur.execute(f"SELECT {_COLUMNS} FROM schedlog_tasks ORDER BY seq")
            for row in cur:
                st = self._valid(row)
                if st is not None:
                    yield st

    def session_tasks(self, session_id: str) -> list[StoredTask]:
        if not _storable(session_id):
            return []
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM schedlog_tasks WHERE session_id = %s ORDER BY seq",
                (session_id,),
            ).fetchall()
        )
        return [st for st in map(self._valid, rows) if st is not None]

    def get(self, task_id: str) -> StoredTask | None:
        """The task, or None (also for a row that does not decode, which is reported). Inside
        :meth:`atomic` the row is locked and its version kept for :meth:`replace`."""
        if not _storable(task_id):
            return None
        lock = " FOR UPDATE" if self._tx is not None else ""
        row = self._read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM schedlog_tasks WHERE id = %s{lock}", (task_id,)
            ).fetchone()
        )
        if row is None:
            return None
        st = self._valid(row)
        if st is not None and self._tx is not None:
            self._versions[task_id] = row[5]
        return st

    def active_targets(self) -> Iterator[tuple[int, int, str]]:
        """``(next_at, seq, id)`` of active rows from the columns, in storage order. A row
        that does not decode may be listed; :meth:`get` then finds nothing for it."""
        with (
            self._pool.connection() as conn,
            conn.transaction(),
            conn.cursor(name="schedlog_targets") as cur,
        ):
            cur.itersize = 10000
            cur.execute(
                "SELECT next_at, seq, id FROM schedlog_tasks WHERE status = 'active' ORDER BY seq"
            )
            for next_at, seq, key in cur:
                yield int(next_at), int(seq), str(key)

    def earliest_active_target(self) -> int | None:
        """The earliest ``next_at`` among active rows, from the index."""
        row = self._read(
            lambda c: c.execute(
                "SELECT min(next_at) FROM schedlog_tasks WHERE status = 'active'"
            ).fetchone()
        )
        return None if row is None or row[0] is None else int(row[0])

    def count(self) -> int:
        row = self._read(lambda c: c.execute("SELECT count(*) FROM schedlog_tasks").fetchone())
        return int(row[0]) if row else 0

    # --- writes ---------------------------------------------------------------------------

    def insert(self, task: Task) -> int:
        if not (_storable(task.id) and _storable(task.session_id)):
            raise StoreWriteError(
                f"cannot write {self.path}: the id or session id has no UTF-8 form"
            )
        params = _columns(task)

        def run(c: psycopg.Connection[Any]) -> int:
            row = c.execute(
                "INSERT INTO schedlog_tasks (id, session_id, status, next_at, body) "
                "VALUES (%s, %s, %s, %s, %s) RETURNING seq",
                params,
            ).fetchone()
            assert row is not None
            return int(row[0])

        return self._write(run)

    def replace(self, task: Task) -> None:
        """Rewrite the task; a compare-and-set on the version read by :meth:`get` inside
        :meth:`atomic` (a :class:`StoreConflictError` when the row changed since)."""
        key, session_id, status, next_at, body = _columns(task)
        expected = self._versions.pop(key, None)
        where = "" if expected is None else " AND version = %s"
        params: tuple[object, ...] = (status, next_at, body, key, session_id)
        if expected is not None:
            params = (*params, expected)

        def run(c: psycopg.Connection[Any]) -> int:
            cur = c.execute(
                "UPDATE schedlog_tasks SET status = %s, next_at = %s, body = %s, "
                f"version = version + 1 WHERE id = %s AND session_id = %s{where}",
                params,
            )
            return cur.rowcount

        if not _storable(key) or self._write(run) != 1:
            if expected is not None:
                raise StoreConflictError(f"task {key!r} changed since it was read")
            raise StoreWriteError(f"task {key!r} does not exist")

    def delete(self, task_id: str) -> bool:
        """Remove a task; a row that does not decode is left untouched (False)."""
        if not _storable(task_id):
            return False

        def run(c: psycopg.Connection[Any]) -> bool:
            row = c.execute(
                f"SELECT {_COLUMNS} FROM schedlog_tasks WHERE id = %s FOR UPDATE", (task_id,)
            ).fetchone()
            if row is None or self._valid(row) is None:
                return False
            c.execute("DELETE FROM schedlog_tasks WHERE seq = %s", (row[0],))
            return True

        return self._write(run)

    # --- several hosts ----------------------------------------------------------------------

    def _excluded(self, excluded: Iterable[str]) -> list[str]:
        return [*self._invalid, *(k for k in excluded if _storable(k))]

    def next_wake(self, excluded: Iterable[str] = ()) -> int | None:
        """When this host should look for work next (epoch ms): the earliest ``next_at`` of an
        active task it could claim, or the earliest end of another host's lease (its work is
        taken over then if that host died). Two index scans; None when there is nothing."""
        skip = self._excluded(excluded)

        def run(c: psycopg.Connection[Any]) -> int | None:
            row = c.execute(
                "SELECT next_at FROM schedlog_tasks WHERE status = 'active' "
                "AND (lease_owner IS NULL OR lease_owner = %s OR lease_until <= now()) "
                "AND NOT (id = ANY(%s)) ORDER BY next_at, seq LIMIT 1",
                (self.owner, skip),
            ).fetchone()
            lease = c.execute(
                "SELECT (extract(epoch FROM min(lease_until)) * 1000)::bigint "
                "FROM schedlog_tasks WHERE lease_owner IS NOT NULL AND lease_owner <> %s "
                "AND lease_until > now()",
                (self.owner,),
            ).fetchone()
            found = [int(r[0]) for r in (row, lease) if r is not None and r[0] is not None]
            return min(found, default=None)

        return self._read(run)

    def claim_due(
        self, now: int, excluded: Iterable[str] = (), limit: int = CLAIM_LIMIT
    ) -> list[StoredTask]:
        """Claim up to ``limit`` due active tasks (``next_at <= now``) that no live lease
        holds, plus the other due recurring tasks of the sessions of the recurring ones claimed
        (one delivery group per session), in storage order. Rows another host is claiming are
        skipped (``SKIP LOCKED``); a row that does not decode is reported and never claimed.
        The lease runs :attr:`lease_ms` on the database clock."""
        skip = self._excluded(excluded)
        free = "(lease_owner IS NULL OR lease_owner = %s OR lease_until <= now())"

        def run(c: psycopg.Connection[Any]) -> list[tuple[StoredTask, int]]:
            rows = c.execute(
                f"SELECT {_COLUMNS} FROM schedlog_tasks WHERE status = 'active' "
                f"AND next_at <= %s AND {free} AND NOT (id = ANY(%s)) "
                "ORDER BY next_at, seq LIMIT %s FOR UPDATE SKIP LOCKED",
                (now, self.owner, skip, limit),
            ).fetchall()
            out = self._decoded(rows)
            # Only a recurring task's group takes the session's other due recurring tasks
            # (one batch follow-up); a one-shot is a group of its own. Those are found without
            # a lock first, so that no row this claim does not take is locked by it.
            sessions = sorted(
                {st.task.session_id for st, _ in out if not st.task.record.is_one_shot}
            )
            if sessions:
                picked = [st.seq for st, _ in out]
                candidates = c.execute(
                    f"SELECT {_COLUMNS} FROM schedlog_tasks WHERE status = 'active' "
                    f"AND next_at <= %s AND {free} AND session_id = ANY(%s) "
                    "AND NOT (id = ANY(%s)) AND NOT (seq = ANY(%s))",
                    (now, self.owner, sessions, skip, picked),
                ).fetchall()
                recurring = [
                    st.seq for st, _ in self._decoded(candidates) if not st.task.record.is_one_shot
                ]
                if recurring:
                    more = c.execute(
                        f"SELECT {_COLUMNS} FROM schedlog_tasks WHERE seq = ANY(%s) "
                        f"AND status = 'active' AND next_at <= %s AND {free} "
                        "FOR UPDATE SKIP LOCKED",
                        (recurring, now, self.owner),
                    ).fetchall()
                    out.extend(self._decoded(more))
            if out:
                c.execute(
                    "UPDATE schedlog_tasks SET lease_owner = %s, "
                    "lease_until = now() + make_interval(secs => %s) WHERE seq = ANY(%s)",
                    (self.owner, self.lease_ms / 1000, [st.seq for st, _ in out]),
                )
            return out

        claimed = self._write(run)
        for st, version in claimed:
            self._claimed[st.task.id] = version
        return sorted((st for st, _ in claimed), key=lambda st: st.seq)

    def _decoded(self, rows: list[Row]) -> list[tuple[StoredTask, int]]:
        """The rows that decode, with their versions; the others are reported and remembered
        as never to be claimed."""
        out: list[tuple[StoredTask, int]] = []
        for row in rows:
            st = self._valid(row)
            if st is None:
                self._invalid.add(row[1])
            else:
                out.append((st, row[5]))
        return out

    def extend_leases(self, ids: Iterable[str]) -> set[str]:
        """Renew this host's live leases on ``ids``; the ids whose lease is still its own.

        Inside :meth:`session_lock` this runs on the lock's own connection, so it also proves
        that the lock is still held: when that connection has dropped (terminated, server
        restart), PostgreSQL has released the lock and another host may be appending to the
        session's log, so this raises :class:`StoreWriteError` and the caller sends nothing.
        """
        keys = [k for k in ids if _storable(k)]

        def run(c: psycopg.Connection[Any]) -> set[str]:
            rows = c.execute(
                "UPDATE schedlog_tasks SET lease_until = now() + make_interval(secs => %s) "
                "WHERE id = ANY(%s) AND lease_owner = %s AND lease_until > now() RETURNING id",
                (self.lease_ms / 1000, keys, self.owner),
            ).fetchall()
            return {str(r[0]) for r in rows}

        conn = self._session_conn
        if conn is None or self._tx is not None:
            return self._write(run)
        try:
            with conn.transaction():
                return run(conn)
        except psycopg.Error as exc:
            raise StoreWriteError(
                f"cannot write {self.path}: the session lock was lost ({_reason(exc)})"
            ) from exc

    def commit_claimed(self, task: Task) -> None:
        """Write a claimed task's delivery commit and end the claim: only while the lease is
        still this host's and the row is the version claimed, else :class:`StoreConflictError`
        (another host took the work over, or a tool changed the task meanwhile)."""
        key, session_id, status, next_at, body = _columns(task)
        version = self._claimed.pop(key, None)
        if version is None:
            raise StoreConflictError(f"task {key!r} is not claimed by this host")

        def run(c: psycopg.Connection[Any]) -> int:
            return c.execute(
                "UPDATE schedlog_tasks SET status = %s, next_at = %s, body = %s, "
                "version = version + 1, lease_owner = NULL, lease_until = NULL "
                "WHERE id = %s AND session_id = %s AND version = %s "
                "AND lease_owner = %s AND lease_until > now()",
                (status, next_at, body, key, session_id, version, self.owner),
            ).rowcount

        if self._write(run) != 1:
            raise StoreConflictError(
                f"task {key!r}: the lease expired or the task changed since it was claimed"
            )

    def release(self, ids: Iterable[str]) -> None:
        """End this host's claims on ``ids`` without writing the tasks (best effort: a claim
        that cannot be released ends when its lease does)."""
        keys = [k for k in ids if _storable(k)]
        for key in keys:
            self._claimed.pop(key, None)
        with contextlib.suppress(StoreWriteError):
            self._write(
                lambda c: c.execute(
                    "UPDATE schedlog_tasks SET lease_owner = NULL, lease_until = NULL "
                    "WHERE id = ANY(%s) AND lease_owner = %s",
                    (keys, self.owner),
                )
            )

    def hold(self, delays: Mapping[str, int]) -> None:
        """Keep this host's claims on the active tasks of ``delays`` for that many ms more on
        the database clock (best effort, like :meth:`release`): a failed webhook delivery keeps
        its tasks until its next attempt, so no other host retries them earlier
        (docs/decisions.md, "Webhook delivery with several hosts")."""
        keys = [k for k in delays if _storable(k)]
        for key in keys:
            self._claimed.pop(key, None)
        if not keys:
            return
        with contextlib.suppress(StoreWriteError):
            self._write(
                lambda c: c.execute(
                    "UPDATE schedlog_tasks AS t SET lease_until = now() + "
                    "make_interval(secs => h.ms / 1000.0) "
                    "FROM unnest(%s::text[], %s::bigint[]) AS h(id, ms) "
                    "WHERE t.id = h.id AND t.lease_owner = %s AND t.status = 'active'",
                    (keys, [max(0, int(delays[k])) for k in keys], self.owner),
                )
            )

    @contextlib.contextmanager
    def session_lock(self, session_id: str) -> Iterator[None]:
        """Hold the session's advisory lock (``pg_advisory_lock`` on the 64-bit hash of its
        id, on a connection of its own) around a delivery, so that two hosts never append to
        one session log at once. Released when the block ends or the connection drops; the
        :meth:`extend_leases` that precedes each send runs on this connection, so a delivery
        whose lock was lost sends nothing."""
        with self._pool.connection() as conn:
            key = conn.execute("SELECT hashtextextended(%s, %s)", (session_id, SESSION_SEED))
            (lock_key,) = key.fetchone() or (0,)
            conn.execute("SELECT pg_advisory_lock(%s)", (lock_key,))
            self._session_conn = conn
            try:
                yield
            finally:
                self._session_conn = None
                with contextlib.suppress(psycopg.Error):
                    conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key,))

    def listen(self, on_change: Callable[[dict[str, str]], None]) -> None:
        """Call ``on_change(payload)`` from a background thread for each task change another
        writer commits (``LISTEN schedlog_changed``), reconnecting with back-off; an empty
        payload after a reconnect means "something may have changed"."""
        if self._listener is None:
            self._listener = _Listener(self.url, self.owner, on_change)

    def active_count(self) -> int:
        row = self._read(
            lambda c: c.execute(
                "SELECT count(*) FROM schedlog_tasks WHERE status = 'active'"
            ).fetchone()
        )
        return int(row[0]) if row else 0

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
        if self._lock is not None:
            # A host that stops cleanly hands its claims back at once (a crashed one's expire).
            # Through the pool, which replaces connections the server dropped (a restart): the
            # connection kept from open never reconnects.
            with contextlib.suppress(StoreWriteError):
                self._write(
                    lambda c: c.execute(
                        "UPDATE schedlog_tasks SET lease_owner = NULL, lease_until = NULL "
                        "WHERE lease_owner = %s",
                        (self.owner,),
                    )
                )
            self._pool.close()
            self._lock.close()
            self._lock = None


class _Listener:
    """The ``LISTEN`` thread of one store: a connection of its own, re-opened with back-off."""

    def __init__(self, url: str, owner: str, on_change: Callable[[dict[str, str]], None]) -> None:
        self._url = url
        self._owner = owner
        self._on_change = on_change
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="schedlog-listen", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        delay = _BACKOFF_S
        first = True
        while not self._stopping.is_set():
            try:
                with _connect(self._url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    delay = _BACKOFF_S
                    if not first:
                        self._on_change({})  # changes may have been missed while away
                    first = False
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=0.5, stop_after=64):
                            self._deliver(note.payload)
            except psycopg.Error as exc:
                _log.warning(
                    "store.listen_lost",
                    error=_reason(exc),
                    message=f"schedule: change notifications lost ({_reason(exc)}); retrying",
                )
                self._stopping.wait(delay)
                delay = min(delay * 2, _MAX_BACKOFF_S)

    def _deliver(self, payload: str) -> None:
        try:
            value = loads_strict(payload) if payload else {}
        except JSONSyntaxError:
            value = {}
        if not isinstance(value, dict):
            value = {}
        if value.get("writer") == self._owner:
            return  # this store's own commit: its host already knows
        self._on_change({k: v for k, v in value.items() if isinstance(v, str)})

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
