"""target_after_target (the rule's own next-target function) equals a decision at each target,
and so ``rules next`` lists the same targets as a decision per target."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.errors import ScheduleError
from schedlog.rules.decide import decide, target_after_target
from schedlog.rules.instants import (
    MAX_MS,
    MIN_MS,
    format_instant,
    format_instants,
    parse_canonical_instant,
)
from schedlog.rules.record import Record
from schedlog.rules.records import build_host_record
from schedlog.rules.upcoming import upcoming_targets

START = parse_canonical_instant("2026-03-01T00:00:00.000Z")
assert START is not None
ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe"]

rules = st.one_of(
    st.builds(
        lambda e, z: {"cron": {"expression": e, "time_zone": z}},
        st.sampled_from(
            ["*/15 9-17 * * 1-5", "30 2 * * *", "30 1 * * *", "0 0 29 2 *", "*/7 * * * *"]
        ),
        st.sampled_from(ZONES),
    ),
    st.builds(
        lambda t, z: {"daily": {"time": t, "time_zone": z}},
        st.sampled_from(["02:30:00", "01:30:00", "00:00:00", "23:59:59"]),
        st.sampled_from(ZONES),
    ),
    st.builds(
        lambda t, z, d: {"weekly": {"time": t, "time_zone": z, "weekdays": d}},
        st.sampled_from(["02:30:00", "09:00:00"]),
        st.sampled_from(ZONES),
        st.lists(st.integers(1, 7), min_size=1, max_size=3, unique=True),
    ),
    st.builds(lambda s: {"every_seconds": s}, st.sampled_from([60, 3600, 86_400, 7 * 86_400])),
)
starts = st.one_of(
    st.integers(0, 3 * 365 * 86_400).map(lambda s: START + s * 1000),
    st.integers(0, 40 * 86_400).map(lambda s: MAX_MS - s * 1000),  # near the end
)


def _by_decisions(record: Record, at: int, count: int) -> list[int]:
    """``rules next`` as it was: pin the record at each target and decide there."""
    out: list[int] = []
    current = (
        record.scheduled_at if record.scheduled_at > at else decide(record, at).next_scheduled_at
    )
    while current is not None and len(out) < count:
        out.append(current)
        if len(out) == count:
            break
        pinned = msgspec.structs.replace(record, scheduled_at=current)
        current = decide(pinned, current).next_scheduled_at
    return out


def _record(rule: dict[str, Any], now: int) -> Record | None:
    try:
        return build_host_record({"prompt": "p", "title": "t", **rule}, id="r", now=now)
    except ScheduleError:
        return None  # no future target from there


@given(rules, starts, st.integers(0, 3), st.integers(1, 40))
def test_upcoming_targets_equal_a_decision_per_target(
    rule: dict[str, Any], now: int, late: int, count: int
) -> None:
    record = _record(rule, now)
    if record is None:
        return
    at = min(record.scheduled_at + late * 3_600_000, MAX_MS) if late else now
    assert upcoming_targets(record, at, count) == _by_decisions(record, at, count)


@given(rules, starts)
def test_the_step_is_the_decision_at_the_target(rule: dict[str, Any], now: int) -> None:
    record = _record(rule, now)
    if record is None:
        return
    step = target_after_target(record)
    target: int | None = record.scheduled_at
    for _ in range(5):
        if target is None:
            break
        pinned = msgspec.structs.replace(record, scheduled_at=target)
        assert step(target) == decide(pinned, target).next_scheduled_at
        target = step(target)


def test_one_shots_have_no_next_target() -> None:
    record = Record(id="r", kind="at", prompt="p", scheduled_at=START)
    assert target_after_target(record)(START) is None
    assert upcoming_targets(record, START - 1, 5) == [START]


def test_a_bad_rule_is_refused_like_a_decision() -> None:
    record = Record(
        id="r", kind="cron", prompt="p", scheduled_at=START, expression="x", time_zone="UTC"
    )
    with pytest.raises(ScheduleError) as by_step:
        target_after_target(record)
    with pytest.raises(ScheduleError) as by_decision:
        decide(record, START)
    assert by_step.value.message == by_decision.value.message


@given(st.lists(st.integers(MIN_MS, MAX_MS) | st.sampled_from([MIN_MS, MAX_MS, 0, 86_399_999])))
def test_format_instants_is_format_instant_of_each(instants: list[int]) -> None:
    assert format_instants(instants) == [format_instant(t) for t in instants]
    assert format_instants(instants * 2) == [format_instant(t) for t in instants * 2]


@pytest.mark.parametrize("bad", [MIN_MS - 1, MAX_MS + 1])
def test_format_instants_refuses_what_format_instant_refuses(bad: int) -> None:
    with pytest.raises(ValueError):
        format_instants([0, bad])
