"""The streamable-HTTP MCP endpoint of ``schedlog host serve``: ``/mcp/sessions/{sessionId}``
(docs/agents.md#http).

The URL chooses the session, never a tool argument. The endpoint sits behind the server's own
guard (the bearer token and the Host allow-list), so the SDK's DNS-rebinding check is off. An
MCP session (``Mcp-Session-Id``) belongs to the URL it was created at: a request that presents
it at another session's URL is refused (404), so no connection reaches two sessions.

The SDK is imported when the server starts (:meth:`McpMount.serving`): without the ``mcp``
extra, ``host serve`` runs as before and this endpoint answers 501.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from schedlog.host.service import HostService

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["MCP_PATH", "McpMount"]

MCP_PATH: Final = "/mcp/sessions/{sessionId}"
#: How many Mcp-Session-Id -> session bindings are remembered (the oldest are forgotten first;
#: the SDK ends idle MCP sessions long before this many accumulate).
MAX_BINDINGS: Final = 10_000
_SESSION_HEADER: Final = b"mcp-session-id"


def _error(code: str, message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def url_session(ctx: Any) -> str:
    """The ``{sessionId}`` of the request's URL (a ``ServerRequestContext`` of this mount)."""
    request = ctx.request
    session_id = None if request is None else request.path_params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_REQUEST

        raise MCPError(INVALID_REQUEST, "the URL names no session")
    return session_id


class McpMount:
    """The ASGI app at :data:`MCP_PATH`; answers 503 until :meth:`serving` has started it."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None
        self._missing_extra = False
        self._owners: dict[str, str] = {}  # Mcp-Session-Id -> the sessionId of its URL

    @contextlib.asynccontextmanager
    async def serving(self, service: HostService) -> AsyncIterator[None]:
        """Serve the host tools of ``service`` while the block runs (the app's lifespan)."""
        try:
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            from schedlog.mcp.backends import HostBackend
            from schedlog.mcp.server import ReminderServer
        except ImportError:
            self._missing_extra = True
            yield
            return
        server = ReminderServer(HostBackend(service), url_session)
        # JSON answers to POSTs (docs/decisions.md#mcp-json-responses): no handler sends a
        # notification within a request, so an SSE stream per POST only costs a task group and
        # a memory stream; notifications go on the GET stream or a listen stream (always SSE).
        manager = StreamableHTTPSessionManager(
            app=server.server, security_settings=None, json_response=True
        )
        # The manager's task group lives in a task of its own: a lifespan may be entered and
        # left in different tasks (an ASGI test harness does), and an anyio cancel scope must
        # be left in the task that entered it.
        started, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            async with manager.run():
                self._manager = manager
                started.set()
                try:
                    await stop.wait()
                finally:
                    self._manager = None

        task = asyncio.create_task(run())
        try:
            ready = asyncio.create_task(started.wait())
            await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
            if task.done():
                task.result()  # the manager failed to start: raise why
            yield
        finally:
            stop.set()
            await asyncio.gather(task, return_exceptions=True)
            server.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            if self._missing_extra:
                answer = _error("not_implemented", "/mcp needs the mcp extra", 501)
            else:
                answer = _error("service_unavailable", "the MCP endpoint is not running", 503)
            await answer(scope, receive, send)
            return
        session_id: str = scope["path_params"]["sessionId"]
        presented = dict(scope["headers"]).get(_SESSION_HEADER)
        if presented is not None:
            owner = self._owners.get(presented.decode("latin-1"))
            if owner is not None and owner != session_id:
                message = "this MCP session was created for another session's URL"
                await _error("not_found", message, 404)(scope, receive, send)
                return
            if scope["method"] == "DELETE":
                self._owners.pop(presented.decode("latin-1"), None)

        async def bind(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", ()):
                    if name.lower() == _SESSION_HEADER:
                        self._bind(value.decode("latin-1"), session_id)
            await send(message)

        await manager.handle_request(scope, receive, bind)

    def _bind(self, mcp_session: str, session_id: str) -> None:
        if mcp_session in self._owners:
            return
        if len(self._owners) >= MAX_BINDINGS:
            del self._owners[next(iter(self._owners))]
        self._owners[mcp_session] = session_id
