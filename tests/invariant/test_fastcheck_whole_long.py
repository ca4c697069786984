"""Long logs taken a chunk in one call (``ChunkFold._whole`` for every chunk, as ``replay``,
``validate`` and the session open now take them: docs/decisions.md, "Every compact chunk in one
call"): compact logs of many chunks, at any chunk size, with hostile lines put in anywhere
(lines joined or broken in two, ``]`` or ``[`` at a line's edge, whitespace-only lines, NUL,
a lone ``\\r``, lone surrogates, keys given twice, huge ints, deep nesting), against the
reference; for the open, the lines it keeps are the log's own lines. A weaker byte proof in
``chunk_lines.whole_envelopes`` takes one of these lines for what it is not, and fails here.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog.reader import parse_lines
from schedlog.invariant import fastcheck, fastopen
from schedlog.invariant.chunk_fold import ChunkFold
from schedlog.invariant.fastcheck import fast_check_bytes
from tests.invariant.test_fastcheck import header, spell, valid_events
from tests.invariant.test_fastcheck_whole import HOSTILE, agree_whole

CHUNKS = st.sampled_from([16, 100, 700, 4096, 1 << 18])

#: Edits at a line's edge or inside it: (name, what replaces the line end, or goes after it).
EDITS: dict[str, bytes] = {
    "joined": b"",
    "joined by a comma": b",",
    "joined by a space": b" ",
    "joined by a lone CR": b"\r",
    "joined by ],[": b"],[",
    "a ] at the end": b"]\n",
    "a [ at the start of the next": b"\n[",
    "a whitespace-only line": b"\n \t\n",
    "an empty line": b"\n\n",
    "a lone CR line": b"\n\r\n",
    "a NUL line": b"\n\x00\n",
    "a NUL at the end": b"\x00\n",
    "a CR before the line end": b"\r\n",
    "a space before the line end": b" \n",
}


@st.composite
def long_logs(draw: st.DrawFn) -> bytes:
    """A compact valid log of several chunks' worth of lines, with a few edits: a line end
    replaced (``EDITS``), a line broken in two at any byte, or a hostile line put in."""
    events: list[Any] = []
    for _ in range(draw(st.integers(1, 4))):
        events += draw(valid_events())
    lines = [spell(e, "compact") for e in events]
    for _ in range(draw(st.integers(0, 3))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        way = draw(st.sampled_from(["edit", "break", "hostile"]))
        if way == "edit":
            lines[at] = lines[at][:-1] + EDITS[draw(st.sampled_from(sorted(EDITS)))]
        elif way == "break":
            cut = draw(st.integers(0, len(lines[at]) - 1))
            lines[at] = lines[at][:cut] + b"\n" + lines[at][cut:]
        else:
            lines.insert(at, HOSTILE[draw(st.sampled_from(sorted(HOSTILE)))])
    return spell(header(), "compact") + b"".join(lines)


def _kept(data: bytes, chunk: int) -> fastopen.KeptLines | None:
    """The lines the open keeps of ``data`` read ``chunk`` bytes at a time (None: not taken)."""
    kept = fastopen.KeptLines()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastcheck, "_KINDS_SEEN", [frozenset()])
        fast = fast_check_bytes(data, file="f", chunk=chunk, keep=kept)
    return None if fast is None or kept.failed else kept


def _check_kept(data: bytes, chunk: int) -> None:
    kept = _kept(data, chunk)
    if kept is None:
        return
    reference_read = parse_lines(io.BytesIO(data), file="<bytes>")
    lines = data.split(b"\n")[1:-1]
    assert len(kept.rows) == len(lines) == len(kept.kinds) == reference_read.event_count
    assert list(kept.rows) == [line + b"\n" for line in lines]
    assert kept.rows[1::3] == [line + b"\n" for line in lines[1::3]]
    assert kept.kinds == [event.type for event in reference_read.events]


@given(long_logs(), CHUNKS)
def test_long_logs_agree(data: bytes, chunk: int) -> None:
    agree_whole(data, chunk)


@given(long_logs(), CHUNKS)
def test_the_open_keeps_the_lines_of_long_logs(data: bytes, chunk: int) -> None:
    _check_kept(data, chunk)


@pytest.mark.parametrize("edit", list(EDITS.values()), ids=list(EDITS))
@pytest.mark.parametrize("chunk", [16, 100, 1 << 18])
def test_each_edit_agrees_in_a_long_log(edit: bytes, chunk: int) -> None:
    chat = b'{"type":"message/user","data":{"text":"hi"}}\n'
    for at in (0, 3, 9):
        lines = [chat] * 10
        lines[at] = lines[at][:-1] + edit
        data = spell(header(), "compact") + b"".join(lines)
        agree_whole(data, chunk)
        _check_kept(data, chunk)


def test_long_compact_logs_take_every_chunk_in_one_call() -> None:
    # A long compact chat log: every chunk is taken in one call (none read line by line).
    chat = b'{"type":"message/user","data":{"text":"a<b>\\u00e9</b>"}}\n'
    data = spell(header(), "compact") + chat * 2000
    calls: list[int] = []
    real = ChunkFold._whole

    def counted(self: ChunkFold, body: bytes) -> int:
        count = real(self, body)
        calls.append(count)
        return count

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChunkFold, "_whole", counted)
        assert agree_whole(data, 4096)
        assert sum(calls) == 2000 and len(calls) > 20
        calls.clear()
        _check_kept(data, 4096)
        assert sum(calls) == 2000


def test_a_chunk_not_proven_ends_the_one_call_way() -> None:
    # A spaced line in the third chunk: from there on the chunks go the other ways.
    chat = b'{"type":"message/user","data":{"text":"hi"}}\n'
    spaced = b'{"type": "message/user", "data": {"text": "hi"}}\n'
    body = chat * 300 + spaced + chat * 300
    data = spell(header(), "compact") + body
    fold = ChunkFold(0)
    fold.whole = True
    fold.take(b"", memoryview(chat * 100))
    assert fold.whole and fold.count == 100
    fold.take(b"", memoryview(spaced + chat))
    assert not fold.whole and fold.count == 102
    assert agree_whole(data, 4096)


@pytest.mark.parametrize("chunk", [100, 4096, 1 << 18])
def test_a_cr_inside_a_payload_is_kept_as_the_reference_reads_it(chunk: int) -> None:
    # JSON whitespace inside a payload, a lone "\r" among it: the line is still exactly one
    # compact envelope (its raw ``data`` holds the "\r"), taken in one call; the open splits
    # its lines at "\n" only.
    chat = b'{"type":"message/user","data":{"text":"hi"}}\n'
    spread = b'{"type":"m","data":[1,\r2,\t\r3 ]}\n'
    data = spell(header(), "compact") + (chat * 5 + spread) * 40
    assert ChunkFold(0)._whole(spread * 3) == 3
    assert agree_whole(data, chunk)
    _check_kept(data, chunk)
