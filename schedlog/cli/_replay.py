"""The implementation of ``schedlog replay`` (docs/cli.md#replay): the fold of one session log,
as JSON or a human table; it never delivers.

The JSON output is written as UTF-8 bytes straight to stdout's buffer when stdout writes UTF-8
(:func:`write_json_bytes`): the same bytes the text layer would write, without decoding a long
result to text and encoding it back.
"""

from __future__ import annotations

import argparse
import codecs
import sys
import time
from typing import Any, BinaryIO, TextIO

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
from schedlog.collector import collector_paused
from schedlog.protocols import SESSION_LOCAL
from schedlog.rules.instants import format_instant, format_instants, is_representable
from schedlog.rules.record import Record
from schedlog.rules.text import json_bytes

__all__ = ["cmd_replay", "replay_bytes", "replay_report", "write_json_bytes"]


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
    check = check_session_log(args.log, read_log, rendered=args.at is None)
    if wants_json(args, out):
        # The result is acyclic and all of it is kept until written: the cyclic collector
        # would only traverse it again and again while a long active set is built.
        with collector_paused():
            buffer = _utf8_buffer(out)
            if buffer is not None and at is None and check.rendered is not None and check.ok:
                out.flush()
                _write_line(buffer, replay_bytes(check))
            else:
                write_json_bytes(replay_report(check, at), out)
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
    active = _to_json(records) if at is None else [r.view(at, SESSION_LOCAL) for r in records]
    return {
        "sessionId": header.session_id if header is not None else None,
        "seedLength": header.seed_length if header is not None else 0,
        "active": active,
        "seenIds": list(check.state.seen_ids),
    }


def replay_bytes(check: LogCheck) -> bytes:
    """``json_bytes(replay_report(check, None))`` of a valid log whose fast check kept the JSON
    text of its active records (:attr:`LogCheck.rendered`): that text put in place, the records
    never built (a long active set prints fast). The members of the report in its order, each
    encoded alone: a compact object's text is its members' texts joined."""
    assert check.state is not None and check.contents is not None and check.rendered is not None
    header = check.contents.header
    session_id = header.session_id if header is not None else None
    seed_length = header.seed_length if header is not None else 0
    return b"".join(
        (
            b'{"sessionId":',
            json_bytes(session_id),
            b',"seedLength":',
            json_bytes(seed_length),
            b',"active":',
            check.rendered,
            b',"seenIds":',
            json_bytes(check.state.seen_ids),
            b"}",
        )
    )


def _to_json(records: tuple[Record, ...]) -> list[dict[str, Any]]:
    """``to_json()`` of each record, the targets formatted at once (a long active set prints
    fast). A fast check gives their JSON text instead (:func:`replay_bytes`)."""
    return list(map(Record.to_json, records, format_instants([r.scheduled_at for r in records])))


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
    buffer = _utf8_buffer(out)
    if buffer is None:
        write_json_line(value, out)
        return
    data = json_bytes(value)
    out.flush()
    _write_line(buffer, data)


def _utf8_buffer(out: TextIO) -> BinaryIO | None:
    """The buffer under ``out`` when ``out`` is a UTF-8 text stream with one, else None."""
    buffer: BinaryIO | None = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is None or encoding is None or codecs.lookup(encoding).name != "utf-8":
        return None
    return buffer


def _write_line(buffer: BinaryIO, data: bytes) -> None:
    buffer.write(data)
    buffer.write(b"\n")
    buffer.flush()
