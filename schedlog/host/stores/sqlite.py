"""The SQLite backend, the embedded default (docs/protocol.md#store-sqlite).

Validation runs on a separate read-only connection (``immutable=1`` unless a write-ahead log is
present) so that a refused file is never modified and never gets ``-wal``/``-shm`` companions.
Only after the whole store has validated does the read-write connection open and switch to WAL.
Each task write is one ``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``.

Reads and writes go through two connections to the one file. Writes use a connection of their
own, so a write may run on another thread (the host's writer thread, docs/decisions.md "Group
commit off the event loop") while reads go on: in WAL mode a read sees a write only once it is
committed, never a transaction in progress, and neither blocks the other. Writes never
overlap: each transaction holds the store's write lock.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from schedlog._crashpoints import crashpoint
from schedlog.errors import StoreOpenError
from schedlog.files import FILE_MODE
from schedlog.host.stores.base import (
    CatalogRow,
    StoredTask,
    StoreLock,
    StoreLockedError,
    StoreWriteError,
    check_holdable,
)
from schedlog.host.stores.sqlite_load import decode_rows
from schedlog.host.stores.sqlite_validate import (
    PAUSE_SCHEMA,
    SCHEMA_KEY,
    decode_row,
    read_due_first,
    schedlog_schema,
    validate_live,
    validate_sqlite_store,
)
from schedlog.host.task import Task, encode_task
from schedlog.host.task_typed import TimerKey
from schedlog.rules.instants import parse_canonical_instant
from schedlog.rules.text import js_dumps

__all__ = [
    "INDEXES",
    "PAUSE_MIGRATION",
    "SCHEMA",
    "EarlyValidation",
    "SqliteTaskStore",
    "migrate_sqlite",
]

SCHEMA: Final = """
CREATE TABLE schedlog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tasks (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL, body TEXT NOT NULL);
INSERT INTO schedlog_meta (key, value) VALUES ('unit.name', 'schedule'), ('unit.version', '1');
PRAGMA user_version = 1;
"""
#: schedlog's schema version 2 (docs/decisions.md#pause-and-resume): the store can hold paused
#: tasks. Written into every new store, and by ``schedlog store migrate`` into one written by
#: 0.2.0; the upstream ``unit.version`` and ``user_version`` stay 1.
PAUSE_MIGRATION: Final = (
    f"INSERT OR IGNORE INTO schedlog_meta (key, value) VALUES ('{SCHEMA_KEY}', '{PAUSE_SCHEMA}');"
)
# Optional indexes (docs/protocol.md#store-sqlite allows them): tasks of a session. (Stores made
# before issue 10 also have an expression index on active targets, tasks_active_target; nothing
# reads it any more, and it is left alone: opening a store never drops what it holds.)
INDEXES: Final = """
CREATE INDEX IF NOT EXISTS tasks_by_session ON tasks (session_id, seq);
"""
# The timer-index rows of active tasks in one table scan, without decoding the tasks: the store
# was validated at open, so its bodies can be trusted. json_extract returns values unescaped, but
# its path lookup compares member names as they are written, so a name written with an escape
# ("st\u0061tus") is not found. An unfound scheduledAt shows as NULL; an unfound status would
# read as absent (active), so the last column flags the rows where that can happen, those with no
# plain status and some backslash (char 92) in the body. Both kinds of row are decoded.
_ACTIVE_TARGETS: Final = """
SELECT seq, id, json_extract(body, '$.record.scheduledAt'),
  CASE WHEN json_extract(body, '$.status') IS NULL THEN instr(body, char(92)) ELSE 0 END
FROM tasks WHERE json_extract(body, '$.status') IS NOT 'inactive'
  AND json_extract(body, '$.pausedAt') IS NULL ORDER BY seq
"""
# The catalog's sort and filter keys of every task in one table scan (the HTTP catalog index,
# schedlog.host.catalog). Rows with a backslash anywhere in the body are flagged and
# decoded instead, so an escaped member name or value can never be misread.
_CATALOG_ROWS: Final = """
SELECT id, session_id, json_extract(body, '$.record.scheduledAt'),
  json_extract(body, '$.record.title'), json_extract(body, '$.status'), instr(body, char(92))
