"""``schedlog validate``, ``replay`` and ``repair``: offline checks of session logs
(docs/cli.md#schedlog).

These commands never deliver reminders. ``validate`` and ``replay`` only read; ``repair`` only
truncates a torn tail, and never touches a log with a corrupt complete line. Output is the
JSON Lines of docs/cli.md#schedlog with ``--json`` or whenever stdout is not a terminal, and a human
table on a terminal. Exit status: 0 success, 1 a checked file failed, 2 usage error.

Only the argparse wiring lives here: each command imports its implementation
(:mod:`schedlog.cli._logs`, :mod:`schedlog.cli._replay`, :mod:`schedlog.cli._repair`) when it
runs. The implementation's public names are still importable from here; they load on first
use.
"""

from __future__ import annotations

import argparse
import gc
from typing import TYPE_CHECKING, Final

from schedlog._lazy import lazy_exports

if TYPE_CHECKING:
    from schedlog.cli._logs import (
        PROGRESS_THRESHOLD,
        LogCheck,
        LogReader,
        StoreValidator,
        check_session_log,
        parse_at,
        validate_report,
    )
    from schedlog.cli._replay import replay_report
    from schedlog.eventlog.reader import LogContents

__all__ = [
    "PROGRESS_THRESHOLD",
    "LogCheck",
    "StoreValidator",
    "check_session_log",
    "parse_at",
    "register",
    "replay_report",
    "validate_report",
]

#: The implementation's public names, imported on first use.
_LAZY: Final = dict.fromkeys(
    (
        "PROGRESS_THRESHOLD",
        "LogCheck",
        "StoreValidator",
        "check_session_log",
        "parse_at",
        "validate_report",
    ),
    "schedlog.cli._logs",
) | {"replay_report": "schedlog.cli._replay"}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


def read_log(path: str) -> LogContents:
    """The commands read every log through this name: a summary read
    (:func:`schedlog.cli._logs.read_summary`), imported on first use."""
    from schedlog.cli._logs import read_summary

    return read_summary(path)


_SUMMARY_READ: Final = read_log


def _reader() -> LogReader | None:
    """``read_log`` for the implementation: None while it is the summary read above, which
    lets the implementation take its fast path (``schedlog.invariant.fastcheck``) first."""
    return None if read_log is _SUMMARY_READ else read_log


# Each command imports its implementation when it runs and hands it ``read_log`` (looked up
# here at call time, so tests can replace it): the implementation never imports this module.


def _cmd_replay(args: argparse.Namespace) -> int:
    from schedlog.cli._replay import cmd_replay

    return cmd_replay(args, _reader())


def _cmd_repair(args: argparse.Namespace) -> int:
    from schedlog.cli._repair import cmd_repair

    return cmd_repair(args, _reader())


# --- registration -----------------------------------------------------------------------------


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    validate_store: StoreValidator | None = None,
) -> None:
    """Add ``validate``, ``replay`` and ``repair``; each sets ``func(args) -> exit status``.

    ``validate_store`` is the hook for ``validate --store`` (host work); without it ``--store``
    is a usage error.
    """
    validate = subparsers.add_parser(
        "validate",
        help="check session logs (and a task store) without modifying them",
        description=(
            "Check session logs without modifying them: the header, every complete line and "
            "the strict fold of the owned suffix. Directories are walked for *.jsonl files. "
            "A torn tail is reported and is not a failure. Exit 1 when a file fails."
        ),
    )
    validate.add_argument("logs", nargs="*", metavar="LOG", help="session log files or folders")
    validate.add_argument(
        "--store", metavar="PATH|URL", help="also validate this host task store (postgresql://…)"
    )
    validate.add_argument(
        "--backend", choices=("sqlite", "json", "postgresql"), help="the store backend"
    )
    validate.add_argument("--json", action="store_true", help="JSON Lines even on a terminal")

    def run_validate(args: argparse.Namespace) -> int:
        # What exists once the implementation is imported (msgspec, the fast check: all of it
        # survives) is frozen out of the collector while the logs are checked, so that the
        # collections of the checks never walk it; the imports run without the collector,
        # which would only walk it again and again (docs/decisions.md, "validate DIR: a small
        # log's report from its summary").
        from schedlog.collector import collector_paused

        with collector_paused():
            from schedlog.cli._logs import cmd_validate

            gc.freeze()
        try:
            return cmd_validate(args, validate_store, _reader())
        finally:
            gc.unfreeze()

    validate.set_defaults(func=run_validate, logs_parser=validate)

    replay = subparsers.add_parser(
        "replay",
        help="fold a session log and print its active reminders",
        description=(
            "Fold the owned suffix of a session log and print the active reminders and seen "
            "ids. With --at, reminders are views whose state is taken at that instant."
        ),
    )
    replay.add_argument("--log", required=True, metavar="PATH", help="the session log")
    replay.add_argument("--at", metavar="INSTANT", help="RFC 3339 instant for the view state")
    replay.add_argument("--json", action="store_true", help="JSON even on a terminal")
    replay.set_defaults(func=_cmd_replay, logs_parser=replay)

    repair = subparsers.add_parser(
        "repair",
        help="truncate a session log's torn tail (and nothing else)",
        description=(
            "Truncate the torn tail (the bytes after the last newline) of a session log. "
            "Corruption in a complete line is reported (exit 1) and never repaired."
        ),
    )
    repair.add_argument("--log", required=True, metavar="PATH", help="the session log")
    repair.add_argument("--dry-run", action="store_true", help="report without truncating")
    repair.add_argument("--json", action="store_true", help="JSON even on a terminal")
    repair.set_defaults(func=_cmd_repair, logs_parser=repair)
