"""The PostgreSQL backend beyond the contract suite: schema versions and migrations, CHECK
constraints, per-row invalid records, validation, lost connections and the CLI.

One fresh database per module (tests/pg.py); each test resets and migrates it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from schedlog.cli.host_cmd import HostBatch
from schedlog.cli.main import build_parser, main
from schedlog.errors import StoreOpenError
from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.stores.base import StoreWriteError
from schedlog.host.stores.open import open_store
from schedlog.host.task import encode_task
from schedlog.host.validate import validate_store_report
from schedlog.rules.text import js_dumps
from schedlog.runtime.clock import VirtualClock
from tests import pg
from tests.host.helpers import T0, MemorySessions, task
from tests.pg import sql

psycopg = pg.require_psycopg()

from schedlog.host.stores.pg_admin import migrate, schema_version  # noqa: E402
from schedlog.host.stores.pg_rows import StoreConflictError, redact_url  # noqa: E402
from schedlog.host.stores.pg_schema import SCHEMA_VERSION  # noqa: E402
from schedlog.host.stores.postgres import PostgresTaskStore  # noqa: E402


def blank(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return url


# --- schema versions and migrations ---------------------------------------------------------


def test_unmigrated_database_is_refused_and_untouched(url: str) -> None:
    blank(url)
    with pytest.raises(StoreOpenError) as info:
        open_store(url)
    assert info.value.code == "version-mismatch"
    assert "schedlog store migrate" in info.value.message
    assert sql(url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == [(0,)]


def test_migrations_step_forward_and_are_idempotent(url: str) -> None:
    blank(url)
    assert migrate(url, 1) == {"store": url, "from": 0, "to": 1, "applied": [1]}
    assert schema_version(url) == 1
    with pytest.raises(StoreOpenError) as info:
        open_store(url)
    assert info.value.code == "version-mismatch" and "schema version 1" in info.value.message
    assert migrate(url)["applied"] == list(range(2, SCHEMA_VERSION + 1))
    assert migrate(url) == {
        "store": url,
        "from": SCHEMA_VERSION,
        "to": SCHEMA_VERSION,
        "applied": [],
    }
    open_store(url).close()


def test_newer_schema_is_refused(url: str) -> None:
    sql(url, "INSERT INTO schedlog_schema (version, name) VALUES (99, 'future')")
    for attempt in (lambda: open_store(url), lambda: migrate(url)):
        with pytest.raises(StoreOpenError) as info:
            attempt()
        assert info.value.code == "version-mismatch" and "newer" in info.value.message


def test_data_survives_a_migration_from_version_1(url: str) -> None:
    blank(url)
    migrate(url, 1)
    t = task("schedule-old")
    body = js_dumps(encode_task(t))
    pg.insert_raw(url, [(t.id, t.session_id, "active", t.record.scheduled_at, body)])
    migrate(url)
    s = open_store(url)
    try:
        assert [st.task for st in s.tasks()] == [t]
    finally:
        s.close()


# --- CHECK constraints ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("id", ""),
        ("session_id", ""),
        ("status", "suspended"),
        ("next_at", 253_402_300_800_000),
        ("body", "[]"),
        ("version", 0),
        ("lease_owner", "host-a"),  # a lease owner without lease_until
    ],
)
def test_check_constraints(url: str, column: str, value: object) -> None:
    row: dict[str, object] = {
        "id": "schedule-x",
        "session_id": "s",
        "status": "active",
        "next_at": T0,
        "body": "{}",
    }
    row[column] = value
    names = ", ".join(row)
    marks = ", ".join(["%s"] * len(row))
    with pytest.raises(psycopg.errors.CheckViolation):
        sql(url, f"INSERT INTO schedlog_tasks ({names}) VALUES ({marks})", tuple(row.values()))


def test_engine_columns_follow_the_body(url: str) -> None:
    s = open_store(url)
    try:
        t = task("schedule-1")
        s.insert(t)
        assert sql(url, "SELECT status, next_at, version FROM schedlog_tasks") == [
            ("active", t.record.scheduled_at, 1)
        ]
        s.replace(msgspec.structs.replace(t, status="inactive"))
        assert sql(url, "SELECT status, next_at, version FROM schedlog_tasks") == [
            ("inactive", t.record.scheduled_at, 2)
        ]
        assert s.earliest_active_target() is None
    finally:
        s.close()


# --- invalid records: reported, left untouched, never delivered -----------------------------

CORRUPTIONS = {
    "not-json": ("body", '{"sessionId":}'),
    "bad-member": ("body", '{"sessionId":"s-1","record":{},"status":"active"}'),
    "status-column": ("status", "inactive"),
    "next-at-column": ("next_at", 0),
    "session-column": ("session_id", "s-other"),
}


def corrupt(url: str, task_id: str, how: str) -> None:
    column, value = CORRUPTIONS[how]
    sql(url, f"UPDATE schedlog_tasks SET {column} = %s WHERE id = %s", (value, task_id))


@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_invalid_row_is_reported_untouched_and_never_delivered(url: str, how: str) -> None:
    s = open_store(url)
    good = [task(f"schedule-{i}", after_seconds=60) for i in range(3)]
    for t in good:
        s.insert(t)
    s.close()
    corrupt(url, "schedule-1", how)
    before = sql(url, "SELECT * FROM schedlog_tasks WHERE id = 'schedule-1'")

    async def body() -> tuple[list[Any], Any]:
        clock = VirtualClock(T0 + 3_600_000)
        sessions = MemorySessions()
        service = HostService(open_store(url), sessions, clock, Retention(), auto_drive=False)
        try:
            sent = await service.tick()
            deleted = await service.delete("s-1", "schedule-1")
            stopped = await service.archive_stop("s-1")
            listed = [r.id for r in service.list_records("s-1")]
            return [d.members for d in sent], (deleted, stopped, listed)
        finally:
            await service.aclose()

    with capture_logs() as logs:
        members, (deleted, stopped, listed) = asyncio.run(body())
    assert sorted(m[0].id for m in members) == ["schedule-0", "schedule-2"]
    assert deleted["deleted"] is False and deleted["code"] == "schedule_not_found"
    assert "schedule-1" not in stopped and listed == []
    assert sql(url, "SELECT * FROM schedlog_tasks WHERE id = 'schedule-1'") == before
    reports = [e for e in logs if e["event"] == "store.invalid_record"]
    assert reports and {e["id"] for e in reports} == {"schedule-1"}
    assert all(e["code"] == "invalid-record" for e in reports)
    assert len(reports) == 1  # once per row version, however often it is read

    report = validate_store_report(url, None)
    assert report["ok"] is False and report["tasks"] is None
    assert report["error"]["code"] == "invalid-record"
    assert "'schedule-1'" in report["error"]["message"]
    assert [r["id"] for r in report["invalidRecords"]] == ["schedule-1"]


def test_validate_counts_rows_and_names_every_invalid_one(url: str) -> None:
    s = open_store(url)
    for i in range(5):
        s.insert(task(f"schedule-{i}"))
    s.close()
    assert validate_store_report(url, None) == {
        "path": url,
        "kind": "store",
        "ok": True,
        "tasks": 5,
    }
    corrupt(url, "schedule-3", "not-json")
    corrupt(url, "schedule-1", "status-column")
    report = validate_store_report(url, "postgresql")
    assert [r["id"] for r in report["invalidRecords"]] == ["schedule-1", "schedule-3"]
    assert "and 1 more" in report["error"]["message"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["validate", "--store", url, "--json"]) == 1
    assert json.loads(out.getvalue())["invalidRecords"] == report["invalidRecords"]


def test_validate_unreachable_server_is_store_unreachable() -> None:
    report = validate_store_report("postgresql://nobody@127.0.0.1:1/none", None)
    assert report["ok"] is False and report["error"]["code"] == "store-unreachable"
    with pytest.raises(StoreOpenError) as info:
        open_store("postgresql://nobody@127.0.0.1:1/none")
    assert info.value.code == "store-unreachable"


def test_password_is_redacted() -> None:
    assert redact_url("postgresql://u:secret@h:5/db") == "postgresql://u:***@h:5/db"
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"
    report = validate_store_report("postgresql://u:secret@127.0.0.1:1/db", None)
    assert "secret" not in json.dumps(report)


# --- writes ---------------------------------------------------------------------------------


def test_failed_write_is_not_acknowledged(url: str) -> None:
    s = open_store(url)
    try:
        s.insert(task("schedule-1"))
        with pytest.raises(StoreWriteError):
            s.insert(task("schedule-1"))
        with pytest.raises(StoreWriteError):
            s.insert(task("schedule-\x00"))
        assert s.get("schedule-\x00") is None and s.get("schedule-\ud800") is None
        assert s.count() == 1
    finally:
        s.close()


def test_replace_is_a_compare_and_set_on_the_row_version(url: str) -> None:
    s = open_store(url)
    assert isinstance(s, PostgresTaskStore)
    try:
        t = task("schedule-1")
        s.insert(t)
        with s.atomic():
            st = s.get(t.id)
            assert st is not None
            s.replace(msgspec.structs.replace(t, status="inactive"))
        assert sql(url, "SELECT version FROM schedlog_tasks") == [(2,)]
        # A version read before another writer's commit no longer matches.
        with pytest.raises(StoreConflictError), s.atomic():
            assert s.get(t.id) is not None
            s._versions[t.id] = 1
            s.replace(t)
        assert s.get(t.id) == (st.seq, msgspec.structs.replace(t, status="inactive"))
    finally:
        s.close()


def test_reads_survive_terminated_connections(url: str) -> None:
    s = open_store(url)
    try:
        s.insert(task("schedule-1"))
        sql(
            url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        assert s.count() == 1
        assert s.get("schedule-1") is not None
    finally:
        s.close()


def test_pool_warnings_are_diagnostics(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken pool connection is reported as a ``store.pool_warning`` diagnostic, not as a
    bare stderr line from the standard library (which broke ``host run --log-format json``;
    found by the multi-host fault run)."""
    s = open_store(url)
    try:
        assert isinstance(s, PostgresTaskStore)
        s.insert(task("schedule-1"))
        with capture_logs() as logs:
            with pytest.raises(StoreWriteError), s.atomic():
                assert s.get("schedule-1") is not None
                sql(
                    url,
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (s.owner,),
                )
                s.get("schedule-1")  # the transaction's connection is gone
            assert s.count() == 1
    finally:
        s.close()
    warnings = [e for e in logs if e["event"] == "store.pool_warning"]
    assert warnings, logs
    assert all(e["log_level"] == "warning" and e["error"] for e in warnings)
    assert "discarding closed connection" in warnings[0]["error"]
    assert "connection" not in capsys.readouterr().err


