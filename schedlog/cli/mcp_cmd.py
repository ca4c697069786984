"""``schedlog mcp``: the MCP server over stdio, one process per conversation (docs/agents.md#stdio,
docs/cli.md#mcp).

Only the argparse wiring lives here; the command imports :mod:`schedlog.cli._mcp` (and the
``mcp`` SDK) when it runs.
"""

from __future__ import annotations

from typing import Any

from schedlog._lazy import lazy_command
from schedlog.about import docs_url
from schedlog.cli.host_cmd import store_args

__all__ = ["register"]

_cmd_mcp = lazy_command("schedlog.cli._mcp", "cmd_mcp")


def register(sub: Any) -> None:
    """Add ``mcp`` to the ``schedlog`` parsers."""
    mcp = sub.add_parser(
        "mcp",
        help=f"serve the tools to an MCP client over stdio ({docs_url('agents.md#stdio')})",
        description=(
            "Serve schedlog's tools over the Model Context Protocol on stdin/stdout, for one "
            "conversation: an MCP client starts this command as its server. With --store, "
            "--sessions and --session: the host tools of that session (the service delivers due "
            "reminders into the sessions directory while it runs). With --log: the session-local "
            "tools of that session log (its live owner delivers due reminders into the log). The "
            "session's reminders are the resource schedlog://sessions/ID/reminders. stdout "
            "carries only the protocol; diagnostics go to stderr. Needs the mcp extra."
        ),
    )
    mcp.add_argument("--log", metavar="PATH", help="serve the session-local tools of this log")
    mcp.add_argument(
        "--session-id",
        metavar="S",
        help="with --log: sessionId of a new log (default: the file name without .jsonl)",
    )
    store_args(mcp, optional=True)  # --store (or $SCHEDLOG_STORE) and --backend
    mcp.add_argument("--sessions", metavar="DIR", help="with --store: the sessions directory")
    mcp.add_argument("--session", metavar="ID", help="with --store: the session to serve")
    mcp.set_defaults(func=_cmd_mcp)
