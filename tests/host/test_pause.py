"""Pause and resume served by the host (docs/protocol.md#pause) on every backend, on a virtual
clock: the results, the cadence after a resume, edits of a paused task, the JSON document's
``pause_unsupported``, the race with a delivery on one host, and reopening a paused store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from schedlog.host.service import HostService
from schedlog.host.stores.base import StoreWriteError
from schedlog.host.stores.open import open_store
from schedlog.host.tools import HostTools
from schedlog.rules.instants import MAX_MS
from schedlog.runtime.clock import VirtualClock
from tests.host.conftest import store_path
from tests.host.helpers import T0, MemorySessions, ms, sha256_files, task
from tests.host.test_service import args, run

HOUR = 3_600_000
#: Hostile text: markup, a lone surrogate (not storable in SQLite/PostgreSQL text), padding.
HOSTILE_IDS = ('<script>"&</script>', "schedule-\ud800", "", " x", "x" * 5000)


def members(sessions: MemorySessions, session_id: str = "s-1") -> list[tuple[str, str]]:
    session = sessions.sessions.get(session_id)
    if session is None:
        return []
    return sorted((m.id, str(m.occurrence_at)) for m in session.delivered)


def pausable(backend: str) -> bool:
    return backend != "json"


def test_pause_results_and_no_ops(tmp_path: Path, backend: str) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        r = await svc.create("s-1", args(every_seconds=600))
        first = await svc.pause("s-1", r.id)
        if not pausable(backend):
            assert first == {"id": r.id, "changed": False, "code": "pause_unsupported"}
            assert svc.find("s-1", r.id).paused_at is None  # type: ignore[union-attr]
            # resuming is never refused: a task there is never paused
            resumed = await svc.pause("s-1", r.id, resume=True)
            assert resumed["changed"] is False and resumed["paused"] is False
            return
        assert first == {
            "id": r.id,
            "paused": True,
            "changed": True,
            "pausedAt": "2026-05-01T06:00:00.000Z",
        }
        clock.advance(1000)
        again = await svc.pause("s-1", r.id)
        assert again == {**first, "changed": False}  # the original pausedAt, nothing written
        found = svc.find("s-1", r.id)
        assert found is not None and found.paused_at == T0 and found.active
        assert [e["status"] for e in svc.catalog()] == ["paused"]
        resumed = await svc.pause("s-1", r.id, resume=True)
        assert resumed == {
            "id": r.id,
            "paused": False,
            "changed": True,
            "scheduledAt": "2026-05-01T06:10:00.000Z",  # still ahead: kept
            "state": "scheduled",
        }
        noop = await svc.pause("s-1", r.id, resume=True)
        assert noop == {**resumed, "changed": False}
        assert [e["status"] for e in svc.catalog()] == ["active"]

    run(tmp_path, backend, body)


def test_refusals_in_their_order(tmp_path: Path, backend: str) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        r = await svc.create("s-1", args(after_seconds=60))
        for resume in (False, True):
            for bad_id in (*HOSTILE_IDS, "schedule-missing", 7, None):
                value = await svc.pause("s-1", bad_id, resume=resume)
                assert value == {"id": bad_id, "changed": False, "code": "schedule_not_found"}
            other = await svc.pause("s-2", r.id, resume=resume)  # another session's
            assert other["code"] == "schedule_not_found"
            stale = {**r.to_json(), "title": "<b>old</b>"}
            conflict = await svc.pause("s-1", r.id, stale, resume=resume)
            assert conflict == {"id": r.id, "changed": False, "code": "schedule_conflict"}
            with pytest.raises(Exception) as info:
                await svc.pause("s-1", r.id, {"kind": "nope"}, resume=resume)
            assert getattr(info.value, "code", None) == "invalid_rule"
        clock.advance(61_000)
        await svc.tick()
        for resume in (False, True):
            ended = await svc.pause("s-1", r.id, r.to_json(), resume=resume)
            assert ended == {"id": r.id, "changed": False, "code": "schedule_ended"}

    run(tmp_path, backend, body)


def test_a_paused_task_is_never_delivered_and_keeps_its_cadence(
    tmp_path: Path, pausable_backend: str
) -> None:
    """docs/protocol.md#pause's example: every hour from 10:00, paused at 10:30, resumed at
    13:15: 11:00, 12:00 and 13:00 are skipped and the next target is 14:00."""
    backend = pausable_backend

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        clock.set(ms("2026-05-01T09:00:00.000Z"))
        r = await svc.create("s-1", args(every_seconds=3600))
        assert r.scheduled_at == ms("2026-05-01T10:00:00.000Z")
        clock.set(ms("2026-05-01T10:00:00.000Z"))
        assert len(await svc.tick()) == 1
        clock.set(ms("2026-05-01T10:30:00.000Z"))
        assert (await svc.pause("s-1", r.id))["changed"]
        for at in ("11:00", "12:00", "13:00", "13:15"):
            clock.set(ms(f"2026-05-01T{at}:00.000Z"))
            assert await svc.tick() == []
            assert svc.core.next_target() is None
        resumed = await svc.pause("s-1", r.id, resume=True)
        assert resumed["scheduledAt"] == "2026-05-01T14:00:00.000Z"
        assert resumed["state"] == "scheduled"
        clock.set(ms("2026-05-01T14:00:00.000Z"))
        assert len(await svc.tick()) == 1
        occurrences = [o for _, o in members(sessions)]
        assert occurrences == [
            str(ms("2026-05-01T10:00:00.000Z")),
            str(ms("2026-05-01T14:00:00.000Z")),
        ]
        page = svc.history("s-1", r.id, 10)
        assert len(page["records"]) == 2  # the history survived the pause

    run(tmp_path, backend, body)


def test_a_one_shot_whose_time_passed_is_delivered_once_at_resume(
    tmp_path: Path, pausable_backend: str
) -> None:
    backend = pausable_backend

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        r = await svc.create("s-1", args(after_seconds=600))
        await svc.pause("s-1", r.id)
        clock.advance(2 * HOUR)
        assert await svc.tick() == []
        resumed = await svc.pause("s-1", r.id, resume=True)
        assert resumed["state"] == "overdue"
        assert resumed["scheduledAt"] == "2026-05-01T06:10:00.000Z"  # its target is kept
        sent = await svc.tick()
        assert [m.occurrence_at for d in sent for m in d.members] == [r.scheduled_at]
        assert await svc.tick() == []
        found = svc.find("s-1", r.id)
        assert found is not None and not found.active

    run(tmp_path, backend, body)


def test_editing_a_paused_task_keeps_it_paused(tmp_path: Path, pausable_backend: str) -> None:
    backend = pausable_backend

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        tools = HostTools(svc)
        created = await tools.call("schedule_create", "s-1", args(every_seconds=600))
        task_id = created["id"]
        await tools.call("schedule_pause", "s-1", {"id": task_id})
        edited = await tools.call(
            "schedule_update", "s-1", {"id": task_id, "title": '<img src=x onerror="1">'}
        )
        assert edited["state"] == "paused" and edited["title"] == '<img src=x onerror="1">'
        retimed = await tools.call(
            "schedule_update", "s-1", {"id": task_id, "at": "2026-05-01T07:00:00Z"}
        )
        assert retimed["state"] == "paused" and retimed["kind"] == "at"
        (listed,) = await tools.call("schedule_list", "s-1", {})
        assert listed["state"] == "paused"
        clock.set(ms("2026-05-01T08:00:00.000Z"))
        assert await svc.tick() == []
        # deleting a paused task works as for any task
        assert await tools.call("schedule_delete", "s-1", {"id": task_id}) == {
            "id": task_id,
            "deleted": True,
        }
        assert members(sessions) == []

    run(tmp_path, backend, body)


def test_a_resume_with_no_target_left_ends_the_task(tmp_path: Path, pausable_backend: str) -> None:
    """Near the end of representable time a recurring rule has no target after the resume."""
    backend = pausable_backend
    last = MAX_MS - 30_000
    near_end = task("schedule-end", every_seconds=60, now=last - 60_000)
    assert near_end.record.scheduled_at == last
    store = open_store(store_path(tmp_path, backend))
    store.insert(near_end)
    store.close()

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        assert (await svc.pause("s-1", "schedule-end"))["changed"]
        clock.set(MAX_MS)
        value = await HostTools(svc).call("schedule_resume", "s-1", {"id": "schedule-end"})
        assert value == {"id": "schedule-end", "paused": False, "changed": True,
                         "code": "schedule_ended"}  # fmt: skip
        found = svc.find("s-1", "schedule-end")
        assert found is not None and not found.active and found.paused_at is None
        assert await svc.tick() == [] and members(sessions) == []

    run(tmp_path, backend, body, now=last - 1000)


def test_pause_queued_behind_a_delivery_and_before_one(
    tmp_path: Path, pausable_backend: str
) -> None:
    """On one host the FIFO orders them: a delivery that took the slot first commits, then the
    pause; a pause that took it first is never delivered, not even by the drive behind it."""
    backend = pausable_backend

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        a = await svc.create("s-1", args("A", every_seconds=600))
        b = await svc.create("s-2", args("B", every_seconds=1200))
        clock.set(a.scheduled_at)
        drive = asyncio.ensure_future(svc.drive())
        await asyncio.sleep(0)  # the delivery groups take the FIFO first
        paused = await svc.pause("s-1", a.id)
        await drive
        assert members(sessions, "s-1") == [(a.id, str(a.scheduled_at))]
        assert paused["changed"]
        found = svc.find("s-1", a.id)
        assert found is not None and found.record.scheduled_at == a.scheduled_at + 600_000
        # now the other way round: the pause is queued before the drive scans
        clock.set(b.scheduled_at + 600_000)
        pause = asyncio.ensure_future(svc.pause("s-2", b.id))
        await asyncio.sleep(0)  # the pause is queued; the drive scans b as due, behind it
        sent, failed = await svc.drive()
        await pause
        assert sent == []
        assert members(sessions, "s-2") == [] and not failed
        clock.advance(10 * HOUR)
        assert await svc.tick() == []

    run(tmp_path, backend, body)


def test_a_paused_store_reopens_paused(tmp_path: Path, pausable_backend: str) -> None:
    backend = pausable_backend

    async def pause_it(svc: HostService, clock: VirtualClock, _: MemorySessions) -> str:
        r = await svc.create("s-1", args(after_seconds=60))
        await svc.pause("s-1", r.id)
        return r.id

    task_id = run(tmp_path, backend, pause_it)

    async def later(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        assert svc.core.active_count() == 0 and svc.core.next_target() is None
        assert await svc.tick() == []
        found = svc.find("s-1", task_id)
        assert found is not None and found.paused_at == T0
        assert (await svc.pause("s-1", task_id, resume=True))["state"] == "overdue"
        assert len(await svc.tick()) == 1

    run(tmp_path, backend, later, now=T0 + HOUR)


def test_the_json_document_is_unchanged_by_a_refused_pause(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"

    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        r = await svc.create("s-1", args(every_seconds=600))
        before = sha256_files(path)
        value = await HostTools(svc).call("schedule_pause", "s-1", {"id": r.id})
        assert value == {"id": r.id, "changed": False, "code": "pause_unsupported"}
        assert sha256_files(path) == before

    run(tmp_path, "json", body)


def test_a_paused_task_is_never_silently_dropped_by_a_store_that_cannot_hold_it(
    tmp_path: Path,
) -> None:
    """Written to the JSON document (a copy, a bug), a paused task fails the write."""
    json_store = open_store(tmp_path / "schedule.json")
    paused = task("schedule-p")
    paused = type(paused)(
        session_id=paused.session_id, record=paused.record, history=paused.history, paused_at=T0
    )
    try:
        for write in (json_store.insert, lambda t: json_store.insert_many([t])):  # type: ignore[attr-defined]
            with pytest.raises(StoreWriteError, match="cannot hold a paused task"):
                write(paused)
        json_store.insert(task("schedule-p"))
        with pytest.raises(StoreWriteError, match="cannot hold a paused task"):
            json_store.replace(paused)
        st = json_store.get("schedule-p")
        assert st is not None and st.task.paused_at is None
    finally:
        json_store.close()
    assert '"pausedAt"' not in (tmp_path / "schedule.json").read_text()


def test_remote_operations_and_host_batch_pause_and_resume(tmp_path: Path) -> None:
    from schedlog.cli.host_cmd import HostBatch

    out: list[str] = []

    class Lines:
        def write(self, text: str) -> None:
            out.append(text)

        def flush(self) -> None:
            pass

    batch = HostBatch(str(tmp_path / "schedule.db"), str(tmp_path / "sessions"))
    now = '"now":"2026-05-01T06:00:00Z"'
    create = (
        '{"op":"schedule_create","session":"s-1",' + now + ',"args":{"prompt":"p",'
        '"title":"T","every_seconds":600}}'
    )
    try:
        batch.serve([create], Lines())  # type: ignore[arg-type]
        task_id = json.loads(out[-1])["ok"]["id"]
        record_json = json.dumps(batch._service().find("s-1", task_id).record.to_json())  # type: ignore[union-attr]
        lines = [
            '{"op":"schedule_pause","session":"s-1",' + now + ',"args":{"id":"' + task_id + '"}}',
            '{"op":"schedule_list","session":"s-1",' + now + ',"args":{}}',
            '{"op":"catalog",' + now + ',"args":{}}',
            '{"op":"resume",' + now + ',"args":{"sessionId":"s-1","id":"' + task_id + '",'
            '"expected":' + record_json + "}}",
            '{"op":"pause",' + now + ',"args":{"sessionId":"s-1","id":"' + task_id + '",'
            '"expected":{"kind":"x"}}}',
            '{"op":"pause",' + now + ',"args":{"id":"' + task_id + '"}}',
        ]
        out.clear()
        batch.serve(lines, Lines())  # type: ignore[arg-type]
        values = [json.loads(line)["ok"] for line in out]
        assert values[0]["paused"] is True and values[0]["changed"] is True
        assert values[1][0]["state"] == "paused"
        assert values[2][0]["status"] == "paused"
        assert values[3]["paused"] is False and values[3]["changed"] is True
        assert values[4]["code"] == "invalid_rule"
        assert values[5] == {"id": task_id, "changed": False, "code": "schedule_not_found"}
    finally:
        batch.close()


def test_pause_and_resume_are_change_events(tmp_path: Path, pausable_backend: str) -> None:
    """``schedule/changed`` carries them (docs/http-api.md#events); a no-op reports nothing."""
    backend = pausable_backend

    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        r = await svc.create("s-1", args(every_seconds=600))
        kinds: list[str] = []
        svc.subscribe_changes(lambda change: kinds.append(change.kind))
        await svc.pause("s-1", r.id)
        await svc.pause("s-1", r.id)  # a no-op writes and reports nothing
        await svc.pause("s-1", r.id, resume=True)
        await svc.pause("s-1", r.id, resume=True)
        assert kinds == ["paused", "resumed"]

    run(tmp_path, backend, body)


def test_the_event_stream_carries_the_kinds() -> None:
    from tests.serve.deps import require_serve

    require_serve()
    from schedlog.host.changes import ChangeListener, TaskChange
    from schedlog.serve.sse import EventHub

    listeners: list[ChangeListener] = []

    class Source:
        def subscribe_changes(self, listener: ChangeListener) -> Any:
            listeners.append(listener)
            return lambda: None

    hub = EventHub(Source(), epoch=1)
    for kind in ("paused", "resumed"):
        listeners[0](TaskChange("schedule-<1>", "s-1", kind))  # type: ignore[arg-type]
    frames = [frame for _, frame in hub._buffer]
    assert b'"kind":"paused"' in frames[0] and b'"kind":"resumed"' in frames[1]
    hub.close()


def test_a_pause_at_an_unrepresentable_instant_writes_nothing(tmp_path: Path) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        r = await svc.create("s-1", args(every_seconds=600))
        clock.set(MAX_MS + 1)
        value = await HostTools(svc).call("schedule_pause", "s-1", {"id": r.id})
        assert value["code"] == "time_out_of_range" and "pausedAt" in value["message"]
        found = svc.find("s-1", r.id)
        assert found is not None and found.paused_at is None

    run(tmp_path, "sqlite", body)
