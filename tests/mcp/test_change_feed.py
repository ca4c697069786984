"""The MCP server's change feed (schedlog/mcp/server.py, docs/decisions.md "The API during a
burst"): the sessions changed are told by one task, each once per turn of the loop and in the
order of their first change, and a change made while that task tells is told after it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.mcp.support import require_mcp

require_mcp()

from mcp.server.subscriptions import ResourceUpdated  # noqa: E402

from schedlog.mcp.server import ReminderServer, reminders_uri  # noqa: E402


class _Backend:
    protocol = "host"
    tool_names: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.listeners: list[Callable[[str], None]] = []

    async def call(self, session_id: str, name: str, args: dict[str, Any]) -> Any:
        raise KeyError(name)

    async def reminders(self, session_id: str) -> Any:
        return {"items": []}

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def changed(self, session_id: str) -> None:
        for listener in list(self.listeners):
            listener(session_id)


def test_a_thousand_changes_are_told_once_per_session_and_none_is_missed() -> None:
    async def main() -> list[str]:
        backend = _Backend()
        server = ReminderServer(backend, lambda ctx: "s-1")
        told: list[str] = []

        def heard(event: Any) -> None:
            assert isinstance(event, ResourceUpdated)
            told.append(event.uri)
            if len(told) == 1:  # a change while the teller runs: told after it
                backend.changed('<s-1 & "1">')

        server._bus.subscribe(heard)
        sessions = ['<s-1 & "1">', "s-\u00e9", '<s-1 & "1">']
        for i in range(1000):
            backend.changed(sessions[i % 3])
        tasks_before = len(server._pending)
        await server.drain()
        server.close()
        assert tasks_before == 1  # one teller, not a task per change
        return told

    told = asyncio.run(main())
    first, second = reminders_uri('<s-1 & "1">'), reminders_uri("s-\u00e9")
    assert told == [first, second, first]
