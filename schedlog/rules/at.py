"""Absolute ``at`` input (docs/rules.md#at) and the local time-of-day grammar shared with
daily/weekly.

An ``at`` selector is an RFC 3339 string with an explicit offset, or a local object
``{"date","time","time_zone"}`` resolved in that zone. Only the resulting UTC instant (epoch ms)
is kept. DST policy for the local form: a nonexistent local time is rejected (``invalid_rule``);
a repeated local time resolves to the earlier instant (``Zone.resolve_local``).
"""

from __future__ import annotations

import re
from typing import Final

from schedlog.errors import ScheduleInputError
from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    days_from_civil,
    days_in_month,
    is_representable,
)
from schedlog.rules.zones import check_time_zone

__all__ = [
    "MSG_AT_DATE",
    "MSG_AT_GAP",
    "MSG_AT_OFFSET",
    "MSG_AT_REAL",
    "MSG_AT_SHAPE",
    "MSG_AT_TIME",
    "MSG_AT_TYPE",
    "MSG_NOT_FUTURE",
    "MSG_OUT_OF_RANGE",
    "check_future",
    "check_range",
    "format_time",
    "normalize_time",
    "parse_at",
    "parse_at_instant",
    "parse_local_time",
    "parse_normalized_time",
]

MSG_AT_TYPE: Final = (
    "at must be an RFC 3339 string or an object with exactly date, time, and time_zone."
)
MSG_AT_SHAPE: Final = (
    "at must use YYYY-MM-DDTHH:mm:ss with optional 1-3 digit fractional seconds"
    " and an explicit Z or numeric offset."
)
MSG_AT_REAL: Final = "The at value must be a real ISO calendar date and time."
MSG_AT_OFFSET: Final = "The at numeric offset is invalid."
MSG_AT_DATE: Final = "at.date must be a real YYYY-MM-DD calendar date."
MSG_AT_TIME: Final = "at.time must use HH:mm:ss with optional 1-3 digit fractional seconds."
MSG_AT_GAP: Final = "The local at time does not exist in the selected time zone."
MSG_OUT_OF_RANGE: Final = (
    "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant."
)
MSG_NOT_FUTURE: Final = "The scheduled time must be strictly in the future."

_AT_STRING: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,3}))?(?:Z|([+-])([0-9]{2}):([0-9]{2}))",
    re.ASCII,
)
_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", re.ASCII)
_TIME: Final = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,3}))?", re.ASCII)
_NORMALIZED_TIME: Final = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})", re.ASCII)
_LOCAL_KEYS: Final = frozenset({"date", "time", "time_zone"})


def _fraction_ms(digits: str | None) -> int:
    """Right-pad a 1-3 digit fraction to milliseconds: ``.1`` is 100 ms."""
    return 0 if digits is None else int(digits.ljust(3, "0"))


def _time_of_day(h: str, mi: str, s: str, frac: str | None) -> int | None:
    hour, minute, second = int(h), int(mi), int(s)
    if hour > 23 or minute > 59 or second > 59:
        return None
    return ((hour * 60 + minute) * 60 + second) * 1000 + _fraction_ms(frac)


def _real_date(y: str, mo: str, d: str) -> int | None:
    """Day number of a real proleptic Gregorian date with year >= 1, else None."""
    year, month, day = int(y), int(mo), int(d)
    if year < 1 or not 1 <= month <= 12 or not 1 <= day <= days_in_month(year, month):
        return None
    return days_from_civil(year, month, day)


def parse_local_time(text: object) -> int | None:
    """Milliseconds of the day for ``HH:MM:SS`` with an optional 1-3 digit fraction, else None.

    Two-digit fields, hour 00-23, minute and second 00-59 (no ``24:00``, no leap second), ASCII
    digits only, nothing before or after (docs/rules.md#at-local, docs/rules.md#daily-weekly).
    """
    if type(text) is not str:
        return None
    m = _TIME.fullmatch(text)
    return None if m is None else _time_of_day(*m.groups())


def parse_normalized_time(text: object) -> int | None:
    """Milliseconds of the day for a stored, already normalized ``HH:MM:SS.mmm``, else None."""
    if type(text) is not str:
        return None
    m = _NORMALIZED_TIME.fullmatch(text)
    return None if m is None else _time_of_day(*m.groups())


