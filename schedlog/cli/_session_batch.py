"""The implementation of ``schedlog session batch`` (docs/protocol.md#batch-session).

:mod:`schedlog.cli.session_cmd` holds only the argparse wiring and imports this module when the
command runs. Opening the session is most of a short batch (docs/decisions.md, "Opening a
session: no structlog until a line is logged"): nothing here imports asyncio, the live engine
or ``structlog`` (imported when a diagnostic line is first logged).

On a machine with a second core, the open checks a long log's second half in a child process,
as ``replay`` does (:func:`_fork_split`; docs/decisions.md, "The session open: the second half
in a child process"): the first answer still waits for the whole log's check.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from schedlog.cli.common import configure_diagnostics, parse_request_instant, require, run_batch
from schedlog.runtime.batch import BatchSession

__all__ = ["batch_main", "session_batch_handlers"]


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


def _fork_split(work: Callable[[], bytes]) -> Callable[[], bytes | None]:
    """:func:`schedlog.cli._split.fork_split` on a machine with a second core (imported when a
    log is long enough to split); elsewhere no result, and the open checks the rest itself."""
    from schedlog.cli._split import fork_split, split_available

    return fork_split(work) if split_available() else _no_result


def _no_result() -> None:
    return None


def batch_main(args: argparse.Namespace) -> int:
    configure_diagnostics(on_first_use=True)  # no structlog until a line is logged
    # session batch runs no threads, so the open may fork (schedlog.cli._split)
    session = BatchSession(args.log, session_id=args.session_id, split=_fork_split)
    try:
        run_batch(sys.stdin, session_batch_handlers(session))
    finally:
        session.close()
    return 0
