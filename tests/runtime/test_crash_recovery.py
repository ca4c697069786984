"""docs/concepts.md#delivery-guarantees: a process killed between ``followup()`` and the dispatch
append, then restarted, records the dispatch without sending the reminder again."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from structlog.testing import capture_logs

from tests.runtime.helpers import log_lines, run_session_batch, schedule_ops

CRASHING_OWNER = textwrap.dedent(
    """
    import os, sys
    from schedlog.runtime.clock import VirtualClock
    from schedlog.runtime.delivery import drive_pass
    from schedlog.runtime.session_file import FileSession
    from schedlog.runtime.tools import SessionTools
    from schedlog.cli.common import parse_request_instant

    class CrashBeforeDispatch(FileSession):
        def append(self, event):
            data = event["data"]
            if event["type"] == "schedule/change" and data["operation"] == "dispatch":
                os._exit(17)  # the process dies: no dispatch, no cleanup, no flush
            super().append(event)

    session = CrashBeforeDispatch(sys.argv[1], session_id="s-1")
    clock = VirtualClock(parse_request_instant("2026-05-01T08:50:00Z"))
    tools = SessionTools(session, clock)
    print(tools.schedule_create({"prompt": "Stand up", "after_seconds": 600}))
    clock.set(parse_request_instant("2026-05-01T09:00:00Z"))
    drive_pass(session, session, clock)
    sys.exit(0)
    """
)


def test_crash_between_followup_and_dispatch_then_restart(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    root = Path(__file__).resolve().parents[2]
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_OWNER, str(path)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert crashed.returncode == 17, crashed.stderr
    assert schedule_ops(path) == ["create:schedule-1", "followup:schedule-1"]

    with capture_logs() as logs:
        out = run_session_batch(
            path,
            [
                '{"op":"tick","now":"2026-05-01T09:00:05Z"}',
                '{"op":"schedule_list","now":"2026-05-01T09:00:05Z","args":{}}',
                '{"op":"tick","now":"2026-05-01T10:00:00Z"}',
            ],
        )
    assert out == ['{"ok":{"delivered":[]}}', '{"ok":[]}', '{"ok":{"delivered":[]}}']
    assert schedule_ops(path) == [
        "create:schedule-1",
        "followup:schedule-1",
        "dispatch:schedule-1",
    ]
    followups = [v for v in log_lines(path) if v["type"] == "message/followup"]
    assert len(followups) == 1
    recovered = [e for e in logs if e["event"] == "delivery.recovered"]
    assert recovered == [
        {
            "event": "delivery.recovered",
            "log_level": "info",
            "id": "schedule-1",
            "occurrenceAt": "2026-05-01T09:00:00.000Z",
            "messageId": "schedule-message-ae6f1bdc587b5d6fbd519bc46f309cba",
            "message": "schedule: reminder schedule-1 at 2026-05-01T09:00:00.000Z already "
            "delivered as schedule-message-ae6f1bdc587b5d6fbd519bc46f309cba",
        }
    ]
