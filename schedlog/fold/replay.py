"""The pure fold of a session's owned suffix (docs/protocol.md#fold) and its live, one-change form.

No clock, no I/O, no logging: every-dispatch decisions come from the rules layer
(:func:`schedlog.rules.decide.decide`) at the ``acceptedAt`` recorded in the change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from schedlog.eventlog.changes import Change
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE, LogEvent
from schedlog.eventlog.reader import ChangeAt
from schedlog.fold.state import FoldState
from schedlog.fold.steps import FoldError, decode_event_change, plan
from schedlog.rules.record import Record
from schedlog.rules.text import json_int

__all__ = ["apply_change", "apply_event", "fold", "fold_changes"]

MSG_SEED_LENGTH = "schedule seedLength must be within the supplied event log"


def fold(events: Sequence[LogEvent], *, seed_length: object = 0) -> FoldState:
    """Fold the owned suffix ``events[seed_length:]`` into the active records and seen ids.

    ``seed_length`` must be a safe integer (an integral float counts) in ``[0, len(events)]``.
    Only ``schedule/change`` events are considered. Raises :class:`FoldError` (code
    ``corrupt_schedule_log``) with the docs/protocol.md#fold message and the failing event's
    ``index``.
    """
    start = _start(seed_length, len(events))
    owned = (
        (index, events[index], None)
        for index in range(start, len(events))
        if events[index].type == SCHEDULE_CHANGE_TYPE
    )
    return _fold(owned)


def fold_changes(
    changes: Iterable[ChangeAt], *, event_count: int, seed_length: object = 0
) -> FoldState:
    """:func:`fold` of a log given by its ``schedule/change`` events alone, with their event
    indexes, in order, and its number of events: a summary read's ``LogContents.changes``
    (an entry already decoded to its change is not decoded again)."""
    start = _start(seed_length, event_count)
    return _fold((c.event_index, c.event, c.change) for c in changes if c.event_index >= start)


def _start(seed_length: object, count: int) -> int:
    start = json_int(seed_length)
    if start is None or not 0 <= start <= count:
        raise FoldError(MSG_SEED_LENGTH, rule="seed_length", path="$.seedLength")
    return start


def _fold(owned: Iterable[tuple[int, LogEvent | None, Change | None]]) -> FoldState:
    # A dict keeps insertion (create) order, and re-assigning an existing key keeps its
    # position, which is exactly how an every dispatch advances a record in place.
    active: dict[str, Record] = {}
    seen: dict[str, None] = {}
    for index, event, change in owned:
        try:
            if change is None:
                assert event is not None
                change = decode_event_change(event)
            effect = plan(change, active, seen)
        except FoldError as exc:
            exc.index = index
            raise
        if effect.created:
            seen[effect.id] = None
        if effect.record is None:
            del active[effect.id]
        else:
            active[effect.id] = effect.record
    return FoldState.from_index(active, seen)


def apply_change(state: FoldState, change: Change) -> FoldState:
    """The state after one more change (live use). Raises :class:`FoldError` like the fold.

    O(size of the state): the indexes make judging O(1), building the new immutable state is
    a copy.
    """
    effect = plan(change, state.by_id, state.seen)
    active = dict(state.by_id)
    if effect.record is None:
        del active[effect.id]
    else:
        active[effect.id] = effect.record
    seen = (*state.seen_ids, effect.id) if effect.created else state.seen_ids
    return FoldState.from_index(active, seen)


def apply_event(state: FoldState, event: LogEvent) -> FoldState:
    """:func:`apply_change` for an event line; events of other types leave the state as is."""
    if event.type != SCHEDULE_CHANGE_TYPE:
        return state
    return apply_change(state, decode_event_change(event))
