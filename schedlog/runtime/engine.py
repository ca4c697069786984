"""A live session with the engine installed: tools, live owner and archive admission behind
one serial queue (docs/protocol.md#session-tools, docs/protocol.md#session-archive).

Example (an agent runtime embedding the engine)::

    session = FileSession("chat-7.jsonl")          # or your own SessionLog + Agent objects
    engine = SessionEngine(session, session, SystemClock())
    engine.start()                                  # inside the running event loop
    view = await engine.schedule_create({"prompt": "Stand up", "after_seconds": 600})
    ...
    await engine.dispose()                          # when the session closes
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schedlog.clock import Clock
from schedlog.runtime.interfaces import Agent, SessionLog
from schedlog.runtime.owner import LiveOwner
from schedlog.runtime.queue import SerialQueue
from schedlog.runtime.tools import SessionTools, ToolValue, precheck_create, precheck_delete

__all__ = ["SessionEngine"]


class SessionEngine:
    """The session-local engine of one live session.

    Tool calls return the JSON tool value of docs/protocol.md#session-tools. Shape errors are
    answered before the queue; everything else runs in the session's FIFO, as do the owner's drives
    and archive stops. A tool call whose preflight succeeded asks the owner to re-drive. Cancelling
    the calling task while it waits in the queue raises :class:`asyncio.CancelledError` and appends
    nothing; ``cancelled`` is checked again just before a create is appended.
    """

    def __init__(self, log: SessionLog, agent: Agent, clock: Clock) -> None:
        self.queue = SerialQueue()
        self.owner = LiveOwner(log, agent, clock, self.queue)
        self.tools = SessionTools(log, clock, redrive=self.owner.request_drive)

    def start(self) -> None:
        self.owner.start()

    async def dispose(self) -> None:
        await self.owner.dispose()

    async def schedule_create(
        self, args: object, *, cancelled: Callable[[], bool] | None = None
    ) -> ToolValue:
        shape = precheck_create(args)
        if shape is not None:
            return shape
        async with self.queue:
            return self.tools.schedule_create(args, cancelled=cancelled)

    async def schedule_list(self, args: object = None) -> ToolValue:
        async with self.queue:
            return self.tools.schedule_list(args)

    async def schedule_delete(self, args: object) -> ToolValue:
        shape = precheck_delete(args)
        if shape is not None:
            return shape
        async with self.queue:
            return self.tools.schedule_delete(args)

    def archive_activity(self) -> dict[str, Any] | None:
        """docs/protocol.md#session-archive activity: the active records while the owner is live,
        else None."""
        if not self.owner.live:
            return None
        return self.tools.archive_items()

    async def archive_stop(self) -> list[str]:
        """docs/protocol.md#session-archive stop, in the queue: the ids deleted. Raises
        :class:`~schedlog.runtime.tools.PersistenceUncertain` when a barrier fails."""
        async with self.queue:
            return self.tools.archive_stop()
