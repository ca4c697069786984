"""``schedlog session run``: the live owner prints each delivery as it happens; stopping it
disposes the owner and leaves the log consistent. Driven on the virtual clock; the real-clock
entry is checked with a subprocess interrupted by SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import io
import signal
import subprocess
import sys
from pathlib import Path

from schedlog.cli.session_cmd import run_live_session
from schedlog.runtime.clock import VirtualClock
from tests.runtime.helpers import ms, run_session_batch, schedule_ops


def test_run_prints_deliveries_as_they_happen(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    run_session_batch(
        path,
        [
            '{"op":"schedule_create","now":"2026-05-01T08:50:00Z","args":{"prompt":"Stand up",'
            '"after_seconds":600}}',
            '{"op":"schedule_create","now":"2026-05-01T08:50:00Z","args":{"prompt":"Stretch",'
            '"every_seconds":900}}',
        ],
    )
    out = io.StringIO()

    async def main() -> list[str]:
        clock = VirtualClock(ms("2026-05-01T08:55:00Z"))
        stop = asyncio.Event()
        task = asyncio.create_task(run_live_session(str(path), clock=clock, stop=stop, out=out))
        await clock.run_until(ms("2026-05-01T09:00:00Z"))
        first = out.getvalue().splitlines()
        await clock.run_until(ms("2026-05-01T09:20:00Z"))
        stop.set()
        await task
        assert clock.pending() == []
        return first

    first = asyncio.run(main())
    assert len(first) == 1 and '"schedule-1"' in first[0]
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert schedule_ops(path)[2:] == [
        "followup:schedule-1",
        "dispatch:schedule-1",
        "followup:schedule-2",
        "dispatch:schedule-2",
        "followup:schedule-2",
        "dispatch:schedule-2",
    ]


def test_ctrl_c_stops_the_real_clock_runner_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    script = (
        "import sys\n"
        "from schedlog.cli.session_cmd import _run_main, register\n"
        "import argparse\n"
        "p = argparse.ArgumentParser(); register(p.add_subparsers())\n"
        "a = p.parse_args(['session', 'run', '--log', sys.argv[1]])\n"
        "print('ready', flush=True)\n"
        "sys.exit(a.func(a))\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    # Wait (on the process, bounded) until the owner has opened and so created the log.
    for _ in range(6000):
        if path.exists() and path.stat().st_size > 0:
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.01)
        assert proc.returncode is None, proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert path.read_text().startswith('{"type":"session/header"')
