"""Instants (epoch milliseconds) and the proleptic Gregorian calendar (docs/rules.md#instants).

``datetime`` cannot hold years 0 and 10000, which local dates of representable instants can
reach, so civil-day arithmetic is done here on plain integers with 400-year eras.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from itertools import repeat
from operator import add, floordiv, mod
from typing import Final

__all__ = [
    "DAY_MS",
    "MAX_MS",
    "MIN_MS",
    "CanonicalInstantParser",
    "civil_from_days",
    "days_from_civil",
    "days_in_month",
    "format_instant",
    "format_instants",
    "is_leap",
    "is_representable",
    "iso_weekday",
    "parse_canonical_instant",
]

DAY_MS: Final = 86_400_000
MIN_MS: Final = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
MAX_MS: Final = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z

_MONTH_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if month == 2 and is_leap(year):
        return 29
    return _MONTH_DAYS[month - 1]


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, including 0 and 10000)."""
    y = year - 1 if month <= 2 else year
    era = y // 400
    yoe = y - era * 400
    mp = month + 9 if month <= 2 else month - 3
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a day number; the inverse of :func:`days_from_civil`."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def iso_weekday(days: int) -> int:
    """ISO weekday (Monday = 1 … Sunday = 7) of a day number; 1970-01-01 is a Thursday."""
    return (days + 3) % 7 + 1


def is_representable(ms: object) -> bool:
    """An integer instant within [MIN, MAX] (docs/rules.md#instants)."""
    return type(ms) is int and MIN_MS <= ms <= MAX_MS


#: The instants :func:`format_instant` formatted last (cleared when it holds this many): the
#: instants a burst of deliveries writes (targets, delivery times, receipts) repeat a lot.
_FORMATTED_KEPT: Final = 1 << 16
_formatted: dict[int, str] = {}


def format_instant(ms: int) -> str:
    """The canonical ``YYYY-MM-DDTHH:MM:SS.mmmZ`` form (docs/rules.md#instants); ``ms`` must be
    representable."""
    if type(ms) is int:  # a bool or a float is formatted as before, never from the cache
        known = _formatted.get(ms)
        if known is not None:
            return known
    if not MIN_MS <= ms <= MAX_MS:
        raise ValueError(f"instant {ms} is outside 0001-01-01..9999-12-31")
    days, rem = divmod(ms, DAY_MS)
    y, mo, d = civil_from_days(days)
    secs, milli = divmod(rem, 1000)
    h, rest = divmod(secs, 3600)
    mi, s = divmod(rest, 60)
    text = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{milli:03d}Z"
    if type(ms) is int:
        if len(_formatted) >= _FORMATTED_KEPT:
            _formatted.clear()  # dict operations hold the interpreter lock: threads may share it
        _formatted[ms] = text
    return text


def format_instants(instants: Iterable[int]) -> list[str]:
    """:func:`format_instant` of each instant, for long lists of them: every date and every
    time of day is formatted once (successive targets of a rule share both a lot), the dates by
    ``datetime.date`` (the same proleptic Gregorian calendar as :func:`civil_from_days`)."""
    values = list(instants)
    if not values:
        return []
    if min(values) < MIN_MS or max(values) > MAX_MS:
        bad = next(ms for ms in values if not MIN_MS <= ms <= MAX_MS)
        raise ValueError(f"instant {bad} is outside 0001-01-01..9999-12-31")
    days = list(map(floordiv, values, repeat(DAY_MS)))
    rems = list(map(mod, values, repeat(DAY_MS)))
    unique_days = list(dict.fromkeys(days))
    ordinals = map(add, unique_days, repeat(_ORDINAL_OF_EPOCH))
    dates = dict(
        zip(unique_days, map(date.isoformat, map(date.fromordinal, ordinals)), strict=True)
    )
    clocks = {rem: _clock(rem) for rem in set(rems)}
    return list(map(add, map(dates.__getitem__, days), map(clocks.__getitem__, rems)))


