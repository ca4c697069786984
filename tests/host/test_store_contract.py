"""One contract suite for every TaskStore backend (docs/protocol.md#store-sqlite), parametrized over
all three (SQLite, JSON and PostgreSQL: ``tests/host/conftest.py`` BACKENDS)."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

import msgspec
import pytest

from schedlog.host.config import Retention
from schedlog.host.core import HostCore
from schedlog.host.history import append_delivery
from schedlog.host.stores.base import StoreLockedError, StoreWriteError, TaskStore
from schedlog.host.stores.open import open_store
from schedlog.host.task import Receipt, decode_task
from schedlog.rules.instants import MAX_MS
from schedlog.strictjson import loads_strict
from tests import pg
from tests.host.conftest import store_path
from tests.host.helpers import T0, MemorySessions, task


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


def decoded_targets(store: TaskStore) -> list[tuple[int, int, str]]:
    """The timer-index rows as decoding every task gives them (what HostCore used to build)."""
    return [
        (st.task.record.scheduled_at, st.seq, st.task.id) for st in store.tasks() if st.task.active
    ]


def assert_targets_match(store: TaskStore) -> None:
    rows = list(store.active_targets())
    assert rows == decoded_targets(store)
    core = HostCore(store, MemorySessions(), Retention())
    assert core.active_count() == len(rows)
    assert core.next_target() == min((r[0] for r in rows), default=None)
    assert [st.seq for st in core.due(MAX_MS)] == [r[1] for r in rows]


def test_active_targets_equal_decoding(tmp_path: Path, backend: str) -> None:
    path = store_path(tmp_path, backend)
    s = open_store(path)
    try:
        assert list(s.active_targets()) == []
        s.insert(task("schedule-a", at="2026-05-03T09:00:00Z"))
        s.insert(msgspec.structs.replace(task("schedule-none", every_seconds=3600), status=None))
        s.insert(msgspec.structs.replace(task("schedule-off"), status="inactive"))
        s.insert(task("schedule-b", at="2026-05-02T09:00:00Z"))
        s.insert(task("schedule-tie", at="2026-05-02T09:00:00Z"))
        s.insert(task("schedule-gone"))
        assert [r[2] for r in s.active_targets()] == [
            "schedule-a",
            "schedule-none",
            "schedule-b",
            "schedule-tie",
            "schedule-gone",
        ]
        assert_targets_match(s)
        s.delete("schedule-gone")
        st = s.get("schedule-a")
        assert st is not None
        s.replace(msgspec.structs.replace(st.task, status="inactive"))
        st = s.get("schedule-off")
        assert st is not None
        s.replace(msgspec.structs.replace(st.task, status=None))  # inactive -> no status
        st = s.get("schedule-b")
        assert st is not None
        moved = msgspec.structs.replace(st.task.record, scheduled_at=T0 + 1)
        s.replace(msgspec.structs.replace(st.task, record=moved))
        assert [r[2] for r in s.active_targets()] == [
            "schedule-none",
            "schedule-off",
            "schedule-b",
            "schedule-tie",
        ]
        assert next(r for r in s.active_targets() if r[2] == "schedule-b")[0] == T0 + 1
        assert_targets_match(s)
    finally:
        s.close()
    s = open_store(path)  # and as read back from the file
    try:
        assert_targets_match(s)
    finally:
        s.close()


# Hand-written task bodies (valid docs/protocol.md#task-document tasks) that spell names or values
# with JSON escapes, which SQLite's json_extract path lookup does not unescape, next to plain ones.
_R = '"record":{"id":"%s","kind":"at","title":"T","prompt":"%s","scheduledAt":"%s"}'
_AT = "2026-05-02T09:00:00.000Z"
_RAW_BODIES = {
    "plain-active": '{"sessionId":"s",' + _R + ',"status":"active"}',
    "plain-inactive": '{"sessionId":"s",' + _R + ',"status":"inactive"}',
    "plain-none": '{"sessionId":"s",' + _R + "}",
    "key-inactive": '{"sessionId":"s",' + _R + ',"st\\u0061tus":"inactive"}',
    "key-active": '{"sessionId":"s",' + _R + ',"st\\u0061tus":"active"}',
    "value-inactive": '{"sessionId":"s",' + _R + ',"status":"in\\u0061ctive"}',
    "value-active": '{"sessionId":"s",' + _R + ',"status":"\\u0061ctive"}',
    "none-newline": '{"sessionId":"s",'
    + _R.replace('%s","scheduledAt', '%s\\n2","scheduledAt')
    + "}",
    "record-key": '{"sessionId":"s",' + _R.replace('"record"', '"r\\u0065cord"') + "}",
    "at-key": '{"sessionId":"s",'
    + _R.replace("scheduledAt", "sched\\u0075ledAt")
    + ',"status":"active"}',
    "at-value": '{"sessionId":"s",' + _R.replace('"%s"}', '"%s\\u005a"}') + "}",
}


def write_raw_store(path: Path | str, backend: str) -> None:
    bodies = {}
    for n, (key, template) in enumerate(_RAW_BODIES.items()):
        at = _AT[:-1] if key == "at-value" else _AT.replace("09:", f"{n:02d}:")
        bodies[key] = template % (key, "p", at)
    if backend == "json":
        tasks = ",".join(f"{json.dumps(key)}:{body}" for key, body in bodies.items())
        path.write_text(
            '{"unit":{"name":"schedule","version":1},"global":null,"tables":{"tasks":{'
            + tasks
            + "}}}"
        )
        return
    if backend == "postgresql":  # the engine columns as a writer derives them from the body
        decoded = {key: decode_task(key, loads_strict(body)) for key, body in bodies.items()}
        pg.insert_raw(
            str(path),
            [
                (key, "s", t.effective_status, t.record.scheduled_at, bodies[key])
                for key, t in decoded.items()
            ],
        )
        return
    open_store(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.executemany(
            "INSERT INTO tasks (id, session_id, body) VALUES (?, 's', ?)", bodies.items()
        )
    finally:
        conn.close()


def test_active_targets_with_escaped_names_and_values(tmp_path: Path, backend: str) -> None:
    path = store_path(tmp_path, backend)
    write_raw_store(path, backend)
    s = open_store(path)
    try:
        assert s.count() == len(_RAW_BODIES)
        assert {r[2] for r in s.active_targets()} == {
            "plain-active",
            "plain-none",
            "key-active",
            "value-active",
            "none-newline",
            "record-key",
            "at-key",
            "at-value",
        }
        assert_targets_match(s)
    finally:
        s.close()
