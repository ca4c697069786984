"""The target after a resume (schedlog.rules.pause, docs/decisions.md#pause-and-resume): examples
per rule kind, DST spring and autumn pairs in Europe/Berlin, and properties against the unpaused
schedule (the rule's own next-target function walked from the committed target)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.errors import ScheduleInputError
from schedlog.rules.decide import target_after_target
from schedlog.rules.instants import MAX_MS, MIN_MS
from schedlog.rules.pause import MSG_PAUSED_AT, MSG_RESUMED_AT, resume_target
from schedlog.rules.record import Record
from tests.rules.test_decide import ALL_KINDS, T0, cron, daily, iso, ms, record, weekly
from tests.rules.test_target_after_target import _record as build
from tests.rules.test_target_after_target import rules as recurring
from tests.rules.test_target_after_target import starts as created


def resumed(rec: Record, paused: str, resumed_at: str) -> str | None:
    return iso(resume_target(rec, ms(paused), ms(resumed_at)))


# --- examples per kind -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["after", "at"])
def test_a_one_shot_keeps_its_target(kind: str) -> None:
    rec = record(kind, T0, **({"after_seconds": 600} if kind == "after" else {}))
    # still ahead at resume: it waits for its target
    assert resumed(rec, "2026-05-01T08:00:00.000Z", "2026-05-01T08:30:00.000Z") == T0
    # passed during the pause: due at resume, delivered once (the target is the occurrence)
    assert resumed(rec, "2026-05-01T08:00:00.000Z", "2026-05-03T12:00:00.000Z") == T0
    # due already when paused: still delivered at resume
    assert resumed(rec, "2026-05-01T09:30:00.000Z", "2026-05-01T10:00:00.000Z") == T0


def test_every_keeps_its_anchor() -> None:
    rec = record("every", "2026-05-01T10:00:00.000Z", every_seconds=3600)
    # 11:00, 12:00 and 13:00 fall inside the pause; the cadence goes on at 14:00, not 13:15 + 1 h
    assert resumed(rec, "2026-05-01T10:30:00.000Z", "2026-05-01T13:15:00.000Z") == (
        "2026-05-01T14:00:00.000Z"
    )
    # a resume exactly on an occurrence: that one is inside the pause, the next is not
    assert resumed(rec, "2026-05-01T10:30:00.000Z", "2026-05-01T13:00:00.000Z") == (
        "2026-05-01T14:00:00.000Z"
    )
    # resumed before the committed target: nothing moves
    assert resumed(rec, "2026-05-01T09:10:00.000Z", "2026-05-01T09:50:00.000Z") == (
        "2026-05-01T10:00:00.000Z"
    )


def test_an_occurrence_due_when_paused_is_skipped_for_a_recurring_rule() -> None:
    rec = record("every", "2026-05-01T10:00:00.000Z", every_seconds=3600)
    assert resumed(rec, "2026-05-01T10:00:00.000Z", "2026-05-01T10:00:00.000Z") == (
        "2026-05-01T11:00:00.000Z"
    )


def test_daily_weekly_and_cron_continue_after_the_resume_instant() -> None:
    # 09:00 Berlin (07:00Z in summer); paused Friday 1 May, resumed Tuesday 5 May at noon
    paused, back = "2026-05-01T08:00:00.000Z", "2026-05-05T10:00:00.000Z"
    assert (
        resumed(daily("09:00:00.000", "Europe/Berlin", "2026-05-02T07:00:00.000Z"), paused, back)
        == "2026-05-06T07:00:00.000Z"
    )
    # Mondays and Fridays: Mon 4 May was inside the pause, Fri 8 May is next
    weekly_rec = weekly("09:00:00.000", "Europe/Berlin", (1, 5), "2026-05-04T07:00:00.000Z")
    assert resumed(weekly_rec, paused, back) == "2026-05-08T07:00:00.000Z"
    cron_rec = cron("0 9 * * 1-5", "Europe/Berlin", "2026-05-04T07:00:00.000Z")
    assert resumed(cron_rec, paused, back) == "2026-05-06T07:00:00.000Z"


def test_an_exhausted_rule_ends_on_resume() -> None:
    last = MAX_MS - 30_000
    rec = Record(id="r", kind="every", prompt="p", scheduled_at=last, every_seconds=60)
    assert resume_target(rec, last - 1, last + 1) is None


# --- DST in a named zone -----------------------------------------------------------------------

SPRING = [  # 2026-03-29: 02:00 CET -> 03:00 CEST in Europe/Berlin, so 02:30 does not exist
    (
        daily("02:30:00.000", "Europe/Berlin", "2026-03-28T01:30:00.000Z"),
        "2026-03-30T00:30:00.000Z",
    ),
    (cron("30 2 * * *", "Europe/Berlin", "2026-03-28T01:30:00.000Z"), "2026-03-30T00:30:00.000Z"),
    (
        weekly("02:30:00.000", "Europe/Berlin", (1, 7), "2026-03-29T00:30:00.000Z"),
        "2026-03-30T00:30:00.000Z",
    ),
]
AUTUMN = [  # 2026-10-25: 03:00 CEST -> 02:00 CET, so 02:30 occurs twice (00:30Z and 01:30Z)
    (
        daily("02:30:00.000", "Europe/Berlin", "2026-10-24T00:30:00.000Z"),
        "2026-10-26T01:30:00.000Z",
    ),
    (cron("30 2 * * *", "Europe/Berlin", "2026-10-24T00:30:00.000Z"), "2026-10-26T01:30:00.000Z"),
]


@pytest.mark.parametrize(("rec", "expected"), SPRING, ids=["daily", "cron", "weekly"])
def test_spring_forward_skips_the_missing_local_time(rec: Record, expected: str) -> None:
    """Resumed on the day of the gap, after it: that day has no 02:30, so the next is the 30th."""
    assert resumed(rec, "2026-03-27T12:00:00.000Z", "2026-03-29T01:15:00.000Z") == expected


@pytest.mark.parametrize(("rec", "expected"), AUTUMN, ids=["daily", "cron"])
def test_fall_back_does_not_fire_the_repeated_local_time(rec: Record, expected: str) -> None:
    """Resumed between the two 02:30s of 25 October: 02:30 fired (at the earlier instant) during
    the pause and the later one is the same local time, so the next target is the 26th."""
    assert resumed(rec, "2026-10-23T12:00:00.000Z", "2026-10-25T01:00:00.000Z") == expected
    # resumed before the first 02:30 of that day: it is still ahead and is the next target
    assert resumed(rec, "2026-10-23T12:00:00.000Z", "2026-10-25T00:15:00.000Z") == (
        "2026-10-25T00:30:00.000Z"
    )


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rec", ALL_KINDS, ids=[r.kind for r in ALL_KINDS])
@pytest.mark.parametrize("bad", [MIN_MS - 1, MAX_MS + 1], ids=["before-min", "after-max"])
def test_instants_must_be_representable(rec: Record, bad: int) -> None:
    for args, message in (((bad, ms(T0)), MSG_PAUSED_AT), ((ms(T0), bad), MSG_RESUMED_AT)):
        with pytest.raises(ScheduleInputError) as info:
            resume_target(rec, *args)
        assert (info.value.code, info.value.message) == ("time_out_of_range", message)


# --- properties --------------------------------------------------------------------------------

one_shots = st.one_of(
    st.builds(lambda s: {"after_seconds": s}, st.integers(1, 400 * 86_400)),
    st.builds(lambda s: {"at": s}, st.sampled_from(["2026-06-01T00:00:00Z", "2027-03-28T01:30Z"])),
)
#: seconds from the committed target to the pause, and from the pause to the resume
offsets = st.integers(-3 * 86_400, 20 * 86_400)
lengths = st.integers(0, 60 * 86_400)


def first_after_unpaused(rec: Record, instant: int) -> int | None:
    """The first target > ``instant`` of the schedule that was never paused: the committed
    target, then the rule's own next-target function, one target at a time."""
    step = target_after_target(rec)
    target: int | None = rec.scheduled_at
    while target is not None and target <= instant:
        target = step(target)
    return target


