"""The fast path sees exactly the lines the reference sees (``fastcheck`` module docstring,
"Lines").

Issue 19: the chunk trick once decoded a chunk as one JSON array with every ``\\n`` turned into
``,``, so two events on one line, or one event over two lines, passed. Each case here is a log
whose line framing differs from the one a JSON array would see: the reference rejects it, and
the fast path must not take it (:func:`agree` fails when it takes a log differently).
Hypothesis then reframes valid logs at random: a line end turned into a separator, a line
broken in two, both in one chunk (a count of values per chunk cannot see a pair that cancels).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import create_data, delete_data
from tests.invariant.test_fastcheck import HEAD, agree, reference, valid_logs


def _line(value: Any) -> bytes:
    return js_dumps(value).encode()


# The logs (header "s-1").
USER = b'{"type":"user/message","data":1}'
CREATE = _line({"type": "schedule/change", "data": create_data("schedule-1", "at")})
DELETE = _line({"type": "schedule/change", "data": delete_data("schedule-1")})
SPLIT_DELETE = DELETE.replace(b'"version":1,', b'"version":1\n')
M1, M2 = b'{"type":"m","data":1}', b'{"type":"m","data":2}'

BROKEN = {
    # two events on one line, one event over two lines, and the two in one chunk
    "joined": USER + b"," + CREATE + b"\n",
    "split": CREATE + b"\n" + SPLIT_DELETE + b"\n",
    "cancelling pair": CREATE + b"\n" + M1 + b"," + M2 + b"\n" + SPLIT_DELETE + b"\n",
    "cancelling pair, split first": CREATE + b"\n" + SPLIT_DELETE + b"\n" + M1 + b"," + M2 + b"\n",
    # the shapes that would pass a chunk framed as one-element arrays ("\n" -> "],[")
    "joined by ],[": M1 + b"],[" + M2 + b"\n",
    "joined by ] , [": M1 + b"] , [" + M2 + b"\n",
    "split in a nested array": b'{"type":"m","data":[[1\n2]]}\n',
    "split in a string": b'{"type":"m","data":"a\nb"}\n',
    "],[ pair cancelling": M1 + b"],[" + M2 + b'\n{"type":"m","data":[[1\n2]]}\n',
    "split in an object": b'{"type":"m","data":{"a":1\n"b":2}}\n',
    "split after a comma": b'{"type":"m",\n"data":1}\n',
    # brackets at a line edge
    "[ ending a line": b'{"type":"m","data":[\n]}\n',
    "] starting a line": M1 + b"\n]" + M2 + b"\n",
    "line in brackets": b"[" + M1 + b"]\n",
    "[ alone": M1 + b"\n[\n" + M2 + b"\n]\n",
    "two values, no separator": M1 + M2 + b"\n",
    "two values, a space": M1 + b" " + M2 + b"\n",
    # whitespace-only lines
    "empty line": M1 + b"\n\n" + M2 + b"\n",
    "space line": M1 + b"\n \n" + M2 + b"\n",
    "tab line": M1 + b"\n\t\n" + M2 + b"\n",
    "cr line": M1 + b"\n\r\n" + M2 + b"\n",
    # NUL
    "NUL line": M1 + b"\n\x00\n",
    "NUL after a value": M1 + b"\x00\n",
    "NUL before a value": b"\x00" + M1 + b"\n",
    "NUL in a string": b'{"type":"m","data":"a\x00b"}\n',
    "NUL in a type": b'{"type":"m\x00","data":1}\n',
    # a lone "\r": whitespace between values, a control character inside a string
    "lone cr between values": M1 + b"\r" + M2 + b"\n",
    "lone cr in a string": b'{"type":"m","data":"a\rb"}\n',
    "lone cr in a change": CREATE.replace(b'"prompt":"', b'"prompt":"\r') + b"\n",
    "cr, comma": M1 + b"\r," + M2 + b"\n",
}


@pytest.mark.parametrize("body", list(BROKEN.values()), ids=list(BROKEN))
@pytest.mark.parametrize("chunk", [8, 100, 1 << 18])
def test_lines_the_reference_refuses_are_not_taken(body: bytes, chunk: int) -> None:
    data = HEAD + body
    assert reference(data)[0] == "error"
    assert not agree(data, chunk)


TAKEN = {
    "crlf": M1 + b"\r\n" + M2 + b"\r\n",
    "spaces around": b" " + M1 + b" \t\n" + CREATE + b"\r \n",
    "brackets in strings": b'{"type":"m","data":"],[\\n"}\n{"type":"m","data":["],["]}\n',
    "nested arrays": b'{"type":"m","data":[[1],[2]]}\n' + CREATE + b"\n",
    "create then delete": CREATE + b"\n" + DELETE + b"\n",
}


@pytest.mark.parametrize("body", list(TAKEN.values()), ids=list(TAKEN))
@pytest.mark.parametrize("chunk", [8, 100, 1 << 18])
def test_lines_the_reference_takes_agree(body: bytes, chunk: int) -> None:
    data = HEAD + body
    assert reference(data)[0] != "error"
    assert agree(data, chunk) or chunk < 100  # a small chunk may leave a line to the reference


SEPARATORS = st.sampled_from([b",", b"],[", b"] , [", b"", b" ", b"\r", b"\t", b"\x00", b",\r"])


@st.composite
def reframed_logs(draw: st.DrawFn) -> bytes:
    """A valid log with some line ends turned into separators (two lines become one) and some
    lines broken in two at any byte, in the same chunk or not."""
    data = draw(valid_logs())
    head, _, rest = data.partition(b"\n")
    body = bytearray(rest)
    for _ in range(draw(st.integers(1, 4))):
        if not body:
            break
        at = draw(st.integers(0, len(body) - 1))
        if draw(st.booleans()):  # join: the next line end becomes a separator
            end = body.find(b"\n", at)
            if end >= 0 and end + 1 < len(body):
                body[end : end + 1] = draw(SEPARATORS)
        else:  # split: a line end inside a line
            body[at:at] = b"\n"
    return head + b"\n" + bytes(body)


@given(reframed_logs(), st.sampled_from([16, 700, 1 << 18]))
def test_reframed_logs_agree(data: bytes, chunk: int) -> None:
    agree(data, chunk)


def test_an_escaped_colon_in_a_few_typed_lines_is_seen() -> None:
    # The second chunk takes the one-pass decoder (its types are known) and holds few typed
    # lines, which are looked at one by one for an escaped ":" (_check_escapes): here the
    # escape in an id evens out the ":" of a key given twice, which the reference refuses.
    chat = (M1 + b"\n") * 8
    first = CREATE + b"\n" + chat
    bad = (
        _line({"type": "schedule/change", "data": create_data("a:b", "at")})
        .replace(b'"a:b"', b'"a\\u003ab"')
        .replace(b'"kind":"at"', b'"kind":"at","kind":"at"')
    )
    data = HEAD + first + chat + bad + b"\n"
    assert reference(data)[0] == "error"
    assert not agree(data, len(HEAD + first))
