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
from schedlog.host.stores.base import TaskStore, require_postgres
from schedlog.host.stores.json import JsonTaskStore
from schedlog.host.stores.sqlite import SqliteTaskStore

__all__ = ["POSTGRES_SCHEMES", "Backend", "open_store", "select_backend"]

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
    """``PostgresTaskStore.open``, or ``malformed-medium`` when psycopg is not installed."""
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