def _clock(rem: int) -> str:
    """``THH:MM:SS.mmmZ`` of ``rem`` ms after midnight."""
    secs, milli = divmod(rem, 1000)
    h, rest = divmod(secs, 3600)
    mi, sec = divmod(rest, 60)
    return f"T{h:02d}:{mi:02d}:{sec:02d}.{milli:03d}Z"


#: ``date.fromordinal`` of day number 0 (1970-01-01).
_ORDINAL_OF_EPOCH: Final = 719_163


# Digits to "0": a canonical instant then reads exactly as this shape (docs/rules.md#instants,
# docs/protocol.md#length).
_ZERO_DIGITS: Final = bytes.maketrans(b"123456789", b"000000000")
_CANONICAL_SHAPE: Final = b"0000-00-00T00:00:00.000Z"
_MIDNIGHTS_MAX: Final = 4096
#: Texts :meth:`CanonicalInstantParser.parse` keeps the instant of, at most.
_PARSED_KEPT: Final = 1 << 16


class CanonicalInstantParser:
    """Parses stored canonical instants; owns a memo of the midnights of the dates it saw.

    ``"YYYY-MM-DD"`` -> epoch ms of that midnight, for the real dates seen lately: logs repeat
    dates a lot. The memo is bounded (cleared when full) and keyed by the exact bytes; results
    never depend on it. :func:`parse_canonical_instant` is the parser the package shares; a new
    instance starts with an empty memo.
    """

    __slots__ = ("_midnights", "_parsed")

    def __init__(self) -> None:
        self._midnights: dict[bytes, int] = {}
        #: The instants parsed last, by their exact text (cleared when it holds
        #: :data:`_PARSED_KEPT`): a burst's follow-ups and tasks repeat the same few.
        self._parsed: dict[str, int] = {}

    def parse(self, text: object) -> int | None:
        """Epoch ms of a stored canonical instant; ``None`` unless exactly canonical and real.

        An instant parsed lately is answered from the memo of the texts parsed (only ``str``
        itself, and only texts that parsed); any other text by :meth:`parse_uncached`.
        """
        if type(text) is not str:
            return None
        known = self._parsed.get(text)
        if known is not None:
            return known
        ms = self.parse_uncached(text)
        if ms is not None:
            parsed = self._parsed
            if len(parsed) >= _PARSED_KEPT:
                parsed.clear()  # dict operations hold the interpreter lock: threads may share it
            parsed[text] = ms
        return ms

    def parse_uncached(self, text: str) -> int | None:
        """:meth:`parse` without the memo of texts (the midnights' memo only).

        Hot in the fold, so it works on fixed positions: one ``translate`` checks the shape
        (ASCII digits and separators in place), then the fields are read from byte values.
        """
        if len(text) != 24 or not text.isascii():
            return None
        b = text.encode("ascii")
        if b.translate(_ZERO_DIGITS) != _CANONICAL_SHAPE:
            return None
        midnights = self._midnights
        midnight = midnights.get(b[:10])
        if midnight is None:
            # 48 is ord("0"): 53328 = 48 * 1111 and 528 = 48 * 11.
            year = b[0] * 1000 + b[1] * 100 + b[2] * 10 + b[3] - 53328
            month = b[5] * 10 + b[6] - 528
            day = b[8] * 10 + b[9] - 528
            if year < 1 or not 1 <= month <= 12 or not 1 <= day <= days_in_month(year, month):
                return None
            midnight = days_from_civil(year, month, day) * DAY_MS
            if len(midnights) >= _MIDNIGHTS_MAX:
                midnights.clear()
            midnights[b[:10]] = midnight
        hour = b[11] * 10 + b[12] - 528
        minute = b[14] * 10 + b[15] - 528
        second = b[17] * 10 + b[18] - 528
        if hour > 23 or minute > 59 or second > 59:
            return None
        millis = b[20] * 100 + b[21] * 10 + b[22] - 5328  # 5328 = 48 * 111
        return midnight + ((hour * 60 + minute) * 60 + second) * 1000 + millis


#: Epoch ms of a stored canonical instant; ``None`` unless exactly canonical and real
#: (:meth:`CanonicalInstantParser.parse` of the package's shared parser).
parse_canonical_instant = CanonicalInstantParser().parse
