"""docs/rules.md#cron: the cron dialect: parse errors, canonical form, date matching, next and
latest-due.

The arithmetic is checked two ways: tables of hand-checked vectors (the rules reference example, DST
spring/autumn pairs per zone, the range edges) and Hypothesis properties that compare
``cron_next`` / ``cron_latest`` against a brute-force walk over every minute of a short window.
"""

from __future__ import annotations

import dataclasses
import time
from bisect import bisect_right
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.errors import ScheduleInputError
from schedlog.rules import cron as cron_module
from schedlog.rules.cron import CronRule, canonical_cron, cron_latest, cron_next, parse_cron
from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    civil_from_days,
    days_from_civil,
    format_instant,
    iso_weekday,
    parse_canonical_instant,
)
from schedlog.rules.zones import Zone, get_zone

MINUTE_MS = 60_000


def ms(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None, text
    return value


def iso(value: int | None) -> str | None:
    return None if value is None else format_instant(value)


def zone(name: str) -> Zone:
    found = get_zone(name)
    assert found is not None, name
    return found


def error_of(expression: object) -> str:
    with pytest.raises(ScheduleInputError) as caught:
        parse_cron(expression)
    assert caught.value.code == "invalid_rule"
    return caught.value.message


# --- docs/rules.md#cron-grammar parse errors
# ------------------------------------------------------------------------

NOT_STRING = "cron.expression must be a non-empty trimmed string."
FIELD_COUNT = (
    "cron.expression must contain exactly five whitespace-separated fields: "
    "minute hour day-of-month month day-of-week."
)


def form(field: str, element_json: str) -> str:
    return (
        f"cron.expression {field} field element {element_json} must be *, a value, a-b, */n, "
        "a-b/n, or a comma-separated list of those."
    )


def empty(field: str) -> str:
    return f"cron.expression {field} field must not contain an empty list element."


def outside(field: str, text: str, bounds: str) -> str:
    return f"cron.expression {field} field value {text} is outside {bounds}."


def step(field: str) -> str:
    return f"cron.expression {field} field step must be a positive integer."


def inverted(field: str, a: str, b: str) -> str:
    return f"cron.expression {field} field range {a}-{b} is inverted."


PARSE_ERRORS: list[tuple[str, object, str]] = [
    # 1. a non-empty trimmed string
    ("number", 7, NOT_STRING),
    ("null", None, NOT_STRING),
    ("bool", True, NOT_STRING),
    ("list", ["0", "0", "*", "*", "*"], NOT_STRING),
    ("object", {"expression": "0 0 * * *"}, NOT_STRING),
    ("bytes", b"0 0 * * *", NOT_STRING),
    ("empty", "", NOT_STRING),
    ("blank", "   ", NOT_STRING),
    ("leading-space", " 0 0 * * *", NOT_STRING),
    ("trailing-newline", "0 0 * * *\n", NOT_STRING),
    ("trailing-nbsp", "0 0 * * *\u00a0", NOT_STRING),
    ("leading-bom", "\ufeff0 0 * * *", NOT_STRING),
    ("trailing-ideographic-space", "0 0 * * *\u3000", NOT_STRING),
    # 2. exactly five fields
    ("macro", "@daily", FIELD_COUNT),
    ("four-fields", "0 0 * *", FIELD_COUNT),
    ("six-fields", "0 0 0 * * *", FIELD_COUNT),
    ("one-field", "*", FIELD_COUNT),
    ("nel-is-not-whitespace", "0\u00850 * * *", FIELD_COUNT),
    ("zwsp-is-not-whitespace", "0\u200b0 * * *", FIELD_COUNT),
    # element 1: empty list elements
    ("empty-middle-minute", "0,,1 * * * *", empty("minute")),
    ("empty-trailing-hour", "0 1, * * *", empty("hour")),
    ("empty-leading-dom", "0 0 ,1 * *", empty("day-of-month")),
    ("empty-only-month", "0 0 * , *", empty("month")),
    ("empty-dow", "0 0 * * 1,", empty("day-of-week")),
    ("empty-before-bad-form", "0 0 * * ,x", empty("day-of-week")),
    # element 2: form
    ("month-name", "0 0 * JAN *", form("month", '"JAN"')),
    ("weekday-name", "0 0 * * MON", form("day-of-week", '"MON"')),
    ("last-day", "0 0 L * *", form("day-of-month", '"L"')),
    ("weekday-w", "0 0 15W * *", form("day-of-month", '"15W"')),
    ("hash", "0 0 * * 1#2", form("day-of-week", '"1#2"')),
    ("question", "0 0 ? * *", form("day-of-month", '"?"')),
    ("value-slash-step", "1/5 * * * *", form("minute", '"1/5"')),
    ("star-digit", "*5 * * * *", form("minute", '"*5"')),
    ("negative", "-5 * * * *", form("minute", '"-5"')),
    ("plus", "+1 * * * *", form("minute", '"+1"')),
    ("star-range", "*-5 * * * *", form("minute", '"*-5"')),
    ("double-star", "** * * * *", form("minute", '"**"')),
    ("star-slash-empty", "*/ * * * *", form("minute", '"*/"')),
    ("open-range", "1- * * * *", form("minute", '"1-"')),
    ("range-slash-empty", "1-5/ * * * *", form("minute", '"1-5/"')),
    ("double-step", "1-5/2/3 * * * *", form("minute", '"1-5/2/3"')),
    ("arabic-indic-digit", "\u0663 * * * *", form("minute", '"\u0663"')),
    ("fullwidth-digit", "0 \uff11 * * *", form("hour", '"\uff11"')),
    ("superscript-two", "0 0 \u00b2 * *", form("day-of-month", '"\u00b2"')),
    ("quote-escaped", '0 0 * * "', form("day-of-week", '"\\""')),
    ("control-escaped", "0 0 * \u0001 *", form("month", '"\\u0001"')),
    ("lone-surrogate", "0 0 * * \ud800", form("day-of-week", '"\\ud800"')),
    ("decimal", "1.5 * * * *", form("minute", '"1.5"')),
    # element 3: values A then B within range
    ("minute-60", "60 * * * *", outside("minute", "60", "0-59")),
    ("hour-24", "0 24 * * *", outside("hour", "24", "0-23")),
    ("dom-0", "0 0 0 * *", outside("day-of-month", "0", "1-31")),
    ("dom-32", "0 0 32 * *", outside("day-of-month", "32", "1-31")),
    ("month-0", "0 0 * 0 *", outside("month", "0", "1-12")),
    ("month-13", "0 0 * 13 *", outside("month", "13", "1-12")),
    ("dow-8", "0 0 * * 8", outside("day-of-week", "8", "0-7")),
    ("range-end-out", "0 0 * * 1-8", outside("day-of-week", "8", "0-7")),
    ("leading-zeros-kept-in-message", "0060 * * * *", outside("minute", "0060", "0-59")),
    ("value-before-inverted", "0 0 * 13-1 *", outside("month", "13", "1-12")),
    ("value-before-step", "0 0 * 1-13/0 *", outside("month", "13", "1-12")),
    ("huge-value", "0 0 * * " + "9" * 40, outside("day-of-week", "9" * 40, "0-7")),
    # element 4: positive safe integer step
    ("star-step-zero", "*/0 * * * *", step("minute")),
    ("range-step-zero", "0 1-5/00 * * *", step("hour")),
    ("step-beyond-safe", "0 0 */9007199254740992 * *", step("day-of-month")),
    ("step-huge", "0 0 * */" + "1" * 30 + " *", step("month")),
    ("step-before-inverted", "0 0 * * 5-1/0", step("day-of-week")),
    # element 5: inverted range
    ("inverted-minute", "5-1 * * * *", inverted("minute", "5", "1")),
    ("inverted-keeps-text", "0 0 * * 07-01", inverted("day-of-week", "07", "01")),
    ("inverted-with-step", "0 23-1/2 * * *", inverted("hour", "23", "1")),
    # the first failing field and element win
    ("first-field-wins", "60 24 0 0 8", outside("minute", "60", "0-59")),
    ("later-field", "0 0 * * 8,JAN", outside("day-of-week", "8", "0-7")),
    ("first-element-wins", "5-1,60 * * * *", inverted("minute", "5", "1")),
    ("elements-left-to-right", "0 1,x,25 * * *", form("hour", '"x"')),
]


@pytest.mark.parametrize(
    ("expression", "message"),
    [(e, m) for _, e, m in PARSE_ERRORS],
    ids=[i for i, _, _ in PARSE_ERRORS],
)
def test_parse_errors(expression: object, message: str) -> None:
    assert error_of(expression) == message


def test_field_errors_name_the_field() -> None:
    names = ["minute", "hour", "day-of-month", "month", "day-of-week"]
    for index, name in enumerate(names):
        fields = ["1"] * 5
        fields[index] = "99"
        assert f" {name} field " in error_of(" ".join(fields))


VALID: list[tuple[str, str, str]] = [
    ("leading-zeros", "007 09 01 01 07", "7 9 1 1 0"),
    ("many-leading-zeros", "0" * 5000 + "1 0 1 1 1", "1 0 1 1 1"),
    ("step-larger-than-range", "*/100 */99 */40 */13 */8", "*/60 */24 */31 */12 */7"),
    ("step-at-safe-limit", "1-5/9007199254740991 * * * *", "1 * * * *"),
    ("ideographic-space-separates", "0\u30000\u2028*\t*\u00a0*", "0 0 * * *"),
    ("whitespace-runs", "0 \t 0  *\u2003\u2003* *", "0 0 * * *"),
]


@pytest.mark.parametrize(
    ("expression", "canonical"),
    [(e, c) for _, e, c in VALID],
    ids=[i for i, _, _ in VALID],
)
def test_valid_expressions(expression: str, canonical: str) -> None:
    assert canonical_cron(expression) == canonical


def test_value_sets_and_star_flags() -> None:
    rule = parse_cron("*/20,7 1-3 5,*/10 1-12/5 7,0-2")
    assert rule.minutes == (0, 7, 20, 40)
    assert rule.hours == (1, 2, 3)
    assert rule.days_of_month == (1, 5, 11, 21, 31)
    assert rule.months == (1, 6, 11)
    assert rule.days_of_week == (0, 1, 2)
    assert (rule.minute_star, rule.hour_star, rule.day_of_month_star) == (True, False, False)
    assert (rule.month_star, rule.day_of_week_star) == (False, False)
    # The flag depends on the raw text: `*,5` is a star field, `5,*` and `0-7` are not.
    assert parse_cron("* * *,5 * *").day_of_month_star
    assert not parse_cron("* * 5,* * *").day_of_month_star
    assert not parse_cron("* * * * 0-7").day_of_week_star
    assert parse_cron("* * * * 0-7").days_of_week == tuple(range(7))


def test_rule_is_frozen_and_hashable() -> None:
    a = parse_cron("0,30 9 * * 1-5")
    b = parse_cron("0-30/30 9 * * 1,2,3,4,5")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, parse_cron("0 9 * * 1-5")}) == 2
    with pytest.raises(AttributeError):
        a.minutes = (1,)  # type: ignore[misc]
    assert str(a) == "0-30/30 9 * * 1-5"


