"""Embed the host service: one task store for every session, one timer for the host.

Runs on a virtual clock with a temporary SQLite store and sessions directory, so the output is
the same every time (task ids are random; the example prints only their shape). A real host
passes ``SystemClock()`` and keeps the service for its lifetime.
"""

import asyncio
import sys
import tempfile
from pathlib import Path

from schedlog import HostService, HostTools, SessionsDirectory, open_store
from schedlog.rules.instants import parse_canonical_instant
from schedlog.runtime import VirtualClock


async def main() -> None:
    start = parse_canonical_instant("2026-05-01T06:00:00.000Z")
    assert start is not None
    clock = VirtualClock(start)
    with tempfile.TemporaryDirectory() as tmp:
        sessions = SessionsDirectory(Path(tmp) / "sessions")  # session S -> sessions/S.jsonl
        service = HostService(open_store(Path(tmp) / "store.db"), sessions, clock)
        tools = HostTools(service)  # the four tools, bound to a session per call
        args = {
            "prompt": "Post the standup notes",
            "title": "Standup",
            "daily": {"time": "09:30:00", "time_zone": "Europe/Berlin"},
        }
        view = await tools.call("schedule_create", "chat-7", args)
        print(view["kind"], view["scheduledAt"], view["state"])
        await clock.run_until(start + 2 * 3_600_000)  # two virtual hours: 07:30Z passes
        for entry in service.catalog():
            print(entry["title"], entry["status"], entry["scheduledAt"])
        log = (Path(tmp) / "sessions" / "chat-7.jsonl").read_text("utf-8").splitlines()
        print(log[-1][:60] + "...")
        await service.aclose()
        sessions.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
