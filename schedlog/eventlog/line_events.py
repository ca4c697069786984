"""The events of a session log as its open read them: each :class:`LogEvent` built from its
line on first use.

A documented internal module of :mod:`schedlog.eventlog`: the open of a log for append
(:mod:`schedlog.invariant.fastopen`) builds a :class:`LineEvents` from the lines its fast
check proved valid, the appender and ``FileSession`` keep it as their event list, and
:func:`schedlog.eventlog.followups.delivered_members` and :func:`has_type` find the events of
one type without building the others (docs/decisions.md, "Opening a session: events built on
first use").

A :class:`LineEvents` is a sequence of :class:`LogEvent` like the tuple the reference read
keeps: the same length, the same event at each index, equal to it (``==`` compares with any
sequence of events, element by element). An event is built once, on first use, and kept, so an
index gives the same object every time (``FoldCursor`` relies on that; two threads building one
event at once may each build it, and a cursor that saw the one not kept folds again from the
start, to the same state). Events appended after the open (:meth:`LineEvents.append`,
:meth:`LineEvents.extend`) follow the lines read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, islice, repeat
from operator import eq, is_
from typing import Any, overload

import msgspec

from schedlog.eventlog import wire
from schedlog.eventlog.events import LogEvent
from schedlog.eventlog.reader import reference_line

__all__ = ["LineEvents", "has_type"]

_decode_envelope = msgspec.json.Decoder(wire.Envelope).decode


class LineEvents(Sequence[LogEvent]):
    """Events read at open, one a line (``rows``: each complete line with its ``\\n``;
    ``kinds``: each line's event type), then those appended since."""

    __slots__ = ("_built", "_kinds", "_more", "_rows")

    def __init__(self, rows: Sequence[bytes], kinds: list[str]) -> None:
        if len(rows) != len(kinds):
            raise ValueError("one event type a line")
        self._rows = rows
        self._kinds = kinds
        self._built: list[LogEvent | None] = [None] * len(rows)
        self._more: list[LogEvent] = []

    def copy(self) -> LineEvents:
        """The same events read at open (the same objects, built once for both), without the
        ones appended to this list."""
        other = LineEvents.__new__(LineEvents)
        other._rows, other._kinds, other._built = self._rows, self._kinds, self._built
        other._more = []
        return other

    def __len__(self) -> int:
        return len(self._rows) + len(self._more)

    @overload
    def __getitem__(self, index: int) -> LogEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[LogEvent]: ...

    def __getitem__(self, index: int | slice) -> LogEvent | list[LogEvent]:
        if isinstance(index, slice):
            return list(map(self._at, range(*index.indices(len(self)))))
        if index < 0:
            index += len(self)
            if index < 0:
                raise IndexError("event index out of range")
        return self._at(index)

    def _at(self, index: int) -> LogEvent:
        read = len(self._rows)
        if index >= read:
            return self._more[index - read]
        event = self._built[index]
        if event is None:
            event = self._built[index] = self._build(index)
        return event

    def _build(self, index: int) -> LogEvent:
        """The event of line ``index``: its type and its ``data`` text, decoded on first use
        (:class:`LogEvent`), as the open's fast path built it before it deferred this."""
        row = self._rows[index]
        try:
            envelope = _decode_envelope(row)
        except (msgspec.DecodeError, RecursionError):
            # Never for a line the open's check took (it decoded the same envelope, or proved
            # the line decodes so); should it happen, the reference decoder reads the line.
            item = reference_line(row, index + 2)
            assert type(item) is LogEvent
            return item
        return LogEvent(type=envelope.type, data=envelope.data, raw=row)

    def __iter__(self) -> Iterator[LogEvent]:
        built = self._built
        missing = compress(range(len(built)), map(is_, built, repeat(None)))
        for index in missing:
            built[index] = self._build(index)
        yield from built  # type: ignore[misc]  # every one is built now
        yield from self._more

    def of_type(self, kind: str, start: int = 0) -> Iterator[LogEvent]:
        """The events of type ``kind`` from index ``start`` on, in order; only those are
        built."""
        start = max(start, 0)
        read = len(self._rows)
        if start < read:
            yield from map(self._at, _indices(self._kinds, kind, start))
        for event in islice(self._more, max(start - read, 0), None):
            if event.type == kind:
                yield event

    def append(self, event: LogEvent) -> None:
        self._more.append(event)

    def extend(self, events: Iterable[LogEvent]) -> None:
        self._more.extend(events)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(map(eq, self, other))

    __hash__ = None  # type: ignore[assignment]  # a mutable sequence

    def __repr__(self) -> str:
        return f"<LineEvents: {len(self._rows)} read, {len(self._more)} appended>"


def _indices(kinds: list[str], kind: str, start: int) -> Iterator[int]:
    """The indexes of ``kind`` in ``kinds`` from ``start`` on, in order, each found by
    ``list.index`` (the lines between compared at C speed, none looked at in Python)."""
    find = kinds.index
    index = start - 1
    try:
        while True:
            index = find(kind, index + 1)
            yield index
    except ValueError:  # no more
        return


def has_type(events: Sequence[Any], kind: str, start: int = 0) -> bool:
    """Whether an event of type ``kind`` is at index ``start`` or later."""
    if type(events) is LineEvents:
        return next(events.of_type(kind, start), None) is not None
    return any(event.type == kind for event in events[start:])
