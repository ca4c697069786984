"""A long log checked in two parts (``fastcheck`` with ``split``) against one part.

The second part (the tail) is folded without the first part's state: deletes and dispatches of
records it did not create are kept, in order, and joined into the first part's fold
(``ChunkFold.join``). Wherever the log is split, and whatever the tail's work gives (its result,
nothing, garbage), the result must be the one of the unsplit fast path, which
``tests/invariant/test_fastcheck.py`` proves equal to the reference.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.invariant import fastcheck
from schedlog.invariant.chunk_fold import ChunkFold
from schedlog.invariant.fastcheck import fast_check_bytes
from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import create_data, delete_data, dispatch_data, header
from tests.invariant.test_fastcheck import (
    CHUNKS,
    agree,
    mutated_logs,
    spell,
    valid_events,
    valid_logs,
)

Work = Callable[[], bytes]


def now(work: Work) -> Callable[[], bytes | None]:
    result = work()
    return lambda: result


def nothing(work: Work) -> Callable[[], bytes | None]:
    return lambda: None


def garbage(work: Work) -> Callable[[], bytes | None]:
    work()
    return lambda: b"\x93\xa1x"


def split_check(
    data: bytes,
    chunk: int,
    after_line: int,
    split: Any = now,
    rendered: list[bytes] | None = None,
) -> tuple[Any, list[bool]]:
    """The fast path's result with the log split after the header and ``after_line`` events
    (at or past the last line end: not split), and whether each join used the tail's result;
    the JSON text of the records kept in ``rendered`` when given."""
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    joins: list[bool] = []
    real_join = ChunkFold.join

    def join(self: Any, result: bytes | None) -> Any:
        joined = real_join(self, result)
        joins.append(joined is not None)
        return joined

    def middle(stream: Any, start: int, min_split: int) -> int | None:
        if after_line >= len(ends) - 1:  # the tail needs a line end of its own
            return None
        return ends[after_line] if ends[after_line] > start else None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastcheck, "_middle", middle)
        patch.setattr(ChunkFold, "join", join)
        result = fast_check_bytes(
            data, file="f", chunk=chunk, split=split, min_split=0, rendered=rendered
        )
    return result, joins


SPLITS = st.integers(0, 60)


@given(valid_logs(), CHUNKS, SPLITS, st.sampled_from([now, nothing, garbage]))
def test_valid_logs_split_anywhere_agree(data: bytes, chunk: int, line: int, split: Any) -> None:
    got, _ = split_check(data, chunk, line, split)
    assert got == fast_check_bytes(data, file="f", chunk=chunk)


@given(mutated_logs(), CHUNKS, SPLITS)
def test_mutated_logs_split_anywhere_agree(data: bytes, chunk: int, line: int) -> None:
    got, _ = split_check(data, chunk, line)
    assert got == fast_check_bytes(data, file="f", chunk=chunk)
    if got is not None:
        assert agree(data, chunk)


@given(
    valid_events(),
    st.sampled_from([100, 4096, 1 << 18]),
    SPLITS,
    st.sampled_from(["compact", "spaced"]),
)
def test_writer_logs_are_joined(events: list[Any], chunk: int, line: int, style: str) -> None:
    # Changes and follow-ups as writers spell them are always taken a chunk at a time, so the
    # tail is sure of its part and the join uses it.
    events = [e for e in events if e["type"] in ("schedule/change", "message/followup")]
    data = b"".join(spell(v, style) for v in [header(), *events])
    got, joins = split_check(data, chunk, line)
    assert got is not None and got == fast_check_bytes(data, file="f", chunk=chunk)
    assert joins in ([], [True])
    if 0 < line < len(events):
        assert joins == [True]


def _log(*changes: dict[str, Any], seed: int = 0) -> bytes:
    lines = [header(seed=seed), *({"type": "schedule/change", "data": c} for c in changes)]
    return b"".join(js_dumps(v).encode() + b"\n" for v in lines)


AT = "2026-05-01T09:00:00.000Z"
LATER = "2026-05-01T10:00:00.000Z"


@pytest.mark.parametrize(
    ("changes", "valid"),
    [
        # the tail deletes and dispatches what the head created
        ([create_data("a", "at", AT), delete_data("a")], True),
        ([create_data("a", "after", AT, afterSeconds=60), dispatch_data("a")], True),
        ([create_data("e", "every", AT, everySeconds=300), dispatch_data("e", LATER)], True),
        (
            [
                create_data("e", "every", AT, everySeconds=300),
                dispatch_data("e", LATER),
                delete_data("e"),
            ],
            True,
        ),
        # ... and what the head no longer holds, or never held
        ([create_data("a", "at", AT), delete_data("a"), delete_data("a")], False),
        ([create_data("a", "at", AT), delete_data("b")], False),
        # a one-shot dispatch of an every record, an every dispatch of a one-shot
        ([create_data("e", "every", AT, everySeconds=300), dispatch_data("e")], False),
        ([create_data("a", "at", AT), dispatch_data("a", LATER)], False),
        # an every dispatch accepted before its target
        ([create_data("e", "every", LATER, everySeconds=300), dispatch_data("e", AT)], False),
        # an id the head created, created again in the tail, or deleted there and then created
        ([create_data("a", "at", AT), create_data("a", "at", AT)], False),
        ([create_data("a", "at", AT), delete_data("a"), create_data("a", "at", AT)], False),
    ],
)
@pytest.mark.parametrize("line", [1, 2])
def test_chosen_splits(changes: list[dict[str, Any]], valid: bool, line: int) -> None:
    data = _log(*changes)
    got, joins = split_check(data, 1 << 18, line)
    assert got == fast_check_bytes(data, file="f")
    assert (got is not None) == valid
    if valid and line < len(changes):
        assert joins == [True]


def test_a_tail_not_all_owned_is_folded_by_the_head() -> None:
    # seedLength 2: the tail (from event 1 on) starts before the owned part; its result is not
    # used, and the head folds the rest with the seed length.
    data = _log(
        create_data("a", "at", AT),
        create_data("b", "at", AT),
        create_data("c", "at", AT),
        delete_data("c"),
        seed=2,
    )
    got, joins = split_check(data, 1 << 18, 1)
    assert joins == [False]
    assert got is not None and got == fast_check_bytes(data, file="f")
    assert [r.id for r in got[1].active] == []


def test_a_short_log_is_not_split() -> None:
    calls: list[Work] = []
    data = _log(create_data("a", "at", AT), delete_data("a"))
    result = fast_check_bytes(data, split=lambda work: (calls.append(work), now(work))[1])
    assert result is not None and not calls


@given(valid_logs(), CHUNKS, st.sampled_from([0, 200, 1 << 30]))
def test_the_real_middle_agrees(data: bytes, chunk: int, min_split: int) -> None:
    # Where the log is split (or, shorter than min_split, not split) by _middle itself.
    got = fast_check_bytes(data, file="f", chunk=chunk, split=now, min_split=min_split)
    assert got == fast_check_bytes(data, file="f", chunk=chunk)


@pytest.mark.parametrize("min_split", [0, 10, 1 << 30])
@pytest.mark.parametrize("long_line", [False, True])
def test_the_middle_leaves_the_stream_where_it_was(min_split: int, long_line: bool) -> None:
    body = _log(create_data("a", "at", AT), delete_data("a"))
    if long_line:  # the next line end is several look-aheads past the middle
        body = body.replace(b"Prompt of a", b"p" * (1 << 16), 1)
    stream = io.BytesIO(body)
    stream.seek(7)
    fastcheck._middle(stream, body.index(b"\n") + 1, min_split)
    assert stream.tell() == 7
