"""The session-log wire schema, typed: the msgspec structs of the lines writers emit
(docs/protocol.md#session-log).

One declaration serves every typed decoder of a line: the summary read's line-by-line fast path
(:func:`schedlog.eventlog.fastline.summary_line`), the whole-line change decoder
(:func:`schedlog.eventlog.changes.decode_change_line`) and the chunk fast path of ``validate``
and ``replay`` (``schedlog.invariant.fastcheck``). Documented internal names: other packages
of schedlog import them, nothing outside schedlog should.

The structs hold the shape writers emit and the numeric ranges of docs/protocol.md#records
(``Meta``: ``afterSeconds`` a safe integer of at least 1, ``everySeconds`` at least 300 and at
most 9007199254740, ``version`` the integer 1). The text rules of a record (ids, prompts and
titles non-empty and trimmed, a title at most 120 UTF-16 units) are
:func:`schedlog.rules.records.typed_texts_ok`, and a ``scheduledAt`` must be a canonical
instant. The readable reference of all of them is :func:`schedlog.eventlog.changes.decode_change`
with :func:`schedlog.rules.records.decode_legacy_record`; the differential tests
(``tests/eventlog/test_changes.py``, ``test_fastline.py``, ``tests/invariant/test_fastcheck*.py``)
prove each typed decoder equal to it.

A typed decode alone does not see a key given twice (msgspec keeps the last value) nor a member
given as ``null`` where that means absent: the decoders count ``:`` bytes for that.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

import msgspec
from msgspec import Meta

from schedlog.eventlog.events import FOLLOWUP_TYPE, SCHEDULE_CHANGE_TYPE
from schedlog.rules.decide import MIN_EVERY_SECONDS_SESSION
from schedlog.rules.record import Kind, Record
from schedlog.rules.records import MAX_EVERY_SECONDS
from schedlog.rules.text import MAX_SAFE_INT

__all__ = [
    "AfterRecord",
    "AtRecord",
    "ChangeData",
    "ChangeLine",
    "CreateData",
    "DeleteData",
    "DispatchData",
    "Envelope",
    "EveryRecord",
    "FollowupData",
    "FollowupLine",
    "FollowupMember",
    "FollowupSource",
    "WireRecord",
    "record_of",
]

Text = Annotated[str, Meta(min_length=1)]
AfterSeconds = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT)]
EverySeconds = Annotated[int, Meta(ge=MIN_EVERY_SECONDS_SESSION, le=MAX_EVERY_SECONDS)]


class Envelope(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """An event line of exactly ``type`` and ``data``; ``data`` is checked as JSON and kept
    raw."""

    type: str
    data: msgspec.Raw


class _Wire(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    pass


# --- schedule/change (docs/protocol.md#changes) ------------------------------------------------


class _Record(_Wire):
    id: Text
    prompt: Text
    scheduledAt: str
    title: Text | None = None


class AfterRecord(_Record, kw_only=True, tag_field="kind", tag="after"):
    afterSeconds: AfterSeconds


class AtRecord(_Record, kw_only=True, tag_field="kind", tag="at"):
    pass


class EveryRecord(_Record, kw_only=True, tag_field="kind", tag="every"):
    everySeconds: EverySeconds


WireRecord: TypeAlias = AfterRecord | AtRecord | EveryRecord


class CreateData(_Wire, tag_field="operation", tag="create"):
    version: Literal[1]
    schedule: WireRecord


class DeleteData(_Wire, tag_field="operation", tag="delete"):
    version: Literal[1]
    id: str


class DispatchData(_Wire, tag_field="operation", tag="dispatch"):
    version: Literal[1]
    id: str
    acceptedAt: str | None = None


ChangeData: TypeAlias = CreateData | DeleteData | DispatchData


class ChangeLine(
    msgspec.Struct,
    tag_field="type",
    tag=SCHEDULE_CHANGE_TYPE,
    forbid_unknown_fields=True,
    gc=False,
):
    """A whole ``schedule/change`` line."""

    data: ChangeData


# --- message/followup (docs/protocol.md#followup-events) ---------------------------------------


class FollowupSource(_Wire):
    kind: str
    plugin: str | None = None


class FollowupMember(_Wire):
    id: str
    occurrenceAt: str


class FollowupData(_Wire):
    messageId: str
    role: str
    source: FollowupSource
    text: str
    reminders: list[FollowupMember]
    createdAt: str


class FollowupLine(
    msgspec.Struct, tag_field="type", tag=FOLLOWUP_TYPE, forbid_unknown_fields=True, gc=False
):
    """A whole ``message/followup`` line in the shape writers emit."""

    data: FollowupData


def record_of(record: WireRecord, scheduled_at: int) -> Record:
    """The :class:`Record` of a typed record whose texts passed
    :func:`schedlog.rules.records.typed_texts_ok`; ``scheduled_at`` is its ``scheduledAt`` in
    epoch ms."""
    kind = type(record)
    return Record(
        id=record.id,
        kind=_KINDS[kind],
        prompt=record.prompt,
        scheduled_at=scheduled_at,
        title=record.title,
        after_seconds=record.afterSeconds if kind is AfterRecord else None,  # type: ignore[union-attr]
        every_seconds=record.everySeconds if kind is EveryRecord else None,  # type: ignore[union-attr]
    )


_KINDS: Final[dict[type, Kind]] = {AfterRecord: "after", AtRecord: "at", EveryRecord: "every"}
