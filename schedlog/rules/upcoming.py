"""The next targets of a record and how they read locally (SPEC §16.3): what ``rules next``
and the HTTP ``explain`` route print. Pure: no clock, no I/O."""

from __future__ import annotations

from typing import Final

import msgspec

from schedlog.rules.decide import decide
from schedlog.rules.instants import DAY_MS, civil_from_days, format_instant, iso_weekday
from schedlog.rules.record import Record
from schedlog.rules.zones import get_zone

__all__ = ["local_line", "upcoming_targets"]

_WEEKDAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def upcoming_targets(record: Record, at: int, count: int) -> list[int]:
    """Up to ``count`` future targets after ``at`` (SPEC §16.3).

    Each step pins the record at the previous target and decides exactly there, so the list is
    what the delivery runtime would actually produce one occurrence at a time.
    """
    out: list[int] = []
    if count <= 0:
        return out
    if record.scheduled_at > at:
        current: int | None = record.scheduled_at
    else:
        current = decide(record, at).next_scheduled_at
    while current is not None and len(out) < count:
        out.append(current)
        if len(out) == count:
            break
        pinned = _with_target(record, current)
        current = decide(pinned, current).next_scheduled_at
    return out


def _with_target(record: Record, target: int) -> Record:
    return msgspec.structs.replace(record, scheduled_at=target)


def local_line(record: Record, target: int) -> str:
    """``target`` as ``rules next`` prints it: the canonical instant, then, for a record with a
    zone, the local date, time, weekday and offset, and a note when the local day has an offset
    change."""
    zone = get_zone(record.time_zone) if record.time_zone else None
    utc = format_instant(target)
    if zone is None:
        return utc
    off = zone.offset(target)
    local = target + off
    days = local // DAY_MS
    y, mo, d = civil_from_days(days)
    secs = (local % DAY_MS) // 1000
    sign = "+" if off >= 0 else "-"
    oh, om = divmod(abs(off) // 60_000, 60)
    text = (
        f"{utc}  {y:04d}-{mo:02d}-{d:02d} {secs // 3600:02d}:{secs // 60 % 60:02d}"
        f" {_WEEKDAYS[iso_weekday(days) - 1]} {sign}{oh:02d}:{om:02d}"
    )
    start = days * DAY_MS - zone.offset(days * DAY_MS)
    if zone.offset(start) != zone.offset(start + DAY_MS):
        text += "  (DST change on this local day)"
    return text
