"""Backend-specific format checks: the SQLite schema and the upstream JSON document bytes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from schedlog.host.stores.open import open_store, select_backend
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.task import new_task
from schedlog.rules.records import build_host_record
from tests.host.helpers import T0, ms, task


def test_backend_selection() -> None:
    assert select_backend(Path("a/schedule.json")) == "json"
    assert select_backend(Path("a/schedule.db")) == "sqlite"
    assert select_backend(Path("a/schedule.json"), "sqlite") == "sqlite"


def test_json_document_bytes(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    s = open_store(path)
    assert not path.exists()  # created on the first write
    args = {"prompt": " Café ☕ ", "title": "Title schedule-1", "at": "2026-05-02T09:00:00Z"}
    s.insert(new_task("s-é", build_host_record(args, id="schedule-1", now=T0)))
    s.close()
    assert path.read_text("utf-8") == (
        "{\n"
        '  "unit": {\n'
        '    "name": "schedule",\n'
        '    "version": 1\n'
        "  },\n"
        '  "global": null,\n'
        '  "tables": {\n'
        '    "tasks": {\n'
        '      "schedule-1": {\n'
        '        "sessionId": "s-é",\n'
        '        "record": {\n'
        '          "id": "schedule-1",\n'
        '          "kind": "at",\n'
        '          "title": "Title schedule-1",\n'
        '          "prompt": "Café ☕",\n'
        '          "scheduledAt": "2026-05-02T09:00:00.000Z"\n'
        "        },\n"
        '        "status": "active",\n'
        '        "deliveryHistory": {\n'
        '          "records": [],\n'
        '          "earlierRecordsUnavailable": false\n'
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n"
    )


def test_json_update_keeps_position_and_absent_members(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(
        '{"unit":{"name":"schedule","version":1},"global":null,"tables":{"tasks":{'
        '"a":{"sessionId":"s","record":{"id":"a","kind":"at","title":"A","prompt":"p",'
        '"scheduledAt":"2026-05-02T09:00:00.000Z"}},'
        '"b":{"sessionId":"s","record":{"id":"b","kind":"at","title":"B","prompt":"p",'
        '"scheduledAt":"2026-05-02T09:00:00.000Z"}}}}}'
    )
    s = open_store(path)
    st = s.get("a")
    assert st is not None and st.task.status is None and st.task.history is None
    s.insert(task("c"))
    s.close()
    text = path.read_text()
    assert text.index('"a"') < text.index('"b"') < text.index('"c"')
    # untouched tasks are not given a status or a history by someone else's write
    assert text.count('"status"') == 1 and text.count('"deliveryHistory"') == 1


def test_sqlite_schema(tmp_path: Path) -> None:
    path = tmp_path / "schedule.db"
    s = open_store(path)
    assert isinstance(s, SqliteTaskStore)
    s.insert(task("schedule-1", at="2026-05-02T09:00:00Z"))
    s.insert(task("schedule-2", at="2026-05-01T09:00:00Z"))
    assert s.earliest_active_target() == ms("2026-05-01T09:00:00.000Z")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert dict(conn.execute("SELECT key, value FROM schedlog_meta")) == {
            "unit.name": "schedule",
            "unit.version": "1",
            "schedlog.schema": "2",  # it can hold paused tasks (docs/protocol.md#pause)
        }
        cols = [r[1] for r in conn.execute("PRAGMA table_info(tasks)")]
        assert cols == ["seq", "id", "session_id", "body"]
        rows = conn.execute("SELECT seq, id, session_id FROM tasks ORDER BY seq").fetchall()
        assert rows == [(1, "schedule-1", "s-1"), (2, "schedule-2", "s-1")]
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT seq FROM tasks WHERE session_id = ? ORDER BY seq", ("s",)
        ).fetchall()
        assert "tasks_by_session" in str(plan)
    finally:
        conn.close()
        s.close()


def test_sqlite_active_targets_fall_back_to_decoding(tmp_path: Path) -> None:
    """Should SQLite's JSON functions ever refuse a body the strict decoder accepted at open,
    the index rows come from decoding every task instead of failing."""
    s = open_store(tmp_path / "schedule.db")
    assert isinstance(s, SqliteTaskStore)
    try:
        s.insert(task("schedule-1", at="2026-05-02T09:00:00Z"))
        s.insert(task("schedule-2", at="2026-05-01T09:00:00Z"))
        expected = [(ms("2026-05-02T09:00:00.000Z"), 1, "schedule-1")]
        expected.append((ms("2026-05-01T09:00:00.000Z"), 2, "schedule-2"))

        def refuse(body: str, path: str) -> str:
            raise ValueError("malformed JSON")

        # Overrides the built-in for statements prepared from now on (so before the first call:
        # a statement the connection has cached keeps the built-in).
        s._conn.create_function("json_extract", 2, refuse)
        with pytest.raises(sqlite3.Error):
            s._conn.execute("SELECT json_extract('{}', '$.a')").fetchone()
        assert list(s.active_targets()) == expected
    finally:
        s.close()


def test_sqlite_earliest_active_target_reads_escaped_names(tmp_path: Path) -> None:
    """A task whose status is written ``"st\\u0061tus":"inactive"`` is not active: the earliest
    active target is that of the decoded tasks, even when such a task is the earliest."""
    path = tmp_path / "schedule.db"
    s = open_store(path)
    s.insert(task("schedule-1", at="2026-05-02T09:00:00Z"))
    s.close()
    body = (
        '{"sessionId":"s-1","record":{"id":"schedule-0","kind":"at","title":"T","prompt":"p",'
        '"scheduledAt":"2026-05-01T00:00:00.000Z"},"st\\u0061tus":"inactive"}'
    )
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(
            "INSERT INTO tasks (id, session_id, body) VALUES ('schedule-0', 's-1', ?)", (body,)
        )
    finally:
        conn.close()
    s = open_store(path)
    try:
        assert isinstance(s, SqliteTaskStore)
        decoded = [st.task.record.scheduled_at for st in s.tasks() if st.task.active]
        assert s.earliest_active_target() == min(decoded) == ms("2026-05-02T09:00:00.000Z")
    finally:
        s.close()
