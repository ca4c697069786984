"""A chunk decoded in one call (``chunk_lines.whole_lines``, ``ChunkFold._whole``: the way of
a small log) against the reference.

The chunk is taken only when the compact text of its envelopes is the chunk byte for byte
(``chunk_lines`` module docstring, "The whole chunk in one call"). Here every chunk of every
log is tried that way first (``whole=True``, at any chunk size), on valid logs, mutated ones,
reframed ones (joined and split lines) and hostile payloads; the result must be the
reference's, or None. Writers' compact logs must be taken that way, line for line.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.invariant.chunk_fold import ChunkFold
from schedlog.invariant.chunk_lines import (
    NotTaken,
    decode_envelope,
    whole_envelopes,
    whole_line_ends,
    whole_lines,
)
from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import header
from tests.invariant.test_fastcheck import (
    CHUNKS,
    HEAD,
    fast,
    mutated_logs,
    reference,
    spell,
    valid_events,
    valid_logs,
)
from tests.invariant.test_fastcheck_lines import BROKEN, CREATE, DELETE, TAKEN, reframed_logs


def whole(data: bytes, chunk: int = 1 << 18) -> Any:
    """The fast path's result with every chunk tried in one call first."""
    return fast(data, chunk, whole=True)


def agree_whole(data: bytes, chunk: int = 1 << 18) -> bool:
    got = whole(data, chunk)
    if got is None:
        return False
    assert got == reference(data)
    return True


@given(valid_logs(), CHUNKS)
def test_valid_logs_agree(data: bytes, chunk: int) -> None:
    agree_whole(data, chunk)


@given(mutated_logs(), CHUNKS)
def test_mutated_logs_agree(data: bytes, chunk: int) -> None:
    agree_whole(data, chunk)


@given(reframed_logs(), st.sampled_from([16, 700, 1 << 18]))
def test_reframed_logs_agree(data: bytes, chunk: int) -> None:
    agree_whole(data, chunk)


@pytest.mark.parametrize("body", list(BROKEN.values()), ids=list(BROKEN))
def test_lines_the_reference_refuses_are_not_taken(body: bytes) -> None:
    assert reference(HEAD + body)[0] == "error"
    assert not agree_whole(HEAD + body)
    with pytest.raises(NotTaken):
        whole_lines(body)


@pytest.mark.parametrize("body", list(TAKEN.values()), ids=list(TAKEN))
def test_lines_the_reference_takes_agree(body: bytes) -> None:
    agree_whole(HEAD + body)


@given(valid_events())
def test_compact_logs_are_taken_in_one_call(events: list[Any]) -> None:
    # Every line of a compact log is an envelope whose compact text is the line itself: the
    # chunk is taken in one call whenever it is UTF-8 and each line alone decodes as one.
    body = b"".join(spell(e, "compact") for e in events)
    data = spell(header(), "compact") + body
    taken = []
    real = ChunkFold._whole

    def counted(self: ChunkFold, chunk: bytes) -> int:
        count = real(self, chunk)
        taken.append(count)
        return count

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChunkFold, "_whole", counted)
        assert agree_whole(data)
    try:
        body.decode()
        list(map(decode_envelope, body.splitlines()))
    except (UnicodeDecodeError, msgspec.DecodeError):
        return  # a lone surrogate, as is or escaped: only the reference's read takes it
    if events:
        assert taken == [len(events)]
        kinds, payloads = whole_lines(body)
        assert kinds == [e["type"] for e in events]
        _ends_agree(body)
        assert [bytes(p) for p in payloads] == [js_dumps(e["data"]).encode() for e in events]


def _line(kind: bytes, data: bytes) -> bytes:
    return b'{"type":"' + kind + b'","data":' + data + b"}\n"


