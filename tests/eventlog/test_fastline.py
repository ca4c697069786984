"""The summary read's fast path (``schedlog.eventlog.fastline``) against the reference decoder.

Line by line: whatever :func:`summary_line` takes, the reference (``reader.reference_line``)
accepts with the same result. Log by log: a read with the fast paths equals a read with the
reference alone, and so do the folds. The lines are mutated the ways other writers and damage
spell them: spacing, key order, escapes (``\\uXXXX``, ``\\u003a`` for ``:``), unicode, big ints,
integral floats like ``300.0``, ``null`` members, and keys given twice in every position.
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from schedlog.eventlog import CorruptLogError, LogEvent
from schedlog.eventlog.changes import decode_change
from schedlog.eventlog.fastline import summary_line
from schedlog.eventlog.reader import parse_lines, reference_line
from schedlog.fold.steps import FoldError
from schedlog.invariant.logs import validate_log
from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import create_data, delete_data, dispatch_data, header

T1 = "2026-05-01T09:00:00.000Z"
T2 = "2026-05-01T10:00:00.000Z"

# --- a JSON tree whose objects may hold a key twice: a list of (key, value) pairs ----------------


class Obj(list[tuple[str, Any]]):
    """An object as its members in order (a key may appear twice)."""


def to_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return Obj((k, to_tree(v)) for k, v in value.items())
    if isinstance(value, list):
        return [to_tree(v) for v in value]
    return value


def _objects(tree: Any, out: list[Obj], depth: int = 0) -> list[Obj]:
    if isinstance(tree, Obj):
        out.append(tree)
        for _, v in tree:
            _objects(v, out, depth + 1)
    elif isinstance(tree, list):
        for v in tree:
            _objects(v, out, depth + 1)
    return out


def _string(text: str, style: str) -> str:
    if style == "ascii":
        return json.dumps(text)
    if style == "colon-escaped":
        return json.dumps(text, ensure_ascii=False).replace(":", "\\u003a")
    if style == "upper-escapes":
        return json.dumps(text).replace("\\u00", "\\u00").upper().replace("\\U", "\\u")
    return js_dumps(text)


def dump(tree: Any, item: str, key: str, style: str) -> str:
    """JSON text of ``tree`` with separators ``item`` and ``key`` and strings in ``style``."""
    if isinstance(tree, Obj):
        members = (f"{_string(k, style)}{key}{dump(v, item, key, style)}" for k, v in tree)
        return "{" + item.join(members) + "}"
    if isinstance(tree, list):
        return "[" + item.join(dump(v, item, key, style) for v in tree) + "]"
    if isinstance(tree, str):
        return _string(tree, style)
    if isinstance(tree, float):
        return repr(tree) if tree == tree and abs(tree) != float("inf") else "1e999"
    return js_dumps(tree)


# --- values -----------------------------------------------------------------------------------

texts = st.one_of(
    st.sampled_from(["Call home", "a:b", "::", "会议 at 9:30", "📅 x", 'say "hi"', "back\\slash"]),
    st.sampled_from(["line\nbreak", " padded", "tab\t", "\u2028", "é", "\x7f", "\ud800", ""]),
    st.text(max_size=6),
)
ids = st.sampled_from(["schedule-1", "schedule-2", "s:1", "ü", " schedule-1"])
numbers = st.sampled_from([1, 60, 300, 300.0, 600, 2**53 - 1, 2**53, 2**64, 10**30, -1, 0, 1.5])


@st.composite
def change_values(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["create", "delete", "dispatch", "dispatch-every"]))
    rid = draw(ids)
    if kind == "create":
        record_kind = draw(st.sampled_from(["after", "at", "every"]))
        extra: dict[str, Any] = {"prompt": draw(texts)}
        if draw(st.booleans()):
            extra["title"] = draw(texts | st.none())
        if record_kind == "after":
            extra["afterSeconds"] = draw(numbers)
        if record_kind == "every":
            extra["everySeconds"] = draw(numbers)
        return create_data(
            rid, record_kind, draw(st.sampled_from([T1, T2, "2026-05-01T09:00Z"])), **extra
        )
    if kind == "delete":
        return delete_data(rid)
    return dispatch_data(rid, T2 if kind == "dispatch-every" else None)


@st.composite
def followup_values(draw: st.DrawFn) -> Any:
    source = draw(st.sampled_from([{"kind": "plugin", "plugin": "schedule"}, {"kind": "schedule"}]))
    return {
        "messageId": draw(st.sampled_from(["schedule-message-1", "m:1"])),
        "role": "user",
        "source": source,
        "text": "[SCHEDULE REMINDER]\n" + draw(texts),
        "reminders": [
            {"id": draw(ids), "occurrenceAt": draw(st.sampled_from([T1, "x"]))}
            for _ in range(draw(st.integers(0, 2)))
        ],
        "createdAt": T2,
    }


json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda c: (
        st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["k", "j", "a:b"]), c, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def event_values(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["change", "followup", "other", "odd"]))
    if kind == "change":
        return {"type": "schedule/change", "data": draw(change_values())}
    if kind == "followup":
        return {"type": "message/followup", "data": draw(followup_values())}
    event_type = draw(
        st.sampled_from(["message/user", "tool/result", "a:b", "", "schedule/changes"])
    )
    if kind == "odd":
        return draw(
            st.sampled_from([{"type": event_type}, {"data": 1}, [1], 5, {"type": 1, "data": {}}])
        )
    return {"type": event_type, "data": draw(json_values)}


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """One event line: a value, mutated, in one of several spellings."""
    tree = to_tree(draw(event_values()))
    for _ in range(draw(st.integers(0, 2))):
        objects = _objects(tree, [])
        if not objects:
            break
        obj = draw(st.sampled_from(objects))
        op = draw(st.sampled_from(["duplicate", "shuffle", "null", "drop"]))
        if not obj:
            continue
        i = draw(st.integers(0, len(obj) - 1))
        if op == "duplicate":  # the same key again, with the same or another value
            key, value = obj[i]
            obj.insert(draw(st.integers(0, len(obj))), (key, draw(st.just(value) | json_values)))
        elif op == "shuffle":
            obj[:] = draw(st.permutations(list(obj)))
        elif op == "null":
            obj[i] = (obj[i][0], None)
        else:
            del obj[i]
    item = draw(st.sampled_from([",", ", ", " ,", ",\t"]))
    key = draw(st.sampled_from([":", ": ", " : "]))
    style = draw(st.sampled_from(["compact", "ascii", "colon-escaped", "upper-escapes"]))
    text = dump(tree, item, key, style)
    if draw(st.booleans()):
        text = (
            draw(st.sampled_from(["", " ", "\t"])) + text + draw(st.sampled_from(["", " ", "\r"]))
        )
    return text.encode("utf-8", "surrogatepass") + b"\n"


WRITER_LINES = [
    js_dumps(
        {"type": "schedule/change", "data": create_data("schedule-1", "after", T1, prompt="a:b")}
    ),
    json.dumps(
        {"type": "schedule/change", "data": create_data("s", "every", T1, everySeconds=300)}
    ),
    json.dumps({"type": "schedule/change", "data": dispatch_data("s", T2)}),
    js_dumps({"type": "schedule/change", "data": delete_data("schedule-1")}),
    json.dumps(
        {
            "type": "message/followup",
            "data": {
                "messageId": "m",
                "role": "user",
                "source": {"kind": "plugin", "plugin": "schedule"},
                "text": "[SCHEDULE REMINDER]\n会议",
                "reminders": [{"id": "a", "occurrenceAt": T1}],
                "createdAt": T2,
            },
        }
    ),
    json.dumps({"type": "tool/result", "data": {"output": "1: x\n2: y", "meta": {"a": [1, 2.5]}}}),
    '{"type":"message/user","data":{"text":"a","text":"b"}}',
]


# --- line by line -----------------------------------------------------------------------------


def _reference(raw: bytes) -> LogEvent | CorruptLogError:
    try:
        item = reference_line(raw, 2)
    except CorruptLogError as exc:
        return exc
    assert isinstance(item, LogEvent)
    return item


def _agree(raw: bytes) -> bool:
    """Whether the fast path took ``raw``; fails when it took it differently."""
    fast = summary_line(raw)
    if fast is None:
        return False
    ref = _reference(raw)
    assert isinstance(ref, LogEvent), (raw, ref)
    assert ref.exact, raw
    if fast is True:
        assert ref.type not in ("schedule/change", ""), raw
    else:
        assert ref.type == "schedule/change", raw
        assert decode_change(ref.data) == fast, raw
    return True


@given(lines())
@example(b'{"type":"message/user","data":{"k":1,"k":2}}\n')
@example(b'{"type":"message/user","type":"x","data":{}}\n')
@example(b'{"type":"x","data":{},"data":{"a":1}}\n')
@example(b'{"type":"a\\u003ab","data":{},"type":"c"}\n')
def test_fast_path_takes_only_what_the_reference_accepts_alike(raw: bytes) -> None:
    _agree(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type":"a","data":' + b"[" * 5000 + b"]" * 5000 + b"}\n",
        b'{"type":"a","data":{"x":' * 3000 + b"1" + b"}}" * 3000 + b"\n",
        b'{"type":"a","data":' + b"9" * 5000 + b"}\n",
        b'{"type":"a","data":[-' + b"9" * 4301 + b"]}\n",
        b'{"type":"a","data":"\xff"}\n',
        b'{"type":"a","data":"\xed\xa0\x80"}\n',
        b'{"type":"a","data":{"\xff":1}}\n',
        b'{"type":"a","data":"\\ud800"}\n',
        b'{"type":"a","data":NaN}\n',
        b'{"type":"a","data":1e400}\n',
        b'\xef\xbb\xbf{"type":"a","data":1}\n',
        b'{"type":"a","data":1}{"type":"b","data":2}\n',
    ],
)
def test_fast_path_on_what_only_one_decoder_might_read(raw: bytes) -> None:
    _agree(raw)


def test_fast_path_near_the_recursion_limit() -> None:
    # Both decoders stop at Python's recursion limit, counted from wherever they are called:
    # near it, one may read a line the other refuses.
    limit = sys.getrecursionlimit()
    for depth in range(limit - 80, limit + 5):
        _agree(b'{"type":"a","data":' + b"[" * depth + b"]" * depth + b"}\n")


@pytest.mark.parametrize("text", WRITER_LINES)
def test_fast_path_takes_the_lines_writers_emit(text: str) -> None:
    assert _agree(text.encode() + b"\n")


@pytest.mark.parametrize(
    "text",
    [
        # a key twice in the envelope, in the change, in the record, in a followup member
        '{"type":"schedule/change","type":"schedule/change","data":{"version":1,"operation":"delete","id":"a"}}',
        '{"type":"schedule/change","data":{"version":1,"operation":"delete","id":"a","id":"b"}}',
        '{"type":"schedule/change","data":{"version":1,"version":1,"operation":"delete","id":"a"}}',
        '{"type":"schedule/change","data":{"version":1,"operation":"create","schedule":{"id":"a",'
        '"kind":"at","kind":"at","prompt":"p","scheduledAt":"2026-05-01T09:00:00.000Z"}}}',
        '{"type":"message/followup","data":{"messageId":"m","role":"user","source":{"kind":"schedule"},'
        '"text":"t","reminders":[{"id":"a","id":"b","occurrenceAt":"x"}],"createdAt":"x"}}',
        # the same, with a ":" written as \\u003a elsewhere to even the count
        '{"type":"schedule/change","data":{"version":1,"operation":"delete","id":"a","id":"a\\u003ab"}}',
        '{"type":"schedule/change","data":{"version":1,"operation":"create","schedule":{"id":"a",'
        '"kind":"at","kind":"at","prompt":"p\\u003a","scheduledAt":"2026-05-01T09:00:00.000Z"}}}',
        '{"type":"message/followup","data":{"messageId":"m","role":"user","source":{"kind":"schedule"},'
        '"text":"\\u003a","reminders":[{"id":"a","id":"b","occurrenceAt":"x"}],"createdAt":"x"}}',
        '{"type":"schedule/change","data":{"version":1,"operation":"dispatch","id":"a","id":"b",'
        '"acceptedAt":"2026-05-01T10:00:00.000Z"}}',
        # null where a member is absent, a float where an integer is expected
        '{"type":"schedule/change","data":{"version":1,"operation":"delete","id":"a","acceptedAt":null}}',
        '{"type":"schedule/change","data":{"version":1.0,"operation":"delete","id":"a"}}',
    ],
)
def test_fast_path_leaves_duplicates_and_odd_members_to_the_reference(text: str) -> None:
    raw = text.encode() + b"\n"
    assert summary_line(raw) is None
    _agree(raw)


# --- log by log -------------------------------------------------------------------------------


def _changes(contents: Any) -> list[Any]:
    out = []
    for c in contents.changes:
        if c.change is not None:
            out.append((c.event_index, c.offset, c.change))
            continue
        try:
            out.append((c.event_index, c.offset, decode_change(c.event.data)))
        except CorruptLogError as exc:
            out.append((c.event_index, c.offset, exc.message, exc.path))
    return out


def _verdict(contents: Any) -> Any:
    try:
        state = validate_log(contents)
    except (CorruptLogError, FoldError) as exc:
        return (exc.rule, exc.message, exc.path, exc.line, exc.offset)
    return state


@given(st.lists(lines(), max_size=8))
def test_reads_with_and_without_the_fast_paths_agree(body: list[bytes]) -> None:
    data = js_dumps(header()).encode() + b"\n" + b"".join(body)
    reads = {
        (keep, fast): parse_lines(io.BytesIO(data), file="f", keep_events=keep, fast=fast)
        for keep in (True, False)
        for fast in (True, False)
    }
    assert reads[True, True] == reads[True, False]
    summary, reference = reads[False, True], reads[False, False]
    assert _changes(summary) == _changes(reference)
    for name in ("event_count", "corruption", "torn_tail", "complete_size", "header_size"):
        assert getattr(summary, name) == getattr(reference, name), name
    assert _verdict(summary) == _verdict(reference) == _verdict(reads[True, False])
