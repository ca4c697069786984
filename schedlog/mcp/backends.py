"""What the MCP server serves: the tools of one protocol, each session's reminders, and a
signal when they change (docs/agents.md).

:class:`HostBackend` is the host tools of a running :class:`~schedlog.host.service.HostService`
(any session: the transport says which), changes from the service's change feed, so changes
made through another host sharing the store arrive too (PostgreSQL ``LISTEN``).
:class:`SessionBackend` is the session-local tools of one live
:class:`~schedlog.runtime.engine.SessionEngine`; it reports its own successful creates and
deletes, and :meth:`SessionBackend.delivered` is called for each delivery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from schedlog.host.changes import TaskChange
from schedlog.host.service import HostService
from schedlog.host.tools import TOOL_NAMES as HOST_TOOL_NAMES
from schedlog.host.tools import HostTools
from schedlog.mcp.tools import is_error_value
from schedlog.runtime.engine import TOOL_NAMES as SESSION_TOOL_NAMES
from schedlog.runtime.engine import SessionEngine

__all__ = ["HostBackend", "SessionBackend", "ToolBackend", "UnknownSession"]

#: listener(session_id): the reminders of that session changed.
Listener = Callable[[str], None]


class UnknownSession(LookupError):
    """A session the backend does not serve (a session-local server serves one session)."""


class ToolBackend(Protocol):
    """The tools of one protocol, for any session the backend serves."""

    protocol: str
    tool_names: tuple[str, ...]

    async def call(self, session_id: str, name: str, args: dict[str, Any]) -> Any:
        """The tool value of ``name(args)`` in ``session_id``; KeyError for an unknown name."""
        ...

    async def reminders(self, session_id: str) -> Any:
        """The session's reminders: the ``schedule_list`` value."""
        ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(session_id)`` after each change of a session's reminders."""
        ...


class _Listeners:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def changed(self, session_id: str) -> None:
        for listener in list(self._listeners):
            listener(session_id)


class HostBackend:
    """The six host tools of ``service`` (:meth:`HostTools.call`), for every session."""

    protocol = "host"
    tool_names: tuple[str, ...] = HOST_TOOL_NAMES

    def __init__(self, service: HostService) -> None:
        self.tools = HostTools(service)
        self._service = service

    async def call(self, session_id: str, name: str, args: dict[str, Any]) -> Any:
        return await self.tools.call(name, session_id, args)

    async def reminders(self, session_id: str) -> Any:
        return await self.tools.call("schedule_list", session_id, {})

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        def on_change(change: TaskChange) -> None:
            listener(change.session_id)

        return self._service.subscribe_changes(on_change)


class SessionBackend:
    """The three session-local tools of ``engine``, whose log belongs to ``session_id``."""

    protocol = "session-local"
    tool_names: tuple[str, ...] = SESSION_TOOL_NAMES

    def __init__(self, engine: SessionEngine, session_id: str) -> None:
        self.engine = engine
        self.session_id = session_id
        self._listeners = _Listeners()

    def _check(self, session_id: str) -> None:
        if session_id != self.session_id:
            raise UnknownSession(session_id)

    async def call(self, session_id: str, name: str, args: dict[str, Any]) -> Any:
        self._check(session_id)
        value = await self.engine.call(name, args)
        if name != "schedule_list" and not is_error_value(value) and "code" not in value:
            self._listeners.changed(session_id)
        return value

    async def reminders(self, session_id: str) -> Any:
        self._check(session_id)
        return await self.engine.call("schedule_list", {})

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def delivered(self, *_: object) -> None:
        """A follow-up was delivered into the log (the ``FileSession`` ``on_followup`` hook)."""
        self._listeners.changed(self.session_id)
