"""The session open with a long log's second half checked apart (``read_for_open`` with
``split``, which ``session batch`` runs in a child process) against the open in one part and
the reference: the same contents (every event, its raw line), the same fold or the same error,
wherever the log is split and whatever the tail's work gives (its result, nothing, garbage, a
result cut short, lines packed wrong)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlog.eventlog.errors import CorruptLogError
from schedlog.invariant import fastcheck, fastopen
from schedlog.invariant.chunk_fold import ChunkFold
from tests.invariant.test_fastcheck import CHUNKS, CREATE, HEAD, mutated_logs, valid_logs
from tests.invariant.test_fastcheck_lines import BROKEN, reframed_logs
from tests.invariant.test_fastcheck_split import Work, garbage, nothing, now
from tests.invariant.test_fastopen import _reference

Split = Callable[[Work], Callable[[], "bytes | None"]]


def cut_short(work: Work) -> Callable[[], bytes | None]:
    result = work()
    return lambda: result[: len(result) // 2]


def _repacked(change: Callable[[Any], Any]) -> Split:
    """A split whose work's packed lines are decoded, changed by ``change`` and encoded."""

    def split(work: Work) -> Callable[[], bytes | None]:
        result = work()
        if not result:
            return lambda: result
        end = 8 + int.from_bytes(result[:8], "little")
        table, kinds, sizes, ends = fastopen._decode_packed(result[end:])
        packed = msgspec.msgpack.encode(change([table, kinds, sizes, ends]))
        return lambda: result[:end] + packed

    return split


#: Tails whose lines come back wrong: each must send the open to the reference, never give
#: other events.
WRONG_PACKS: dict[str, Split] = {
    "a type missing": _repacked(lambda p: [p[0], p[1][:-1], p[2], p[3]]),
    "a type out of the table": _repacked(lambda p: [p[0][:1], bytes([5]) * len(p[1]), *p[2:]]),
    "a chunk's size wrong": _repacked(lambda p: [p[0], p[1], [s + 1 for s in p[2]], p[3]]),
    "a line end missing": _repacked(lambda p: [*p[:3], [e[:-8] for e in p[3]]]),
    "line ends torn": _repacked(lambda p: [*p[:3], [e + b"\x01" for e in p[3]]]),
    "no chunk sizes": _repacked(lambda p: [p[0], p[1], [], p[3]]),
    "not a pack": _repacked(lambda p: "nothing"),
}


def _open(path: Path, split: Split | None, after_line: int | None) -> tuple[Any, list[bool]]:
    """``read_for_open`` with the log split after the header and ``after_line`` events (None:
    where the open splits it, the middle), any log long enough; and whether each join used the
    tail's result."""
    data = path.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    joins: list[bool] = []
    real_join, real_middle = ChunkFold.join, fastcheck._middle

    def join(self: Any, result: bytes | None) -> Any:
        joined = real_join(self, result)
        joins.append(joined is not None)
        return joined

    def middle(stream: Any, start: int, min_split: int) -> int | None:
        if after_line is None:
            return real_middle(stream, start, 0)
        if after_line >= len(ends) - 1:  # the tail needs a line end of its own
            return None
        return ends[after_line] if ends[after_line] > start else None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastcheck, "_middle", middle)
        patch.setattr(ChunkFold, "join", join)
        try:
            got: Any = fastopen.read_for_open(path, split=split)
        except CorruptLogError as exc:
            got = ("error", exc.rule, exc.message, exc.line)
    return got, joins


def _agree(path: Path, data: bytes, split: Split, after_line: int | None) -> list[bool]:
    """The split open's result is the reference's, every event and its decoded values the
    same; the joins it made."""
    path.write_bytes(data)
    got, joins = _open(path, split, after_line)
    expected = _reference(path)
    assert got == expected
    if type(got) is tuple and type(got[0]) is not str:
        assert [(e.raw, repr(e.data)) for e in got[0].events] == [
            (e.raw, repr(e.data)) for e in expected[0].events
        ]
    return joins


SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
SPLITS = st.one_of(st.none(), st.integers(0, 60))
TAILS = st.sampled_from([now, nothing, garbage, cut_short, *WRONG_PACKS.values()])