_DEEP = b"[" * 200 + b"]" * 200
_PAD = b'"' + b"x" * 400 + b'"'
HOSTILE = {
    # envelopes that are not compact, or not envelopes
    "data given twice": b'{"type":"m","data":1,"data":2}\n',
    "type given twice": b'{"type":"m","type":"m","data":1}\n',
    "data first": b'{"data":1,"type":"m"}\n',
    "escaped type": b'{"type":"\\u006d","data":1}\n',
    "escaped line end in type": b'{"type":"a\\nb","data":1}\n',
    "empty type": b'{"type":"","data":1}\n',
    "markup type": b'{"type":"<b>&amp;</b>","data":"<script>"}\n',
    "unknown member": b'{"type":"m","data":1,"x":2}\n',
    "no data": b'{"type":"m"}\n',
    "an array": b"[1]\n",
    "a NUL between values": _line(b"m", b"1")[:-1] + b"\x00\n",
    # payloads: nesting, big ints, UTF-8, surrogates, markup
    "long payload nested 200 deep": _line(b"m", b"[" + _PAD + b"," + _DEEP + b"]"),
    "long payload nested 190 deep": _line(b"m", b"[" + _PAD + b"," + _DEEP[10:-10] + b"]"),
    "short payload nested 150 deep": _line(b"m", b"[" * 150 + b"]" * 150),
    "4300 digits": _line(b"m", b"[" + b"9" * 4300 + b"]"),
    "4299 digits": _line(b"m", b"[" + b"9" * 4299 + b"]"),
    "bad UTF-8": _line(b"m", b'"\xff"'),
    "truncated UTF-8": _line(b"m", b'"\xe4\xb8"'),
    "encoded surrogate": _line(b"m", b'"\xed\xa0\x80"'),
    "escaped lone surrogate": _line(b"m", b'"\\ud800"'),
    "emoji": _line(b"m", '"📅 会议"'.encode()),
    "emoji in type": _line("📅".encode(), b"1"),
    "huge payload": _line(b"m", b'"' + b"a" * 70_000 + b'"'),
    "empty object": _line(b"m", b"{}"),
    "key twice in a payload": _line(b"m", b'{"a":1,"a":2}'),
    "a create after chat": _line(b"m", b"1") + CREATE + b"\n" + DELETE + b"\n",
    "a create given twice": CREATE + b"\n" + CREATE + b"\n",
    "a key twice in a create": CREATE.replace(b'"kind":"at"', b'"kind":"at","kind":"at"') + b"\n",
}


@pytest.mark.parametrize("body", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize("chunk", [16, 1 << 18])
def test_hostile_lines_agree(body: bytes, chunk: int) -> None:
    agree_whole(HEAD + body, chunk)


@pytest.mark.parametrize(
    ("name", "taken"),
    [
        ("long payload nested 200 deep", False),
        ("4300 digits", False),
        ("bad UTF-8", False),
        ("long payload nested 190 deep", True),
        ("short payload nested 150 deep", True),
        ("4299 digits", True),
        ("emoji", True),
        ("markup type", True),
        ("a create after chat", True),
    ],
)
def test_what_the_one_call_leaves_to_the_line_by_line_read(name: str, taken: bool) -> None:
    # Nesting past 199 levels (the reference takes up to about 985), 4300 digits and bytes
    # that are not UTF-8 go line by line, which decides as the reference does.
    body = HOSTILE[name]
    fold = ChunkFold(0)
    if taken:
        assert fold._whole(body) == body.count(b"\n")
    else:
        with pytest.raises(NotTaken):
            fold._whole(body)
    assert (whole(HEAD + body) is not None) == (reference(HEAD + body)[0] != "error")


@given(st.lists(st.sampled_from(list(HOSTILE.values())), min_size=1, max_size=4))
def test_hostile_lines_mixed_agree(bodies: list[bytes]) -> None:
    agree_whole(HEAD + b"".join(bodies))


def test_whole_lines_of_raw_payloads() -> None:
    body = _line(b"a", b"1") + _line(b"b", b'{"x":[1,"]\\n"]}')
    kinds, payloads = whole_lines(body)
    assert kinds == ["a", "b"]
    assert [bytes(p) for p in payloads] == [b"1", b'{"x":[1,"]\\n"]}']
    assert all(isinstance(p, msgspec.Raw) for p in payloads)
    for bad in (b"", b"\n", body[:-1], body + b"\n", b" " + body):
        with pytest.raises(NotTaken):
            whole_lines(bad)


@pytest.mark.parametrize(
    "body",
    [
        b'{"type":"a","data":[1\n,2]}\n',
        b'{"type":"a","data":{"x"\n:1}}\n',
        b'{"type":"a","data":[1,\n2]}\n{"type":"b","data":3}\n',
        b'{"type":"a","data":1}\n{"type":"b","data":[\n]}\n',
    ],
)
def test_a_payload_broken_at_whitespace_is_not_taken(body: bytes) -> None:
    # Decoded with its line ends in place, such a chunk is one envelope a value whose
    # compact text (the line end inside its payload) is the chunk itself: only the count of
    # line ends refuses it (chunk_lines module docstring).
    with pytest.raises(NotTaken):
        whole_lines(body)
    assert reference(HEAD + body)[0] == "error"
    assert not agree_whole(HEAD + body)


def _ends_agree(body: bytes) -> None:
    """The line ends :func:`whole_envelopes` fills in are the readable ``whole_line_ends``'s,
    and are where the reference's lines end."""
    ends: list[int] = [-1]
    envelopes = whole_envelopes(body, ends)
    assert ends == whole_line_ends(envelopes)
    lines = body.split(b"\n")[:-1]
    assert ends == [sum(len(line) + 1 for line in lines[: i + 1]) for i in range(len(lines))]


@pytest.mark.parametrize("name", list(HOSTILE), ids=list(HOSTILE))
def test_the_line_ends_of_a_chunk_taken_whole(name: str) -> None:
    body = HOSTILE[name] + _line("📅".encode(), b'"<b>\\ud800</b>"') + HOSTILE[name]
    try:
        whole_envelopes(body)
    except NotTaken:
        return
    _ends_agree(body)
