"""``schedlog session``: the session-local engine on the command line (SPEC §15.3, §15.5).

``session batch`` serves JSON requests on virtual time; ``session run`` runs the live owner on
the real clock and prints each delivery as it happens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import Any, Final, TextIO

import structlog

from schedlog.cli.common import parse_request_instant, require, run_batch, write_json_line
from schedlog.host import catalog as host_catalog
from schedlog.runtime import catalog as session_catalog
from schedlog.runtime.batch import BatchSession, delivery_json
from schedlog.runtime.clock import SystemClock
from schedlog.runtime.engine import SessionEngine
from schedlog.runtime.interfaces import Clock, FollowupMessage
from schedlog.runtime.session_file import FileSession

__all__ = [
    "configure_diagnostics",
    "register",
    "register_tools",
    "run_live_session",
    "session_batch_handlers",
]


def configure_diagnostics(stream: TextIO | None = None) -> None:
    """Render structlog diagnostics as JSON lines on stderr, never on stdout (SPEC §15.1, §17)."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.PrintLoggerFactory(stream if stream is not None else sys.stderr),
        cache_logger_on_first_use=False,
    )


def register(subparsers: Any) -> None:
    """Add ``session batch`` and ``session run`` to the ``schedlog`` command."""
    session = subparsers.add_parser(
        "session", help="run the session-local engine on one session log"
    )
    commands = session.add_subparsers(dest="session_command", required=True, metavar="COMMAND")
    batch = commands.add_parser(
        "batch",
        help="answer JSON requests on stdin at virtual time (SPEC §15.3)",
        description=(
            "Run the session-local protocol on one JSON Lines session log: one JSON request per "
            "stdin line, one JSON result per line on stdout."
        ),
    )
    batch.add_argument("--log", required=True, metavar="PATH", help="the session log")
    batch.add_argument(
        "--session-id",
        metavar="S",
        help="sessionId of a new log (default: the file name without .jsonl)",
    )
    batch.set_defaults(func=_batch_main)
    run = commands.add_parser(
        "run",
        help="run the live owner on the real clock and print each delivery (Ctrl-C stops)",
        description=(
            "Run the live owner of one session log on the real clock, with an always-idle "
            "agent. Each delivery is printed as one JSON line {messageId, text, reminders}."
        ),
    )
    run.add_argument("--log", required=True, metavar="PATH", help="the session log")
    run.add_argument(
        "--session-id",
        metavar="S",
        help="sessionId of a new log (default: the file name without .jsonl)",
    )
    run.set_defaults(func=_run_main)


#: protocol -> its catalog as a JSON value and as Markdown
_CATALOGS: Final[dict[str, tuple[Callable[[], dict[str, Any]], Callable[[], str]]]] = {
    "session-local": (session_catalog.catalog, session_catalog.catalog_markdown),
    "host": (host_catalog.catalog, host_catalog.catalog_markdown),
}


def register_tools(subparsers: Any) -> None:
    """Add ``tools catalog --protocol session-local|host [--format json|markdown]``."""
    tools = subparsers.add_parser("tools", help="describe the tools given to the model")
    commands = tools.add_subparsers(dest="tools_command", required=True, metavar="COMMAND")
    catalog_parser = commands.add_parser(
        "catalog",
        help="print tool descriptions with JSON Schemas of parameters and results",
    )
    catalog_parser.add_argument("--protocol", required=True, choices=list(_CATALOGS))
    catalog_parser.add_argument("--format", choices=["json", "markdown"], default="json")
    catalog_parser.set_defaults(func=_catalog_main)


def _catalog_main(args: argparse.Namespace) -> int:
    as_json, as_markdown = _CATALOGS[args.protocol]
    if args.format == "markdown":
        sys.stdout.write(as_markdown())
    else:
        write_json_line(as_json())
    return 0


def session_batch_handlers(session: BatchSession) -> dict[str, Any]:
    """The request handlers of ``session batch`` over one :class:`BatchSession`."""

    def tool(name: str) -> Any:
        def handle(request: dict[str, Any]) -> Any:
            now = parse_request_instant(request.get("now"), "now")
            args = require(request, "args", dict)
            return getattr(session, name)(now, args)

        return handle

    def tick(request: dict[str, Any]) -> Any:
        return {"delivered": session.tick(parse_request_instant(request.get("now"), "now"))}

    def activity(request: dict[str, Any]) -> Any:
        return session.archive_activity(parse_request_instant(request.get("now"), "now"))

    def stop(request: dict[str, Any]) -> Any:
        return session.archive_stop(parse_request_instant(request.get("now"), "now"))

    return {
        "schedule_create": tool("schedule_create"),
        "schedule_list": tool("schedule_list"),
        "schedule_delete": tool("schedule_delete"),
        "tick": tick,
        "archive_activity": activity,
        "archive_stop": stop,
    }


def _batch_main(args: argparse.Namespace) -> int:
    configure_diagnostics()
    session = BatchSession(args.log, session_id=args.session_id)
    try:
        run_batch(sys.stdin, session_batch_handlers(session))
    finally:
        session.close()
    return 0


async def run_live_session(
    path: str,
    *,
    clock: Clock,
    stop: asyncio.Event,
    session_id: str | None = None,
    out: TextIO | None = None,
) -> FileSession:
    """Run the live owner of the log at ``path`` until ``stop`` is set, printing each delivery
    as a JSON line; then dispose the owner and close the log. Returns the session."""

    def show(message: FollowupMessage) -> None:
        write_json_line(delivery_json(message), out)

    session = FileSession(path, session_id=session_id, on_followup=show)
    engine = SessionEngine(session, session, clock)
    engine.start()
    try:
        await stop.wait()
    finally:
        await engine.dispose()
        session.close()
    return session


def _run_main(args: argparse.Namespace) -> int:
    configure_diagnostics()

    async def main() -> None:
        await run_live_session(
            args.log, clock=SystemClock(), stop=asyncio.Event(), session_id=args.session_id
        )

    # On Ctrl-C asyncio.run cancels the main task, which disposes the owner on its way out.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0
