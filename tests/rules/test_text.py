"""docs/protocol.md#text-and-json: JavaScript trim, UTF-16 length, JSON numbers, compact output,
strict input."""

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.rules.text import (
    JS_WHITESPACE,
    is_blank,
    js_dumps,
    js_trim,
    json_int,
    utf16_len,
)
from schedlog.strictjson import JSONSyntaxError, loads_strict


@pytest.mark.parametrize(
    ("raw", "trimmed"),
    [
        ("\u3000Weekly sync\u00a0", "Weekly sync"),
        ("\u200bx", "\u200bx"),
        ("\u2028", ""),
        ("\ufeff a \t\n", "a"),
        ("\u0085x\u0085", "\u0085x\u0085"),
        ("\u180ex", "\u180ex"),
        ("\x1cx\x1f", "\x1cx\x1f"),
        ("\u205f\u202f\u1680x\u2000\u200a", "x"),
    ],
    ids=[
        "ideographic+nbsp",
        "zwsp-kept",
        "line-sep-blank",
        "bom-tab-nl",
        "nel-kept",
        "mongolian-vs-kept",
        "info-seps-kept",
        "misc-spaces",
    ],
)
def test_js_trim(raw: str, trimmed: str) -> None:
    assert js_trim(raw) == trimmed


def test_whitespace_class_is_exactly_the_spec_set() -> None:
    expected = {
        0x9,
        0xA,
        0xB,
        0xC,
        0xD,
        0x20,
        0xA0,
        0x1680,
        *range(0x2000, 0x200B),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
        0xFEFF,
    }
    assert {ord(c) for c in JS_WHITESPACE} == expected
    assert is_blank("\u2028") and not is_blank("\u200b")


@pytest.mark.parametrize(
    ("text", "units"),
    [("a" * 119 + "\U0001f4c5", 121), ("é", 1), ("", 0), ("\U0001f600\U0001f600", 4)],
    ids=["title-121", "bmp", "empty", "two-astral"],
)
def test_utf16_len(text: str, units: int) -> None:
    assert utf16_len(text) == units


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (300, 300),
        (300.0, 300),
        (3e2, 300),
        (-0.0, 0),
        (True, None),
        (False, None),
        ("300", None),
        (1.5, None),
        (float("nan"), None),
        (float("inf"), None),
        (2**53 - 1, 2**53 - 1),
        (2**53, None),
        (-(2**53 - 1), -(2**53 - 1)),
        (9007199254740992.0, None),
        (None, None),
    ],
    ids=[
        "int",
        "float-integral",
        "exp",
        "neg-zero",
        "true",
        "false",
        "string",
        "fraction",
        "nan",
        "inf",
        "max-safe",
        "unsafe",
        "min-safe",
        "unsafe-float",
        "null",
    ],
)
def test_json_int(value: object, expected: int | None) -> None:
    assert json_int(value) == expected


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("é/\u2028\u2029\x7f", '"é/\u2028\u2029\x7f"'),
        ("\b\t\n\f\r\x00\x1f", '"\\b\\t\\n\\f\\r\\u0000\\u001f"'),
        ('q"b\\', '"q\\"b\\\\"'),
        ("\ud800x\udfff", '"\\ud800x\\udfff"'),
        ({"b": 1, "a": [True, None, "x"]}, '{"b":1,"a":[true,null,"x"]}'),
        ({"k": "\udc00"}, '{"k":"\\udc00"}'),
    ],
    ids=[
        "non-ascii-raw",
        "controls",
        "quote-backslash",
        "lone-surrogates",
        "compact-order",
        "nested-surrogate",
    ],
)
def test_js_dumps(value: object, text: str) -> None:
    assert js_dumps(value) == text


@given(st.text())
def test_js_dumps_round_trips_through_json(s: str) -> None:
    assert json.loads(js_dumps(s)) == s


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1,"a":2}',
        b'{"x":{"a":1,"a":1}}',
        b"NaN",
        b"[Infinity]",
        b"[-Infinity]",
        b"{",
        b"\xef\xbb\xbf{}",
        b"\xff",
        b"",
    ],
    ids=["dup-top", "dup-nested", "nan", "inf", "neg-inf", "truncated", "bom", "bad-utf8", "empty"],
)
def test_loads_strict_rejects(raw: bytes) -> None:
    with pytest.raises(JSONSyntaxError):
        loads_strict(raw)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b'{"a": 1, "b" :[1.0, -0]}', {"a": 1, "b": [1.0, 0]}),
        (b'"\\ud800"', "\ud800"),
        (b'{"a":"\\u00e9"}', {"a": "é"}),
        (b" 1e400 ", float("inf")),
    ],
    ids=["spaces", "lone-surrogate-escape", "escaped-non-ascii", "huge-number"],
)
def test_loads_strict_accepts(raw: bytes, value: object) -> None:
    assert loads_strict(raw) == value


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_loads_strict_agrees_with_stdlib(value: object) -> None:
    assert loads_strict(js_dumps(value).encode("utf-8", "surrogatepass")) == value


@pytest.mark.parametrize(
    ("raw", "position"),
    [
        (b'{"a":"\xff"}', 6),
        (b'{"\xff":1}', 2),
        (b'["ok","\xed\xa0\x80"]', 7),
        (b'"\xc0\x80"', 1),
        (b'{"a":"x\xe2\x82"}', 7),
    ],
    ids=["in-value", "in-key", "encoded-surrogate", "overlong", "truncated-sequence"],
)
def test_loads_strict_invalid_utf8_inside_a_string_is_a_syntax_error(
    raw: bytes, position: int
) -> None:
    # Regression: msgspec's fast path raises UnicodeDecodeError (not DecodeError) for invalid
    # UTF-8 inside a string, and that used to escape loads_strict.
    with pytest.raises(JSONSyntaxError) as info:
        loads_strict(raw)
    assert info.value.position == position
    assert info.value.message == f"invalid UTF-8 at byte {position}"


@pytest.mark.parametrize(
    "raw",
    [
        b"1" + b"0" * 5000,
        b'{"a":-' + b"9" * 5000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    ],
    ids=["integer-too-long", "nested-integer-too-long", "deep-array", "deep-object"],
)
def test_loads_strict_raises_only_json_syntax_errors(raw: bytes) -> None:
    with pytest.raises(JSONSyntaxError):
        loads_strict(raw)


_JSONISH = st.lists(
    st.sampled_from(
        [
            b"{",
            b"}",
            b"[",
            b"]",
            b'"',
            b":",
            b",",
            b"1",
            b"-",
            b"e",
            b".",
            b"\\",
            b"u",
            b"d8",
            b"\xff",
            b"\xed",
            b"\xa0",
            b"\x80",
            b"\xc3",
            b"a",
            b" ",
        ]
    ),
    max_size=30,
).map(b"".join)


@given(st.one_of(st.binary(max_size=40), _JSONISH))
def test_loads_strict_never_raises_anything_else(raw: bytes) -> None:
    with contextlib.suppress(JSONSyntaxError):
        loads_strict(raw)