def test_rule_constructor_checks_its_sets() -> None:
    full = tuple(range(7))
    rule = CronRule((0,), (9,), tuple(range(1, 32)), tuple(range(1, 13)), full, *[False] * 5)
    assert rule.canonical == "0 9 1-31 1-12 0-6"
    with pytest.raises(ValueError):
        CronRule((60,), (9,), (1,), (1,), (0,), *[False] * 5)
    with pytest.raises(ValueError):
        CronRule((), (9,), (1,), (1,), (0,), *[False] * 5)
    with pytest.raises(ValueError):
        CronRule((5, 1), (9,), (1,), (1,), (0,), *[False] * 5)
    with pytest.raises(ValueError):  # a star field always holds its minimum
        CronRule((5,), (9,), (1,), (1,), (0,), True, *[False] * 4)


# --- docs/rules.md#cron-canonical canonical form
# ----------------------------------------------------------------------

CANONICAL: list[tuple[str, str, str]] = [
    ("spec-progression-and-dow", "5,10,15,20 9 * * 7,1", "5-20/5 9 * * 0-1"),
    ("spec-star-walk-unchanged", "*/20,7 0-23 * * *", "*/20,7 0-23 * * *"),
    ("spec-dow-4-7", "0 0 * * 4-7", "0 0 * * 0,4-6"),
    ("dow-5-7", "0 0 * * 5-7", "0 0 * * 0,5-6"),
    ("two-values-restricted", "0,30 * * * *", "0-30/30 * * * *"),
    ("two-adjacent-values", "0,1 * * * *", "0-1 * * * *"),
    ("star-step-100-minutes", "*/100 * * * *", "*/60 * * * *"),
    ("star-step-1", "*/1 */1 */1 */1 */1", "* * * * *"),
    ("star-with-extra-full", "*,5 * * * 5,*", "* * * * 0-6"),
    ("restricted-full-ranges", "0-59 0-23 1-31 1-12 0-7", "0-59 0-23 1-31 1-12 0-6"),
    ("dow-7-alone", "0 0 * * 7", "0 0 * * 0"),
    ("dow-star-7", "0 0 * * */7", "0 0 * * */7"),
    ("dow-star-2", "0 0 * * */2", "0 0 * * */2"),
    ("dow-star-walk-with-7", "0 0 * * */2,7", "0 0 * * */2"),
    ("dow-star-3-plus-1", "0 0 * * */3,1", "0 0 * * */3,1"),
    ("runs", "1,2,3,7,9,10 * * * *", "1-3,7,9-10 * * * *"),
    ("single-value-duplicates", "5,5,05 * * * *", "5 * * * *"),
    ("range-step", "0-59/15 * * * *", "0-45/15 * * * *"),
    ("star-step-becomes-walk", "*/15,*/20 * * * *", "*/15,20-40/20 * * * *"),
    ("smallest-step-wins", "*/6,*/4 * * * *", "*/4,6-54/12 * * * *"),
    ("star-dom-step", "0 0 */10 * *", "0 0 */10 * *"),
    ("star-dom-no-walk", "0 0 *,5 * *", "0 0 * * *"),
    ("star-month-walk", "0 0 1 */3,2 *", "0 0 1 */3,2 *"),
    ("star-month-min-only", "0 0 1 */12 *", "0 0 1 */12 *"),
    ("star-hour-step-big", "0 */30 * * *", "0 */24 * * *"),
    ("restricted-even-spacing", "0 0 1,11,21,31 * *", "0 0 1-31/10 * *"),
    ("restricted-uneven", "0 0 1,11,21,30 * *", "0 0 1,11,21,30 * *"),
]


