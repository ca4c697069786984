"""The real ``schedlog session batch`` process: stdout carries only results, stderr only JSON
diagnostics, and bad options exit 2 without reading stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def schedlog(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "schedlog.cli.main", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_session_batch_process(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    path.write_text(
        '{"type":"session/header","version":1,"sessionId":"s-1","seedLength":0,'
        '"parentSessionId":null}\n{"type":"message/user"'
    )
    done = schedlog(
        "session",
        "batch",
        "--log",
        str(path),
        stdin='{"op":"schedule_create","now":"2026-05-01T08:50:00.000Z",'
        '"args":{"prompt":"  Stand up  ","after_seconds":600}}\n',
    )
    assert done.returncode == 0
    assert done.stdout == (
        '{"ok":{"id":"schedule-1","kind":"after","prompt":"Stand up","afterSeconds":600,'
        '"scheduledAt":"2026-05-01T09:00:00.000Z","state":"scheduled",'
        '"deliveryMode":"session-local"}}\n'
    )
    diagnostics = [json.loads(line) for line in done.stderr.splitlines()]
    assert [d["event"] for d in diagnostics] == ["session_log.torn_tail_truncated"]
    assert diagnostics[0]["level"] == "warning"


def test_missing_log_option_is_a_usage_error() -> None:
    done = schedlog("session", "batch", stdin='{"op":"tick","now":"2026-05-01T00:00:00Z"}\n')
    assert done.returncode == 2
    assert done.stdout == ""
