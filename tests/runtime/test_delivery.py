"""The decision and the delivery step of docs/concepts.md#live-owner, and identity-based recovery
(docs/protocol.md#message-ids)."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from schedlog.eventlog.followups import Member
from schedlog.rules.instants import MAX_MS
from schedlog.rules.record import Record
from schedlog.runtime.batch import BatchSession
from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.delivery import deliver_claimed, drive_pass, next_deadline, select_due
from schedlog.runtime.tools import SessionTools
from tests.runtime.helpers import Harness, log_lines, ms, schedule_ops

T0 = ms("2026-05-01T09:00:00Z")
MIN = 60_000


def rec(id: str, kind: str, at: int, every: int | None = None) -> Record:
    if kind == "every":
        return Record(id=id, kind="every", prompt=id, scheduled_at=at, every_seconds=every)
    if kind == "after":
        return Record(id=id, kind="after", prompt=id, scheduled_at=at, after_seconds=60)
    return Record(id=id, kind="at", prompt=id, scheduled_at=at)


def test_nothing_due_selects_nothing_and_the_timer_is_the_earliest_target() -> None:
    active = [rec("a", "every", T0 + 5 * MIN, 300), rec("b", "at", T0 + MIN)]
    assert select_due(active, T0) is None
    assert next_deadline(active) == T0 + MIN
    assert next_deadline([]) is None


def test_one_shot_priority_earliest_target_then_create_order() -> None:
    active = [
        rec("e", "every", T0 - 10 * MIN, 300),
        rec("late", "at", T0 - MIN),
        rec("tie-1", "after", T0 - 2 * MIN),
        rec("tie-2", "at", T0 - 2 * MIN),
        rec("future", "at", T0 + MIN),
    ]
    selection = select_due(active, T0)
    assert selection is not None
    assert not selection.batch
    assert [(m.record.id, m.occurrence_at) for m in selection.members] == [("tie-1", T0 - 2 * MIN)]


def test_batch_is_every_due_record_by_stored_target_then_create_order() -> None:
    active = [
        rec("c", "every", T0 - 2 * MIN, 300),
        rec("a", "every", T0 - 10 * MIN, 600),
        rec("d", "every", T0 - 2 * MIN, 300),
        rec("future", "every", T0 + MIN, 300),
        rec("b", "every", T0 - 5 * MIN, 300),
    ]
    selection = select_due(active, T0 + 30_000)
    assert selection is not None
    assert selection.batch
    assert [(m.record.id, m.occurrence_at) for m in selection.members] == [
        ("a", T0),  # latest-due occurrence, not the stored target
        ("b", T0),  # stored target 08:55 sorts before c and d although its occurrence is later
        ("c", T0 - 2 * MIN),  # equal targets: create order
        ("d", T0 - 2 * MIN),
    ]


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "s-1.jsonl")


def seed(harness: Harness, now: int, *creates: dict[str, object]) -> VirtualClock:
    clock = VirtualClock(now)
    tools = SessionTools(harness, clock)
    for args in creates:
        value = tools.schedule_create(args)
        assert isinstance(value, dict) and "id" in value, value
    harness.effects.clear()
    return clock


def test_effects_are_barrier_followup_dispatches_barrier(harness: Harness) -> None:
    clock = seed(
        harness,
        T0,
        {"prompt": "a", "every_seconds": 300},
        {"prompt": "b", "every_seconds": 600},
    )
    clock.set(T0 + 11 * MIN)
    outcomes = drive_pass(harness, harness, clock)
    assert [o.kind for o in outcomes] == ["delivered", "idle"]
    assert harness.effects == [
        "barrier",
        "followup",
        "dispatch:schedule-1",
        "dispatch:schedule-2",
        "barrier",
        "barrier",
    ]
    message = outcomes[0].message
    assert message is not None
    assert message.members == (
        Member("schedule-1", T0 + 10 * MIN),
        Member("schedule-2", T0 + 10 * MIN),
    )
    dispatches = [v["data"] for v in log_lines(Path(harness.inner.path))[-2:]]
    assert {d["acceptedAt"] for d in dispatches} == {"2026-05-01T09:11:00.000Z"}
    assert outcomes[1].deadline == T0 + 15 * MIN


def test_several_due_one_shots_go_one_per_iteration_then_the_batch(harness: Harness) -> None:
    clock = seed(
        harness,
        T0,
        {"prompt": "e", "every_seconds": 300},
        {"prompt": "o2", "after_seconds": 120},
        {"prompt": "o1", "after_seconds": 60},
    )
    clock.set(T0 + 10 * MIN)
    drive_pass(harness, harness, clock)
    assert schedule_ops(Path(harness.inner.path))[3:] == [
        "followup:schedule-3",
        "dispatch:schedule-3",
        "followup:schedule-2",
        "dispatch:schedule-2",
        "followup:schedule-1",
        "dispatch:schedule-1",
    ]


def test_followup_failure_appends_nothing_and_keeps_the_reminder(harness: Harness) -> None:
    clock = seed(harness, T0, {"prompt": "a", "after_seconds": 60})
    clock.set(T0 + MIN)
    harness.fail_followup = RuntimeError("queue full")
    with capture_logs() as logs:
        outcomes = drive_pass(harness, harness, clock)
    assert [o.kind for o in outcomes] == ["followup_failed"]
    assert harness.effects == ["barrier", "followup"]
    assert [e["event"] for e in logs] == ["owner.followup_failed"]
    assert logs[0]["log_level"] == "warning"
    harness.fail_followup = None
    assert [o.kind for o in drive_pass(harness, harness, clock)] == ["delivered", "idle"]


def test_framing_is_rendered_before_followup(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = seed(harness, T0, {"prompt": "a", "after_seconds": 60})
    clock.set(T0 + MIN)

    def broken(member: object) -> str:
        raise ValueError("cannot frame")

    monkeypatch.setattr("schedlog.delivery_plan.single_framing", broken)
    outcomes = drive_pass(harness, harness, clock)
    assert outcomes[0].kind == "followup_failed"
    assert "followup" not in harness.effects


def test_partial_dispatch_failure_faults_and_recovery_finishes_it(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    harness = Harness(path)
    clock = seed(
        harness,
        T0,
        {"prompt": "a", "every_seconds": 300},
        {"prompt": "b", "every_seconds": 300},
    )
    clock.set(T0 + 6 * MIN)
    harness.fail_dispatch_append = OSError("disk full")
    harness.fail_append_after = 1
    with capture_logs() as logs:
        outcomes = drive_pass(harness, harness, clock)
    assert [o.kind for o in outcomes] == ["faulted"]
    assert [e["event"] for e in logs] == ["owner.faulted"]
    assert schedule_ops(path)[2:] == ["followup:schedule-1,schedule-2", "dispatch:schedule-1"]
    harness.inner.close()

    # A restarted owner: schedule-1 already advanced; schedule-2's member is recovered.
    session = BatchSession(path)
    with capture_logs() as logs:
        assert session.tick(T0 + 6 * MIN) == []
    session.close()
    assert schedule_ops(path)[2:] == [
        "followup:schedule-1,schedule-2",
        "dispatch:schedule-1",
        "dispatch:schedule-2",
    ]
    assert [(e["event"], e["id"]) for e in logs] == [("delivery.recovered", "schedule-2")]


def test_recovery_sends_only_the_members_not_yet_delivered(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    harness = Harness(path)
    clock = seed(harness, T0, {"prompt": "a", "every_seconds": 300})
    clock.set(T0 + 5 * MIN)
    harness.fail_dispatch_append = OSError("crash")
    assert drive_pass(harness, harness, clock)[-1].kind == "faulted"
    harness.fail_dispatch_append = None
    # A second record becomes due before the restart.
    SessionTools(harness, VirtualClock(T0 + 5 * MIN)).schedule_create(
        {"prompt": "b", "every_seconds": 300}
    )
    harness.inner.close()
    session = BatchSession(path)
    delivered = session.tick(T0 + 10 * MIN - 1)
    session.close()
    assert delivered == []  # b is not due yet; a's member (09:05) is recovered
    assert schedule_ops(path)[1:] == [
        "followup:schedule-1",
        "create:schedule-2",
        "dispatch:schedule-1",
    ]
    session = BatchSession(path)
    delivered = session.tick(T0 + 10 * MIN)
    session.close()
    assert [r["id"] for d in delivered for r in d["reminders"]] == ["schedule-1", "schedule-2"]


def test_post_dispatch_barrier_failure_stops_re_driving(harness: Harness) -> None:
    clock = seed(
        harness, T0, {"prompt": "a", "after_seconds": 60}, {"prompt": "b", "after_seconds": 60}
    )
    clock.set(T0 + MIN)
    harness.barrier_results = [True, False]
    with capture_logs() as logs:
        outcomes = drive_pass(harness, harness, clock)
    assert [o.kind for o in outcomes] == ["delivered"]
    assert [e["event"] for e in logs] == ["owner.post_dispatch_failed"]
    assert len(harness.outbox) == 1


def test_preflight_failure_is_a_warning_and_nothing_is_read(harness: Harness) -> None:
    clock = seed(harness, T0, {"prompt": "a", "after_seconds": 60})
    clock.set(T0 + MIN)
    harness.barrier_results = [OSError("io")]
    with capture_logs() as logs:
        outcomes = drive_pass(harness, harness, clock)
    assert [o.kind for o in outcomes] == ["preflight_failed"]
    assert [(e["event"], e["log_level"]) for e in logs] == [("owner.preflight_failed", "warning")]


def test_invalid_clock_is_a_warning_not_a_fault(harness: Harness) -> None:
    clock = seed(harness, T0, {"prompt": "a", "after_seconds": 60})
    clock.set(MAX_MS + 1)
    with capture_logs() as logs:
        outcome = deliver_claimed(harness, harness, clock)
    assert outcome.kind == "invalid_clock"
    assert [(e["event"], e["log_level"]) for e in logs] == [("owner.invalid_clock", "warning")]
    clock.set(T0 + MIN)
    assert deliver_claimed(harness, harness, clock).kind == "delivered"


def test_clock_rollback_never_delivers_early(harness: Harness) -> None:
    clock = seed(harness, T0, {"prompt": "a", "every_seconds": 300})
    clock.set(T0 - 3600_000)
    assert deliver_claimed(harness, harness, clock).kind == "idle"
    clock.set(T0 + 3600_000 + 1)  # jump forward: one delivery at the latest occurrence
    outcomes = drive_pass(harness, harness, clock)
    assert [o.kind for o in outcomes] == ["delivered", "idle"]
    message = outcomes[0].message
    assert message is not None
    assert message.members == (Member("schedule-1", T0 + 3600_000),)
