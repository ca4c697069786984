"""The run log's fast forms (``schedlog.cli.run_log``) equal their readable references: the
UTC timestamp of the JSON form (structlog's ``TimeStamper``), the local clock of the human
form, and the JSON lines written at once (one reused encoder) byte for byte what structlog's
processors render, for hostile fields too."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from schedlog.cli import run_log
from schedlog.cli.run_log import (
    configure_run_logging,
    local_clock,
    local_clock_reference,
    utc_stamp,
    utc_stamp_reference,
    write_info_lines,
)
from schedlog.cli.serve_log import DeliveryLines
from schedlog.diagnostics import sent_fields
from schedlog.eventlog.followups import Member
from schedlog.host.delivery import Delivered

YEAR_9999 = 253_402_300_799 * 1_000_000_000
instants = st.one_of(
    st.integers(0, YEAR_9999),
    st.integers(0, 253_402_300_799).map(lambda s: s * 1_000_000_000),  # whole seconds
    st.integers(0, 253_402_300_799 * 1_000_000).map(lambda us: us * 1000 + 999),
)


@given(instants, instants)
def test_utc_stamp_is_the_datetime_form(a: int, b: int) -> None:
    # two readings: the one-second cache is used and replaced
    for ns in (a, a, b, a + 1, b):
        assert utc_stamp(ns) == utc_stamp_reference(ns)


def test_utc_stamp_is_what_the_timestamper_writes() -> None:
    stamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    for _ in range(200):
        before = time.time_ns()
        written = stamper(None, "info", {})["timestamp"]
        after = time.time_ns()
        moment = datetime.fromisoformat(written)
        micros = (moment - datetime.fromisoformat("1970-01-01T00:00:00Z")).total_seconds()
        ns = round(micros * 1_000_000) * 1000
        assert before // 1000 * 1000 <= ns <= after
        assert utc_stamp(ns) == written


@pytest.fixture(params=["UTC", "America/New_York", "Australia/Lord_Howe"])
def zone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("TZ", str(request.param))
    time.tzset()
    yield str(request.param)
    monkeypatch.undo()
    time.tzset()


# DST changes of 2026 in the zones above, and the seconds around them
EDGES = [1_772_953_200, 1_793_512_800, 1_775_318_400, 1_791_043_200, 0, 2_000_000_000]


def test_local_clock_is_the_datetime_form(zone: str) -> None:
    for edge in EDGES:
        for second in range(edge - 3, edge + 4):
            for ns in (second * 1_000_000_000, second * 1_000_000_000 + 999_999_999):
                assert local_clock(ns) == local_clock_reference(ns), (zone, ns)


def test_local_clock_follows_a_changed_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = 1_777_626_000 * 1_000_000_000
    seen = set()
    for tz in ("UTC", "Asia/Tokyo", "UTC"):
        monkeypatch.setenv("TZ", tz)
        time.tzset()
        assert local_clock(ns) == local_clock_reference(ns)
        seen.add(local_clock(ns))
    monkeypatch.undo()
    time.tzset()
    assert seen == {"09:00:00", "18:00:00"}


hostile_text = st.text(st.characters(blacklist_categories=()), max_size=40) | st.sampled_from(
    ["", "<script>&amp;</script>", "\ud800", "x\udfffy", '\u2028\u0000"\\', "é" * 1000]
)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | hostile_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=12,
)


class Odd:
    def __repr__(self) -> str:
        return "<odd \ud800>"


fields_lists = st.lists(
    st.dictionaries(hostile_text, values | st.just(Odd()), max_size=6), max_size=5
)


def _processors_lines(event: str, events: list[dict[str, Any]], ns: int) -> list[str]:
    """The readable form: each event through the configured processors, the timestamp being
    what the stamper writes at the reading ``ns``."""
    add_level, _stamper, renderer = run_log._configured.processors  # type: ignore[union-attr]
    lines = []
    for fields in events:
        event_dict: Any = add_level(None, "info", {**fields, "event": event})
        event_dict["timestamp"] = utc_stamp_reference(ns)
        lines.append(renderer(None, "info", event_dict))
    return lines


@given(fields_lists, st.sampled_from(["delivery.sent", "", "\ud800<b>"]), instants)
def test_json_lines_at_once_are_the_processors_lines(
    events: list[dict[str, Any]], event: str, ns: int
) -> None:
    out = io.StringIO()
    configure_run_logging("json", "info", out)
    saved = run_log._now_ns
    run_log._now_ns = lambda: ns
    try:
        assert write_info_lines(event, events)
    finally:
        run_log._now_ns = saved
    expected = _processors_lines(event, events, ns)
    assert out.getvalue() == ("\n".join(expected) + "\n" if events else "")
    for line in expected:
        json.loads(line)  # still one JSON object a line


def test_the_fast_path_is_taken_for_the_json_form_only() -> None:
    configure_run_logging("json", "info", io.StringIO())
    assert run_log._configured is not None and run_log._configured.json_encode is not None
    configure_run_logging("human", "info", io.StringIO())
    assert run_log._configured is not None and run_log._configured.json_encode is None


members = st.lists(
    st.builds(Member, hostile_text, st.integers(-62_135_596_800_000, 253_402_300_799_999)),
    max_size=4,
)
deliveries = st.builds(
    Delivered,
    hostile_text,
    hostile_text,
    st.just("x"),
    members.map(tuple),
    st.none() | st.integers(-62_135_596_800_000, 253_402_300_799_999),
)


class _Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def now_ms(self) -> int:
        return self.now


class _Service:
    def __init__(self, now: int) -> None:
        self.clock = _Clock(now)


@given(st.lists(deliveries, max_size=5), st.none() | st.integers(0, 253_402_300_799_999), instants)
def test_delivery_lines_rendered_directly_are_the_processors_lines(
    messages: list[Delivered], now: int | None, ns: int
) -> None:
    out = io.StringIO()
    configure_run_logging("json", "info", out)
    lines = DeliveryLines()
    lines._service = None if now is None else _Service(now)  # type: ignore[assignment]
    saved = run_log._now_ns
    run_log._now_ns = lambda: ns
    try:
        lines.sent_many(messages)
    finally:
        run_log._now_ns = saved
    fields = [
        sent_fields(m.session_id, m.message_id, m.members, m.lateness_ms(), delivered_at=now)
        for m in messages
    ]
    expected = _processors_lines("delivery.sent", fields, ns)
    assert out.getvalue() == ("\n".join(expected) + "\n" if messages else "")
    assert lines.delivered == len(messages)


def test_delivery_lines_below_the_level_write_nothing() -> None:
    out = io.StringIO()
    configure_run_logging("json", "warning", out)
    lines = DeliveryLines()
    lines.sent_many([Delivered("s", "m", "x", (Member("a", 0),), 5)])
    assert out.getvalue() == "" and lines.delivered == 1
