"""A summary read (``keep_events=False``) checks every line like a full read and folds to the
same result, keeping only the ``schedule/change`` events with their indexes and offsets."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog import CorruptLogError, parse_log, read_log
from schedlog.eventlog.reader import ChangeAt, LogContents, parse_lines
from schedlog.fold import fold, fold_changes
from schedlog.invariant import validate_log
from tests.eventlog.helpers import (
    change,
    chatter,
    create_data,
    delete_data,
    dispatch_data,
    header,
    log_bytes,
)

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
    expected = [
        ChangeAt(i, full.offset_of(i), e)
        for i, e in enumerate(full.events)
        if e.type == "schedule/change"
    ]
    assert list(summary.changes) == expected
    assert outcome(summary) == outcome(full)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_summary_read_of_every_fixture(path: Path) -> None:
    assert_same_read(read_log(path), read_log(path, keep_events=False))


LINES = st.sampled_from(
    [
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
