"""Delivery groups (docs/protocol.md#host-delivery) and the commit of one member (step 3.7).

Pure functions: no clock, no I/O. The service samples the clock and owns the FIFO.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from schedlog.eventlog.followups import Member
from schedlog.host.config import Retention
from schedlog.host.history import append_delivery
from schedlog.host.stores.base import StoredTask
from schedlog.host.task import Receipt, Task
from schedlog.rules.decide import Decision, decide

__all__ = ["Delivered", "Group", "GroupFailed", "commit_member", "occurrence", "plan_groups"]


class GroupFailed(Exception):
    """A delivery group failed; ``ids`` are its members that were not committed."""

    def __init__(self, ids: tuple[str, ...], error: BaseException | str) -> None:
        super().__init__(str(error))
        self.ids = ids
        self.error = error


class Group(NamedTuple):
    """One delivery: a one-shot alone, or the due recurring tasks of one session (ids in
    storage order). Delivered at the position of its first member."""

    session_id: str
    one_shot: bool
    ids: tuple[str, ...]


class Delivered(NamedTuple):
    """A follow-up message that was sent (recovered members are not listed)."""

    session_id: str
    message_id: str
    text: str
    members: tuple[Member, ...]
    #: When the follow-up was durable (epoch ms); None until it was sent.
    delivered_at: int | None = None

    def lateness_ms(self) -> int | None:
        """How long after its earliest member's occurrence (the longest wait) the follow-up was
        durable (ms)."""
        if self.delivered_at is None or not self.members:
            return None
        return max(0, self.delivered_at - min(m.occurrence_at for m in self.members))

    def to_json(self) -> dict[str, object]:
        return {
            "sessionId": self.session_id,
            "messageId": self.message_id,
            "text": self.text,
            "reminders": [m.to_json() for m in self.members],
        }


def plan_groups(due: Sequence[StoredTask]) -> list[Group]:
    """Walk the due set (storage order) into groups (docs/protocol.md#host-delivery). No one-shot
    priority."""
    ordered = [st.task for st in sorted(due, key=_seq)]
    one_shot = [task.record.is_one_shot for task in ordered]
    recurring_by_session: dict[str, list[str]] = {}
    for task, once in zip(ordered, one_shot, strict=True):
        if not once:
            recurring_by_session.setdefault(task.session_id, []).append(task.record.id)
    groups: list[Group] = []
    placed: set[str] = set()  # sessions whose recurring group is placed (ids are unique)
    for task, once in zip(ordered, one_shot, strict=True):
        session_id = task.session_id
        if once:
            groups.append(Group(session_id, True, (task.record.id,)))
        elif session_id not in placed:
            groups.append(Group(session_id, False, tuple(recurring_by_session[session_id])))
            placed.add(session_id)
    return groups


def _seq(st: StoredTask) -> int:
    return st.seq


def occurrence(task: Task, now: int) -> Decision:
    """The member's occurrence at decision time ``now``: a one-shot's own target, a recurring
    rule's latest-due decision (docs/rules.md#catch-up), which is what makes catch-up deliver only
    the latest."""
    if task.record.is_one_shot:
        return Decision(task.record.scheduled_at, None)
    return decide(task.record, now)


def commit_member(
    task: Task, decision: Decision, message_id: str, delivered_at: int, retention: Retention
) -> Task:
    """The task after its delivery commit (docs/protocol.md#host-delivery): target/status, receipt,
    history."""
    record = task.record
    if record.is_one_shot:
        status = "inactive"
    elif decision.next_scheduled_at is not None:
        record = msgspec.structs.replace(record, scheduled_at=decision.next_scheduled_at)
        status = "active"
    else:
        record = msgspec.structs.replace(record, scheduled_at=decision.occurrence_at)
        status = "inactive"
    receipt = Receipt(
        scheduled_at=decision.occurrence_at, delivered_at=delivered_at, message_id=message_id
    )
    advanced = msgspec.structs.replace(task, record=record, status=status)
    return append_delivery(advanced, receipt, task.record.prompt, retention)
