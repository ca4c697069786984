"""Fuzz every decoder: JSON text, session-log lines and whole logs, changes, envelopes,
headers, follow-ups, records (legacy and host), host tasks and whole store documents."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given

from tests.fuzz.targets import TARGETS


@given(TARGETS["json_text"].strategy())
def test_json_text(data: bytes) -> None:
    TARGETS["json_text"].run(data)


@given(TARGETS["log_line"].strategy())
def test_log_line(line: bytes) -> None:
    TARGETS["log_line"].run(line)


@given(TARGETS["session_log"].strategy())
def test_session_log(data: bytes) -> None:
    TARGETS["session_log"].run(data)


@given(TARGETS["change"].strategy())
def test_change(value: Any) -> None:
    TARGETS["change"].run(value)


@given(TARGETS["event_value"].strategy())
def test_event_value(item: Any) -> None:
    TARGETS["event_value"].run(item)


@given(TARGETS["legacy_record"].strategy())
def test_legacy_record(value: Any) -> None:
    TARGETS["legacy_record"].run(value)


@given(TARGETS["host_record"].strategy())
def test_host_record(value: Any) -> None:
    TARGETS["host_record"].run(value)


_PAIRED = "x\udbff\udc00"  # two lone surrogates in a row: JSON text joins them into one
_AT_RECORD = {"kind": "at", "title": "T", "prompt": "p", "scheduledAt": "2026-05-01T09:00:00.000Z"}


# Harness regression (the long run's only escapes, not a library bug): the key must be
# compared as stored, as JSON text, like the record id it must equal.
@example((_PAIRED, {"sessionId": "s-1", "record": {"id": _PAIRED, **_AT_RECORD}}))
@given(TARGETS["host_task"].strategy())
def test_host_task(item: Any) -> None:
    TARGETS["host_task"].run(item)


@given(TARGETS["store_document"].strategy())
def test_store_document(item: Any) -> None:
    TARGETS["store_document"].run(item)
