"""What one delivery group will do, decided before anything is sent
(docs/protocol.md#host-delivery): the due members and their decisions, each member's message
id, and the follow-up to send (:class:`Outgoing`), if any. :class:`~schedlog.host.core.HostCore`
plans a group in its FIFO slot, then sends and commits the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import structlog

from schedlog.delivery_plan import plan_delivery
from schedlog.diagnostics import recovered_fields
from schedlog.eventlog.events import FOLLOWUP_TYPE
from schedlog.eventlog.followups import HOST_SOURCE, Member, message_id
from schedlog.framing import FramedReminder, single_framing
from schedlog.host.delivery import Delivered, Group, occurrence
from schedlog.host.sessions import SessionHandle
from schedlog.host.stores.base import StoredTask
from schedlog.rules.decide import Decision
from schedlog.rules.instants import format_instant

__all__ = ["Outgoing", "Plan", "followup_event", "plan_group", "plan_members", "plan_one_shot"]

_log = structlog.get_logger("schedlog.host")


class Outgoing(NamedTuple):
    """A follow-up about to be sent: the message, its log event, and each member's prompt."""

    delivered: Delivered
    event: dict[str, Any]
    prompts: tuple[str, ...]


class Plan(NamedTuple):
    group: Group
    session: SessionHandle
    members: list[tuple[StoredTask, Decision]]
    ids: dict[str, str]
    outgoing: Outgoing | None


def plan_members(
    group: Group,
    session: SessionHandle,
    decision_time: int,
    get: Callable[[str], StoredTask | None],
) -> Plan | None:
    """The plan of ``group`` at ``decision_time`` (``get`` reads its members), or None when
    no member is due any more. A one-shot's group is planned by :func:`plan_one_shot`."""
    if group.one_shot and len(group.ids) == 1:
        return plan_one_shot(group, session, decision_time, get)
    return plan_group(group, session, decision_time, get)


def plan_group(
    group: Group,
    session: SessionHandle,
    decision_time: int,
    get: Callable[[str], StoredTask | None],
) -> Plan | None:
    """The plan of any group (the readable reference of :func:`plan_members`)."""
    session_id = group.session_id
    members: list[tuple[StoredTask, Decision]] = []
    for task_id in group.ids:
        st = get(task_id)
        if (
            st is None
            or not st.task.active
            or st.task.paused
            or st.task.session_id != session_id
            or st.task.record.scheduled_at > decision_time
        ):
            continue
        members.append((st, occurrence(st.task, decision_time)))
    if not members:
        return None
    plan = plan_delivery(
        session_id,
        [FramedReminder(st.task.id, d.occurrence_at, st.task.record.prompt) for st, d in members],
        batch=not group.one_shot,
        delivered=session.delivered,
    )
    ids: dict[str, str] = {member.id: mid for member, mid in plan.recovered.items()}
    for member, held_by in plan.recovered.items():
        _log.info("delivery.recovered", **recovered_fields(member, held_by))
    outgoing: Outgoing | None = None
    if plan.text is not None and plan.message_id is not None:
        sent_members = plan.members
        event = followup_event(sent_members, plan.text, plan.message_id, decision_time)
        for member in sent_members:
            ids[member.id] = plan.message_id
        delivered = Delivered(session_id, plan.message_id, plan.text, sent_members)
        outgoing = Outgoing(delivered, event, tuple(f.prompt for f in plan.fresh))
    return Plan(group, session, members, ids, outgoing)


def followup_event(
    members: Sequence[Member], text: str, message_id: str, created_at: int
) -> dict[str, Any]:
    """The host's ``message/followup`` event for ``members`` (epoch ms occurrences), given
    their ``message_id`` as the plan computed it: what
    :func:`~schedlog.eventlog.followups.build_followup` builds with ``protocol=HOST`` (the
    readable reference; tests/host/test_group_plan.py holds them equal, key order included),
    without hashing the members a second time."""
    return {
        "type": FOLLOWUP_TYPE,
        "data": {
            "messageId": message_id,
            "role": "user",
            "source": dict(HOST_SOURCE),
            "text": text,
            "reminders": [
                {"id": m.id, "occurrenceAt": format_instant(m.occurrence_at)} for m in members
            ],
            "createdAt": format_instant(created_at),
        },
    }


def plan_one_shot(
    group: Group,
    session: SessionHandle,
    decision_time: int,
    get: Callable[[str], StoredTask | None],
) -> Plan | None:
    """:func:`plan_group` of a one-shot's group, without its general steps: one member, its
    own target as the occurrence, the single framing, one message id. A burst is mostly
    these; tests/host/test_group_plan.py holds the two equal."""
    (task_id,) = group.ids
    st = get(task_id)
    if st is None:
        return None
    task = st.task
    record = task.record
    if not record.is_one_shot:  # edited into a recurring rule since it was grouped
        return plan_group(group, session, decision_time, get)
    target = record.scheduled_at
    if (
        not task.active
        or task.paused
        or task.session_id != group.session_id
        or target > decision_time
    ):
        return None
    member = Member(task_id, target)
    members = [(st, Decision(target, None))]
    held_by = session.delivered.get(member)
    if held_by is not None:
        _log.info("delivery.recovered", **recovered_fields(member, held_by))
        return Plan(group, session, members, {task_id: held_by}, None)
    text = single_framing(FramedReminder(task_id, target, record.prompt))
    sent = (member,)
    mid = message_id(group.session_id, sent)
    event = followup_event(sent, text, mid, decision_time)
    delivered = Delivered(group.session_id, mid, text, sent)
    return Plan(
        group, session, members, {task_id: mid}, Outgoing(delivered, event, (record.prompt,))
    )
