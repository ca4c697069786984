"""Choosing and opening a host task store backend.

``open_store`` is the one entry point that knows every backend; the backends themselves only
import the :mod:`schedlog.host.stores.base` interface.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Final, Literal

from schedlog.errors import StoreOpenError
from schedlog.host.stores.base import StoredTask, TaskStore, require_postgres
from schedlog.host.stores.json import JsonTaskStore, validate_document
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.stores.sqlite_validate import check_regular_file, read_sqlite_tasks

__all__ = ["POSTGRES_SCHEMES", "Backend", "open_store", "read_tasks", "select_backend"]

Backend = Literal["sqlite", "json", "postgresql"]
#: URL schemes of the PostgreSQL backend (``--store postgresql://…``).
POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")


def select_backend(path: str | os.PathLike[str], backend: Backend | None = None) -> Backend:
    """``--backend`` when given; otherwise PostgreSQL for a ``postgresql://`` URL, JSON for a
    ``.json`` path and SQLite for any other."""
    if backend is not None:
        return backend
    if isinstance(path, str) and path.startswith(POSTGRES_SCHEMES):
        return "postgresql"
    return "json" if Path(path).name.endswith(".json") else "sqlite"


def _postgres_opener() -> Callable[[str], TaskStore]:
    """``PostgresTaskStore.open``, or ``backend-unavailable`` when psycopg is not installed."""
    require_postgres()
    from schedlog.host.stores.postgres import PostgresTaskStore

    return PostgresTaskStore.open


def open_store(path: str | os.PathLike[str], backend: Backend | None = None) -> TaskStore:
    """Lock, validate and open the store at ``path`` (docs/protocol.md#store-sqlite,
    docs/protocol.md#open-failures).

    Raises :class:`StoreOpenError` when validation fails (the files are untouched) or
    :class:`StoreLockedError` when another service holds the store.
    """
    chosen = select_backend(path, backend)
    if chosen == "postgresql":
        if not (isinstance(path, str) and path.startswith(POSTGRES_SCHEMES)):
            raise StoreOpenError(
                "malformed-medium", f"a PostgreSQL store is a postgresql:// URL, not {path}"
            )
        return _postgres_opener()(path)
    p = Path(path)
    if chosen == "json":
        return JsonTaskStore.open(p)
    return SqliteTaskStore.open(p)


def read_tasks(path: str | os.PathLike[str], backend: Backend | None = None) -> list[StoredTask]:
    """Every task of the store at ``path`` in storage order, for a command that only reads
    (docs/decisions.md, "Readers beside a writer").

    Validated as :func:`open_store` validates, but read without the store lock, beside a
    service that holds it, and without creating or modifying any file: a SQLite store in one
    read transaction (or from an unchanging file), a JSON document as one read of a file that
    writers replace atomically, a PostgreSQL store in one transaction. A missing file store is
    refused (``store-not-found``), not created.
    """
    chosen = select_backend(path, backend)
    if chosen == "postgresql":
        store = open_store(path, backend)
        try:
            return list(store.tasks())
        finally:
            store.close()
    p = Path(path)
    if chosen == "sqlite":
        return read_sqlite_tasks(p)
    check_regular_file(p)
    try:
        data = p.read_bytes()
    except OSError as exc:
        message = f"cannot read schedule store {p}: {exc.strerror or exc}"
        raise StoreOpenError("malformed-medium", message) from None
    return [StoredTask(seq, task) for seq, (_, task) in enumerate(validate_document(data), 1)]
