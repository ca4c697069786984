"""A reader for TZif files (RFC 8536) that yields exact offset tables in epoch milliseconds.

Only the bundled ``tzdata`` files are fed to it, but the reader still validates what it reads:
a truncated or inconsistent file raises :class:`ValueError` rather than giving wrong offsets.

Why schedlog reads TZif itself instead of using :mod:`zoneinfo`:

* **Local years 0 and 10000.** ``zoneinfo`` works on :class:`datetime.datetime`, which cannot
  hold them, yet instants near 0001-01-01T00:00Z and 9999-12-31T23:59Z have local dates there
  in zones away from UTC, and the rules must convert them.
* **Lookup cost.** A ``zoneinfo`` conversion costs microseconds. Here each zone's file is read
  once into one sorted list of offset changes (epoch ms): the explicit transitions, then the
  POSIX footer rule computed for one 400-year cycle (the Gregorian calendar, weekdays included,
  repeats every 400 years) and repeated to year 10000. An offset is then one bisection.
* **Footer forms CPython misreads.** CPython 3.11's ``zoneinfo`` reads the zero-based
  day-of-year footer form ``n`` one day early and maps ``J59`` to February 29 in leap years;
  this reader follows POSIX. No footer in the pinned
  tzdata uses either form, so real zones agree; the differential test against ``zoneinfo``
  avoids those forms.

Before the first transition the offset is that of time type 0 (RFC 8536). Footer rules whose
start and end order flips between years (absent from real data) are read as a plain sequence
of changes.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from dataclasses import dataclass
from itertools import pairwise
from operator import itemgetter
from typing import Final

from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    civil_from_days,
    days_from_civil,
    days_in_month,
    is_leap,
)

__all__ = ["PosixRule", "PosixTz", "TzifData", "offset_table", "parse_posix_tz", "read_tzif"]

_HEADER: Final = struct.Struct(">4sc15x6l")
# The Gregorian calendar, weekdays included, repeats every 400 years, so a POSIX rule does too.
_CYCLE_YEARS: Final = 400
_CYCLE_MS: Final = 146_097 * DAY_MS
_MAX_YEAR: Final = 10_000


@dataclass(frozen=True, slots=True)
class TzifData:
    """What a TZif file says about offsets, in seconds.

    ``times`` are the UTC transition instants, ``type_indices`` the time type each one enters,
    ``utoffs`` the UT offset of each time type, and ``footer`` the POSIX TZ string (or "").
    """

    times: tuple[int, ...]
    type_indices: tuple[int, ...]
    utoffs: tuple[int, ...]
    footer: str


def read_tzif(data: bytes) -> TzifData:
    """Parse a TZif file, preferring the 64-bit (version 2+) data block when present."""
    version, counts, pos = _header(data, 0)
    if version >= 2:
        # The version 1 block is kept only for old readers; skip it whole.
        pos = _skip_block(counts, pos, time_size=4)
        second, counts, pos = _header(data, pos)
        if second != version:
            raise ValueError("TZif second header does not match the first")
        time_size = 8
    else:
        time_size = 4
    _, _, leapcnt, timecnt, typecnt, _ = counts
    if leapcnt:
        raise ValueError("TZif files with leap-second records are not supported")
    if typecnt == 0:
        raise ValueError("TZif file has no local time types")
    end = _skip_block(counts, pos, time_size)
    if end > len(data):
        raise ValueError("TZif file is truncated")
    times = struct.unpack_from(f">{timecnt}{'q' if time_size == 8 else 'l'}", data, pos)
    pos += timecnt * time_size
    indices = tuple(data[pos : pos + timecnt])
    pos += timecnt
    # Only the UT offset of each time type matters here; DST flags and names do not.
    utoffs = tuple(struct.unpack_from(">l", data, pos + 6 * k)[0] for k in range(typecnt))
    if any(i >= typecnt for i in indices):
        raise ValueError("TZif transition refers to a missing local time type")
    if any(a >= b for a, b in pairwise(times)):
        raise ValueError("TZif transition times are not strictly ascending")
    footer = ""
    if version >= 2:
        if data[end : end + 1] != b"\n":
            raise ValueError("TZif footer is missing")
        close = data.find(b"\n", end + 1)
        if close < 0:
            raise ValueError("TZif footer is not terminated")
        footer = data[end + 1 : close].decode("ascii")
    return TzifData(times, indices, utoffs, footer)


def _header(data: bytes, pos: int) -> tuple[int, tuple[int, ...], int]:
    if len(data) < pos + _HEADER.size:
        raise ValueError("TZif file is truncated")
    magic, version, *counts = _HEADER.unpack_from(data, pos)
    if magic != b"TZif":
        raise ValueError("not a TZif file")
    if any(c < 0 for c in counts):
        raise ValueError("TZif header has a negative count")
    number = 0 if version == b"\0" else int(version.decode("ascii"))
    return number, tuple(counts), pos + _HEADER.size


def _skip_block(counts: tuple[int, ...], pos: int, time_size: int) -> int:
    isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt = counts
    return (
        pos
        + timecnt * (time_size + 1)
        + typecnt * 6
        + charcnt
        + leapcnt * (time_size + 4)
        + isstdcnt
        + isutcnt
    )


@dataclass(frozen=True, slots=True)
class PosixRule:
    """One transition date of a POSIX TZ rule, with its local time of day in seconds.

    ``kind`` is ``"J"`` (``number`` is a Julian day 1..365, February 29 never counted), ``"n"``
    (``number`` is a zero-based day 0..365, February 29 counted) or ``"M"`` (``number`` is the
    month; ``week`` 1..5, where 5 means the last; ``weekday`` with Sunday = 0). The time may be
    negative or exceed 24 hours (RFC 8536 docs/rules.md#instants.1).
    """

    kind: str
    number: int
    week: int
    weekday: int
    time: int

    def local_day(self, year: int) -> int:
        """Day number (days since 1970-01-01) of this rule's date in ``year``."""
        if self.kind == "J":
            day = days_from_civil(year, 1, 1) + self.number - 1
            return day + 1 if self.number >= 60 and is_leap(year) else day
        if self.kind == "n":
            return days_from_civil(year, 1, 1) + self.number
        first = days_from_civil(year, self.number, 1)
        # 1970-01-01 was a Thursday, weekday 4 when Sunday is 0.
        day = first + (self.weekday - first - 4) % 7 + 7 * (self.week - 1)
        last = first + days_in_month(year, self.number) - 1
        return day - 7 if day > last else day


@dataclass(frozen=True, slots=True)
class PosixTz:
    """A parsed TZ footer; offsets are UTC offsets in seconds (east positive, unlike POSIX)."""

    std_offset: int
    dst_offset: int | None = None
    start: PosixRule | None = None
    end: PosixRule | None = None


_NAME: Final = r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+\-]{3,}>)"
_HMS: Final = r"[+\-]?[0-9]{1,3}(?::[0-9]{2}(?::[0-9]{2})?)?"
_DATE: Final = r"(?:J[0-9]{1,3}|[0-9]{1,3}|M[0-9]{1,2}\.[0-9]\.[0-9])"
_RULE: Final = rf"{_DATE}(?:/{_HMS})?"
_POSIX_TZ: Final = re.compile(
    rf"{_NAME}(?P<std>{_HMS})(?:{_NAME}(?P<dst>{_HMS})?,(?P<start>{_RULE}),(?P<end>{_RULE}))?",
    re.ASCII,
)
_HMS_PARTS: Final = re.compile(r"([+\-]?)([0-9]+)(?::([0-9]+)(?::([0-9]+))?)?", re.ASCII)


