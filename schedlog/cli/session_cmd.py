"""``schedlog session``: the session-local engine on the command line
(docs/protocol.md#batch-session).

``session batch`` serves JSON requests on virtual time; ``session run`` runs the live owner on
the real clock and prints each delivery as it happens.

Only the argparse wiring lives here: each command imports its implementation
(:mod:`schedlog.cli._session`, the tool schemas) when it runs, so registering the commands
costs no asyncio, runtime or tool-schema import. ``configure_diagnostics``, ``run_live_session``
and ``session_batch_handlers`` are still importable from here; they load on first use.
"""

from __future__ import annotations

import argparse
import importlib
from typing import TYPE_CHECKING, Any, Final

from schedlog._lazy import lazy_command, lazy_exports
from schedlog.about import docs_url
from schedlog.cli.run_log import add_run_log_args

if TYPE_CHECKING:
    from schedlog.cli._session import run_live_session
    from schedlog.cli._session_batch import session_batch_handlers
    from schedlog.cli.common import configure_diagnostics

__all__ = [
    "configure_diagnostics",
    "register",
    "register_tools",
    "run_live_session",
    "session_batch_handlers",
]

#: name -> the module it is imported from on first use (PEP 562)
_LAZY: Final = {
    "configure_diagnostics": "schedlog.cli.common",
    "run_live_session": "schedlog.cli._session",
    "session_batch_handlers": "schedlog.cli._session_batch",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


def register(subparsers: Any) -> None:
    """Add ``session batch`` and ``session run`` to the ``schedlog`` command."""
    session = subparsers.add_parser(
        "session", help="run the session-local engine on one session log"
    )
    commands = session.add_subparsers(dest="session_command", required=True, metavar="COMMAND")
    batch = commands.add_parser(
        "batch",
        help=(
            "answer JSON requests on stdin at virtual time "
            f"({docs_url('protocol.md#batch-session')})"
        ),
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
            "agent. Each delivery is printed on stdout as one JSON line {messageId, text, "
            "reminders}; stderr shows a start line, one line per delivery, warnings and a stop "
            "line on a terminal, or one structlog JSON object per event otherwise (or with "
            "--log-format json). "
            "With --tools, stdin takes tool requests, one JSON object per line: "
            '{"op":"schedule_create"|"schedule_list"|"schedule_delete","args":{...}}; each is '
            'answered with one {"ok": TOOL_VALUE} line, at the real time it is served.'
        ),
    )
    run.add_argument("--log", required=True, metavar="PATH", help="the session log")
    run.add_argument(
        "--session-id",
        metavar="S",
        help="sessionId of a new log (default: the file name without .jsonl)",
    )
    run.add_argument(
        "--tools",
        action="store_true",
        help="read tool requests from stdin while running (see above)",
    )
    add_run_log_args(run)
    run.set_defaults(func=_run_main)


#: protocol -> the module whose ``tool_schemas()`` (JSON value) and ``tool_schemas_markdown()``
#: describe its tools; imported only by ``tools catalog`` (the command keeps its name).
_TOOL_SCHEMAS: Final[dict[str, str]] = {
    "session-local": "schedlog.runtime.tool_schemas",
    "host": "schedlog.host.tool_schemas",
}


def register_tools(subparsers: Any) -> None:
    """Add ``tools catalog --protocol session-local|host [--format FORMAT]`` (json, markdown,
    openai, anthropic)."""
    tools = subparsers.add_parser("tools", help="describe the tools given to the model")
    commands = tools.add_subparsers(dest="tools_command", required=True, metavar="COMMAND")
    catalog_parser = commands.add_parser(
        "catalog",
        help="print tool descriptions with JSON Schemas of parameters and results",
        description=(
            "Print the tools of a protocol: json (descriptions with JSON Schemas of parameters "
            "and results), markdown (the same for people), or the tool definitions the OpenAI "
            '(a JSON array of {"type":"function","function":{name, description, parameters}}) '
            "and Anthropic (a JSON array of {name, description, input_schema}) APIs take."
        ),
    )
    catalog_parser.add_argument(
        "--protocol", required=True, choices=list(_TOOL_SCHEMAS), help="whose tools to print"
    )
    catalog_parser.add_argument(
        "--format",
        choices=["json", "markdown", "openai", "anthropic"],
        default="json",
        help="output format",
    )
    catalog_parser.set_defaults(func=_tool_schemas_main)


def _tool_schemas_main(args: argparse.Namespace) -> int:
    import sys

    from schedlog.cli.common import write_json_line
    from schedlog.tool_schemas import anthropic_tools, openai_tools

    schemas = importlib.import_module(_TOOL_SCHEMAS[args.protocol])
    if args.format == "markdown":
        sys.stdout.write(schemas.tool_schemas_markdown())
    elif args.format == "openai":
        write_json_line(openai_tools(schemas.tool_schemas()))
    elif args.format == "anthropic":
        write_json_line(anthropic_tools(schemas.tool_schemas()))
    else:
        write_json_line(schemas.tool_schemas())
    return 0


_batch_main = lazy_command("schedlog.cli._session_batch", "batch_main")
_run_main = lazy_command("schedlog.cli._session", "run_main")
