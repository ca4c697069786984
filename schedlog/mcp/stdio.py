"""``schedlog mcp``: one MCP server process per conversation, over stdio (docs/agents.md#stdio).

* :func:`serve_host` serves the host tools of one session of a store, on the real clock; the
  service delivers due reminders into the sessions directory while it runs, as ``host run``
  does.
* :func:`serve_log` serves the session-local tools of one session log; its live owner delivers
  due reminders into that log while it runs, as ``session run`` does.

stdout carries only the protocol; diagnostics go to stderr.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcp.server.stdio import stdio_server

from schedlog.clock import Clock
from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.open import Backend, open_store
from schedlog.mcp.backends import HostBackend, SessionBackend
from schedlog.mcp.server import ReminderServer
from schedlog.runtime.engine import SessionEngine
from schedlog.runtime.interfaces import FollowupMessage
from schedlog.runtime.session_file import FileSession, default_session_id

__all__ = ["run_stdio", "serve_host", "serve_log"]

#: Serves a server until its client goes away: stdio by default, another transport in tests.
Transport = Callable[[ReminderServer], Awaitable[None]]


async def run_stdio(server: ReminderServer) -> None:
    """Serve ``server`` on this process's stdin and stdout until the client closes stdin."""
    async with stdio_server() as (read, write):
        await server.server.run(read, write, server.server.create_initialization_options())


async def serve_host(
    store_path: str,
    backend: Backend | None,
    sessions_dir: str,
    session_id: str,
    *,
    clock: Clock,
    keep: Retention | None = None,
    transport: Transport = run_stdio,
) -> None:
    """The host tools of ``session_id``; raises :class:`~schedlog.errors.StoreOpenError` when
    the store does not open."""
    store = open_store(store_path, backend)
    sessions = SessionsDirectory(sessions_dir)
    try:
        async with HostService(store, sessions, clock, keep or Retention()) as service:
            server = ReminderServer(HostBackend(service), lambda _ctx: session_id)
            try:
                await transport(server)
            finally:
                server.close()
    finally:
        sessions.close()


async def serve_log(
    path: str,
    *,
    clock: Clock,
    session_id: str | None = None,
    transport: Transport = run_stdio,
) -> None:
    """The session-local tools of the log at ``path`` (created on first write with header
    ``session_id``, default the file name without ``.jsonl``)."""
    hooks: list[Callable[[FollowupMessage], None]] = []

    def delivered(message: FollowupMessage) -> None:
        for hook in hooks:
            hook(message)

    session = FileSession(path, session_id=session_id, on_followup=delivered)
    try:
        async with SessionEngine(session, session, clock) as engine:
            mcp_backend = SessionBackend(engine, _log_session_id(session, session_id, path))
            hooks.append(mcp_backend.delivered)
            server = ReminderServer(mcp_backend, lambda _ctx: mcp_backend.session_id)
            try:
                await transport(server)
            finally:
                server.close()
    finally:
        session.close()


def _log_session_id(session: FileSession, given: str | None, path: str) -> str:
    """The log's own session id when it has a readable header, else the one a new log gets."""
    try:
        return session.header.session_id
    except (OSError, ValueError):  # unreadable or corrupt: its tool values say so
        return given or default_session_id(path)
