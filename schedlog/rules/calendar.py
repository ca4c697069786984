"""Daily and weekly wall-clock rules: input (docs/rules.md#daily-weekly), next target
(docs/rules.md#daily-weekly), latest-due (docs/rules.md#daily-weekly).

Local dates are plain day numbers (days since 1970-01-01), never ``datetime.date``: the local
date of a representable instant can be 0000-12-31 or 10000-01-01 (docs/rules.md#instants).

DST policy, applied when a date is resolved with the rule's time: a nonexistent local time
skips that date; a repeated local time fires once, at the earlier instant.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

from schedlog.errors import ScheduleInputError
from schedlog.rules.at import format_time, parse_local_time
from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    days_from_civil,
    iso_weekday,
)
from schedlog.rules.text import json_int
from schedlog.rules.zones import Zone, check_time_zone

__all__ = [
    "LAST_LOCAL_DAY",
    "MSG_DAILY_SHAPE",
    "MSG_WEEKDAYS",
    "MSG_WEEKLY_SHAPE",
    "CalendarRule",
    "calendar_latest",
    "calendar_next",
    "local_day",
    "parse_calendar",
    "parse_daily",
    "parse_weekly",
]

MSG_DAILY_SHAPE: Final = "daily must be an object with exactly time and time_zone."
MSG_WEEKLY_SHAPE: Final = "weekly must be an object with exactly time, time_zone, and weekdays."
MSG_WEEKDAYS: Final = "weekly.weekdays must be a non-empty array of ISO weekdays 1 through 7."
_MSG_TIME: Final = "{kind}.time must use HH:mm:ss with optional 1-3 digit fractional seconds."

_DAILY_KEYS: Final = frozenset({"time", "time_zone"})
_WEEKLY_KEYS: Final = frozenset({"time", "time_zone", "weekdays"})

#: Day number of local date 10000-01-01, the last local date a representable instant can have.
LAST_LOCAL_DAY: Final = days_from_civil(10000, 1, 1)


class CalendarRule(NamedTuple):
    """A validated daily or weekly rule: what gets stored plus what the arithmetic needs."""

    kind: Literal["daily", "weekly"]
    time: str  #: normalized ``HH:MM:SS.mmm``
    time_ms: int  #: the same time as milliseconds of the day
    time_zone: str  #: canonical zone name (docs/rules.md#zone-names)
    zone: Zone
    weekdays: tuple[int, ...] | None  #: weekly only: sorted ISO weekdays 1-7


def _parse_weekdays(value: object) -> tuple[int, ...]:
    if type(value) is not list or not value:
        raise ScheduleInputError("invalid_rule", MSG_WEEKDAYS)
    days: list[int] = []
    for element in value:
        n = json_int(element)
        if n is None or not 1 <= n <= 7:
            raise ScheduleInputError("invalid_rule", MSG_WEEKDAYS)
        days.append(n)
    seen: set[int] = set()
    for n in days:
        if n in seen:
            message = f"weekly.weekdays must not repeat weekday {n}."
            raise ScheduleInputError("invalid_rule", message)
        seen.add(n)
    return tuple(sorted(days))


def parse_calendar(kind: Literal["daily", "weekly"], value: object) -> CalendarRule:
    """Validate a ``daily`` or ``weekly`` selector value (docs/rules.md#daily-weekly).

    Check order: key set, ``time``, ``weekdays`` (weekly), then ``time_zone``; every
    ``invalid_rule`` comes before ``invalid_time_zone``. Weekdays are checked element by element
    for type and range before any repeat is reported.
    """
    keys, shape_msg = (
        (_DAILY_KEYS, MSG_DAILY_SHAPE) if kind == "daily" else (_WEEKLY_KEYS, MSG_WEEKLY_SHAPE)
    )
    if not isinstance(value, dict) or value.keys() != keys:
        raise ScheduleInputError("invalid_rule", shape_msg)
    time_ms = parse_local_time(value["time"])
    if time_ms is None:
        raise ScheduleInputError("invalid_rule", _MSG_TIME.format(kind=kind))
    weekdays = _parse_weekdays(value["weekdays"]) if kind == "weekly" else None
    zone, canonical = check_time_zone(value["time_zone"])
    return CalendarRule(kind, format_time(time_ms), time_ms, canonical, zone, weekdays)


def parse_daily(value: object) -> CalendarRule:
    """Validate a ``daily`` selector ``{"time","time_zone"}``."""
    return parse_calendar("daily", value)


def parse_weekly(value: object) -> CalendarRule:
    """Validate a ``weekly`` selector ``{"time","time_zone","weekdays"}``."""
    return parse_calendar("weekly", value)


def local_day(zone: Zone, instant: int) -> int:
    """The local date (day number) of a UTC instant in ``zone``."""
    return (instant + zone.offset(instant)) // DAY_MS


def calendar_next(
    time_ms: int,
    weekdays: tuple[int, ...] | None,
    zone: Zone,
    floor: int,
    after_days: int | None = None,
) -> int | None:
    """The first target strictly after ``floor`` (epoch ms), or None when exhausted
    (docs/rules.md#daily-weekly).

    ``weekdays`` is None for daily. When ``after_days`` (a local day number) is given, only
    local dates strictly after it are considered. Dates whose time falls in a gap are skipped;
    the walk ends at the first candidate beyond MAX or after local date 10000-01-01.
    """
    day = local_day(zone, floor)
    if after_days is not None and after_days + 1 > day:
        day = after_days + 1
    while day <= LAST_LOCAL_DAY:
        if weekdays is None or iso_weekday(day) in weekdays:
            candidate = zone.resolve_local(day * DAY_MS + time_ms)
            if candidate is not None:
                if candidate > MAX_MS:
                    return None
                if candidate >= MIN_MS and candidate > floor:
                    return candidate
        day += 1
    return None


def calendar_latest(
    time_ms: int,
    weekdays: tuple[int, ...] | None,
    zone: Zone,
    at: int,
    target: int,
) -> int | None:
    """The latest rule candidate <= ``at``, found by walking local dates backward
    (docs/rules.md#daily-weekly).

    The walk starts at the UTC calendar date of ``at`` plus one day (zones ahead of UTC) and
    stops once it passes the local date of the committed ``target``: nothing earlier can beat
    the target. Returns None when no candidate is found in that window.
    """
    stop = local_day(zone, target)
    day = at // DAY_MS + 1
    while day >= stop:
        if weekdays is None or iso_weekday(day) in weekdays:
            candidate = zone.resolve_local(day * DAY_MS + time_ms)
            if candidate is not None and candidate <= at:
                return candidate
        day -= 1
    return None
