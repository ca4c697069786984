"""The next targets of a record and how they read locally (docs/cli.md#rules-next): what ``rules
next`` and the HTTP ``explain`` route print. Pure: no clock, no I/O."""

from __future__ import annotations

from typing import Any, Final

from schedlog.rules.decide import decide, target_after_target
from schedlog.rules.instants import DAY_MS, civil_from_days, format_instant, iso_weekday
from schedlog.rules.record import Record
from schedlog.rules.zones import get_zone

__all__ = ["DST_NOTE", "local_line", "upcoming_json", "upcoming_targets"]

_WEEKDAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
#: Appended to a line whose local day has a UTC offset change.
DST_NOTE: Final = "(DST change on this local day)"


def upcoming_targets(record: Record, at: int, count: int) -> list[int]:
    """Up to ``count`` future targets after ``at`` (docs/cli.md#rules-next).

    The first is the committed target when it is after ``at``, else the decision at ``at``;
    each later one is the rule's own next-target function of the one before
    (:func:`schedlog.rules.decide.target_after_target`), which is what deciding exactly at
    that target gives: the list the delivery runtime would produce one occurrence at a time.
    """
    out: list[int] = []
    if count <= 0:
        return out
    if record.scheduled_at > at:
        current: int | None = record.scheduled_at
    else:
        current = decide(record, at).next_scheduled_at
    if current is None:
        return out
    out.append(current)
    if count == 1:
        return out
    step = target_after_target(record)
    append = out.append
    current = step(current)
    while current is not None:
        append(current)
        if len(out) == count:
            break
        current = step(current)
    return out


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
        text += "  " + DST_NOTE
    return text


def upcoming_json(record: Record, at: int, count: int) -> list[dict[str, Any]]:
    """``[{scheduledAt, text, dstChange}]``: the next ``count`` targets after ``at`` with the
    line ``rules next`` prints for each, and whether that local day changes its offset (the
    HTTP explain and rule preview answers)."""
    out: list[dict[str, Any]] = []
    for target in upcoming_targets(record, at, count):
        text = local_line(record, target)
        out.append(
            {
                "scheduledAt": format_instant(target),
                "text": text,
                "dstChange": text.endswith(DST_NOTE),
            }
        )
    return out
