"""What ``host run`` and ``session run`` tell their operator on stderr, in both forms: human
lines (start, one per delivery, warnings, stop) and structlog JSON.

The in-process tests run the commands' loops on a virtual clock, so they are exact; one
subprocess test per command checks the real thing on the real clock, with stderr a terminal
(a pseudo-terminal) for the human form and a pipe for JSON.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import structlog

from schedlog.cli.host_cmd import HostBatch
from schedlog.cli.run_log import (
    HumanRenderer,
    configure_run_logging,
    local_text,
    resolve_format,
    started_message,
    stopped_message,
)
from schedlog.diagnostics import sent_fields
from schedlog.eventlog.followups import Member
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.runtime.clock import VirtualClock

T0 = "2026-05-04T07:00:00.000Z"
CLOCK = r"\d\d:\d\d:\d\d "


def _ms(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None
    return value


@pytest.fixture(autouse=True)
def _restore_structlog() -> Any:
    yield
    structlog.reset_defaults()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# --- the renderer ------------------------------------------------------------------------


def test_format_follows_the_terminal_unless_chosen() -> None:
    assert resolve_format(None, _Tty()) == "human"
    assert resolve_format(None, io.StringIO()) == "json"
    assert resolve_format("json", _Tty()) == "json"
    assert resolve_format("human", io.StringIO()) == "human"


def test_start_lines() -> None:
    host = {
        "store": "store.db",
        "backend": "sqlite",
        "sessions": "sessions/",
        "active": 1,
        "nextTarget": "2026-05-04T07:30:00.000Z",
        "nextTargetLocal": "2026-05-04 09:30:00 +02:00",
    }
    assert started_message("host", host) == (
        "schedule: host run started: store store.db (sqlite), sessions sessions/, 1 active task, "
        "next target 2026-05-04T07:30:00.000Z (2026-05-04 09:30:00 +02:00 local)"
    )
    empty = {"store": "s.json", "backend": "json", "sessions": "d", "active": 0}
    assert started_message("host", {**empty, "nextTarget": None}) == (
        "schedule: host run started: store s.json (json), sessions d, 0 active tasks, no target"
    )
    session = {"log": "chat.jsonl", "sessionId": "chat", "active": 2, "nextTarget": "I"}
    assert started_message("session", session) == (
        "schedule: session run started: log chat.jsonl, session chat, 2 active reminders, "
        "next target I"
    )


def test_delivery_and_stop_lines() -> None:
    fields = sent_fields("s-1", "schedule-message-1", [Member("a", 0), Member("b", 60_000)])
    assert fields == {
        "message": "schedule: delivered to s-1: a at 1970-01-01T00:00:00.000Z, "
        "b at 1970-01-01T00:01:00.000Z as schedule-message-1",
        "sessionId": "s-1",
        "messageId": "schedule-message-1",
        "reminders": [
            {"id": "a", "occurrenceAt": "1970-01-01T00:00:00.000Z"},
            {"id": "b", "occurrenceAt": "1970-01-01T00:01:00.000Z"},
        ],
        "latenessMs": None,
    }
    late = sent_fields("s-1", "m", [Member("a", 0), Member("b", 60_000)], delivered_at=61_500)
    assert late["latenessMs"] == 61_500  # after the earliest member's occurrence: the longest wait
    assert late["message"].endswith(" as m (61500 ms late)")
    early = sent_fields("s-1", "m", [Member("a", 5_000)], delivered_at=4_000)
    assert early["latenessMs"] == 0
    given = sent_fields("s-1", "m", [Member("a", 0)], 7, delivered_at=99_999)
    assert given["latenessMs"] == 7  # a lateness the delivery measured wins
    assert stopped_message("host", 1) == "schedule: host run stopped: 1 delivery"
    assert stopped_message("session", 3) == "schedule: session run stopped: 3 deliveries"


@pytest.mark.parametrize(
    ("level", "fields", "expected"),
    [
        (
            "info",
            {"message": "schedule: host run stopped: 1 delivery"},
            "host run stopped: 1 delivery",
        ),
        (
            "warning",
            {"message": "schedule: reminders [a] were not acknowledged: disk full"},
            "warning: reminders [a] were not acknowledged: disk full",
        ),
        (
            "error",
            {"text": "schedule: live owner faulted: x"},
            "error: live owner faulted: x",
        ),
        ("info", {"x": 1, "timestamp": "T"}, "odd.event x=1"),
    ],
    ids=["info", "warning", "error-text", "no-message"],
)
def test_human_renderer(level: str, fields: dict[str, Any], expected: str) -> None:
    line = HumanRenderer()(None, level, {"event": "odd.event", "level": level, **fields})
    assert re.fullmatch(CLOCK + re.escape(expected), line), line


def test_log_level_drops_quieter_events() -> None:
    out = io.StringIO()
    configure_run_logging("json", "warning", out)
    log = structlog.get_logger("t")
    log.info("quiet.event", message="no")
    log.warning("loud.event", message="yes")
    (line,) = out.getvalue().splitlines()
    event = json.loads(line)
    assert event["event"] == "loud.event" and event["level"] == "warning"
    assert event["timestamp"].endswith("Z")


def test_local_text_has_an_offset() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d", local_text(_ms(T0)))


# --- host run on a virtual clock -----------------------------------------------------------


def _host_store(tmp_path: Path) -> tuple[str, str, str]:
    store, sessions = str(tmp_path / "store.db"), str(tmp_path / "sessions")
    request = {
        "op": "schedule_create",
        "session": "s-1",
        "now": T0,
        "args": {"prompt": "Stretch", "title": "Break", "after_seconds": 600},
    }
    batch = HostBatch(store, sessions)
    out = io.StringIO()
    batch.serve([json.dumps(request)], out)
    batch.close()
    return store, sessions, json.loads(out.getvalue())["ok"]["id"]


def _run_host_virtual(tmp_path: Path, form: str) -> tuple[list[str], str]:
    from schedlog.cli._host import run_host

    store, sessions, task_id = _host_store(tmp_path)
    err = io.StringIO()
    configure_run_logging(form, "info", err)

    async def scenario() -> int:
        clock = VirtualClock(_ms(T0))
        stop = asyncio.Event()
        runner = asyncio.create_task(
            run_host(store, None, sessions, clock=clock, stop=stop, err=err)
        )
        await clock.run_until(_ms(T0) + 20 * 60_000)  # the reminder falls due at +10 min
        stop.set()
        return await runner

    assert asyncio.run(scenario()) == 0
    return err.getvalue().splitlines(), task_id


def test_host_run_human_lines(tmp_path: Path) -> None:
    lines, task_id = _run_host_virtual(tmp_path, "human")
    assert len(lines) == 3, lines
    start, delivered, stopped = lines
    assert re.fullmatch(
        CLOCK + r"host run started: store .*store\.db \(sqlite\), sessions .*sessions, "
        r"1 active task, next target 2026-05-04T07:10:00\.000Z "
        r"\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d local\)",
        start,
    ), start
    assert re.fullmatch(
        CLOCK + rf"delivered to s-1: {task_id} at 2026-05-04T07:10:00\.000Z as "
        r"schedule-message-[0-9a-f]{32} \(0 ms late\)",  # the virtual clock: on time
        delivered,
    ), delivered
    assert re.fullmatch(CLOCK + "host run stopped: 1 delivery", stopped), stopped


def test_host_run_json_lines(tmp_path: Path) -> None:
    lines, task_id = _run_host_virtual(tmp_path, "json")
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events] == ["host.started", "delivery.sent", "host.stopped"]
    start, sent, stopped = events
    assert start["backend"] == "sqlite" and start["active"] == 1
    assert start["nextTarget"] == "2026-05-04T07:10:00.000Z"
    assert sent["sessionId"] == "s-1"
    assert sent["latenessMs"] == 0  # the virtual clock delivers exactly on target
    assert sent["reminders"] == [{"id": task_id, "occurrenceAt": "2026-05-04T07:10:00.000Z"}]
    assert re.fullmatch(r"schedule-message-[0-9a-f]{32}", sent["messageId"])
    assert stopped["delivered"] == 1
    assert all(e["level"] == "info" and e["timestamp"].endswith("Z") for e in events)


# --- session run on a virtual clock --------------------------------------------------------


def _run_session_virtual(tmp_path: Path, form: str) -> tuple[list[str], list[str]]:
    from schedlog.cli._session import run_live_session

    path = str(tmp_path / "chat.jsonl")
    err, out = io.StringIO(), io.StringIO()
    configure_run_logging(form, "info", err)

    async def scenario() -> None:
        clock = VirtualClock(_ms(T0))
        stop = asyncio.Event()

        async def requests() -> Any:
            yield json.dumps(
                {"op": "schedule_create", "args": {"prompt": "Stand up", "after_seconds": 600}}
            )

        runner = asyncio.create_task(
            run_live_session(path, clock=clock, stop=stop, out=out, requests=requests())
        )
        await clock.run_until(_ms(T0) + 20 * 60_000)
        stop.set()
        await runner

    asyncio.run(scenario())
    return err.getvalue().splitlines(), out.getvalue().splitlines()


def test_session_run_human_lines(tmp_path: Path) -> None:
    lines, out = _run_session_virtual(tmp_path, "human")
    assert len(lines) == 3, lines
    assert re.fullmatch(
        CLOCK + r"session run started: log .*chat\.jsonl, session chat, 0 active reminders, "
        "no target",
        lines[0],
    ), lines[0]
    assert re.fullmatch(
        CLOCK + r"delivered to chat: schedule-1 at 2026-05-04T07:10:00\.000Z as "
        r"schedule-message-[0-9a-f]{32} \(0 ms late\)",
        lines[1],
    ), lines[1]
    assert re.fullmatch(CLOCK + "session run stopped: 1 delivery", lines[2]), lines[2]
    assert len(out) == 2  # stdout keeps its machine output: the tool answer, the delivery


def test_session_run_json_lines(tmp_path: Path) -> None:
    lines, _ = _run_session_virtual(tmp_path, "json")
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events] == ["session.started", "delivery.sent", "session.stopped"]
    assert events[0]["sessionId"] == "chat" and events[0]["active"] == 0
    assert events[1]["reminders"] == [
        {"id": "schedule-1", "occurrenceAt": "2026-05-04T07:10:00.000Z"}
    ]
    assert events[2]["delivered"] == 1


# --- the real thing: a subprocess on the real clock -----------------------------------------

#: How long after its target a delivery line may appear (the acceptance criterion).
REACTION_MS = 1000


def _read_until(fd: int, pattern: str, deadline: float) -> str:
    seen = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the pty closed
            break
        if not chunk:
            break
        seen += chunk
        if re.search(pattern, seen.decode("utf-8", "replace")):
            break
    return seen.decode("utf-8", "replace")


@pytest.mark.parametrize("form", ["human", "json"])
def test_host_run_on_the_real_clock(tmp_path: Path, form: str) -> None:
    store, sessions = str(tmp_path / "store.db"), str(tmp_path / "sessions")
    target = time.time_ns() // 1_000_000 + 5000
    request = {
        "op": "schedule_create",
        "session": "s-1",
        "now": format_instant(target - 5000),
        "args": {"prompt": "Stretch", "title": "Break", "after_seconds": 5},
    }
    batch = HostBatch(store, sessions)
    out = io.StringIO()
    batch.serve([json.dumps(request)], out)
    batch.close()
    # No --log-format: a terminal (a pseudo-terminal) gets the human form, a pipe JSON.
    reader, writer = pty.openpty() if form == "human" else os.pipe()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "schedlog.cli.main",
            "host",
            "run",
            "--store",
            store,
            "--sessions",
            sessions,
        ],
        stdout=subprocess.PIPE,
        stderr=writer,
    )
    os.close(writer)
    try:
        seen = _read_until(reader, r"delivered to s-1|delivery\.sent", time.monotonic() + 30)
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=30)
        rest = _read_until(reader, r"stopped", time.monotonic() + 10)
        os.close(reader)
    assert proc.returncode == 0
    assert stdout == b""
    lines = (seen + rest).replace("\r\n", "\n").splitlines()
    # The criterion is the reaction of a running host: a target that passed while the process
    # was still starting (a loaded machine) counts from the start line instead.
    if form == "human":
        assert re.fullmatch(CLOCK + "host run started: .*1 active task, next target .*", lines[0])
        assert re.fullmatch(CLOCK + "delivered to s-1: .* as schedule-message-.*", lines[1])
        assert re.fullmatch(CLOCK + "host run stopped: 1 delivery", lines[2])
        started_s, sent_s = (_seconds_of_day(line[:8]) for line in lines[:2])
        due_s = _seconds_of_day(time.strftime("%H:%M:%S", time.localtime(target / 1000)))
        # HH:MM:SS only: a reaction under a second shows as at most one second.
        assert (sent_s - max(due_s, started_s)) % 86_400 <= 1, (lines, due_s)
    else:
        events = [json.loads(line) for line in lines]
        assert [e["event"] for e in events] == ["host.started", "delivery.sent", "host.stopped"]
        started, sent = (_ms(e["timestamp"][:23] + "Z") for e in events[:2])
        assert sent - max(target, started) < REACTION_MS, (events, format_instant(target))


def _seconds_of_day(clock: str) -> int:
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return (hours * 60 + minutes) * 60 + seconds
