"""First targets and decisions for all six kinds (docs/rules.md#catch-up, docs/rules.md#cron-next).

A decision takes a record with committed target ``T = scheduled_at`` and a decision time ``D``
(both epoch ms, UTC) and returns the occurrence being delivered now plus the next target, or
None when the rule is exhausted. Recurring rules deliver only their latest due occurrence;
missed ones are skipped. Daily, weekly and cron occurrences are pinned: a committed target
later than the natural candidate is never moved backward (docs/rules.md#daily-weekly).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Final, NamedTuple

from msgspec.structs import replace

from schedlog._lazy import lazy_module
from schedlog.errors import CorruptScheduleError, ScheduleInputError
from schedlog.rules.instants import MAX_MS, MIN_MS, is_representable
from schedlog.rules.record import Record
from schedlog.rules.text import MAX_SAFE_INT, json_int

# The calendar, cron, zone and `at` modules load when a daily, weekly or cron rule first needs
# them: folding a session log (after, at, every) never does.
if TYPE_CHECKING:
    from schedlog.rules import at as _at
    from schedlog.rules import calendar as _calendar
    from schedlog.rules import cron as _cron
    from schedlog.rules import zones as _zones
    from schedlog.rules.calendar import CalendarRule
    from schedlog.rules.cron import CronRule
    from schedlog.rules.zones import Zone
else:
    _at = lazy_module("schedlog.rules.at")
    _calendar = lazy_module("schedlog.rules.calendar")
    _cron = lazy_module("schedlog.rules.cron")
    _zones = lazy_module("schedlog.rules.zones")

__all__ = [
    "MIN_EVERY_SECONDS_HOST",
    "MIN_EVERY_SECONDS_SESSION",
    "Decision",
    "cached_cron",
    "cached_zone",
    "check_after_seconds",
    "check_every_seconds",
    "decide",
    "first_after",
    "first_calendar",
    "first_cron",
    "first_every",
    "offset_target",
    "target_after_target",
]

MIN_EVERY_SECONDS_SESSION: Final = 300
MIN_EVERY_SECONDS_HOST: Final = 60
MSG_AFTER_SECONDS: Final = "after_seconds must be a positive safe integer."
MSG_EVERY_SECONDS: Final = "every_seconds must be a safe integer."


class Decision(NamedTuple):
    """The outcome of one decision: epoch-ms instants; ``next_scheduled_at`` None = exhausted."""

    occurrence_at: int
    next_scheduled_at: int | None


@lru_cache(maxsize=1024)
def cached_zone(name: str) -> Zone | None:
    """The zone a stored or canonical name resolves to (cached), or None."""
    return _zones.get_zone(name)


@lru_cache(maxsize=4096)
def cached_cron(expression: str) -> CronRule:
    """A parsed cron rule for an expression (cached); raises ScheduleInputError like parse_cron."""
    return _cron.parse_cron(expression)


# --- first targets ---------------------------------------------------------------------------


def check_after_seconds(value: object) -> int:
    """``after_seconds`` must be a positive safe integer (``invalid_rule``, docs/rules.md#after)."""
    n = json_int(value)
    if n is None or n < 1:
        raise ScheduleInputError("invalid_rule", MSG_AFTER_SECONDS)
    return n


def check_every_seconds(value: object, minimum: int) -> int:
    """``every_seconds``: a safe integer (``invalid_rule``), at least ``minimum``
    (``frequency_too_high``) (docs/rules.md#every)."""
    n = json_int(value)
    if n is None:
        raise ScheduleInputError("invalid_rule", MSG_EVERY_SECONDS)
    if n < minimum:
        raise ScheduleInputError("frequency_too_high", f"every_seconds must be at least {minimum}.")
    return n


def offset_target(now: int, seconds: int) -> int:
    """``now + seconds × 1000`` for an already checked interval (docs/rules.md#after,
    docs/rules.md#every), or ``time_out_of_range`` when ``now`` or the target is not
    representable."""
    if not is_representable(now):
        raise ScheduleInputError("time_out_of_range", _at.MSG_OUT_OF_RANGE)
    target = now + seconds * 1000
    if not MIN_MS <= target <= MAX_MS:
        raise ScheduleInputError("time_out_of_range", _at.MSG_OUT_OF_RANGE)
    return target


def first_after(after_seconds: object, now: int) -> int:
    """First target of an ``after`` rule: ``now + after_seconds × 1000`` (docs/rules.md#after)."""
    return offset_target(now, check_after_seconds(after_seconds))


def first_every(every_seconds: object, now: int, minimum: int) -> int:
    """First target of an ``every`` rule, anchored at ``now`` (docs/rules.md#every)."""
    return offset_target(now, check_every_seconds(every_seconds, minimum))


def _check_creation_now(kind: str, now: int) -> None:
    if not is_representable(now):
        message = f"{kind.capitalize()} creation time must be a representable four-digit-year"
        raise ScheduleInputError("time_out_of_range", message + " UTC instant.")


def _no_future(kind: str) -> ScheduleInputError:
    return ScheduleInputError(
        "time_out_of_range",
        f"No future {kind} occurrence is representable as a four-digit-year UTC instant.",
    )


def first_calendar(rule: CalendarRule, now: int) -> int:
    """First target of a daily or weekly rule: ``next(rule, now)`` (docs/rules.md#daily-weekly)."""
    _check_creation_now(rule.kind, now)
    target = _calendar.calendar_next(rule.time_ms, rule.weekdays, rule.zone, now)
    if target is None:
        raise _no_future(rule.kind)
    return target


def first_cron(rule: CronRule, zone: Zone, now: int) -> int:
    """First target of a cron rule: ``cronNext(rule, now)`` (docs/rules.md#cron-next)."""
    _check_creation_now("cron", now)
    target = _cron.cron_next(rule, zone, now)
    if target is None:
        raise _no_future("cron")
    return target


# --- decisions -------------------------------------------------------------------------------


def _stored_zone(record: Record) -> Zone:
    zone = None if record.time_zone is None else cached_zone(record.time_zone)
    if zone is None:
        raise CorruptScheduleError(f"schedule record {record.id!r} has no valid timeZone")
    return zone


def _decide_every(record: Record, at: int) -> Decision:
    seconds = record.every_seconds
    interval = seconds * 1000 if type(seconds) is int else 0
    if not 0 < interval <= MAX_SAFE_INT:
        raise CorruptScheduleError(
            f"schedule record {record.id!r} everySeconds must be a positive safe interval"
        )
    target = record.scheduled_at
    occurrence = target + (at - target) // interval * interval
    following = occurrence + interval
    return Decision(occurrence, following if following <= MAX_MS else None)


def _stored_calendar(record: Record) -> tuple[Zone, int, tuple[int, ...] | None]:
    """The zone, time of day (ms) and weekdays (weekly only) of a daily or weekly record."""
    zone = _stored_zone(record)
    time_ms = _at.parse_normalized_time(record.time)
    if time_ms is None or (record.kind == "weekly" and not record.weekdays):
        raise CorruptScheduleError(f"schedule record {record.id!r} has no valid {record.kind} rule")
    return zone, time_ms, (record.weekdays if record.kind == "weekly" else None)


def _stored_cron(record: Record) -> CronRule:
    """The parsed rule of a cron record; a missing or invalid expression is corruption."""
    if record.expression is None:
        raise CorruptScheduleError(f"schedule record {record.id!r} has no cron expression")
    try:
        return cached_cron(record.expression)
    except ScheduleInputError as exc:
        raise CorruptScheduleError(
            f"schedule record {record.id!r} expression is invalid: {exc.message}"
        ) from None


def _decide_calendar(record: Record, at: int) -> Decision:
    zone, time_ms, weekdays = _stored_calendar(record)
    target = record.scheduled_at
    latest = _calendar.calendar_latest(time_ms, weekdays, zone, at, target)
    occurrence = target if latest is None else max(latest, target)
    following = _calendar.calendar_next(
        time_ms, weekdays, zone, at, _calendar.local_day(zone, occurrence)
    )
    return Decision(occurrence, following)


def _decide_cron(record: Record, at: int) -> Decision:
    zone, rule = _stored_zone(record), _stored_cron(record)
    target = record.scheduled_at
    latest = _cron.cron_latest(rule, zone, at, target)
    occurrence = target if latest is None else max(latest, target)
    return Decision(occurrence, _cron.cron_next(rule, zone, at))


def decide(record: Record, at: int) -> Decision:
    """Decide ``record`` at decision time ``at`` (epoch ms): docs/rules.md#catch-up then
    docs/rules.md#catch-up.

    Raises :class:`ScheduleInputError` ``time_out_of_range`` when ``at`` is not representable
    and ``invalid_rule`` when ``at`` precedes the committed target. A record whose rule fields
    are unusable (only possible for hand-built records) raises :class:`CorruptScheduleError`.
    """
    kind = record.kind
    if not is_representable(at):
        raise ScheduleInputError(
            "time_out_of_range",
            f"{kind} acceptedAt must be a representable four-digit-year instant.",
        )
    if at < record.scheduled_at:
        raise ScheduleInputError(
            "invalid_rule", f"{kind} dispatch cannot precede the active scheduledAt."
        )
    if kind in ("after", "at"):
        return Decision(record.scheduled_at, None)
    if kind == "every":
        return _decide_every(record, at)
    if kind in ("daily", "weekly"):
        return _decide_calendar(record, at)
    if kind == "cron":
        return _decide_cron(record, at)
    raise CorruptScheduleError(f"schedule record kind {kind!r} is unknown")


def target_after_target(record: Record) -> Callable[[int], int | None]:
    """The rule's own next-target function: for a target ``t`` of ``record``, the target that
    follows it, or None when the rule is exhausted (always None for ``after`` and ``at``).

    ``step(t)`` is ``decide(record with scheduledAt t, t).next_scheduled_at``: deciding exactly
    at a target makes that target the occurrence (docs/rules.md#catch-up), so what follows it is
    ``t + every`` for ``every`` (None past MAX), ``calendarNext`` from ``t``'s local day for
    ``daily`` and ``weekly``, and ``cronNext(t)`` for ``cron``. The rule's fields are checked
    once, here, with the errors of :func:`decide`; a ``t`` that is not representable goes
    through :func:`decide` itself, which raises its error.
    """
    kind = record.kind
    if kind in ("after", "at"):
        return lambda target: None
    if kind == "every":
        seconds = record.every_seconds
        interval = seconds * 1000 if type(seconds) is int else 0
        if not 0 < interval <= MAX_SAFE_INT:
            raise CorruptScheduleError(
                f"schedule record {record.id!r} everySeconds must be a positive safe interval"
            )

        def every(target: int) -> int | None:
            if not is_representable(target):
                return decide(replace(record, scheduled_at=target), target).next_scheduled_at
            following = target + interval
            return following if following <= MAX_MS else None

        return every
    if kind in ("daily", "weekly"):
        zone, time_ms, weekdays = _stored_calendar(record)
        calendar_next, local_day = _calendar.calendar_next, _calendar.local_day

        def calendar(target: int) -> int | None:
            if not is_representable(target):
                return decide(replace(record, scheduled_at=target), target).next_scheduled_at
            return calendar_next(time_ms, weekdays, zone, target, local_day(zone, target))

        return calendar
    if kind == "cron":
        zone, rule = _stored_zone(record), _stored_cron(record)
        cron_next = _cron.cron_next

        def cron(target: int) -> int | None:
            if not is_representable(target):
                return decide(replace(record, scheduled_at=target), target).next_scheduled_at
            return cron_next(rule, zone, target)

        return cron
    return _by_decision(record)


def _by_decision(record: Record) -> Callable[[int], int | None]:
    """The next target by a whole decision (for what the fast forms do not cover)."""
    return lambda target: decide(replace(record, scheduled_at=target), target).next_scheduled_at
