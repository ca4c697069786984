"""The fold of a growing event list, applied only to the events appended since the last look.

Pure: no clock, no I/O. A live session log only grows (docs/protocol.md#session-log): its owner
appends, and another writer's appends are read in by length (``FileSession``), so the fold of the
first ``count`` events stays the fold of the first ``count`` events. A log that was replaced,
truncated or re-opened shows up here as another list or a shorter one, and is folded from the
start.
"""

from __future__ import annotations

from collections.abc import Sequence

from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE, LogEvent
from schedlog.fold.replay import apply_event, fold
from schedlog.fold.state import FoldState
from schedlog.fold.steps import FoldError

__all__ = ["FoldCursor"]


class FoldCursor:
    """Remembers the fold of the events of one list up to where it last looked.

    :meth:`state` equals :func:`schedlog.fold.fold` of the events it is given. It folds only
    the events after the ones it has seen when it is given the same list object as last time,
    at least as long, with the same seed length, and the event it saw last is still the same
    object in the same place (an append-only list). Anything else is folded from the start.
    A fold that fails is forgotten, so the next call folds from the start again.
    """

    __slots__ = ("_count", "_events", "_last", "_seed", "_state")

    def __init__(self) -> None:
        self._events: Sequence[LogEvent] | None = None
        self._count = 0
        self._last: LogEvent | None = None
        self._seed: object = None
        self._state = FoldState()

    @property
    def folded(self) -> int:
        """How many events the remembered state covers (0 when there is none)."""
        return self._count if self._events is not None else 0

    def resume(
        self, events: Sequence[LogEvent], count: int, *, seed_length: object, state: FoldState
    ) -> None:
        """Take ``state`` as the fold of ``events[:count]`` from ``seed_length``, as if it had
        folded them: the next :meth:`state` of that list folds only the events after them. The
        caller vouches for ``state`` (a session log's open folded exactly those events,
        :meth:`schedlog.runtime.session_file.FileSession.resume_fold`)."""
        if not 0 <= count <= len(events):
            raise ValueError("count must be within the events")
        self._events, self._count, self._seed, self._state = events, count, seed_length, state
        self._last = events[count - 1] if count else None

    def state(self, events: Sequence[LogEvent], *, seed_length: object = 0) -> FoldState:
        """The fold of ``events[seed_length:]``; raises :class:`FoldError` like the fold."""
        count, size = self._count, len(events)
        same = (
            events is self._events
            and seed_length == self._seed
            and size >= count
            and (count == 0 or events[count - 1] is self._last)
        )
        self._events = None  # forgotten unless this call succeeds
        if same:
            state = self._state
            for index in range(count, size):
                event = events[index]
                if event.type != SCHEDULE_CHANGE_TYPE:
                    continue
                try:
                    state = apply_event(state, event)
                except FoldError as exc:
                    exc.index = index
                    raise
        else:
            state = fold(events, seed_length=seed_length)
        self._events, self._count, self._seed, self._state = events, size, seed_length, state
        self._last = events[size - 1] if size else None
        return state
