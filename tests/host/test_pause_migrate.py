"""``schedlog store migrate`` for pause and resume (docs/decisions.md#pause-and-resume): a store
written by 0.2.0 (tests/host/release_020.py) opens after migrating, keeps its tasks, and can
then hold a paused task; on SQLite it also opens before, refusing only the pause."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import structlog

from schedlog.cli.main import main as schedlog_main
from schedlog.errors import StoreOpenError
from schedlog.host.service import HostService
from schedlog.host.stores.base import store_pausable
from schedlog.host.stores.open import open_store
from schedlog.runtime.clock import VirtualClock
from tests import pg
from tests.host.helpers import T0, MemorySessions, ms
from tests.host.release_020 import PG_MIGRATIONS, SQLITE_SCHEMA, TASK_BODY, TASK_ID


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """The commands configure diagnostics on the streams of the moment; undo it after."""
    yield
    structlog.reset_defaults()


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = schedlog_main(list(argv))
    return code, json.loads(out.getvalue())


def sqlite_020(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SQLITE_SCHEMA)
        conn.execute(
            "INSERT INTO tasks (id, session_id, body) VALUES (?, ?, ?)", (TASK_ID, "s-1", TASK_BODY)
        )
        conn.commit()
    finally:
        conn.close()


def pause_020(store_path: Path | str) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        svc = HostService(
            open_store(store_path), MemorySessions(), VirtualClock(T0), auto_drive=False
        )
        try:
            return await svc.pause("s-1", TASK_ID)
        finally:
            await svc.aclose()

    return asyncio.run(main())


def test_an_sqlite_store_of_020_opens_migrates_and_then_pauses(tmp_path: Path) -> None:
    path = tmp_path / "schedule.db"
    sqlite_020(path)
    store = open_store(path)
    try:  # it opens as it is, and cannot hold a pause yet
        assert not store_pausable(store)
        assert [st.task.id for st in store.tasks()] == [TASK_ID]
    finally:
        store.close()
    before = path.read_bytes()
    assert pause_020(path) == {"id": TASK_ID, "changed": False, "code": "pause_unsupported"}
    assert path.read_bytes() == before

    assert cli("store", "migrate", "--store", str(path)) == (
        0,
        {"store": str(path), "from": 1, "to": 2, "applied": [2]},
    )
    assert cli("store", "migrate", "--store", str(path))[1]["applied"] == []  # once
    conn = sqlite3.connect(path)
    try:  # the upstream version stays 1, and the task body is untouched
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)
        assert conn.execute("SELECT body FROM tasks").fetchall() == [(TASK_BODY,)]
    finally:
        conn.close()
    assert pause_020(path)["changed"] is True
    store = open_store(path)
    try:
        st = store.get(TASK_ID)
        assert st is not None and st.task.paused_at == T0
        assert list(store.active_targets()) == []  # out of the timer index
    finally:
        store.close()
    code, value = cli("validate", "--store", str(path))
    assert code == 0, value


def test_sqlite_migrate_refuses_an_open_store_and_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "schedule.db"
    sqlite_020(path)
    store = open_store(path)
    try:
        code, value = cli("store", "migrate", "--store", str(path))
        assert (code, value["error"]["code"]) == (1, "store-locked")
    finally:
        store.close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schedlog_meta VALUES ('schedlog.schema', '3')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreOpenError) as info:
        open_store(path)
    assert info.value.code == "version-mismatch"
    code, value = cli("store", "migrate", "--store", str(path))
    assert (code, value["error"]["code"]) == (1, "version-mismatch")
    assert cli("store", "migrate", "--store", str(path), "--to", "7")[0] == 2


def test_an_unmigrated_sqlite_store_refuses_a_paused_body(tmp_path: Path) -> None:
    """Nothing reads a pause that a later write would drop: in a store that cannot hold one,
    ``pausedAt`` is an unknown member (invalid-record)."""
    path = tmp_path / "schedule.db"
    sqlite_020(path)
    paused = TASK_BODY.replace(
        '"status":"active"', '"status":"active","pausedAt":"2026-05-01T06:00:00.000Z"'
    )
    conn = sqlite3.connect(path)
    conn.execute("UPDATE tasks SET body = ?", (paused,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreOpenError) as info:
        open_store(path)
    assert info.value.code == "invalid-record" and "pausedAt" in info.value.message


# --- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture
def database() -> Iterator[str]:
    yield from pg.fresh_database()


def postgres_020(url: str) -> None:
    psycopg = pg.require_psycopg()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schedlog_schema (version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, name, sql in PG_MIGRATIONS:
            with conn.transaction():
                conn.execute(sql.encode())
                conn.execute(
                    "INSERT INTO schedlog_schema (version, name) VALUES (%s, %s)", (version, name)
                )
    pg.insert_raw(url, [(TASK_ID, "s-1", "active", ms("2026-05-01T06:10:00.000Z"), TASK_BODY)])


def test_a_postgresql_store_of_020_opens_after_migrating_and_pauses(database: str) -> None:
    postgres_020(database)
    with pytest.raises(StoreOpenError) as info:
        open_store(database)
    assert info.value.code == "version-mismatch" and "store migrate" in info.value.message
    code, value = cli("store", "migrate", "--store", database)
    assert code == 0 and (value["from"], value["to"], value["applied"]) == (3, 5, [4, 5])
    psycopg = pg.require_psycopg()
    with psycopg.connect(database, autocommit=True) as listener:
        listener.execute("LISTEN schedlog_changed")
        assert pause_020(database)["changed"] is True
        notes = [json.loads(n.payload) for n in listener.notifies(timeout=5, stop_after=1)]
    kinds = [change["kind"] for note in notes for change in note["changes"]]
    assert kinds == ["paused"]
    assert pg.sql(database, "SELECT status FROM schedlog_tasks") == [("paused",)]
    store = open_store(database)
    try:
        st = store.get(TASK_ID)
        assert st is not None and st.task.paused_at == T0 and st.task.active
        assert store.active_count() == 0
    finally:
        store.close()
    code, value = cli("validate", "--store", database)
    assert code == 0, value


def test_a_postgresql_status_column_that_disagrees_with_the_body_is_invalid(database: str) -> None:
    pg.reset(database)
    pg.insert_raw(database, [(TASK_ID, "s-1", "paused", ms("2026-05-01T06:10:00.000Z"), TASK_BODY)])
    store = open_store(database)
    try:
        assert store.get(TASK_ID) is None  # reported invalid, never delivered
    finally:
        store.close()
