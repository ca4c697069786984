"""The host delivers into sessions whatever their legacy schedule events hold
(docs/protocol.md#legacy-events), but never into a session log with a corrupt complete line
(docs/protocol.md#torn-tail, docs/concepts.md#delivery-guarantees)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from structlog.testing import capture_logs

from schedlog.eventlog import read_log
from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.open import open_store
from schedlog.runtime.clock import VirtualClock
from tests.eventlog.helpers import change, chatter, create_data, delete_data, header, log_bytes
from tests.host.helpers import T0

# Owned legacy events that do not fold: a delete of an id that was never created.
LEGACY_CORRUPT = log_bytes(
    header("s-1"),
    chatter(),
    change(create_data("schedule-1")),
    change(delete_data("ghost")),
)


def deliver_once(tmp_path: Path, log: bytes) -> tuple[int, list[dict[str, object]], Path]:
    """Create a due ``after`` task for session ``s-1`` whose log holds ``log``, tick once.

    Returns the number of deliveries, the captured diagnostics and the log's path.
    """
    sessions_dir = tmp_path / "sessions"
    sessions_dir.mkdir()
    path = sessions_dir / "s-1.jsonl"
    path.write_bytes(log)

    async def main() -> tuple[int, list[dict[str, object]]]:
        clock = VirtualClock(T0)
        sessions = SessionsDirectory(sessions_dir)
        service = HostService(
            open_store(tmp_path / "schedule.db"), sessions, clock, Retention(), auto_drive=False
        )
        try:
            await service.create(
                "s-1", {"prompt": "Stand up", "title": "Stand", "after_seconds": 60}
            )
            clock.set(T0 + 60_000)
            with capture_logs() as logs:
                sent = await service.tick()
            return len(sent), logs
        finally:
            await service.aclose()
            sessions.close()

    sent, logs = asyncio.run(main())
    return sent, logs, path


def test_delivery_into_a_session_whose_legacy_events_do_not_fold(tmp_path: Path) -> None:
    sent, logs, path = deliver_once(tmp_path, LEGACY_CORRUPT)
    assert sent == 1
    unreadable = [e for e in logs if e["event"] == "legacy.unreadable"]
    assert len(unreadable) == 1 and unreadable[0]["log_level"] == "warning"
    assert unreadable[0]["message"] == (
        'schedule: Session "s-1" historical events could not be read (schedule delete targets'
        ' inactive id "ghost"); the legacy reminder is ignored.'
    )
    assert not [e for e in logs if e["event"] == "delivery.unacknowledged"]
    # The follow-up was appended after the untouched legacy events.
    data = path.read_bytes()
    assert data.startswith(LEGACY_CORRUPT)
    contents = read_log(path)
    assert contents.ok
    assert [e.type for e in contents.events][-1] == "message/followup"
    assert contents.events[-1].data["reminders"][0]["occurrenceAt"] == "2026-05-01T06:01:00.000Z"


def test_no_delivery_into_a_session_log_with_a_corrupt_line(tmp_path: Path) -> None:
    corrupt = log_bytes(header("s-1"), chatter()) + b"not json\n"
    sent, logs, path = deliver_once(tmp_path, corrupt)
    assert sent == 0
    failures = [e for e in logs if e["event"] == "delivery.unacknowledged"]
    assert len(failures) == 1 and "invalid JSON" in str(failures[0]["message"])
    assert path.read_bytes() == corrupt  # never modified