FROM tasks ORDER BY seq
"""


#: Tries at taking the store lock, and the pause between them: a reader's probe of the lock
#: (:func:`~schedlog.host.stores.sqlite_validate.writer_holds`) holds it shared for a few
#: microseconds, which must not refuse a service that starts at that moment.
#: The most ids one query of :meth:`SqliteTaskStore.get_many` reads (under SQLite's limit on
#: bound parameters, 999 in old builds).
_READ_CHUNK: Final = 500
_LOCK_TRIES: Final = 5
_LOCK_PAUSE_S: Final = 0.002


def _malformed(message: str) -> StoreOpenError:
    return StoreOpenError("malformed-medium", message)


def _take_lock(path: Path) -> StoreLock:
    """The store lock; ``store-locked`` only when it stays held over a few tries."""
    for _ in range(_LOCK_TRIES - 1):
        try:
            return StoreLock(path)
        except StoreLockedError:
            time.sleep(_LOCK_PAUSE_S)
    return StoreLock(path)


def _ms(bound: str | None) -> int:
    value = None if bound is None else parse_canonical_instant(bound)
    if value is None:
        raise ValueError(f"not a canonical instant: {bound!r}")
    return value


def _connect(
    path: Path, initialized: bool, *, indexes: bool
) -> tuple[sqlite3.Connection, sqlite3.Connection]:
    """The read and write connections of a validated (or new, empty) store: the schema written
    into a new one, WAL, ``synchronous=FULL``; and, when ``indexes``, :data:`INDEXES` created
    (a store opened before it is validated gets them once it is: :meth:`EarlyValidation.run`)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        if not initialized:
            conn.executescript("BEGIN IMMEDIATE;" + SCHEMA + PAUSE_MIGRATION + "COMMIT;")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        if indexes:
            conn.executescript(INDEXES)
        writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        conn.close()
        raise _malformed(f"cannot open schedule store {path}: {exc}") from None
    try:
        writer.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as exc:
        writer.close()
        conn.close()
        raise _malformed(f"cannot open schedule store {path}: {exc}") from None
    return conn, writer


