"""The SDK server over a :class:`~schedlog.mcp.backends.ToolBackend` (docs/agents.md).

One :class:`ReminderServer` serves any number of MCP connections. Which session a request acts
on is the transport's to say (``session_of``): the one session of a stdio process, or the
``{sessionId}`` of the streamable-HTTP URL; never a tool argument. Each session's reminders are
the resource ``schedlog://sessions/{id}/reminders`` (the id percent-encoded), and a connection
may subscribe only to its own session's resource, so one session's changes never reach
another's client.

A subscriber gets ``notifications/resources/updated`` for that URI after each create, update,
delete and delivery (the host protocol's ``schedule/changed``), in both eras of the protocol:
``resources/subscribe`` on a handshake-era (2025) connection, ``subscriptions/listen`` on a
2026-07-28 one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, Final
from urllib.parse import quote

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from schedlog.mcp.backends import ToolBackend, UnknownSession
from schedlog.mcp.tools import mcp_tools, tool_result
from schedlog.rules.text import js_dumps

__all__ = ["SERVER_NAME", "ReminderServer", "SessionOf", "reminders_uri"]

SERVER_NAME: Final = "schedlog"
#: ctx -> the session the request acts on; raises MCPError when the transport names none.
SessionOf = Callable[[ServerRequestContext[Any, Any]], str]

_INSTRUCTIONS: Final = (
    "Durable reminders for this conversation: schedule_create sets one, schedule_list shows "
    "them, schedule_delete removes one. A due reminder comes back into this conversation as a "
    "follow-up user message. Read or subscribe to the resource {uri} to follow changes."
)


def reminders_uri(session_id: str) -> str:
    """The resource of a session's reminders."""
    return f"schedlog://sessions/{quote(session_id, safe='')}/reminders"


class _Bus(InMemorySubscriptionBus):
    """The SDK's in-process bus, counting its subscriptions (open listen streams), so that a
    change nobody listens for spawns no publish task (a webhook burst makes 10,000 changes)."""

    def __init__(self) -> None:
        super().__init__()
        self.listening = 0

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self.listening += 1
        ended = False

        def end() -> None:
            nonlocal ended
            if not ended:
                ended = True
                self.listening -= 1
            unsubscribe()

        return end


class ReminderServer:
    """The MCP server of ``backend``'s tools; :attr:`server` is the SDK's low-level server.

    :meth:`close` stops following the backend's changes and ends open listen streams.
    """

    def __init__(self, backend: ToolBackend, session_of: SessionOf, version: str = "") -> None:
        self.backend = backend
        self._session_of = session_of
        self._tools = mcp_tools(backend.protocol)
        self._input_schemas = {tool.name: tool.input_schema for tool in self._tools}
        self._bus = _Bus()
        self._listen = ListenHandler(self._bus)
        self._legacy: dict[str, set[ServerSession]] = {}  # uri -> handshake-era subscribers
        self._pending: set[asyncio.Task[None]] = set()
        #: Resources changed and not told yet, in order (:meth:`_changed`).
        self._changed_uris: dict[str, None] = {}
        self._unsubscribe = backend.subscribe(self._changed)
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=version,
            instructions=_INSTRUCTIONS.format(uri="schedlog://sessions/{id}/reminders"),
            # The tool list is the same for every caller, so the SDK's Mcp-Param-* header check
            # looks a schema up here instead of running (and serializing) tools/list per call.
            get_tool_input_schema=self._input_schemas.get,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe_resource,
            on_subscriptions_listen=self._listen_own,
        )

    def close(self) -> None:
        self._unsubscribe()
        self._listen.close()
        self._legacy.clear()

    # --- the session of a request -----------------------------------------------------------

    def _session(self, ctx: ServerRequestContext[Any, Any]) -> str:
        return self._session_of(ctx)

    def _own_uri(self, ctx: ServerRequestContext[Any, Any], uri: str) -> str:
        """The session of ``ctx`` when ``uri`` is its reminders resource; else INVALID_PARAMS."""
        session_id = self._session(ctx)
        if uri != reminders_uri(session_id):
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown resource {uri!r}: this connection serves {reminders_uri(session_id)}",
            )
        return session_id

    # --- tools ------------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in self.backend.tool_names:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name!r}: the tools are {', '.join(self.backend.tool_names)}",
            )
        session_id = self._session(ctx)
        try:
            value = await self.backend.call(session_id, params.name, params.arguments or {})
        except UnknownSession:
            raise MCPError(types.INVALID_PARAMS, f"unknown session {session_id!r}") from None
        return tool_result(value)

    # --- the reminders resource -------------------------------------------------------------

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        session_id = self._session(ctx)
        resource = types.Resource(
            uri=reminders_uri(session_id),
            name="reminders",
            title=f"Reminders of session {session_id}",
            description="The session's active reminders: the schedule_list value (JSON).",
            mime_type="application/json",
        )
        return types.ListResourcesResult(resources=[resource])

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        value = await self.backend.reminders(self._own_uri(ctx, uri))
        contents = types.TextResourceContents(
            uri=uri, mime_type="application/json", text=js_dumps(value)
        )
        return types.ReadResourceResult(contents=[contents])

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        self._own_uri(ctx, uri)
        self._legacy.setdefault(uri, set()).add(ctx.session)
        return types.EmptyResult()

    async def _unsubscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self._legacy.get(str(params.uri), set()).discard(ctx.session)
        return types.EmptyResult()

    async def _listen_own(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        for uri in params.notifications.resource_subscriptions or ():
            self._own_uri(ctx, uri)
        return await self._listen(ctx, params)

    # --- change notifications ---------------------------------------------------------------

    def _changed(self, session_id: str) -> None:
        """The backend's change feed (on the event loop): tell the session's subscribers.

        The sessions changed are collected and told by one task, each once, in the order of
        their first change (a batched delivery reports a thousand changes at once: one task
        per change held the loop; docs/decisions.md "The API during a burst"). A change made
        while that task runs is told after it, so none is missed. While no listen stream is
        open and no session subscribed to the resource, there is nobody to tell (a webhook
        burst makes one change per reminder)."""
        uri = reminders_uri(session_id)
        if not self._bus.listening and not self._legacy.get(uri):
            return
        uris = self._changed_uris
        first = not uris
        uris.setdefault(uri, None)
        if first and not self._spawn(self._tell_changed()):
            uris.clear()  # no running loop: the service is closing, nobody to tell

    async def _tell_changed(self) -> None:
        while self._changed_uris:
            uri = next(iter(self._changed_uris))
            del self._changed_uris[uri]
            for session in list(self._legacy.get(uri, ())):
                self._spawn(self._send_updated(session, uri))
            await self._bus.publish(ResourceUpdated(uri=uri))  # ends with a checkpoint

    async def _send_updated(self, session: ServerSession, uri: str) -> None:
        try:
            await session.send_resource_updated(uri)
        except Exception:  # the connection is gone: forget it
            self._legacy.get(uri, set()).discard(session)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> bool:
        """Run ``coro`` as a task of its own; False when there is no running loop."""
        try:
            task = asyncio.get_running_loop().create_task(coro)
        except RuntimeError:  # no running loop (the service is closing): nobody to tell
            coro.close()
            return False
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return True

    async def drain(self) -> None:
        """Wait for the notifications already started (tests, shutdown)."""
        while self._pending:  # the teller of changes starts tasks of its own
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._pending)
