"""The target texts the fast path keeps (``fast_check(..., targets=[])``) for ``replay``.

A text kept for an active record must be exactly ``format_instant`` of its target, split or
not, wherever the log is split; a record whose target a dispatch moved gets None. And a text
the typed path takes for a canonical instant is the one ``format_instant`` gives back.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from schedlog.invariant.chunk_checks import instants_ms
from schedlog.invariant.fastcheck import fast_check_bytes
from schedlog.rules.instants import MAX_MS, CanonicalInstantParser, format_instant
from tests.eventlog.helpers import create_data, dispatch_data, header
from tests.invariant.test_fastcheck import CHUNKS, spell, valid_events, valid_logs
from tests.invariant.test_fastcheck_split import SPLITS, now, split_check

SHAPED = st.builds(
    "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z".format,
    st.integers(0, 9999),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 999),
)


@given(st.lists(SHAPED, min_size=1, max_size=8))
def test_a_text_taken_for_an_instant_is_the_one_format_instant_gives(texts: list[str]) -> None:
    for text, ms in zip(texts, instants_ms(texts, CanonicalInstantParser().parse), strict=True):
        if ms is not None:
            assert format_instant(ms) == text


@given(st.integers(0, MAX_MS))
def test_format_instant_of_a_target_is_taken_back(ms: int) -> None:
    assert instants_ms([format_instant(ms)], CanonicalInstantParser().parse) == [ms]


def _checked(result: Any, targets: list[str | None]) -> int:
    """Whether the kept texts are right for the result: the count of texts kept."""
    if result is None:
        assert targets == []
        return 0
    active = result[1].active
    assert len(targets) == len(active)
    for record, text in zip(active, targets, strict=True):
        assert text is None or text == format_instant(record.scheduled_at)
    return len(active) - targets.count(None)


@given(valid_logs(), CHUNKS)
def test_kept_targets_are_the_formatted_ones(data: bytes, chunk: int) -> None:
    targets: list[str | None] = []
    result = fast_check_bytes(data, file="f", chunk=chunk, targets=targets)
    _checked(result, targets)
    assert result == fast_check_bytes(data, file="f", chunk=chunk)


@given(valid_events(), CHUNKS, SPLITS, st.sampled_from(["compact", "spaced"]))
def test_kept_targets_of_a_split_log(events: list[Any], chunk: int, line: int, style: str) -> None:
    data = b"".join(spell(v, style) for v in [header(), *events])
    whole: list[str | None] = []
    expected = fast_check_bytes(data, file="f", chunk=chunk, targets=whole)
    targets: list[str | None] = []
    got, _ = split_check(data, chunk, line, now, targets=targets)
    assert got == expected
    _checked(got, targets)


def test_a_moved_target_is_not_the_logs_text() -> None:
    at = "2026-05-01T09:00:00.000Z"
    lines = [
        header(),
        {"type": "schedule/change", "data": create_data("e-1", "every", at=at, everySeconds=300)},
        {"type": "schedule/change", "data": create_data("a-1", "at", at=at)},
        {"type": "schedule/change", "data": dispatch_data("e-1", accepted_at=at)},
    ]
    data = b"".join(spell(v, "compact") for v in lines)
    targets: list[str | None] = []
    result = fast_check_bytes(data, file="f", targets=targets)
    assert result is not None
    assert [r.id for r in result[1].active] == ["e-1", "a-1"]
    assert targets == [None, at]