def parse_posix_tz(text: str) -> PosixTz:
    """Parse a TZ footer such as ``<-02>2<-01>,M3.5.0/-1,M10.5.0/0`` (RFC 8536
    docs/rules.md#instants).

    A DST name without transition rules has no defined meaning in RFC 8536 and is rejected.
    """
    m = _POSIX_TZ.fullmatch(text)
    if m is None:
        raise ValueError(f"unsupported TZ string {text!r}")
    std = -_seconds(m["std"], max_hours=24)
    if m["start"] is None:
        return PosixTz(std)
    dst = std + 3600 if m["dst"] is None else -_seconds(m["dst"], max_hours=24)
    return PosixTz(std, dst, _rule(m["start"]), _rule(m["end"]))


def _seconds(text: str, *, max_hours: int) -> int:
    m = _HMS_PARTS.fullmatch(text)
    assert m is not None  # the caller's pattern already matched this shape
    sign, h, mi, s = m.group(1), int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
    if h > max_hours or mi > 59 or s > 59:
        raise ValueError(f"time {text!r} is out of range")
    total = (h * 60 + mi) * 60 + s
    return -total if sign == "-" else total


def _rule(text: str) -> PosixRule:
    date, _, time = text.partition("/")
    # RFC 8536 widens POSIX's 0..24 hours to -167..167 so rules like "Thursday 50:00" fit.
    seconds = _seconds(time, max_hours=167) if time else 7200
    if date[0] == "M":
        month, week, weekday = (int(p) for p in date[1:].split("."))
        if not (1 <= month <= 12 and 1 <= week <= 5 and 0 <= weekday <= 6):
            raise ValueError(f"TZ rule date {date!r} is out of range")
        return PosixRule("M", month, week, weekday, seconds)
    if date[0] == "J":
        day = int(date[1:])
        if not 1 <= day <= 365:
            raise ValueError(f"TZ rule date {date!r} is out of range")
        return PosixRule("J", day, 0, 0, seconds)
    day = int(date)
    if not 0 <= day <= 365:
        raise ValueError(f"TZ rule date {date!r} is out of range")
    return PosixRule("n", day, 0, 0, seconds)