def _storable(key: str) -> bool:
    """Whether SQLite text can hold ``key``: not when it has a lone surrogate (no UTF-8 form).

    Such a key can never have been written here, so a lookup by it finds nothing
    (docs/protocol.md#remote: an unusual id is simply not found) instead of failing in the driver.
    """
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class SqliteTaskStore:
    """A :class:`~schedlog.host.stores.base.TaskStore` over one SQLite file."""

    #: Writes may run on a thread other than the readers' (one write at a time); see the module.
    writes_from_any_thread = True

    def __init__(
        self, path: Path, conn: sqlite3.Connection, writer: sqlite3.Connection, lock: StoreLock
    ) -> None:
        self.path = path
        self._conn = conn  # reads
        self._writer = writer  # writes
        self._lock: StoreLock | None = lock
        #: Write transactions may come from two threads (the writer thread's creates and a
        #: delivery run's commit): one at a time on the writer connection.
        self._write_lock = threading.Lock()
        meta = dict(conn.execute("SELECT key, value FROM schedlog_meta").fetchall())
        #: Whether the store holds paused tasks (:class:`~schedlog.host.stores.base.HoldsPause`).
        self.pausable = schedlog_schema(meta) >= PAUSE_SCHEMA
        #: The timer-index keys read while the store was validated at open, handed once to
        #: :meth:`active_targets` (so a service reads each row once at start-up).
        self._open_targets: list[tuple[int, int, str]] | None = None

    def _row(self, seq: int, key: str, session_id: str, body: str) -> StoredTask:
        return decode_row(seq, key, session_id, body, pausable=self.pausable)

    @classmethod
    def open(cls, path: Path) -> SqliteTaskStore:
        """Lock, validate (or initialize a missing / zero-length file), then open for writing."""
        store, early = cls.open_early(path, None)
        assert early is None
        return store

    @classmethod
    def open_early(
        cls, path: Path, bound: str | None
    ) -> tuple[SqliteTaskStore, EarlyValidation | None]:
        """:meth:`open`, or with ``bound`` (a canonical instant), the store opened before the
        rest of it is validated when some row may be due by then (docs/decisions.md,
        "Start-up: due rows first").

        Then the rows that may be due (:func:`~schedlog.host.stores.sqlite_validate.read_due_first`)
        have been strictly validated, the store is open for writing, and its first
        :meth:`active_targets` are their keys alone; the :class:`EarlyValidation` returned
        validates every row (call :meth:`EarlyValidation.run` off the event loop); a store
        with a crash-left log is read first from a private copy, and opening it for writing
        replays the log in place. Otherwise (nothing may be due, a bad row among those read)
        the whole store is validated first, as :meth:`open` does, and None is returned.
        """
        lock = _take_lock(path)
        try:
            try:
                size: int | None = path.stat().st_size
            except FileNotFoundError:
                size = None
            except OSError as exc:
                raise _malformed(f"cannot read schedule store {path}: {exc}") from None
            targets: list[tuple[int, int, str]] = []
            first = read_due_first(path, bound) if size and bound is not None else None
            if first is not None and first.keys and min(first.keys)[0] <= _ms(bound):
                targets = first.keys
            elif size:
                first = None
                # Read-only, and a crash-left write-ahead log is read through a private copy:
                # even a read-only connection would create or write the -shm index.
                validate_sqlite_store(path, lock_held=True, targets=targets)
            else:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
                os.close(fd)
            conn, writer = _connect(path, bool(size), indexes=first is None)
        except BaseException:
            lock.release()
            raise
        store = cls(path, conn, writer, lock)
        store._open_targets = targets
        return store, None if first is None else EarlyValidation(store, first.ids)

    # reads
    def tasks(self) -> Iterator[StoredTask]:
        rows = self._conn.execute("SELECT seq, id, session_id, body FROM tasks ORDER BY seq")
        for seq, key, session_id, body in rows:
            yield self._row(seq, key, session_id, body)

    def session_tasks(self, session_id: str) -> list[StoredTask]:
        if not _storable(session_id):
            return []
        rows = self._conn.execute(
            "SELECT seq, id, session_id, body FROM tasks WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [self._row(*row) for row in rows]

    def get(self, task_id: str) -> StoredTask | None:
        if not _storable(task_id):
            return None
        row = self._conn.execute(
            "SELECT seq, id, session_id, body FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return None if row is None else self._row(*row)

    def get_many(self, task_ids: Sequence[str]) -> list[StoredTask]:
        """The stored tasks of ``task_ids`` that exist, in the order given, read with a few
        queries of up to :data:`_READ_CHUNK` ids each (a burst's due scan, read on a pool
        thread: docs/decisions.md "Burst path off the event loop")."""
        keys = [key for key in task_ids if _storable(key)]
        rows: dict[str, StoredTask] = {}
        for start in range(0, len(keys), _READ_CHUNK):
            chunk = keys[start : start + _READ_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT seq, id, session_id, body FROM tasks WHERE id IN ({marks})"
            # Decoded in bulk (decode_rows: the typed fast path, else row by row as _row does).
            for st in decode_rows(
                self._conn.execute(query, chunk).fetchall(), pausable=self.pausable
            ):
                rows[st.task.id] = st
        return [rows[key] for key in keys if key in rows]

    def active_targets(self) -> Iterator[tuple[int, int, str]]:
        """The timer-index rows (see :class:`~schedlog.host.stores.base.TaskStore`) from one query.

        A row the query cannot vouch for (a status that an escape may hide, or a scheduledAt
        that does not read) is decoded, as ``tasks()`` would. The rows are collected before
        they are returned, so that if SQLite's JSON parser ever refused a body that the strict
        decoder accepted at open, every task is decoded instead.

        The first call after open, before any write through this store, returns the keys read
        by the validation at open instead (the store lock was held from that read on, and a
        write would show in the writer's ``total_changes``).
        """
        opened, self._open_targets = self._open_targets, None
        if opened is not None and self._writer.total_changes == 0:
            return iter(opened)
        out: list[tuple[int, int, str]] = []
        try:
            for seq, key, text, escaped in self._conn.execute(_ACTIVE_TARGETS):
                target = None if escaped else parse_canonical_instant(text)
                if target is not None:
                    out.append((target, seq, key))
                    continue
                st = self.get(key)
                if st is not None and st.task.active and not st.task.paused:
                    out.append((st.task.record.scheduled_at, st.seq, st.task.id))
        except sqlite3.Error:
            out = [
                (st.task.record.scheduled_at, st.seq, st.task.id)
                for st in self.tasks()
                if st.task.active and not st.task.paused
            ]
        return iter(out)

    def catalog_rows(self) -> list[CatalogRow]:
        """``(scheduledAt epoch ms, id, session id, title, active)`` of every task, in storage
        order, without decoding the tasks (the store was validated at open). A row the query
        cannot vouch for (any backslash in its body, or a value that does not read) is decoded,
        as ``tasks()`` would; if SQLite's JSON parser refuses a body, every task is decoded."""
        out: list[CatalogRow] = []
        try:
            for key, session_id, text, title, status, escaped in self._conn.execute(_CATALOG_ROWS):
                target = None if escaped else parse_canonical_instant(text)
                if (
                    target is not None
                    and type(title) is str
                    and status in (None, "active", "inactive")
                ):
                    out.append((target, key, session_id, title, status != "inactive"))
                    continue
                st = self.get(key)
                if st is not None:
                    task = st.task
                    out.append(
                        (
                            task.record.scheduled_at,
                            task.id,
                            task.session_id,
                            task.record.title or "",
                            task.active,
                        )
                    )
        except sqlite3.Error:
            out = [
                (
                    st.task.record.scheduled_at,
                    st.task.id,
                    st.task.session_id,
                    st.task.record.title or "",
                    st.task.active,
                )
                for st in self.tasks()
            ]
        return out

    def count(self) -> int:
        (n,) = self._conn.execute("SELECT count(*) FROM tasks").fetchone()
        return int(n)

    def earliest_active_target(self) -> int | None:
        """The earliest ``scheduledAt`` among active tasks (epoch ms), or None: the least of
        :meth:`active_targets`, so a body spelling a member name with an escape is read right."""
        return min((target for target, _, _ in self.active_targets()), default=None)

    # writes
    def _create_indexes(self) -> None:
        """:data:`INDEXES`, once a store opened early has validated (one statement, on the
        writer connection, between the other writes)."""
        try:
            with self._write_lock:
                self._writer.execute(INDEXES.strip())
        except sqlite3.Error as exc:
            raise _malformed(f"cannot open schedule store {self.path}: {exc}") from None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the writer connection: committed when the block ends,
        rolled back on any failure, which is raised as :class:`StoreWriteError`."""
        try:
            with self._write_lock:  # a create's lane and a delivery run's commit
                self._writer.execute("BEGIN IMMEDIATE")
                try:
                    yield self._writer
                    crashpoint("sqlite_store.in_transaction")
                    self._writer.execute("COMMIT")
                except BaseException:
                    self._writer.execute("ROLLBACK")
                    raise
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            # UnicodeEncodeError: an id or session id with a lone surrogate, which SQLite text
            # (UTF-8) cannot hold; the write fails like any other storage failure.
            raise StoreWriteError(f"cannot write {self.path}: {exc}") from exc

    def _write(self, sql: str, params: tuple[str, ...]) -> sqlite3.Cursor:
        with self._transaction() as writer:
            return writer.execute(sql, params)

    def insert(self, task: Task) -> int:
        (seq,) = self.insert_many([task])
        return seq

    def insert_many(self, tasks: Sequence[Task]) -> list[int]:
        """Append new tasks in one transaction (one durability barrier for all); returns their
        ``seq`` in order. All or none are written."""
        seqs: list[int] = []
        for task in tasks:
            check_holdable(task, self.pausable, self.path)
        with self._transaction() as writer:
            for task in tasks:
                cur = writer.execute(
                    "INSERT INTO tasks (id, session_id, body) VALUES (?, ?, ?)",
                    (task.id, task.session_id, js_dumps(encode_task(task))),
                )
                assert cur.lastrowid is not None
                seqs.append(cur.lastrowid)
        return seqs

    def replace(self, task: Task) -> None:
        check_holdable(task, self.pausable, self.path)
        cur = self._write(
            "UPDATE tasks SET body = ? WHERE id = ? AND session_id = ?",
            (js_dumps(encode_task(task)), task.id, task.session_id),
        )
        if cur.rowcount != 1:
            raise StoreWriteError(f"task {task.id!r} does not exist")

    def replace_many(self, tasks: Sequence[Task]) -> None:
        """Rewrite existing tasks in one transaction (one durability barrier for all): a
        batched delivery's commit (docs/operations.md#burst-sizing). All or none are written."""
        rows = [(js_dumps(encode_task(task)), task.id, task.session_id) for task in tasks]
        with self._transaction() as writer:
            # One statement for all: each UPDATE matches at most one row (ids are unique), so
            # the total is short of the count exactly when some task does not exist.
            cur = writer.executemany(
                "UPDATE tasks SET body = ? WHERE id = ? AND session_id = ?", rows
            )
            if cur.rowcount != len(rows):
                missing = next((t.id for t in tasks if not self._holds(t)), tasks[0].id)
                raise sqlite3.Error(f"task {missing!r} does not exist")

    def _holds(self, task: Task) -> bool:
        st = self.get(task.id)
        return st is not None and st.task.session_id == task.session_id

    def delete(self, task_id: str) -> bool:
        if not _storable(task_id):
            return False
        return self._write("DELETE FROM tasks WHERE id = ?", (task_id,)).rowcount == 1

    @property
    def locked_by_this_process(self) -> bool:
        """Always: the store lock is held from open to close (:class:`LocalStore`)."""
        return True

    def close(self) -> None:
        self._open_targets = None
        if self._lock is not None:
            self._writer.close()
            self._conn.close()
            self._lock.release()
            self._lock = None


class EarlyValidation:
    """The validation of every row of a store opened by :meth:`SqliteTaskStore.open_early`
    before it was validated: run once, off the event loop (it takes seconds on a large store).

    It reads the store on a connection of its own, in one WAL read transaction, with the same
    checks, in the same order and with the same errors as the validation at open, so the
    first bad row in storage order is reported as it always was. Only the rows read early
    (``early_ids``) can have been written meanwhile (they alone were indexed, so only they
    can be delivered), so the keys of the others are those of the committed store.
    """

    def __init__(self, store: SqliteTaskStore, early_ids: frozenset[str]) -> None:
        self.store = store
        self.early_ids = early_ids
        #: Set to stop :meth:`run` before its next chunk (a host stopping meanwhile).
        self.cancel = threading.Event()

    def run(self) -> list[TimerKey]:
        """Validate every row; the timer keys of the active, unpaused tasks not read early,
        in storage order. :class:`~schedlog.errors.StoreOpenError` for a bad row or store,
        :class:`~schedlog.host.stores.sqlite_load.ValidationStopped` when cancelled. Once
        the store has validated, :data:`INDEXES` are created (a write: only now)."""
        keys: list[TimerKey] = []
        validate_live(self.store.path, keys, self.cancel)
        early = self.early_ids
        rest = [key for key in keys if key[2] not in early] if early else keys
        self.store._create_indexes()
        return rest


def migrate_sqlite(path: Path) -> dict[str, object]:
    """``schedlog store migrate`` of an SQLite store: validate it read-only under its lock
    (no host may have it open), then write schedlog's schema version 2 in one transaction.
    ``{"store","from","to","applied"}``; a second run applies nothing."""
    lock = StoreLock(path)
    try:
        validate_sqlite_store(path)
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            meta = dict(conn.execute("SELECT key, value FROM schedlog_meta").fetchall())
            before = schedlog_schema(meta)
            if before < PAUSE_SCHEMA:
                conn.execute("PRAGMA synchronous=FULL")
                conn.executescript("BEGIN IMMEDIATE;" + PAUSE_MIGRATION + "COMMIT;")
        except sqlite3.Error as exc:
            raise _malformed(f"cannot migrate schedule store {path}: {exc}") from None
        finally:
            conn.close()
    finally:
        lock.release()
    applied = [PAUSE_SCHEMA] if before < PAUSE_SCHEMA else []
    return {"store": str(path), "from": before, "to": PAUSE_SCHEMA, "applied": applied}
