"""The five-field cron dialect (docs/rules.md#cron): parsing, canonical form, date matching, next
and latest.

Local dates are day numbers (days since 1970-01-01), never ``datetime.date``, because the local
date of a representable instant can be 0000-12-31 or 10000-01-01 (docs/rules.md#instants).

DST policy (docs/rules.md#local-time), applied wherever a rule's local time is turned into an
instant: a local time that does not exist (a gap) is skipped; a repeated local time (an overlap)
fires once, at the earlier instant.

Speed. A date's times are resolved together: when the zone's offset ``o`` is constant for a day
on either side of the date, every local time ``L`` of the date has exactly one instant, ``L - o``,
so the wanted time is found by bisection in the rule's sorted times of day, without converting any
of them. Only dates next to an offset change go through :meth:`Zone.resolve_local` time by time.
Stretches of constant offset come exactly from :meth:`Zone.span` (one bisection in the zone's
transition list), with the last one per zone kept, so nothing here assumes how far apart a zone's
offset changes are.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import Final

from schedlog.errors import ScheduleInputError
from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    civil_from_days,
    days_from_civil,
    days_in_month,
)
from schedlog.rules.text import MAX_SAFE_INT, WHITESPACE_RUN, js_dumps, js_trim
from schedlog.rules.zones import SPAN_END, Zone

__all__ = [
    "CronRule",
    "canonical_cron",
    "cron_latest",
    "cron_next",
    "parse_cron",
]

# --- Parsing (docs/rules.md#cron-grammar, docs/rules.md#cron-star)
# ----------------------------------------------------------------

MSG_NOT_STRING: Final = "cron.expression must be a non-empty trimmed string."
MSG_FIELD_COUNT: Final = (
    "cron.expression must contain exactly five whitespace-separated fields: "
    "minute hour day-of-month month day-of-week."
)

# (name in messages, minimum, maximum) of each field, in expression order.
_FIELDS: Final = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
)

# `*`, `*/N`, `A`, `A-B`, `A-B/N` with ASCII digits only (docs/protocol.md#length); `A/N` is not a
# form.
_ELEMENT: Final = re.compile(r"\*(?:/([0-9]+))?|([0-9]+)(?:-([0-9]+)(?:/([0-9]+))?)?")

# Any number of more than 16 significant digits exceeds every field range and 2**53 - 1; it is
# replaced by this stand-in so huge digit strings never reach ``int`` (which caps string length).
_HUGE: Final = MAX_SAFE_INT + 1


def _number(digits: str) -> int:
    significant = digits.lstrip("0")
    return _HUGE if len(significant) > 16 else int(significant or "0")


def _fail(message: str) -> ScheduleInputError:
    return ScheduleInputError("invalid_rule", message)


def _parse_field(text: str, name: str, low: int, high: int) -> tuple[int, ...]:
    """The sorted value set of one field; day-of-week folds 7 into 0 (docs/rules.md#cron-star)."""
    values: set[int] = set()
    for element in text.split(","):
        if not element:
            raise _fail(f"cron.expression {name} field must not contain an empty list element.")
        match = _ELEMENT.fullmatch(element)
        if match is None:
            raise _fail(
                f"cron.expression {name} field element {js_dumps(element)} must be *, a value, "
                "a-b, */n, a-b/n, or a comma-separated list of those."
            )
        star_step, a_text, b_text, range_step = match.groups()
        if a_text is None:
            start, stop, step_text = low, high, star_step
        else:
            start = _number(a_text)
            if not low <= start <= high:
                raise _fail(f"cron.expression {name} field value {a_text} is outside {low}-{high}.")
            stop = start
            if b_text is not None:
                stop = _number(b_text)
                if not low <= stop <= high:
                    raise _fail(
                        f"cron.expression {name} field value {b_text} is outside {low}-{high}."
                    )
            step_text = range_step
        step = 1
        if step_text is not None:
            step = _number(step_text)
            if not 1 <= step <= MAX_SAFE_INT:
                raise _fail(f"cron.expression {name} field step must be a positive integer.")
        if start > stop:
            raise _fail(f"cron.expression {name} field range {a_text}-{b_text} is inverted.")
        values.update(range(start, stop + 1, step))
    if high == 7 and 7 in values:
        values.discard(7)
        values.add(0)
    return tuple(sorted(values))


def parse_cron(expression: object) -> CronRule:
    """Parse a cron expression (docs/rules.md#cron-grammar), raising
    ``ScheduleInputError("invalid_rule", …)``.

    Checks run in the order of docs/rules.md#cron-grammar and the first failure is reported; field
    errors name the field (``minute``, ``hour``, ``day-of-month``, ``month``, ``day-of-week``).
    """
    if not isinstance(expression, str):
        raise _fail(MSG_NOT_STRING)
    return _parse_text(str.__str__(expression))


@lru_cache(maxsize=1024)
def _parse_text(text: str) -> CronRule:
    # Rules are immutable, so stored records that repeat an expression share one parse.
    if not text or js_trim(text) != text:
        raise _fail(MSG_NOT_STRING)
    fields = WHITESPACE_RUN.split(text)
    if len(fields) != 5:
        raise _fail(MSG_FIELD_COUNT)
    minutes, hours, doms, months, dows = (
        _parse_field(raw, name, low, high)
        for raw, (name, low, high) in zip(fields, _FIELDS, strict=True)
    )
    return CronRule(
        minutes,
        hours,
        doms,
        months,
        dows,
        minute_star=fields[0].startswith("*"),
        hour_star=fields[1].startswith("*"),
        day_of_month_star=fields[2].startswith("*"),
        month_star=fields[3].startswith("*"),
        day_of_week_star=fields[4].startswith("*"),
    )


def canonical_cron(expression: object) -> str:
    """The canonical form of a cron expression (docs/rules.md#cron-canonical); raises like
    :func:`parse_cron`."""
    return parse_cron(expression).canonical


# --- Canonical form (docs/rules.md#cron-canonical)
# ---------------------------------------------------------------


def _enc(values: tuple[int, ...]) -> str:
    """A restricted field's text: a value, an even progression, or maximal runs."""
    if len(values) == 1:
        return str(values[0])
    gaps = {b - a for a, b in pairwise(values)}
    if len(gaps) == 1:
        gap = gaps.pop()
        return f"{values[0]}-{values[-1]}" if gap == 1 else f"{values[0]}-{values[-1]}/{gap}"
    runs: list[str] = []
    start = prev = values[0]
    for v in values[1:]:
        if v != prev + 1:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = v
        prev = v
    runs.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(runs)


def _star_text(values: tuple[int, ...], low: int, high: int) -> str:
    """A star field's text: ``*``, or the smallest step whose walk ``V`` contains, plus the rest."""
    full = set(range(low, min(high, 6) + 1)) if high == 7 else set(range(low, high + 1))
    present = set(values)
    if present == full:
        return "*"
    for step in range(1, high - low + 2):
        walk = {0 if v == 7 and high == 7 else v for v in range(low, high + 1, step)}
        if walk <= present:
            rest = tuple(sorted(present - walk))
            return f"*/{step}," + _enc(rest) if rest else f"*/{step}"
    raise AssertionError("a star field always contains its minimum")  # pragma: no cover


def _canonical_field(values: tuple[int, ...], star: bool, low: int, high: int) -> str:
    return _star_text(values, low, high) if star else _enc(values)


# --- The rule ---------------------------------------------------------------------------------


def _mask(values: tuple[int, ...]) -> int:
    bits = 0
    for v in values:
        bits |= 1 << v
    return bits


class _WalkMemo:
    """What a rule's walks remember between calls: ``month``, the month ``(first day, length,
    year, month)`` of the last local day looked up. Consecutive calls mostly fall in the same
    month, and ``civil_from_days`` costs more than the rest of a lookup. A memo: results never
    depend on it, only speed."""

    __slots__ = ("month",)

    def __init__(self) -> None:
        self.month: tuple[int, int, int, int] = (0, 31, 1970, 1)


@dataclass(frozen=True, slots=True)
class CronRule:
    """A parsed cron rule: five sorted value sets and five star flags (docs/rules.md#cron-star).

    ``days_of_week`` uses 0 for Sunday (7 is folded into 0). A field's star flag is set when
    its raw text began with ``*``; it decides day matching (docs/rules.md#cron-star). ``canonical``
    is the canonical expression (docs/rules.md#cron-canonical). Equal rules have equal canonical
    forms and vice versa.
    """

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days_of_month: tuple[int, ...]
    months: tuple[int, ...]
    days_of_week: tuple[int, ...]
    minute_star: bool
    hour_star: bool
    day_of_month_star: bool
    month_star: bool
    day_of_week_star: bool
    canonical: str = field(init=False)
    # Derived, for matching: bit sets, the sorted times of day in ms, and per month shape the
    # next / previous matching day of month (see _day_tables).
    _month_mask: int = field(init=False, repr=False, compare=False)
    _dom_mask: int = field(init=False, repr=False, compare=False)
    _dow_mask: int = field(init=False, repr=False, compare=False)
    _day_or: bool = field(init=False, repr=False, compare=False)
    _times: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _next_dom: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    _prev_dom: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    # The rule's walk memo (see _WalkMemo): mutable state owned by the rule, not by the module.
    _walk: _WalkMemo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sets = (self.minutes, self.hours, self.days_of_month, self.months, self.days_of_week)
        stars = (
            self.minute_star,
            self.hour_star,
            self.day_of_month_star,
            self.month_star,
            self.day_of_week_star,
        )
        parts: list[str] = []
        for values, star, (name, low, high) in zip(sets, stars, _FIELDS, strict=True):
            top = 6 if high == 7 else high
            if (
                type(values) is not tuple
                or not values
                or any(type(v) is not int for v in values)
                or list(values) != sorted(set(values))
                or values[0] < low
                or values[-1] > top
                or (star and values[0] != low)
            ):
                raise ValueError(f"invalid {name} value set {values!r} (star={star})")
            parts.append(_canonical_field(values, star, low, high))
        setter = object.__setattr__
        setter(self, "canonical", " ".join(parts))
        dom_mask = _mask(self.days_of_month)
        dow_mask = _mask(self.days_of_week)
        day_or = not self.day_of_month_star and not self.day_of_week_star
        setter(self, "_month_mask", _mask(self.months))
        setter(self, "_dom_mask", dom_mask)
        setter(self, "_dow_mask", dow_mask)
        setter(self, "_day_or", day_or)
        setter(
            self,
            "_times",
            tuple((h * 60 + m) * 60_000 for h in self.hours for m in self.minutes),
        )
        next_dom, prev_dom = _day_tables(dom_mask, dow_mask, day_or)
        setter(self, "_next_dom", next_dom)
        setter(self, "_prev_dom", prev_dom)
        setter(self, "_walk", _WalkMemo())

    def matches_date(self, days: int) -> bool:
        """Whether a local date (day number since 1970-01-01) is a firing date
        (docs/rules.md#cron-star)."""
        _, month, dom = civil_from_days(days)
        if not self._month_mask >> month & 1:
            return False
        return _day_holds(
            self._dom_mask >> dom & 1, self._dow_mask >> (days + 4) % 7 & 1, self._day_or
        )

    def __str__(self) -> str:
        return self.canonical


_DayTable = tuple[tuple[int, ...], ...]


@lru_cache(maxsize=512)
def _day_tables(dom_mask: int, dow_mask: int, day_or: bool) -> tuple[_DayTable, _DayTable]:
    """For each month shape, index ``(length - 28) * 7 + weekday of the 1st`` (Sunday = 0): the
    first matching day of month >= d (at index d, 1..32) and the last one <= d (index d, 0..31),
    0 meaning none. Shared by every rule with the same day fields."""
    next_dom: list[tuple[int, ...]] = []
    prev_dom: list[tuple[int, ...]] = []
    for length in range(28, 32):
        for weekday_of_first in range(7):
            dows = (dow_mask >> weekday_of_first | dow_mask << (7 - weekday_of_first)) & 0x7F
            # Bit d of `week` says whether day of month d falls on a matching weekday.
            week = 0
            for d in range(1, length + 1):
                week |= (dows >> (d - 1) % 7 & 1) << d
            days = (dom_mask | week if day_or else dom_mask & week) & ((2 << length) - 2)
            nexts = [0] * 33
            for d in range(length, 0, -1):
                nexts[d] = d if days >> d & 1 else nexts[d + 1]
            prevs = [0] * 33
            for d in range(1, 32):
                prevs[d] = d if days >> d & 1 else prevs[d - 1]
            next_dom.append(tuple(nexts))
            prev_dom.append(tuple(prevs))
    return tuple(next_dom), tuple(prev_dom)


def _day_holds(dom: int, dow: int, day_or: bool) -> bool:
    """Both day fields restricted: dom OR dow; otherwise dom AND dow (docs/rules.md#cron-star)."""
    return bool(dom | dow) if day_or else bool(dom & dow)


# --- Offsets without per-time conversions -----------------------------------------------------

# Stretches of constant offset come from Zone.span_near: (start, end, offset), the offset holding
# exactly on [start, end), memoized by the zone itself (Zone.recent_span). Walks are sequential,
# so the next lookup mostly falls in the same stretch and costs no bisection.


def _constant_offset(zone: Zone, a: int, b: int) -> int | None:
    """The offset of ``zone`` if it is the same over all of [a, b], else None."""
    _, end, o = zone.span_near(a)
    return o if b < end else None


def _offset_at(zone: Zone, u: int) -> int:
    return zone.span_near(u)[2]


def _offset_range(zone: Zone, a: int, b: int) -> tuple[int, int]:
    """The smallest and largest offsets of ``zone`` in force somewhere in [a, b]."""
    _, end, low = zone.span(a)
    high = low
    while end <= b and end < SPAN_END:
        _, end, o = zone.span(end)
        if o < low:
            low = o
        elif o > high:
            high = o
    return low, high


def _first_on_date(times: tuple[int, ...], zone: Zone, midnight: int, threshold: int) -> int | None:
    """The first of a date's times, ascending, whose earliest instant is >= ``threshold``.

    ``midnight`` is the date's local midnight as epoch ms read as UTC. None if there is none.
    """
    o = _constant_offset(zone, midnight - DAY_MS, midnight + 2 * DAY_MS)
    if o is not None:
        # Every time L of the date has the single instant L - o (offsets are under a day).
        i = bisect_left(times, threshold + o - midnight)
        return midnight + times[i] - o if i < len(times) else None
    # Next to an offset change. If u >= threshold had a local time L = u + offset(u) below
    # threshold + low, then offset(u) < low - (u - threshold), so u would lie in
    # [threshold, threshold + 2 days) with an offset below low: not so for the smallest offset
    # there. Earlier times need no conversion.
    low = _offset_range(zone, threshold, threshold + 2 * DAY_MS)[0]
    for t in times[bisect_left(times, threshold + low - midnight) :]:
        u = zone.resolve_local(midnight + t)
        if u is not None and u >= threshold:
            return u
    return None


def _last_on_date(times: tuple[int, ...], zone: Zone, midnight: int, ceiling: int) -> int | None:
    """The instant of the date's latest time whose earliest instant is <= ``ceiling``, or None."""
    o = _constant_offset(zone, midnight - DAY_MS, midnight + 2 * DAY_MS)
    if o is not None:
        i = bisect_right(times, ceiling + o - midnight)
        return midnight + times[i - 1] - o if i else None
    # Next to an offset change. If u <= ceiling had a local time above ceiling + high, u would
    # lie in (ceiling - 2 days, ceiling] with an offset above high, the largest offset there.
    # Later times need no conversion.
    high = _offset_range(zone, ceiling - 2 * DAY_MS, ceiling)[1]
    for t in reversed(times[: bisect_right(times, ceiling + high - midnight)]):
        u = zone.resolve_local(midnight + t)
        if u is not None and u <= ceiling:
            return u
    return None


# --- Next target and latest-due (docs/rules.md#cron-next)
# ---------------------------------------------

_ERA_DAYS: Final = 146_097  # 400 Gregorian years
_LAST_DAY: Final = days_from_civil(10000, 1, 1)
_FIRST_DAY: Final = days_from_civil(0, 12, 31)


def cron_next(rule: CronRule, zone: Zone, floor: int) -> int | None:
    """The first target strictly after ``floor`` (epoch ms), or None when exhausted
    (docs/rules.md#cron-next).

    Local dates are walked forward from the local date of ``floor``; a month outside the month
    set is jumped over whole. Nonexistent times are skipped, repeated ones resolve to the earlier
    instant, candidates before MIN are skipped, and a candidate after MAX ends the rule. The
    walk ends after the local date 400 years after ``floor``'s, and never passes 10000-01-01.
    """
    # The hot path of a scheduler. The common case, an answer on the floor's date, a later
    # date of its month or the next month, with no offset change nearby, is answered here
    # without calendar conversions; anything else goes to the full walk.
    span = zone.recent_span
    if floor < MIN_MS or not span[0] <= floor < span[1]:
        return _walk_forward(rule, zone, floor)
    start, _, o = span
    local = floor + o
    day = local // DAY_MS
    first, length, year, month = rule._walk.month
    if not first <= day < first + length:
        first, length, year, month = _month_of(rule, day)
    times = rule._times
    month_mask = rule._month_mask
    dom = day - first + 1
    d = 0
    if month_mask >> month & 1:
        nexts = rule._next_dom[(length - 28) * 7 + (first + 4) % 7]
        d = nexts[dom]
        if d == dom:
            midnight = day * DAY_MS
            wanted = local + 1 - midnight
            if wanted <= times[-1]:
                if _offset_for_date(zone, midnight) == o:
                    u = midnight + times[bisect_left(times, wanted)] - o
                    if u <= MAX_MS:
                        return u
                return _walk_forward(rule, zone, floor)
            d = nexts[d + 1]
    if not d:
        # No later date this month: try the first matching date of the next month.
        first += length
        month = month % 12 + 1
        if month == 1:
            year += 1
        length = days_in_month(year, month)
        if not month_mask >> month & 1:
            return _walk_forward(rule, zone, floor)
        d = rule._next_dom[(length - 28) * 7 + (first + 4) % 7][1]
        if not d:
            return _walk_forward(rule, zone, floor)
    # A later local date than the floor's: its first time is the answer when it resolves
    # with the floor's offset (its local value exceeds the floor's, so it is after the floor),
    # provided no time of the floor's date resolves after the floor. Those times are at or
    # before the floor's local time, and while the offset has been o since the day before the
    # floor's date, each has an instant L - o at or before the floor.
    midnight = (first + d - 1) * DAY_MS
    if start <= (day - 1) * DAY_MS and _offset_for_date(zone, midnight) == o:
        u = midnight + times[0] - o
        if u <= MAX_MS:
            return u
    return _walk_forward(rule, zone, floor)


def _offset_for_date(zone: Zone, midnight: int) -> int | None:
    """The offset shared by every time of the local date starting at ``midnight`` and the day
    on either side, so that each time L of the date has the single instant L - offset; None
    when an offset change is that close."""
    span = zone.recent_span
    if span[0] <= midnight - DAY_MS and midnight + 2 * DAY_MS < span[1]:
        return span[2]
    return _constant_offset(zone, midnight - DAY_MS, midnight + 2 * DAY_MS)


def _walk_forward(rule: CronRule, zone: Zone, floor: int) -> int | None:
    day = (floor + zone.span_near(floor)[2]) // DAY_MS
    horizon = day + _ERA_DAYS
    if horizon > _LAST_DAY:
        horizon = _LAST_DAY
    threshold = floor + 1
    if floor < MIN_MS:
        # No instant at or after MIN has a local date before the UTC date of MIN minus one
        # day, so a walk from further back can start there (or end at once, past the horizon).
        threshold = MIN_MS
        if horizon < _FIRST_DAY:
            return None
        day = max(day, _FIRST_DAY)
    times = rule._times
    last_time = times[-1]
    month_mask = rule._month_mask
    next_dom = rule._next_dom
    first, length, year, month = _month_of(rule, day)
    dom = day - first + 1
    while first <= horizon:
        if month_mask >> month & 1:
            nexts = next_dom[(length - 28) * 7 + (first + 4) % 7]
            d = nexts[dom]
            while d:
                date = first + d - 1
                if date > horizon:
                    return None
                midnight = date * DAY_MS
                span = zone.recent_span
                if span[0] <= midnight - DAY_MS and midnight + 2 * DAY_MS < span[1]:
                    # One offset for the whole date: each time L has the single instant L - o.
                    o = span[2]
                    wanted = threshold + o - midnight
                    if wanted <= last_time:
                        u = midnight + times[bisect_left(times, wanted)] - o
                        return u if u <= MAX_MS else None
                else:
                    found = _first_on_date(times, zone, midnight, threshold)
                    if found is not None:
                        return found if found <= MAX_MS else None
                d = nexts[d + 1]
        first += length
        dom = 1
        month += 1
        if month == 13:
            month = 1
            year += 1
        length = days_in_month(year, month)
    return None


def _month_of(rule: CronRule, day: int) -> tuple[int, int, int, int]:
    """The month ``(first day, length, year, month)`` holding local day number ``day``, from
    the rule's memo when it is the month of its last walk."""
    walk = rule._walk
    cached = walk.month
    if cached[0] <= day < cached[0] + cached[1]:
        return cached
    year, month, dom = civil_from_days(day)
    cached = walk.month = (day - dom + 1, days_in_month(year, month), year, month)
    return cached


def cron_latest(rule: CronRule, zone: Zone, at: int, target: int) -> int | None:
    """The latest candidate c with MIN <= c <= ``at`` (epoch ms), or None (docs/rules.md#cron-next).

    Local dates are walked backward from the UTC date of ``at`` plus one day (zones ahead of
    UTC); a month outside the month set is jumped over whole. The walk never goes below the
    local date of MIN, spans at most 400 years, and stops once it passes the local date of the
    committed ``target``, since nothing earlier can beat it: the caller takes ``max(c, target)``.
    A date whose times all resolve after ``at`` is passed over without converting any of them.
    """
    if at < MIN_MS:
        return None
    at = min(at, MAX_MS)
    start = at // DAY_MS + 1
    low = max(
        start - _ERA_DAYS,
        (MIN_MS + zone.offset(MIN_MS)) // DAY_MS,
        (target + _offset_at(zone, target)) // DAY_MS,
    )
    times = rule._times
    month_mask = rule._month_mask
    prev_dom = rule._prev_dom
    first, length, year, month = _month_of(rule, start)
    dom = start - first + 1
    while first + dom > low:
        if month_mask >> month & 1:
            prevs = prev_dom[(length - 28) * 7 + (first + 4) % 7]
            d = prevs[dom]
            while d:
                date = first + d - 1
                if date < low:
                    return None
                u = _last_on_date(times, zone, date * DAY_MS, at)
                if u is not None:
                    return u if u >= MIN_MS else None
                d = prevs[d - 1]
        month -= 1
        if month == 0:
            month = 12
            year -= 1
        length = dom = days_in_month(year, month)
        first -= length
    return None
