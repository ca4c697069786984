"""The implementation of ``schedlog replay`` (docs/cli.md#replay): the fold of one session log,
as JSON or a human table; it never delivers.

The JSON output is written as UTF-8 bytes straight to stdout's buffer when stdout writes UTF-8
(:func:`write_json_bytes`): the same bytes the text layer would write, without decoding a long
result to text and encoding it back.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import sys
import time
from itertools import compress, repeat
from operator import is_
from typing import Any, TextIO

from schedlog.cli._logs import (
    LogCheck,
    LogReader,
    check_session_log,
    error_value,
    human_failure,
    log_path_error,
    parse_at,
    table,
    usage_error,
    wants_json,
)
from schedlog.cli.common import InvalidRequest, write_json_line
from schedlog.protocols import SESSION_LOCAL
from schedlog.rules.instants import format_instant, format_instants, is_representable
from schedlog.rules.record import Record
from schedlog.rules.text import json_bytes

__all__ = ["cmd_replay", "replay_report", "write_json_bytes"]


def cmd_replay(args: argparse.Namespace, read_log: LogReader | None) -> int:
    out: TextIO = sys.stdout
    at: int | None = None
    if args.at is not None:
        try:
            at = parse_at(args.at)
        except InvalidRequest as exc:
            return usage_error(args, exc.message)
    refused = log_path_error(args)
    if refused is not None:
        return refused
    check = check_session_log(args.log, read_log, targets=args.at is None)
    if wants_json(args, out):
        # The result is acyclic and all of it is kept until written: the cyclic collector
        # would only traverse it again and again while a long active set is built.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            write_json_bytes(replay_report(check, at), out)
        finally:
            if was_enabled:
                gc.enable()
        return 0 if check.ok else 1
    if not check.ok:
        out.write(f"{check.path}: corrupt: {human_failure(check)}\n")
        return 1
    # The wall clock is read here, at the CLI edge, only for the human table's state column.
    now = at if at is not None else int(time.time() * 1000)
    _human_replay(check, now, out)
    return 0


def replay_report(check: LogCheck, at: int | None) -> dict[str, Any]:
    """The docs/cli.md#replay output: the fold, with views at ``at`` when given, or
    ``{"error":…}``."""
    if not check.ok:
        return {"error": error_value(check)}
    assert check.state is not None and check.contents is not None
    header = check.contents.header
    records = check.state.active
    if at is None:
        active = list(map(Record.to_json, records, _target_texts(records, check.targets)))
    else:
        active = [r.view(at, SESSION_LOCAL) for r in records]
    return {
        "sessionId": header.session_id if header is not None else None,
        "seedLength": header.seed_length if header is not None else 0,
        "active": active,
        "seenIds": list(check.state.seen_ids),
    }


def _target_texts(records: tuple[Record, ...], known: list[str | None] | None) -> list[str]:
    """``format_instant`` of each record's target: the text the log holds where ``known`` has
    it (:attr:`LogCheck.targets`), the rest formatted at once (a long active set prints fast)."""
    if known is None:
        return format_instants([r.scheduled_at for r in records])
    if None not in known:
        return known  # type: ignore[return-value]
    missing = list(map(is_, known, repeat(None)))
    formatted = iter(format_instants([r.scheduled_at for r in compress(records, missing)]))
    return [next(formatted) if text is None else text for text in known]


def _human_replay(check: LogCheck, now: int, out: TextIO) -> None:
    assert check.state is not None and check.contents is not None
    header = check.contents.header
    if header is None:
        out.write(f"{check.path}: a new log (no header yet); no reminders\n")
        return
    parent = f", forked from {header.parent_session_id}" if header.parent_session_id else ""
    when = format_instant(now) if is_representable(now) else str(now)
    out.write(
        f"session {header.session_id} (seedLength {header.seed_length}{parent}): "
        f"{len(check.state.active)} active, {len(check.state.seen_ids)} id(s) seen; "
        f"state at {when}\n"
    )
    if not check.state.active:
        return
    rows: list[tuple[str, ...]] = [("ID", "KIND", "TARGET (UTC)", "STATE")]
    for record in check.state.active:
        kind: str = record.kind
        if record.every_seconds is not None:
            kind = f"every {record.every_seconds}s"
        state = "overdue" if now >= record.scheduled_at else "scheduled"
        rows.append((record.id, kind, format_instant(record.scheduled_at), state))
    table(rows, out)


def write_json_bytes(value: Any, out: TextIO) -> None:
    """:func:`schedlog.cli.common.write_json_line` of ``value`` to ``out``: as bytes to its
    buffer when ``out`` is a UTF-8 text stream with one (the bytes its text layer would write),
    else through the text layer."""
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is None or encoding is None or codecs.lookup(encoding).name != "utf-8":
        write_json_line(value, out)
        return
    data = json_bytes(value)
    out.flush()
    buffer.write(data)
    buffer.write(b"\n")
    buffer.flush()
