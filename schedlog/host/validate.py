"""``schedlog validate --store``: check a host task store without modifying it
(docs/cli.md#validate).

The report is ``{"path":P,"kind":"store","ok":B,"tasks":N,"error":{"code","message"}?}`` where
the error code is an open failure of docs/protocol.md#open-failures (``malformed-medium``,
``version-mismatch``, ``invalid-record``) and ``tasks`` is ``null`` when the store failed.

Nothing is created, written or locked:

* the store lock (``<store>.lock``) is not taken, so a missing lock file is never created;
* a missing store path is a ``store-not-found`` failure here, although :func:`open_store` would
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
from pathlib import Path
from typing import Any

from schedlog.errors import StoreOpenError
from schedlog.host.stores.base import require_postgres
from schedlog.host.stores.json import validate_document
from schedlog.host.stores.open import Backend, select_backend
from schedlog.host.stores.sqlite_validate import check_regular_file, validate_sqlite_store

__all__ = ["validate_store", "validate_store_report"]


def _malformed(message: str) -> StoreOpenError:
    return StoreOpenError("malformed-medium", message)


def _validate_json(path: Path) -> int:
    check_regular_file(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _malformed(f"cannot read schedule store {path}: {exc.strerror or exc}") from None
    return len(validate_document(data))


def validate_store(path: str | os.PathLike[str], backend: Backend | None = None) -> int:
    """The number of tasks in the store at ``path``, or :class:`StoreOpenError`
    (docs/protocol.md#open-failures).

    Never modifies, creates or locks any file.
    """
    chosen = select_backend(path, backend)
    if chosen == "postgresql":
        raise ValueError("a PostgreSQL store is validated with validate_store_report")
    p = Path(path)
    if chosen == "json":
        return _validate_json(p)
    return validate_sqlite_store(p)


def _postgres_report(url: str) -> dict[str, Any]:
    """The store report of a PostgreSQL store: every row is strict-decoded. Rows that do not
    decode are listed (the first 100, by ``seq``) under ``invalidRecords``; the report's
    ``error`` names the first and how many there are."""
    try:
        require_postgres()
    except StoreOpenError as refused:
        return {
            "path": url,
            "kind": "store",
            "ok": False,
            "tasks": None,
            "error": refused.to_value(),
        }
    from schedlog.host.stores.pg_admin import validate_postgres
    from schedlog.host.stores.pg_rows import redact_url

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
    """The docs/cli.md#validate store report; the ``validate --store`` hook of
    :mod:`schedlog.cli`."""
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