def _rule_transitions(tz: PosixTz, first_year: int) -> tuple[list[int], list[int]]:
    """Instants and new offsets (ms) of the footer rule's changes, ``first_year`` to year 10000.

    Strictly ascending, and no entry repeats the offset of the one before it.
    """
    assert tz.start is not None and tz.end is not None and tz.dst_offset is not None
    std_ms, dst_ms = tz.std_offset * 1000, tz.dst_offset * 1000
    pairs: list[tuple[int, int]] = []
    for year in range(first_year, first_year + _CYCLE_YEARS):
        # A start is written in standard local time and an end in daylight local time.
        start = (tz.start.local_day(year) * 86_400 + tz.start.time) * 1000 - std_ms
        end = (tz.end.local_day(year) * 86_400 + tz.end.time) * 1000 - dst_ms
        if start < end:
            pairs += [(start, dst_ms), (end, std_ms)]
        else:
            pairs += [(end, std_ms), (start, dst_ms)]
    pairs.sort(key=itemgetter(0))
    times, offsets = _collapse(pairs)
    copies = -(-(_MAX_YEAR + 2 - first_year) // _CYCLE_YEARS)
    if times and (times[-1] >= times[0] + _CYCLE_MS or offsets[-1] == offsets[0]):
        # Consecutive cycles touch or overlap (year-round DST, say): merge them the slow way.
        spread = [(t + k * _CYCLE_MS, o) for k in range(copies) for t, o in pairs]
        spread.sort(key=itemgetter(0))
        return _collapse(spread)
    shifts = range(0, copies * _CYCLE_MS, _CYCLE_MS)
    return [t + shift for shift in shifts for t in times], offsets * copies


def _collapse(pairs: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted (instant, offset) changes without ties or no-ops; of tied entries the last wins.

    Tied entries arise when a year-round DST rule ends one year exactly where the next starts.
    """
    times: list[int] = []
    offsets: list[int] = []
    for t, o in pairs:
        if times and times[-1] == t:
            times.pop()
            offsets.pop()
        if not offsets or offsets[-1] != o:
            times.append(t)
            offsets.append(o)
    return times, offsets


def offset_table(data: TzifData) -> tuple[list[int], list[int]]:
    """Transition instants and offsets, in ms, for lookups with ``bisect_right``.

    ``offsets[i]`` is in effect from ``transitions[i - 1]`` (inclusive) up to ``transitions[i]``;
    ``offsets[0]`` before the first. Only changes of offset are kept, and only those strictly
    inside (MIN, MAX], so an instant outside [MIN, MAX] gets the offset of the nearer bound.
    Before the first transition of the file, time type 0 applies (RFC 8536 docs/rules.md#instants).
    After the last, the footer rule's changes follow; RFC 8536 requires the footer to agree with the
    last transition, and if it did not, the last type would hold until the rule's next change.
    """
    transitions: list[int] = []
    offsets = [data.utoffs[0] * 1000]
    for t, i in zip(data.times, data.type_indices, strict=True):
        t *= 1000
        o = data.utoffs[i] * 1000
        if t <= MIN_MS:
            offsets[0] = o
        elif t > MAX_MS:
            break
        elif o != offsets[-1]:
            transitions.append(t)
            offsets.append(o)
    tz = parse_posix_tz(data.footer) if data.footer else None
    if tz is None or tz.start is None:
        # Without a DST rule the footer only restates the last time type.
        return transitions, offsets
    if data.times:
        last = data.times[-1] * 1000
        times, new = _rule_transitions(tz, civil_from_days(last // DAY_MS)[0] - 1)
        superseded = bisect_right(times, last)
    else:
        # With no explicit transitions the rule alone decides, the offset at MIN included.
        last = MIN_MS
        times, new = _rule_transitions(tz, -1)
        superseded = 0
    lo = bisect_right(times, max(last, MIN_MS))
    hi = bisect_right(times, MAX_MS)
    if lo > superseded:
        # Rule changes in force but not after MIN set the offset at MIN.
        offsets[0] = new[lo - 1]
    if lo < hi and new[lo] == offsets[-1]:
        lo += 1
    transitions += times[lo:hi]
    offsets += new[lo:hi]
    return transitions, offsets
