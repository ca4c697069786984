"""Reading session logs: header, envelopes, torn tail versus corruption
(docs/protocol.md#session-log, docs/protocol.md#torn-tail)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog import (
    CorruptLogError,
    Header,
    decode_header,
    encode_line,
    event_from_value,
    parse_log,
    read_log,
)
from schedlog.eventlog.reader import parse_lines
from schedlog.strictjson import DuplicateKeyError, loads_strict
from tests.eventlog.helpers import change, chatter, create_data, header, log_bytes

HEAD = log_bytes(header())


def test_valid_log_with_torn_tail() -> None:
    data = log_bytes(header(), change(create_data("schedule-1")), chatter()) + b'{"type":"x'
    contents = parse_log(data, file="s.jsonl")
    assert contents.ok and not contents.is_new
    assert contents.header == Header(session_id="s-1")
    assert [e.type for e in contents.events] == ["schedule/change", "message/user"]
    assert contents.torn_tail == b'{"type":"x'
    assert contents.complete_size == len(data) - len(b'{"type":"x')
    assert contents.header_size == len(HEAD)
    assert b"".join(e.raw for e in contents.events) == data[len(HEAD) : contents.complete_size]


@pytest.mark.parametrize(
    "data",
    [b"", b'{"type":"session/header"', b"garbage without newline"],
    ids=["empty", "torn", "junk"],
)
def test_new_log(data: bytes) -> None:
    contents = parse_log(data)
    assert contents.is_new and contents.ok and contents.header is None
    assert contents.torn_tail == data and contents.events == ()


def test_crlf_lines_are_accepted() -> None:
    data = log_bytes(header(), chatter()).replace(b"\n", b"\r\n")
    contents = parse_log(data)
    assert contents.ok and len(contents.events) == 1
    assert contents.events[0].raw.endswith(b"\r\n")


def test_other_events_may_carry_extra_keys_or_no_data() -> None:
    contents = parse_log(
        log_bytes(header(), {"type": "a", "data": 1, "extra": True}, {"type": "b"})
    )
    assert contents.ok
    first, second = contents.events
    assert (first.type, first.data, first.exact) == ("a", 1, False)
    assert (second.type, second.data, second.exact) == ("b", None, False)


# Each case: the bytes after a valid header and one valid event (so the bad line is line 3).
LINE_CORRUPTION = [
    ("empty-line", b"", "empty_line", "$", "empty line"),
    ("cr-only", b"\r", "json", "$", "invalid JSON"),
    ("garbage", b"not json", "json", "$", "invalid JSON"),
    ("trailing-garbage", b'{"type":"a"} x', "json", "$", "invalid JSON"),
    # A key given twice is corruption in the envelope and in the payloads the engine reads;
    # inside other payloads it is allowed (docs/decisions.md, "Duplicate keys in event payloads").
    ("duplicate-key", b'{"type":"a","type":"b","data":{}}', "json", "$", "duplicate key"),
    ("duplicate-data", b'{"type":"a","data":{},"data":{}}', "json", "$", "duplicate key"),
    (
        "duplicate-key-in-change",
        b'{"type":"schedule/change","data":{"k":1,"k":2}}',
        "json",
        "$",
        'duplicate key "k"',
    ),
    (
        "duplicate-key-in-followup",
        b'{"type":"message/followup","data":{"a":[{"k":1,"k":2}]}}',
        "json",
        "$",
        'duplicate key "k"',
    ),
    ("duplicate-key-beside-data", b'{"type":"a","data":1,"x":{"k":1,"k":2}}', "json", "$", '"k"'),
    ("duplicate-key-in-array", b'[{"k":1,"k":2}]', "json", "$", "duplicate key"),
    ("nan", b'{"type":"a","data":NaN}', "json", "$", "NaN"),
    ("infinity", b'{"type":"a","data":-Infinity}', "json", "$", "Infinity"),
    ("array", b"[]", "event", "$", "object"),
    ("null", b"null", "event", "$", "object"),
    ("string", b'"event"', "event", "$", "object"),
    ("no-type", b'{"data":{}}', "event", "$.type", "type"),
    ("numeric-type", b'{"type":1,"data":{}}', "event", "$.type", "type"),
    ("null-type", b'{"type":null,"data":{}}', "event", "$.type", "type"),
    ("empty-type", b'{"type":"","data":{}}', "event", "$.type", "type"),
    ("invalid-utf8", b'{"type":"\xff"}', "json", "$", "UTF-8"),
    ("invalid-utf8-in-data", b'{"type":"a","data":"\xed\xa0\x80"}', "json", "$", "UTF-8"),
    (
        "deep-nesting",
        b'{"type":"a","data":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "json",
        "$",
        "too deep",
    ),
    ("integer-too-long", b'{"type":"a","data":' + b"9" * 5000 + b"}", "json", "$", "number"),
]


@pytest.mark.parametrize(
    ("line", "rule", "path", "fragment"),
    [case[1:] for case in LINE_CORRUPTION],
    ids=[case[0] for case in LINE_CORRUPTION],
)
def test_line_corruption(line: bytes, rule: str, path: str, fragment: str) -> None:
    before = log_bytes(header(), chatter())
    data = before + line + b"\n" + log_bytes(chatter("after"))
    contents = parse_log(data, file="log.jsonl")
    bad = contents.corruption
    assert bad is not None
    assert (bad.file, bad.line, bad.offset, bad.rule, bad.path) == (
        "log.jsonl",
        3,
        len(before),
        rule,
        path,
    )
    assert fragment in bad.message
    assert len(contents.events) == 1  # events before the corruption only
    assert contents.complete_size == len(data)  # the rest is measured, not decoded
    error = bad.error()
    assert isinstance(error, CorruptLogError) and error.code == "corrupt_schedule_log"
    assert (error.line, error.offset, error.index) == (3, len(before), 1)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("keep_events", [True, False])
def test_duplicate_keys_inside_other_payloads_are_allowed(fast: bool, keep_events: bool) -> None:
    # As JSON.parse reads them: the last value counts (docs/decisions.md).
    line = (
        b'{"type":"message/user","data":{"text":"a","meta":{"k":1,"k":[{"j":1,"j":2}]},"text":"b"}}'
    )
    data = log_bytes(header()) + line + b"\n"
    contents = parse_lines(io.BytesIO(data), file="log.jsonl", keep_events=keep_events, fast=fast)
    assert contents.ok and contents.event_count == 1
    if keep_events:
        (event,) = contents.events
        assert event.data == {"text": "b", "meta": {"k": [{"j": 2}]}}
        assert event.raw == line + b"\n"


HEADER_CASES = [
    ("not-object", [], "$"),
    ("ordinary-event", {"type": "message/user", "data": {}}, "$.type"),
    ("extra-key", {**header(), "x": 1}, "$.x"),
    ("missing-key", {k: v for k, v in header().items() if k != "seedLength"}, "$"),
    ("version-2", {**header(), "version": 2}, "$.version"),
    ("version-string", {**header(), "version": "1"}, "$.version"),
    ("version-true", {**header(), "version": True}, "$.version"),
    ("session-empty", header(""), "$.sessionId"),
    ("session-number", header(7), "$.sessionId"),  # type: ignore[arg-type]
    ("seed-negative", header(seed=-1), "$.seedLength"),
    ("seed-fraction", header(seed=1.5), "$.seedLength"),
    ("seed-unsafe", header(seed=2**53), "$.seedLength"),
    ("seed-bool", header(seed=False), "$.seedLength"),
    ("parent-number", header(parent=3), "$.parentSessionId"),
]


@pytest.mark.parametrize(
    ("value", "path"), [c[1:] for c in HEADER_CASES], ids=[c[0] for c in HEADER_CASES]
)
def test_header_rejections(value: object, path: str) -> None:
    with pytest.raises(CorruptLogError) as info:
        decode_header(value)
    assert (info.value.rule, info.value.path) == ("header", path)
    bad = parse_log(log_bytes(value) if isinstance(value, dict) else b"[]\n").corruption
    assert bad is not None and bad.line == 1 and bad.offset == 0


def test_header_accepts_integral_floats_and_a_parent() -> None:
    value = {**header(seed=2.0, parent="s-0"), "version": 1.0}
    assert decode_header(value) == Header(session_id="s-1", seed_length=2, parent_session_id="s-0")
    assert Header(session_id="s-1").to_json() == header()


def test_bom_before_header_is_corruption() -> None:
    bad = parse_log(b"\xef\xbb\xbf" + HEAD).corruption
    assert bad is not None and bad.line == 1 and bad.rule == "json"


def test_read_log_matches_parse_log(tmp_path: Path) -> None:
    data = log_bytes(header(), chatter(), b"oops") + b"torn"
    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    from_file = read_log(path)
    assert from_file == parse_log(data, file=str(path))
    assert from_file.torn_tail == b"torn" and from_file.corruption is not None


def _payload_duplicates_only(body: bytes) -> object:
    """``body`` read as JSON.parse reads it, when its keys given twice are all inside the
    ``data`` of an event of another type than schedule/change and message/followup."""

    def unique(value: object) -> bool:  # ``value`` decoded with objects as lists of pairs
        if type(value) is list and value and all(type(p) is tuple for p in value):
            keys = [k for k, _ in value]
            return len(keys) == len(set(keys)) and all(unique(v) for _, v in value)
        return type(value) is not list or all(unique(v) for v in value)

    pairs = json.loads(body, object_pairs_hook=lambda items: [tuple(p) for p in items])
    value = json.loads(body)
    if (
        type(value) is not dict
        or value.get("type") in ("schedule/change", "message/followup")
        or type(value.get("type")) is not str
        or not unique([(k, None) for k, _ in pairs])
        or not all(unique(v) for k, v in pairs if k != "data")
    ):
        raise ValueError("duplicate key")
    return value


def _reference(data: bytes) -> tuple[list[tuple[str, object, bool, bytes]], int | None, bytes]:
    """The reader's contract spelled out with the strict decoder only (no fast path)."""
    *complete, tail = data.split(b"\n")
    events: list[tuple[str, object, bool, bytes]] = []
    for number, body in enumerate(complete[1:], start=2):
        try:
            if not body:
                raise ValueError("empty")
            try:
                value = loads_strict(body)
            except DuplicateKeyError:
                value = _payload_duplicates_only(body)
            got = event_from_value(value, raw=body + b"\n")
        except ValueError:
            return events, number, tail
        events.append((got.type, got.data, got.exact, got.raw))
    return events, None, tail


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=4)
)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=6,
)
event_lines = st.one_of(
    st.builds(
        lambda t, d: encode_line({"type": t, "data": d})[:-1],
        st.text(max_size=4),
        json_values,
    ),
    st.sampled_from(
        [
            b'{"type":"a","data":{"k":1,"k":2}}',
            b'{"data":1,"type":"a"}',
            b'{ "type" : "a" }',
            b'{"type":"a","data":NaN}',
            b'{"type":"a","data":1.0}',
            b'{"type":"a","data":"\\u00e9"}',
            b'{"type":"a","x":1,"data":2}',
            b"[1]",
            b"",
            b"\r",
            b'{"type":"a"}\r',
            b'{"type":"\xff"}',
        ]
    ),
)


@given(lines=st.lists(event_lines, max_size=6), tail=st.binary(max_size=5))
def test_fast_path_agrees_with_the_strict_decoder(lines: list[bytes], tail: bytes) -> None:
    tail = tail.replace(b"\n", b"")
    data = log_bytes(header(), *lines) + tail
    contents = parse_log(data)
    events, bad_line, torn = _reference(data)
    assert [(e.type, e.data, e.exact, e.raw) for e in contents.events] == events
    assert (contents.corruption.line if contents.corruption else None) == bad_line
    assert contents.torn_tail == torn
    assert contents.complete_size == len(data) - len(torn)
