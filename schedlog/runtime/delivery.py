"""The live owner's decision and its delivery step (docs/concepts.md#live-owner,
docs/protocol.md#message-ids).

:func:`select_due` is the decision: a plain function of the active records and one clock sample,
so batch mode runs it at virtual time and tests call it directly. :func:`deliver_claimed` is
one delivery, run inside the maintenance claim and the serial queue: fold again, sample the
clock, decide again, plan the delivery (:func:`schedlog.delivery_plan.plan_delivery`: members
already delivered are recovered, the others framed), ``followup()``,
and only then append the dispatches. :func:`drive_pass` adds the preflight and post-dispatch
barriers around it for callers whose agent is always idle (the batch CLI).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from schedlog._crashpoints import crashpoint
from schedlog._lazy import LazyLogger
from schedlog.clock import Clock
from schedlog.delivery_plan import plan_delivery
from schedlog.diagnostics import failure_fields, instant_field, recovered_fields
from schedlog.errors import CorruptScheduleError
from schedlog.eventlog.changes import DispatchChange
from schedlog.eventlog.followups import Member, delivered_members
from schedlog.fold import FoldState
from schedlog.fold.incremental import FoldCursor
from schedlog.framing import FramedReminder
from schedlog.rules.decide import decide
from schedlog.rules.instants import is_representable
from schedlog.rules.record import Record
from schedlog.runtime.interfaces import (
    Agent,
    FollowupMessage,
    SessionLog,
    SessionLogContractError,
)
from schedlog.runtime.tools import append_change, barrier, read_state

__all__ = [
    "DueMember",
    "Outcome",
    "Selection",
    "decide_now",
    "deliver_claimed",
    "drive_pass",
    "fault",
    "next_deadline",
    "post_dispatch",
    "preflight",
    "sample_clock",
    "select_due",
]

log = LazyLogger("schedlog.runtime")

OutcomeKind = Literal[
    "idle", "delivered", "preflight_failed", "invalid_clock", "followup_failed", "faulted"
]
#: Outcomes after which the owner stops delivering for the rest of the live session.
FAULTED: Final = "faulted"


@dataclass(frozen=True, slots=True)
class DueMember:
    """A selected record and the occurrence being delivered (epoch ms)."""

    record: Record
    occurrence_at: int

    @property
    def member(self) -> Member:
        return Member(self.record.id, self.occurrence_at)


@dataclass(frozen=True, slots=True)
class Selection:
    """What one drive delivers at ``now``: one one-shot (``batch`` False) or one batch of due
    recurring records in stored-target, then create, order."""

    batch: bool
    members: tuple[DueMember, ...]
    now: int


def select_due(active: Sequence[Record], now: int) -> Selection | None:
    """The decision of docs/concepts.md#live-owner at clock sample ``now`` (a representable
    instant).

    One-shot priority: the due ``after``/``at`` record with the earliest ``scheduledAt`` (ties:
    earlier create) alone. Otherwise every due recurring record, sorted by stored
    ``scheduledAt`` then create order, each at its latest-due occurrence. None when nothing is
    due.
    """
    one_shot: Record | None = None
    for record in active:
        is_due = record.is_one_shot and record.scheduled_at <= now
        if is_due and (one_shot is None or record.scheduled_at < one_shot.scheduled_at):
            one_shot = record
    if one_shot is not None:
        return Selection(False, (DueMember(one_shot, one_shot.scheduled_at),), now)
    due = sorted(
        (
            (record.scheduled_at, position, record)
            for position, record in enumerate(active)
            if not record.is_one_shot and record.scheduled_at <= now
        ),
        key=lambda entry: (entry[0], entry[1]),
    )
    if not due:
        return None
    members = tuple(DueMember(r, decide(r, now).occurrence_at) for _, _, r in due)
    return Selection(True, members, now)


def next_deadline(active: Sequence[Record]) -> int | None:
    """The timer target: the earliest ``scheduledAt`` among active records (epoch ms)."""
    return min((r.scheduled_at for r in active), default=None)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one drive step.

    ``message`` is the follow-up sent (None when nothing was sent, for example when every
    member was recovered); ``recovered`` maps members recorded without being sent again to the
    ``messageId`` that already held them; ``deadline`` is the next timer target when ``kind``
    is ``idle``; ``error`` is the failure behind ``followup_failed`` or ``faulted``.
    """

    kind: OutcomeKind
    message: FollowupMessage | None = None
    recovered: dict[Member, str] = field(default_factory=dict)
    deadline: int | None = None
    error: BaseException | None = None


def sample_clock(clock: Clock) -> int | None:
    """One clock sample, or None (with the ``owner.invalid_clock`` warning) when it is not a
    representable instant."""
    now = clock.now_ms()
    if not is_representable(now):
        log.warning(
            "owner.invalid_clock",
            now=instant_field(now),
            message="schedule: clock sample is not a representable instant",
        )
        return None
    return now


