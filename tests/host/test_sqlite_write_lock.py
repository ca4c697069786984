"""The SQLite store's write lock (``SqliteTaskStore._transaction``): write transactions come
from two threads (the writer thread's creates and a delivery run's commit) and share one
writer connection, so each ``BEGIN IMMEDIATE`` ... ``COMMIT`` runs under the lock. Checked on
one thread, deterministically: every statement of a write transaction is issued while the lock
is held, whichever write made it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from schedlog.host.stores.sqlite import SqliteTaskStore
from tests.host.helpers import task


class _Watched:
    """The writer connection, noting for each statement whether the store's lock was held."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self._conn = conn
        self._lock = lock
        self.statements: list[tuple[str, bool]] = []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.statements.append((sql.split()[0].upper(), self._lock.locked()))
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.statements.append((sql.split()[0].upper(), self._lock.locked()))
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.mark.parametrize("write", ["insert", "insert_many", "replace_many", "delete"])
def test_every_write_transaction_runs_under_the_write_lock(tmp_path: Path, write: str) -> None:
    store = SqliteTaskStore.open(tmp_path / "s.db")
    try:
        store.insert(task("schedule-1"))
        watched = _Watched(store._writer, store._write_lock)
        store._writer = watched  # type: ignore[assignment]
        if write == "insert":
            store.insert(task("schedule-2"))
        elif write == "insert_many":
            store.insert_many([task("schedule-2"), task("schedule-3")])
        elif write == "replace_many":
            (stored,) = store.tasks()
            store.replace_many([stored.task])
        else:
            assert store.delete("schedule-1")
        kinds = [kind for kind, _ in watched.statements]
        assert kinds[0] == "BEGIN" and "COMMIT" in kinds, kinds
        begin, commit = kinds.index("BEGIN"), len(kinds) - 1 - kinds[::-1].index("COMMIT")
        assert all(held for _, held in watched.statements[begin : commit + 1]), watched.statements
        assert not store._write_lock.locked()  # released once the transaction ends
    finally:
        store._writer = getattr(store._writer, "_conn", store._writer)
        store.close()
