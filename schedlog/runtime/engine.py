"""A live session with the engine installed: tools, live owner and archive admission behind
one serial queue (docs/protocol.md#session-tools, docs/protocol.md#session-archive).

Example (an agent runtime embedding the engine)::

    session = FileSession("chat-7.jsonl")          # or your own SessionLog + Agent objects
    async with SessionEngine(session, session, SystemClock()) as engine:  # start() ... dispose()
        view = await engine.call("schedule_create", {"prompt": "Stand up", "after_seconds": 600})
        ...

A tool call before :meth:`SessionEngine.start` or after :meth:`SessionEngine.dispose` writes
nothing and answers the ``engine_not_running`` error value (docs/errors.md#engine_not_running).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from schedlog.clock import Clock
from schedlog.runtime.interfaces import Agent, SessionLog
from schedlog.runtime.owner import LiveOwner
from schedlog.runtime.queue import SerialQueue
from schedlog.runtime.tools import SessionTools, ToolValue, precheck_create, precheck_delete
from schedlog.tool_args import arguments_value, not_running_value

__all__ = ["TOOL_NAMES", "SessionEngine"]

#: The session-local tools, in catalog order (``schedlog tools catalog --protocol
#: session-local``).
TOOL_NAMES: Final = ("schedule_create", "schedule_list", "schedule_delete")


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

    async def __aenter__(self) -> SessionEngine:
        """``start()``; the engine is disposed when the block exits."""
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.dispose()

    @property
    def running(self) -> bool:
        """Started and not disposed (a faulted owner delivers nothing, but tools still run)."""
        return self.owner.state in ("running", "faulted")

    async def call(self, name: str, args: object = None) -> ToolValue:
        """Run session-local tool ``name`` (one of :data:`TOOL_NAMES`) with ``args``, as the
        model called it; the tool value comes back, errors included. Raises :class:`KeyError`
        for any other name, as :meth:`schedlog.host.tools.HostTools.call` does."""
        if name not in TOOL_NAMES:
            raise KeyError(name)
        tool: Callable[[object], Awaitable[ToolValue]] = getattr(self, name)
        return await tool(args)

    def _refused(self, name: str, args: object) -> dict[str, str] | None:
        if not self.running:
            return not_running_value()
        return arguments_value(name, args)

    async def schedule_create(
        self, args: object, *, cancelled: Callable[[], bool] | None = None
    ) -> ToolValue:
        shape = self._refused("schedule_create", args) or precheck_create(args)
        if shape is not None:
            return shape
        async with self.queue:
            return self._or_refused() or self.tools.schedule_create(args, cancelled=cancelled)

    async def schedule_list(self, args: object = None) -> ToolValue:
        refused = self._refused("schedule_list", args)
        if refused is not None:
            return refused
        async with self.queue:
            return self._or_refused() or self.tools.schedule_list(args)

    async def schedule_delete(self, args: object) -> ToolValue:
        shape = self._refused("schedule_delete", args) or precheck_delete(args)
        if shape is not None:
            return shape
        async with self.queue:
            return self._or_refused() or self.tools.schedule_delete(args)

    def _or_refused(self) -> dict[str, str] | None:
        # Checked again in the queue: a dispose that began while the call waited wins.
        return None if self.running else not_running_value()

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
