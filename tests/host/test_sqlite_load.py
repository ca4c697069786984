"""Opening an SQLite store hands the timer keys read by its validation to the timer index once:
the index equals the one built from the store's own scan, and a write before the index is built
makes the index read the store again."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from schedlog.errors import StoreOpenError
from schedlog.host.due import LocalTimerIndex
from schedlog.host.stores.sqlite import SqliteTaskStore
from tests.host.helpers import task


def _fill(path: Path, n: int) -> None:
    store = SqliteTaskStore.open(path)
    tasks = [
        task(f"schedule-{i}", session=f"s-{i % 3}", after_seconds=60 + (7 * i) % 50)
        for i in range(n)
    ]
    store.insert_many(tasks)
    store.replace(msgspec.structs.replace(tasks[0], status="inactive"))
    store.close()


def _scan(store: SqliteTaskStore) -> list[tuple[int, int, str]]:
    store._open_targets = None  # the json_extract scan, as before this change
    return sorted(store.active_targets())


def test_the_index_from_open_equals_the_scan(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _fill(path, 50)
    store = SqliteTaskStore.open(path)
    index = LocalTimerIndex(store)
    assert list(index._index) == _scan(store)
    assert len(index._index) == 49  # schedule-0 is inactive
    store.close()


def test_a_write_before_the_index_makes_it_read_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _fill(path, 5)
    store = SqliteTaskStore.open(path)
    store.insert(task("schedule-new", session="s-9", after_seconds=60))
    index = LocalTimerIndex(store)
    assert "schedule-new" in {key[2] for key in index._index}
    store.close()


def test_the_keys_are_handed_over_once(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _fill(path, 5)
    store = SqliteTaskStore.open(path)
    first = list(store.active_targets())
    assert store._open_targets is None
    assert sorted(store.active_targets()) == sorted(first)
    store.close()


def test_a_bad_row_still_refuses_the_open(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "s.db"
    _fill(path, 10)
    conn = sqlite3.connect(path, isolation_level=None)
    active, paused = '\'"status":"active"\'', '\'"status":"paused"\''
    conn.execute(
        f"UPDATE tasks SET body = replace(body, {active}, {paused}) WHERE id = 'schedule-7'"
    )
    conn.close()
    with pytest.raises(StoreOpenError) as exc:
        SqliteTaskStore.open(path)
    assert exc.value.code == "invalid-record"
    assert (
        exc.value.message
        == 'task \'schedule-7\': schedule task status must be "active" or "inactive"'
    )


@pytest.mark.parametrize(
    ("seq_text", "taken"),
    [
        ("1,2,3,4", True),
        ("1,3,2,4", False),
        ("1,1,3,4", False),
        ("1,2,2,4", False),
        ("2,1,3,4", False),
        ("1,2,4", False),
    ],
)
def test_a_chunk_is_taken_only_with_each_seq_once_in_storage_order(
    tmp_path: Path, seq_text: str, taken: bool
) -> None:
    """The seq column's check of the chunk query (defensive: a rowid range scan comes in
    order), made directly: out of order, short or repeated seqs send the chunk to the
    reference."""
    import sqlite3

    from schedlog.host.stores import sqlite_load

    path = tmp_path / "s.db"
    store = SqliteTaskStore.open(path)
    try:
        for i in range(4):
            store.insert(task(f"schedule-{i}", f'<s & "{i}">'))
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        bodies = [body for (body,) in conn.execute("SELECT body FROM tasks ORDER BY seq")]
    keys = sqlite_load._vouch(4, 1, 4, seq_text, ",".join(bodies), 1, True)
    assert (keys is not None) == taken, keys
