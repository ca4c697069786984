"""``schedlog rules batch`` (docs/protocol.md#batch-rules) and ``schedlog
rules next`` (docs/cli.md#rules-next) end to end."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from schedlog.cli.main import main


def batch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *lines: str
) -> list[Any]:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
    assert main(["rules", "batch"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("\n")
    return [json.loads(x) for x in out.split("\n")[:-1]]


def one(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], request: Any) -> Any:
    (answer,) = batch(monkeypatch, capsys, json.dumps(request))
    return answer


EVERY = {
    "id": "A",
    "kind": "every",
    "prompt": "p",
    "everySeconds": 3600,
    "scheduledAt": "2026-05-01T09:00:00.000Z",
}
CRON = {
    "id": "c",
    "kind": "cron",
    "title": "T",
    "prompt": "p",
    "expression": "0 8 * * 1-5",
    "timeZone": "Europe/Berlin",
    "scheduledAt": "2026-05-04T06:00:00.000Z",
}


def test_issue_acceptance_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        "sys.stdin",
        io.StringIO(
            '{"op":"canonical_cron","expression":"0 0 * * 5-7"}\n'
            '{"op":"canonical_zone","time_zone":"us/eastern"}\n'
        ),
    )
    assert main(["rules", "batch"]) == 0
    assert capsys.readouterr().out == '{"ok":"0 0 * * 0,5-6"}\n{"ok":"America/New_York"}\n'


CASES: list[tuple[str, dict[str, Any], Any]] = [
    (
        "create-session-example",
        {
            "op": "create",
            "protocol": "session-local",
            "now": "2026-05-01T08:50:00Z",
            "id": "schedule-1",
            "args": {"prompt": "  Stand up  ", "after_seconds": 600},
        },
        {
            "ok": {
                "id": "schedule-1",
                "kind": "after",
                "prompt": "Stand up",
                "afterSeconds": 600,
                "scheduledAt": "2026-05-01T09:00:00.000Z",
            }
        },
    ),
    (
        "create-session-rejects-title",
        {
            "op": "create",
            "protocol": "session-local",
            "now": "2026-05-01T08:50:00Z",
            "id": "s",
            "args": {"prompt": "x", "title": "t", "after_seconds": 600},
        },
        {
            "error": {
                "code": "invalid_selector",
                "message": (
                    "schedule_create accepts exactly one of after_seconds, at, or every_seconds."
                    ' Unknown key: "title".'
                ),
            }
        },
    ),
    (
        "create-host-daily",
        {
            "op": "create",
            "protocol": "host",
            "now": "2026-05-01T06:00:00Z",
            "id": "h",
            "args": {
                "prompt": "Post the standup notes",
                "title": "Standup",
                "daily": {"time": "09:30:00", "time_zone": "Europe/Berlin"},
            },
        },
        {
            "ok": {
                "id": "h",
                "kind": "daily",
                "title": "Standup",
                "prompt": "Post the standup notes",
                "time": "09:30:00.000",
                "timeZone": "Europe/Berlin",
                "scheduledAt": "2026-05-01T07:30:00.000Z",
            }
        },
    ),
    (
        "create-out-of-range-now",
        {
            "op": "create",
            "protocol": "host",
            "now": "+012000-01-01T00:00:00Z",
            "id": "h",
            "args": {"prompt": "p", "title": "t", "every_seconds": 60},
        },
        {"error": {"code": "time_out_of_range"}},
    ),
    (
        "create-padded-id",
        {"op": "create", "protocol": "host", "now": "2026-05-01T06:00:00Z", "id": " h", "args": {}},
        {"error": {"code": "invalid_request"}},
    ),
    (
        "create-bad-protocol",
        {"op": "create", "protocol": "other", "now": "2026-05-01T06:00:00Z", "id": "h", "args": {}},
        {"error": {"code": "invalid_request"}},
    ),
    (
        "create-args-not-object",
        {"op": "create", "protocol": "host", "now": "2026-05-01T06:00:00Z", "id": "h", "args": []},
        {"error": {"code": "invalid_request"}},
    ),
    (
        "decide-every-example",
        {"op": "decide", "record": EVERY, "at": "2026-05-01T11:20:00Z"},
        {
            "ok": {
                "occurrenceAt": "2026-05-01T11:00:00.000Z",
                "nextScheduledAt": "2026-05-01T12:00:00.000Z",
            }
        },
    ),
    (
        "decide-cron-example",
        {"op": "decide", "record": CRON, "at": "2026-05-06T07:00:00Z"},
        {
            "ok": {
                "occurrenceAt": "2026-05-06T06:00:00.000Z",
                "nextScheduledAt": "2026-05-07T06:00:00.000Z",
            }
        },
    ),
    (
        "decide-one-shot-exhausted",
        {
            "op": "decide",
            "record": {
                "id": "a",
                "kind": "at",
                "prompt": "p",
                "scheduledAt": "2026-05-01T09:00:00.000Z",
            },
            "at": "2026-05-02T00:00:00Z",
        },
        {"ok": {"occurrenceAt": "2026-05-01T09:00:00.000Z"}},
    ),
    (
        "decide-before-target",
        {"op": "decide", "record": EVERY, "at": "2026-05-01T08:00:00Z"},
        {"error": {"code": "invalid_rule"}},
    ),
    (
        "decide-unrepresentable",
        {"op": "decide", "record": EVERY, "at": "+012000-01-01T00:00:00Z"},
        {"error": {"code": "time_out_of_range"}},
    ),
    (
        "decide-record-not-object",
        {"op": "decide", "record": [], "at": "2026-05-01T08:00:00Z"},
        {"error": {"code": "corrupt_schedule_log"}},
    ),
    (
        "decide-bad-instant",
        {"op": "decide", "record": EVERY, "at": "tomorrow"},
        {"error": {"code": "invalid_request"}},
    ),
    (
        "canonical-cron-numeric",
        {"op": "canonical_cron", "expression": 7},
        {"error": {"code": "invalid_rule"}},
    ),
    (
        "canonical-cron-field-named",
        {"op": "canonical_cron", "expression": "0 24 * * *"},
        {
            "error": {
                "code": "invalid_rule",
                "message": "cron.expression hour field value 24 is outside 0-23.",
            }
        },
    ),
    (
        "canonical-zone-invalid",
        {"op": "canonical_zone", "time_zone": "Mars/Olympus_Mons"},
        {
            "error": {
                "code": "invalid_time_zone",
                "message": (
                    "time_zone must be UTC or a valid IANA Area/Location name."
                    ' Got "Mars/Olympus_Mons".'
                ),
            }
        },
    ),
    (
        "parse-at-offset",
        {"op": "parse_at", "at": "2026-03-01T10:00:00+05:30", "now": "2026-02-01T00:00:00Z"},
        {"ok": "2026-03-01T04:30:00.000Z"},
    ),
    (
        "parse-at-local",
        {
            "op": "parse_at",
            "now": "2026-02-01T00:00:00Z",
            "at": {"date": "2026-12-24", "time": "18:00:00.5", "time_zone": "Europe/Berlin"},
        },
        {"ok": "2026-12-24T17:00:00.500Z"},
    ),
    (
        "parse-at-year-0",
        {"op": "parse_at", "at": "0001-01-01T05:00:00+06:00", "now": "2026-02-01T00:00:00Z"},
        {"error": {"code": "time_out_of_range"}},
    ),
    (
        "parse-at-gap",
        {
            "op": "parse_at",
            "now": "2026-02-01T00:00:00Z",
            "at": {"date": "2027-03-28", "time": "02:30:00", "time_zone": "Europe/Berlin"},
        },
        {
            "error": {
                "code": "invalid_rule",
                "message": "The local at time does not exist in the selected time zone.",
            }
        },
    ),
    (
        "decode-record-integral-float",
        {
            "op": "decode_record",
            "protocol": "legacy",
            "record": {
                "id": "A",
                "kind": "every",
                "prompt": "p",
                "everySeconds": 3600.0,
                "scheduledAt": "2026-05-01T09:00:00.000Z",
            },
        },
        {"ok": EVERY},
    ),
    (
        "decode-record-host-needs-title",
        {"op": "decode_record", "protocol": "host", "record": EVERY},
        {"error": {"code": "corrupt_schedule_log"}},
    ),
    (
        "decode-record-bad-protocol",
        {"op": "decode_record", "protocol": "x", "record": EVERY},
        {"error": {"code": "invalid_request"}},
    ),
    (
        "decode-change-version-float",
        {"op": "decode_change", "change": {"version": 1.0, "operation": "delete", "id": "x"}},
        {"ok": {"version": 1, "operation": "delete", "id": "x"}},
    ),
    (
        "decode-change-unknown-op",
        {"op": "decode_change", "change": {"version": 1, "operation": "pause", "id": "x"}},
        {"error": {"code": "corrupt_schedule_log"}},
    ),
    (
        "fold-seed-length",
        {
            "op": "fold",
            "seedLength": 2,
            "events": [
                {
                    "type": "schedule/change",
                    "data": {"version": 1, "operation": "create", "schedule": dict(EVERY, id=i)},
                }
                for i in ("P1", "P2", "C")
            ],
        },
        {"ok": {"active": [dict(EVERY, id="C")], "seenIds": ["C"]}},
    ),
    (
        "fold-bad-seed-length",
        {"op": "fold", "seedLength": 5, "events": []},
        {
            "error": {
                "code": "corrupt_schedule_log",
                "message": "schedule seedLength must be within the supplied event log",
            }
        },
    ),
    ("fold-events-not-array", {"op": "fold", "events": {}}, {"error": {"code": "invalid_request"}}),
    (
        "update-cron-equivalent",
        {
            "op": "update",
            "current": CRON,
            "expected": CRON,
            "now": "2026-05-01T00:00:00Z",
            "change": {
                "kind": "cron",
                "cron": {"expression": "0 8 * * 1,2,3,4,5", "time_zone": "Europe/Berlin"},
            },
        },
        {"ok": {"updated": False, "record": CRON}},
    ),
    (
        "update-conflict",
        {
            "op": "update",
            "current": CRON,
            "expected": dict(CRON, prompt="old"),
            "now": "2026-05-01T00:00:00Z",
            "title": "",
        },
        {"ok": {"updated": False, "code": "schedule_conflict"}},
    ),
    (
        "update-missing-expected",
        {"op": "update", "current": CRON, "now": "2026-05-01T00:00:00Z"},
        {
            "error": {
                "code": "invalid_rule",
                "message": "expected must be a complete valid Schedule record.",
            }
        },
    ),
    (
        "update-null-title",
        {
            "op": "update",
            "current": CRON,
            "expected": CRON,
            "now": "2026-05-01T00:00:00Z",
            "title": None,
        },
        {"error": {"code": "invalid_prompt"}},
    ),
    ("unknown-op", {"op": "explode"}, {"error": {"code": "invalid_request"}}),
    (
        "missing-now",
        {"op": "parse_at", "at": "2026-03-01T10:00:00Z"},
        {"error": {"code": "invalid_request"}},
    ),
]


@pytest.mark.parametrize(
    ("request_", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rules_batch_ops(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request_: dict[str, Any],
    expected: Any,
) -> None:
    answer = one(monkeypatch, capsys, request_)
    if "error" in expected and "message" not in expected["error"]:
        assert answer["error"]["code"] == expected["error"]["code"]
        assert set(answer["error"]) == {"code", "message"}
    else:
        assert answer == expected


def test_malformed_lines_answer_one_each_and_continue(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = batch(
        monkeypatch,
        capsys,
        "not json",
        "[]",
        "",
        '{"op":"canonical_zone","time_zone":"UTC"}',
        '{"a":1,"a":2}',
    )
    assert [a.get("error", {}).get("code") for a in answers] == [
        "invalid_request",
        "invalid_request",
        "invalid_request",
        None,
        "invalid_request",
    ]
    assert answers[3] == {"ok": "UTC"}


def test_rules_next_record_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "rules",
                "next",
                "--record",
                json.dumps(EVERY),
                "--at",
                "2026-05-01T11:20:00Z",
                "--count",
                "3",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == {
        "record": EVERY,
        "at": "2026-05-01T11:20:00.000Z",
        "decision": {
            "occurrenceAt": "2026-05-01T11:00:00.000Z",
            "nextScheduledAt": "2026-05-01T12:00:00.000Z",
        },
        "upcoming": [
            "2026-05-01T12:00:00.000Z",
            "2026-05-01T13:00:00.000Z",
            "2026-05-01T14:00:00.000Z",
        ],
    }


def test_rules_next_future_record_has_no_decision(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "rules",
                "next",
                "--record",
                json.dumps(CRON),
                "--at",
                "2026-05-01T12:00:00Z",
                "--count",
                "2",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] is None
    assert out["upcoming"] == ["2026-05-04T06:00:00.000Z", "2026-05-05T06:00:00.000Z"]


def test_rules_next_exhausted_one_shot_stops_early(capsys: pytest.CaptureFixture[str]) -> None:
    record = {"id": "a", "kind": "at", "prompt": "p", "scheduledAt": "2026-05-01T09:00:00.000Z"}
    assert (
        main(["rules", "next", "--record", json.dumps(record), "--at", "2026-05-01T00:00:00Z"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["upcoming"] == ["2026-05-01T09:00:00.000Z"]


def test_rules_next_human_form_marks_dst_days(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "rules",
                "next",
                "--cron",
                "30 1 * * *",
                "--time-zone",
                "America/New_York",
                "--after",
                "2026-10-31T00:00:00Z",
                "--count",
                "3",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "rule: kind=cron expression=30 1 * * * timeZone=America/New_York"
    assert lines[2].split() == [
        "1.",
        "2026-10-31T05:30:00.000Z",
        "2026-10-31",
        "01:30",
        "Sat",
        "-04:00",
    ]
    assert "DST change" in lines[3] and "2026-11-01T05:30:00.000Z" in lines[3]
    assert "DST change" not in lines[4]


def test_rules_next_bad_rule_is_an_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["rules", "next", "--cron", "0 0 * *", "--after", "2026-01-01T00:00:00Z", "--json"]
    assert main(argv) == 2  # a flag value the rules reject: a usage error (docs/cli.md)
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "invalid_rule"


@pytest.mark.parametrize(
    "argv",
    [
        ["--after", "2026-01-01T00:00:00Z"],
        ["--cron", "0 9 * * *", "--daily", "09:00:00", "--after", "2026-01-01T00:00:00Z"],
        ["--weekly", "09:00:00", "--weekdays", "mon", "--after", "2026-01-01T00:00:00Z"],
        ["--cron", "0 9 * * *", "--after", "yesterday"],
    ],
    ids=["no-rule", "two-rules", "bad-weekdays", "bad-instant"],
)
def test_rules_next_usage_errors_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rules", "next", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("schedlog rules next: ")


def test_rules_next_weekly_human_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "rules",
                "next",
                "--weekly",
                "09:00:00",
                "--weekdays",
                "5,1",
                "--time-zone",
                "Europe/Berlin",
                "--after",
                "2026-05-01T12:00:00Z",
                "--count",
                "2",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "rule: kind=weekly time=09:00:00.000 timeZone=Europe/Berlin weekdays=[1, 5]"
    )
    assert lines[2].split()[1:5] == ["2026-05-04T07:00:00.000Z", "2026-05-04", "09:00", "Mon"]
    assert lines[3].split()[1:5] == ["2026-05-08T07:00:00.000Z", "2026-05-08", "09:00", "Fri"]
