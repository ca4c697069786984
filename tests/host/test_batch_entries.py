"""A batched run's new logs: their files fsynced each, then their directory once, before the
run's commit (schedlog/host/batch.py, schedlog/host/sessions.py, docs/decisions.md "One
directory fsync per batched run"); and the collector paused during a batched pass.

The durability rule: a delivery is committed in the store only after its log line and the log
file's directory entry are durable.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schedlog.collector import collector_paused
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0, followup_members, task

#: Hostile session ids among plain ones; twelve sessions, so a run leaves the loop.
SESSIONS = [f"s-{i}" if i % 4 else f'<b>{i}</b> ü"\u2028' for i in range(12)]
NOW = T0 + 600_000


class Journal:
    """Records, in order, every ``os.fsync`` (a directory's or a file's) and every commit of
    the store it watches."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[str] = []
        self.fail_directory = 0  # directory fsyncs still to fail
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
            if kind == "dir" and self.fail_directory:
                self.fail_directory -= 1
                self.events.append("dir-failed")
                raise OSError(5, "Input/output error (injected)")
            real_fsync(fd)
            self.events.append(kind)

        monkeypatch.setattr(os, "fsync", fsync)

    def watch(self, store: SqliteTaskStore) -> None:
        real_replace_many = store.replace_many

        def replace_many(tasks: Any) -> None:
            real_replace_many(tasks)
            self.events.append("commit")

        store.replace_many = replace_many  # type: ignore[method-assign]


def _create(root: Path, sessions: list[str], prefix: str = "schedule", minutes: int = 1) -> None:
    store = SqliteTaskStore.open(root / "schedule.db")
    tasks = [
        task(f"{prefix}-{i:02d}-{j}", session, after_seconds=30 + 60 * j)
        for i, session in enumerate(sessions)
        for j in range(minutes)
    ]
    store.insert_many(tasks)
    store.close()


def _tick(root: Path, now: int, hook: Callable[[SqliteTaskStore], None] | None = None) -> int:
    """One batch tick of a host on the store (``hook`` sees the store first); the number of
    messages sent."""

    async def body() -> int:
        store = SqliteTaskStore.open(root / "schedule.db")
        if hook is not None:
            hook(store)
        svc = HostService(
            store, SessionsDirectory(root / "sessions"), VirtualClock(now), auto_drive=False
        )
        try:
            return len(await svc.tick())
        finally:
            await svc.aclose()

    return asyncio.run(body())


def _active(root: Path) -> int:
    with sqlite3.connect(root / "schedule.db") as conn:
        rows = conn.execute("SELECT body FROM tasks").fetchall()
    return sum(1 for (body,) in rows if '"status":"active"' in body)


def test_a_run_of_new_logs_fsyncs_their_directory_once_before_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _create(tmp_path, SESSIONS, minutes=2)
    journal = Journal(monkeypatch)
    assert _tick(tmp_path, NOW, journal.watch) == 2 * len(SESSIONS)
    events = journal.events
    assert events.count("dir") == 1  # one for the twelve new logs, not one each
    assert events.count("file") == len(SESSIONS)  # one barrier per session
    assert events.index("dir") > max(i for i, e in enumerate(events) if e == "file")
    assert events.index("dir") < events.index("commit")
    # The logs exist now: the next run into them fsyncs their files only.
    _create(tmp_path, SESSIONS, prefix="more")
    journal.events.clear()
    assert _tick(tmp_path, NOW + 120_000, journal.watch) == len(SESSIONS)
    assert journal.events.count("dir") == 0
    assert journal.events.count("file") == len(SESSIONS)
    assert journal.events[-1] == "commit"
    members = followup_members(tmp_path / "sessions")
    assert len(members) == len(set(members)) == 3 * len(SESSIONS)


