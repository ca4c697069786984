"""docs/rules.md#instants: canonical instants and the civil calendar, including years 0 and
10000."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    civil_from_days,
    days_from_civil,
    days_in_month,
    format_instant,
    iso_weekday,
    parse_canonical_instant,
)


def test_bounds() -> None:
    assert format_instant(MIN_MS) == "0001-01-01T00:00:00.000Z"
    assert format_instant(MAX_MS) == "9999-12-31T23:59:59.999Z"
    with pytest.raises(ValueError):
        format_instant(MIN_MS - 1)
    with pytest.raises(ValueError):
        format_instant(MAX_MS + 1)


@pytest.mark.parametrize(
    ("ymd", "weekday"),
    [
        ((1970, 1, 1), 4),
        ((0, 12, 31), 7),
        ((10000, 1, 1), 6),
        ((1, 1, 1), 1),
        ((2026, 5, 4), 1),
        ((2000, 2, 29), 2),
        ((9999, 12, 31), 5),
    ],
    ids=[
        "epoch-thu",
        "year0-dec31-sun",
        "year10000-jan1",
        "year1",
        "2026-monday",
        "leap-day",
        "year9999-end",
    ],
)
def test_weekdays_including_edge_years(ymd: tuple[int, int, int], weekday: int) -> None:
    days = days_from_civil(*ymd)
    assert civil_from_days(days) == ymd
    assert iso_weekday(days) == weekday


def test_edge_years_calendar() -> None:
    assert days_in_month(0, 2) == 29  # year 0 is a leap year (proleptic Gregorian)
    assert days_in_month(10000, 2) == 29
    assert days_in_month(1900, 2) == 28
    assert days_from_civil(10000, 1, 1) - days_from_civil(9999, 12, 31) == 1
    assert days_from_civil(1, 1, 1) - days_from_civil(0, 12, 31) == 1


@given(st.integers(min_value=days_from_civil(0, 1, 1), max_value=days_from_civil(10000, 12, 31)))
def test_day_number_round_trip(days: int) -> None:
    y, m, d = civil_from_days(days)
    assert days_from_civil(y, m, d) == days
    assert 1 <= d <= days_in_month(y, m)


@given(st.integers(min_value=MIN_MS, max_value=MAX_MS))
def test_format_parse_round_trip_and_matches_datetime(ms: int) -> None:
    text = format_instant(ms)
    assert parse_canonical_instant(text) == ms
    dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    assert text == (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:"
        f"{dt.second:02d}.{dt.microsecond // 1000:03d}Z"
    )


@pytest.mark.parametrize(
    "text",
    [
        "2026-04-31T00:00:00.000Z",
        "2026-05-01T09:00:00.00Z",
        "2026-05-01T09:00:00.000+00:00",
        "2026-05-01t09:00:00.000Z",
        "2026-05-01T09:00:00.000z",
        "0000-12-31T23:00:00.000Z",
        "2026-05-01T24:00:00.000Z",
        "2026-05-01T23:60:00.000Z",
        "2026-05-01T23:59:60.000Z",
        "2026-02-29T00:00:00.000Z",
        "+02026-05-01T09:00:00.000Z",
        "2026-05-01T09:00:00.0000Z",
        "２０２６-05-01T09:00:00.000Z",
        " 2026-05-01T09:00:00.000Z",
        "2026-13-01T00:00:00.000Z",
    ],
    ids=[
        "no-apr-31",
        "two-fraction",
        "offset",
        "lower-t",
        "lower-z",
        "year-0",
        "hour-24",
        "minute-60",
        "leap-second",
        "not-leap",
        "expanded-year",
        "four-fraction",
        "fullwidth-digits",
        "leading-space",
        "month-13",
    ],
)
def test_parse_canonical_rejects(text: str) -> None:
    assert parse_canonical_instant(text) is None


def test_parse_canonical_rejects_non_strings() -> None:
    assert parse_canonical_instant(0) is None
    assert parse_canonical_instant(None) is None


# --- the fixed-position parser against the regex version it replaced ---------------------------

_OLD_CANONICAL = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z", re.ASCII
)


def _old_parse_canonical_instant(text: object) -> int | None:
    """The regex implementation ``parse_canonical_instant`` had before it was made fast."""
    if type(text) is not str:
        return None
    m = _OLD_CANONICAL.fullmatch(text)
    if m is None:
        return None
    y, mo, d, h, mi, s, milli = (int(g) for g in m.groups())
    if y < 1 or not 1 <= mo <= 12 or not 1 <= d <= days_in_month(y, mo):
        return None
    if h > 23 or mi > 59 or s > 59:
        return None
    return days_from_civil(y, mo, d) * DAY_MS + ((h * 60 + mi) * 60 + s) * 1000 + milli


class _Str(str):
    pass


# Characters worth putting anywhere in an instant: digits, every separator, their look-alikes
# (lower-case t/z, full-width and Arabic-Indic digits, a lone surrogate, space, +, newline).
_NEAR = st.sampled_from(list("0123456789-T:.Z tz+/\n\u0660\uff10\u00b2\ud800é"))


@st.composite
def _instant_like(draw: st.DrawFn) -> str:
    base = draw(
        st.one_of(
            st.integers(min_value=MIN_MS, max_value=MAX_MS).map(format_instant),
            # Fields of any two (four, three) digits: month 00-99, day 00-99, hour 24-99 …
            st.tuples(
                st.integers(0, 9999),
                *[st.integers(0, 99)] * 5,
                st.integers(0, 999),
            ).map(
                lambda t: (
                    f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d}T{t[3]:02d}:{t[4]:02d}:{t[5]:02d}.{t[6]:03d}Z"
                )
            ),
            st.text(_NEAR, min_size=20, max_size=28),
        )
    )
    chars = list(base)
    for _ in range(draw(st.integers(0, 3))):
        if not chars:
            break
        op = draw(st.sampled_from(["replace", "insert", "delete"]))
        at = draw(st.integers(0, len(chars) - 1))
        if op == "replace":
            chars[at] = draw(_NEAR)
        elif op == "insert":
            chars.insert(at, draw(_NEAR))
        else:
            del chars[at]
    return "".join(chars)


@given(_instant_like())
def test_parse_canonical_agrees_with_the_regex_version(text: str) -> None:
    assert parse_canonical_instant(text) == _old_parse_canonical_instant(text)
    # The date cache must not change an answer: ask again.
    assert parse_canonical_instant(text) == _old_parse_canonical_instant(text)


@given(st.integers(min_value=0, max_value=9999), st.integers(0, 99), st.integers(0, 99))
def test_parse_canonical_dates_agree_with_the_regex_version(y: int, mo: int, d: int) -> None:
    text = f"{y:04d}-{mo:02d}-{d:02d}T23:59:59.999Z"
    assert parse_canonical_instant(text) == _old_parse_canonical_instant(text)


def test_parse_canonical_rejects_str_subclasses_and_bytes() -> None:
    text = "2026-05-01T09:00:00.000Z"
    assert parse_canonical_instant(text) == _old_parse_canonical_instant(text) is not None
    assert parse_canonical_instant(_Str(text)) is None
    assert parse_canonical_instant(text.encode()) is None
