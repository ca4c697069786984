"""Scenario tests of the live owner (docs/concepts.md#live-owner) on the virtual clock: no test
sleeps."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.engine import SessionEngine
from schedlog.runtime.tools import PersistenceUncertain
from tests.runtime.helpers import Harness, ms, schedule_ops

T0 = ms("2026-05-01T09:00:00Z")
MIN = 60_000


class Scene:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.harness = Harness(path)
        self.clock = VirtualClock(T0)
        self.engine = SessionEngine(self.harness, self.harness, self.clock)

    @property
    def effects(self) -> list[str]:
        return self.harness.effects

    @property
    def ops(self) -> list[str]:
        return schedule_ops(self.path)

    async def create(self, **args: object) -> str:
        # Before start() the engine refuses tools (engine_not_running): seed the log through
        # the synchronous core, as an earlier process would have written it.
        if self.engine.running:
            value = await self.engine.schedule_create(args)
        else:
            value = self.engine.tools.schedule_create(args)
        assert isinstance(value, dict) and "id" in value, value
        return str(value["id"])

    async def at(self, when: int) -> None:
        await self.clock.run_until(when)


def scenario(body: Callable[[Scene], Awaitable[None]]) -> Callable[[Path], None]:
    def test(tmp_path: Path) -> None:
        async def main() -> None:
            scene = Scene(tmp_path / "s-1.jsonl")
            try:
                await body(scene)
            finally:
                await scene.engine.dispose()

        asyncio.run(main())

    test.__name__ = body.__name__
    test.__doc__ = body.__doc__
    return test


@scenario
async def test_effect_order_barrier_claim_followup_dispatch_release_barrier(s: Scene) -> None:
    await s.create(prompt="a", after_seconds=600)
    s.engine.start()
    await s.clock.settle()
    assert s.engine.owner.timer_deadline == T0 + 10 * MIN
    s.effects.clear()
    await s.at(T0 + 10 * MIN)
    assert s.effects == [
        "barrier",
        "claim",
        "followup",
        "dispatch:schedule-1",
        "release",
        "barrier",
        "barrier",  # the re-drive: nothing left, no timer
    ]
    assert s.engine.owner.timer_deadline is None
    assert len(s.harness.outbox) == 1


@scenario
async def test_timer_never_fires_early_and_each_record_once_at_its_target(s: Scene) -> None:
    s.engine.start()
    await s.create(prompt="a", after_seconds=300)
    await s.create(prompt="b", every_seconds=600)
    await s.at(T0 + 5 * MIN - 1)
    assert s.harness.outbox == []
    await s.at(T0 + 5 * MIN)
    assert [m.members[0].id for m in s.harness.outbox] == ["schedule-1"]
    await s.at(T0 + 30 * MIN)
    assert [(m.members[0].id, m.members[0].occurrence_at) for m in s.harness.outbox] == [
        ("schedule-1", T0 + 5 * MIN),
        ("schedule-2", T0 + 10 * MIN),
        ("schedule-2", T0 + 20 * MIN),
        ("schedule-2", T0 + 30 * MIN),
    ]


@scenario
async def test_equal_targets_go_in_one_batch_in_creation_order(s: Scene) -> None:
    await s.create(prompt="z", every_seconds=300)
    await s.create(prompt="y", every_seconds=300)
    await s.create(prompt="x", every_seconds=900)
    await s.create(prompt="once", after_seconds=300)
    s.engine.start()
    await s.at(T0 + 5 * MIN)
    assert [[m.id for m in msg.members] for msg in s.harness.outbox] == [
        ["schedule-4"],  # one-shot priority: alone, first
        ["schedule-1", "schedule-2"],  # then one batch, create order for equal targets
    ]
    assert s.harness.outbox[1].text.startswith("[SCHEDULE REMINDER BATCH]\n")


@scenario
async def test_clock_rollback_never_delivers_early_and_a_jump_delivers_once(s: Scene) -> None:
    await s.create(prompt="r", every_seconds=300)
    s.engine.start()
    await s.clock.settle()
    # The timer fires, but the wall clock has been rolled back before the drive samples it.
    s.clock.set(T0 + 5 * MIN)
    s.clock.set(T0 - 60 * MIN)
    await s.clock.settle()
    assert s.harness.outbox == []
    assert s.engine.owner.timer_deadline == T0 + 5 * MIN
    # A forward jump of two hours: one delivery, at the latest occurrence.
    s.clock.set(T0 + 125 * MIN + 30_000)
    await s.clock.settle()
    assert [(m.members[0].occurrence_at) for m in s.harness.outbox] == [T0 + 125 * MIN]
    assert s.ops.count("dispatch:schedule-1") == 1
    assert s.engine.owner.timer_deadline == T0 + 130 * MIN


@scenario
async def test_busy_agent_is_waited_for_then_delivered_when_idle(s: Scene) -> None:
    await s.create(prompt="a", after_seconds=60)
    s.harness.inner.begin_turn()
    s.engine.start()
    await s.at(T0 + 60 * MIN)
    assert s.harness.outbox == []
    assert s.effects.count("claim-busy") == 1  # waiting on when_idle, not polling
    s.harness.inner.end_turn()
    await s.clock.settle()
    assert len(s.harness.outbox) == 1
    assert s.ops[-1] == "dispatch:schedule-1"


@scenario
async def test_idle_notification_drives_only_sessions_with_schedule_events(s: Scene) -> None:
    s.engine.start()
    await s.clock.settle()
    s.effects.clear()
    s.harness.inner.begin_turn()
    s.harness.inner.end_turn()
    await s.clock.settle()
    assert s.effects == []
    await s.create(prompt="a", after_seconds=60)
    await s.clock.settle()
    s.effects.clear()
    s.harness.inner.begin_turn()
    s.harness.inner.end_turn()
    await s.clock.settle()
    assert s.effects == ["barrier"]


@scenario
async def test_preflight_failure_waits_for_the_next_trigger(s: Scene) -> None:
    await s.create(prompt="a", after_seconds=60)
    s.engine.start()
    await s.clock.settle()
    s.harness.barrier_results = [False]
    with capture_logs() as logs:
        await s.at(T0 + MIN)
        await s.at(T0 + 60 * MIN)
    assert [e["event"] for e in logs] == ["owner.preflight_failed"]
    assert s.harness.outbox == []
    # The re-drive after a tool call picks up the pending work.
    assert await s.engine.schedule_list({}) != []
    await s.clock.settle()
    assert len(s.harness.outbox) == 1


@scenario
async def test_followup_failure_releases_the_claim_and_does_not_retry_in_a_loop(
    s: Scene,
) -> None:
    await s.create(prompt="a", after_seconds=60)
    s.engine.start()
    s.harness.fail_followup = RuntimeError("queue closed")
    with capture_logs() as logs:
        await s.at(T0 + 120 * MIN)
    assert s.effects.count("followup") == 1
    assert s.effects[-2:] == ["followup", "release"]
    assert [e["event"] for e in logs] == ["owner.followup_failed"]
    assert s.engine.owner.state == "running"
    assert s.ops == ["create:schedule-1"]
    s.harness.fail_followup = None
    s.harness.inner.begin_turn()
    s.harness.inner.end_turn()  # the next trigger
    await s.clock.settle()
    assert s.ops[-1] == "dispatch:schedule-1"


@scenario
async def test_dispatch_append_failure_faults_the_owner(s: Scene) -> None:
    await s.create(prompt="a", every_seconds=300)
    s.engine.start()
    s.harness.fail_dispatch_append = OSError("disk full")
    with capture_logs() as logs:
        await s.at(T0 + 30 * MIN)
    assert [(e["event"], e["log_level"]) for e in logs] == [("owner.faulted", "error")]
    assert s.engine.owner.state == "faulted"
    assert len(s.harness.outbox) == 1  # the queued message is not sent again
    assert s.engine.owner.timer_deadline is None
    assert s.engine.archive_activity() is None
    # Tools still work while the owner is faulted.
    assert await s.engine.schedule_list({}) != []


@scenario
async def test_corrupt_fold_faults_the_owner(s: Scene) -> None:
    s.path.write_text(
        '{"type":"session/header","version":1,"sessionId":"s-1","seedLength":0,'
        '"parentSessionId":null}\n{"type":"schedule/change","data":{"version":1}}\n'
    )
    s.engine.start()
    with capture_logs() as logs:
        await s.at(T0 + 10 * MIN)
    assert s.engine.owner.state == "faulted"
    assert [e["event"] for e in logs] == ["owner.faulted"]
    assert await s.engine.schedule_list({}) == {
        "code": "corrupt_schedule_log",
        "message": "The session schedule log is corrupt.",
    }


@scenario
async def test_post_dispatch_barrier_failure_does_not_re_drive(s: Scene) -> None:
    await s.create(prompt="a", after_seconds=60)
    await s.create(prompt="b", after_seconds=60)
    s.engine.start()
    await s.clock.settle()
    s.harness.barrier_results = [True, False]  # timer drive preflight, post-dispatch
    with capture_logs() as logs:
        await s.at(T0 + MIN)
    assert [e["event"] for e in logs] == ["owner.post_dispatch_failed"]
    assert [m.members[0].id for m in s.harness.outbox] == ["schedule-1"]
    s.harness.inner.begin_turn()
    s.harness.inner.end_turn()
    await s.clock.settle()
    assert [m.members[0].id for m in s.harness.outbox] == ["schedule-1", "schedule-2"]


@scenario
async def test_disposal_cancels_the_timer_and_resolves_the_idle_wait(s: Scene) -> None:
    await s.create(prompt="a", after_seconds=60)
    await s.create(prompt="b", after_seconds=600)
    s.engine.start()
    await s.clock.settle()
    assert s.clock.next_deadline() == T0 + MIN
    s.harness.inner.begin_turn()
    await s.at(T0 + MIN)  # due, but the agent is busy: the owner waits for idle
    await s.engine.dispose()
    assert s.engine.owner.state == "disposed"
    assert s.clock.next_deadline() is None
    assert s.ops == ["create:schedule-1", "create:schedule-2"]  # durable records untouched


@scenario
async def test_one_pending_timer_at_a_time(s: Scene) -> None:
    s.engine.start()
    for seconds in (900, 600, 300, 1200):
        await s.create(prompt=f"p{seconds}", after_seconds=seconds)
        await s.clock.settle()
    assert s.clock.pending() == [T0 + 5 * MIN]
    assert s.engine.owner.timer_deadline == T0 + 5 * MIN


@scenario
async def test_archive_activity_and_stop_clear_the_timer(s: Scene) -> None:
    assert s.engine.archive_activity() is None  # no live owner yet
    await s.create(prompt="a", after_seconds=60)
    s.engine.start()
    await s.clock.settle()
    assert s.engine.archive_activity() == {
        "kind": "schedule",
        "items": [{"id": "schedule-1", "label": "a"}],
    }
    assert await s.engine.archive_stop() == ["schedule-1"]
    await s.clock.settle()
    assert s.engine.owner.timer_deadline is None
    assert s.engine.archive_activity() is None
    s.harness.barrier_results = [False]
    with pytest.raises(PersistenceUncertain):
        await s.engine.archive_stop()


@scenario
async def test_tool_calls_are_serialized_with_the_owner(s: Scene) -> None:
    await s.create(prompt="a", every_seconds=300)
    s.engine.start()
    s.clock.set(T0 + 5 * MIN)
    results = await asyncio.gather(
        s.engine.schedule_create({"prompt": "b", "after_seconds": 60}),
        s.engine.schedule_delete({"id": "schedule-1"}),
        s.engine.schedule_list({}),
    )
    await s.clock.settle()
    assert results[1] == {"id": "schedule-1", "deleted": True}
    listed = results[2]
    assert isinstance(listed, list)
    assert [v["id"] for v in listed] == ["schedule-2"]
    # Each operation ran whole: no barrier of one interleaved inside another's effects.
    for op in ("create:schedule-2", "delete:schedule-1"):
        i = s.effects.index(op)
        assert s.effects[i - 1] == "barrier" and s.effects[i + 1] == "barrier"