def test_a_failed_directory_fsync_commits_nothing_and_the_next_pass_fsyncs_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new logs' lines are in their files, but their entries are not known to be durable:
    nothing of theirs is committed. The next pass re-opens them (the follow-ups are recovered,
    not sent again) and fsyncs the directory before it commits them."""
    existing = SESSIONS[:4]
    _create(tmp_path, existing)  # these logs exist before the failing run
    assert _tick(tmp_path, NOW) == len(existing)
    _create(tmp_path, SESSIONS, prefix="new")
    journal = Journal(monkeypatch)
    journal.fail_directory = 1
    later = NOW + 120_000

    async def two_passes() -> tuple[int, int]:
        store = SqliteTaskStore.open(tmp_path / "schedule.db")
        journal.watch(store)
        svc = HostService(
            store, SessionsDirectory(tmp_path / "sessions"), VirtualClock(later), auto_drive=False
        )
        try:
            first = len(await svc.tick())  # the other sessions' groups failed
            assert journal.events.count("dir-failed") == 1, journal.events
            assert _active(tmp_path) == len(SESSIONS) - len(existing)  # still due
            assert len(list((tmp_path / "sessions").iterdir())) == len(SESSIONS)
            journal.events.clear()
            return first, len(await svc.tick())  # the same host's next pass
        finally:
            await svc.aclose()

    logs_before = {p.name: p.read_bytes() for p in (tmp_path / "sessions").iterdir()}
    first, second = asyncio.run(two_passes())
    assert first == len(existing)
    assert second == 0  # recovered from the logs, nothing sent again
    assert "dir" in journal.events
    assert journal.events.index("dir") < journal.events.index("commit")
    assert _active(tmp_path) == 0
    logs = {p.name: p.read_bytes() for p in (tmp_path / "sessions").iterdir()}
    assert all(logs[name].startswith(data) for name, data in logs_before.items())
    members = followup_members(tmp_path / "sessions")
    assert len(members) == len(set(members)) == len(existing) + len(SESSIONS)


def test_the_directory_of_a_handle_dropped_while_pending_is_fsynced_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log whose handle went before its directory entry was made durable (a failed or a
    deferred directory fsync) gets a handle that fsyncs the directory at its first barrier;
    a directory fsync clears what was remembered."""
    sessions = SessionsDirectory(tmp_path / "sessions")
    log = sessions.resolve("s-1")
    log.append({"type": "chatter", "data": {}})
    assert sessions.flush_file(log) is True
    assert log.directory_pending
    sessions.discard("s-1")  # dropped while its entry is pending
    again = sessions.resolve("s-1")
    assert again is not log and again.directory_pending
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    assert again.flush() is True
    assert len(calls) == 2 and not again.directory_pending  # the file, then the directory
    sessions.discard("s-1")
    assert not sessions.resolve("s-1").directory_pending
    other = sessions.resolve("s-2")
    sessions.flush_file(other)
    sessions.discard("s-2")
    sessions.sync_entries([sessions.resolve("s-1")])  # nothing of its own pending: no fsync
    assert sessions.resolve("s-2").directory_pending
    sessions.sync_entries([sessions.resolve("s-2")])
    assert not sessions.resolve("s-2").directory_pending
    sessions.discard("s-2")
    assert not sessions.resolve("s-2").directory_pending
    # A log created and dropped while the directory fsync runs is not covered by it.
    monkeypatch.setattr(os, "fsync", lambda fd: (real(fd), _meanwhile(sessions, fd))[0])
    pending = sessions.resolve("s-3")
    sessions.sync_entries([pending])
    assert not pending.directory_pending
    monkeypatch.setattr(os, "fsync", real)
    assert sessions.resolve("s-late").directory_pending
    sessions.close()
    one = SessionsDirectory(tmp_path / "one", max_open=1)  # the oldest handle is closed
    evicted = one.resolve("s-1")
    one.flush_file(evicted)
    one.resolve("s-2")
    assert evicted.closed and one.resolve("s-1").directory_pending
    one.close()


def _meanwhile(sessions: SessionsDirectory, fd: int) -> None:
    """During a directory fsync: another log created, written and dropped, still pending."""
    if stat.S_ISDIR(os.fstat(fd).st_mode) and not sessions.path_of("s-late").exists():
        late = sessions.resolve("s-late")
        sessions.flush_file(late)
        sessions.discard("s-late")


def test_the_collector_is_paused_during_a_batched_pass_only(tmp_path: Path) -> None:
    _create(tmp_path, SESSIONS)
    during: list[bool] = []

    def watch(store: SqliteTaskStore) -> None:
        real = store.replace_many

        def replace_many(tasks: Any) -> None:
            during.append(gc.isenabled())
            real(tasks)

        store.replace_many = replace_many  # type: ignore[method-assign]

    assert gc.isenabled()
    assert _tick(tmp_path, NOW, watch) == len(SESSIONS)
    assert during == [False]
    assert gc.isenabled()


def test_collector_paused_restores_the_state_it_found(monkeypatch: pytest.MonkeyPatch) -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("the pass failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # paused by someone else: left to them
    finally:
        gc.enable()
