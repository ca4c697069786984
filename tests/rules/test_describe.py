"""docs/rules.md#descriptions: every rule kind in words, by hand-checked vectors, and a property
that the describer gives a text for every valid rule of every kind."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.rules.cron import canonical_cron, parse_cron
from schedlog.rules.describe import (
    describe_cron,
    describe_instant,
    describe_rule,
    describe_seconds,
)
from schedlog.rules.instants import MAX_MS, MIN_MS
from schedlog.rules.record import Record

AT_MS = 1_777_658_400_000  # 2026-05-01T18:00:00.000Z


def cron(expression: str, zone: str = "UTC") -> Record:
    return Record(
        id="c",
        kind="cron",
        prompt="p",
        scheduled_at=AT_MS,
        expression=canonical_cron(expression),
        time_zone=zone,
    )


CRON_VECTORS = [
    # fixed times of day, listed (at most four)
    ("30 1 * * *", "America/New_York", "every day at 01:30 (America/New_York)"),
    ("0 9 * * 1-5", "Asia/Shanghai", "every weekday at 09:00 (Asia/Shanghai)"),
    ("0 9,13 * * 0,6", "UTC", "every Saturday and Sunday at 09:00, 13:00 (UTC)"),
    ("0 9 * * 7", "UTC", "every Sun at 09:00 (UTC)"),  # 7 is Sunday, like 0
    ("5 18 * * 1,3,5", "UTC", "every Mon, Wed, Fri at 18:05 (UTC)"),
    ("0 9 * * 1-3,5", "UTC", "every Mon-Wed, Fri at 09:00 (UTC)"),
    ("0,30 9 * * *", "UTC", "every day at 09:00, 09:30 (UTC)"),
    ("0 9 1 * *", "UTC", "on day 1 of the month at 09:00 (UTC)"),
    ("0 9 1,15 * *", "UTC", "on days 1, 15 of the month at 09:00 (UTC)"),
    ("0 9 * 1-3 *", "UTC", "every day in Jan-Mar at 09:00 (UTC)"),
    ("0 0 1 1,7 *", "UTC", "on day 1 of the month in Jan, Jul at 00:00 (UTC)"),
    # both day fields restricted: either matches (docs/rules.md#cron-star)
    ("0 9 1 * 1", "UTC", "on day 1 of the month or every Mon at 09:00 (UTC)"),
    ("0 12 1-31 * 0-6/2", "UTC", "every day at 12:00 (UTC)"),
    # a star day field: both must match
    ("0 12 1-31 * */2", "UTC", "every Tue, Thu, Sat, Sun at 12:00 (UTC)"),
    (
        "30 7 */3 * 5",
        "UTC",
        "every Fri falling on days 1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31 of the month "
        "at 07:30 (UTC)",
    ),
    # repeating times: steps, ranges and lists
    ("* * * * *", "UTC", "every minute (UTC)"),
    ("5 * * * *", "UTC", "every hour at :05 (UTC)"),
    ("7,19 * * * *", "UTC", "every hour at :07, :19 (UTC)"),
    ("*/7 * * * *", "UTC", "every hour at :00, :07, :14, :21, :28, :35, :42, :49, :56 (UTC)"),
    ("*/15 9-17 * * 1-5", "Asia/Shanghai", "every 15 min 9-17 Mon-Fri (Asia/Shanghai)"),
    ("0-45/15 9-17 * * 1-5", "Asia/Shanghai", "every 15 min 9-17 Mon-Fri (Asia/Shanghai)"),
    ("*/20 8,12 * * *", "UTC", "every 20 min in hours 8, 12 (UTC)"),
    ("0-29 6 * * *", "UTC", "every hour at :00-:29 in hour 6 (UTC)"),
    (
        "0 */2 * * 6,7",
        "UTC",
        "every hour at :00 in hours 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22 Sat, Sun (UTC)",
    ),
    ("*/30 * 1 * *", "UTC", "every 30 min on day 1 of the month (UTC)"),
    ("*/30 * * 12 *", "UTC", "every 30 min in Dec (UTC)"),
    ("0 12 29 2 *", "Europe/Berlin", "on day 29 of the month in Feb at 12:00 (Europe/Berlin)"),
]


@pytest.mark.parametrize(("expression", "zone", "text"), CRON_VECTORS)
def test_cron_descriptions(expression: str, zone: str, text: str) -> None:
    assert describe_rule(cron(expression, zone)) == text


def test_other_kinds() -> None:
    base = {"id": "r", "prompt": "p", "scheduled_at": AT_MS}
    vectors = [
        (Record(kind="at", **base), "once at 2026-05-01 18:00 Fri UTC"),
        (
            Record(kind="after", after_seconds=600, **base),
            "once, 10 min after it was set, at 2026-05-01 18:00 Fri UTC",
        ),
        (Record(kind="every", every_seconds=5400, **base), "every 1 h 30 min"),
        (Record(kind="every", every_seconds=86_400, **base), "every 1 day"),
        (Record(kind="every", every_seconds=172_861, **base), "every 2 days 1 min 1 s"),
        (
            Record(kind="daily", time="09:30:15.000", time_zone="Europe/Berlin", **base),
            "every day at 09:30:15 (Europe/Berlin)",
        ),
        (
            Record(kind="daily", time="09:30:00.250", time_zone="UTC", **base),
            "every day at 09:30:00.250 (UTC)",
        ),
        (
            Record(
                kind="weekly",
                time="09:00:00.000",
                time_zone="Asia/Shanghai",
                weekdays=(1, 2, 3, 4, 5),
                **base,
            ),
            "every weekday at 09:00 (Asia/Shanghai)",
        ),
        (
            Record(kind="weekly", time="18:05:00.000", time_zone="UTC", weekdays=(1, 3, 5), **base),
            "every Mon, Wed, Fri at 18:05 (UTC)",
        ),
    ]
    for record, text in vectors:
        assert describe_rule(record) == text, record


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (MIN_MS, "0001-01-01 00:00 Mon UTC"),
        (MAX_MS, "9999-12-31 23:59:59.999 Fri UTC"),
        (0, "1970-01-01 00:00 Thu UTC"),
        (1_793_511_007_000, "2026-11-01 05:30:07 Sun UTC"),
    ],
)
def test_instants(ms: int, text: str) -> None:
    assert describe_instant(ms) == text


def test_seconds() -> None:
    assert [describe_seconds(n) for n in (0, 1, 61, 900, 3600, 86_400 * 3)] == [
        "0 s",
        "1 s",
        "1 min 1 s",
        "15 min",
        "1 h",
        "3 days",
    ]


# --- every valid rule has a description ------------------------------------------------------

_FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


@st.composite
def _element(draw: st.DrawFn, low: int, high: int) -> str:
    shape = draw(st.sampled_from(["*", "*/n", "a", "a-b", "a-b/n"]))
    step = draw(st.integers(1, high - low + 2))
    if shape == "*":
        return "*"
    if shape == "*/n":
        return f"*/{step}"
    a = draw(st.integers(low, high))
    if shape == "a":
        return str(a)
    b = draw(st.integers(a, high))
    return f"{a}-{b}" if shape == "a-b" else f"{a}-{b}/{step}"


@st.composite
def cron_expressions(draw: st.DrawFn) -> str:
    fields = [
        ",".join(draw(st.lists(_element(low, high), min_size=1, max_size=3)))
        for low, high in _FIELDS
    ]
    return " ".join(fields)


@given(cron_expressions(), st.sampled_from(["UTC", "Europe/Berlin", "Asia/Kolkata"]))
def test_every_valid_cron_rule_has_a_description(expression: str, zone: str) -> None:
    text = describe_rule(cron(expression, zone))
    assert text.endswith(f" ({zone})")
    assert text == f"{describe_cron(parse_cron(expression))} ({zone})"
    assert "None" not in text and "  " not in text


_TIMES = st.builds(
    lambda h, m, s, f: f"{h:02d}:{m:02d}:{s:02d}.{f:03d}",
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
    st.integers(0, 999),
)


@given(
    st.integers(MIN_MS, MAX_MS),
    st.integers(1, 2**53 - 1),
    _TIMES,
    st.lists(st.integers(1, 7), min_size=1, max_size=7, unique=True),
)
def test_every_valid_rule_of_the_other_kinds_has_a_description(
    at: int, seconds: int, time: str, weekdays: list[int]
) -> None:
    base = {"id": "r", "prompt": "p", "scheduled_at": at}
    records = [
        Record(kind="at", **base),
        Record(kind="after", after_seconds=seconds, **base),
        Record(kind="every", every_seconds=seconds, **base),
        Record(kind="daily", time=time, time_zone="UTC", **base),
        Record(kind="weekly", time=time, time_zone="UTC", weekdays=tuple(sorted(weekdays)), **base),
    ]
    for record in records:
        text = describe_rule(record)
        assert text and "None" not in text and "  " not in text
