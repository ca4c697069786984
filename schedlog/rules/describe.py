"""Rules in words (docs/rules.md#descriptions): the one human description of a record's rule,
shown by the web page and carried by the HTTP API's record views.

Pure and total: :func:`describe_rule` gives a text for every valid record of every kind, and
:func:`describe_cron` for every parsed cron rule, from the rule's value sets and star flags
(docs/rules.md#cron-star), so the description follows the same grammar as the cron code
beside it and never gives up on a shape. Local-time rules name their zone; one-shot rules state
their target in UTC.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from schedlog.rules.cron import CronRule, parse_cron
from schedlog.rules.instants import DAY_MS, civil_from_days, iso_weekday
from schedlog.rules.record import Record

__all__ = ["describe_cron", "describe_instant", "describe_rule", "describe_seconds"]

WEEKDAY_NAMES: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # ISO 1-7
MONTH_NAMES: Final = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)
#: At most this many times of day are listed ("at 09:00, 13:00"); more are said as a pattern.
MAX_LISTED_TIMES: Final = 4
_ALL_DAYS_OF_MONTH: Final = tuple(range(1, 32))
_ALL_MONTHS: Final = tuple(range(1, 13))


def describe_seconds(total: int) -> str:
    """``900`` -> ``15 min``, ``5400`` -> ``1 h 30 min``, ``86400`` -> ``1 day``."""
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    parts = []
    if days:
        parts.append("1 day" if days == 1 else f"{days} days")
    parts.extend(f"{n} {unit}" for n, unit in ((hours, "h"), (minutes, "min"), (seconds, "s")) if n)
    return " ".join(parts) or "0 s"


def describe_instant(ms: int) -> str:
    """An instant in UTC: ``2026-05-01 18:00 Fri UTC``; seconds and milliseconds only when
    they are not zero."""
    days, rem = divmod(ms, DAY_MS)
    year, month, day = civil_from_days(days)
    seconds, millis = divmod(rem, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    clock = _clock(hour, minute, second, millis)
    return f"{year:04d}-{month:02d}-{day:02d} {clock} {WEEKDAY_NAMES[iso_weekday(days) - 1]} UTC"


def _clock(hour: int, minute: int, second: int = 0, millis: int = 0) -> str:
    text = f"{hour:02d}:{minute:02d}"
    if second or millis:
        text += f":{second:02d}"
    if millis:
        text += f".{millis:03d}"
    return text


def _short_time(time: str) -> str:
    """A stored ``HH:MM:SS.mmm`` as ``HH:MM``, ``HH:MM:SS`` or ``HH:MM:SS.mmm``."""
    hms, _, fraction = time.partition(".")
    hour, minute, second = (int(part) for part in hms.split(":"))
    return _clock(hour, minute, second, int(fraction or "0"))


def _runs(values: Sequence[int], name: Callable[[int], str]) -> str:
    """Sorted values by name, runs of three or more as a range: ``Mon-Wed, Fri``."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{name(values[i])}-{name(values[j])}")
        else:
            out.extend(name(v) for v in values[i : j + 1])
        i = j + 1
    return ", ".join(out)


def _weekday_name(day: int) -> str:
    return WEEKDAY_NAMES[day - 1]


def _weekday_phrase(iso_days: Sequence[int]) -> str:
    """ISO weekdays (sorted): ``every day``, ``every weekday``, ``every Mon, Wed, Fri``."""
    key = tuple(iso_days)
    if key == (1, 2, 3, 4, 5, 6, 7):
        return "every day"
    if key == (1, 2, 3, 4, 5):
        return "every weekday"
    if key == (6, 7):
        return "every Saturday and Sunday"
    return "every " + _runs(key, _weekday_name)


def _month_days(days: Sequence[int]) -> str:
    word = "day" if len(days) == 1 else "days"
    return f"on {word} {_runs(days, str)} of the month"


class _Days(NamedTuple):
    """The matching dates in words: ``full`` before a fixed time of day ("every weekday at
    09:00"), ``compact`` after a repeating one ("every 15 min 9-17 Mon-Fri"; empty: every day)."""

    full: str
    compact: str


def _days(rule: CronRule) -> _Days:
    iso = sorted({7 if d == 0 else d for d in rule.days_of_week})
    all_doms = rule.days_of_month == _ALL_DAYS_OF_MONTH
    all_dows = len(iso) == 7
    if not rule.day_of_month_star and not rule.day_of_week_star:  # either field matches
        if all_doms or all_dows:
            days = _Days("every day", "")
        else:
            text = f"{_month_days(rule.days_of_month)} or {_weekday_phrase(iso)}"
            days = _Days(text, text)
    elif all_doms and all_dows:
        days = _Days("every day", "")
    elif all_doms:
        days = _Days(_weekday_phrase(iso), _runs(iso, _weekday_name))
    elif all_dows:
        text = _month_days(rule.days_of_month)
        days = _Days(text, text)
    else:  # both fields must match
        text = f"{_weekday_phrase(iso)} falling {_month_days(rule.days_of_month)}"
        days = _Days(text, text)
    if rule.months == _ALL_MONTHS:
        return days
    months = "in " + _runs(rule.months, lambda m: MONTH_NAMES[m - 1])
    return _Days(f"{days.full} {months}", f"{days.compact} {months}".lstrip())


def _minute_head(minutes: tuple[int, ...]) -> str:
    if len(minutes) == 60:
        return "every minute"
    step = minutes[1] - minutes[0] if len(minutes) > 1 else 0
    if minutes[0] == 0 and step and 60 % step == 0 and minutes == tuple(range(0, 60, step)):
        return f"every {step} min"
    return "every hour at " + _runs(minutes, lambda m: f":{m:02d}")


def _hours_text(hours: tuple[int, ...]) -> str:
    if len(hours) == 24:
        return ""
    if len(hours) > 2 and hours == tuple(range(hours[0], hours[-1] + 1)):
        return f"{hours[0]}-{hours[-1]}"
    word = "hour" if len(hours) == 1 else "hours"
    return f"in {word} {_runs(hours, str)}"


def describe_cron(rule: CronRule) -> str:
    """A parsed cron rule in words, without its zone: ``every weekday at 09:00``, ``every 15 min
    9-17 Mon-Fri``, ``on day 1 of the month or every Mon at 09:00``."""
    days = _days(rule)
    if len(rule.minutes) * len(rule.hours) <= MAX_LISTED_TIMES:
        times = ", ".join(_clock(h, m) for h in rule.hours for m in rule.minutes)
        return f"{days.full} at {times}"
    parts = (_minute_head(rule.minutes), _hours_text(rule.hours), days.compact)
    return " ".join(part for part in parts if part)


def describe_rule(record: Record) -> str:
    """The human description of a record's rule (docs/rules.md#descriptions)."""
    zone = f" ({record.time_zone})" if record.time_zone else ""
    kind = record.kind
    if kind == "after":
        delay = describe_seconds(record.after_seconds or 0)
        return f"once, {delay} after it was set, at {describe_instant(record.scheduled_at)}"
    if kind == "at":
        return f"once at {describe_instant(record.scheduled_at)}"
    if kind == "every":
        return f"every {describe_seconds(record.every_seconds or 0)}"
    if kind == "daily":
        return f"every day at {_short_time(record.time or '00:00:00')}{zone}"
    if kind == "weekly":
        days = _weekday_phrase(sorted(record.weekdays or ()))
        return f"{days} at {_short_time(record.time or '00:00:00')}{zone}"
    return f"{describe_cron(parse_cron(record.expression))}{zone}"
