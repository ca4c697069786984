"""The replay invariant (docs/protocol.md#fold): a candidate append must keep the owned suffix
foldable.

``check`` judges one candidate against the current :class:`~schedlog.fold.FoldState` through
the same step the fold uses, so it accepts exactly when ``fold(suffix + [candidate])`` would
succeed, in O(1) lookups and without re-folding the log.
"""

from __future__ import annotations

from schedlog.eventlog.changes import Change
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE, LogEvent
from schedlog.fold.state import FoldState
from schedlog.fold.steps import FoldError, decode_event_change, plan

__all__ = ["InvariantError", "check"]


class InvariantError(FoldError):
    """An append was refused because replay would fail (code ``corrupt_schedule_log``).

    ``rule`` names the broken rule (the fold's rule names: ``id_reused``, ``delete_inactive``,
    ``dispatch_inactive``, ``one_shot_accepted_at``, ``every_accepted_at``, ``decision``,
    ``change``, ``envelope``); ``message`` is the fold's diagnostic.
    """


def check(state: FoldState, candidate: LogEvent | Change) -> None:
    """Raise :class:`InvariantError` if ``candidate`` may not follow ``state``; else return.

    ``candidate`` is an event (any type; only ``schedule/change`` events are judged) or an
    already decoded change. Nothing is modified.
    """
    try:
        if isinstance(candidate, LogEvent):
            if candidate.type != SCHEDULE_CHANGE_TYPE:
                return
            change = decode_event_change(candidate)
        else:
            change = candidate
        plan(change, state.by_id, state.seen)
    except FoldError as exc:
        raise InvariantError(exc.message, rule=exc.rule, path=exc.path) from None