@pytest.fixture
def chunk(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    return lambda size: monkeypatch.setattr(fastcheck, "_CHUNK", size)


@SETTINGS
@given(valid_logs(), CHUNKS, SPLITS, TAILS)
def test_valid_logs_split_anywhere_agree(
    tmp_path: Path, chunk: Any, data: bytes, size: int, line: int | None, split: Split
) -> None:
    chunk(size)
    _agree(tmp_path / "log.jsonl", data, split, line)


@SETTINGS
@given(mutated_logs(), CHUNKS, SPLITS)
def test_mutated_logs_split_anywhere_agree(
    tmp_path: Path, chunk: Any, data: bytes, size: int, line: int | None
) -> None:
    chunk(size)
    _agree(tmp_path / "log.jsonl", data, now, line)


@SETTINGS
@given(reframed_logs(), CHUNKS, SPLITS)
def test_reframed_logs_split_anywhere_agree(
    tmp_path: Path, chunk: Any, data: bytes, size: int, line: int | None
) -> None:
    chunk(size)
    _agree(tmp_path / "log.jsonl", data, now, line)


CHAT = b'{"type":"m","data":{"t":"<&>\\u0000","n":[1,2.5]}}\n'
FOLLOWUP = (
    b'{"type":"message/followup","data":{"messageId":"m-1","sessionId":"s-1",'
    b'"createdAt":"2026-05-01T09:00:00.000Z","text":"t","reminders":[]}}\n'
)


@pytest.mark.parametrize("split", [now, *WRONG_PACKS.values()], ids=["now", *WRONG_PACKS])
def test_a_tail_is_joined_or_the_reference_reads(tmp_path: Path, split: Split) -> None:
    creates = [CREATE.replace(b'"a"', b'"%s"' % n) + b"\n" for n in (b"a", b"b", b"c", b"d")]
    data = HEAD + b"".join(create + CHAT * 3 for create in creates)
    joins = _agree(tmp_path / "log.jsonl", data, split, 8)
    assert joins == [True]
    if split is now:  # its lines kept from the tail's bytes, one chunk of them
        got, _ = _open(tmp_path / "log.jsonl", now, 8)
        assert got[0].events._rows._starts[-1:] == [0]


@pytest.mark.parametrize(
    "tail",
    [
        CHAT * 3 + CREATE.replace(b'"a"', b'"b"') + b"\n",
        FOLLOWUP + CHAT,
        b'{"type": "m", "data": {"x": null}}\r\n' * 2,  # spaced, CRLF: lines apart
        b'{"type":"m","data":{"k":1,"k":2}}\n' + CHAT,
        CHAT + b'{"type":"m","data":1}\n{"type":"sched',  # a torn tail
        b'{"type":"m","data":[-1E+999,"\\ud800\\udfff\\udc00"]}\n',
        b'{"type":"message/followup","data":{"messageId":"\\ud800"}}\n',
        *BROKEN.values(),
    ],
)
@pytest.mark.parametrize("split", [now, nothing])
def test_chosen_tails_agree(tmp_path: Path, tail: bytes, split: Split) -> None:
    _agree(tmp_path / "log.jsonl", HEAD + CREATE + b"\n" + CHAT * 2 + tail, split, 3)


@pytest.mark.parametrize("when", ["before", "after"])
def test_the_tails_lines_are_the_bytes_it_checked(tmp_path: Path, when: str) -> None:
    # The tail's bytes are read before its work starts, and its work checks those very bytes:
    # a file rewritten in place (no writer does so) before or after the work ran still opens
    # as the log that was checked, never with lines that were not checked.
    path = tmp_path / "log.jsonl"
    data = HEAD + CREATE + b"\n" + CHAT * 6
    other = data.replace(CHAT, CHAT.replace(b"<&>", b"<x>"))
    path.write_bytes(data)

    def rewriting(work: Work) -> Callable[[], bytes | None]:
        if when == "before":
            path.write_bytes(other)
        result = work()
        path.write_bytes(other)
        return lambda: result

    got, joins = _open(path, rewriting, 3)
    path.write_bytes(data)
    assert joins == [True] and got == _reference(path)
    assert [e.raw for e in got[0].events][-1] == CHAT


def test_a_log_that_grows_meanwhile_opens_as_it_was_read(tmp_path: Path) -> None:
    # The tail's bytes are all those there when the split starts: lines appended after are
    # not the open's (a later read sees them), and none is cut.
    path = tmp_path / "log.jsonl"
    data = HEAD + CREATE + b"\n" + CHAT * 6
    path.write_bytes(data)

    def growing(work: Work) -> Callable[[], bytes | None]:
        with path.open("ab") as log:
            log.write(CHAT * 2)
        return now(work)

    got, joins = _open(path, growing, 3)
    path.write_bytes(data)
    assert joins == [True] and got == _reference(path) and len(got[0].events) == 7


def test_lines_kept_without_their_tail_are_never_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A keep without a KeepTail would miss the tail's lines: such a check is never split.
    monkeypatch.setattr(fastcheck, "_MIN_SPLIT", 0)
    path = tmp_path / "log.jsonl"
    path.write_bytes(HEAD + CREATE + b"\n" + CHAT * 6)
    calls: list[Work] = []
    kept: list[Any] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        fastcheck.fast_check_fd(
            fd, "f", split=lambda work: (calls.append(work), now(work))[1], keep=kept
        )
    finally:
        os.close(fd)
    assert calls == [] and kept


def test_a_library_open_is_never_split(tmp_path: Path) -> None:
    from schedlog.invariant.appender import LogAppender

    path = tmp_path / "log.jsonl"
    path.write_bytes(HEAD + CREATE + b"\n" + CHAT * 6)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastcheck, "_MIN_SPLIT", 0)
        patch.setattr(fastcheck, "_Tail", None)  # a split would fail
        with LogAppender.open(path) as log:
            assert len(log.events_at_open) == 7


def test_a_tail_line_that_does_not_decode_gives_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # The open needs every line to decode into its envelope; a tail that cannot vouch for one
    # gives no result, and the head reads the rest itself (or the reference does).
    def refused(rows: list[bytes], decoded: Any) -> list[str]:
        raise msgspec.DecodeError("no")

    monkeypatch.setattr(fastopen, "_chunk_kinds", refused)
    tail = fastopen.KeptLines().collect()
    tail.append(([b'{"type": "m", "data": 1}\n'], None, None))
    assert tail.failed and fastopen.KeptLines().pack(tail) is None
