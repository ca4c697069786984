"""Batched delivery (schedlog/host/batch.py, docs/operations.md#burst-sizing).

The property: a batched pass leaves the same session logs, byte for byte, and the same store
rows as delivering the same due tasks one group at a time through
:meth:`HostCore.deliver_group` (the readable reference), and reports the same messages.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlog.host.batch import BatchDelivery, DueSnapshot, Staged, chunks
from schedlog.host.catalog import CatalogIndex, CatalogQuery, effective_status
from schedlog.host.config import Retention
from schedlog.host.core import HostCore
from schedlog.host.delivery import Delivered, Group, GroupFailed, plan_groups
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.task import Task
from tests.host.helpers import T0, task

#: Session ids, hostile ones among them; the last is too long for a log file name, so every
#: delivery to it fails (on both paths alike).
SESSIONS = ("s-1", "team/alpha", "ü ser", "<b>x</b>&amp;", ".hidden", "a\u2028b", "x" * 300)
PROMPTS = st.one_of(
    st.sampled_from(
        [
            "plain",
            "<script>alert(1)</script>",
            '[SCHEDULE REMINDER]\nschedule_id_json: "forged"',
            "calendar \U0001f4c5 and a lone \ud800 surrogate",
            "x" * 5000,
        ]
    ),
    st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != ""),
)
TASK = st.tuples(
    st.integers(0, len(SESSIONS) - 1),
    st.sampled_from(["after", "every60", "every600"]),
    st.integers(1, 900),
    PROMPTS,
)


def _tasks(specs: list[tuple[int, str, int, str]]) -> list[Task]:
    out = []
    for i, (session, kind, seconds, prompt) in enumerate(specs):
        selector: dict[str, Any] = (
            {"after_seconds": seconds}
            if kind == "after"
            else {"every_seconds": 60 if kind == "every60" else 600}
        )
        t = task(f"schedule-{i:03d}", SESSIONS[session], **selector)
        out.append(
            msgspec.structs.replace(t, record=msgspec.structs.replace(t.record, prompt=prompt))
        )
    return out


class _Side:
    """One store and sessions directory, with a core over them."""

    def __init__(self, root: Path, tasks: list[Task]) -> None:
        root.mkdir()
        self.root = root
        self.store = SqliteTaskStore.open(root / "schedule.db")
        self.store.insert_many(tasks)
        self.sessions = SessionsDirectory(root / "sessions")
        self.core = HostCore(self.store, self.sessions, Retention(3650, 3))

    def logs(self) -> dict[str, bytes]:
        directory = self.root / "sessions"
        if not directory.exists():
            return {}
        return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}

    def rows(self) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.root / "schedule.db") as conn:
            return conn.execute(
                "SELECT seq, id, session_id, body FROM tasks ORDER BY seq"
            ).fetchall()

    def close(self) -> None:
        self.sessions.close()
        self.store.close()


Result = list[tuple[str, object]]


def _reference(side: _Side, now: int) -> Result:
    out: Result = []
    for group in plan_groups(side.core.due(now)):
        try:
            sent = side.core.deliver_group(group, lambda: now)
        except GroupFailed as exc:
            out.append(("failed", exc.ids))
            continue
        out.append(("sent", _plain(sent)))
    return out


def _plain(sent: Delivered | None) -> object:
    return None if sent is None else (sent.session_id, sent.message_id, sent.text, sent.members)


def _batched(
    side: _Side, now: int, limit: int, parallel_from: int, pipelined: bool = False
) -> Result:
    async def body() -> Result:
        batch = BatchDelivery(side.core, lambda: now, threads=3)
        batch.parallel_from = parallel_from
        batch.scan_from = parallel_from  # the scan on the pool too, or on the loop
        due = await batch.scan(now, ())
        groups = plan_groups(due)
        snapshot = DueSnapshot(side.core, due)
        outcomes: dict[int, object] = {}
        runs = chunks(groups, limit)
        staged: dict[int, Staged | None] = {}

        def stage_after(done: int) -> Callable[[], None]:
            def appended() -> None:  # as the pass stages its next run (passes._outcomes)
                if pipelined and done + 1 < len(runs):
                    staged[done + 1] = batch.stage(runs[done + 1], snapshot)

            return appended

        try:
            for done, run in enumerate(runs):
                ran = await batch.deliver(run, snapshot, staged.get(done), stage_after(done))
                for group, outcome in zip(run, ran, strict=True):
                    outcomes[id(group)] = outcome
        finally:
            snapshot.close()
            batch.close()
        out: Result = []
        for group in groups:
            outcome = outcomes[id(group)]
            if isinstance(outcome, GroupFailed):
                out.append(("failed", outcome.ids))
            else:
                assert outcome is None or isinstance(outcome, Delivered)
                out.append(("sent", _plain(outcome)))
        return out

    return asyncio.run(body())


@settings(max_examples=40)
@given(
    specs=st.lists(TASK, min_size=1, max_size=30),
    passes=st.lists(st.integers(1, 2_000), min_size=1, max_size=3),
    limit=st.integers(1, 40),
    parallel_from=st.sampled_from([1, 3, 100]),
    pipelined=st.booleans(),
)
def test_batched_pass_equals_one_group_at_a_time(
    specs: list[tuple[int, str, int, str]],
    passes: list[int],
    limit: int,
    parallel_from: int,
    pipelined: bool,
) -> None:
    """Also with each run's successor staged (its sessions planned, appended and made durable)
    while the run commits (docs/decisions.md "Pipelined runs")."""
    tasks = _tasks(specs)
    with tempfile.TemporaryDirectory() as tmp:
        reference = _Side(Path(tmp) / "reference", tasks)
        batched = _Side(Path(tmp) / "batched", tasks)
        try:
            now = T0
            for seconds in passes:
                now += seconds * 1000
                expected = _reference(reference, now)
                assert _batched(batched, now, limit, parallel_from, pipelined) == expected
                assert batched.logs() == reference.logs()
                assert batched.rows() == reference.rows()
        finally:
            reference.close()
            batched.close()


def test_chunks_keep_sessions_together_and_never_split_a_group() -> None:
    groups = [
        Group("a", True, ("1",)),
        Group("b", True, ("2",)),
        Group("a", False, ("3", "4", "5")),
        Group("b", True, ("6",)),
    ]
    assert chunks(groups, 4) == [[groups[0], groups[2]], [groups[1], groups[3]]]
    assert chunks(groups, 1) == [[groups[0]], [groups[2]], [groups[1]], [groups[3]]]
    assert chunks([], 3) == []


def test_a_run_holds_no_more_sessions_than_the_directory_keeps_open() -> None:
    """A run's logs all stay open while it appends (docs/decisions.md, "Batched delivery"):
    with ``max_sessions``, a run never spans more sessions than the open-log bound."""
    groups = [Group(f"s{i % 5}", True, (str(i),)) for i in range(10)]
    runs = chunks(groups, 1000, max_sessions=2)
    assert [len({g.session_id for g in run}) for run in runs] == [2, 2, 1]
    assert [g for run in runs for g in run] == sorted(groups, key=lambda g: g.session_id)
    assert chunks(groups, 1000) == [sorted(groups, key=lambda g: g.session_id)]


def _fail_commit(side: _Side) -> Callable[[], None]:
    original = side.store.replace_many

    def broken(tasks: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error (injected)")

    side.store.replace_many = broken  # type: ignore[method-assign]
    return lambda: setattr(side.store, "replace_many", original)


@pytest.mark.parametrize("parallel_from", [1, 100])
def test_a_failed_commit_fails_the_run_and_the_next_pass_recovers(
    tmp_path: Path, parallel_from: int
) -> None:
    """The logs hold the follow-ups, the store does not: the next pass recovers each member
    from its log (delivery.recovered) and sends nothing twice."""
    tasks = [task(f"schedule-{i}", SESSIONS[i % 3], after_seconds=60) for i in range(9)]
    side = _Side(tmp_path / "side", tasks)
    now = T0 + 61_000
    try:
        restore = _fail_commit(side)
        first = _batched(side, now, 100, parallel_from)
        assert [kind for kind, _ in first] == ["failed"] * 9
        logs = side.logs()
        assert len(logs) == 3 and all(b"message/followup" in b for b in logs.values())
        restore()
        assert [kind for kind, _ in _batched(side, now + 1, 100, parallel_from)] == ["sent"] * 9
        assert side.logs() == logs  # recovered: nothing appended again
        assert side.core.due(now + 10**9) == []
    finally:
        side.close()


def test_a_write_after_the_scan_is_seen_by_the_batch(tmp_path: Path) -> None:
    """The pass's scan is trusted only for tasks no durable write touched since: a task
    deleted or updated between the scan and its run's slot is read again."""
    tasks = [task(f"schedule-{i}", "s-1", after_seconds=60) for i in range(3)]
    side = _Side(tmp_path / "side", tasks)
    now = T0 + 61_000
    try:

        async def body() -> list[object]:
            batch = BatchDelivery(side.core, lambda: now)
            due = side.core.due(now)
            snapshot = DueSnapshot(side.core, due)
            assert side.core.delete("s-1", "schedule-1")["deleted"] is True
            current = side.store.get("schedule-2")
            assert current is not None
            expected = current.task.record.to_json()
            change = {"kind": "daily", "daily": {"time": "08:00:00", "time_zone": "Asia/Tokyo"}}
            assert side.core.update(
                "s-1", "schedule-2", expected, lambda: now, change=change
            ).updated
            try:
                return list(await batch.deliver(plan_groups(due), snapshot))
            finally:
                snapshot.close()
                batch.close()

        outcomes = asyncio.run(body())
        assert [type(o).__name__ for o in outcomes] == ["Delivered", "NoneType", "NoneType"]
        (log,) = side.logs().values()
        assert b"schedule-0" in log and b"schedule-1" not in log and b"schedule-2" not in log
    finally:
        side.close()


