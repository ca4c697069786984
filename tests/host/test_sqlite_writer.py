"""The SQLite store's writer connection (docs/protocol.md#store-sqlite, docs/decisions.md
"Group commit"): ``synchronous=FULL`` on the connection that commits, and a batched
``insert_many`` that is all-or-none through the store's own rollback (no mock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlog.host.stores.base import StoreWriteError
from schedlog.host.stores.sqlite import SqliteTaskStore
from tests.host.helpers import task

FULL = 2  # PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA


@pytest.mark.parametrize("fresh", [True, False], ids=["new-store", "existing-store"])
def test_the_writer_connection_commits_with_synchronous_full(tmp_path: Path, fresh: bool) -> None:
    path = tmp_path / "s.db"
    if not fresh:
        SqliteTaskStore.open(path).close()
    store = SqliteTaskStore.open(path)
    try:
        (level,) = store._writer.execute("PRAGMA synchronous").fetchone()
        assert level == FULL
        assert store._writer.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        store.close()


@pytest.mark.parametrize("bad", ["duplicate-id", "unstorable-session"])
def test_a_batch_that_fails_midway_writes_none_of_it(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "s.db"
    store = SqliteTaskStore.open(path)
    try:
        store.insert(task("schedule-0"))
        failing = task("schedule-0") if bad == "duplicate-id" else task("schedule-9", "s\ud800")
        batch = [task("schedule-1"), task("schedule-2"), failing, task("schedule-3")]
        with pytest.raises(StoreWriteError):
            store.insert_many(batch)
        assert [st.task.id for st in store.tasks()] == ["schedule-0"]
        assert store.insert_many([task("schedule-4")])  # the writer is usable afterwards
    finally:
        store.close()
    reopened = SqliteTaskStore.open(path)
    try:
        assert [st.task.id for st in reopened.tasks()] == ["schedule-0", "schedule-4"]
    finally:
        reopened.close()