def instants(rec: Record, before: int, length: int) -> tuple[int, int]:
    paused = min(max(rec.scheduled_at + before * 1000, MIN_MS), MAX_MS)
    return paused, min(paused + length * 1000, MAX_MS)


@given(recurring, created, offsets, lengths)
def test_recurring_resumes_at_the_first_unpaused_target_after_the_resume(
    rule: dict[str, Any], now: int, before: int, length: int
) -> None:
    rec = build(rule, now)
    if rec is None:
        return
    if rec.kind == "every" and rec.every_seconds == 60:
        length = min(length, 3 * 86_400)  # keep the one-at-a-time walk short
    paused, back = instants(rec, before, length)
    target = resume_target(rec, paused, back)
    assert target == first_after_unpaused(rec, back)
    assert target is None or target > back


@given(st.one_of(recurring, one_shots), created, st.integers(1, 20 * 86_400))
def test_a_pause_and_resume_with_no_time_passing_changes_nothing(
    rule: dict[str, Any], now: int, ahead: int
) -> None:
    """For a task that is not due at the pause: ahead is how far its target still is."""
    rec = build(rule, now)
    if rec is None:
        return
    instant = max(rec.scheduled_at - ahead * 1000, MIN_MS)
    if instant >= rec.scheduled_at:
        return
    assert resume_target(rec, instant, instant) == rec.scheduled_at


@given(one_shots, created, offsets, lengths)
def test_a_one_shot_is_delivered_once_whenever_it_is_resumed(
    rule: dict[str, Any], now: int, before: int, length: int
) -> None:
    rec = build(rule, now)
    if rec is None:
        return
    paused, back = instants(rec, before, length)
    assert resume_target(rec, paused, back) == rec.scheduled_at


@given(recurring, created, offsets, lengths, st.integers(0, 5 * 86_400))
def test_a_clock_stepped_back_resumes_as_at_the_pause(
    rule: dict[str, Any], now: int, before: int, length: int, back_by: int
) -> None:
    rec = build(rule, now)
    if rec is None:
        return
    paused, back = instants(rec, before, min(length, 3 * 86_400))
    earlier = max(paused - back_by * 1000, MIN_MS)
    assert resume_target(rec, paused, earlier) == resume_target(rec, paused, paused)
    # and resuming later never gives an earlier target
    later, sooner = resume_target(rec, paused, back), resume_target(rec, paused, paused)
    assert later is None or (sooner is not None and sooner <= later)