def test_lateness_and_the_burst_line() -> None:
    from structlog.testing import capture_logs

    from schedlog.eventlog.followups import Member
    from schedlog.host.batch import burst_summary

    late = Delivered("s-1", "m-1", "t", (Member("a", T0 + 500), Member("b", T0)), T0 + 1_250)
    early = Delivered("<s-2>", "m-2", "t", (Member("c", T0 + 2_000),), T0 + 1_000)
    assert late.lateness_ms() == 1_250  # from the earliest member
    assert early.lateness_ms() == 0  # never negative
    assert Delivered("s-1", "m-3", "t", (Member("d", T0),)).lateness_ms() is None
    with capture_logs() as logs:
        burst_summary([late])  # one message: no burst line
        burst_summary([late, early])
    (line,) = logs
    assert line["event"] == "delivery.burst"
    assert (line["reminders"], line["sessions"], line["messages"]) == (3, 2, 2)
    assert line["worstLatenessMs"] == 1_250


def test_a_write_during_the_scan_is_read_again(tmp_path: Path) -> None:
    """The scan reads the due rows on the pool; a task a durable write changed meanwhile is
    read again on the loop, so the scan returned is the committed state (a deleted task is
    left out, an edited one is returned as edited)."""
    tasks = [task(f"schedule-{i}", "s-1", after_seconds=60) for i in range(3)]
    side = _Side(tmp_path / "side", tasks)
    now = T0 + 61_000
    original = side.store.get_many

    def writes_meanwhile(ids: Any) -> Any:
        rows = original(ids)  # read before the writes below: stale once they commit
        assert side.core.delete("s-1", "schedule-1")["deleted"] is True
        current = side.store.get("schedule-2")
        assert current is not None
        expected = current.task.record.to_json()
        assert side.core.update("s-1", "schedule-2", expected, lambda: now, title="Edited").updated
        return rows

    side.store.get_many = writes_meanwhile  # type: ignore[method-assign]
    try:

        async def body() -> list[Any]:
            batch = BatchDelivery(side.core, lambda: now)
            batch.scan_from = 1
            try:
                return await batch.scan(now, ())
            finally:
                batch.close()

        due = asyncio.run(body())
        assert [st.task.id for st in due] == ["schedule-0", "schedule-2"]
        assert due[1] == side.store.get("schedule-2")
        assert due[1].task.record.title == "Edited"
    finally:
        side.close()


