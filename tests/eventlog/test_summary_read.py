"""A summary read (``keep_events=False``) checks every line like a full read and folds to the
same result, keeping only the ``schedule/change`` events with their indexes and offsets."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog import CorruptLogError, build_followup, parse_log, read_log
from schedlog.eventlog.reader import ChangeAt, LogContents, parse_lines
from schedlog.fold import decode_event_change, fold, fold_changes
from schedlog.invariant import validate_log
from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import (
    change,
    chatter,
    create_data,
    delete_data,
    dispatch_data,
    header,
    log_bytes,
)

CHANGE = "schedule/change"
FIXTURES = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "logs").glob("*.jsonl"))


def outcome(contents: LogContents) -> Any:
    try:
        return validate_log(contents)
    except CorruptLogError as exc:
        return (exc.rule, exc.message, exc.path, exc.line, exc.offset, exc.index)


def assert_same_read(full: LogContents, summary: LogContents) -> None:
    assert full.events_kept and not summary.events_kept
    assert summary.events == () and full.changes == ()
    assert summary.event_count == full.event_count == len(full.events)
    for field in ("file", "header", "torn_tail", "complete_size", "header_size", "corruption"):
        assert getattr(summary, field) == getattr(full, field), field
    expected = [(i, full.offset_of(i), e) for i, e in enumerate(full.events) if e.type == CHANGE]
    assert [(c.event_index, c.offset) for c in summary.changes] == [x[:2] for x in expected]
    for entry, (_, _, event) in zip(summary.changes, expected, strict=True):
        assert isinstance(entry, ChangeAt)
        if entry.event is None:
            # decoded while reading: exactly what the fold's decoder makes of the event
            assert entry.change is not None and entry.change == decode_event_change(event)
        else:
            assert entry.change is None and entry.event == event
    assert outcome(summary) == outcome(full)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_summary_read_of_every_fixture(path: Path) -> None:
    assert_same_read(read_log(path), read_log(path, keep_events=False))


_FOLLOWUP = build_followup("s-1", [("c", "2026-05-01T09:00:00.000Z")], "text", 0)
_HOST_FOLLOWUP = build_followup("s-1", [("c", 0)], "t", 0, protocol="host")
_FOLLOWUP_LINE = js_dumps(_FOLLOWUP).encode()

LINES = st.sampled_from(
    [
        _FOLLOWUP,
        _HOST_FOLLOWUP,
        _FOLLOWUP_LINE.replace(b'"role":"user"', b'"role":"user","role":"user"'),
        _FOLLOWUP_LINE.replace(b'"role":"user"', b'"role":"user","x":null'),
        _FOLLOWUP_LINE.replace(b'"text":"text"', b'"text":NaN'),
        _FOLLOWUP_LINE.replace(b'"reminders":[', b'"reminders":[1,'),
        _FOLLOWUP_LINE.replace(b"}}", b'},"extra":1}'),
        {"type": "message/followup", "data": {**_FOLLOWUP["data"], "role": 7}},
        {"type": "message/followup", "data": None},
        change(create_data("a")),
        change(create_data("b", "every", everySeconds=300)),
        change(create_data("c", "at")),
        change(delete_data("a")),
        change(delete_data("b")),
        change(dispatch_data("c")),
        change(dispatch_data("b", "2026-05-01T09:05:00.000Z")),
        change(dispatch_data("b", "2026-05-01T08:00:00.000Z")),
        {"type": "schedule/change", "data": {**delete_data("c"), "version": 1.0}},
        {"type": "schedule/change", "data": delete_data("a"), "extra": 1},
        chatter(),
        {"type": "message/assistant", "data": {"text": "ok", "n": 1.5}},
        b'{"type":"message/user","data":{"k":1,"k":2}}',
        b'{"type":"x","data":{}}  ',
        b"[]",
        b"",
    ]
)


@given(
    st.lists(LINES, max_size=12),
    st.integers(0, 4),
    st.sampled_from([b"", b'{"type":"x"']),
)
def test_summary_read_agrees_with_a_full_read(lines: list[Any], seed: int, torn: bytes) -> None:
    data = log_bytes(header("s-1", seed, "p" if seed else None), *lines) + torn
    full = parse_log(data, file="f.jsonl")
    summary = parse_log_summary(data)
    assert_same_read(full, summary)


def parse_log_summary(data: bytes) -> LogContents:
    return parse_lines(io.BytesIO(data), file="f.jsonl", keep_events=False)


def test_fold_changes_is_fold_of_the_change_events() -> None:
    data = log_bytes(
        header("s-1", 2, "p"),
        change(create_data("a")),
        chatter(),
        change(create_data("a")),
        change(create_data("b", "every", everySeconds=300)),
        chatter(),
        change(dispatch_data("b", "2026-05-01T09:05:00.000Z")),
    )
    full = parse_log(data)
    summary = parse_log_summary(data)
    state = fold(full.events, seed_length=2)
    assert fold_changes(summary.changes, event_count=summary.event_count, seed_length=2) == state
    assert [r.id for r in state.active] == ["a", "b"]
