"""A crash between a pause and its acknowledgement (docs/protocol.md#pause): ``host batch`` is
killed by a crash point (schedlog/_crashpoints.py) inside the pause's write or right after it;
the restarted host finds the task paused or active, never delivered twice, and the store
valid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from schedlog.eventlog.reader import read_log

NOW = "2026-05-01T06:00:00Z"
LATER = "2026-05-01T08:00:00Z"


def batch(store: Path, sessions: Path, lines: list[dict[str, Any]], crash: str = "") -> Any:
    env = {k: v for k, v in os.environ.items() if k != "SCHEDLOG_CRASHPOINT"}
    if crash:
        env["SCHEDLOG_CRASHPOINT"] = crash
    text = "".join(json.dumps(line) + "\n" for line in lines)
    argv = [sys.executable, "-m", "schedlog.cli.main", "host", "batch"]
    argv += ["--store", str(store), "--sessions", str(sessions)]
    return subprocess.run(argv, input=text, capture_output=True, text=True, env=env, timeout=120)


def deliveries(sessions: Path) -> list[tuple[str, str]]:
    out = []
    for log in sorted(sessions.glob("*.jsonl")):
        for event in read_log(log).events:
            if event.type == "message/followup":
                out.extend((r["id"], r["occurrenceAt"]) for r in event.data["reminders"])
    return out


@pytest.mark.parametrize("crash", ["host.after_pause_write", "sqlite_store.in_transaction"])
def test_a_crash_around_a_pause_leaves_it_paused_or_active_never_delivered_twice(
    tmp_path: Path, crash: str
) -> None:
    store, sessions = tmp_path / "schedule.db", tmp_path / "sessions"
    sessions.mkdir()
    create = {
        "op": "schedule_create",
        "session": "s-1",
        "now": NOW,
        "args": {"prompt": "<b>p</b>", "title": "T", "every_seconds": 600},
    }
    made = batch(store, sessions, [create])
    assert made.returncode == 0, made.stderr
    task_id = json.loads(made.stdout)["ok"]["id"]
    pause = {"op": "schedule_pause", "session": "s-1", "now": NOW, "args": {"id": task_id}}
    killed = batch(store, sessions, [pause], crash)
    assert killed.returncode == -9, (killed.returncode, killed.stderr)
    assert killed.stdout == ""  # never acknowledged
    validated = subprocess.run(
        [sys.executable, "-m", "schedlog.cli.main", "validate", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
    ticks = [{"op": "tick", "now": LATER}, {"op": "tick", "now": LATER}]
    listed = {"op": "catalog", "now": LATER, "args": {}}
    after = batch(store, sessions, [*ticks, listed])
    assert after.returncode == 0, after.stderr
    (status,) = [e["status"] for e in json.loads(after.stdout.splitlines()[-1])["ok"]]
    got = deliveries(sessions)
    if crash.startswith("host."):  # committed before the crash: paused, nothing delivered
        assert (status, got) == ("paused", [])
    else:  # rolled back: still active, the latest missed occurrence delivered once
        assert status == "active" and len(got) == len(set(got)) == 1