@pytest.mark.parametrize(
    ("expression", "canonical"),
    [(e, c) for _, e, c in CANONICAL],
    ids=[i for i, _, _ in CANONICAL],
)
def test_canonical(expression: str, canonical: str) -> None:
    assert canonical_cron(expression) == canonical
    assert canonical_cron(canonical) == canonical
    original = parse_cron(expression)
    again = parse_cron(canonical)
    assert original == again


# --- docs/rules.md#cron-star date matching
# -----------------------------------------------------------------------


def day(y: int, m: int, d: int) -> int:
    return days_from_civil(y, m, d)


MATCHES: list[tuple[str, str, tuple[int, int, int], bool]] = [
    ("or-first-of-month", "0 9 1 * 1", (2026, 5, 1), True),  # a Friday
    ("or-monday", "0 9 1 * 1", (2026, 5, 4), True),
    ("or-neither", "0 9 1 * 1", (2026, 5, 5), False),
    ("and-friday-on-day-1", "30 7 */3 * 5", (2026, 5, 1), True),
    ("and-friday-not-step-day", "30 7 */3 * 5", (2026, 5, 8), False),
    ("and-step-day-not-friday", "30 7 */3 * 5", (2026, 5, 4), False),
    ("and-friday-day-22", "30 7 */3 * 5", (2026, 5, 22), True),
    ("star-step-dow-sunday", "0 12 1-31 * */2", (2026, 5, 3), True),
    ("star-step-dow-monday", "0 12 1-31 * */2", (2026, 5, 4), False),
    ("restricted-step-dow-monday", "0 12 1-31 * 0-6/2", (2026, 5, 4), True),
    ("bare-star-dom-and", "0 0 * * 1", (2026, 5, 5), False),
    ("bare-star-dow-and", "0 0 13 * *", (2026, 5, 13), True),
    ("month-filter", "0 0 * 2 *", (2026, 3, 1), False),
    ("feb-29-leap", "0 0 29 2 *", (2028, 2, 29), True),
    ("year-0-dec-31-sunday", "0 0 * * 0", (0, 12, 31), True),
    ("year-10000-jan-1-saturday", "0 0 1 1 6", (10000, 1, 1), True),
    ("dow-7-is-sunday", "0 0 * * 7", (2026, 5, 3), True),
]


@pytest.mark.parametrize(
    ("expression", "ymd", "expected"),
    [(e, d, x) for _, e, d, x in MATCHES],
    ids=[i for i, _, _, _ in MATCHES],
)
def test_matches_date(expression: str, ymd: tuple[int, int, int], expected: bool) -> None:
    assert parse_cron(expression).matches_date(day(*ymd)) is expected


# --- docs/rules.md#cron-next / docs/rules.md#cron-next examples
# ---------------------------------------------------------------------


def test_spec_example() -> None:
    rule = parse_cron("0 8 * * 1-5")
    berlin = zone("Europe/Berlin")
    first = cron_next(rule, berlin, ms("2026-05-01T12:00:00.000Z"))
    assert iso(first) == "2026-05-04T06:00:00.000Z"
    decision = ms("2026-05-06T07:00:00.000Z")
    assert first is not None
    assert iso(cron_latest(rule, berlin, decision, first)) == "2026-05-06T06:00:00.000Z"
    assert iso(cron_next(rule, berlin, decision)) == "2026-05-07T06:00:00.000Z"


def chain(rule: CronRule, where: Zone, floor: int, count: int) -> list[str | None]:
    out: list[str | None] = []
    current: int | None = floor
    for _ in range(count):
        assert current is not None
        current = cron_next(rule, where, current)
        out.append(iso(current))
        if current is None:
            break
    return out


# (id, expression, zone, floor, the next targets in a chain)
NEXT_CHAINS: list[tuple[str, str, str, str, list[str | None]]] = [
    (
        "strictly-after-floor",
        "0 9 * * *",
        "UTC",
        "2026-05-01T09:00:00.000Z",
        ["2026-05-02T09:00:00.000Z", "2026-05-03T09:00:00.000Z"],
    ),
    (
        "same-day-later",
        "*/15 9-17 * * 1-5",
        "Asia/Shanghai",
        "2026-05-01T08:59:59.999Z",
        ["2026-05-01T09:00:00.000Z", "2026-05-01T09:15:00.000Z"],
    ),
    (
        "weekday-skips-weekend",
        "*/15 9-17 * * 1-5",
        "Asia/Shanghai",
        "2026-05-01T09:45:00.000Z",
        ["2026-05-04T01:00:00.000Z", "2026-05-04T01:15:00.000Z"],
    ),
    (
        "feb-29-skips-non-leap-years",
        "0 0 29 2 *",
        "UTC",
        "2096-03-01T00:00:00.000Z",
        ["2104-02-29T00:00:00.000Z", "2108-02-29T00:00:00.000Z"],
    ),
    (
        "feb-29-on-sunday-only",
        "0 0 29 2 */7",
        "UTC",
        "2026-01-01T00:00:00.000Z",
        ["2032-02-29T00:00:00.000Z", "2060-02-29T00:00:00.000Z"],
    ),
    (
        "day-31-months-only",
        "0 12 31 * *",
        "UTC",
        "2026-04-01T00:00:00.000Z",
        ["2026-05-31T12:00:00.000Z", "2026-07-31T12:00:00.000Z", "2026-08-31T12:00:00.000Z"],
    ),
    (
        "or-day-31-or-monday",
        "0 12 31 * 1",
        "UTC",
        "2026-05-28T00:00:00.000Z",
        ["2026-05-31T12:00:00.000Z", "2026-06-01T12:00:00.000Z", "2026-06-08T12:00:00.000Z"],
    ),
    (
        "month-jump-year-wrap",
        "0 0 1 1 *",
        "UTC",
        "2026-01-01T00:00:00.000Z",
        ["2027-01-01T00:00:00.000Z"],
    ),
    (
        "every-minute",
        "* * * * *",
        "Asia/Kolkata",
        "2026-05-01T12:00:30.000Z",
        ["2026-05-01T12:01:00.000Z", "2026-05-01T12:02:00.000Z"],
    ),
]


