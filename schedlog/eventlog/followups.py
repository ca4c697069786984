"""``message/followup`` events (docs/protocol.md#followup-events) and delivery identity
(docs/protocol.md#message-ids)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress, islice
from operator import attrgetter
from typing import Any, Final, NamedTuple

import msgspec

from schedlog.eventlog.events import FOLLOWUP_TYPE, LogEvent
from schedlog.eventlog.line_events import LineEvents
from schedlog.protocols import ProtocolName
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.text import js_dumps

__all__ = [
    "HOST_SOURCE",
    "SESSION_LOCAL_SOURCE",
    "Followup",
    "Member",
    "build_followup",
    "delivered_members",
    "message_id",
    "parse_followup",
]

SESSION_LOCAL_SOURCE: Final = {"kind": "plugin", "plugin": "schedule"}
HOST_SOURCE: Final = {"kind": "schedule"}
_TYPE: Final = attrgetter("type")
_DATA_KEYS: Final = frozenset({"messageId", "role", "source", "text", "reminders", "createdAt"})
_MEMBER_KEYS: Final = frozenset({"id", "occurrenceAt"})


class Member(NamedTuple):
    """One reminder occurrence (docs/protocol.md#message-ids): the record id and the occurrence in
    epoch ms.

    A plain ``(id, occurrence_ms)`` tuple compares and hashes equal to it.
    """

    id: str
    occurrence_at: int

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "occurrenceAt": format_instant(self.occurrence_at)}


class Followup(msgspec.Struct, frozen=True, kw_only=True):
    """A well-formed ``message/followup`` payload (instants in epoch ms)."""

    message_id: str
    source: ProtocolName
    text: str
    reminders: tuple[Member, ...]
    created_at: int


def _member(member: Member | tuple[str, int | str]) -> Member:
    record_id, occurrence = member
    if isinstance(occurrence, str):
        ms = parse_canonical_instant(occurrence)
        if ms is None:
            raise ValueError(f"occurrenceAt {occurrence!r} is not a canonical instant")
        return Member(record_id, ms)
    return Member(record_id, occurrence)


def message_id(session_id: str, members: Iterable[Member | tuple[str, int | str]]) -> str:
    """``schedule-message-`` + the first 32 hex digits of SHA-256 of the compact key
    (docs/protocol.md#message-ids).

    ``members`` are in framing order; an occurrence is epoch ms or a canonical instant string.
    """
    import hashlib  # loads OpenSSL: only when a message id is made, not to read a log

    key = js_dumps({"sessionId": session_id, "reminders": [_member(m).to_json() for m in members]})
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return "schedule-message-" + digest[:32]


def build_followup(
    session_id: str,
    members: Sequence[Member | tuple[str, int | str]],
    text: str,
    created_at: int,
    *,
    protocol: ProtocolName = "session-local",
) -> dict[str, Any]:
    """The ``message/followup`` event for one delivery (docs/protocol.md#followup-events), keys in
    documented order.

    ``text`` is the full framing (docs/protocol.md#framing); ``created_at`` is the decision clock
    sample (ms).
    """
    decoded = [_member(m) for m in members]
    return {
        "type": FOLLOWUP_TYPE,
        "data": {
            "messageId": message_id(session_id, decoded),
            "role": "user",
            "source": dict(SESSION_LOCAL_SOURCE if protocol == "session-local" else HOST_SOURCE),
            "text": text,
            "reminders": [m.to_json() for m in decoded],
            "createdAt": format_instant(created_at),
        },
    }


def parse_followup(data: object) -> Followup | None:
    """The payload of a ``message/followup`` event when it has the docs/protocol.md#followup-events
    shape, else None.

    Readers looking for earlier deliveries ignore events that are not well formed
    (docs/protocol.md#message-ids).
    """
    if type(data) is not dict or data.keys() != _DATA_KEYS:
        return None
    mid, text, source = data["messageId"], data["text"], data["source"]
    if type(mid) is not str or not mid or type(text) is not str or data["role"] != "user":
        return None
    if source == SESSION_LOCAL_SOURCE:
        protocol: ProtocolName = "session-local"
    elif source == HOST_SOURCE:
        protocol = "host"
    else:
        return None
    created_at = parse_canonical_instant(data["createdAt"])
    reminders = data["reminders"]
    if created_at is None or type(reminders) is not list:
        return None
    members: list[Member] = []
    for entry in reminders:
        if type(entry) is not dict or entry.keys() != _MEMBER_KEYS:
            return None
        record_id, occurrence = entry["id"], parse_canonical_instant(entry["occurrenceAt"])
        if type(record_id) is not str or not record_id or occurrence is None:
            return None
        members.append(Member(record_id, occurrence))
    return Followup(
        message_id=mid,
        source=protocol,
        text=text,
        reminders=tuple(members),
        created_at=created_at,
    )


def delivered_members(events: Sequence[LogEvent], *, seed_length: int = 0) -> dict[Member, str]:
    """Members already delivered in the owned suffix -> the ``messageId`` holding them
    (docs/protocol.md#message-ids).

    Only well-formed ``message/followup`` events at index >= ``seed_length`` count; the first
    event holding a member wins.
    """
    found: dict[Member, str] = {}
    start = max(seed_length, 0)
    # The follow-ups picked out at C speed: a long chat log holds few of them. The events an
    # open read are picked by their types alone, so no other event is built.
    picked: Iterable[LogEvent]
    if type(events) is LineEvents:
        picked = events.of_type(FOLLOWUP_TYPE, start)
    else:
        kinds = map(_TYPE, islice(events, start, None))
        picked = compress(islice(events, start, None), map(FOLLOWUP_TYPE.__eq__, kinds))
    for event in picked:
        followup = parse_followup(event.data)
        if followup is None:
            continue
        for member in followup.reminders:
            found.setdefault(member, followup.message_id)
    return found
