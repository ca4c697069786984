"""Record decoders (docs/protocol.md#records) and record construction from create arguments
(docs/protocol.md#session-tools, docs/protocol.md#host-tools)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.errors import CorruptScheduleError, ScheduleInputError
from schedlog.rules.at import MSG_AT_GAP, MSG_AT_SHAPE, MSG_NOT_FUTURE
from schedlog.rules.instants import MAX_MS, MIN_MS, format_instant, parse_canonical_instant
from schedlog.rules.record import Kind, Record
from schedlog.rules.records import (
    MSG_HOST_SELECTOR,
    MSG_PROMPT,
    MSG_SESSION_SELECTOR,
    MSG_TITLE_LENGTH,
    MSG_TITLE_REQUIRED,
    CreateRequest,
    build_host_record,
    build_session_record,
    decode_host_record,
    decode_legacy_record,
    record_from_json,
    validate_host_create_args,
    validate_session_create_args,
)
from schedlog.rules.text import is_blank, is_trimmed
from tests.rules.messages import assert_error


def ms(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None, text
    return value


AT = "2026-05-04T07:30:00.000Z"
TITLE_121 = "a" * 119 + "\U0001f4c5"
TITLE_120 = "a" * 118 + "\U0001f4c5"

HOST_RECORDS: dict[str, dict[str, Any]] = {
    "after": {
        "id": "schedule-1",
        "kind": "after",
        "title": "T",
        "prompt": "P",
        "afterSeconds": 600,
        "scheduledAt": AT,
    },
    "at": {"id": "schedule-1", "kind": "at", "title": "T", "prompt": "P", "scheduledAt": AT},
    "every": {
        "id": "schedule-1",
        "kind": "every",
        "title": "T",
        "prompt": "P",
        "everySeconds": 60,
        "scheduledAt": AT,
    },
    "daily": {
        "id": "schedule-1",
        "kind": "daily",
        "title": "Standup",
        "prompt": "Post the standup notes",
        "time": "09:30:00.000",
        "timeZone": "Europe/Berlin",
        "scheduledAt": AT,
    },
    "weekly": {
        "id": "schedule-1",
        "kind": "weekly",
        "title": "T",
        "prompt": "P",
        "time": "09:30:00.000",
        "timeZone": "US/Eastern",
        "weekdays": [1, 3, 5],
        "scheduledAt": AT,
    },
    "cron": {
        "id": "schedule-1",
        "kind": "cron",
        "title": "T",
        "prompt": "P",
        "expression": "5-20/5 9 * * 0-1",
        "timeZone": "asia/calcutta",
        "scheduledAt": AT,
    },
}
LEGACY_RECORDS: dict[str, dict[str, Any]] = {
    "after": {
        "id": "schedule-1",
        "kind": "after",
        "prompt": "Stand up",
        "afterSeconds": 600,
        "scheduledAt": AT,
    },
    "at": {"id": "schedule-1", "kind": "at", "prompt": "P", "scheduledAt": AT},
    "every": {
        "id": "schedule-1",
        "kind": "every",
        "prompt": "P",
        "everySeconds": 300,
        "scheduledAt": AT,
    },
    "after-with-title": {
        "id": "schedule-1",
        "kind": "after",
        "title": "T",
        "prompt": "P",
        "afterSeconds": 1,
        "scheduledAt": AT,
    },
}


RECORD_FIELDS = frozenset(
    {
        "id",
        "kind",
        "title",
        "prompt",
        "afterSeconds",
        "everySeconds",
        "time",
        "timeZone",
        "weekdays",
        "expression",
        "scheduledAt",
    }
)


def field_named_by(message: str) -> str | None:
    """The field a decoder message names (``schedule record <field> …``), if any."""
    word = message.split(" ")[2]
    return word if word in RECORD_FIELDS else None


def corrupt(decoder: object, value: object, message: str) -> None:
    assert callable(decoder)
    with pytest.raises(CorruptScheduleError) as info:
        decoder(value)
    assert info.value.code == "corrupt_schedule_log"
    assert info.value.message == message
    # The failing field travels as data (``field``), matching the field the message names.
    assert info.value.field == field_named_by(message)


def input_error(code: str, message: str, func: object, *args: object, **kwargs: object) -> None:
    assert callable(func)
    with pytest.raises(ScheduleInputError) as info:
        func(*args, **kwargs)
    assert_error(info.value, code, message)


# --- decoders: valid records -------------------------------------------------------------------


@pytest.mark.parametrize("name", list(HOST_RECORDS))
def test_host_decoder_round_trips(name: str) -> None:
    value = HOST_RECORDS[name]
    decoded = decode_host_record(value)
    assert decoded.to_json() == value
    assert list(decoded.to_json()) == list(value)
    assert decode_host_record(decoded.to_json()) == decoded


@pytest.mark.parametrize("name", list(LEGACY_RECORDS))
def test_legacy_decoder_round_trips(name: str) -> None:
    value = LEGACY_RECORDS[name]
    decoded = decode_legacy_record(value)
    assert decoded.to_json() == value
    assert decode_legacy_record(decoded.to_json()) == decoded


def test_decoders_return_canonical_key_order_and_integers() -> None:
    shuffled = {"scheduledAt": AT, "everySeconds": 3e2, "prompt": "P", "kind": "every", "id": "x"}
    decoded = decode_legacy_record(shuffled)
    assert decoded.every_seconds == 300 and type(decoded.every_seconds) is int
    assert list(decoded.to_json()) == ["id", "kind", "prompt", "everySeconds", "scheduledAt"]
    weekly = {**HOST_RECORDS["weekly"], "weekdays": [1.0, 2.0]}
    assert decode_host_record(weekly).weekdays == (1, 2)
    assert all(type(d) is int for d in decode_host_record(weekly).weekdays or ())
    after = {**HOST_RECORDS["after"], "afterSeconds": 600.0}
    assert decode_host_record(after).to_json()["afterSeconds"] == 600


def test_host_decoder_keeps_zone_spelling() -> None:
    assert decode_host_record(HOST_RECORDS["weekly"]).time_zone == "US/Eastern"
    assert decode_host_record(HOST_RECORDS["cron"]).time_zone == "asia/calcutta"


def test_spec_6_6_view_example() -> None:
    rec = decode_host_record({**HOST_RECORDS["daily"], "id": "schedule-0b6c"})
    assert rec.view(ms("2026-05-01T00:00:00.000Z"), "host") == {
        **HOST_RECORDS["daily"],
        "id": "schedule-0b6c",
        "state": "scheduled",
        "deliveryMode": "host",
    }


def test_record_from_json_picks_the_decoder() -> None:
    assert record_from_json(HOST_RECORDS["daily"], "auto").kind == "daily"
    assert record_from_json(LEGACY_RECORDS["every"], "auto").every_seconds == 300
    corrupt(
        lambda v: record_from_json(v, "auto"),
        {**LEGACY_RECORDS["every"], "everySeconds": 60},
        "schedule record everySeconds must be a safe integer of at least 300",
    )
    assert (
        record_from_json(
            {**LEGACY_RECORDS["every"], "title": "T", "everySeconds": 60}, "auto"
        ).every_seconds
        == 60
    )
    corrupt(
        lambda v: record_from_json(v, "host"),
        LEGACY_RECORDS["at"],
        "schedule record title is required and must be non-empty after trimming",
    )
    assert record_from_json(LEGACY_RECORDS["at"], "legacy").kind == "at"


# --- decoders: failures in check order (docs/protocol.md#record-decoders)
# --------------------------------------------------

TITLE_REQUIRED = "schedule record title is required and must be non-empty after trimming"
SCHEDULED_AT = "schedule record scheduledAt must be a canonical YYYY-MM-DDTHH:MM:SS.mmmZ instant"
WEEKDAYS = (
    "schedule record weekdays must be a non-empty strictly ascending array of ISO weekdays"
    " 1 through 7"
)
HOST_KINDS = "schedule record kind must be one of after, at, every, daily, weekly, cron"
LEGACY_KINDS = "schedule record kind must be one of after, at, every"
KEYS_AFTER = (
    "schedule record keys for kind after must be exactly"
    " id, kind, title, prompt, afterSeconds, scheduledAt"
)
KEYS_CRON = (
    "schedule record keys for kind cron must be exactly"
    " id, kind, title, prompt, expression, timeZone, scheduledAt"
)
FIVE_FIELDS = (
    "cron.expression must contain exactly five whitespace-separated fields:"
    " minute hour day-of-month month day-of-week."
)


def h(kind: str, /, **changes: object) -> dict[str, object]:
    out = dict(HOST_RECORDS[kind])
    for key, value in changes.items():
        if value is DROP:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def lg(kind: str, /, **changes: object) -> dict[str, object]:
    out = dict(LEGACY_RECORDS[kind])
    for key, value in changes.items():
        if value is DROP:
            out.pop(key, None)
        else:
            out[key] = value
    return out


DROP = object()

HOST_FAILURES = [
    ("null", None, "schedule record must be a JSON object"),
    ("array", [HOST_RECORDS["at"]], "schedule record must be a JSON object"),
    ("string", "record", "schedule record must be a JSON object"),
    ("empty-object", {}, TITLE_REQUIRED),
    ("no-title-wins-over-everything", {"kind": "nope", "extra": 1}, TITLE_REQUIRED),
    ("legacy-record-has-no-title", LEGACY_RECORDS["every"], TITLE_REQUIRED),
    ("title-null", h("at", title=None), TITLE_REQUIRED),
    ("title-number", h("at", title=5), TITLE_REQUIRED),
    ("title-blank", h("at", title="\u2028 "), TITLE_REQUIRED),
    (
        "title-121-units",
        h("at", title=TITLE_121),
        "schedule record title must be at most 120 characters",
    ),
    (
        "title-raw-length-counts",
        h("at", title=" " + "a" * 120),
        "schedule record title must be at most 120 characters",
    ),
    ("title-padded", h("at", title=" T"), "schedule record title must be a trimmed string"),
    (
        "title-nbsp-padded",
        h("at", title="T\u00a0"),
        "schedule record title must be a trimmed string",
    ),
    ("title-before-kind", h("at", title="", kind="nope"), TITLE_REQUIRED),
    ("kind-missing", h("at", kind=DROP), HOST_KINDS),
    ("kind-unknown", h("at", kind="monthly"), HOST_KINDS),
    ("kind-case", h("at", kind="AT"), HOST_KINDS),
    ("kind-before-keys", h("at", kind=None, extra=1), HOST_KINDS),
    (
        "missing-key",
        h("after", afterSeconds=DROP),
        KEYS_AFTER,
    ),
    (
        "extra-key",
        h("at", state="scheduled"),
        "schedule record keys for kind at must be exactly id, kind, title, prompt, scheduledAt",
    ),
    (
        "other-kind-keys",
        h("daily", kind="cron"),
        KEYS_CRON,
    ),
    (
        "keys-before-id",
        h("at", id="", extra=1),
        "schedule record keys for kind at must be exactly id, kind, title, prompt, scheduledAt",
    ),
    ("id-empty", h("at", id=""), "schedule record id must be a non-empty trimmed string"),
    (
        "id-padded",
        h("at", id=" schedule-1"),
        "schedule record id must be a non-empty trimmed string",
    ),
    ("id-number", h("at", id=1), "schedule record id must be a non-empty trimmed string"),
    (
        "id-before-prompt",
        h("at", id="", prompt=""),
        "schedule record id must be a non-empty trimmed string",
    ),
    (
        "prompt-blank",
        h("at", prompt="  "),
        "schedule record prompt must be a non-empty trimmed string",
    ),
    (
        "prompt-padded",
        h("at", prompt="P\n"),
        "schedule record prompt must be a non-empty trimmed string",
    ),
    (
        "prompt-null",
        h("at", prompt=None),
        "schedule record prompt must be a non-empty trimmed string",
    ),
    (
        "prompt-before-fields",
        h("every", prompt="", everySeconds=1),
        "schedule record prompt must be a non-empty trimmed string",
    ),
    (
        "after-zero",
        h("after", afterSeconds=0),
        "schedule record afterSeconds must be a positive safe integer",
    ),
    (
        "after-fraction",
        h("after", afterSeconds=1.5),
        "schedule record afterSeconds must be a positive safe integer",
    ),
    (
        "after-bool",
        h("after", afterSeconds=True),
        "schedule record afterSeconds must be a positive safe integer",
    ),
    (
        "after-string",
        h("after", afterSeconds="600"),
        "schedule record afterSeconds must be a positive safe integer",
    ),
    (
        "after-unsafe",
        h("after", afterSeconds=2**53),
        "schedule record afterSeconds must be a positive safe integer",
    ),
    (
        "every-59",
        h("every", everySeconds=59),
        "schedule record everySeconds must be a safe integer of at least 60",
    ),
    (
        "every-bool",
        h("every", everySeconds=True),
        "schedule record everySeconds must be a safe integer of at least 60",
    ),
    (
        "every-nan",
        h("every", everySeconds=float("nan")),
        "schedule record everySeconds must be a safe integer of at least 60",
    ),
    (
        "every-too-large",
        h("every", everySeconds=9_007_199_254_741),
        "schedule record everySeconds must be at most 9007199254740",
    ),
    (
        "every-before-scheduled-at",
        h("every", everySeconds=1, scheduledAt="x"),
        "schedule record everySeconds must be a safe integer of at least 60",
    ),
    (
        "time-not-normalized",
        h("daily", time="09:30:00"),
        "schedule record time must be a normalized HH:MM:SS.mmm time of day",
    ),
    (
        "time-short-fraction",
        h("daily", time="09:30:00.1"),
        "schedule record time must be a normalized HH:MM:SS.mmm time of day",
    ),
    (
        "time-24",
        h("daily", time="24:00:00.000"),
        "schedule record time must be a normalized HH:MM:SS.mmm time of day",
    ),
    (
        "time-null",
        h("daily", time=None),
        "schedule record time must be a normalized HH:MM:SS.mmm time of day",
    ),
    (
        "time-before-zone",
        h("daily", time="9", timeZone="Mars/Base"),
        "schedule record time must be a normalized HH:MM:SS.mmm time of day",
    ),
    (
        "zone-unknown",
        h("daily", timeZone="Mars/Olympus_Mons"),
        "schedule record timeZone must be UTC or a valid IANA Area/Location name",
    ),
    (
        "zone-shape",
        h("daily", timeZone="Europe"),
        "schedule record timeZone must be UTC or a valid IANA Area/Location name",
    ),
    (
        "zone-number",
        h("cron", timeZone=0),
        "schedule record timeZone must be UTC or a valid IANA Area/Location name",
    ),
    (
        "zone-before-weekdays",
        h("weekly", timeZone="x", weekdays=[]),
        "schedule record timeZone must be UTC or a valid IANA Area/Location name",
    ),
    ("weekdays-empty", h("weekly", weekdays=[]), WEEKDAYS),
    ("weekdays-unsorted", h("weekly", weekdays=[3, 1]), WEEKDAYS),
    ("weekdays-repeat", h("weekly", weekdays=[1, 1]), WEEKDAYS),
    ("weekdays-zero", h("weekly", weekdays=[0]), WEEKDAYS),
    ("weekdays-eight", h("weekly", weekdays=[8]), WEEKDAYS),
    ("weekdays-bool", h("weekly", weekdays=[True]), WEEKDAYS),
    ("weekdays-string", h("weekly", weekdays=["1"]), WEEKDAYS),
    ("weekdays-fraction", h("weekly", weekdays=[1.5]), WEEKDAYS),
    ("weekdays-object", h("weekly", weekdays={"1": 1}), WEEKDAYS),
    (
        "expression-number",
        h("cron", expression=7),
        "schedule record expression must be a cron expression string",
    ),
    (
        "expression-not-canonical",
        h("cron", expression="5,10,15,20 9 * * 7,1"),
        "schedule record expression is not canonical: cron expression must be canonical",
    ),
    (
        "expression-double-space",
        h("cron", expression="0  9 * * *"),
        "schedule record expression is not canonical: cron expression must be canonical",
    ),
    (
        "expression-before-zone",
        h("cron", expression=7, timeZone=7),
        "schedule record expression must be a cron expression string",
    ),
    ("scheduled-at-no-such-date", h("at", scheduledAt="2026-04-31T00:00:00.000Z"), SCHEDULED_AT),
    (
        "scheduled-at-two-fraction-digits",
        h("at", scheduledAt="2026-05-01T09:00:00.00Z"),
        SCHEDULED_AT,
    ),
    ("scheduled-at-offset", h("at", scheduledAt="2026-05-01T09:00:00.000+00:00"), SCHEDULED_AT),
    ("scheduled-at-lower-z", h("at", scheduledAt="2026-05-01T09:00:00.000z"), SCHEDULED_AT),
    ("scheduled-at-year-0", h("at", scheduledAt="0000-12-31T23:00:00.000Z"), SCHEDULED_AT),
    ("scheduled-at-number", h("at", scheduledAt=ms(AT)), SCHEDULED_AT),
    ("scheduled-at-leap-second", h("at", scheduledAt="2026-12-31T23:59:60.000Z"), SCHEDULED_AT),
]


@pytest.mark.parametrize(
    ("value", "message"), [v[1:] for v in HOST_FAILURES], ids=[v[0] for v in HOST_FAILURES]
)
def test_host_decoder_failures(value: object, message: str) -> None:
    corrupt(decode_host_record, value, message)


def test_host_invalid_expression_names_the_cron_field() -> None:
    with pytest.raises(CorruptScheduleError) as info:
        decode_host_record(h("cron", expression="0 24 * * *"))
    assert info.value.message.startswith(
        "schedule record expression is not a valid cron expression: "
    )
    assert "hour" in info.value.message


LEGACY_FAILURES = [
    ("null", None, "schedule record must be a JSON object"),
    ("title-present-invalid", lg("at", title=""), TITLE_REQUIRED),
    ("title-null", lg("at", title=None), TITLE_REQUIRED),
    (
        "title-121-units",
        lg("at", title=TITLE_121),
        "schedule record title must be at most 120 characters",
    ),
    ("title-padded", lg("at", title="T "), "schedule record title must be a trimmed string"),
    ("title-before-kind", lg("at", title=1, kind="daily"), TITLE_REQUIRED),
    ("daily-kind", h("daily"), LEGACY_KINDS),
    ("cron-kind-no-title", {**lg("at"), "kind": "cron"}, LEGACY_KINDS),
    (
        "missing-key",
        lg("at", scheduledAt=DROP),
        "schedule record keys for kind at must be exactly id, kind, prompt, scheduledAt",
    ),
    (
        "extra-key-with-title",
        lg("after-with-title", x=1),
        KEYS_AFTER,
    ),
    (
        "every-60",
        lg("every", everySeconds=60),
        "schedule record everySeconds must be a safe integer of at least 300",
    ),
    (
        "every-299",
        lg("every", everySeconds=299),
        "schedule record everySeconds must be a safe integer of at least 300",
    ),
    (
        "every-string",
        lg("every", everySeconds="300"),
        "schedule record everySeconds must be a safe integer of at least 300",
    ),
    (
        "every-too-large",
        lg("every", everySeconds=9_007_199_254_741),
        "schedule record everySeconds must be at most 9007199254740",
    ),
    (
        "after-negative",
        lg("after", afterSeconds=-600),
        "schedule record afterSeconds must be a positive safe integer",
    ),
    ("scheduled-at", lg("at", scheduledAt="2026-05-01T09:00:00Z"), SCHEDULED_AT),
]


@pytest.mark.parametrize(
    ("value", "message"), [v[1:] for v in LEGACY_FAILURES], ids=[v[0] for v in LEGACY_FAILURES]
)
def test_legacy_decoder_failures(value: object, message: str) -> None:
    corrupt(decode_legacy_record, value, message)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(300, 300), (300.0, 300), (3e2, 300), (9_007_199_254_740, 9_007_199_254_740)],
    ids=["int", "float", "exponent", "largest"],
)
def test_legacy_every_seconds_accepted(value: object, expected: int) -> None:
    decoded = decode_legacy_record(lg("every", everySeconds=value))
    assert decoded.every_seconds == expected and type(decoded.every_seconds) is int


# --- builders: session-local (docs/protocol.md#session-tools)
# -----------------------------------------------------------

NOW = ms("2026-05-01T08:50:00.000Z")


def test_spec_10_5_create_example() -> None:
    rec = build_session_record(
        {"prompt": "  Stand up  ", "after_seconds": 600}, id="schedule-1", now=NOW
    )
    assert rec.view(NOW, "session-local") == {
        "id": "schedule-1",
        "kind": "after",
        "prompt": "Stand up",
        "afterSeconds": 600,
        "scheduledAt": "2026-05-01T09:00:00.000Z",
        "state": "scheduled",
        "deliveryMode": "session-local",
    }


SESSION_BUILDS = [
    (
        "after",
        {"prompt": "P", "after_seconds": 60},
        {"kind": "after", "afterSeconds": 60, "scheduledAt": "2026-05-01T08:51:00.000Z"},
    ),
    (
        "after-float",
        {"prompt": "P", "after_seconds": 60.0},
        {"kind": "after", "afterSeconds": 60, "scheduledAt": "2026-05-01T08:51:00.000Z"},
    ),
    (
        "at-string",
        {"prompt": "P", "at": "2026-05-01T10:00:00+01:00"},
        {"kind": "at", "scheduledAt": "2026-05-01T09:00:00.000Z"},
    ),
    (
        "at-local",
        {
            "prompt": "P",
            "at": {"date": "2026-05-01", "time": "11:00:00", "time_zone": "Europe/Berlin"},
        },
        {"kind": "at", "scheduledAt": "2026-05-01T09:00:00.000Z"},
    ),
    (
        "every-300",
        {"prompt": "P", "every_seconds": 300},
        {"kind": "every", "everySeconds": 300, "scheduledAt": "2026-05-01T08:55:00.000Z"},
    ),
    (
        "every-300.0",
        {"prompt": "P", "every_seconds": 300.0},
        {"kind": "every", "everySeconds": 300, "scheduledAt": "2026-05-01T08:55:00.000Z"},
    ),
    (
        "every-3e2",
        {"prompt": "P", "every_seconds": 3e2},
        {"kind": "every", "everySeconds": 300, "scheduledAt": "2026-05-01T08:55:00.000Z"},
    ),
]


@pytest.mark.parametrize(
    ("args", "expected"), [v[1:] for v in SESSION_BUILDS], ids=[v[0] for v in SESSION_BUILDS]
)
def test_session_builds(args: dict[str, object], expected: dict[str, object]) -> None:
    rec = build_session_record(args, id="schedule-7", now=NOW)
    out = rec.to_json()
    assert out == {"id": "schedule-7", "kind": out["kind"], "prompt": "P", **expected}
    assert decode_legacy_record(out) == rec


SESSION_ERRORS = [
    ("no-selector", {"prompt": "P"}, "invalid_selector", MSG_SESSION_SELECTOR),
    (
        "two-selectors",
        {"prompt": "P", "at": "x", "every_seconds": 300},
        "invalid_selector",
        MSG_SESSION_SELECTOR,
    ),
    (
        "null-counts-as-present",
        {"prompt": "P", "at": None, "every_seconds": 300},
        "invalid_selector",
        MSG_SESSION_SELECTOR,
    ),
    (
        "title-is-unknown",
        {"prompt": "P", "title": "T", "after_seconds": 60},
        "invalid_selector",
        MSG_SESSION_SELECTOR,
    ),
    (
        "host-selector-is-unknown",
        {"prompt": "P", "daily": {}},
        "invalid_selector",
        MSG_SESSION_SELECTOR,
    ),
    (
        "unknown-key",
        {"prompt": "P", "after_seconds": 60, "x": 1},
        "invalid_selector",
        MSG_SESSION_SELECTOR,
    ),
    ("not-object", ["P"], "invalid_selector", MSG_SESSION_SELECTOR),
    (
        "selector-before-prompt",
        {"after_seconds": 60, "every_seconds": 300},
        "invalid_selector",
        MSG_SESSION_SELECTOR,
    ),
    ("prompt-missing", {"after_seconds": 60}, "invalid_prompt", MSG_PROMPT),
    ("prompt-number", {"prompt": 5, "after_seconds": 60}, "invalid_prompt", MSG_PROMPT),
    ("prompt-blank", {"prompt": "\u3000\u2028", "after_seconds": 60}, "invalid_prompt", MSG_PROMPT),
    ("prompt-before-number", {"prompt": "", "after_seconds": 0}, "invalid_prompt", MSG_PROMPT),
    (
        "after-zero",
        {"prompt": "P", "after_seconds": 0},
        "invalid_rule",
        "after_seconds must be a positive safe integer.",
    ),
    (
        "after-null",
        {"prompt": "P", "after_seconds": None},
        "invalid_rule",
        "after_seconds must be a positive safe integer.",
    ),
    (
        "after-true",
        {"prompt": "P", "after_seconds": True},
        "invalid_rule",
        "after_seconds must be a positive safe integer.",
    ),
    (
        "after-string",
        {"prompt": "P", "after_seconds": "300"},
        "invalid_rule",
        "after_seconds must be a positive safe integer.",
    ),
    (
        "every-true",
        {"prompt": "P", "every_seconds": True},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-string",
        {"prompt": "P", "every_seconds": "300"},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-nan",
        {"prompt": "P", "every_seconds": float("nan")},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-infinity",
        {"prompt": "P", "every_seconds": float("inf")},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-fraction",
        {"prompt": "P", "every_seconds": 300.5},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-unsafe",
        {"prompt": "P", "every_seconds": 2**53},
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-299",
        {"prompt": "P", "every_seconds": 299},
        "frequency_too_high",
        "every_seconds must be at least 300.",
    ),
    (
        "every-60",
        {"prompt": "P", "every_seconds": 60},
        "frequency_too_high",
        "every_seconds must be at least 300.",
    ),
]


@pytest.mark.parametrize(
    ("args", "code", "message"), [v[1:] for v in SESSION_ERRORS], ids=[v[0] for v in SESSION_ERRORS]
)
def test_session_shape_errors(args: object, code: str, message: str) -> None:
    input_error(code, message, validate_session_create_args, args)
    input_error(code, message, build_session_record, args, id="schedule-1", now=NOW)


SESSION_BUILD_ERRORS = [
    ("at-shape", {"prompt": "P", "at": "tomorrow"}, NOW, "invalid_rule", MSG_AT_SHAPE),
    (
        "at-gap",
        {
            "prompt": "P",
            "at": {"date": "2027-03-28", "time": "02:30:00", "time_zone": "Europe/Berlin"},
        },
        NOW,
        "invalid_rule",
        MSG_AT_GAP,
    ),
    (
        "at-zone",
        {"prompt": "P", "at": {"date": "2027-03-28", "time": "02:30:00", "time_zone": "Mars/Base"}},
        NOW,
        "invalid_time_zone",
        "time_zone must be UTC or a valid IANA Area/Location name.",
    ),
    ("at-past", {"prompt": "P", "at": "2026-05-01T08:50:00Z"}, NOW, "not_future", MSG_NOT_FUTURE),
    (
        "at-now-invalid",
        {"prompt": "P", "at": "2026-05-01T09:00:00Z"},
        MAX_MS + 1,
        "time_out_of_range",
        "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.",
    ),
    (
        "after-now-invalid",
        {"prompt": "P", "after_seconds": 1},
        MIN_MS - 1,
        "time_out_of_range",
        "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.",
    ),
    (
        "after-past-max",
        {"prompt": "P", "after_seconds": 2**53 - 1},
        NOW,
        "time_out_of_range",
        "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.",
    ),
    (
        "every-past-max",
        {"prompt": "P", "every_seconds": 300},
        MAX_MS - 1000,
        "time_out_of_range",
        "The scheduled time must be representable as a four-digit-year RFC 3339 UTC instant.",
    ),
]


@pytest.mark.parametrize(
    ("args", "now", "code", "message"),
    [v[1:] for v in SESSION_BUILD_ERRORS],
    ids=[v[0] for v in SESSION_BUILD_ERRORS],
)
def test_session_build_errors(args: object, now: int, code: str, message: str) -> None:
    assert isinstance(validate_session_create_args(args), CreateRequest)
    input_error(code, message, build_session_record, args, id="schedule-1", now=now)


# --- builders: host (docs/protocol.md#host-tools)
# ------------------------------------------------------------


def host_args(**selector: object) -> dict[str, object]:
    return {"prompt": " P ", "title": " T ", **selector}


HOST_BUILDS = [
    (
        "after",
        host_args(after_seconds=600),
        {"kind": "after", "afterSeconds": 600, "scheduledAt": "2026-05-01T09:00:00.000Z"},
    ),
    (
        "at",
        host_args(at="2026-05-02T00:00:00Z"),
        {"kind": "at", "scheduledAt": "2026-05-02T00:00:00.000Z"},
    ),
    (
        "every-60",
        host_args(every_seconds=60),
        {"kind": "every", "everySeconds": 60, "scheduledAt": "2026-05-01T08:51:00.000Z"},
    ),
    (
        "daily",
        host_args(daily={"time": "09:30:00", "time_zone": "europe/berlin"}),
        {
            "kind": "daily",
            "time": "09:30:00.000",
            "timeZone": "Europe/Berlin",
            "scheduledAt": "2026-05-02T07:30:00.000Z",
        },
    ),
    (
        "daily-alias-canonicalized",
        host_args(daily={"time": "09:30:00.5", "time_zone": "US/Eastern"}),
        {
            "kind": "daily",
            "time": "09:30:00.500",
            "timeZone": "America/New_York",
            "scheduledAt": "2026-05-01T13:30:00.500Z",
        },
    ),
    (
        "weekly",
        host_args(weekly={"time": "09:30:00", "time_zone": "Europe/Kiev", "weekdays": [5, 1]}),
        {
            "kind": "weekly",
            "time": "09:30:00.000",
            "timeZone": "Europe/Kyiv",
            "weekdays": [1, 5],
            "scheduledAt": "2026-05-04T06:30:00.000Z",
        },
    ),
    (
        "cron-canonicalized",
        host_args(cron={"expression": "5,10,15,20 9 * * 7,1", "time_zone": "Etc/UTC"}),
        {
            "kind": "cron",
            "expression": "5-20/5 9 * * 0-1",
            "timeZone": "UTC",
            "scheduledAt": "2026-05-03T09:05:00.000Z",
        },
    ),
    (
        "cron-spec-8.7",
        host_args(cron={"expression": "0 8 * * 1-5", "time_zone": "Europe/Berlin"}),
        {
            "now": "2026-05-01T12:00:00.000Z",
            "kind": "cron",
            "expression": "0 8 * * 1-5",
            "timeZone": "Europe/Berlin",
            "scheduledAt": "2026-05-04T06:00:00.000Z",
        },
    ),
]


@pytest.mark.parametrize(
    ("args", "expected"), [v[1:] for v in HOST_BUILDS], ids=[v[0] for v in HOST_BUILDS]
)
def test_host_builds(args: dict[str, object], expected: dict[str, object]) -> None:
    expected = dict(expected)
    now = ms(str(expected.pop("now"))) if "now" in expected else NOW
    rec = build_host_record(args, id="schedule-abc", now=now)
    out = rec.to_json()
    expected_keys = {"id": "schedule-abc", "kind": expected["kind"], "title": "T", "prompt": "P"}
    assert out == {**expected_keys, **expected}
    assert list(out)[:4] == ["id", "kind", "title", "prompt"]
    assert decode_host_record(out) == rec


HOST_ERRORS = [
    ("no-selector", host_args(), "invalid_selector", MSG_HOST_SELECTOR),
    ("two-selectors", host_args(daily={}, cron={}), "invalid_selector", MSG_HOST_SELECTOR),
    ("null-selectors", host_args(daily=None, weekly=None), "invalid_selector", MSG_HOST_SELECTOR),
    (
        "unknown-key",
        host_args(after_seconds=60, time_zone="UTC"),
        "invalid_selector",
        MSG_HOST_SELECTOR,
    ),
    ("not-object", None, "invalid_selector", MSG_HOST_SELECTOR),
    ("selector-before-prompt", {"title": "T"}, "invalid_selector", MSG_HOST_SELECTOR),
    ("prompt-missing", {"title": "T", "after_seconds": 60}, "invalid_prompt", MSG_PROMPT),
    ("prompt-before-title", {"prompt": " ", "after_seconds": 60}, "invalid_prompt", MSG_PROMPT),
    ("title-missing", {"prompt": "P", "after_seconds": 60}, "invalid_prompt", MSG_TITLE_REQUIRED),
    (
        "title-null",
        {"prompt": "P", "title": None, "after_seconds": 60},
        "invalid_prompt",
        MSG_TITLE_REQUIRED,
    ),
    (
        "title-number",
        {"prompt": "P", "title": 1, "after_seconds": 60},
        "invalid_prompt",
        MSG_TITLE_REQUIRED,
    ),
    (
        "title-blank",
        {"prompt": "P", "title": "\u00a0", "after_seconds": 60},
        "invalid_prompt",
        MSG_TITLE_REQUIRED,
    ),
    (
        "title-121-units",
        {"prompt": "P", "title": TITLE_121, "after_seconds": 60},
        "invalid_prompt",
        MSG_TITLE_LENGTH,
    ),
    (
        "title-before-numbers",
        {"prompt": "P", "title": TITLE_121, "after_seconds": 0},
        "invalid_prompt",
        MSG_TITLE_LENGTH,
    ),
    (
        "after-zero",
        host_args(after_seconds=0),
        "invalid_rule",
        "after_seconds must be a positive safe integer.",
    ),
    (
        "every-string",
        host_args(every_seconds="60"),
        "invalid_rule",
        "every_seconds must be a safe integer.",
    ),
    (
        "every-59",
        host_args(every_seconds=59),
        "frequency_too_high",
        "every_seconds must be at least 60.",
    ),
]


@pytest.mark.parametrize(
    ("args", "code", "message"), [v[1:] for v in HOST_ERRORS], ids=[v[0] for v in HOST_ERRORS]
)
def test_host_shape_errors(args: object, code: str, message: str) -> None:
    input_error(code, message, validate_host_create_args, args)
    input_error(code, message, build_host_record, args, id="schedule-1", now=NOW)


CANONICAL_ZONES = [
    ("us-eastern", "US/Eastern", "America/New_York"),
    ("asia-calcutta", "Asia/Calcutta", "Asia/Kolkata"),
    ("europe-kiev", "Europe/Kiev", "Europe/Kyiv"),
    ("amsterdam-stays", "Europe/Amsterdam", "Europe/Amsterdam"),
    ("etc-utc", "Etc/UTC", "UTC"),
    ("etc-zulu", "Etc/Zulu", "UTC"),
    ("etc-gmt-stays", "Etc/GMT", "Etc/GMT"),
    ("lower-case", "asia/shanghai", "Asia/Shanghai"),
]


@pytest.mark.parametrize(
    ("given_zone", "stored"), [v[1:] for v in CANONICAL_ZONES], ids=[v[0] for v in CANONICAL_ZONES]
)
@pytest.mark.parametrize("selector", ["daily", "weekly", "cron"])
def test_creation_stores_the_canonical_zone(selector: str, given_zone: str, stored: str) -> None:
    value: dict[str, object] = {"time": "09:00:00", "time_zone": given_zone}
    if selector == "weekly":
        value["weekdays"] = [1]
    if selector == "cron":
        value = {"expression": "0 9 * * *", "time_zone": given_zone}
    rec = build_host_record(host_args(**{selector: value}), id="x", now=NOW)
    assert rec.time_zone == stored


TRIM_CASES = [
    ("spec-2.1-ideographic-and-nbsp", "\u3000Weekly sync\u00a0", "Weekly sync"),
    ("zero-width-space-kept", "\u200bx", "\u200bx"),
    ("next-line-kept", "\u0085x\u0085", "\u0085x\u0085"),
    ("bom-trimmed", "\ufeffx\u2029", "x"),
]


@pytest.mark.parametrize(
    ("raw", "trimmed"), [v[1:] for v in TRIM_CASES], ids=[v[0] for v in TRIM_CASES]
)
def test_title_and_prompt_use_javascript_trim(raw: str, trimmed: str) -> None:
    rec = build_host_record({"prompt": raw, "title": raw, "after_seconds": 60}, id="x", now=NOW)
    assert (rec.title, rec.prompt) == (trimmed, trimmed)
    session = build_session_record({"prompt": raw, "after_seconds": 60}, id="x", now=NOW)
    assert session.prompt == trimmed


def test_negative_zero_is_zero() -> None:
    input_error(
        "invalid_rule",
        "after_seconds must be a positive safe integer.",
        build_session_record,
        {"prompt": "P", "after_seconds": -0.0},
        id="x",
        now=NOW,
    )
    input_error(
        "frequency_too_high",
        "every_seconds must be at least 60.",
        build_host_record,
        host_args(every_seconds=-0.0),
        id="x",
        now=NOW,
    )


def test_host_title_limits() -> None:
    rec = build_host_record(
        {"prompt": "P", "title": TITLE_120, "after_seconds": 60}, id="x", now=NOW
    )
    assert rec.title == TITLE_120
    padded = " \u3000" + "b" * 120 + "\u00a0"
    assert (
        build_host_record(
            {"prompt": "P", "title": padded, "after_seconds": 60}, id="x", now=NOW
        ).title
        == "b" * 120
    )
    request = validate_host_create_args(host_args(every_seconds=60.0))
    assert request == CreateRequest("every_seconds", 60.0, "P", "T")


CRON_SHAPE = "cron must be an object with exactly expression and time_zone."
HOST_BUILD_ERRORS = [
    (
        "daily-shape",
        host_args(daily={"time": "09:00:00"}),
        NOW,
        "invalid_rule",
        "daily must be an object with exactly time and time_zone.",
    ),
    (
        "weekly-repeat",
        host_args(weekly={"time": "09:00:00", "time_zone": "UTC", "weekdays": [2, 2]}),
        NOW,
        "invalid_rule",
        "weekly.weekdays must not repeat weekday 2.",
    ),
    (
        "daily-zone",
        host_args(daily={"time": "09:00:00", "time_zone": "Europe"}),
        NOW,
        "invalid_time_zone",
        "time_zone must be UTC or a valid IANA Area/Location name.",
    ),
    (
        "daily-now-invalid",
        host_args(daily={"time": "09:00:00", "time_zone": "UTC"}),
        MAX_MS + 1,
        "time_out_of_range",
        "Daily creation time must be a representable four-digit-year UTC instant.",
    ),
    (
        "weekly-no-future",
        host_args(weekly={"time": "09:00:00", "time_zone": "UTC", "weekdays": [1]}),
        ms("9999-12-28T00:00:00.000Z"),
        "time_out_of_range",
        "No future weekly occurrence is representable as a four-digit-year UTC instant.",
    ),
    ("cron-not-object", host_args(cron="0 9 * * *"), NOW, "invalid_rule", CRON_SHAPE),
    ("cron-array", host_args(cron=["0 9 * * *", "UTC"]), NOW, "invalid_rule", CRON_SHAPE),
    (
        "cron-missing-zone",
        host_args(cron={"expression": "0 9 * * *"}),
        NOW,
        "invalid_rule",
        CRON_SHAPE,
    ),
    (
        "cron-extra-key",
        host_args(cron={"expression": "0 9 * * *", "time_zone": "UTC", "x": 1}),
        NOW,
        "invalid_rule",
        CRON_SHAPE,
    ),
    (
        "cron-expression-number",
        host_args(cron={"expression": 7, "time_zone": "Mars/Base"}),
        NOW,
        "invalid_rule",
        "cron.expression must be a non-empty trimmed string.",
    ),
    (
        "cron-expression-before-zone",
        host_args(cron={"expression": "@daily", "time_zone": 5}),
        NOW,
        "invalid_rule",
        FIVE_FIELDS,
    ),
    (
        "cron-zone-after-expression",
        host_args(cron={"expression": "0 9 * * *", "time_zone": "Mars/Base"}),
        NOW,
        "invalid_time_zone",
        "time_zone must be UTC or a valid IANA Area/Location name.",
    ),
    (
        "cron-zone-not-string",
        host_args(cron={"expression": "0 9 * * *", "time_zone": None}),
        NOW,
        "invalid_time_zone",
        "time_zone must be a string.",
    ),
    (
        "cron-no-future",
        host_args(cron={"expression": "0 0 30 2 *", "time_zone": "UTC"}),
        NOW,
        "time_out_of_range",
        "No future cron occurrence is representable as a four-digit-year UTC instant.",
    ),
    (
        "cron-now-invalid",
        host_args(cron={"expression": "0 9 * * *", "time_zone": "UTC"}),
        MIN_MS - 1,
        "time_out_of_range",
        "Cron creation time must be a representable four-digit-year UTC instant.",
    ),
    ("at-not-future", host_args(at="2026-05-01T08:50:00Z"), NOW, "not_future", MSG_NOT_FUTURE),
]


@pytest.mark.parametrize(
    ("args", "now", "code", "message"),
    [v[1:] for v in HOST_BUILD_ERRORS],
    ids=[v[0] for v in HOST_BUILD_ERRORS],
)
def test_host_build_errors(args: object, now: int, code: str, message: str) -> None:
    assert isinstance(validate_host_create_args(args), CreateRequest)
    input_error(code, message, build_host_record, args, id="schedule-1", now=now)


# --- properties --------------------------------------------------------------------------------

safe_text = st.text(min_size=1, max_size=20).filter(lambda s: is_trimmed(s) and not is_blank(s))
ids = st.from_regex(r"schedule-[0-9a-f]{1,12}", fullmatch=True)
titles = st.text(min_size=1, max_size=60).filter(lambda s: is_trimmed(s) and not is_blank(s))
instants = st.integers(MIN_MS, MAX_MS)
times = st.integers(0, 86_399_999).map(
    lambda t: f"{t // 3_600_000:02d}:{t // 60_000 % 60:02d}:{t // 1000 % 60:02d}.{t % 1000:03d}"
)
zones = st.sampled_from(
    ["UTC", "Europe/Berlin", "US/Eastern", "asia/kolkata", "Etc/GMT+3", "Australia/Lord_Howe"]
)
weekday_tuples = st.sets(st.integers(1, 7), min_size=1).map(lambda s: tuple(sorted(s)))
expressions = st.sampled_from(
    ["0 9 * * 1-5", "*/15 * * * *", "5-20/5 9 * * 0-1", "0 0 1 * *", "*/20,7 0-23 * * *"]
)


@st.composite
def host_records(draw: st.DrawFn) -> Record:
    kind = draw(st.sampled_from(["after", "at", "every", "daily", "weekly", "cron"]))
    fields: dict[str, Any] = {}
    if kind == "after":
        fields["after_seconds"] = draw(st.integers(1, 2**53 - 1))
    elif kind == "every":
        fields["every_seconds"] = draw(st.integers(60, 9_007_199_254_740))
    elif kind in ("daily", "weekly"):
        fields["time"] = draw(times)
        fields["time_zone"] = draw(zones)
        if kind == "weekly":
            fields["weekdays"] = draw(weekday_tuples)
    elif kind == "cron":
        fields["expression"] = draw(expressions)
        fields["time_zone"] = draw(zones)
    return Record(
        id=draw(ids),
        kind=cast(Kind, kind),
        title=draw(titles),
        prompt=draw(safe_text),
        scheduled_at=draw(instants),
        **fields,
    )


@given(host_records())
def test_host_decoder_round_trip_property(rec: Record) -> None:
    assert decode_host_record(rec.to_json()) == rec


@given(
    st.sampled_from(["after", "at", "every"]),
    ids,
    safe_text,
    st.none() | titles,
    instants,
    st.integers(300, 9_007_199_254_740),
)
def test_legacy_decoder_round_trip_property(
    kind: str, rid: str, prompt: str, title: str | None, at: int, seconds: int
) -> None:
    fields: dict[str, Any] = {
        "after": {"after_seconds": seconds},
        "every": {"every_seconds": seconds},
        "at": {},
    }[kind]
    rec = Record(
        id=rid, kind=cast(Kind, kind), prompt=prompt, title=title, scheduled_at=at, **fields
    )
    assert decode_legacy_record(rec.to_json()) == rec


json_leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def mutated_records(draw: st.DrawFn) -> object:
    base = dict(draw(st.sampled_from([*HOST_RECORDS.values(), *LEGACY_RECORDS.values()])))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from([*base, "title", "x", "kind", "weekdays", "timeZone"]))
        if draw(st.booleans()):
            base.pop(key, None)
        else:
            base[key] = draw(
                json_values | st.sampled_from([AT, "09:00:00.000", [1, 2], "UTC", "every", "cron"])
            )
    return base


@given(json_values | mutated_records())
def test_decoders_raise_only_corruption(value: object) -> None:
    for decoder in (decode_host_record, decode_legacy_record):
        try:
            rec = decoder(value)
        except CorruptScheduleError as exc:
            assert exc.code == "corrupt_schedule_log"
            assert exc.message.startswith("schedule record ")
            assert exc.field == field_named_by(exc.message)
        else:
            assert decoder(rec.to_json()) == rec


selector_values = json_values | st.sampled_from(
    [
        300,
        60.0,
        "2030-01-01T00:00:00Z",
        {"date": "2030-01-01", "time": "09:00:00", "time_zone": "Europe/Berlin"},
        {"time": "09:00:00", "time_zone": "UTC"},
        {"time": "09:00:00", "time_zone": "UTC", "weekdays": [3, 1]},
        {"expression": "0 9 * * *", "time_zone": "US/Eastern"},
    ]
)


@st.composite
def create_args(draw: st.DrawFn) -> object:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    keys = [
        "prompt",
        "title",
        "after_seconds",
        "at",
        "every_seconds",
        "daily",
        "weekly",
        "cron",
        "x",
    ]
    chosen = draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))
    args: dict[str, object] = {"prompt": "P", "title": "T"} if draw(st.booleans()) else {}
    for key in chosen:
        args[key] = draw(selector_values)
    return args


@given(create_args(), st.integers(MIN_MS - 10**9, MAX_MS + 10**9))
def test_builders_raise_only_input_errors(args: object, now: int) -> None:
    for build, decode in (
        (build_host_record, decode_host_record),
        (build_session_record, decode_legacy_record),
    ):
        try:
            rec = build(args, id="schedule-1", now=now)
        except ScheduleInputError as exc:
            assert exc.code in {
                "invalid_selector",
                "invalid_prompt",
                "invalid_rule",
                "invalid_time_zone",
                "frequency_too_high",
                "time_out_of_range",
                "not_future",
            }
        else:
            assert rec.scheduled_at > now
            assert decode(rec.to_json()) == rec
            assert format_instant(rec.scheduled_at)
