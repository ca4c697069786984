"""What one delivery sends, for both protocols.

A delivery has its due members in delivery order. :func:`plan_delivery` splits them into the
*recovered* ones (already held by a ``message/followup`` of the owned suffix: they get their
dispatch or commit without being sent again) and the *fresh* ones, and renders the fresh ones
with the single framing (one one-shot) or the batch framing (recurring members, even a single
one), with their deterministic message id. Pure: no clock, no I/O, no logging; the session-local
live owner (:mod:`schedlog.runtime.delivery`) and the host service (:mod:`schedlog.host.service`)
each write, flush and log around it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from schedlog.eventlog.followups import Member, message_id
from schedlog.framing import FramedReminder, batch_framing, single_framing

__all__ = ["DeliveryPlan", "plan_delivery"]


class DeliveryPlan(NamedTuple):
    """The split and rendering of one delivery.

    ``recovered`` maps each recovered member to the ``messageId`` that already holds it, in
    delivery order; ``fresh`` are the members to send, in delivery order; ``text`` and
    ``message_id`` are their framing and message id, both None when every member was recovered.
    """

    recovered: dict[Member, str]
    fresh: tuple[FramedReminder, ...]
    text: str | None
    message_id: str | None

    @property
    def members(self) -> tuple[Member, ...]:
        """The fresh members as ``(id, occurrence)`` pairs, in framing order."""
        return tuple(Member(f.id, f.occurrence_at) for f in self.fresh)


def plan_delivery(
    session_id: str,
    due: Sequence[FramedReminder],
    *,
    batch: bool,
    delivered: Mapping[Member, str],
) -> DeliveryPlan:
    """Split ``due`` (delivery order) by ``delivered`` (member -> messageId already in the
    owned suffix) and render the fresh members: the batch framing when ``batch``, else the
    single framing of the one member."""
    recovered: dict[Member, str] = {}
    fresh: list[FramedReminder] = []
    for reminder in due:
        member = Member(reminder.id, reminder.occurrence_at)
        held_by = delivered.get(member)
        if held_by is None:
            fresh.append(reminder)
        else:
            recovered[member] = held_by
    if not fresh:
        return DeliveryPlan(recovered, (), None, None)
    text = batch_framing(fresh) if batch else single_framing(fresh[0])
    members = [Member(f.id, f.occurrence_at) for f in fresh]
    return DeliveryPlan(recovered, tuple(fresh), text, message_id(session_id, members))
