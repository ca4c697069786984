"""Absolute ``at`` input (docs/rules.md#at) and the shared time-of-day grammar."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.errors import ScheduleInputError
from schedlog.rules.at import (
    MSG_AT_DATE,
    MSG_AT_GAP,
    MSG_AT_OFFSET,
    MSG_AT_REAL,
    MSG_AT_SHAPE,
    MSG_AT_TIME,
    MSG_AT_TYPE,
    MSG_NOT_FUTURE,
    MSG_OUT_OF_RANGE,
    format_time,
    normalize_time,
    parse_at,
    parse_at_instant,
    parse_local_time,
    parse_normalized_time,
)
from schedlog.rules.instants import MAX_MS, MIN_MS, format_instant, parse_canonical_instant
from schedlog.rules.zones import get_zone
from tests.rules.messages import assert_error
from tests.rules.test_calendar import ORACLE_ZONES, oracle_resolve


def ms(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None, text
    return value


NOW = ms("2026-02-01T00:00:00.000Z")
TZ_STRING = "time_zone must be a string."
TZ_INVALID = "time_zone must be UTC or a valid IANA Area/Location name."


def fails(code: str, message: str, value: object, now: int = NOW) -> None:
    with pytest.raises(ScheduleInputError) as info:
        parse_at(value, now)
    assert_error(info.value, code, message)


# --- string form -------------------------------------------------------------------------------

VALID_STRINGS = [
    ("spec-5.3-offset", "2026-03-01T10:00:00+05:30", "2026-03-01T04:30:00.000Z"),
    ("zulu", "2026-03-01T10:00:00Z", "2026-03-01T10:00:00.000Z"),
    ("fraction-1-digit-pads", "2026-03-01T10:00:00.1Z", "2026-03-01T10:00:00.100Z"),
    ("fraction-2-digits", "2026-03-01T10:00:00.12Z", "2026-03-01T10:00:00.120Z"),
    ("fraction-3-digits", "2026-03-01T10:00:00.123Z", "2026-03-01T10:00:00.123Z"),
    ("negative-offset", "2026-03-01T10:00:00-08:00", "2026-03-01T18:00:00.000Z"),
    ("max-positive-offset", "2026-03-01T10:00:00+23:59", "2026-02-28T10:01:00.000Z"),
    ("max-negative-offset", "2026-03-01T10:00:00-23:59", "2026-03-02T09:59:00.000Z"),
    ("plus-zero-offset", "2026-03-01T10:00:00+00:00", "2026-03-01T10:00:00.000Z"),
    ("leap-day", "2028-02-29T00:00:00Z", "2028-02-29T00:00:00.000Z"),
    ("year-9999-last-ms", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),
    ("offset-moves-into-range", "9999-12-31T23:59:59+00:01", "9999-12-31T23:58:59.000Z"),
    ("leading-zero-fields", "2026-03-01T00:00:00Z", "2026-03-01T00:00:00.000Z"),
]


@pytest.mark.parametrize(
    ("text", "expected"), [v[1:] for v in VALID_STRINGS], ids=[v[0] for v in VALID_STRINGS]
)
def test_string_form(text: str, expected: str) -> None:
    assert format_instant(parse_at(text, NOW)) == expected


SHAPE_ERRORS = [
    ("lower-t", "2026-03-01t10:00:00Z"),
    ("lower-z", "2026-03-01T10:00:00z"),
    ("space-separator", "2026-03-01 10:00:00Z"),
    ("missing-offset", "2026-03-01T10:00:00"),
    ("four-fraction-digits", "2026-03-01T10:00:00.1234Z"),
    ("dot-without-digits", "2026-03-01T10:00:00.Z"),
    ("compact-offset", "2026-03-01T10:00:00+0800"),
    ("hour-only-offset", "2026-03-01T10:00:00+08"),
    ("expanded-year", "+02026-03-01T10:00:00Z"),
    ("five-digit-year", "20260-03-01T10:00:00Z"),
    ("two-digit-year", "26-03-01T10:00:00Z"),
    ("one-digit-month", "2026-3-01T10:00:00Z"),
    ("missing-seconds", "2026-03-01T10:00Z"),
    ("leading-space", " 2026-03-01T10:00:00Z"),
    ("trailing-space", "2026-03-01T10:00:00Z "),
    ("trailing-newline", "2026-03-01T10:00:00Z\n"),
    ("arabic-indic-digits", "٢٠٢٦-03-01T10:00:00Z"),
    ("fullwidth-digit", "2026-03-0１T10:00:00Z"),
    ("comma-fraction", "2026-03-01T10:00:00,5Z"),
    ("date-only", "2026-03-01"),
    ("empty", ""),
    ("shape-before-reality", "2026-13-01T10:00:00+0800"),
]


@pytest.mark.parametrize("text", [v[1] for v in SHAPE_ERRORS], ids=[v[0] for v in SHAPE_ERRORS])
def test_string_shape_errors(text: str) -> None:
    fails("invalid_rule", MSG_AT_SHAPE, text)


REAL_ERRORS = [
    ("year-0000", "0000-06-01T00:00:00Z"),
    ("month-13", "2026-13-01T00:00:00Z"),
    ("month-00", "2026-00-01T00:00:00Z"),
    ("day-00", "2026-03-00T00:00:00Z"),
    ("april-31", "2026-04-31T00:00:00Z"),
    ("feb-29-non-leap", "2026-02-29T00:00:00Z"),
    ("feb-29-1900", "1900-02-29T00:00:00Z"),
    ("hour-24", "2026-03-01T24:00:00Z"),
    ("minute-60", "2026-03-01T10:60:00Z"),
    ("leap-second", "2026-12-31T23:59:60Z"),
    ("reality-before-offset", "2026-02-30T00:00:00-00:00"),
]


@pytest.mark.parametrize("text", [v[1] for v in REAL_ERRORS], ids=[v[0] for v in REAL_ERRORS])
def test_string_reality_errors(text: str) -> None:
    fails("invalid_rule", MSG_AT_REAL, text)


OFFSET_ERRORS = [
    ("negative-zero", "2026-03-01T10:00:00-00:00"),
    ("hour-24", "2026-03-01T10:00:00+24:00"),
    ("minute-60", "2026-03-01T10:00:00+05:60"),
    ("offset-before-range", "0001-01-01T00:00:00+24:00"),
]


@pytest.mark.parametrize("text", [v[1] for v in OFFSET_ERRORS], ids=[v[0] for v in OFFSET_ERRORS])
def test_string_offset_errors(text: str) -> None:
    fails("invalid_rule", MSG_AT_OFFSET, text)


TYPE_ERRORS = [
    ("number", 1_772_000_000_000),
    ("float", 1.5),
    ("null", None),
    ("array", ["2026-03-01T10:00:00Z"]),
    ("true", True),
    ("false", False),
]


@pytest.mark.parametrize("value", [v[1] for v in TYPE_ERRORS], ids=[v[0] for v in TYPE_ERRORS])
def test_other_json_types(value: object) -> None:
    fails("invalid_rule", MSG_AT_TYPE, value)


# --- local object form -------------------------------------------------------------------------


def local(
    date: object = "2026-12-24", time: object = "18:00:00", zone: object = "UTC"
) -> dict[str, object]:
    return {"date": date, "time": time, "time_zone": zone}


VALID_LOCAL = [
    (
        "spec-5.3-berlin",
        local("2026-12-24", "18:00:00.5", "Europe/Berlin"),
        "2026-12-24T17:00:00.500Z",
    ),
    ("utc", local("2026-12-24", "18:00:00", "UTC"), "2026-12-24T18:00:00.000Z"),
    (
        "case-insensitive-zone",
        local("2026-12-24", "18:00:00", "europe/berlin"),
        "2026-12-24T17:00:00.000Z",
    ),
    ("alias-zone", local("2026-07-04", "09:00:00", "US/Eastern"), "2026-07-04T13:00:00.000Z"),
    (
        "berlin-overlap-earlier",
        local("2027-10-31", "02:30:00", "Europe/Berlin"),
        "2027-10-31T00:30:00.000Z",
    ),
    (
        "new-york-overlap-earlier",
        local("2026-11-01", "01:30:00", "America/New_York"),
        "2026-11-01T05:30:00.000Z",
    ),
    (
        "lord-howe-overlap-earlier",
        local("2026-04-05", "01:45:00", "Australia/Lord_Howe"),
        "2026-04-04T14:45:00.000Z",
    ),
    (
        "kolkata-half-hour",
        local("2026-03-01", "09:00:00", "Asia/Kolkata"),
        "2026-03-01T03:30:00.000Z",
    ),
    ("fraction-two-digits", local("2026-03-01", "09:00:00.25", "UTC"), "2026-03-01T09:00:00.250Z"),
    (
        "local-date-9999-east",
        local("9999-12-31", "23:00:00", "Etc/GMT-2"),
        "9999-12-31T21:00:00.000Z",
    ),
]


@pytest.mark.parametrize(
    ("value", "expected"), [v[1:] for v in VALID_LOCAL], ids=[v[0] for v in VALID_LOCAL]
)
def test_local_form(value: dict[str, object], expected: str) -> None:
    assert format_instant(parse_at(value, NOW)) == expected


LOCAL_ERRORS = [
    ("empty-object", {}, "invalid_rule", MSG_AT_TYPE),
    ("missing-zone", {"date": "2026-12-24", "time": "18:00:00"}, "invalid_rule", MSG_AT_TYPE),
    ("extra-key", {**local(), "offset": "+01:00"}, "invalid_rule", MSG_AT_TYPE),
    (
        "camel-case-zone-key",
        {"date": "2026-12-24", "time": "18:00:00", "timeZone": "UTC"},
        "invalid_rule",
        MSG_AT_TYPE,
    ),
    ("keys-before-date", {"date": 5, "time": "18:00:00"}, "invalid_rule", MSG_AT_TYPE),
    ("date-not-string", local(date=20261224), "invalid_rule", MSG_AT_DATE),
    ("date-one-digit-month", local(date="2026-1-24"), "invalid_rule", MSG_AT_DATE),
    ("date-year-0000", local(date="0000-12-31"), "invalid_rule", MSG_AT_DATE),
    ("date-feb-30", local(date="2026-02-30"), "invalid_rule", MSG_AT_DATE),
    ("date-with-time", local(date="2026-12-24T00:00"), "invalid_rule", MSG_AT_DATE),
    ("date-expanded-year", local(date="+02026-12-24"), "invalid_rule", MSG_AT_DATE),
    ("date-non-ascii-digit", local(date="2026-12-٢4"), "invalid_rule", MSG_AT_DATE),
    ("date-before-time", local(date="2026-02-30", time="25:00:00"), "invalid_rule", MSG_AT_DATE),
    ("date-before-zone", local(date="nope", zone=5), "invalid_rule", MSG_AT_DATE),
    ("time-not-string", local(time=64800), "invalid_rule", MSG_AT_TIME),
    ("time-one-digit-hour", local(time="9:00:00"), "invalid_rule", MSG_AT_TIME),
    ("time-no-seconds", local(time="18:00"), "invalid_rule", MSG_AT_TIME),
    ("time-hour-24", local(time="24:00:00"), "invalid_rule", MSG_AT_TIME),
    ("time-leap-second", local(time="23:59:60"), "invalid_rule", MSG_AT_TIME),
    ("time-four-fraction", local(time="18:00:00.1234"), "invalid_rule", MSG_AT_TIME),
    ("time-bare-dot", local(time="18:00:00."), "invalid_rule", MSG_AT_TIME),
    ("time-with-offset", local(time="18:00:00Z"), "invalid_rule", MSG_AT_TIME),
    ("time-padded", local(time=" 18:00:00"), "invalid_rule", MSG_AT_TIME),
    (
        "time-before-zone",
        local(time="18:00", zone="Mars/Olympus_Mons"),
        "invalid_rule",
        MSG_AT_TIME,
    ),
    ("zone-not-string", local(zone=None), "invalid_time_zone", TZ_STRING),
    ("zone-no-slash", local(zone="Europe"), "invalid_time_zone", TZ_INVALID),
    ("zone-utc-plus", local(zone="UTC+8"), "invalid_time_zone", TZ_INVALID),
    ("zone-trailing-space", local(zone="Europe/Paris "), "invalid_time_zone", TZ_INVALID),
    ("zone-unknown", local(zone="Mars/Olympus_Mons"), "invalid_time_zone", TZ_INVALID),
    ("berlin-gap", local("2027-03-28", "02:30:00", "Europe/Berlin"), "invalid_rule", MSG_AT_GAP),
    (
        "new-york-gap",
        local("2026-03-08", "02:30:00", "America/New_York"),
        "invalid_rule",
        MSG_AT_GAP,
    ),
    (
        "lord-howe-gap",
        local("2026-10-04", "02:15:00", "Australia/Lord_Howe"),
        "invalid_rule",
        MSG_AT_GAP,
    ),
    (
        "apia-missing-day",
        local("2011-12-30", "12:00:00", "Pacific/Apia"),
        "invalid_rule",
        MSG_AT_GAP,
    ),
    (
        "gap-before-future-check",
        local("2027-03-28", "02:30:00", "Europe/Berlin"),
        "invalid_rule",
        MSG_AT_GAP,
    ),
]


@pytest.mark.parametrize(
    ("value", "code", "message"), [v[1:] for v in LOCAL_ERRORS], ids=[v[0] for v in LOCAL_ERRORS]
)
def test_local_form_errors(value: object, code: str, message: str) -> None:
    fails(code, message, value, now=ms("2000-01-01T00:00:00.000Z"))


# --- range and future checks (docs/rules.md#at-range)
# ------------------------------------------------------------

RANGE_CASES = [
    ("spec-5.3-year-0", "0001-01-01T05:00:00+06:00", NOW, "time_out_of_range", MSG_OUT_OF_RANGE),
    ("after-max", "9999-12-31T23:00:00-05:00", NOW, "time_out_of_range", MSG_OUT_OF_RANGE),
    ("now-before-min", "2026-03-01T10:00:00Z", MIN_MS - 1, "time_out_of_range", MSG_OUT_OF_RANGE),
    ("now-after-max", "2026-03-01T10:00:00Z", MAX_MS + 1, "time_out_of_range", MSG_OUT_OF_RANGE),
    (
        "range-before-future",
        "0001-01-01T05:00:00+06:00",
        MAX_MS,
        "time_out_of_range",
        MSG_OUT_OF_RANGE,
    ),
    ("equal-to-now", "2026-02-01T00:00:00Z", NOW, "not_future", MSG_NOT_FUTURE),
    ("one-ms-before-now", "2026-01-31T23:59:59.999Z", NOW, "not_future", MSG_NOT_FUTURE),
    ("same-instant-other-offset", "2026-02-01T01:00:00+01:00", NOW, "not_future", MSG_NOT_FUTURE),
]


@pytest.mark.parametrize(
    ("value", "now", "code", "message"),
    [v[1:] for v in RANGE_CASES],
    ids=[v[0] for v in RANGE_CASES],
)
def test_range_and_future(value: object, now: int, code: str, message: str) -> None:
    fails(code, message, value, now)


def test_local_form_range_and_future() -> None:
    fails(
        "time_out_of_range", MSG_OUT_OF_RANGE, local("9999-12-31", "23:30:00", "America/New_York")
    )
    fails("time_out_of_range", MSG_OUT_OF_RANGE, local("0001-01-01", "00:30:00", "Asia/Tokyo"))
    fails("not_future", MSG_NOT_FUTURE, local("2026-01-01", "00:00:00", "UTC"))


def test_one_ms_after_now_is_future() -> None:
    assert parse_at("2026-02-01T00:00:00.001Z", NOW) == NOW + 1


def test_parse_at_instant_skips_only_the_future_check() -> None:
    past = "2020-01-01T00:00:00Z"
    assert parse_at_instant(past, NOW) == ms("2020-01-01T00:00:00.000Z")
    with pytest.raises(ScheduleInputError) as info:
        parse_at_instant(past, MAX_MS + 1)
    assert info.value.code == "time_out_of_range"


# --- time of day -------------------------------------------------------------------------------

LOCAL_TIMES = [
    ("midnight", "00:00:00", 0),
    ("fraction-pads", "09:30:00.5", (9 * 3600 + 30 * 60) * 1000 + 500),
    ("last-ms", "23:59:59.999", 86_399_999),
    ("hour-24", "24:00:00", None),
    ("minute-60", "12:60:00", None),
    ("second-60", "12:00:60", None),
    ("one-digit", "9:00:00", None),
    ("no-seconds", "09:00", None),
    ("four-fraction", "09:00:00.0000", None),
    ("non-ascii", "٠٩:00:00", None),
    ("not-string", 900, None),
]


@pytest.mark.parametrize(
    ("text", "expected"), [v[1:] for v in LOCAL_TIMES], ids=[v[0] for v in LOCAL_TIMES]
)
def test_parse_local_time(text: object, expected: int | None) -> None:
    assert parse_local_time(text) == expected


def test_normalize_time() -> None:
    assert normalize_time("09:00:00") == "09:00:00.000"
    assert normalize_time("09:00:00.1") == "09:00:00.100"
    assert normalize_time("09:00:00.01") == "09:00:00.010"
    assert normalize_time("9:00:00") is None
    assert parse_normalized_time("09:00:00.100") == 32_400_100
    assert parse_normalized_time("09:00:00.1") is None
    assert parse_normalized_time("09:00:00") is None
    assert parse_normalized_time("24:00:00.000") is None


@given(st.integers(0, 86_399_999))
def test_time_format_round_trip(ms_of_day: int) -> None:
    text = format_time(ms_of_day)
    assert parse_normalized_time(text) == ms_of_day
    assert parse_local_time(text) == ms_of_day
    assert normalize_time(text) == text


# --- properties --------------------------------------------------------------------------------


@given(st.integers(MIN_MS + 1, MAX_MS))
def test_canonical_string_round_trip(instant: int) -> None:
    assert parse_at(format_instant(instant), instant - 1) == instant


offsets = st.tuples(st.sampled_from("+-"), st.integers(0, 23), st.integers(0, 59)).filter(
    lambda t: not (t[0] == "-" and t[1] == 0 and t[2] == 0)
)


@given(st.integers(MIN_MS + 2 * 86_400_000, MAX_MS - 2 * 86_400_000), offsets)
def test_offset_shifts_the_instant(instant: int, offset: tuple[str, int, int]) -> None:
    sign, hours, minutes = offset
    off_ms = (hours * 60 + minutes) * 60_000 * (1 if sign == "+" else -1)
    wall = format_instant(instant + off_ms)[:-1]
    assert parse_at_instant(f"{wall}{sign}{hours:02d}:{minutes:02d}", NOW) == instant


@given(
    st.sampled_from(ORACLE_ZONES),
    st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31)),
    st.integers(0, 86_399_999),
)
def test_local_form_agrees_with_zoneinfo(zone: str, date: dt.date, ms_of_day: int) -> None:
    expected = oracle_resolve(zone, date.year, date.month, date.day, ms_of_day)
    value = local(date.isoformat(), format_time(ms_of_day), zone)
    if expected is None:
        fails("invalid_rule", MSG_AT_GAP, value, MIN_MS)
    else:
        assert parse_at(value, MIN_MS) == expected
        found = get_zone(zone)
        assert found is not None
        assert expected + found.offset(expected) == parse_local_day_ms(date, ms_of_day)


def parse_local_day_ms(date: dt.date, ms_of_day: int) -> int:
    return (date.toordinal() - dt.date(1970, 1, 1).toordinal()) * 86_400_000 + ms_of_day


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.from_regex(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,4})?(Z|[+-][0-9]{2}:[0-9]{2})",
        fullmatch=True,
    ),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["date", "time", "time_zone", "x"]), children, max_size=4)
    ),
    max_leaves=8,
)
local_objects = st.fixed_dictionaries(
    {
        "date": st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True) | st.text(max_size=12),
        "time": st.from_regex(r"[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?", fullmatch=True),
        "time_zone": st.sampled_from([*ORACLE_ZONES, "Mars/Base", "utc", "UTC", 7]),
    }
)


@given(json_values | local_objects, st.integers(MIN_MS - 10**12, MAX_MS + 10**12))
def test_parse_at_raises_only_input_errors(value: object, now: int) -> None:
    try:
        result = parse_at(value, now)
    except ScheduleInputError as exc:
        assert exc.code in {"invalid_rule", "invalid_time_zone", "time_out_of_range", "not_future"}
    else:
        assert MIN_MS <= result <= MAX_MS
        assert result > now
