"""Pause and resume of one host task (docs/protocol.md#pause): the checks in their documented
order and the task each write leaves, as pure steps. No clock, no I/O: the caller (the host
core, inside one FIFO slot and, on a shared store, one transaction) passes the task it read
and the clock sample, and writes what the step returns.

Order (docs/errors.md#precedence): ``schedule_not_found``, ``schedule_ended``, a malformed
``expected`` (``invalid_rule``, raised), ``schedule_conflict``, then for pause
``pause_unsupported`` (a store that cannot hold the paused state), then the no-op of a task
already in the asked state.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from schedlog.absent import ABSENT
from schedlog.errors import ScheduleInputError
from schedlog.host.task import Task
from schedlog.rules.instants import format_instant, is_representable
from schedlog.rules.pause import MSG_PAUSED_AT, resume_target
from schedlog.rules.update import matches_expected

__all__ = ["PauseStep", "pause_step", "resume_step"]


class PauseStep(NamedTuple):
    """What a pause or resume answers, and the task to write (None: nothing is written)."""

    result: dict[str, Any]
    task: Task | None = None


def _refused(task_id: object, code: str) -> PauseStep:
    return PauseStep({"id": task_id, "changed": False, "code": code})


def _checked(task: Task | None, task_id: object, expected: object) -> PauseStep | None:
    """The answer of a pause or resume refused before its own step, else None. Raises
    ``invalid_rule`` for an ``expected`` that does not decode."""
    if task is None:
        return _refused(task_id, "schedule_not_found")
    if not task.active:
        return _refused(task_id, "schedule_ended")
    if expected is not ABSENT and not matches_expected(task.record, expected):
        return _refused(task_id, "schedule_conflict")
    return None


def pause_step(
    task: Task | None, task_id: object, expected: object, now: int, *, pausable: bool
) -> PauseStep:
    """Pause ``task`` (the stored task ``task_id`` of the caller's session, or None) at ``now``
    (epoch ms). ``pausable`` says whether the store can hold the paused state."""
    refused = _checked(task, task_id, expected)
    if refused is not None:
        return refused
    assert task is not None
    if not pausable:
        return _refused(task_id, "pause_unsupported")
    if task.paused_at is not None:
        at = task.paused_at
        return PauseStep({"id": task.id, "paused": True, "changed": False, "pausedAt": _at(at)})
    if not is_representable(now):  # pausedAt must be a canonical instant (a no-op writes none)
        raise ScheduleInputError("time_out_of_range", MSG_PAUSED_AT)
    paused = msgspec.structs.replace(task, status="active", paused_at=now)
    return PauseStep({"id": task.id, "paused": True, "changed": True, "pausedAt": _at(now)}, paused)


def resume_step(task: Task | None, task_id: object, expected: object, now: int) -> PauseStep:
    """Resume ``task`` at ``now`` (epoch ms), keeping its cadence (:func:`resume_target`).

    A recurring rule with no target after the resume instant ends the task, as after its last
    delivery: ``inactive``, its committed target kept, no receipt added."""
    refused = _checked(task, task_id, expected)
    if refused is not None:
        return refused
    assert task is not None
    if task.paused_at is None:
        return PauseStep(_resumed(task, now, changed=False))
    target = resume_target(task.record, task.paused_at, now)
    if target is None:
        ended = msgspec.structs.replace(task, status="inactive", paused_at=None)
        return PauseStep(
            {"id": task.id, "paused": False, "changed": True, "code": "schedule_ended"}, ended
        )
    record = msgspec.structs.replace(task.record, scheduled_at=target)
    resumed = msgspec.structs.replace(task, record=record, paused_at=None)
    return PauseStep(_resumed(resumed, now, changed=True), resumed)


def _resumed(task: Task, now: int, *, changed: bool) -> dict[str, Any]:
    target = task.record.scheduled_at
    return {
        "id": task.id,
        "paused": False,
        "changed": changed,
        "scheduledAt": _at(target),
        "state": "overdue" if target <= now else "scheduled",
    }


def _at(ms: int) -> str:
    return format_instant(ms)
