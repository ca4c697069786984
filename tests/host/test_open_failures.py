"""Open failures (docs/protocol.md#open-failures): the right code, in the stated order, and the
files unchanged (checked by hashing), with no -wal/-shm companions created for a refused SQLite
file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from schedlog.errors import StoreOpenError
from schedlog.host.stores.open import open_store
from schedlog.host.stores.sqlite import SCHEMA
from tests.host.helpers import sha256_files

UNIT = {"name": "schedule", "version": 1}
RECORD = {
    "id": "schedule-1",
    "kind": "at",
    "title": "T",
    "prompt": "p",
    "scheduledAt": "2026-05-02T09:00:00.000Z",
}
GOOD_TASK = {"sessionId": "s-1", "record": RECORD}


def doc(tasks: object = None, **top: object) -> str:
    value: dict[str, object] = {"unit": UNIT, "global": None, "tables": {"tasks": tasks or {}}}
    value.update(top)
    return json.dumps(value)


JSON_CASES = [
    ("not-json", "{", "malformed-medium"),
    ("duplicate-key", '{"unit":1,"unit":2}', "malformed-medium"),
    ("empty-file", "", "malformed-medium"),
    ("array-top", "[]", "malformed-medium"),
    ("extra-top-key", doc(extra=1), "malformed-medium"),
    ("unit-name", doc(unit={"name": "other", "version": 1}), "malformed-medium"),
    ("global-not-null", doc(**{"global": {}}), "malformed-medium"),
    ("version-2", doc(unit={"name": "schedule", "version": 2}), "version-mismatch"),
    (
        "version-before-tables",
        doc(unit={"name": "schedule", "version": 2}, tables=[]),
        "version-mismatch",
    ),
    ("tasks-array", doc(tables={"tasks": []}), "malformed-medium"),
    ("tables-extra", doc(tables={"tasks": {}, "x": {}}), "malformed-medium"),
    ("task-key-differs", doc({"other": GOOD_TASK}), "invalid-record"),
    (
        "task-no-title",
        doc({"schedule-1": {**GOOD_TASK, "record": {**RECORD, "title": None}}}),
        "invalid-record",
    ),
    ("task-extra-member", doc({"schedule-1": {**GOOD_TASK, "x": 1}}), "invalid-record"),
    (
        "receipt-without-history-record",
        doc(
            {
                "schedule-1": {
                    **GOOD_TASK,
                    "lastDelivery": {
                        "scheduledAt": "2026-05-02T09:00:00.000Z",
                        "deliveredAt": "2026-05-02T09:00:01.000Z",
                        "messageId": "m",
                    },
                    "deliveryHistory": {"records": [], "earlierRecordsUnavailable": False},
                }
            }
        ),
        "invalid-record",
    ),
]


@pytest.mark.parametrize(
    ("text", "code"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES]
)
def test_json_open_failure_leaves_bytes(tmp_path: Path, text: str, code: str) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(text)
    before = sha256_files(path)
    with pytest.raises(StoreOpenError) as info:
        open_store(path)
    assert info.value.code == code
    assert sha256_files(path) == before
    # the lock was released: once fixed, the store opens
    path.write_text(doc({"schedule-1": GOOD_TASK}))
    s = open_store(path)
    assert [st.task.id for st in s.tasks()] == ["schedule-1"]
    s.close()


def _sqlite(
    path: Path, *, script: str = SCHEMA, rows: list[tuple[str, str, str]] | None = None
) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.executemany("INSERT INTO tasks (id, session_id, body) VALUES (?, ?, ?)", rows or [])
    conn.commit()
    conn.close()


GOOD_ROW = ("schedule-1", "s-1", json.dumps(GOOD_TASK))


def _make(kind: str, path: Path) -> None:
    if kind == "garbage":
        path.write_bytes(b"this is not an sqlite database at all" * 100)
    elif kind == "no-meta":
        _sqlite(path, script=SCHEMA.replace("schedlog_meta", "other_meta"))
    elif kind == "no-tasks-table":
        conn = sqlite3.connect(path)
        conn.executescript(
            "CREATE TABLE schedlog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO schedlog_meta VALUES ('unit.name','schedule'),('unit.version','1');"
            "PRAGMA user_version = 1;"
        )
        conn.close()
    elif kind == "user-version-2":
        _sqlite(path, script=SCHEMA.replace("user_version = 1", "user_version = 2"))
    elif kind == "unit-version-2":
        _sqlite(path, script=SCHEMA.replace("('unit.version', '1')", "('unit.version', '2')"))
    elif kind == "bad-body":
        _sqlite(path, rows=[("schedule-1", "s-1", "{not json")])
    elif kind == "id-differs":
        _sqlite(path, rows=[("schedule-2", "s-1", GOOD_ROW[2])])
    elif kind == "session-differs":
        _sqlite(path, rows=[("schedule-1", "s-2", GOOD_ROW[2])])
    else:  # pragma: no cover
        raise AssertionError(kind)


SQLITE_CASES = [
    ("garbage", "malformed-medium"),
    ("no-meta", "malformed-medium"),
    ("no-tasks-table", "malformed-medium"),
    ("user-version-2", "version-mismatch"),
    ("unit-version-2", "version-mismatch"),
    ("bad-body", "invalid-record"),
    ("id-differs", "invalid-record"),
    ("session-differs", "invalid-record"),
]


@pytest.mark.parametrize(("kind", "code"), SQLITE_CASES, ids=[c[0] for c in SQLITE_CASES])
def test_sqlite_open_failure_leaves_bytes(tmp_path: Path, kind: str, code: str) -> None:
    path = tmp_path / "schedule.db"
    _make(kind, path)
    companions = [Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")]
    before = sha256_files(path, *companions)
    with pytest.raises(StoreOpenError) as info:
        open_store(path)
    assert info.value.code == code
    assert sha256_files(path, *companions) == before
    assert all(not p.exists() for p in companions)


def test_sqlite_fixed_store_reopens_with_same_identities(tmp_path: Path) -> None:
    path = tmp_path / "schedule.db"
    _sqlite(path, rows=[GOOD_ROW, ("schedule-2", "s-1", "{not json")])
    with pytest.raises(StoreOpenError):
        open_store(path)
    conn = sqlite3.connect(path)
    body = json.dumps({**GOOD_TASK, "record": {**RECORD, "id": "schedule-2"}})
    conn.execute("UPDATE tasks SET body = ? WHERE id = 'schedule-2'", (body,))
    conn.commit()
    conn.close()
    s = open_store(path)
    try:
        assert [(st.seq, st.task.id) for st in s.tasks()] == [(1, "schedule-1"), (2, "schedule-2")]
    finally:
        s.close()


def test_zero_length_sqlite_file_is_initialized(tmp_path: Path) -> None:
    path = tmp_path / "schedule.db"
    path.write_bytes(b"")
    s = open_store(path)
    assert s.count() == 0
    s.close()
