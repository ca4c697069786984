"""``schedlog host run`` on the real clock, in a real subprocess (issue 5 acceptance).

The only host test that waits for real time: a reminder due one second after creation must
reach the session log, and SIGTERM must stop the host cleanly.
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from schedlog.cli.host_cmd import HostBatch
from schedlog.eventlog.reader import read_log
from schedlog.rules.instants import format_instant

RUNNER = (
    "import argparse, sys\n"
    "from schedlog.cli import host_cmd\n"
    "p = argparse.ArgumentParser(prog='schedlog')\n"
    "host_cmd.register(p.add_subparsers(dest='command', required=True))\n"
    "a = p.parse_args(sys.argv[1:])\n"
    "sys.exit(a.func(a))\n"
)


def test_host_run_delivers_on_the_real_clock(tmp_path: Path) -> None:
    store, sessions = str(tmp_path / "schedule.db"), str(tmp_path / "sessions")
    now = format_instant(time.time_ns() // 1_000_000)
    request = {
        "op": "schedule_create",
        "session": "s-1",
        "now": now,
        "args": {"prompt": "Stretch", "title": "Stretch", "after_seconds": 1},
    }
    hb = HostBatch(store, sessions)
    out = io.StringIO()
    hb.serve([json.dumps(request)], out)
    hb.close()
    rid = json.loads(out.getvalue())["ok"]["id"]
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, "host", "run", "--store", store, "--sessions", sessions],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    log = Path(sessions) / "s-1.jsonl"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (log.exists() and read_log(log).events):
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    (event,) = read_log(log).events
    assert event.data["reminders"][0]["id"] == rid
