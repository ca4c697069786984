"""The implementation of ``schedlog repair`` (docs/cli.md#repair): truncate a session log's torn
tail, and nothing else. A log with a corrupt complete line is reported and never touched; with
``--dry-run`` nothing is written and both output forms say so."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from schedlog.cli._logs import (
    LogReader,
    check_session_log,
    error_value,
    human_failure,
    log_path_error,
    wants_json,
)
from schedlog.cli.common import write_json_line
from schedlog.eventlog.reader import LogContents

__all__ = ["cmd_repair"]


def _truncate_torn_tail(path: str, contents: LogContents) -> None:
    """Cut the file back to its complete lines, refusing if it changed since it was read."""
    expected = contents.complete_size + len(contents.torn_tail)
    fd = os.open(path, os.O_WRONLY)
    try:
        size = os.fstat(fd).st_size
        if size != expected:
            raise OSError(f"{path} changed while it was being repaired ({size} != {expected})")
        os.ftruncate(fd, contents.complete_size)
        os.fsync(fd)
    finally:
        os.close(fd)


def cmd_repair(args: argparse.Namespace, read_log: LogReader | None) -> int:
    out: TextIO = sys.stdout
    refused = log_path_error(args)
    if refused is not None:
        return refused
    check = check_session_log(args.log, read_log)
    as_json = wants_json(args, out)
    torn = len(check.contents.torn_tail) if check.contents is not None else 0
    report: dict[str, Any] = {"path": args.log, "tornTail": torn > 0, "truncatedBytes": 0}
    if not check.ok:
        # A corrupt complete line is reported and never repaired, and the file is not touched.
        report["error"] = error_value(check)
        if as_json:
            write_json_line(report, out)
        else:
            out.write(f"{args.log}: not repaired: {human_failure(check)}\n")
        return 1
    assert check.contents is not None
    if torn and not args.dry_run:
        try:
            _truncate_torn_tail(args.log, check.contents)
        except OSError as exc:
            report["error"] = {"code": "internal_error", "message": str(exc)}
            if as_json:
                write_json_line(report, out)
            else:
                out.write(f"{args.log}: not repaired: {exc}\n")
            return 1
    if args.dry_run:  # nothing was written: say so in both forms
        report.update(dryRun=True, wouldTruncateBytes=torn)
    else:
        report["truncatedBytes"] = torn
    if as_json:
        write_json_line(report, out)
    elif not torn:
        dry = " (dry run)" if args.dry_run else ""
        out.write(f"{args.log}: no torn tail; nothing to do{dry}\n")
    elif args.dry_run:
        out.write(f"{args.log}: dry run: would truncate {torn} bytes of torn tail; not written\n")
    else:
        out.write(f"{args.log}: truncated {torn} bytes of torn tail\n")
    return 0
