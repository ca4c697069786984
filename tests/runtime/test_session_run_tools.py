"""``schedlog session run --tools``: tool requests on stdin go through the live engine's serial
queue while the owner delivers, so trying the engine by hand needs no second writer."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from schedlog.cli.session_cmd import run_live_session
from schedlog.runtime.clock import VirtualClock
from tests.runtime.helpers import ms, schedule_ops


def test_tools_and_deliveries_interleave_on_the_virtual_clock(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    out = io.StringIO()
    clock = VirtualClock(ms("2026-05-01T08:50:00Z"))
    served = asyncio.Event()

    async def requests() -> AsyncIterator[str]:
        yield '{"op":"schedule_create","args":{"prompt":"  Stand up  ","after_seconds":600}}\n'
        yield '{"op":"schedule_list","args":{}}\n'
        yield '{"op":"pause","args":{}}\n'
        yield "not json\n"
        yield '{"op":"schedule_delete","args":{"id":"schedule-9"}}\n'
        served.set()

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(
            run_live_session(str(path), clock=clock, stop=stop, out=out, requests=requests())
        )
        await served.wait()
        await clock.run_until(ms("2026-05-01T09:05:00Z"))
        stop.set()
        await task

    asyncio.run(main())
    answers = [json.loads(line) for line in out.getvalue().split("\n")[:-1]]
    assert answers[0] == {
        "ok": {
            "id": "schedule-1",
            "kind": "after",
            "prompt": "Stand up",
            "afterSeconds": 600,
            "scheduledAt": "2026-05-01T09:00:00.000Z",
            "state": "scheduled",
            "deliveryMode": "session-local",
        }
    }
    assert [a["id"] for a in answers[1]["ok"]] == ["schedule-1"]
    assert answers[2]["error"]["code"] == "invalid_request"
    assert answers[3]["error"]["code"] == "invalid_request"
    assert answers[4] == {
        "ok": {"id": "schedule-9", "deleted": False, "code": "schedule_not_found"}
    }
    assert answers[5]["reminders"] == [
        {"id": "schedule-1", "occurrenceAt": "2026-05-01T09:00:00.000Z"}
    ]
    assert len(answers) == 6
    assert schedule_ops(path) == ["create:schedule-1", "followup:schedule-1", "dispatch:schedule-1"]


def test_real_clock_runner_answers_stdin_tools_then_stops_on_sigint(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "schedlog.cli.main",
            "session",
            "run",
            "--log",
            str(path),
            "--tools",
        ],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write('{"op":"schedule_list","args":{}}\n')
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline()) == {"ok": []}
    proc.stdin.close()  # end of input does not stop the runner; the signal does
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