@pytest.mark.parametrize(
    ("expression", "zone_name", "floor", "expected"),
    [(e, z, f, x) for _, e, z, f, x in NEXT_CHAINS],
    ids=[i for i, *_ in NEXT_CHAINS],
)
def test_next_chains(expression: str, zone_name: str, floor: str, expected: list[str]) -> None:
    assert chain(parse_cron(expression), zone(zone_name), ms(floor), len(expected)) == expected


# DST: spring (gap) and autumn (overlap) pairs per zone. A nonexistent time skips its date; a
# repeated time fires once, at the earlier instant.
DST_CHAINS: list[tuple[str, str, str, str, list[str | None]]] = [
    (
        "new-york-spring-gap-skips-day",
        "30 2 * * *",
        "America/New_York",
        "2026-03-07T00:00:00.000Z",
        ["2026-03-07T07:30:00.000Z", "2026-03-09T06:30:00.000Z", "2026-03-10T06:30:00.000Z"],
    ),
    (
        "new-york-autumn-fires-once",
        "30 2 * * *",
        "America/New_York",
        "2026-10-31T00:00:00.000Z",
        ["2026-10-31T06:30:00.000Z", "2026-11-01T07:30:00.000Z", "2026-11-02T07:30:00.000Z"],
    ),
    (
        "new-york-autumn-overlap-earlier",
        "30 1 * * *",
        "America/New_York",
        "2026-10-31T00:00:00.000Z",
        ["2026-10-31T05:30:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"],
    ),
    (
        "berlin-spring-gap-skips-day",
        "30 2 * * *",
        "Europe/Berlin",
        "2026-03-28T00:00:00.000Z",
        ["2026-03-28T01:30:00.000Z", "2026-03-30T00:30:00.000Z"],
    ),
    (
        "berlin-autumn-overlap-earlier",
        "30 2 * * *",
        "Europe/Berlin",
        "2026-10-24T00:00:00.000Z",
        ["2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
    ),
    (
        "berlin-autumn-half-hourly-no-repeats",
        "*/30 * * * *",
        "Europe/Berlin",
        "2026-10-24T23:45:00.000Z",
        ["2026-10-25T00:00:00.000Z", "2026-10-25T00:30:00.000Z", "2026-10-25T02:00:00.000Z"],
    ),
    (
        "berlin-spring-hourly-skips-gap",
        "0 * * * *",
        "Europe/Berlin",
        "2026-03-29T00:00:00.000Z",
        ["2026-03-29T01:00:00.000Z", "2026-03-29T02:00:00.000Z"],
    ),
    (
        "lord-howe-spring-half-hour-gap",
        "15 2 * * *",
        "Australia/Lord_Howe",
        "2026-10-02T00:00:00.000Z",
        ["2026-10-02T15:45:00.000Z", "2026-10-04T15:15:00.000Z", "2026-10-05T15:15:00.000Z"],
    ),
    (
        "lord-howe-autumn-half-hour-overlap",
        "45 1 * * *",
        "Australia/Lord_Howe",
        "2026-04-03T00:00:00.000Z",
        ["2026-04-03T14:45:00.000Z", "2026-04-04T14:45:00.000Z", "2026-04-05T15:15:00.000Z"],
    ),
    (
        "lord-howe-autumn-twenty-minutes",
        "*/20 1-2 * * *",
        "Australia/Lord_Howe",
        "2026-04-04T13:59:00.000Z",
        [
            "2026-04-04T14:00:00.000Z",
            "2026-04-04T14:20:00.000Z",
            "2026-04-04T14:40:00.000Z",
            "2026-04-04T15:30:00.000Z",
            "2026-04-04T15:50:00.000Z",
            "2026-04-04T16:10:00.000Z",
        ],
    ),
    (
        "apia-skipped-date",
        "0 12 30 12 *",
        "Pacific/Apia",
        "2011-12-28T00:00:00.000Z",
        ["2012-12-29T22:00:00.000Z"],
    ),
]


@pytest.mark.parametrize(
    ("expression", "zone_name", "floor", "expected"),
    [(e, z, f, x) for _, e, z, f, x in DST_CHAINS],
    ids=[i for i, *_ in DST_CHAINS],
)
def test_dst_chains(expression: str, zone_name: str, floor: str, expected: list[str]) -> None:
    assert chain(parse_cron(expression), zone(zone_name), ms(floor), len(expected)) == expected


def test_new_york_gap_rule_never_exists() -> None:
    # 02:30 on the second Sunday of March falls in New York's spring gap every year under the
    # current rules, so the walk runs to its 400-year horizon and reports no occurrence.
    rule = parse_cron("30 2 8-14 3 */7")
    assert cron_next(rule, zone("America/New_York"), ms("2026-01-01T00:00:00.000Z")) is None
    assert iso(cron_next(rule, zone("Europe/Berlin"), ms("2026-01-01T00:00:00.000Z"))) == (
        "2026-03-08T01:30:00.000Z"
    )


# (id, expression, zone, at, target, latest)
LATEST: list[tuple[str, str, str, str, str, str | None]] = [
    (
        "same-minute",
        "0 9 * * *",
        "UTC",
        "2026-05-04T09:00:00.000Z",
        "2026-05-04T09:00:00.000Z",
        "2026-05-04T09:00:00.000Z",
    ),
    (
        "latest-of-many-missed",
        "0 9 * * *",
        "UTC",
        "2026-05-10T08:59:59.999Z",
        "2026-05-04T09:00:00.000Z",
        "2026-05-09T09:00:00.000Z",
    ),
    (
        "zone-ahead-of-utc-next-local-date",
        "30 0 * * *",
        "Pacific/Kiritimati",
        "2026-05-04T11:00:00.000Z",
        "2026-05-01T10:30:00.000Z",
        "2026-05-04T10:30:00.000Z",
    ),
    (
        "stops-at-target-date",
        "0 9 1 1 *",
        "UTC",
        "2026-05-04T09:00:00.000Z",
        "2026-05-04T08:00:00.000Z",
        None,
    ),
    (
        "candidate-before-target-on-its-date",
        "0 8 * * *",
        "UTC",
        "2026-05-04T09:00:00.000Z",
        "2026-05-04T08:30:00.000Z",
        "2026-05-04T08:00:00.000Z",
    ),
    (
        "new-york-gap-day",
        "30 2 * * *",
        "America/New_York",
        "2026-03-08T12:00:00.000Z",
        "2026-03-01T07:30:00.000Z",
        "2026-03-07T07:30:00.000Z",
    ),
    (
        "new-york-second-pass-of-overlap",
        "* * * * *",
        "America/New_York",
        "2026-11-01T06:40:00.000Z",
        "2026-11-01T05:00:00.000Z",
        "2026-11-01T05:59:00.000Z",
    ),
    (
        "berlin-overlap-earlier-instant",
        "30 2 * * *",
        "Europe/Berlin",
        "2026-10-25T01:45:00.000Z",
        "2026-10-20T00:30:00.000Z",
        "2026-10-25T00:30:00.000Z",
    ),
    (
        "lord-howe-inside-overlap",
        "*/10 * * * *",
        "Australia/Lord_Howe",
        "2026-04-04T15:05:00.000Z",
        "2026-04-04T14:00:00.000Z",
        "2026-04-04T14:50:00.000Z",
    ),
]


@pytest.mark.parametrize(
    ("expression", "zone_name", "at", "target", "expected"),
    [(e, z, a, t, x) for _, e, z, a, t, x in LATEST],
    ids=[i for i, *_ in LATEST],
)
def test_latest(
    expression: str, zone_name: str, at: str, target: str, expected: str | None
) -> None:
    rule = parse_cron(expression)
    assert iso(cron_latest(rule, zone(zone_name), ms(at), ms(target))) == expected


# --- range edges (docs/rules.md#instants, docs/rules.md#cron-next)
# ------------------------------------------------------

EDGES_NEXT: list[tuple[str, str, str, int, str | None]] = [
    # UTC-12: local date 0000-12-31 holds representable instants.
    ("minus-12-target-is-min", "0 12 * * *", "Etc/GMT+12", MIN_MS - 1, "0001-01-01T00:00:00.000Z"),
    (
        "minus-12-skips-below-min",
        "0 0 * * *",
        "Etc/GMT+12",
        MIN_MS - DAY_MS,
        "0001-01-01T12:00:00.000Z",
    ),
    ("minus-3-year-0-local-date", "0 22 * * *", "Etc/GMT+3", MIN_MS, "0001-01-01T01:00:00.000Z"),
    (
        "plus-2-year-10000-local-date",
        "30 0 * * *",
        "Etc/GMT-2",
        ms("9999-12-31T21:00:00.000Z"),
        "9999-12-31T22:30:00.000Z",
    ),
    (
        "plus-14-year-10000-local-date",
        "0 0 * * *",
        "Etc/GMT-14",
        ms("9999-12-31T09:00:00.000Z"),
        "9999-12-31T10:00:00.000Z",
    ),
    ("plus-14-exhausted", "0 0 * * *", "Etc/GMT-14", ms("9999-12-31T10:00:00.000Z"), None),
    ("plus-14-past-max", "59 23 * * *", "Etc/GMT-14", ms("9999-12-31T10:00:00.000Z"), None),
    ("utc-exhausted", "0 0 * * *", "UTC", ms("9999-12-31T00:00:00.000Z"), None),
    (
        "utc-last-minute",
        "59 23 31 12 *",
        "UTC",
        ms("9999-12-31T00:00:00.000Z"),
        "9999-12-31T23:59:00.000Z",
    ),
    ("floor-at-max", "* * * * *", "UTC", MAX_MS, None),
    (
        "minus-12-last-local-date",
        "59 11 * * *",
        "Etc/GMT+12",
        ms("9999-12-31T12:00:00.000Z"),
        "9999-12-31T23:59:00.000Z",
    ),
]


@pytest.mark.parametrize(
    ("expression", "zone_name", "floor", "expected"),
    [(e, z, f, x) for _, e, z, f, x in EDGES_NEXT],
    ids=[i for i, *_ in EDGES_NEXT],
)
def test_next_range_edges(
    expression: str, zone_name: str, floor: int, expected: str | None
) -> None:
    assert iso(cron_next(parse_cron(expression), zone(zone_name), floor)) == expected


EDGES_LATEST: list[tuple[str, str, str, int, str | None]] = [
    ("minus-12-below-min", "0 0 * * *", "Etc/GMT+12", MIN_MS + 3_600_000, None),
    (
        "minus-12-first",
        "0 0 * * *",
        "Etc/GMT+12",
        MIN_MS + 13 * 3_600_000,
        "0001-01-01T12:00:00.000Z",
    ),
    ("minus-12-at-min", "0 12 31 12 *", "Etc/GMT+12", MIN_MS, "0001-01-01T00:00:00.000Z"),
    ("plus-14-below-min", "0 12 * * *", "Etc/GMT-14", MIN_MS + 3_600_000, None),
    ("plus-14-local-10000", "0 0 1 1 *", "Etc/GMT-14", MAX_MS, "9999-12-31T10:00:00.000Z"),
    ("utc-at-max", "* * * * *", "UTC", MAX_MS, "9999-12-31T23:59:00.000Z"),
    ("before-min", "* * * * *", "UTC", MIN_MS - 1, None),
]


@pytest.mark.parametrize(
    ("expression", "zone_name", "at", "expected"),
    [(e, z, a, x) for _, e, z, a, x in EDGES_LATEST],
    ids=[i for i, *_ in EDGES_LATEST],
)
def test_latest_range_edges(expression: str, zone_name: str, at: int, expected: str | None) -> None:
    assert iso(cron_latest(parse_cron(expression), zone(zone_name), at, MIN_MS)) == expected


def test_instants_far_outside_the_range() -> None:
    rule = parse_cron("* * * * *")
    minus_12 = zone("Etc/GMT+12")
    started = time.perf_counter()
    # More than 400 years before MIN: past the horizon before any representable instant.
    assert cron_next(rule, minus_12, -(10**18)) is None
    # Less than 400 years before MIN: the first representable minute.
    assert cron_next(rule, minus_12, MIN_MS - 399 * 365 * DAY_MS) == MIN_MS
    assert cron_next(rule, minus_12, 10**18) is None
    assert cron_latest(rule, minus_12, 10**18, MIN_MS) == MAX_MS - 59_999
    assert cron_latest(rule, minus_12, -(10**18), MIN_MS) is None
    assert time.perf_counter() - started < 1.0


# --- bounded work -----------------------------------------------------------------------------

UNSATISFIABLE = ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "* * 30-31 2 *"]


