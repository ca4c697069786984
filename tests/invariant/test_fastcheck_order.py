"""The order of a chunk's changes in the fast path (``ChunkFold._fold_typed``).

A created record stays an entry (its typed record and target) in the active set until a
dispatch moves it on or the fold ends. Whatever the order of the changes (a delete or dispatch
before the create of its record, a dispatch after the delete), the result must be the
reference's, split or not, also where a chunk goes line by line after typed chunks (whose
entries are then built as records first).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from schedlog.invariant.fastcheck import fast_check_bytes
from schedlog.rules.text import json_bytes
from tests.eventlog.helpers import create_data, delete_data, dispatch_data, header
from tests.invariant.test_fastcheck import CHUNKS, agree, reference, spell, valid_events
from tests.invariant.test_fastcheck_split import SPLITS, now, split_check

AT = "2026-05-01T09:00:00.000Z"
LATER = "2026-05-01T10:00:00.000Z"


def _log(events: list[Any], style: str = "compact") -> bytes:
    return b"".join(spell(v, style) for v in [header(), *events])


def _change(data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "schedule/change", "data": data}


@st.composite
def reordered_events(draw: st.DrawFn) -> list[Any]:
    """The events of a valid log with some moved: a delete or dispatch may come before the
    create of its record, a dispatch after the delete, a line that goes line by line (an
    escaped ``:``) between typed ones."""
    events = draw(valid_events())
    for _ in range(draw(st.integers(0, 4))):
        if len(events) < 2:
            break
        i = draw(st.integers(0, len(events) - 1))
        j = draw(st.integers(0, len(events) - 1))
        events.insert(j, events.pop(i))
    if events and draw(st.booleans()):
        events.insert(
            draw(st.integers(0, len(events))),
            {"type": "message/user", "data": {"text": "a\\u003a b"}},
        )
    return events


@given(reordered_events(), CHUNKS, st.sampled_from(["compact", "spaced"]))
def test_reordered_changes_agree_with_the_reference(
    events: list[Any], chunk: int, style: str
) -> None:
    data = _log(events, style)
    assert agree(data, chunk) or reference(data)[0] == "error"


@given(reordered_events(), CHUNKS, SPLITS)
def test_reordered_changes_split_anywhere_agree(events: list[Any], chunk: int, line: int) -> None:
    data = _log(events)
    rendered: list[bytes] = []
    got, _ = split_check(data, chunk, line, now, rendered=rendered)
    assert got == fast_check_bytes(data, file="f", chunk=chunk)
    if got is not None:
        assert rendered == [json_bytes([r.to_json() for r in got[1].active])]


def _refused(*events: dict[str, Any]) -> None:
    data = _log(list(events))
    assert reference(data)[0] == "error"
    assert fast_check_bytes(data, file="f") is None
    for line in range(len(events)):
        assert split_check(data, 1 << 18, line, now)[0] is None


def test_a_delete_before_the_create_in_one_chunk_is_refused() -> None:
    _refused(_change(delete_data("a-1")), _change(create_data("a-1", "at", at=AT)))


def test_a_dispatch_before_the_create_in_one_chunk_is_refused() -> None:
    _refused(_change(dispatch_data("a-1")), _change(create_data("a-1", "at", at=AT)))
    every = create_data("e-1", "every", at=AT, everySeconds=300)
    _refused(_change(dispatch_data("e-1", accepted_at=LATER)), _change(every))


def test_entries_before_a_chunk_read_line_by_line_are_records() -> None:
    # Typed chunks leave entries; a chunk read line by line (an escaped ':' in a dispatch)
    # then dispatches them through the reference fold's steps.
    events = [
        _change(create_data("e-1", "every", at=AT, everySeconds=300)),
        _change(create_data("a-1", "at", at=AT)),
        _change(create_data("b-1", "after", at=AT, afterSeconds=60)),
        {"type": "message/user", "data": {"text": "x"}},
    ]
    first = _log(events)
    escaped = LATER.replace("T10:", "T10\\u003a")
    rest = (
        b'{"type":"schedule/change","data":{"version":1,"operation":"dispatch","id":"e-1",'
        b'"acceptedAt":"'
        + escaped.encode()
        + b'"}}\n'
        + spell(_change(dispatch_data("a-1")), "compact")
    )
    data = first + rest
    assert reference(data)[0] != "error"
    got = fast_check_bytes(data, file="f", chunk=len(first))
    assert got is not None and agree(data, len(first))
    assert [(r.id, r.scheduled_at) for r in got[1].active] == [
        (r.id, r.scheduled_at) for r in reference(data)[5].active
    ]
    assert [r.id for r in got[1].active] == ["e-1", "b-1"]
