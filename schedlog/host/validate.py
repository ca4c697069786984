"""``schedlog validate --store``: check a host task store without modifying it (SPEC §16.1).

The report is ``{"path":P,"kind":"store","ok":B,"tasks":N,"error":{"code","message"}?}`` where
the error code is an open failure of §11.3 (``malformed-medium``, ``version-mismatch``,
``invalid-record``) and ``tasks`` is ``null`` when the store failed.

Nothing is created, written or locked:

* the store lock (``<store>.lock``) is not taken, so a missing lock file is never created;
* a missing store path is a ``malformed-medium`` failure here, although :func:`open_store` would
  open it as an empty store (and create it);
* a zero-length SQLite file is what :func:`open_store` initializes as an empty store, so it is
  reported ``ok`` with 0 tasks (a zero-length JSON document is not valid JSON: it fails);
* an SQLite store without a pending log is read with ``immutable=1``, which opens no journal,
  ``-wal`` or ``-shm`` file. A store with a non-empty ``-wal`` or ``-journal`` (a service that
  crashed, or one that is running) is validated on a private copy of the database and its log in
  a temporary directory, so that replaying the log never touches the originals. When the files
  keep changing while they are copied, the store is reported as unreadable.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any, Final

from schedlog.errors import StoreOpenError
from schedlog.host.store import Backend, select_backend
from schedlog.host.store_json import validate_document
from schedlog.host.store_sqlite import validate_sqlite

__all__ = ["validate_store", "validate_store_report"]

#: SQLite's pending-log companions; a non-empty one holds committed (or hot) pages.
_LOG_SUFFIXES: Final = ("-wal", "-journal")
#: Copy attempts before a store whose files keep changing is reported as unreadable.
_SNAPSHOT_ATTEMPTS: Final = 3

_Signature = tuple[tuple[str, int, int, int], ...]


def _malformed(message: str) -> StoreOpenError:
    return StoreOpenError("malformed-medium", message)


def _check_regular_file(path: Path) -> int:
    """The size of the store file; ``malformed-medium`` when it is missing or not a file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise _malformed(f"schedule store {path} does not exist") from None
    except OSError as exc:
        raise _malformed(f"cannot read schedule store {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _malformed(f"schedule store {path} is not a regular file")
    return st.st_size


def _validate_json(path: Path) -> int:
    _check_regular_file(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _malformed(f"cannot read schedule store {path}: {exc.strerror or exc}") from None
    return len(validate_document(data))


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


def _validate_sqlite_snapshot(path: Path, logs: list[Path]) -> int:
    """Validate a copy of the database and its pending log(s) in a private directory.

    A read-write connection on the copy replays a write-ahead log (or rolls back a hot journal)
    into the copy; then the copy is validated as usual. The originals are only read.
    """
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
            return validate_sqlite(copy)
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


def _validate_sqlite(path: Path) -> int:
    if _check_regular_file(path) == 0:
        return 0  # open_store initializes a zero-length file as an empty store
    logs = _pending_logs(path)
    if logs:
        return _validate_sqlite_snapshot(path, logs)
    return validate_sqlite(path)


def validate_store(path: str | os.PathLike[str], backend: Backend | None = None) -> int:
    """The number of tasks in the store at ``path``, or :class:`StoreOpenError` (§11.3).

    Never modifies, creates or locks any file.
    """
    chosen = select_backend(path, backend)
    if chosen == "postgresql":
        raise ValueError("a PostgreSQL store is validated with validate_store_report")
    p = Path(path)
    if chosen == "json":
        return _validate_json(p)
    return _validate_sqlite(p)


def _postgres_report(url: str) -> dict[str, Any]:
    """The store report of a PostgreSQL store: every row is strict-decoded. Rows that do not
    decode are listed (the first 100, by ``seq``) under ``invalidRecords``; the report's
    ``error`` names the first and how many there are."""
    try:
        from schedlog.host.store_postgres import redact_url, validate_postgres
    except ImportError as exc:
        error = StoreOpenError(
            "malformed-medium",
            f"the PostgreSQL backend needs psycopg ({exc}): pip install 'schedlog[postgres]'",
        )
        return {"path": url, "kind": "store", "ok": False, "tasks": None, "error": error.to_value()}
    where = redact_url(url)
    try:
        count, invalid, bad = validate_postgres(url)
    except StoreOpenError as exc:
        return {"path": where, "kind": "store", "ok": False, "tasks": None, "error": exc.to_value()}
    if not bad:
        return {"path": where, "kind": "store", "ok": True, "tasks": count}
    first = invalid[0]
    error = StoreOpenError(
        "invalid-record",
        f"task {first.id!r}: {first.message}"
        + (f" (and {bad - 1} more invalid task(s))" if bad > 1 else ""),
    )
    return {
        "path": where,
        "kind": "store",
        "ok": False,
        "tasks": None,
        "error": error.to_value(),
        "invalidRecords": [{"id": r.id, "message": r.message} for r in invalid],
    }


def validate_store_report(path: str, backend: str | None) -> dict[str, Any]:
    """The SPEC §16.1 store report; the ``validate --store`` hook of :mod:`schedlog.cli`."""
    if backend not in (None, "sqlite", "json", "postgresql"):
        raise ValueError(f"unknown store backend {backend!r}")
    chosen: Backend | None = (
        "json" if backend == "json" else "postgresql" if backend == "postgresql" else None
    )
    if backend == "sqlite":
        chosen = "sqlite"
    if select_backend(path, chosen) == "postgresql":
        return _postgres_report(path)
    try:
        count = validate_store(path, chosen)
    except StoreOpenError as exc:
        return {"path": path, "kind": "store", "ok": False, "tasks": None, "error": exc.to_value()}
    return {"path": path, "kind": "store", "ok": True, "tasks": count}