@pytest.mark.parametrize("expression", UNSATISFIABLE)
def test_unsatisfiable_rules_end_fast(expression: str) -> None:
    rule = parse_cron(expression)
    berlin = zone("Europe/Berlin")
    started = time.perf_counter()
    assert cron_next(rule, berlin, ms("2026-01-01T00:00:00.000Z")) is None
    assert cron_next(rule, berlin, MIN_MS) is None
    assert cron_latest(rule, berlin, MAX_MS, MIN_MS) is None
    assert cron_latest(rule, berlin, ms("2026-01-01T00:00:00.000Z"), MIN_MS) is None
    assert time.perf_counter() - started < 2.0


class CountingZone(Zone):
    """A zone that counts local-time conversions."""

    __slots__ = ("conversions",)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.conversions = 0

    def resolve_local(self, local_ms: int) -> int | None:
        self.conversions += 1
        return super().resolve_local(local_ms)


@pytest.mark.parametrize("zone_name", ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe"])
@pytest.mark.parametrize(
    "at",
    ["2026-05-05T09:00:00.000Z", "2026-11-02T06:30:00.000Z", "2026-04-06T12:00:00.000Z"],
)
def test_every_minute_decision_converts_few_times(zone_name: str, at: str) -> None:
    counting = CountingZone(zone_name)
    rule = parse_cron("* * * * *")
    decision = ms(at)
    latest = cron_latest(rule, counting, decision, decision - DAY_MS)
    assert latest is not None
    assert decision - MINUTE_MS < latest <= decision
    assert counting.conversions <= 200


# --- properties -------------------------------------------------------------------------------


def naive_targets(rule: CronRule, where: Zone, start: int, end: int) -> list[int]:
    """Every target in (start, end], minute by minute, straight from docs/rules.md#local-time and
    docs/rules.md#cron-star.

    An instant is a target when its local wall-clock value matches the rule and no earlier
    instant had that value (so a repeated time counts once, at the earlier instant). Valid for
    windows whose offsets are whole minutes.
    """
    seen: set[int] = set()
    found: list[int] = []
    both_restricted = not rule.day_of_month_star and not rule.day_of_week_star
    u = (start - 2 * DAY_MS) // MINUTE_MS * MINUTE_MS
    while u <= end:
        local = u + where.offset(u)
        if local not in seen:
            seen.add(local)
            date, clock = divmod(local, DAY_MS)
            _, month, dom = civil_from_days(date)
            dom_ok = dom in rule.days_of_month
            dow_ok = iso_weekday(date) % 7 in rule.days_of_week
            day_ok = (dom_ok or dow_ok) if both_restricted else (dom_ok and dow_ok)
            if (
                u > start
                and MIN_MS <= u <= MAX_MS
                and month in rule.months
                and day_ok
                and clock // 3_600_000 in rule.hours
                and clock // MINUTE_MS % 60 in rule.minutes
            ):
                found.append(u)
        u += MINUTE_MS
    return found


def next_chain(rule: CronRule, where: Zone, start: int, end: int) -> list[int]:
    found: list[int] = []
    current = start
    while True:
        following = cron_next(rule, where, current)
        if following is None or following > end:
            return found
        assert following > current
        found.append(following)
        current = following


def elements(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    step_ = st.integers(1, high - low + 3)
    ranges = st.tuples(value, value).map(sorted)
    return st.one_of(
        st.just("*"),
        step_.map(lambda n: f"*/{n}"),
        value.map(str),
        ranges.map(lambda r: f"{r[0]}-{r[1]}"),
        st.tuples(ranges, step_).map(lambda t: f"{t[0][0]}-{t[0][1]}/{t[1]}"),
    )


def field_text(low: int, high: int, star_bias: float) -> st.SearchStrategy[str]:
    listed = st.lists(elements(low, high), min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just("*"), listed) if star_bias else listed


@st.composite
def expressions(draw: st.DrawFn) -> str:
    minute = draw(field_text(0, 59, 0))
    hour = draw(field_text(0, 23, 0))
    dom = draw(st.one_of(st.just("*"), field_text(1, 31, 1)))
    month = draw(st.one_of(st.just("*"), st.just("*"), field_text(1, 12, 1)))
    dow = draw(st.one_of(st.just("*"), field_text(0, 7, 1)))
    return f"{minute} {hour} {dom} {month} {dow}"


# Zones with whole-minute offsets in the windows drawn below, with gaps, overlaps, half-hour
# changes, a skipped date (Apia, 2011-12-30) and a change at local midnight (Havana, Beirut).
ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Pacific/Apia",
    "America/Havana",
    "Asia/Beirut",
    "Africa/Casablanca",
    "America/Santiago",
]

# Instants near offset changes in those zones, where windows are most interesting.
HOT = [
    ms(t)
    for t in [
        "2026-03-08T06:00:00.000Z",
        "2026-11-01T05:00:00.000Z",
        "2026-03-29T00:30:00.000Z",
        "2026-10-25T00:30:00.000Z",
        "2026-04-04T14:30:00.000Z",
        "2026-10-03T15:00:00.000Z",
        "2011-12-29T09:00:00.000Z",
        "2026-03-28T10:00:00.000Z",
        "2026-09-26T14:00:00.000Z",
        "2026-04-05T03:00:00.000Z",
        "2026-09-06T04:00:00.000Z",
        "2026-02-15T01:00:00.000Z",
    ]
]

starts = st.one_of(
    st.sampled_from(HOT).flatmap(lambda h: st.integers(h - 2 * DAY_MS, h + DAY_MS)),
    st.integers(ms("1990-01-01T00:00:00.000Z"), ms("2090-01-01T00:00:00.000Z")),
)


@given(expressions(), st.sampled_from(ZONES), starts, st.integers(1, 2 * 24 * 60))
def test_next_matches_brute_force(
    expression: str, zone_name: str, start: int, minutes: int
) -> None:
    rule = parse_cron(expression)
    where = zone(zone_name)
    end = start + minutes * MINUTE_MS
    expected = naive_targets(rule, where, start, end)
    assert next_chain(rule, where, start, end) == expected
    # The canonical rule matches exactly the same minutes.
    assert next_chain(parse_cron(rule.canonical), where, start, end) == expected


@given(
    expressions(),
    st.sampled_from(ZONES),
    starts,
    st.integers(0, 2 * 24 * 60 * MINUTE_MS),
)
def test_latest_matches_brute_force(expression: str, zone_name: str, at: int, back: int) -> None:
    rule = parse_cron(expression)
    where = zone(zone_name)
    target = at - back
    window = naive_targets(rule, where, at - 3 * DAY_MS, at)
    latest = cron_latest(rule, where, at, target)
    if latest is None:
        assert not window or window[-1] < target
    else:
        assert MIN_MS <= latest <= at
        if window:
            assert latest == window[-1]
        else:
            assert latest <= at - 3 * DAY_MS


@given(expressions(), st.sampled_from(ZONES), st.integers(MIN_MS - DAY_MS, MAX_MS + DAY_MS))
def test_next_is_after_floor_and_latest_not_after_at(
    expression: str, zone_name: str, instant: int
) -> None:
    rule = parse_cron(expression)
    where = zone(zone_name)
    following = cron_next(rule, where, instant)
    if following is not None:
        assert instant < following <= MAX_MS
        assert following >= MIN_MS
        # Nothing fires strictly between: the latest candidate before it is at most the floor.
        before = cron_latest(rule, where, following - 1, MIN_MS)
        assert before is None or before <= instant
        assert cron_latest(rule, where, following, following) == following
    latest = cron_latest(rule, where, instant, MIN_MS)
    if latest is not None:
        assert MIN_MS <= latest <= instant
        after = cron_next(rule, where, latest)
        assert after is None or after > instant


@given(expressions())
def test_canonical_is_a_fixed_point_and_keeps_star_flags(expression: str) -> None:
    rule = parse_cron(expression)
    again = parse_cron(rule.canonical)
    assert again.canonical == rule.canonical
    assert again == rule
    stars = [f.startswith("*") for f in expression.split(" ")]
    assert [f.startswith("*") for f in rule.canonical.split(" ")] == stars


cron_alphabet = st.sampled_from(list("0123456789*/-,  \t\u3000\u00a0\u200bJL#?\u0663x"))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.one_of(
        st.text(cron_alphabet, max_size=40),
        st.text(),
        json_values,
        st.from_type(object),
        expressions().map(lambda e: e.replace(" ", " ,", 1)),
    )
)
def test_parse_raises_only_schedule_input_errors(value: Any) -> None:
    try:
        rule = parse_cron(value)
    except ScheduleInputError as exc:
        assert exc.code == "invalid_rule"
        assert exc.message.startswith("cron.expression ")
    else:
        assert canonical_cron(rule.canonical) == rule.canonical