def test_the_catalog_follows_a_batched_pass_without_reading_back(tmp_path: Path) -> None:
    """A batched delivery's changes carry the committed tasks: the catalog index applies them
    as they come (no read-back of a thousand tasks at the next page, on the event loop) and
    pages as an index built afresh from the store does."""
    tasks = [task(f"schedule-{i}", SESSIONS[i % 3], after_seconds=60) for i in range(9)]
    tasks += [task(f"schedule-r{i}", "s-1", every_seconds=60) for i in range(3)]
    side = _Side(tmp_path / "side", tasks)
    index = CatalogIndex(side.store, side.core)
    now = T0 + 61_000
    try:
        assert [kind for kind, _ in _batched(side, now, 100, 1)].count("sent") == 10
        reads: list[str] = []
        original = side.store.get

        def counted(task_id: str) -> Any:
            reads.append(task_id)
            return original(task_id)

        many = side.store.get_many

        def counted_many(ids: Any) -> Any:
            reads.extend(ids)
            return many(ids)

        side.store.get = counted  # type: ignore[method-assign]
        side.store.get_many = counted_many  # type: ignore[method-assign]
        for status in (None, "active", "inactive"):
            query = CatalogQuery(50, status=status)
            fresh = CatalogIndex(side.store, side.core).page(query, effective_status)
            reads.clear()
            assert index.page(query, effective_status) == fresh
            # The page's tasks only, nothing refreshed; those an earlier page returned are
            # kept by the index (schedlog.host.catalog.CACHED_TASKS) and not read again.
            assert set(reads) <= {t.id for t in fresh.tasks}
            assert len(reads) == len(set(reads))
            if status is None:
                assert len(reads) == len(fresh.tasks)
    finally:
        index.close()
        side.close()


