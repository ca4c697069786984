"""Update resolution: compare-and-set, content rules and timing equivalence
(docs/protocol.md#update)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from schedlog.errors import ScheduleInputError
from schedlog.rules.at import MSG_AT_GAP, MSG_AT_SHAPE, MSG_NOT_FUTURE, MSG_OUT_OF_RANGE
from schedlog.rules.instants import MAX_MS, MIN_MS, parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import (
    MSG_PROMPT,
    MSG_TITLE_LENGTH,
    MSG_TITLE_REQUIRED,
    decode_host_record,
)
from schedlog.rules.update import (
    ABSENT,
    MSG_CHANGE_KEYS,
    MSG_CHANGE_SHAPE,
    MSG_EXPECTED,
    Absent,
    UpdateResult,
    resolve_update,
)
from tests.rules.messages import assert_error


def ms(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None, text
    return value


NOW = ms("2026-05-01T08:50:00.000Z")
TARGET = "2026-05-04T13:00:00.000Z"


def current(kind: str, **changes: Any) -> Record:
    base: dict[str, dict[str, Any]] = {
        "after": {"afterSeconds": 600, "scheduledAt": "2026-05-01T09:00:00.000Z"},
        "at": {"scheduledAt": "2026-05-01T09:00:00.000Z"},
        "every": {"everySeconds": 3600, "scheduledAt": "2026-05-01T09:00:00.000Z"},
        "daily": {"time": "09:00:00.000", "timeZone": "US/Eastern", "scheduledAt": TARGET},
        "weekly": {
            "time": "09:00:00.000",
            "timeZone": "UTC",
            "weekdays": [1, 5],
            "scheduledAt": TARGET,
        },
        "cron": {
            "expression": "0 9 * * 1-5",
            "timeZone": "America/New_York",
            "scheduledAt": TARGET,
        },
    }
    value = {
        "id": "schedule-1",
        "kind": kind,
        "title": "Standup",
        "prompt": "Post notes",
        **base[kind],
    }
    value.update(changes)
    return decode_host_record(value)


def resolve(rec: Record, now: int = NOW, expected: object = None, **kwargs: object) -> UpdateResult:
    return resolve_update(rec, rec.to_json() if expected is None else expected, now, **kwargs)


def input_error(code: str, message: str, rec: Record, now: int = NOW, **kwargs: Any) -> None:
    with pytest.raises(ScheduleInputError) as info:
        resolve(rec, now, **kwargs)
    assert_error(info.value, code, message)


# --- expected and compare-and-set --------------------------------------------------------------

BAD_EXPECTED: list[tuple[str, object]] = [
    ("null", None),
    ("array", []),
    ("empty-object", {}),
    ("string", "schedule-1"),
    ("absent", ABSENT),
    ("missing-title", {k: v for k, v in current("cron").to_json().items() if k != "title"}),
    ("extra-key", {**current("cron").to_json(), "state": "scheduled"}),
    ("view-not-record", current("cron").view(NOW, "host")),
    ("non-normalized-time", {**current("daily").to_json(), "time": "09:00:00"}),
    ("non-canonical-expression", {**current("cron").to_json(), "expression": "0 9 * * 1,2,3,4,5"}),
]


@pytest.mark.parametrize("expected", [v[1] for v in BAD_EXPECTED], ids=[v[0] for v in BAD_EXPECTED])
def test_expected_must_decode(expected: object) -> None:
    rec = current("cron")
    with pytest.raises(ScheduleInputError) as info:
        resolve_update(rec, expected, NOW, title="x")
    assert (info.value.code, info.value.message) == ("invalid_rule", MSG_EXPECTED)


CONFLICTS = [
    ("other-target", {"scheduledAt": "2026-05-05T13:00:00.000Z"}),
    ("other-prompt", {"prompt": "Other"}),
    ("other-title", {"title": "Other"}),
    ("other-zone-spelling", {"timeZone": "US/Eastern"}),
    ("other-expression", {"expression": "0 9 * * *"}),
    ("other-id", {"id": "schedule-2"}),
]


@pytest.mark.parametrize("changes", [v[1] for v in CONFLICTS], ids=[v[0] for v in CONFLICTS])
def test_compare_and_set_conflict(changes: dict[str, object]) -> None:
    rec = current("cron")
    expected = {**rec.to_json(), **changes}
    assert resolve(rec, expected=expected, title="New") == UpdateResult(
        False, None, "schedule_conflict"
    )


def test_conflict_wins_over_invalid_content() -> None:
    rec = current("cron")
    expected = {**rec.to_json(), "prompt": "Other"}
    result = resolve(rec, expected=expected, title=None, prompt="", change={"kind": "nope"})
    assert result.code == "schedule_conflict"
    assert resolve(rec, MAX_MS + 1, expected=expected).code == "schedule_conflict"


def test_expected_equality_ignores_key_order_and_number_form() -> None:
    rec = current("every")
    expected = dict(reversed(list(rec.to_json().items())))
    expected["everySeconds"] = 3600.0
    assert resolve(rec, expected=expected) == UpdateResult(False, rec, None)
    weekly = current("weekly")
    assert resolve(weekly, expected={**weekly.to_json(), "weekdays": [1.0, 5]}).record == weekly


# --- title and prompt --------------------------------------------------------------------------

CONTENT_ERRORS = [
    ("title-null", {"title": None}, "invalid_prompt", MSG_TITLE_REQUIRED),
    ("title-number", {"title": 5}, "invalid_prompt", MSG_TITLE_REQUIRED),
    ("title-blank", {"title": " \u3000"}, "invalid_prompt", MSG_TITLE_REQUIRED),
    ("title-121-units", {"title": "a" * 119 + "\U0001f4c5"}, "invalid_prompt", MSG_TITLE_LENGTH),
    ("title-before-prompt", {"title": "", "prompt": ""}, "invalid_prompt", MSG_TITLE_REQUIRED),
    ("prompt-null", {"prompt": None}, "invalid_prompt", MSG_PROMPT),
    ("prompt-blank", {"prompt": "\n"}, "invalid_prompt", MSG_PROMPT),
    ("prompt-list", {"prompt": ["x"]}, "invalid_prompt", MSG_PROMPT),
    ("prompt-before-change", {"prompt": "", "change": None}, "invalid_prompt", MSG_PROMPT),
]


@pytest.mark.parametrize(
    ("kwargs", "code", "message"),
    [v[1:] for v in CONTENT_ERRORS],
    ids=[v[0] for v in CONTENT_ERRORS],
)
def test_content_errors(kwargs: dict[str, Any], code: str, message: str) -> None:
    input_error(code, message, current("daily"), **kwargs)


def test_content_only_update_keeps_timing_and_spelling() -> None:
    rec = current("daily")
    result = resolve(rec, title="  Daily standup ", prompt="\u00a0Post the notes\n")
    assert result.updated and result.code is None
    assert result.record == replace(rec, title="Daily standup", prompt="Post the notes")
    assert result.record is not None and result.record.time_zone == "US/Eastern"


def test_unchanged_trimmed_content_is_a_no_op() -> None:
    rec = current("daily")
    assert resolve(rec, title=" Standup ", prompt="Post notes\t") == UpdateResult(False, rec, None)
    assert resolve(rec) == UpdateResult(False, rec, None)


def test_title_limit_counts_trimmed_units() -> None:
    rec = current("at")
    title = "a" * 118 + "\U0001f4c5"
    result = resolve(rec, title=f"  {title}  ")
    assert result.record is not None and result.record.title == title


# --- change shape ------------------------------------------------------------------------------

SHAPE_ERRORS = [
    ("null", None, MSG_CHANGE_SHAPE),
    ("array", [{"kind": "at", "at": "x"}], MSG_CHANGE_SHAPE),
    ("string", "at", MSG_CHANGE_SHAPE),
    ("empty", {}, MSG_CHANGE_SHAPE),
    ("kind-missing", {"at": "2026-06-01T00:00:00Z"}, MSG_CHANGE_SHAPE),
    ("kind-after", {"kind": "after", "after_seconds": 60}, MSG_CHANGE_SHAPE),
    ("kind-unknown", {"kind": "monthly", "monthly": {}}, MSG_CHANGE_SHAPE),
    ("kind-number", {"kind": 1}, MSG_CHANGE_SHAPE),
    ("kind-case", {"kind": "AT", "at": "x"}, MSG_CHANGE_SHAPE),
    ("selector-missing", {"kind": "at"}, MSG_CHANGE_KEYS),
    ("wrong-selector", {"kind": "every", "every": 600}, MSG_CHANGE_KEYS),
    ("other-kind-selector", {"kind": "at", "every_seconds": 600}, MSG_CHANGE_KEYS),
    ("extra-key", {"kind": "every", "every_seconds": 600, "title": "x"}, MSG_CHANGE_KEYS),
    ("two-selectors", {"kind": "daily", "daily": {}, "weekly": {}}, MSG_CHANGE_KEYS),
]


@pytest.mark.parametrize(
    ("change", "message"), [v[1:] for v in SHAPE_ERRORS], ids=[v[0] for v in SHAPE_ERRORS]
)
def test_change_shape_errors(change: object, message: str) -> None:
    input_error("invalid_rule", message, current("every"), change=change)


TIMING_ERRORS = [
    ("at-shape", {"kind": "at", "at": "tomorrow"}, "invalid_rule", MSG_AT_SHAPE),
    (
        "at-gap",
        {
            "kind": "at",
            "at": {"date": "2027-03-28", "time": "02:30:00", "time_zone": "Europe/Berlin"},
        },
        "invalid_rule",
        MSG_AT_GAP,
    ),
    (
        "at-zone",
        {"kind": "at", "at": {"date": "2027-03-28", "time": "02:30:00", "time_zone": "Mars/Base"}},
        "invalid_time_zone",
        "time_zone must be UTC or a valid IANA Area/Location name.",
    ),
    (
        "at-range",
        {"kind": "at", "at": "0001-01-01T05:00:00+06:00"},
        "time_out_of_range",
        MSG_OUT_OF_RANGE,
    ),
    ("at-past", {"kind": "at", "at": "2026-05-01T08:00:00Z"}, "not_future", MSG_NOT_FUTURE),
    (
        "every-null",
        {"kind": "every", "every_seconds": None},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-string",
        {"kind": "every", "every_seconds": "600"},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-59",
        {"kind": "every", "every_seconds": 59},
        "frequency_too_high",
        "every_seconds must be at least 60.",
    ),
    (
        "daily-shape",
        {"kind": "daily", "daily": {"time": "09:00:00"}},
        "invalid_rule",
        "daily must be an object with exactly time and time_zone.",
    ),
    (
        "daily-time",
        {"kind": "daily", "daily": {"time": "9:00", "time_zone": "UTC"}},
        "invalid_rule",
        "daily.time must use HH:mm:ss with optional 1-3 digit fractional seconds.",
    ),
    (
        "weekly-repeat",
        {"kind": "weekly", "weekly": {"time": "09:00:00", "time_zone": "UTC", "weekdays": [5, 5]}},
        "invalid_rule",
        "weekly.weekdays must not repeat weekday 5.",
    ),
    (
        "weekly-zone",
        {"kind": "weekly", "weekly": {"time": "09:00:00", "time_zone": "UTC+1", "weekdays": [5]}},
        "invalid_time_zone",
        "time_zone must be UTC or a valid IANA Area/Location name.",
    ),
    (
        "cron-shape",
        {"kind": "cron", "cron": {"expression": "0 9 * * *"}},
        "invalid_rule",
        "cron must be an object with exactly expression and time_zone.",
    ),
    (
        "cron-expression-before-zone",
        {"kind": "cron", "cron": {"expression": 7, "time_zone": 7}},
        "invalid_rule",
        "cron.expression must be a non-empty trimmed string.",
    ),
    (
        "cron-zone",
        {"kind": "cron", "cron": {"expression": "0 9 * * *", "time_zone": "Mars/Base"}},
        "invalid_time_zone",
        "time_zone must be UTC or a valid IANA Area/Location name.",
    ),
    (
        "cron-no-future",
        {"kind": "cron", "cron": {"expression": "0 0 31 4 *", "time_zone": "UTC"}},
        "time_out_of_range",
        "No future cron occurrence is representable as a four-digit-year UTC instant.",
    ),
]


@pytest.mark.parametrize(
    ("change", "code", "message"), [v[1:] for v in TIMING_ERRORS], ids=[v[0] for v in TIMING_ERRORS]
)
def test_timing_errors(change: object, code: str, message: str) -> None:
    input_error(code, message, current("every"), change=change)


# --- equivalence (step 6) and results (step 7) -------------------------------------------------

NO_OPS = [
    (
        "spec-11.7-cron",
        current("cron"),
        {"kind": "cron", "cron": {"expression": "0 9 * * 1,2,3,4,5", "time_zone": "US/Eastern"}},
    ),
    (
        "cron-case-insensitive-zone",
        current("cron"),
        {"kind": "cron", "cron": {"expression": "0 9 * * 1-5", "time_zone": "america/new_york"}},
    ),
    ("at-same-instant", current("at"), {"kind": "at", "at": "2026-05-01T09:00:00Z"}),
    (
        "at-same-instant-other-offset",
        current("at"),
        {"kind": "at", "at": "2026-05-01T11:00:00+02:00"},
    ),
    (
        "at-same-instant-local-form",
        current("at"),
        {
            "kind": "at",
            "at": {"date": "2026-05-01", "time": "11:00:00", "time_zone": "Europe/Berlin"},
        },
    ),
    ("at-on-after-keeps-after", current("after"), {"kind": "at", "at": "2026-05-01T09:00:00.000Z"}),
    (
        "at-already-past",
        current("at", scheduledAt="2026-04-01T00:00:00.000Z"),
        {"kind": "at", "at": "2026-04-01T00:00:00Z"},
    ),
    ("every-same", current("every"), {"kind": "every", "every_seconds": 3600}),
    ("every-same-float", current("every"), {"kind": "every", "every_seconds": 3.6e3}),
    (
        "daily-same-normalized",
        current("daily"),
        {"kind": "daily", "daily": {"time": "09:00:00", "time_zone": "America/New_York"}},
    ),
    (
        "daily-same-alias",
        current("daily"),
        {"kind": "daily", "daily": {"time": "09:00:00.0", "time_zone": "US/Eastern"}},
    ),
    (
        "weekly-order-insensitive",
        current("weekly"),
        {
            "kind": "weekly",
            "weekly": {"time": "09:00:00.000", "time_zone": "Etc/UTC", "weekdays": [5, 1]},
        },
    ),
]


@pytest.mark.parametrize(("rec", "change"), [v[1:] for v in NO_OPS], ids=[v[0] for v in NO_OPS])
def test_equivalent_change_is_a_no_op(rec: Record, change: object) -> None:
    assert resolve(rec, change=change) == UpdateResult(False, rec, None)
    edited = resolve(rec, change=change, prompt="New prompt")
    assert edited == UpdateResult(True, replace(rec, prompt="New prompt"), None)


REBUILDS = [
    # (id, current, change, expected record json, now)
    (
        "at-new-instant",
        current("at"),
        {"kind": "at", "at": "2026-06-01T00:00:00+02:00"},
        {"kind": "at", "scheduledAt": "2026-05-31T22:00:00.000Z"},
    ),
    (
        "after-to-at",
        current("after"),
        {"kind": "at", "at": "2026-05-01T09:00:00.001Z"},
        {"kind": "at", "scheduledAt": "2026-05-01T09:00:00.001Z"},
    ),
    (
        "every-to-at-own-target",
        current("every"),
        {"kind": "at", "at": "2026-05-01T09:00:00Z"},
        {"kind": "at", "scheduledAt": "2026-05-01T09:00:00.000Z"},
    ),
    (
        "every-reanchored",
        current("every"),
        {"kind": "every", "every_seconds": 600},
        {"kind": "every", "everySeconds": 600, "scheduledAt": "2026-05-01T09:00:00.000Z"},
    ),
    (
        "at-to-every",
        current("at"),
        {"kind": "every", "every_seconds": 3600},
        {"kind": "every", "everySeconds": 3600, "scheduledAt": "2026-05-01T09:50:00.000Z"},
    ),
    (
        "daily-new-time",
        current("daily"),
        {"kind": "daily", "daily": {"time": "10:00:00", "time_zone": "US/Eastern"}},
        {
            "kind": "daily",
            "time": "10:00:00.000",
            "timeZone": "America/New_York",
            "scheduledAt": "2026-05-01T14:00:00.000Z",
        },
    ),
    (
        "daily-new-zone",
        current("daily"),
        {"kind": "daily", "daily": {"time": "09:00:00", "time_zone": "Asia/Tokyo"}},
        {
            "kind": "daily",
            "time": "09:00:00.000",
            "timeZone": "Asia/Tokyo",
            "scheduledAt": "2026-05-02T00:00:00.000Z",
        },
    ),
    (
        "daily-to-weekly",
        current("daily"),
        {
            "kind": "weekly",
            "weekly": {
                "time": "09:00:00",
                "time_zone": "US/Eastern",
                "weekdays": [7, 1, 2, 3, 4, 5, 6],
            },
        },
        {
            "kind": "weekly",
            "time": "09:00:00.000",
            "timeZone": "America/New_York",
            "weekdays": [1, 2, 3, 4, 5, 6, 7],
            "scheduledAt": "2026-05-01T13:00:00.000Z",
        },
    ),
    (
        "weekly-new-days",
        current("weekly"),
        {"kind": "weekly", "weekly": {"time": "09:00:00", "time_zone": "UTC", "weekdays": [1]}},
        {
            "kind": "weekly",
            "time": "09:00:00.000",
            "timeZone": "UTC",
            "weekdays": [1],
            "scheduledAt": "2026-05-04T09:00:00.000Z",
        },
    ),
    (
        "weekly-to-daily",
        current("weekly"),
        {"kind": "daily", "daily": {"time": "09:00:00", "time_zone": "UTC"}},
        {
            "kind": "daily",
            "time": "09:00:00.000",
            "timeZone": "UTC",
            "scheduledAt": "2026-05-01T09:00:00.000Z",
        },
    ),
    (
        "cron-new-expression",
        current("cron"),
        {"kind": "cron", "cron": {"expression": "5,10,15,20 9 * * 7,1", "time_zone": "US/Eastern"}},
        {
            "kind": "cron",
            "expression": "5-20/5 9 * * 0-1",
            "timeZone": "America/New_York",
            "scheduledAt": "2026-05-03T13:05:00.000Z",
        },
    ),
    (
        "cron-new-zone",
        current("cron"),
        {"kind": "cron", "cron": {"expression": "0 9 * * 1-5", "time_zone": "Europe/Berlin"}},
        {
            "kind": "cron",
            "expression": "0 9 * * 1-5",
            "timeZone": "Europe/Berlin",
            "scheduledAt": "2026-05-04T07:00:00.000Z",
        },
    ),
    (
        "cron-star-flag-differs",
        current("cron", expression="0 9 * * *"),
        {"kind": "cron", "cron": {"expression": "0 9 1-31 * *", "time_zone": "America/New_York"}},
        {
            "kind": "cron",
            "expression": "0 9 1-31 * *",
            "timeZone": "America/New_York",
            "scheduledAt": "2026-05-01T13:00:00.000Z",
        },
    ),
    (
        "daily-to-cron-same-times",
        current("daily"),
        {"kind": "cron", "cron": {"expression": "0 9 * * *", "time_zone": "US/Eastern"}},
        {
            "kind": "cron",
            "expression": "0 9 * * *",
            "timeZone": "America/New_York",
            "scheduledAt": "2026-05-01T13:00:00.000Z",
        },
    ),
]


@pytest.mark.parametrize(
    ("rec", "change", "expected"), [v[1:] for v in REBUILDS], ids=[v[0] for v in REBUILDS]
)
def test_non_equivalent_change_rebuilds(
    rec: Record, change: object, expected: dict[str, object]
) -> None:
    result = resolve(rec, change=change, title=" New title ")
    assert result.updated and result.code is None
    assert result.record is not None
    assert result.record.to_json() == {
        "id": "schedule-1",
        "kind": expected["kind"],
        "title": "New title",
        "prompt": "Post notes",
        **expected,
    }
    assert decode_host_record(result.record.to_json()) == result.record


def test_equivalent_at_still_checks_the_clock() -> None:
    rec = current("at")
    change = {"kind": "at", "at": "2026-05-01T09:00:00Z"}
    input_error("time_out_of_range", MSG_OUT_OF_RANGE, rec, MAX_MS + 1, change=change)
    input_error(
        "invalid_rule", MSG_AT_SHAPE, rec, change={"kind": "at", "at": "2026-05-01 09:00:00Z"}
    )


def test_at_change_on_recurring_record_must_be_future() -> None:
    rec = current("every")
    input_error(
        "not_future", MSG_NOT_FUTURE, rec, change={"kind": "at", "at": "2026-05-01T08:50:00Z"}
    )


@pytest.mark.parametrize("now", [MIN_MS - 1, MAX_MS + 1], ids=["before-min", "after-max"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"title": "New"},
        {"change": {"kind": "every", "every_seconds": 3600}},
        {"change": {"kind": "daily", "daily": {"time": "10:00:00", "time_zone": "UTC"}}},
        {"change": {"kind": "cron", "cron": {"expression": "0 9 * * 1-5", "time_zone": "UTC"}}},
    ],
    ids=["nothing", "title", "every-equivalent", "daily", "cron"],
)
def test_invalid_clock_fails_every_update(now: int, kwargs: dict[str, object]) -> None:
    input_error("time_out_of_range", MSG_OUT_OF_RANGE, current("every"), now, **kwargs)


def test_content_errors_come_before_the_clock() -> None:
    input_error("invalid_prompt", MSG_TITLE_REQUIRED, current("every"), MAX_MS + 1, title="")
    input_error("invalid_rule", MSG_CHANGE_SHAPE, current("every"), MAX_MS + 1, change=[])


def test_spec_11_7_two_edits_from_the_same_expected() -> None:
    stored = current("cron")
    seen = stored.to_json()
    first = resolve_update(
        stored,
        seen,
        NOW,
        change={"kind": "daily", "daily": {"time": "08:00:00", "time_zone": "Asia/Tokyo"}},
    )
    assert first.updated and first.record is not None
    assert first.record.to_json() == {
        "id": "schedule-1",
        "kind": "daily",
        "title": "Standup",
        "prompt": "Post notes",
        "time": "08:00:00.000",
        "timeZone": "Asia/Tokyo",
        "scheduledAt": "2026-05-01T23:00:00.000Z",
    }
    second = resolve_update(first.record, seen, NOW, title="Other")
    assert second == UpdateResult(False, None, "schedule_conflict")
    assert second.to_json(id="schedule-1") == {
        "id": "schedule-1",
        "updated": False,
        "code": "schedule_conflict",
    }


def test_result_json() -> None:
    rec = current("at")
    assert resolve(rec).to_json() == {"updated": False, "record": rec.to_json()}
    assert resolve(rec, title="X").to_json(id="schedule-1") == {
        "id": "schedule-1",
        "updated": True,
        "record": replace(rec, title="X").to_json(),
    }


def test_absent_is_a_falsy_singleton() -> None:
    assert Absent() is ABSENT
    assert not ABSENT
    assert repr(ABSENT) == "ABSENT"


# --- properties --------------------------------------------------------------------------------

RECORDS = [current(kind) for kind in ("after", "at", "every", "daily", "weekly", "cron")]
json_leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)
json_values = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
selectors = json_values | st.sampled_from(
    [
        3600,
        "2026-05-01T09:00:00Z",
        "2030-01-01T00:00:00Z",
        {"time": "09:00:00", "time_zone": "US/Eastern"},
        {"time": "09:00:00", "time_zone": "UTC", "weekdays": [5, 1]},
        {"expression": "0 9 * * 1,2,3,4,5", "time_zone": "America/New_York"},
    ]
)


@st.composite
def changes(draw: st.DrawFn) -> object:
    if draw(st.integers(0, 5)) == 0:
        return draw(json_values)
    kind = draw(st.sampled_from(["at", "every", "daily", "weekly", "cron", "after"]))
    key = {"at": "at", "every": "every_seconds"}.get(kind, kind)
    return {"kind": kind, key: draw(selectors)}


maybe = st.just(ABSENT) | json_values | st.text(max_size=8)


@given(
    st.sampled_from(RECORDS),
    st.booleans(),
    st.just(ABSENT) | changes(),
    maybe,
    maybe,
    st.integers(MIN_MS - 10**9, MAX_MS + 10**9) | st.just(NOW),
)
def test_resolution_raises_only_input_errors(
    rec: Record, same: bool, change: object, title: object, prompt: object, now: int
) -> None:
    expected = rec.to_json() if same else {**rec.to_json(), "prompt": "elsewhere"}
    try:
        result = resolve_update(rec, expected, now, change=change, title=title, prompt=prompt)
    except ScheduleInputError as exc:
        assert exc.code in {
            "invalid_rule",
            "invalid_prompt",
            "invalid_time_zone",
            "frequency_too_high",
            "time_out_of_range",
            "not_future",
        }
        return
    if not same:
        assert result == UpdateResult(False, None, "schedule_conflict")
        return
    assert result.record is not None and result.code is None
    assert result.record.id == rec.id
    assert decode_host_record(result.record.to_json()) == result.record
    if not result.updated:
        assert result.record is rec
    elif result.record.kind == rec.kind and result.record.scheduled_at == rec.scheduled_at:
        assert (result.record.title, result.record.prompt) != (
            rec.title,
            rec.prompt,
        ) or result.record != rec
    else:
        assert result.record.scheduled_at > now


@given(st.sampled_from(RECORDS), st.text(max_size=30), st.text(max_size=30))
def test_resolving_with_own_fields_is_stable(rec: Record, title: str, prompt: str) -> None:
    try:
        first = resolve_update(rec, rec.to_json(), NOW, title=title, prompt=prompt)
    except ScheduleInputError:
        return
    assert first.record is not None
    again = resolve_update(first.record, first.record.to_json(), NOW, title=title, prompt=prompt)
    assert again == UpdateResult(False, first.record, None)