@given(expressions(), st.integers(days_from_civil(0, 12, 1), days_from_civil(10000, 1, 31)))
def test_matches_date_follows_spec(expression: str, date: int) -> None:
    rule = parse_cron(expression)
    _, month, dom = civil_from_days(date)
    dom_ok = dom in rule.days_of_month
    dow_ok = iso_weekday(date) % 7 in rule.days_of_week
    both_restricted = not rule.day_of_month_star and not rule.day_of_week_star
    day_ok = (dom_ok or dow_ok) if both_restricted else (dom_ok and dow_ok)
    assert rule.matches_date(date) is (month in rule.months and day_ok)


@st.composite
def day_fields(draw: st.DrawFn) -> str:
    dom = draw(st.one_of(st.just("*"), field_text(1, 31, 1)))
    month = draw(st.one_of(st.just("*"), field_text(1, 12, 1)))
    dow = draw(st.one_of(st.just("*"), field_text(0, 7, 1)))
    return f"0 0 {dom} {month} {dow}"


@given(day_fields(), st.integers(days_from_civil(1, 1, 1), days_from_civil(9999, 12, 31)))
def test_date_walk_agrees_with_matches_date(expression: str, start: int) -> None:
    # At midnight UTC, cron_next and cron_latest reduce to "the next / previous matching date",
    # which a day-by-day scan with matches_date gives directly.
    rule = parse_cron(expression)
    utc = zone("UTC")
    scan = 800
    first_day, last_day = MIN_MS // DAY_MS, MAX_MS // DAY_MS
    ahead = next(
        (d for d in range(start, min(start + scan, last_day + 1)) if rule.matches_date(d)), None
    )
    following = cron_next(rule, utc, start * DAY_MS - 1)
    if ahead is not None:
        assert following == ahead * DAY_MS
    else:
        assert following is None or following >= min(start + scan, last_day + 1) * DAY_MS
    behind = next(
        (d for d in range(start, max(start - scan, first_day - 1), -1) if rule.matches_date(d)),
        None,
    )
    latest = cron_latest(rule, utc, start * DAY_MS, MIN_MS)
    if behind is not None:
        assert latest == behind * DAY_MS
    else:
        assert latest is None or latest <= (start - scan) * DAY_MS
        assert start - scan >= first_day or latest is None


