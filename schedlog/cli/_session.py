"""The implementation of ``schedlog session run`` (docs/cli.md#session-run).

:mod:`schedlog.cli.session_cmd` holds only the argparse wiring and imports this module when
the command runs, so other commands never pay for asyncio and the runtime (``session batch``
is :mod:`schedlog.cli._session_batch`, which needs neither asyncio nor the live engine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TextIO

from schedlog.cli.common import InvalidRequest, decode_request, require, write_json_line
from schedlog.cli.run_log import (
    configure_run_logging,
    start_fields,
    started_message,
    stopped_message,
)
from schedlog.clock import Clock
from schedlog.diagnostics import sent_fields
from schedlog.rules.instants import parse_canonical_instant
from schedlog.runtime.batch import delivery_json
from schedlog.runtime.clock import SystemClock
from schedlog.runtime.engine import SessionEngine
from schedlog.runtime.interfaces import FollowupMessage
from schedlog.runtime.session_file import FileSession

__all__ = ["run_live_session", "run_main"]


async def run_live_session(
    path: str,
    *,
    clock: Clock,
    stop: asyncio.Event,
    session_id: str | None = None,
    out: TextIO | None = None,
    requests: AsyncIterator[str] | None = None,
) -> FileSession:
    """Run the live owner of the log at ``path`` until ``stop`` is set, printing each delivery
    as a JSON line; then dispose the owner and close the log. Returns the session.

    ``requests`` (optional) yields tool request lines; each is served through the engine, the
    same serial queue the owner uses, and answered with one ``{"ok": TOOL_VALUE}`` line (or an
    ``invalid_request`` error), so tools and deliveries never race on the log.
    """

    import structlog

    log = structlog.get_logger("schedlog.cli")
    delivered = 0

    def show(message: FollowupMessage) -> None:
        nonlocal delivered
        delivered += 1
        write_json_line(delivery_json(message), out)
        session_id = session.header.session_id
        log.info(
            "delivery.sent",
            **sent_fields(
                session_id, message.message_id, message.members, delivered_at=clock.now_ms()
            ),
        )

    session = FileSession(path, session_id=session_id, on_followup=show)
    engine = SessionEngine(session, session, clock)
    engine.start()
    await _log_start(log, session, engine)
    server = asyncio.create_task(_serve_tools(engine, requests, out)) if requests else None
    try:
        await stop.wait()
    finally:
        if server is not None:
            server.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await server
        await engine.dispose()
        session.close()
        message = stopped_message("session", delivered)
        log.info("session.stopped", message=message, delivered=delivered)
    return session


async def _log_start(log: Any, session: FileSession, engine: SessionEngine) -> None:
    """``session.started``: the log, its session id, the active reminders and the next target,
    read through the engine's queue like any ``schedule_list``."""
    views = await engine.schedule_list({})
    active = views if isinstance(views, list) else []
    targets = [parse_canonical_instant(v.get("scheduledAt")) for v in active]
    try:
        session_id: object = session.header.session_id
    except (OSError, ValueError):  # an unreadable or corrupt log: its warning says why
        session_id = None
    target = start_fields(min((t for t in targets if t is not None), default=None))
    fields: dict[str, Any] = {"log": session.path, "sessionId": session_id, "active": len(active)}
    log.info(
        "session.started",
        message=started_message("session", {**fields, **target}),
        log=session.path,
        sessionId=session_id,
        active=len(active),
        nextTarget=target["nextTarget"],
        nextTargetLocal=target["nextTargetLocal"],
    )


async def _serve_tools(
    engine: SessionEngine, requests: AsyncIterator[str], out: TextIO | None
) -> None:
    tools: dict[str, Callable[[dict[str, Any]], Awaitable[object]]] = {
        "schedule_create": engine.schedule_create,
        "schedule_list": engine.schedule_list,
        "schedule_delete": engine.schedule_delete,
    }
    async for line in requests:
        try:
            request = decode_request(line.rstrip("\n"))
            op = request.get("op")
            tool = tools.get(op) if isinstance(op, str) else None
            if tool is None:
                raise InvalidRequest(f"op must be one of {', '.join(tools)}.")
            args = require(request, "args", dict)
            answer: dict[str, Any] = {"ok": await tool(args)}
        except InvalidRequest as exc:
            answer = {"error": {"code": exc.code, "message": exc.message}}
        write_json_line(answer, out)


async def _stdin_lines() -> AsyncIterator[str]:
    """Lines of stdin, read by a daemon thread so a blocked read never holds up shutdown."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="schedlog-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        yield line


def run_main(args: argparse.Namespace) -> int:
    configure_run_logging(args.log_format, args.log_level)

    async def main() -> None:
        await run_live_session(
            args.log,
            clock=SystemClock(),
            stop=asyncio.Event(),
            session_id=args.session_id,
            requests=_stdin_lines() if args.tools else None,
        )

    # On Ctrl-C asyncio.run cancels the main task, which disposes the owner on its way out.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0
