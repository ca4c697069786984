"""``host run`` on an SQLite store delivers the rows that may be due before it validates the rest
(docs/decisions.md, "Start-up: due rows first").

* The first read (``sqlite_load.DUE_ROWS``) never leaves out a valid, active, unpaused row due
  by the bound, however the body is spelled (escaped names and values, spaces, member order,
  hostile text).
* The early start gives the same store, the same session logs and the same timer index as
  the start that validates everything first.
* A bad row after the due rows: the due rows are delivered once, the bad row is reported with
  the code and message the full validation gives, and it is never written.
* A crash during the background validation loses and doubles nothing.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from schedlog.cli._host import EARLY_MARGIN_MS, BatchClock, run_host
from schedlog.errors import StoreOpenError
from schedlog.eventlog.reader import read_log
from schedlog.host.due import LocalTimerIndex, timer_index
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.stores.sqlite_load import DUE_ROWS, ValidationStopped, check_row
from schedlog.host.stores.sqlite_validate import validate_sqlite_store
from schedlog.host.task import Task
from schedlog.rules.instants import format_instant
from schedlog.rules.text import js_dumps
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0 as TASKS_T0
from tests.host.helpers import sha256_files, task
from tests.host.test_host_run import RUNNER
from tests.host.test_task_typed import T0, _db, documents, row_lists

MINUTE = 60_000

# --- the first read leaves out no due row ---------------------------------------------------


def _respell(body: str, how: str, doc: dict[str, Any]) -> str:
    """The same task document, spelled another way that the strict reader accepts."""
    if how == "name-escape":  # the record's scheduledAt is the first in writing order
        return body.replace('"scheduledAt":', '"sched\\u0075ledAt":', 1)
    if how == "value-escape":
        return body.replace('"scheduledAt":"2', '"scheduledAt":"\\u0032', 1)
    if how == "spaces":
        return body.replace('"scheduledAt":', '"scheduledAt" : ', 1)
    if how == "record-last":  # the receipts (with their own scheduledAt) come first
        rest = {k: v for k, v in doc.items() if k != "record"}
        return js_dumps({**rest, "record": doc["record"]})
    return body


@st.composite
def spelled_rows(draw: st.DrawFn) -> list[tuple[int, Any, Any, Any]]:
    rows = draw(row_lists())
    out = []
    for seq, key, session, body in rows:
        if isinstance(body, str) and isinstance(key, str) and draw(st.booleans()):
            doc = draw(documents(key, session))
            how = draw(st.sampled_from(["name-escape", "value-escape", "spaces", "record-last"]))
            body = _respell(js_dumps(doc), how, doc)
        out.append((seq, key, session, body))
    return out


def _due_by(row: tuple[int, Any, Any, Any], bound: int, pausable: bool) -> bool:
    """Whether the reference accepts ``row`` as an active, unpaused task due by ``bound``."""
    try:
        stored = check_row(row, pausable=pausable)
    except StoreOpenError:
        return False
    t = stored.task
    return t.active and not t.paused and t.record.scheduled_at <= bound


@given(
    rows=st.one_of(row_lists(), spelled_rows()),
    bound=st.integers(T0 - 10**9, T0 + 10**11),
    pausable=st.booleans(),
)
def test_the_first_read_leaves_out_no_due_row(rows: Any, bound: int, pausable: bool) -> None:
    conn = _db(rows)
    if conn is None:
        return
    stored = conn.execute("SELECT seq, id, session_id, body FROM tasks ORDER BY seq").fetchall()
    read = {row[0] for row in conn.execute(DUE_ROWS, (format_instant(bound),))}
    due = {row[0] for row in stored if _due_by(row, bound, pausable)}
    assert due <= read


def test_respelled_due_rows_are_valid_and_read() -> None:
    """Each respelling of a due task is still a valid task (so the property above tests it)."""
    doc = {
        "sessionId": "s-1",
        "record": {
            "id": "schedule-1",
            "kind": "at",
            "title": "T",
            "prompt": "p",
            "scheduledAt": format_instant(T0),
        },
        "status": "active",
        "lastDelivery": {
            "scheduledAt": "2099-01-01T00:00:00.000Z",
            "deliveredAt": "2099-01-01T00:00:00.000Z",
            "messageId": "m-1",
        },
        "deliveryHistory": {
            "records": [
                {
                    "scheduledAt": "2099-01-01T00:00:00.000Z",
                    "deliveredAt": "2099-01-01T00:00:00.000Z",
                    "messageId": "m-1",
                }
            ],
            "earlierRecordsUnavailable": False,
        },
    }
    for how in ["name-escape", "value-escape", "spaces", "record-last"]:
        body = _respell(js_dumps(doc), how, doc)
        assert body != js_dumps(doc)
        row = (1, "schedule-1", "s-1", body)
        assert _due_by(row, T0, True), how
        conn = _db([row])
        assert conn is not None
        assert [r[0] for r in conn.execute(DUE_ROWS, (format_instant(T0),))] == [1], how


# --- the early start equals the full one ---------------------------------------------------

#: Half an hour after the tasks of tests.host.helpers were made.
NOW = TASKS_T0 + 30 * MINUTE


def _store(path: Path, tasks: list[Task], edits: dict[str, str] | None = None) -> None:
    store = SqliteTaskStore.open(path)
    store.insert_many(tasks)
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    for task_id, body in (edits or {}).items():
        conn.execute("UPDATE tasks SET body = ? WHERE id = ?", (body, task_id))
    conn.close()


def _rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT seq, id, session_id, body FROM tasks ORDER BY seq").fetchall()
    finally:
        conn.close()


def _logs(sessions: Path) -> dict[str, list[Any]]:
    return {
        p.name: [(e.type, e.data) for e in read_log(p).events]
        for p in sorted(sessions.glob("*.jsonl"))
    }


def _full_keys(path: Path) -> list[tuple[int, int, str]]:
    keys: list[tuple[int, int, str]] = []
    validate_sqlite_store(path, lock_held=True, targets=keys)
    return keys


async def _deliver(path: Path, sessions: Path, early: bool, later: int) -> list[Any]:
    """Open (early or not), deliver what is due at NOW, validate the rest (early), deliver what
    is due at ``later``; the index after each step, compared with the reference."""
    clock = BatchClock()
    clock.now = NOW
    bound = format_instant(NOW + EARLY_MARGIN_MS) if early else None
    store, validation = SqliteTaskStore.open_early(path, bound)
    directory = SessionsDirectory(str(sessions))
    service = HostService(store, directory, clock, auto_drive=False)
    index = service.core.due_tasks
    assert isinstance(index, LocalTimerIndex)
    sent = [d.to_json() for d in await service.tick()]
    if validation is not None:
        index.widen(timer_index(validation.run()))
    assert list(index._index) == list(SortedList(_full_keys(path)))
    index._index._check()
    clock.now = later
    sent += [d.to_json() for d in await service.tick()]
    assert list(index._index) == list(SortedList(_full_keys(path)))
    await service.aclose()
    directory.close()
    return sent


@st.composite
def task_sets(draw: st.DrawFn) -> list[Task]:
    out = []
    for i in range(draw(st.integers(1, 10))):
        minutes = draw(st.sampled_from([1, 10, 29, 30, 31, 45, 90, 600]))
        kind = draw(st.sampled_from(["after", "every"]))
        selector = {"after_seconds": minutes * 60} if kind == "after" else {"every_seconds": 3600}
        t = task(f"schedule-{i}", session=f"s-{draw(st.integers(0, 2))}", **selector)
        if kind == "every":  # every hour from T0: its first target, minutes in
            rec = msgspec.structs.replace(t.record, scheduled_at=TASKS_T0 + minutes * MINUTE)
            t = msgspec.structs.replace(t, record=rec)
        status = draw(st.sampled_from(["active"] * 4 + ["inactive", "paused"]))
        if status == "inactive":
            t = msgspec.structs.replace(t, status="inactive")
        elif status == "paused":
            t = msgspec.structs.replace(t, paused_at=TASKS_T0)
        out.append(t)
    return out


@settings(max_examples=30, deadline=None)
@given(tasks=task_sets(), later=st.sampled_from([NOW, NOW + 20 * MINUTE, NOW + 10 * 60 * MINUTE]))
def test_the_early_start_gives_the_same_store_and_logs(
    tmp_path_factory: pytest.TempPathFactory, tasks: list[Task], later: int
) -> None:
    root = tmp_path_factory.mktemp("early")
    _store(root / "template.db", tasks)
    results = []
    for early in (False, True):
        side = root / ("early" if early else "full")
        side.mkdir()
        shutil.copyfile(root / "template.db", side / "s.db")
        sent = asyncio.run(_deliver(side / "s.db", side / "sessions", early, later))
        results.append((sent, _rows(side / "s.db"), _logs(side / "sessions")))
    assert results[0] == results[1]


def _two_due_and_more(path: Path, n: int = 40) -> list[Task]:
    tasks = [task(f"schedule-{i}", session=f"s-{i % 3}", after_seconds=600 * 60) for i in range(n)]
    for i in (0, 5):  # due at T0 + 10 min, before NOW
        tasks[i] = task(f"schedule-{i}", session=f"s-{i % 3}", after_seconds=600)
    return tasks


def test_a_store_opened_early_reads_only_the_due_rows_first(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store(path, _two_due_and_more(path))
    store, validation = SqliteTaskStore.open_early(path, format_instant(NOW))
    assert validation is not None and validation.early_ids == {"schedule-0", "schedule-5"}
    assert sorted(k[2] for k in store.active_targets()) == ["schedule-0", "schedule-5"]
    rest = validation.run()
    assert len(rest) == 38 and not {"schedule-0", "schedule-5"} & {k[2] for k in rest}
    store.close()


def test_nothing_due_opens_as_before(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store(path, _two_due_and_more(path))
    store, validation = SqliteTaskStore.open_early(path, format_instant(TASKS_T0))
    assert validation is None and len(list(store.active_targets())) == 40
    store.close()


def test_a_crash_left_log_is_read_first_through_a_private_copy(tmp_path: Path) -> None:
    """A store with a pending write-ahead log (a host that was killed): the first read sees the
    rows committed in the log; the original files are untouched until the store opens."""
    path = tmp_path / "s.db"
    _store(path, _two_due_and_more(path))
    writer = SqliteTaskStore.open(path)
    writer.insert(task("schedule-new", after_seconds=60))  # due at T0 + 1 min, in the log only
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 0
    copy = tmp_path / "copy.db"
    shutil.copyfile(path, copy)
    shutil.copyfile(wal, Path(f"{copy}-wal"))
    writer.close()
    from schedlog.host.stores.sqlite_validate import read_due_first

    before = sha256_files(copy, Path(f"{copy}-wal"), Path(f"{copy}-shm"))
    first = read_due_first(copy, format_instant(NOW))
    assert first is not None and first.ids == {"schedule-0", "schedule-5", "schedule-new"}
    assert sha256_files(copy, Path(f"{copy}-wal"), Path(f"{copy}-shm")) == before
    store, validation = SqliteTaskStore.open_early(copy, format_instant(NOW))
    assert validation is not None and validation.early_ids == first.ids
    rest = validation.run()
    assert len(rest) == 38
    keys = sorted(list(store.active_targets()) + rest)
    assert keys == sorted(_full_keys(copy)) and len(keys) == 41
    store.close()
    # nothing due by the bound: the whole store first, as before
    shutil.copyfile(path, copy)
    store, validation = SqliteTaskStore.open_early(copy, format_instant(TASKS_T0))
    assert validation is None
    store.close()


def test_the_chunk_loop_stops_when_cancelled(tmp_path: Path) -> None:
    from schedlog.host.stores import sqlite_load

    path = tmp_path / "s.db"
    _store(path, _two_due_and_more(path))
    cancel = threading.Event()
    cancel.set()
    conn = sqlite3.connect(path)
    with pytest.raises(ValidationStopped):
        sqlite_load.load_rows(conn, pausable=True, targets=[], cancel=cancel)
    conn.close()


def test_the_validation_stops_when_cancelled(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store(path, _two_due_and_more(path))
    store, validation = SqliteTaskStore.open_early(path, format_instant(NOW))
    assert validation is not None
    validation.cancel.set()
    with pytest.raises(ValidationStopped):
        validation.run()
    store.close()


def test_host_run_opened_early_reports_the_whole_store_when_started(tmp_path: Path) -> None:
    from schedlog.cli.run_log import configure_run_logging

    path, sessions = tmp_path / "s.db", tmp_path / "sessions"
    _store(path, _two_due_and_more(path))
    err = io.StringIO()
    configure_run_logging("json", "info", err)

    async def scenario() -> int:
        clock = VirtualClock(NOW)
        stop = asyncio.Event()
        runner = asyncio.create_task(
            run_host(str(path), None, str(sessions), clock=clock, stop=stop, err=err)
        )
        await clock.run_until(NOW + MINUTE)
        for _ in range(6000):  # the validation thread, on the real clock (at most 60 s)
            if '"host.started"' in err.getvalue():
                break
            await asyncio.sleep(0.01)
        stop.set()
        return await runner

    try:
        assert asyncio.run(scenario()) == 0
    finally:
        structlog.reset_defaults()
    events = [json.loads(line) for line in err.getvalue().splitlines()]
    names = [e["event"] for e in events]
    assert sorted(names) == [
        "delivery.burst",  # two messages in one pass
        "delivery.sent",
        "delivery.sent",
        "host.started",
        "host.stopped",
    ]
    assert names[-1] == "host.stopped"
    started = next(e for e in events if e["event"] == "host.started")
    assert started["active"] == 38  # every other task, the two delivered ones done


# --- a bad row -----------------------------------------------------------------------------


def _bad_body(t: Task) -> str:
    """A body SQLite reads as not due (its scheduledAt is far ahead) that the strict reader
    refuses (an empty prompt)."""
    doc = json.loads(js_dumps(_encode(t)))
    doc["record"]["prompt"] = ""
    return js_dumps(doc)


def _encode(t: Task) -> Any:
    from schedlog.host.task import encode_task

    return encode_task(t)


def test_a_due_bad_row_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    tasks = _two_due_and_more(path)
    _store(path, tasks, {"schedule-5": _bad_body(tasks[5])})
    with pytest.raises(StoreOpenError) as full:
        SqliteTaskStore.open(path)
    before = sha256_files(path, Path(f"{path}-wal"), Path(f"{path}-shm"))
    with pytest.raises(StoreOpenError) as early:
        SqliteTaskStore.open_early(path, format_instant(NOW))
    assert (early.value.code, early.value.message) == (full.value.code, full.value.message)
    assert sha256_files(path, Path(f"{path}-wal"), Path(f"{path}-shm")) == before


def test_a_bad_row_after_the_due_rows(tmp_path: Path) -> None:
    path, sessions = tmp_path / "s.db", tmp_path / "sessions"
    tasks = _two_due_and_more(path)
    bad = _bad_body(tasks[20])
    _store(path, tasks, {"schedule-20": bad})
    with pytest.raises(StoreOpenError) as full:
        SqliteTaskStore.open(path)
    err = io.StringIO()

    async def scenario() -> int:
        clock = VirtualClock(NOW)
        stop = asyncio.Event()
        runner = asyncio.create_task(
            run_host(str(path), None, str(sessions), clock=clock, stop=stop, err=err)
        )
        await clock.run_until(NOW + MINUTE)
        done, _ = await asyncio.wait({runner}, timeout=60)  # it stops by itself
        if not done:
            stop.set()
        return await runner

    assert asyncio.run(scenario()) == 1
    assert json.loads(err.getvalue().splitlines()[-1]) == {"error": full.value.to_value()}
    rows = {row[1]: row[3] for row in _rows(path)}
    assert rows["schedule-20"] == bad  # never written
    delivered = [
        entry["id"]
        for events in _logs(sessions).values()
        for _type, data in events
        for entry in data["reminders"]
    ]
    assert sorted(delivered) == ["schedule-0", "schedule-5"]  # once each, and committed
    for task_id in ("schedule-0", "schedule-5"):
        assert json.loads(rows[task_id])["status"] == "inactive"


# --- a crash during the background validation ------------------------------------------------


def test_a_crash_during_the_background_validation(tmp_path: Path) -> None:
    """Killed at the third chunk of the validation (the due rows delivered, or not yet): the
    next start delivers each due reminder exactly once."""
    from schedlog.cli.host_cmd import HostBatch
    from schedlog.host.stores import sqlite_load

    path, sessions = tmp_path / "s.db", tmp_path / "sessions"
    now = time.time_ns() // 1_000_000  # host run is on the real clock
    store = SqliteTaskStore.open(path)
    n = 3 * sqlite_load.CHUNK_ROWS
    store.insert_many(
        [
            task(f"schedule-{i}", session=f"s-{i % 2}", now=now - (600_000 if i < 2 else 0))
            for i in range(n)
        ]
    )
    store.close()
    env = {**os.environ, "SCHEDLOG_CRASHPOINT": "sqlite_load.between_chunks@3"}
    command = ["host", "run", "--store", str(path), "--sessions", str(sessions)]
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, *command],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    batch = HostBatch(str(path), str(sessions))
    out = io.StringIO()
    batch.serve([json.dumps({"op": "tick", "now": format_instant(now + 60_000)})], out)
    batch.close()
    delivered = [
        entry["id"]
        for events in _logs(sessions).values()
        for _type, data in events
        for entry in data["reminders"]
    ]
    assert sorted(delivered) == ["schedule-0", "schedule-1"]
