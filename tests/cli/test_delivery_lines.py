"""``delivery.sent`` lines of a run written at once (``DeliveryLines.sent_many``): the same
lines, fields and text as one ``structlog`` event per message, in both forms; the per-event
path whenever the run log's configuration is not the one in force."""

from __future__ import annotations

import io
import json
import re

import pytest
import structlog
from structlog.testing import capture_logs

from schedlog.cli.run_log import configure_run_logging, write_info_lines
from schedlog.cli.serve_log import DeliveryLines
from schedlog.diagnostics import sent_fields
from schedlog.eventlog.followups import Member
from schedlog.host.delivery import Delivered

T = 1_777_626_000_000
MESSAGES = [
    Delivered("s-1", "schedule-message-a", "x", (Member("schedule-1", T),), T + 5),
    Delivered("s\u00e9-2", "schedule-message-b", "y", (Member("a", T - 9), Member("b", T)), T + 7),
    Delivered("s-3", "schedule-message-c", "z", (Member("c", T),)),
]


def _one_by_one(form: str) -> list[str]:
    out = io.StringIO()
    configure_run_logging(form, "info", out)
    log = structlog.get_logger("schedlog.cli")
    for m in MESSAGES:
        log.info(
            "delivery.sent",
            **sent_fields(m.session_id, m.message_id, m.members, m.lateness_ms()),
        )
    return out.getvalue().splitlines()


def _at_once(form: str, level: str = "info") -> tuple[list[str], int]:
    out = io.StringIO()
    writes = 0
    write = out.write

    def counted(text: str) -> int:
        nonlocal writes
        writes += 1
        return write(text)

    out.write = counted  # type: ignore[method-assign]
    configure_run_logging(form, level, out)
    lines = DeliveryLines()
    lines.sent_many(MESSAGES)
    assert lines.delivered == len(MESSAGES)
    return out.getvalue().splitlines(), writes


def _untimed(line: str) -> dict[str, object]:
    event = json.loads(line)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", event.pop("timestamp"))
    return event


def test_json_lines_at_once_are_the_events_one_by_one() -> None:
    expected = _one_by_one("json")
    got, writes = _at_once("json")
    assert writes == 2  # one print: the lines, then its newline
    assert [_untimed(line) for line in got] == [_untimed(line) for line in expected]
    # the same key order as structlog's own rendering
    assert [list(json.loads(line)) for line in got] == [list(json.loads(x)) for x in expected]


@pytest.mark.parametrize("form", ["human"])
def test_human_lines_at_once_are_the_events_one_by_one(form: str) -> None:
    expected = _one_by_one(form)
    got, writes = _at_once(form)
    assert writes == 2  # one print: the lines, then its newline
    assert [line[9:] for line in got] == [line[9:] for line in expected]  # after HH:MM:SS


def test_below_the_level_nothing_is_written() -> None:
    got, writes = _at_once("json", "warning")
    assert got == [] and writes == 0


def test_another_configuration_gets_one_event_per_message() -> None:
    configure_run_logging("json", "info", io.StringIO())
    with capture_logs() as logs:
        assert not write_info_lines("delivery.sent", iter(()))
        DeliveryLines().sent_many(MESSAGES)
    assert [e["messageId"] for e in logs] == [m.message_id for m in MESSAGES]
    assert logs[1]["reminders"] == [
        {"id": "a", "occurrenceAt": "2026-05-01T08:59:59.991Z"},
        {"id": "b", "occurrenceAt": "2026-05-01T09:00:00.000Z"},
    ]