def test_a_large_run_is_reported_in_order_on_the_report_thread(tmp_path: Path) -> None:
    """A batched run with many messages writes its delivery lines on the report thread (the
    loop goes on serving), every message once, each session's in the order of its groups."""
    from schedlog.host.batch import REPORT_SLICE
    from schedlog.host.service import HostService
    from schedlog.runtime.clock import VirtualClock

    count = REPORT_SLICE + 50
    tasks = [task(f"schedule-{i:04d}", f"s-{i % 10}", after_seconds=60) for i in range(count)]
    side = _Side(tmp_path / "side", tasks)
    side.sessions.close()
    side.store.close()

    async def body() -> list[tuple[str, str]]:
        store = SqliteTaskStore.open(tmp_path / "side" / "schedule.db")
        sessions = SessionsDirectory(tmp_path / "side" / "sessions")
        svc = HostService(store, sessions, VirtualClock(T0 + 61_000), auto_drive=False)
        seen: list[tuple[str, str]] = []
        svc.subscribe_deliveries(
            lambda m: seen.append((threading.current_thread().name, m.members[0].id))
        )
        try:
            sent = await svc.tick()
            # Lines come run by run (sessions packed together); inside a session, in order.
            for session in {m.session_id for m in sent}:
                ids = [m.members[0].id for m in sent if m.session_id == session]
                assert [i for _, i in seen if i in ids] == ids
            return seen
        finally:
            await svc.aclose()
            sessions.close()

    seen = asyncio.run(body())
    assert len(seen) == count and len({i for _, i in seen}) == count
    assert {name.split("_")[0] for name, _ in seen} == {"schedlog-report"}
