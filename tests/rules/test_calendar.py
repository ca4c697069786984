"""Daily and weekly rules: input (docs/rules.md#daily-weekly), next target
(docs/rules.md#daily-weekly), latest candidate (docs/rules.md#daily-weekly).

The zoneinfo oracle below resolves local times independently of ``Zone.resolve_local`` (with
``fold`` and a round trip, from the same pinned tzdata files); other rule tests import it.
"""

from __future__ import annotations

import datetime as dt
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from io import BytesIO
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.errors import ScheduleInputError
from schedlog.rules.calendar import (
    LAST_LOCAL_DAY,
    MSG_DAILY_SHAPE,
    MSG_WEEKDAYS,
    MSG_WEEKLY_SHAPE,
    calendar_latest,
    calendar_next,
    local_day,
    parse_daily,
    parse_weekly,
)
from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    days_from_civil,
    format_instant,
    iso_weekday,
    parse_canonical_instant,
)
from schedlog.rules.zones import Zone, get_zone
from tests.rules.messages import assert_error

# --- the zoneinfo oracle (shared with test_at and test_decide) ---------------------------------

ORACLE_ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Europe/Dublin",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Pacific/Chatham",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "America/St_Johns",
    "America/Sao_Paulo",
    "America/Santiago",
    "Africa/Casablanca",
    "Antarctica/Troll",
    "Pacific/Kiritimati",
    "Etc/GMT+3",
]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


@cache
def oracle_zone(name: str) -> ZoneInfo:
    data = resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()
    return ZoneInfo.from_file(BytesIO(data), key=name)