def fault(error: BaseException) -> Outcome:
    """The ``faulted`` outcome of ``error``, logged as ``owner.faulted``."""
    log.error("owner.faulted", **failure_fields("live owner faulted", error))
    return Outcome("faulted", error=error)


def decide_now(
    log_: SessionLog, clock: Clock, cursor: FoldCursor | None = None
) -> tuple[FoldState, Selection | None] | Outcome:
    """Fold the owned suffix, sample the clock and decide (docs/concepts.md#live-owner).

    Returns the state and selection, or the ``faulted`` (corrupt or unreadable log,
    docs/concepts.md#delivery-guarantees) or ``invalid_clock`` outcome. ``cursor`` as in
    :func:`~schedlog.runtime.tools.read_state`.
    """
    try:
        state = read_state(log_, cursor)
    except (CorruptScheduleError, OSError, SessionLogContractError) as exc:
        return fault(exc)
    now = sample_clock(clock)
    if now is None:
        return Outcome("invalid_clock")
    try:
        return state, select_due(state.active, now)
    except CorruptScheduleError as exc:
        return fault(exc)


def deliver_claimed(
    log_: SessionLog, agent: Agent, clock: Clock, cursor: FoldCursor | None = None
) -> Outcome:
    """One delivery inside the maintenance claim (docs/concepts.md#live-owner), claim handling
    excluded.

    Effects, in order: at most one ``followup()`` (for the members not already delivered), then
    one dispatch append per selected member in selection order. A framing or ``followup()``
    failure appends nothing (``followup_failed``); a failed dispatch append is ``faulted``.
    """
    decided = decide_now(log_, clock, cursor)
    if isinstance(decided, Outcome):
        return decided
    state, selection = decided
    if selection is None:
        return Outcome("idle", deadline=next_deadline(state.active))

    try:
        already = delivered_members(log_.events(), seed_length=log_.header.seed_length)
    except (CorruptScheduleError, OSError) as exc:
        return fault(exc)

    message: FollowupMessage | None = None
    try:
        plan = plan_delivery(
            log_.header.session_id,
            [
                FramedReminder(due.record.id, due.occurrence_at, due.record.prompt)
                for due in selection.members
            ],
            batch=selection.batch,
            delivered=already,
        )
        if plan.text is not None and plan.message_id is not None:
            message = FollowupMessage(
                message_id=plan.message_id,
                text=plan.text,
                members=plan.members,
                created_at=selection.now,
            )
            agent.followup(message)
    except Exception as exc:
        log.warning("owner.followup_failed", **failure_fields("reminder follow-up failed", exc))
        return Outcome("followup_failed", error=exc)
    if message is not None:
        crashpoint("session.after_followup")
    for member, held_by in plan.recovered.items():
        log.info("delivery.recovered", **recovered_fields(member, held_by))

    try:
        for due in selection.members:
            accepted_at = None if due.record.is_one_shot else selection.now
            state = append_change(
                log_, state, DispatchChange(id=due.record.id, accepted_at=accepted_at)
            )
            crashpoint("session.after_dispatch")
    except Exception as exc:
        return fault(exc)
    return Outcome("delivered", message=message, recovered=plan.recovered)


def preflight(log_: SessionLog) -> bool:
    """The preflight barrier of a drive; a failure is the ``owner.preflight_failed`` warning."""
    if barrier(log_):
        return True
    log.warning(
        "owner.preflight_failed",
        **failure_fields("persistence preflight failed", "durability barrier failed"),
    )
    return False


def post_dispatch(log_: SessionLog) -> bool:
    """The post-dispatch barrier; a failure is a warning and stops re-driving
    (docs/concepts.md#live-owner)."""
    if barrier(log_):
        return True
    log.warning(
        "owner.post_dispatch_failed",
        message="schedule: post-dispatch durability barrier failed",
    )
    return False


def drive_pass(
    log_: SessionLog, agent: Agent, clock: Clock, cursor: FoldCursor | None = None
) -> list[Outcome]:
    """Drive repeatedly with an always-idle agent until nothing is due
    (docs/protocol.md#batch-session ``tick``).

    Each iteration is preflight, one delivery (one one-shot or one batch), post-dispatch
    barrier. Stops at the first iteration that is not a delivery, or whose post-dispatch
    barrier failed. Returns every outcome, the last one included.
    """
    outcomes: list[Outcome] = []
    while True:
        if not preflight(log_):
            outcomes.append(Outcome("preflight_failed"))
            return outcomes
        outcome = deliver_claimed(log_, agent, clock, cursor)
        outcomes.append(outcome)
        if outcome.kind != "delivered" or not post_dispatch(log_):
            return outcomes
