"""``LineEvents``, the events an open read, built on first use, against the reference read's
tuple of events: the same events at every index and slice, in iteration, by type, after
appends, and the same delivered members; one object per index; none built before it is used."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlog.eventlog.events import FOLLOWUP_TYPE, SCHEDULE_CHANGE_TYPE, LogEvent
from schedlog.eventlog.followups import delivered_members
from schedlog.eventlog.line_events import LineEvents, has_type
from schedlog.eventlog.reader import parse_lines
from schedlog.invariant import fastopen
from schedlog.invariant.fastcheck import fast_check_bytes
from tests.invariant.test_fastcheck import CREATE, HEAD, valid_logs

CHUNKS = st.sampled_from([16, 100, 700, 4096, 1 << 18])
KINDS = [FOLLOWUP_TYPE, SCHEDULE_CHANGE_TYPE, "message/user", "m", "nothing/such"]
EXTRA = LogEvent(type=FOLLOWUP_TYPE, data={"x": "<b>\ud800</b>"}, raw=b"")


def _opened(data: bytes, chunk: int) -> tuple[LineEvents, tuple[LogEvent, ...]] | None:
    """The open's events of ``data`` read ``chunk`` bytes at a time, and the reference's; None
    when the fast path did not take the log."""
    kept = fastopen.KeptLines()
    fast = fast_check_bytes(data, chunk=chunk, keep=kept)
    if fast is None:
        return None
    contents = fastopen._with_events(fast[0], kept)
    if contents is None:
        return None
    reference = parse_lines(io.BytesIO(data), file="<bytes>")
    events = contents.events
    assert type(events) is LineEvents
    return events, tuple(reference.events)


def _same(events: LineEvents, expected: tuple[LogEvent, ...] | list[LogEvent]) -> None:
    assert len(events) == len(expected)
    assert events == expected and events == list(expected)
    assert [repr(e) for e in events] == [repr(e) for e in expected]
    for index in range(-len(expected), len(expected)):
        assert events[index] is events[index] and events[index] == expected[index]
    for start, stop, step in [(0, None, 1), (1, -1, 1), (None, None, -1), (2, 9, 3)]:
        assert events[start:stop:step] == list(expected[start:stop:step])
    for kind in KINDS:
        for start in {0, 1, len(expected) // 2, len(expected), len(expected) + 3}:
            owned = [e for e in expected[start:] if e.type == kind]
            assert list(events.of_type(kind, start)) == owned
            assert has_type(events, kind, start) is bool(owned)
            assert has_type(expected, kind, start) is bool(owned)
    for seed in {0, 1, len(expected) // 2, len(expected)}:
        found = delivered_members(events, seed_length=seed)
        assert found == delivered_members(expected, seed_length=seed)
    with pytest.raises(IndexError):
        events[len(expected)]
    with pytest.raises(IndexError):
        events[-len(expected) - 1]


SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(valid_logs(), CHUNKS, st.data())
def test_the_events_of_an_open_are_the_reference_events(
    data: bytes, chunk: int, draw: st.DataObject
) -> None:
    opened = _opened(data, chunk)
    if opened is None:
        return
    events, expected = opened
    # Looked at in a random order first: an event built early is the one seen later.
    if expected:
        order = draw.draw(st.lists(st.integers(0, len(expected) - 1), max_size=8))
        first = {index: events[index] for index in order}
        assert all(events[index] is event for index, event in first.items())
    _same(events, expected)
    copy = events.copy()
    appended = [EXTRA, *expected[:2]]
    events.append(appended[0])
    events.extend(appended[1:])
    _same(events, [*expected, *appended])
    _same(copy, expected)
    assert all(a is b for a, b in zip(copy, events, strict=False))


def test_nothing_is_built_before_it_is_used(tmp_path: Path) -> None:
    from schedlog.invariant.appender import LogAppender

    chat = b'{"type":"m","data":{"t":"<&>\\u0000","n":[1,2.5]}}\n'
    followup = (
        b'{"type":"message/followup","data":{"messageId":"m-1","role":"user","text":"t",'
        b'"createdAt":"2026-05-01T09:00:00.000Z","source":{"kind":"schedule"},'
        b'"reminders":[{"id":"schedule-1","occurrenceAt":"2026-05-01T09:00:00.000Z"}]}}\n'
    )
    path = tmp_path / "log.jsonl"
    path.write_bytes(HEAD + chat * 3 + CREATE + b"\n" + chat + followup + chat)
    with LogAppender.open(path) as log:
        events = log.events_at_open
        assert type(events) is LineEvents and len(events) == 7
        # the open built none; its delivered members, when asked for, the follow-up only
        assert [e is not None for e in events._built] == [False] * 7
        delivered = dict(log.delivered)
        assert [e is not None for e in events._built] == [False] * 5 + [True, False]
        assert delivered == delivered_members(tuple(events))
        assert len(log.delivered) == 1


def test_a_line_events_list_is_a_sequence_but_not_hashable() -> None:
    events = LineEvents([b'{"type":"m","data":1}\n'], ["m"])
    assert events == (LogEvent(type="m", data=1, raw=b'{"type":"m","data":1}\n'),)
    assert events != "m" and events != [1]
    with pytest.raises(TypeError):
        hash(events)
    with pytest.raises(ValueError):
        LineEvents([b""], [])
    assert "1 read" in repr(events)


def test_a_line_the_envelope_decoder_refuses_is_read_by_the_reference() -> None:
    # Never from an open (its check proved every line); the reference's event, not a crash.
    row = b'{"type":"m","data":"\\ud800"}\n'
    events: Any = LineEvents([row], ["m"])
    assert events[0] == LogEvent(type="m", data="\ud800", raw=row)