def oracle_resolve(name: str, year: int, month: int, day: int, ms_of_day: int) -> int | None:
    """Earliest instant showing this wall-clock time in the zone, or None (a gap).

    Years 1..9999 only: this uses ``datetime`` on purpose, to be independent of the library.
    """
    zone = oracle_zone(name)
    naive = datetime(year, month, day) + timedelta(milliseconds=ms_of_day)
    found = []
    for fold in (0, 1):
        utc = naive.replace(tzinfo=zone, fold=fold).astimezone(UTC)
        if utc.astimezone(zone).replace(tzinfo=None) == naive:
            found.append((utc - _EPOCH) // _MS)
    return min(found, default=None)


def oracle_local_date(name: str, instant: int) -> dt.date:
    return (_EPOCH + instant * _MS).astimezone(oracle_zone(name)).date()


def oracle_next(
    name: str, time_ms: int, weekdays: tuple[int, ...] | None, floor: int, after: dt.date | None
) -> int | None:
    """docs/rules.md#daily-weekly by brute force over ``datetime`` dates (for floors well inside
    1900-2100)."""
    date = oracle_local_date(name, floor)
    if after is not None and after + timedelta(days=1) > date:
        date = after + timedelta(days=1)
    for _ in range(40):
        if weekdays is None or date.isoweekday() in weekdays:
            candidate = oracle_resolve(name, date.year, date.month, date.day, time_ms)
            if candidate is not None and candidate > floor:
                return candidate
        date += timedelta(days=1)
    raise AssertionError("no candidate within 40 days")


def oracle_latest(
    name: str, time_ms: int, weekdays: tuple[int, ...] | None, at: int, target: int
) -> int | None:
    """docs/rules.md#daily-weekly by brute force."""
    date = (_EPOCH + at * _MS).date() + timedelta(days=1)
    stop = oracle_local_date(name, target)
    while date >= stop:
        if weekdays is None or date.isoweekday() in weekdays:
            candidate = oracle_resolve(name, date.year, date.month, date.day, time_ms)
            if candidate is not None and candidate <= at:
                return candidate
        date -= timedelta(days=1)
    return None


# --- helpers -----------------------------------------------------------------------------------


def ms(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None, text
    return value


def zone(name: str) -> Zone:
    found = get_zone(name)
    assert found is not None
    return found


def tod(text: str) -> int:
    h, m, s = (int(x) for x in text.split(":"))
    return ((h * 60 + m) * 60 + s) * 1000


def input_error(code: str, message: str, func: object, value: object) -> None:
    assert callable(func)
    with pytest.raises(ScheduleInputError) as info:
        func(value)
    assert_error(info.value, code, message)


DAILY_TIME = "daily.time must use HH:mm:ss with optional 1-3 digit fractional seconds."
WEEKLY_TIME = "weekly.time must use HH:mm:ss with optional 1-3 digit fractional seconds."
TZ_INVALID = "time_zone must be UTC or a valid IANA Area/Location name."

# --- input (docs/rules.md#daily-weekly)
# ------------------------------------------------------------------------------


def test_daily_normalizes_time_and_zone() -> None:
    rule = parse_daily({"time": "09:30:00.5", "time_zone": "US/Eastern"})
    assert (rule.kind, rule.time, rule.time_ms, rule.time_zone, rule.weekdays) == (
        "daily",
        "09:30:00.500",
        (9 * 3600 + 1800) * 1000 + 500,
        "America/New_York",
        None,
    )


WEEKDAY_NORMALIZATION = [
    ("sorted", [1, 3, 5], (1, 3, 5)),
    ("unsorted", [5, 1, 3], (1, 3, 5)),
    ("integral-floats", [7.0, 1.0], (1, 7)),
    ("single", [7], (7,)),
    ("all", [7, 6, 5, 4, 3, 2, 1], (1, 2, 3, 4, 5, 6, 7)),
]


@pytest.mark.parametrize(
    ("days", "expected"),
    [v[1:] for v in WEEKDAY_NORMALIZATION],
    ids=[v[0] for v in WEEKDAY_NORMALIZATION],
)
def test_weekly_normalizes_weekdays(days: list[object], expected: tuple[int, ...]) -> None:
    rule = parse_weekly({"time": "09:00:00", "time_zone": "UTC", "weekdays": days})
    assert rule.weekdays == expected
    assert all(type(d) is int for d in rule.weekdays or ())


def daily(time: object = "09:00:00", zone: object = "UTC") -> dict[str, object]:
    return {"time": time, "time_zone": zone}


def weekly(
    time: object = "09:00:00", zone: object = "UTC", days: object = (1,)
) -> dict[str, object]:
    return {
        "time": time,
        "time_zone": zone,
        "weekdays": list(days) if isinstance(days, tuple) else days,
    }


DAILY_ERRORS = [
    ("not-object", "09:00:00", "invalid_rule", MSG_DAILY_SHAPE),
    ("null", None, "invalid_rule", MSG_DAILY_SHAPE),
    ("array", ["09:00:00", "UTC"], "invalid_rule", MSG_DAILY_SHAPE),
    ("missing-zone", {"time": "09:00:00"}, "invalid_rule", MSG_DAILY_SHAPE),
    ("extra-weekdays", weekly(), "invalid_rule", MSG_DAILY_SHAPE),
    ("camel-case-key", {"time": "09:00:00", "timeZone": "UTC"}, "invalid_rule", MSG_DAILY_SHAPE),
    ("time-not-string", daily(time=900), "invalid_rule", DAILY_TIME),
    ("time-null", daily(time=None), "invalid_rule", DAILY_TIME),
    ("time-one-digit", daily(time="9:00:00"), "invalid_rule", DAILY_TIME),
    ("time-hh-mm", daily(time="09:00"), "invalid_rule", DAILY_TIME),
    ("time-24", daily(time="24:00:00"), "invalid_rule", DAILY_TIME),
    ("time-leap-second", daily(time="23:59:60"), "invalid_rule", DAILY_TIME),
    ("time-offset", daily(time="09:00:00+01:00"), "invalid_rule", DAILY_TIME),
    ("time-padded", daily(time="09:00:00 "), "invalid_rule", DAILY_TIME),
    ("time-four-fraction", daily(time="09:00:00.0001"), "invalid_rule", DAILY_TIME),
    ("time-before-zone", daily(time="9:00", zone=5), "invalid_rule", DAILY_TIME),
    ("zone-not-string", daily(zone=None), "invalid_time_zone", "time_zone must be a string."),
    ("zone-shape", daily(zone="UTC+8"), "invalid_time_zone", TZ_INVALID),
    ("zone-unknown", daily(zone="Mars/Olympus_Mons"), "invalid_time_zone", TZ_INVALID),
]


@pytest.mark.parametrize(
    ("value", "code", "message"), [v[1:] for v in DAILY_ERRORS], ids=[v[0] for v in DAILY_ERRORS]
)
def test_daily_errors(value: object, code: str, message: str) -> None:
    input_error(code, message, parse_daily, value)


WEEKLY_ERRORS = [
    ("not-object", 5, "invalid_rule", MSG_WEEKLY_SHAPE),
    ("daily-shape", daily(), "invalid_rule", MSG_WEEKLY_SHAPE),
    ("extra-key", {**weekly(), "x": 1}, "invalid_rule", MSG_WEEKLY_SHAPE),
    ("time", weekly(time="9:00:00"), "invalid_rule", WEEKLY_TIME),
    ("time-before-weekdays", weekly(time="9:00:00", days=[]), "invalid_rule", WEEKLY_TIME),
    ("weekdays-object", weekly(days={"1": 1}), "invalid_rule", MSG_WEEKDAYS),
    ("weekdays-null", weekly(days=None), "invalid_rule", MSG_WEEKDAYS),
    ("weekdays-number", weekly(days=1), "invalid_rule", MSG_WEEKDAYS),
    ("weekdays-string", weekly(days="1"), "invalid_rule", MSG_WEEKDAYS),
    ("weekdays-empty", weekly(days=[]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-zero", weekly(days=[0]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-eight", weekly(days=[8]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-true", weekly(days=[True]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-string", weekly(days=["1"]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-null", weekly(days=[None]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-fraction", weekly(days=[1.5]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-nested", weekly(days=[[1]]), "invalid_rule", MSG_WEEKDAYS),
    ("weekday-nan", weekly(days=[float("nan")]), "invalid_rule", MSG_WEEKDAYS),
    ("repeat", weekly(days=[1, 1]), "invalid_rule", "weekly.weekdays must not repeat weekday 1."),
    (
        "repeat-float",
        weekly(days=[3, 1, 3.0]),
        "invalid_rule",
        "weekly.weekdays must not repeat weekday 3.",
    ),
    ("type-before-repeat", weekly(days=[2, 2, "x"]), "invalid_rule", MSG_WEEKDAYS),
    ("weekdays-before-zone", weekly(days=[], zone=7), "invalid_rule", MSG_WEEKDAYS),
    ("zone", weekly(zone="Europe"), "invalid_time_zone", TZ_INVALID),
]


@pytest.mark.parametrize(
    ("value", "code", "message"), [v[1:] for v in WEEKLY_ERRORS], ids=[v[0] for v in WEEKLY_ERRORS]
)
def test_weekly_errors(value: object, code: str, message: str) -> None:
    input_error(code, message, parse_weekly, value)


# --- next target (docs/rules.md#daily-weekly)
# ------------------------------------------------------------------------

NEXT_CASES = [
    # (id, zone, time, weekdays, floor, after_days, expected)
    (
        "spec-7.6-year-0",
        "Etc/GMT+3",
        "22:00:00",
        None,
        "0001-01-01T00:00:00.000Z",
        None,
        "0001-01-01T01:00:00.000Z",
    ),
    (
        "spec-7.6-year-10000",
        "Etc/GMT-2",
        "00:30:00",
        None,
        "9999-12-31T21:00:00.000Z",
        None,
        "9999-12-31T22:30:00.000Z",
    ),
    (
        "weekly-year-0-sunday",
        "Etc/GMT+3",
        "22:00:00",
        (7,),
        "0001-01-01T00:00:00.000Z",
        None,
        "0001-01-01T01:00:00.000Z",
    ),
    (
        "weekly-year-10000-saturday",
        "Etc/GMT-2",
        "00:30:00",
        (6,),
        "9999-12-31T21:00:00.000Z",
        None,
        "9999-12-31T22:30:00.000Z",
    ),
    (
        "year-0-candidate-before-min-skipped",
        "Etc/GMT+3",
        "20:00:00",
        None,
        "0001-01-01T00:00:00.000Z",
        None,
        "0001-01-01T23:00:00.000Z",
    ),
    ("exhausted-past-max", "UTC", "23:00:00", None, "9999-12-31T23:00:00.000Z", None, None),
    (
        "exhausted-after-10000-01-01",
        "Etc/GMT-2",
        "01:00:00",
        None,
        "9999-12-31T23:00:00.000Z",
        None,
        None,
    ),
    ("weekly-exhausted", "UTC", "09:00:00", (1,), "9999-12-28T00:00:00.000Z", None, None),
    (
        "last-representable",
        "UTC",
        "23:59:59.999",
        None,
        "9999-12-31T00:00:00.000Z",
        None,
        "9999-12-31T23:59:59.999Z",
    ),
    (
        "strictly-after-floor",
        "UTC",
        "09:00:00",
        None,
        "2026-05-04T09:00:00.000Z",
        None,
        "2026-05-05T09:00:00.000Z",
    ),
    (
        "same-day-later",
        "UTC",
        "09:00:00",
        None,
        "2026-05-04T08:59:59.999Z",
        None,
        "2026-05-04T09:00:00.000Z",
    ),
    (
        "after-days-skips-same-day",
        "UTC",
        "09:00:00",
        None,
        "2026-05-04T08:00:00.000Z",
        "2026-05-04",
        "2026-05-05T09:00:00.000Z",
    ),
    (
        "after-days-earlier-than-floor",
        "UTC",
        "09:00:00",
        None,
        "2026-05-04T08:00:00.000Z",
        "2026-05-01",
        "2026-05-04T09:00:00.000Z",
    ),
    (
        "spec-7.7-berlin-gap",
        "Europe/Berlin",
        "02:30:00",
        None,
        "2027-03-27T12:00:00.000Z",
        None,
        "2027-03-29T00:30:00.000Z",
    ),
    (
        "berlin-autumn-earlier",
        "Europe/Berlin",
        "02:30:00",
        None,
        "2027-10-30T12:00:00.000Z",
        None,
        "2027-10-31T00:30:00.000Z",
    ),
    (
        "berlin-autumn-no-repeat",
        "Europe/Berlin",
        "02:30:00",
        None,
        "2027-10-31T00:30:00.000Z",
        None,
        "2027-11-01T01:30:00.000Z",
    ),
    (
        "new-york-spring-gap",
        "America/New_York",
        "02:30:00",
        None,
        "2026-03-07T12:00:00.000Z",
        None,
        "2026-03-09T06:30:00.000Z",
    ),
    (
        "new-york-spring-day",
        "America/New_York",
        "09:00:00",
        None,
        "2026-03-08T00:00:00.000Z",
        None,
        "2026-03-08T13:00:00.000Z",
    ),
    (
        "new-york-autumn-earlier",
        "America/New_York",
        "01:30:00",
        None,
        "2026-10-31T12:00:00.000Z",
        None,
        "2026-11-01T05:30:00.000Z",
    ),
    (
        "new-york-autumn-no-repeat",
        "America/New_York",
        "01:30:00",
        None,
        "2026-11-01T05:30:00.000Z",
        None,
        "2026-11-02T06:30:00.000Z",
    ),
    (
        "lord-howe-spring-gap",
        "Australia/Lord_Howe",
        "02:15:00",
        None,
        "2026-10-03T12:00:00.000Z",
        None,
        "2026-10-04T15:15:00.000Z",
    ),
    (
        "lord-howe-autumn-earlier",
        "Australia/Lord_Howe",
        "01:45:00",
        None,
        "2026-04-04T12:00:00.000Z",
        None,
        "2026-04-04T14:45:00.000Z",
    ),
    (
        "lord-howe-autumn-no-repeat",
        "Australia/Lord_Howe",
        "01:45:00",
        None,
        "2026-04-04T14:45:00.000Z",
        None,
        "2026-04-05T15:15:00.000Z",
    ),
    (
        "apia-missing-day-daily",
        "Pacific/Apia",
        "12:00:00",
        None,
        "2011-12-29T23:00:00.000Z",
        None,
        "2011-12-30T22:00:00.000Z",
    ),
    (
        "apia-missing-friday-weekly",
        "Pacific/Apia",
        "12:00:00",
        (5,),
        "2011-12-29T23:00:00.000Z",
        None,
        "2012-01-05T22:00:00.000Z",
    ),
    (
        "feb-29-weekly",
        "UTC",
        "09:00:00",
        (2,),
        "2028-02-28T12:00:00.000Z",
        None,
        "2028-02-29T09:00:00.000Z",
    ),
    (
        "feb-29-daily-leap",
        "Europe/Berlin",
        "23:30:00",
        None,
        "2028-02-29T12:00:00.000Z",
        None,
        "2028-02-29T22:30:00.000Z",
    ),
    (
        "weekly-after-day-31",
        "Europe/Berlin",
        "09:00:00",
        (1,),
        "2026-01-31T12:00:00.000Z",
        None,
        "2026-02-02T08:00:00.000Z",
    ),
    (
        "weekly-year-end",
        "UTC",
        "12:00:00",
        (5,),
        "2026-12-26T00:00:00.000Z",
        None,
        "2027-01-01T12:00:00.000Z",
    ),
    (
        "weekly-several-days",
        "Asia/Kolkata",
        "08:00:00",
        (2, 4),
        "2026-05-05T03:00:00.000Z",
        None,
        "2026-05-07T02:30:00.000Z",
    ),
    (
        "weekly-new-york-spring-sunday-gap",
        "America/New_York",
        "02:30:00",
        (7,),
        "2026-03-07T12:00:00.000Z",
        None,
        "2026-03-15T06:30:00.000Z",
    ),
    (
        "weekly-new-york-autumn-sunday-earlier",
        "America/New_York",
        "01:30:00",
        (7,),
        "2026-10-31T12:00:00.000Z",
        None,
        "2026-11-01T05:30:00.000Z",
    ),
    (
        "weekly-new-york-autumn-no-repeat",
        "America/New_York",
        "01:30:00",
        (7,),
        "2026-11-01T05:30:00.000Z",
        None,
        "2026-11-08T06:30:00.000Z",
    ),
    (
        "weekly-berlin-spring-sunday-gap",
        "Europe/Berlin",
        "02:30:00",
        (7,),
        "2027-03-27T12:00:00.000Z",
        None,
        "2027-04-04T00:30:00.000Z",
    ),
    (
        "weekly-berlin-autumn-sunday-earlier",
        "Europe/Berlin",
        "02:30:00",
        (7,),
        "2027-10-30T12:00:00.000Z",
        None,
        "2027-10-31T00:30:00.000Z",
    ),
    (
        "weekly-lord-howe-spring-sunday-gap",
        "Australia/Lord_Howe",
        "02:15:00",
        (7,),
        "2026-10-03T12:00:00.000Z",
        None,
        "2026-10-10T15:15:00.000Z",
    ),
    (
        "weekly-lord-howe-autumn-sunday-earlier",
        "Australia/Lord_Howe",
        "01:45:00",
        (7,),
        "2026-04-04T12:00:00.000Z",
        None,
        "2026-04-04T14:45:00.000Z",
    ),
    (
        "weekly-feb-29-only-in-leap-years",
        "UTC",
        "09:00:00",
        (2,),
        "2028-02-22T09:00:00.000Z",
        None,
        "2028-02-29T09:00:00.000Z",
    ),
]


@pytest.mark.parametrize(
    ("zone_name", "time", "weekdays", "floor", "after", "expected"),
    [v[1:] for v in NEXT_CASES],
    ids=[v[0] for v in NEXT_CASES],
)
def test_calendar_next(
    zone_name: str,
    time: str,
    weekdays: tuple[int, ...] | None,
    floor: str,
    after: str | None,
    expected: str | None,
) -> None:
    hms, _, frac = time.partition(".")
    time_ms = tod(hms) + (int(frac) if frac else 0)
    after_days = None if after is None else days_from_civil(*(int(x) for x in after.split("-")))
    result = calendar_next(time_ms, weekdays, zone(zone_name), ms(floor), after_days)
    assert (None if result is None else format_instant(result)) == expected


def test_calendar_next_floor_below_min() -> None:
    # A floor before MIN (not a valid clock, but the walk must still skip candidates < MIN).
    floor = MIN_MS - 3 * 3_600_000
    result = calendar_next(tod("20:00:00"), None, zone("Etc/GMT+3"), floor)
    assert result == ms("0001-01-01T23:00:00.000Z")


def test_last_local_day_is_10000_01_01() -> None:
    assert days_from_civil(10000, 1, 1) == LAST_LOCAL_DAY
    assert iso_weekday(LAST_LOCAL_DAY) == 6
    assert local_day(zone("Etc/GMT-14"), MAX_MS) == LAST_LOCAL_DAY
    assert local_day(zone("Etc/GMT+12"), MIN_MS) == days_from_civil(0, 12, 31)


# --- latest candidate (docs/rules.md#daily-weekly)
# ------------------------------------------------------------

LATEST_CASES = [
    # (id, zone, time, weekdays, at, target, expected)
    (
        "same-day",
        "UTC",
        "09:00:00",
        None,
        "2026-05-04T09:45:00.000Z",
        "2026-05-04T09:30:00.000Z",
        "2026-05-04T09:00:00.000Z",
    ),
    (
        "previous-day",
        "UTC",
        "09:00:00",
        None,
        "2026-05-05T08:00:00.000Z",
        "2026-05-04T09:00:00.000Z",
        "2026-05-04T09:00:00.000Z",
    ),
    (
        "many-days-later",
        "UTC",
        "09:00:00",
        None,
        "2026-06-05T08:00:00.000Z",
        "2026-05-04T09:00:00.000Z",
        "2026-06-04T09:00:00.000Z",
    ),
    (
        "zone-ahead-of-utc",
        "Pacific/Kiritimati",
        "05:00:00",
        None,
        "2026-05-04T20:00:00.000Z",
        "2026-05-01T15:00:00.000Z",
        "2026-05-04T15:00:00.000Z",
    ),
    (
        "stops-at-target-date",
        "UTC",
        "09:00:00",
        None,
        "2026-05-04T08:00:00.000Z",
        "2026-05-04T07:00:00.000Z",
        None,
    ),
    (
        "weekly-walks-back",
        "UTC",
        "09:00:00",
        (1,),
        "2026-05-10T12:00:00.000Z",
        "2026-04-27T09:00:00.000Z",
        "2026-05-04T09:00:00.000Z",
    ),
    (
        "gap-day-skipped",
        "Europe/Berlin",
        "02:30:00",
        None,
        "2027-03-28T12:00:00.000Z",
        "2027-03-20T01:30:00.000Z",
        "2027-03-27T01:30:00.000Z",
    ),
    (
        "overlap-earlier",
        "Europe/Berlin",
        "02:30:00",
        None,
        "2027-10-31T01:45:00.000Z",
        "2027-10-30T00:30:00.000Z",
        "2027-10-31T00:30:00.000Z",
    ),
    (
        "year-10000-date",
        "Etc/GMT-2",
        "00:30:00",
        None,
        "9999-12-31T23:00:00.000Z",
        "9999-12-30T22:30:00.000Z",
        "9999-12-31T22:30:00.000Z",
    ),
    (
        "year-0-date",
        "Etc/GMT+3",
        "22:00:00",
        None,
        "0001-01-01T02:00:00.000Z",
        "0001-01-01T01:00:00.000Z",
        "0001-01-01T01:00:00.000Z",
    ),
]


@pytest.mark.parametrize(
    ("zone_name", "time", "weekdays", "at", "target", "expected"),
    [v[1:] for v in LATEST_CASES],
    ids=[v[0] for v in LATEST_CASES],
)
def test_calendar_latest(
    zone_name: str,
    time: str,
    weekdays: tuple[int, ...] | None,
    at: str,
    target: str,
    expected: str | None,
) -> None:
    result = calendar_latest(tod(time), weekdays, zone(zone_name), ms(at), ms(target))
    assert (None if result is None else format_instant(result)) == expected


# --- properties against the oracle -------------------------------------------------------------

floors = st.integers(ms("1900-01-03T00:00:00.000Z"), ms("2100-12-01T00:00:00.000Z"))
times = st.one_of(
    st.integers(0, DAY_MS - 1),
    # Times near common transition hours, where gaps and overlaps live.
    st.integers(0, 4 * 3_600_000).map(lambda t: t - t % 900_000),
)
weekday_sets = st.none() | st.sets(st.integers(1, 7), min_size=1).map(lambda s: tuple(sorted(s)))
transition_floors = st.sampled_from(
    [
        "2026-03-07T12:00:00.000Z",
        "2026-10-31T12:00:00.000Z",
        "2027-03-27T12:00:00.000Z",
        "2027-10-30T12:00:00.000Z",
        "2026-04-03T12:00:00.000Z",
        "2026-10-02T12:00:00.000Z",
        "2011-12-28T12:00:00.000Z",
        "2026-09-26T12:00:00.000Z",
    ]
).map(ms)


@given(
    st.sampled_from(ORACLE_ZONES), times, weekday_sets, floors | transition_floors, st.booleans()
)
def test_next_agrees_with_oracle(
    zone_name: str, time_ms: int, weekdays: tuple[int, ...] | None, floor: int, use_after: bool
) -> None:
    found = zone(zone_name)
    after = oracle_local_date(zone_name, floor) if use_after else None
    after_days = None if after is None else days_from_civil(after.year, after.month, after.day)
    result = calendar_next(time_ms, weekdays, found, floor, after_days)
    assert result == oracle_next(zone_name, time_ms, weekdays, floor, after)
    assert result is not None
    assert result > floor
    local = result + found.offset(result)
    assert local % DAY_MS == time_ms
    if weekdays is not None:
        assert iso_weekday(local // DAY_MS) in weekdays


@given(
    st.sampled_from(ORACLE_ZONES),
    times,
    weekday_sets,
    floors | transition_floors,
    st.integers(0, 20 * DAY_MS),
)
def test_latest_agrees_with_oracle(
    zone_name: str, time_ms: int, weekdays: tuple[int, ...] | None, target: int, delta: int
) -> None:
    at = target + delta
    result = calendar_latest(time_ms, weekdays, zone(zone_name), at, target)
    assert result == oracle_latest(zone_name, time_ms, weekdays, at, target)
    if result is not None:
        assert result <= at
        # Nothing between the candidate and ``at`` matches: it is the latest one.
        following = calendar_next(time_ms, weekdays, zone(zone_name), result)
        assert following is None or following > at


@given(
    st.sampled_from(["Etc/GMT+3", "Etc/GMT-2", "Etc/GMT-14", "Etc/GMT+12", "UTC"]),
    st.integers(0, DAY_MS - 1),
    weekday_sets,
    st.one_of(st.integers(MIN_MS, MIN_MS + 20 * DAY_MS), st.integers(MAX_MS - 20 * DAY_MS, MAX_MS)),
)
def test_next_at_the_edges_of_time(
    zone_name: str, time_ms: int, weekdays: tuple[int, ...] | None, floor: int
) -> None:
    found = zone(zone_name)
    result = calendar_next(time_ms, weekdays, found, floor)
    if result is None:
        # Exhausted: every later matching local date up to 10000-01-01 resolves beyond MAX.
        day = local_day(found, floor)
        for d in range(day, LAST_LOCAL_DAY + 1):
            if weekdays is None or iso_weekday(d) in weekdays:
                c = found.resolve_local(d * DAY_MS + time_ms)
                assert c is None or c <= floor or c > MAX_MS
    else:
        assert floor < result <= MAX_MS
        assert result >= MIN_MS
        local = result + found.offset(result)
        assert local % DAY_MS == time_ms
        assert weekdays is None or iso_weekday(local // DAY_MS) in weekdays