def format_time(ms_of_day: int) -> str:
    """The normalized ``HH:MM:SS.mmm`` form of a time of day given in milliseconds."""
    secs, milli = divmod(ms_of_day, 1000)
    mins, s = divmod(secs, 60)
    h, mi = divmod(mins, 60)
    return f"{h:02d}:{mi:02d}:{s:02d}.{milli:03d}"


def normalize_time(text: object) -> str | None:
    """``HH:MM:SS[.f{1,3}]`` right-padded to ``HH:MM:SS.mmm``, or None when it is not valid."""
    ms = parse_local_time(text)
    return None if ms is None else format_time(ms)


def check_range(instant: int, now: int) -> None:
    """docs/rules.md#at-range: the instant and the clock sample must both be representable."""
    if not MIN_MS <= instant <= MAX_MS or not is_representable(now):
        raise ScheduleInputError("time_out_of_range", MSG_OUT_OF_RANGE)


def check_future(instant: int, now: int) -> None:
    """docs/rules.md#at-range: an instant equal to ``now`` is not in the future."""
    if instant <= now:
        raise ScheduleInputError("not_future", MSG_NOT_FUTURE)


def _parse_string(text: str) -> int:
    m = _AT_STRING.fullmatch(text)
    if m is None:
        raise ScheduleInputError("invalid_rule", MSG_AT_SHAPE)
    y, mo, d, h, mi, s, frac, sign, oh, om = m.groups()
    day = _real_date(y, mo, d)
    tod = _time_of_day(h, mi, s, frac)
    if day is None or tod is None:
        raise ScheduleInputError("invalid_rule", MSG_AT_REAL)
    offset = 0
    if sign is not None:
        off_h, off_m = int(oh), int(om)
        if off_h > 23 or off_m > 59 or (sign == "-" and off_h == 0 and off_m == 0):
            raise ScheduleInputError("invalid_rule", MSG_AT_OFFSET)
        offset = (off_h * 60 + off_m) * 60_000
        if sign == "-":
            offset = -offset
    return day * DAY_MS + tod - offset


def _parse_local(obj: dict[object, object]) -> int:
    if obj.keys() != _LOCAL_KEYS:
        raise ScheduleInputError("invalid_rule", MSG_AT_TYPE)
    date, time = obj["date"], obj["time"]
    m = _DATE.fullmatch(date) if type(date) is str else None
    day = None if m is None else _real_date(*m.groups())
    if day is None:
        raise ScheduleInputError("invalid_rule", MSG_AT_DATE)
    tod = parse_local_time(time)
    if tod is None:
        raise ScheduleInputError("invalid_rule", MSG_AT_TIME)
    zone, _ = check_time_zone(obj["time_zone"])
    instant = zone.resolve_local(day * DAY_MS + tod)
    if instant is None:
        raise ScheduleInputError("invalid_rule", MSG_AT_GAP)
    return instant


def parse_at_instant(value: object, now: int) -> int:
    """Parse an ``at`` selector with every check of docs/rules.md#at except the future check.

    Runs the shape, reality, offset, zone and gap checks, then docs/rules.md#at-range (the instant
    and ``now`` representable). Equivalent ``at`` updates (docs/protocol.md#update) stop here;
    creation continues with :func:`check_future`. Returns epoch ms (UTC).
    """
    if type(value) is str:
        instant = _parse_string(value)
    elif isinstance(value, dict):
        instant = _parse_local(value)
    else:
        raise ScheduleInputError("invalid_rule", MSG_AT_TYPE)
    check_range(instant, now)
    return instant


def parse_at(value: object, now: int) -> int:
    """The UTC instant (epoch ms) of an ``at`` selector that is strictly after ``now``
    (docs/rules.md#at).

    Raises :class:`ScheduleInputError` with ``invalid_rule``, ``invalid_time_zone``,
    ``time_out_of_range`` or ``not_future``, in the check order of
    docs/rules.md#at-string, docs/rules.md#at-range.
    """
    instant = parse_at_instant(value, now)
    check_future(instant, now)
    return instant
