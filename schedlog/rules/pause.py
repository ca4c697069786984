"""Resuming a paused reminder (docs/decisions.md#pause-and-resume): the target a task has after
a pause from ``paused_at`` to ``resumed_at``. Pure: the instants are passed in, epoch ms (UTC).

A paused task is never delivered, and resuming keeps the cadence:

- a recurring rule continues with its first target strictly after the resume instant; the
  occurrences inside the pause, and one that was due but undelivered when the pause was
  committed, are not delivered. ``every`` keeps its anchor (the committed target plus whole
  intervals), and daily, weekly and cron keep their local wall-clock rule and its DST policy;
- a one-shot keeps its target: one that passed during the pause is due at the resume instant
  and is delivered once, then; one still ahead waits for it.

The arithmetic is the rule's own decision (:func:`schedlog.rules.decide.decide`): deciding at
the resume instant gives the latest occurrence at or before it (the one skipped) and the target
after it. A resume instant before the pause instant (a clock that stepped back) resumes as if
at the pause instant, so no occurrence at or before the pause comes back.
"""

from __future__ import annotations

from typing import Final

from schedlog.errors import ScheduleInputError
from schedlog.rules.decide import decide
from schedlog.rules.instants import is_representable
from schedlog.rules.record import Record

__all__ = ["MSG_PAUSED_AT", "MSG_RESUMED_AT", "resume_target"]

MSG_PAUSED_AT: Final = "pausedAt must be a representable four-digit-year UTC instant."
MSG_RESUMED_AT: Final = "Resume time must be a representable four-digit-year UTC instant."


def resume_target(record: Record, paused_at: int, resumed_at: int) -> int | None:
    """The committed target of ``record`` once it is resumed at ``resumed_at`` after a pause
    committed at ``paused_at``, or None when a recurring rule has no target after the resume
    instant (the task ends on resume).

    A target still ahead of the resume instant is kept unchanged, so a pause and a resume with
    no time passing change nothing for a task that was not due. Raises
    :class:`ScheduleInputError` ``time_out_of_range`` when an instant is not representable; a
    record whose rule fields are unusable raises what :func:`decide` raises.
    """
    if not is_representable(paused_at):
        raise ScheduleInputError("time_out_of_range", MSG_PAUSED_AT)
    if not is_representable(resumed_at):
        raise ScheduleInputError("time_out_of_range", MSG_RESUMED_AT)
    target = record.scheduled_at
    if record.is_one_shot:
        return target
    effective = max(paused_at, resumed_at)
    if target > effective:
        return target
    return decide(record, effective).next_scheduled_at