# --- the command line -----------------------------------------------------------------------


def test_store_migrate_command(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    blank(url)
    assert main(["store", "migrate", "--store", url, "--to", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["applied"] == [1]
    assert main(["store", "migrate", "--store", url]) == 0
    assert json.loads(capsys.readouterr().out)["to"] == SCHEMA_VERSION
    assert main(["store", "migrate", "--store", url, "--to", "7"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "invalid_request"


def test_host_batch_on_postgres(url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    hb = HostBatch(url, str(tmp_path / "sessions"))
    out = io.StringIO()
    create = {
        "op": "schedule_create",
        "session": "s-1",
        "now": "2026-05-01T06:00:00Z",
        "args": {"prompt": "p", "title": "T", "after_seconds": 60},
    }
    try:
        hb.serve(
            [json.dumps(create), json.dumps({"op": "tick", "now": "2026-05-01T07:00:00Z"})], out
        )
    finally:
        hb.close()
    created, ticked = (json.loads(line) for line in out.getvalue().splitlines())
    assert ticked["ok"]["delivered"][0]["reminders"][0]["id"] == created["ok"]["id"]
    monkeypatch.setenv("SCHEDLOG_STORE", url)
    args = build_parser().parse_args(["host", "catalog", "--json"])
    assert args.store == url