def test_results_do_not_depend_on_the_offset_memo() -> None:
    rule = parse_cron("*/7 0-3 * * *")
    where = zone("America/New_York")
    floors = [ms("2026-03-07T00:00:00.000Z") + k * 97 * MINUTE_MS for k in range(150)]
    warm = [cron_next(rule, where, f) for f in floors]
    cold = []
    for f in reversed(floors):
        fresh = Zone(where.name)  # a new zone and rule own empty memos
        cold.append(cron_next(dataclasses.replace(rule), fresh, f))
    assert warm == cold[::-1]


# --- offset changes close together --------------------------------------------------------

HOUR_MS = 60 * MINUTE_MS
CLOSE_BASE = ms("2026-06-10T00:00:00.000Z")


# Changes (hours after CLOSE_BASE, a Wednesday) and the offsets (hours) before, between and after.
CLOSE_CHANGES = (0, 5, 30, 33, 80, 81, 150, 481, 483, 500)
CLOSE_OFFSETS = (1, 3, -2, 1, 0, 2, -1, 1, 3, -2, 3)


def close_changes_zone() -> Zone:
    """A made-up zone whose offset changes as little as an hour apart, with gaps and overlaps
    of up to 5 hours. On 2026-06-30 (a Tuesday) a 2-hour gap at 01:00Z is followed at 03:00Z by
    an overlap reaching back over it, and the offset is back 17 hours later. No real zone does
    this; the cron fast paths must stay exact anyway, since they take stretches of constant
    offset from ``Zone.span``."""
    return Zone.from_table(
        "Test/Close_Changes",
        [CLOSE_BASE + h * HOUR_MS for h in CLOSE_CHANGES],
        [h * HOUR_MS for h in CLOSE_OFFSETS],
    )


