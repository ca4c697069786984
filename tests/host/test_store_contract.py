"""One contract suite for every TaskStore backend (SPEC §11.2), parametrized over both."""

from __future__ import annotations

import stat
from pathlib import Path

import msgspec
import pytest

from schedlog.host.config import Retention
from schedlog.host.history import append_delivery
from schedlog.host.store import StoreLockedError, StoreWriteError, TaskStore, open_store
from schedlog.host.task import Receipt
from tests.host.conftest import store_path
from tests.host.helpers import T0, task


def test_new_store_is_empty(store: TaskStore) -> None:
    assert list(store.tasks()) == []
    assert store.count() == 0
    assert store.get("schedule-1") is None
    assert store.session_tasks("s-1") == []


def test_insert_get_and_storage_order(store: TaskStore) -> None:
    tasks = [task(f"schedule-{i}", session="s-1" if i % 2 else "s-2") for i in range(5)]
    seqs = [store.insert(t) for t in tasks]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    assert [st.task for st in store.tasks()] == tasks
    assert store.get("schedule-3") == (seqs[3], tasks[3])
    assert [st.task.id for st in store.session_tasks("s-1")] == ["schedule-1", "schedule-3"]
    assert store.count() == 5


def test_replace_keeps_position_and_seq(store: TaskStore) -> None:
    for i in range(3):
        store.insert(task(f"schedule-{i}"))
    before = store.get("schedule-1")
    assert before is not None
    receipt = Receipt(scheduled_at=T0, delivered_at=T0 + 5, message_id="m-1")
    delivered = append_delivery(before.task, receipt, "prompt", Retention())
    changed = msgspec.structs.replace(delivered, status="inactive")
    store.replace(changed)
    after = store.get("schedule-1")
    assert after == (before.seq, changed)
    assert [st.task.id for st in store.tasks()] == ["schedule-0", "schedule-1", "schedule-2"]


def test_delete(store: TaskStore) -> None:
    store.insert(task("schedule-1"))
    store.insert(task("schedule-2"))
    assert store.delete("schedule-1") is True
    assert store.delete("schedule-1") is False
    assert [st.task.id for st in store.tasks()] == ["schedule-2"]


def test_replace_missing_fails(store: TaskStore) -> None:
    with pytest.raises(StoreWriteError):
        store.replace(task("schedule-9"))


def test_reopen_keeps_identities_order_and_content(tmp_path: Path, backend: str) -> None:
    path = store_path(tmp_path, backend)
    s = open_store(path)
    written = [task(f"schedule-{i}", every_seconds=60 * (i + 1)) for i in range(4)]
    for t in written:
        s.insert(t)
    s.delete("schedule-1")
    s.close()
    s = open_store(path)
    try:
        assert [st.task for st in s.tasks()] == [written[0], written[2], written[3]]
        seq = s.insert(task("schedule-new"))
        assert seq > max(st.seq for st in s.tasks() if st.task.id != "schedule-new")
    finally:
        s.close()


def test_exclusive_lock(tmp_path: Path, backend: str) -> None:
    path = store_path(tmp_path, backend)
    first = open_store(path)
    with pytest.raises(StoreLockedError) as info:
        open_store(path)
    assert info.value.code == "store-locked"
    first.close()
    open_store(path).close()


def test_files_are_owner_only(tmp_path: Path, backend: str) -> None:
    path = store_path(tmp_path, backend)
    s = open_store(path)
    s.insert(task("schedule-1"))
    try:
        for p in tmp_path.iterdir():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    finally:
        s.close()
