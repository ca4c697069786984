"""Embed the session-local engine in an asyncio agent runtime (README example).

Runs on a virtual clock so the output is the same every time; a real runtime passes
``SystemClock()`` instead and keeps the engine for the life of the session.
"""

import asyncio
import sys
import tempfile
from pathlib import Path

from schedlog.rules.instants import parse_canonical_instant
from schedlog.runtime import FileSession, SessionEngine, VirtualClock


async def main() -> None:
    start = parse_canonical_instant("2026-05-01T08:50:00.000Z")
    assert start is not None
    clock = VirtualClock(start)
    with tempfile.TemporaryDirectory() as tmp:
        session = FileSession(Path(tmp) / "chat-7.jsonl")  # the session log + a simple agent
        engine = SessionEngine(session, session, clock)
        engine.start()
        view = await engine.schedule_create({"prompt": "  Stand up  ", "after_seconds": 600})
        print(view)
        await clock.run_until(start + 15 * 60_000)  # fifteen virtual minutes pass
        for message in session.outbox:
            print(message.text)
        await engine.dispose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