CLOSE_RULES = [
    "* * * * *",
    "30 2 * * *",
    "0,30 * * * *",
    "*/20 0-6 * * *",
    "59 23 * * *",
    "15 4 10-14 6 *",
    "30 2 * * 2",
]


class SpecWalk:
    """docs/rules.md#cron-next taken literally for one rule and zone, with each local time resolved
    by brute force over the zone's offsets (docs/rules.md#local-time): dates in walk order, times in
    ascending (next) or descending (latest) order. In a zone whose changes overlap each other, that
    order is not the order of the instants, so a minute-by-minute scan is not the reference here."""

    def __init__(self, rule: CronRule, where: Zone) -> None:
        self.rule = rule
        self.where = where
        self.times = sorted(h * HOUR_MS + m * MINUTE_MS for h in rule.hours for m in rule.minutes)
        self.offsets = set(where._offsets)
        self.dates: dict[int, list[int | None]] = {}

    def resolved(self, date: int) -> list[int | None]:
        """The earliest instant of each of the date's times (None in a gap); [] off the rule."""
        if date not in self.dates:
            offsets = self.offsets
            out: list[int | None] = []
            if self.rule.matches_date(date):
                for t in self.times:
                    local_ms = date * DAY_MS + t
                    found = [local_ms - o for o in offsets if self.where.offset(local_ms - o) == o]
                    out.append(min(found) if found else None)
            self.dates[date] = out
        return self.dates[date]

    def next(self, floor: int, last_date: int) -> int | None:
        """cronNext(floor), or None when no date up to ``last_date`` has a target."""
        for date in range((floor + self.where.offset(floor)) // DAY_MS, last_date + 1):
            for u in self.resolved(date):
                if u is not None and u > floor:
                    return u
        return None

    def latest(self, at: int, target: int) -> int | None:
        """The latest candidate <= ``at``, walking back to the local date of ``target``."""
        low = (target + self.where.offset(target)) // DAY_MS
        for date in range(at // DAY_MS + 1, low - 1, -1):
            for u in reversed(self.resolved(date)):
                if u is not None and u <= at:
                    return u
        return None


@pytest.mark.parametrize("expression", CLOSE_RULES)
def test_close_offset_changes_next_and_latest_follow_the_spec(expression: str) -> None:
    rule = parse_cron(expression)
    made = close_changes_zone()
    spec = SpecWalk(rule, made)
    # Floors from 3 days before each group of changes to 4 days after it.
    step = 11 * MINUTE_MS
    floors = [
        *range(CLOSE_BASE - 3 * DAY_MS, CLOSE_BASE + 11 * DAY_MS, step),
        *range(CLOSE_BASE + 17 * DAY_MS, CLOSE_BASE + 25 * DAY_MS, step),
    ]
    last_date = (floors[-1] + 20 * DAY_MS) // DAY_MS
    for warm in (True, False):
        for floor in floors:
            if not warm:
                made = close_changes_zone()  # a new zone owns an empty span memo
            found = cron_next(rule, made, floor)
            expected = spec.next(floor, last_date)
            if expected is None:
                assert found is None or found >= last_date * DAY_MS, (expression, iso(floor))
            else:
                assert found == expected, (expression, iso(floor))
            target = floor - 2 * DAY_MS
            assert cron_latest(rule, made, floor, target) == spec.latest(floor, target), (
                expression,
                iso(floor),
            )


def test_close_offset_changes_can_reorder_targets() -> None:
    """Where a 2-hour gap is followed an hour later by a 3-hour overlap, local 08:00 is first
    reached at 09:00Z, after local 10:00 was reached at 08:00Z. The walk takes 08:00 first, so
    10:00 of that date never fires: its earliest instant is then before the floor."""
    made = close_changes_zone()
    rule = parse_cron("0 * * * *")
    floor = ms("2026-06-13T07:30:00.000Z")
    assert made.offset(floor) == 0
    assert made.resolve_local(ms("2026-06-13T10:00:00.000Z")) == ms("2026-06-13T08:00:00.000Z")
    chain = [cron_next(rule, made, floor)]
    for _ in range(3):
        previous = chain[-1]
        assert previous is not None
        chain.append(cron_next(rule, made, previous))
    assert [iso(u) for u in chain] == [
        "2026-06-13T09:00:00.000Z",  # local 08:00
        "2026-06-13T10:00:00.000Z",  # local 09:00
        "2026-06-13T12:00:00.000Z",  # local 11:00; 10:00 resolved to 08:00Z
        "2026-06-13T13:00:00.000Z",
    ]


def test_close_offset_changes_keep_the_floor_date_in_the_fast_path() -> None:
    """Local 02:30 on 2026-06-30 falls in the gap at 01:00Z and first happens at 04:30Z, in the
    overlap after 03:00Z. From a floor at 01:30Z (local 04:30, +3) it is the next target, though
    it is before the floor's local time and the next Tuesday has the floor's offset too."""
    made = close_changes_zone()
    rule = parse_cron("30 2 * * 2")
    floor = ms("2026-06-30T01:30:00.000Z")
    assert made.resolve_local(ms("2026-06-30T02:30:00.000Z")) == ms("2026-06-30T04:30:00.000Z")
    for primed in (False, True):
        made = close_changes_zone()  # a new zone owns an empty span memo
        if primed:  # the floor's stretch in the memo, as after a call just before
            made.span_near(floor)
        assert iso(cron_next(rule, made, floor)) == "2026-06-30T04:30:00.000Z"
    after = cron_next(rule, made, ms("2026-06-30T04:30:00.000Z"))
    assert iso(after) == "2026-07-06T23:30:00.000Z"  # Tuesday 02:30 at +3


@pytest.mark.parametrize("name", ["America/New_York", "Asia/Gaza", "Africa/Casablanca"])
def test_offset_memo_agrees_with_zone_offsets(name: str) -> None:
    where = Zone(name)  # a new zone: its span memo starts empty
    changes = where._transitions
    u = ms("2020-01-01T00:00:00.000Z")
    while u < ms("2030-01-01T00:00:00.000Z"):
        a, b = u - DAY_MS, u + 2 * DAY_MS
        o = cron_module._constant_offset(where, a, b)
        changed = bisect_right(changes, b) > bisect_right(changes, a)
        assert o == (None if changed else where.offset(a)), iso(u)
        u += DAY_MS // 3
