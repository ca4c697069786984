"""``schedlog session``: the session-local engine on the command line (SPEC §15.3, §15.5).

``session batch`` serves JSON requests on virtual time; ``session run`` runs the live owner on
the real clock and prints each delivery as it happens.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

import structlog

from schedlog.cli.common import parse_request_instant, require, run_batch
from schedlog.runtime.batch import BatchSession

__all__ = ["configure_diagnostics", "register", "session_batch_handlers"]


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
