"""The ``schedlog`` command: a thin adapter over the library (docs/protocol.md#batch,
docs/cli.md#schedlog)."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from typing import Any, Final

# Registration is cheap: each *_cmd module is argparse wiring only, and a command imports its
# implementation when it runs (``schedlog replay`` never loads asyncio or the host).
from schedlog.cli import logs_cmd

__all__ = ["build_parser", "main"]

#: The commands :mod:`schedlog.cli.logs_cmd` registers. ``main`` given one of these as its first
#: argument builds a parser with only these three (about 8 ms less start-up than all 22 parsers);
#: the named subparser, and so its help, usage and errors, is the same one either way.
_LOG_COMMANDS: Final = frozenset({"validate", "replay", "repair"})


def build_parser(*, logs_only: bool = False, session_only: bool = False) -> argparse.ArgumentParser:
    """The ``schedlog`` parser; ``logs_only`` registers only ``validate``, ``replay`` and
    ``repair`` (for an argument list whose first item is one of them), ``session_only`` only
    ``session`` (the same for ``session``: its open is most of a short ``session batch``)."""
    parser = argparse.ArgumentParser(
        prog="schedlog",
        description=(
            "Durable, exact reminders for LLM-agent session logs: explain rules, validate and "
            "replay session logs, run the session-local engine or the host service."
        ),
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="print the schedlog, tzdata (and IANA release) and Python versions, then exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if logs_only:
        logs_cmd.register(sub, validate_store=_validate_store)
        return parser
    if session_only:
        from schedlog.cli import session_cmd

        session_cmd.register(sub)
        return parser
    from schedlog.cli import host_cmd, mcp_cmd, rules_cmd, session_cmd, store_cmd

    rules_cmd.register(sub)
    logs_cmd.register(sub, validate_store=_validate_store)
    session_cmd.register(sub)
    session_cmd.register_tools(sub)
    host_cmd.register(sub)
    store_cmd.register(sub)
    mcp_cmd.register(sub)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: reads the package metadata only when asked (not on every start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from schedlog.about import version_line

        print(version_line())  # stdout, as argparse's own version action does
        parser.exit()


def _validate_store(path: str, backend: str | None) -> dict[str, Any]:
    """``validate --store``: the host's store report, imported only when asked for."""
    from schedlog.host.validate import validate_store_report

    return validate_store_report(path, backend)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    logs_only = bool(argv) and argv[0] in _LOG_COMMANDS
    session_only = bool(argv) and argv[0] == "session"
    args = build_parser(logs_only=logs_only, session_only=session_only).parse_args(argv)
    _tolerate_invalid_utf8(sys.stdin)
    try:
        code: int = args.func(args)
    except BrokenPipeError:
        return 1
    return code


def _tolerate_invalid_utf8(stream: object) -> None:
    """Let a batch answer a request line of invalid UTF-8 with ``invalid_request``
    (docs/protocol.md#batch).

    Under a UTF-8 locale Python decodes stdin strictly, so the first invalid byte would end the
    whole batch with a traceback. With ``surrogateescape`` the bytes survive as lone surrogates,
    which the request decoder rejects like any other invalid JSON text.
    """
    if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
        stream.reconfigure(errors="surrogateescape")


if __name__ == "__main__":
    sys.exit(main())
