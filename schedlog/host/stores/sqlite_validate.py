"""Read-only validation and reading of an SQLite task store, shared by opening the store
(:class:`~schedlog.host.stores.sqlite.SqliteTaskStore`), ``schedlog validate --store``
(:mod:`schedlog.host.validate`) and the read commands ``host catalog`` / ``host history``.

Nothing here creates, writes or locks a store file (docs/decisions.md, "Readers beside a
writer"):

* while a service holds the store (its ``<store>.lock`` is locked), the store is read in one
  WAL read transaction on a ``mode=ro`` connection: a consistent snapshot of what was committed
  when the first row was read, beside the writer, taking no write lock. The writer's ``-wal`` and
  ``-shm`` already exist then, so none is created;
* otherwise a store without a pending log is read with ``immutable=1``, and a store with a
  non-empty ``-wal`` or ``-journal`` (a service that crashed) is read on a private copy of the
  database and its log in a temporary directory. The files' size, mtime and inode are compared
  before and after, so a service that started meanwhile makes the read start again.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import stat
import tempfile
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Final, NamedTuple, TypeVar

from schedlog.errors import StoreOpenError
from schedlog.host.stores.base import StoredTask
from schedlog.host.stores.sqlite_load import DUE_ROWS, decode_row, due_keys, load_rows
from schedlog.host.task_typed import TimerKey

__all__ = [
    "PAUSE_SCHEMA",
    "SCHEMA_KEY",
    "DueFirst",
    "check_regular_file",
    "decode_row",
    "read_due_first",
    "read_sqlite_tasks",
    "schedlog_schema",
    "validate_live",
    "validate_sqlite",
    "validate_sqlite_store",
    "writer_holds",
]

_TASK_COLUMNS: Final = ["seq", "id", "session_id", "body"]
#: The meta row of schedlog's own schema version, beside the upstream ``unit.version`` (which
#: stays 1): absent in a store written by 0.2.0 (version 1); :data:`PAUSE_SCHEMA` once the store
#: can hold paused tasks (``schedlog store migrate``, docs/decisions.md#pause-and-resume).
SCHEMA_KEY: Final = "schedlog.schema"
PAUSE_SCHEMA: Final = 2
_META_COLUMNS: Final = ["key", "value"]
#: SQLite's pending-log companions; a non-empty one holds committed (or hot) pages.
_LOG_SUFFIXES: Final = ("-wal", "-journal")
#: Copy attempts before a store whose files keep changing is reported as unreadable.
_SNAPSHOT_ATTEMPTS: Final = 3

_Signature = tuple[tuple[str, int, int, int], ...]


def _malformed(message: str) -> StoreOpenError:
    return StoreOpenError("malformed-medium", message)


def check_regular_file(path: Path) -> int:
    """The size of the store file; ``store-not-found`` when it is missing, ``malformed-medium``
    when it is not a file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise StoreOpenError("store-not-found", f"schedule store {path} does not exist") from None
    except OSError as exc:
        raise _malformed(f"cannot read schedule store {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _malformed(f"schedule store {path} is not a regular file")
    return st.st_size


def _read_only_uri(path: Path) -> str:
    quoted = urllib.parse.quote(str(path.resolve()))
    wal = Path(f"{path}-wal")
    # immutable=1 never creates companion files, but it would ignore committed pages still in
    # a write-ahead log left by a crash; such a store is read through the log instead.
    if wal.exists() and wal.stat().st_size > 0:
        return f"file:{quoted}?mode=ro"
    return f"file:{quoted}?mode=ro&immutable=1"


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def schedlog_schema(meta: dict[str, str]) -> int:
    """The store's schedlog schema version from its meta rows: 1 without a
    :data:`SCHEMA_KEY` row; ``version-mismatch`` for a version this schedlog does not know."""
    value = meta.get(SCHEMA_KEY)
    if value is None:
        return 1
    if value != str(PAUSE_SCHEMA):
        raise StoreOpenError(
            "version-mismatch",
            f"schedule store {SCHEMA_KEY} is {value!r}, not {PAUSE_SCHEMA} (a newer schedlog?)",
        )
    return PAUSE_SCHEMA


def validate_sqlite(
    path: Path, tasks: list[StoredTask] | None = None, targets: list[TimerKey] | None = None
) -> int:
    """Validate an existing, non-empty SQLite store read-only; the number of tasks. When
    ``tasks`` is a list, the decoded tasks are appended to it in storage order; when
    ``targets`` is, the timer-index keys of the active, unpaused tasks in storage order
    (:func:`~schedlog.host.stores.sqlite_load.load_rows`).

    Order (docs/protocol.md#open-failures): an SQLite database at all, the meta table and its rows,
    the version (``user_version`` and ``unit.version``), the tasks table, then each row by ``seq``.
    Without ``tasks``, rows are checked a chunk at a time and not kept, so validating a large
    store takes little memory.
    """
    return _read_uri(_read_only_uri(path), path, tasks, targets)


def _read_uri(
    uri: str,
    path: Path,
    tasks: list[StoredTask] | None,
    targets: list[TimerKey] | None = None,
    cancel: threading.Event | None = None,
) -> int:
    """Validate (and collect) the store through a read-only connection to ``uri``, every query
    in one read transaction, so that a writer's commits in between are never half seen."""
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _malformed(f"cannot open schedule store {path}: {exc}") from None
    try:
        try:
            conn.execute("BEGIN")  # deferred: the first SELECT starts the read transaction
            pausable = _check_tables(conn)
            return load_rows(conn, pausable=pausable, tasks=tasks, targets=targets, cancel=cancel)
        except sqlite3.Error as exc:
            message = f"schedule store {path} is not a readable SQLite database: {exc}"
            raise _malformed(message) from None
    finally:
        conn.close()  # a read transaction needs no commit; closing ends it


def _check_tables(conn: sqlite3.Connection) -> bool:
    """The checks before the rows (docs/protocol.md#open-failures); whether the store can hold
    paused tasks."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if "schedlog_meta" not in names or _columns(conn, "schedlog_meta") != _META_COLUMNS:
        raise _malformed("schedule store has no schedlog_meta table")
    meta = dict(conn.execute("SELECT key, value FROM schedlog_meta").fetchall())
    if meta.get("unit.name") != "schedule" or "unit.version" not in meta:
        raise _malformed("schedule store meta rows unit.name/unit.version are missing")
    (user_version,) = conn.execute("PRAGMA user_version").fetchone()
    if user_version != 1 or meta["unit.version"] != "1":
        raise StoreOpenError(
            "version-mismatch",
            f"schedule store version is {meta['unit.version']!r} "
            f"(user_version {user_version}), not 1",
        )
    pausable = schedlog_schema(meta) >= PAUSE_SCHEMA
    if "tasks" not in names or _columns(conn, "tasks") != _TASK_COLUMNS:
        raise _malformed("schedule store has no tasks table")
    return pausable


class DueFirst(NamedTuple):
    """What :func:`read_due_first` read: the timer keys of the rows that may be due (each of
    them strictly validated), in storage order, and the ids of every row it read."""

    keys: list[TimerKey]
    ids: frozenset[str]


def read_due_first(path: Path, bound: str) -> DueFirst | None:
    """The rows of :data:`~schedlog.host.stores.sqlite_load.DUE_ROWS` (those that may be due by
    the canonical instant ``bound``), read-only before the rest of the store is validated: from
    the file, or for a store with a pending log (a host that was killed) from a private copy
    with its log replayed, as the full validation reads it.

    None when the early path is not taken: an empty file, a check before the rows failing, or
    a read row that is bad; the caller then validates the whole store first, which reports the
    same error with the same row as it always did.
    """
    try:
        if check_regular_file(path) == 0:
            return None
        logs = _pending_logs(path)
        if logs:
            return _on_copy(path, logs, lambda copy: _due_first_of(copy, bound))
    except StoreOpenError:
        return None
    return _due_first_of(path, bound)


def _due_first_of(path: Path, bound: str) -> DueFirst | None:
    """:func:`read_due_first` of a file without a pending log."""
    try:
        conn = sqlite3.connect(_read_only_uri(path), uri=True, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("BEGIN")
        pausable = _check_tables(conn)
        rows = conn.execute(DUE_ROWS, (bound,)).fetchall()
    except (sqlite3.Error, StoreOpenError):
        return None
    finally:
        conn.close()
    keys = due_keys(rows, pausable=pausable)
    if keys is None:
        return None
    return DueFirst(keys, frozenset(row[1] for row in rows))


def validate_live(
    path: Path, targets: list[TimerKey], cancel: threading.Event | None = None
) -> int:
    """:func:`validate_sqlite` of a store this process holds open for writing (its ``-wal``
    and ``-shm`` exist), on a ``mode=ro`` connection in one WAL read transaction, from any
    thread; the timer keys of the active, unpaused tasks are appended to ``targets``.
    ``cancel``: see :func:`~schedlog.host.stores.sqlite_load.load_rows`."""
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
    return _read_uri(uri, path, None, targets, cancel)


def _pending_logs(path: Path) -> list[Path]:
    """The non-empty ``-wal`` / ``-journal`` companions of an SQLite store."""
    out = []
    for suffix in _LOG_SUFFIXES:
        companion = Path(f"{path}{suffix}")
        try:
            if companion.stat().st_size > 0:
                out.append(companion)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _malformed(f"cannot read {companion}: {exc.strerror or exc}") from None
    return out


def _signature(paths: list[Path]) -> _Signature:
    """What must not change while a snapshot is copied: each file's size, mtime and inode."""
    out = []
    for p in paths:
        try:
            st = p.stat()
        except FileNotFoundError:
            out.append((str(p), -1, -1, -1))
        else:
            out.append((str(p), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _validate_sqlite_snapshot(
    path: Path,
    logs: list[Path],
    tasks: list[StoredTask] | None = None,
    targets: list[TimerKey] | None = None,
) -> int:
    """Validate a copy of the database and its pending log(s) in a private directory.

    A read-write connection on the copy replays a write-ahead log (or rolls back a hot journal)
    into the copy; then the copy is validated as usual. The originals are only read.
    """
    return _on_copy(path, logs, lambda copy: validate_sqlite(copy, tasks, targets))


_T = TypeVar("_T")


def _on_copy(path: Path, logs: list[Path], read: Callable[[Path], _T]) -> _T:
    """``read`` of a private copy of the database and its pending log(s), the log replayed
    (or rolled back) into the copy first; errors name the store, not the copy."""
    files = [path, *logs]
    with tempfile.TemporaryDirectory(prefix="schedlog-validate-") as tmp:
        copy = Path(tmp) / "store.db"
        for _ in range(_SNAPSHOT_ATTEMPTS):
            before = _signature(files)
            try:
                shutil.copyfile(path, copy)
                for log in logs:
                    shutil.copyfile(log, Path(f"{copy}{log.name[len(path.name) :]}"))
            except OSError as exc:
                raise _malformed(
                    f"cannot read schedule store {path}: {exc.strerror or exc}"
                ) from None
            if _signature(files) == before:
                break
        else:
            raise _malformed(
                f"schedule store {path} kept changing while it was read; "
                "is a service writing to it?"
            )
        try:
            _recover(copy)
            return read(copy)
        except StoreOpenError as exc:  # name the store, not the private copy
            raise StoreOpenError(exc.code, exc.message.replace(str(copy), str(path))) from None


def _recover(copy: Path) -> None:
    """Let SQLite replay (WAL) or roll back (hot journal) the copy's pending log, in place."""
    try:
        conn = sqlite3.connect(copy, isolation_level=None)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise _malformed(f"schedule store is not a readable SQLite database: {exc}") from None


def writer_holds(path: Path) -> bool:
    """Whether a service holds the store's lock (``<store>.lock``, see
    :class:`~schedlog.host.stores.base.StoreLock`) right now.

    Probed with a shared, non-blocking ``flock`` that is released at once; a missing lock file
    is not created (no service has opened the store since it was made, or it was removed).
    """
    try:
        fd = os.open(f"{path}.lock", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _companions(path: Path) -> list[Path]:
    return [path, *(Path(f"{path}{suffix}") for suffix in (*_LOG_SUFFIXES, "-shm"))]


def _live_uri(path: Path) -> str | None:
    """The ``mode=ro`` URI to read beside a live writer, when its ``-wal`` and ``-shm`` exist
    (so that reading creates neither); None otherwise."""
    if not all(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm")):
        return None
    return f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"


def _read_store(
    path: Path,
    tasks: list[StoredTask] | None,
    *,
    probe: bool,
    targets: list[TimerKey] | None = None,
) -> int:
    if check_regular_file(path) == 0:
        return 0  # open_store initializes a zero-length file as an empty store
    for _ in range(_SNAPSHOT_ATTEMPTS):
        got: list[StoredTask] | None = None if tasks is None else []
        keys: list[TimerKey] | None = None if targets is None else []
        live = _live_uri(path) if probe and writer_holds(path) else None
        if live is not None:
            try:
                count = _read_uri(live, path, got, keys)
            except StoreOpenError:
                if writer_holds(path):
                    raise
                continue  # the service stopped (and removed its log) under the read
            _keep(tasks, got, targets, keys)
            return count
        files = _companions(path)
        before = _signature(files)
        try:
            logs = _pending_logs(path)
            count = (
                _validate_sqlite_snapshot(path, logs, got, keys)
                if logs
                else validate_sqlite(path, got, keys)
            )
        except StoreOpenError:
            if not probe or _signature(files) == before:
                raise
            continue  # the files changed under the read: a service started; read again
        if not probe or _signature(files) == before:
            _keep(tasks, got, targets, keys)
            return count
    raise _malformed(
        f"schedule store {path} kept changing while it was read; is a service starting on it?"
    )


def _keep(
    tasks: list[StoredTask] | None,
    got: list[StoredTask] | None,
    targets: list[TimerKey] | None,
    keys: list[TimerKey] | None,
) -> None:
    """What a read that counted collected, into the caller's lists."""
    if tasks is not None and got is not None:
        tasks.extend(got)
    if targets is not None and keys is not None:
        targets.extend(keys)


def validate_sqlite_store(
    path: Path, *, lock_held: bool = False, targets: list[TimerKey] | None = None
) -> int:
    """Validate the SQLite store at ``path`` without modifying, creating or locking any file;
    the number of tasks. Beside a service that holds the store, in one WAL read transaction;
    a store with a pending log and no service is validated on a private copy.

    ``lock_held``: the caller holds the store lock itself (a service opening the store), so no
    other writer can be live and a crash-left log is always read through a private copy.
    ``targets``: the timer-index keys of the store's active, unpaused tasks are appended
    (in storage order)."""
    return _read_store(path, None, probe=not lock_held, targets=targets)


def read_sqlite_tasks(path: Path) -> list[StoredTask]:
    """Every task of the SQLite store at ``path``, in storage order, validated as
    :func:`validate_sqlite_store` does: a consistent snapshot, read without modifying, creating
    or locking any file, beside a service that holds the store or without one."""
    tasks: list[StoredTask] = []
    _read_store(path, tasks, probe=True)
    return tasks
