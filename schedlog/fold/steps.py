"""One small step per change kind (docs/protocol.md#fold), shared by the fold and the invariant.

A step only *judges* a change against the current active set and seen ids and says what it
does; applying the effect is the caller's business. Because the fold, live application and the
invariant all go through :func:`plan`, the invariant accepts exactly what the fold accepts.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import NamedTuple

from msgspec.structs import replace

from schedlog.errors import CorruptScheduleError, ScheduleInputError
from schedlog.eventlog.changes import (
    Change,
    CreateChange,
    DeleteChange,
    decode_change,
)
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import LogEvent
from schedlog.rules.decide import decide
from schedlog.rules.record import Record
from schedlog.rules.text import js_dumps

__all__ = ["Effect", "FoldError", "decode_event_change", "plan"]


class FoldError(CorruptLogError):
    """The fold failed (``corrupt_schedule_log``).

    ``index`` is the 0-based index of the failing event (``None`` for a bad ``seedLength``);
    ``path`` is relative to the event line (``$.data.id``); ``rule`` names the broken rule:
    ``seed_length``, ``envelope``, ``change``, ``id_reused``, ``delete_inactive``,
    ``dispatch_inactive``, ``one_shot_accepted_at``, ``every_accepted_at`` or ``decision``.
    """


class Effect(NamedTuple):
    """What an accepted change does: ``record`` replaces (or appends) ``id`` in the active set;
    ``record`` None removes it. ``created`` adds ``id`` to the seen ids."""

    id: str
    record: Record | None
    created: bool


def _fail(message: str, rule: str, path: str) -> FoldError:
    return FoldError(message, rule=rule, path=path)


def decode_event_change(event: LogEvent) -> Change:
    """The change carried by a ``schedule/change`` event: exact envelope, then
    docs/protocol.md#changes."""
    if not event.exact:
        raise _fail(
            "schedule/change event must have exactly the keys type and data", "envelope", "$"
        )
    try:
        return decode_change(event.data)
    except CorruptLogError as exc:
        raise _fail(exc.message, "change", exc.under("$.data")) from None


def plan(change: Change, active: Mapping[str, Record], seen: Container[str]) -> Effect:
    """Judge ``change`` against the active records (by id) and the seen ids.

    Raises :class:`FoldError` with the docs/protocol.md#fold message; paths are relative to the
    event line.
    """
    if isinstance(change, CreateChange):
        record = change.schedule
        if record.id in seen:
            raise _fail(
                f"schedule id {js_dumps(record.id)} was reused", "id_reused", "$.data.schedule.id"
            )
        return Effect(record.id, record, True)
    target = change.id
    if isinstance(change, DeleteChange):
        if target not in active:
            raise _fail(
                f"schedule delete targets inactive id {js_dumps(target)}",
                "delete_inactive",
                "$.data.id",
            )
        return Effect(target, None, False)
    current = active.get(target)
    if current is None:
        raise _fail(
            f"schedule dispatch targets inactive id {js_dumps(target)}",
            "dispatch_inactive",
            "$.data.id",
        )
    return _dispatch(current, target, change.accepted_at)


def _dispatch(current: Record, target: str, accepted_at: int | None) -> Effect:
    if current.is_one_shot:
        if accepted_at is not None:
            raise _fail(
                "one-shot dispatch must not contain acceptedAt",
                "one_shot_accepted_at",
                "$.data.acceptedAt",
            )
        return Effect(target, None, False)
    if accepted_at is None:
        raise _fail("every dispatch must contain acceptedAt", "every_accepted_at", "$.data")
    try:
        decision = decide(current, accepted_at)
    except (ScheduleInputError, CorruptScheduleError) as exc:
        raise _fail(exc.message, "decision", "$.data.acceptedAt") from None
    if decision.next_scheduled_at is None:
        return Effect(target, None, False)
    return Effect(target, replace(current, scheduled_at=decision.next_scheduled_at), False)
