"""``format_instant`` keeps the instants it formatted last: a cached answer is the computed
one, the cache stays bounded, and only ints are cached (``True`` is not the instant 1)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schedlog.rules import instants
from schedlog.rules.instants import MAX_MS, MIN_MS, civil_from_days, format_instant


def _computed(ms: int) -> str:
    days, rem = divmod(ms, instants.DAY_MS)
    y, mo, d = civil_from_days(days)
    secs, milli = divmod(rem, 1000)
    h, rest = divmod(secs, 3600)
    mi, s = divmod(rest, 60)
    return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{milli:03d}Z"


@given(st.integers(MIN_MS, MAX_MS))
def test_a_cached_answer_is_the_computed_one(ms: int) -> None:
    assert format_instant(ms) == _computed(ms)
    assert format_instant(ms) == _computed(ms)  # from the cache now
    assert instants._formatted[ms] == _computed(ms)


def test_the_cache_is_bounded() -> None:
    for ms in range(instants._FORMATTED_KEPT + 10):
        format_instant(ms)
    assert len(instants._formatted) <= instants._FORMATTED_KEPT
    assert format_instant(5) == "1970-01-01T00:00:00.005Z"


def test_only_ints_are_cached() -> None:
    instants._formatted.clear()
    format_instant(True)
    assert instants._formatted == {}
