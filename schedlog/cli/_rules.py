"""The implementation of ``schedlog rules`` (docs/protocol.md#batch-rules, docs/cli.md#rules-next).

:mod:`schedlog.cli.rules_cmd` holds only the argparse wiring and imports this module when one of
its commands runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Final

from schedlog.absent import ABSENT
from schedlog.cli.common import (
    InvalidRequest,
    parse_request_instant,
    report_error,
    require,
    run_batch,
    write_json_line,
)
from schedlog.errors import ScheduleError
from schedlog.eventlog import change_to_json, decode_change, event_from_value
from schedlog.fold import fold
from schedlog.rules.at import parse_at
from schedlog.rules.cron import canonical_cron
from schedlog.rules.decide import decide
from schedlog.rules.instants import format_instant, format_instants
from schedlog.rules.record import Record
from schedlog.rules.records import (
    build_host_record,
    build_session_record,
    decode_host_record,
    decode_legacy_record,
    record_from_json,
)
from schedlog.rules.text import is_trimmed, js_dumps, shown_value
from schedlog.rules.upcoming import local_line, upcoming_targets
from schedlog.rules.update import resolve_update
from schedlog.rules.zones import check_time_zone
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = [
    "RULES_OPS",
    "cmd_batch",
    "cmd_next",
    "decision_json",
    "decode_any_record",
    "upcoming_targets",
]


def decode_any_record(value: object) -> Record:
    """Host decoder when the record has a ``title`` key, legacy otherwise
    (docs/protocol.md#batch-rules decide)."""
    return record_from_json(value, "auto")


def decision_json(record: Record, at: int) -> dict[str, str]:
    d = decide(record, at)
    out = {"occurrenceAt": format_instant(d.occurrence_at)}
    if d.next_scheduled_at is not None:
        out["nextScheduledAt"] = format_instant(d.next_scheduled_at)
    return out


# --- batch ------------------------------------------------------------------------------------


def _op_create(req: dict[str, Any]) -> Any:
    protocol = require(req, "protocol", str)
    if protocol not in ("host", "session-local"):
        raise InvalidRequest('protocol must be "host" or "session-local".')
    now = parse_request_instant(req.get("now", ABSENT))
    ident = req.get("id")
    if not isinstance(ident, str) or not ident or not is_trimmed(ident):
        raise InvalidRequest("id must be a non-empty trimmed string.")
    args = require(req, "args", dict)
    build = build_host_record if protocol == "host" else build_session_record
    return build(args, id=ident, now=now).to_json()


def _op_decide(req: dict[str, Any]) -> Any:
    if "record" not in req:
        raise InvalidRequest("record is required.")
    at = parse_request_instant(req.get("at", ABSENT), "at")
    return decision_json(decode_any_record(req["record"]), at)


def _op_canonical_cron(req: dict[str, Any]) -> Any:
    if "expression" not in req:
        raise InvalidRequest("expression is required.")
    return canonical_cron(req["expression"])


def _op_canonical_zone(req: dict[str, Any]) -> Any:
    if "time_zone" not in req:
        raise InvalidRequest("time_zone is required.")
    return check_time_zone(req["time_zone"])[1]


def _op_parse_at(req: dict[str, Any]) -> Any:
    if "at" not in req:
        raise InvalidRequest("at is required.")
    now = parse_request_instant(req.get("now", ABSENT))
    return format_instant(parse_at(req["at"], now))


def _op_decode_record(req: dict[str, Any]) -> Any:
    protocol = require(req, "protocol", str)
    if protocol not in ("host", "legacy"):
        raise InvalidRequest('protocol must be "host" or "legacy".')
    if "record" not in req:
        raise InvalidRequest("record is required.")
    decoder = decode_host_record if protocol == "host" else decode_legacy_record
    return decoder(req["record"]).to_json()


def _op_update(req: dict[str, Any]) -> Any:
    if "current" not in req:
        raise InvalidRequest("current is required.")
    now = parse_request_instant(req.get("now", ABSENT))
    current = decode_host_record(req["current"])
    result = resolve_update(
        current,
        req.get("expected", ABSENT),
        now,
        change=req.get("change", ABSENT),
        title=req.get("title", ABSENT),
        prompt=req.get("prompt", ABSENT),
    )
    return result.to_json()


def _op_decode_change(req: dict[str, Any]) -> Any:
    if "change" not in req:
        raise InvalidRequest("change is required.")
    return change_to_json(decode_change(req["change"]))


def _op_fold(req: dict[str, Any]) -> Any:
    events = require(req, "events", list)
    state = fold(
        [event_from_value(value) for value in events], seed_length=req.get("seedLength", 0)
    )
    return {
        "active": [record.to_json() for record in state.active],
        "seenIds": list(state.seen_ids),
    }


RULES_OPS = {
    "create": _op_create,
    "decide": _op_decide,
    "canonical_cron": _op_canonical_cron,
    "canonical_zone": _op_canonical_zone,
    "parse_at": _op_parse_at,
    "decode_record": _op_decode_record,
    "update": _op_update,
    "decode_change": _op_decode_change,
    "fold": _op_fold,
}


def cmd_batch(args: argparse.Namespace) -> int:
    run_batch(sys.stdin, RULES_OPS)
    return 0


# --- next -------------------------------------------------------------------------------------


#: The most targets ``rules next`` lists (docs/cli.md#rules-next).
MAX_COUNT: Final = 1000

#: The selector fields a rules-layer message may start with, longest first, and the flag each
#: comes from (``rules next`` builds the selector from its flags).
_FLAGS_OF_FIELDS: Final = (
    ("cron.expression", "--cron"),
    ("weekly.weekdays", "--weekdays"),
    ("every_seconds", "--every"),
    ("weekly.time", "--weekly"),
    ("daily.time", "--daily"),
    ("time_zone", "--time-zone"),
    ("weekly", "--weekly"),
    ("daily", "--daily"),
    ("cron", "--cron"),
)


class _Usage(Exception):
    """A command-line mistake in ``rules next``: exit status 2 (docs/cli.md#exit-status)."""

    def __init__(self, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _load_record_arg(text: str) -> object:
    if text.startswith("@"):
        try:
            raw = Path(text[1:]).read_bytes()
        except OSError as exc:
            raise _Usage(
                f"--record {shown_value(text)}: cannot read: {exc.strerror or exc}"
            ) from None
    else:
        raw = text.encode("utf-8", "surrogatepass")
    try:
        return loads_strict(raw.rstrip(b"\r\n"))
    except JSONSyntaxError as exc:
        raise _Usage(f"--record {shown_value(text)} is not valid JSON: {exc.message}") from None


def _flag_values(args: argparse.Namespace) -> dict[str, object]:
    return {
        "--cron": args.cron,
        "--daily": args.daily,
        "--weekly": args.weekly,
        "--weekdays": args.weekdays,
        "--every": args.every,
        "--time-zone": args.time_zone or "UTC",
    }


def _flag_error(args: argparse.Namespace, exc: ScheduleError) -> _Usage:
    """A rules-layer error about a value built from the flags, told in the flags' words: the
    field the message names becomes the flag, and the value is echoed if it is not already."""
    values = _flag_values(args)
    message = exc.message
    for field, flag in _FLAGS_OF_FIELDS:
        if message.startswith(field + " ") and values.get(flag) is not None:
            message = flag + message[len(field) :]
            break
    else:
        flag = next(
            f for f in ("--cron", "--daily", "--weekly", "--every") if values[f] is not None
        )
        message = f"{flag}: {message}"
    if "Got " not in message:
        value = values[flag]
        shown = shown_value(value) if isinstance(value, str) else js_dumps(value)
        message = f"{message.rstrip('.')}. Got {shown}."
    return _Usage(message, exc.code)


def _rule_from_flags(args: argparse.Namespace, after: int) -> Record:
    chosen = [args.cron, args.daily, args.weekly, args.every]
    if sum(x is not None for x in chosen) != 1:
        raise _Usage("give --record, or exactly one of --cron, --daily, --weekly, --every")
    zone = args.time_zone or "UTC"
    create: dict[str, Any] = {"prompt": "explain", "title": "explain"}
    if args.cron is not None:
        create["cron"] = {"expression": args.cron, "time_zone": zone}
    elif args.daily is not None:
        create["daily"] = {"time": args.daily, "time_zone": zone}
    elif args.weekly is not None:
        parts = [x.strip() for x in (args.weekdays or "1,2,3,4,5").split(",") if x.strip()]
        if not all(p.isascii() and p.isdigit() for p in parts):
            raise _Usage(
                f"--weekdays takes ISO weekday numbers 1-7 separated by commas, e.g. 1,3,5. "
                f"Got {shown_value(args.weekdays)}."
            )
        create["weekly"] = {
            "time": args.weekly,
            "time_zone": zone,
            "weekdays": list(map(int, parts)),
        }
    else:
        create["every_seconds"] = args.every
    try:
        return build_host_record(create, id="schedule-explain", now=after)
    except ScheduleError as exc:
        raise _flag_error(args, exc) from None


def _decision_instant(args: argparse.Namespace) -> int:
    """``--at`` (or its alias ``--after``) in epoch ms, the wall clock when neither is given."""
    if args.at is not None and args.after is not None:
        raise _Usage("give --at or --after, not both (--after is an alias of --at)")
    flag, text = ("--after", args.after) if args.after is not None else ("--at", args.at)
    if text is None:
        return parse_request_instant(_wall_clock(), flag)
    try:
        return parse_request_instant(text, flag)
    except InvalidRequest as exc:
        raise _Usage(f"{exc.message} Got {shown_value(text)}.") from None


def _explain(args: argparse.Namespace) -> tuple[Record, int, dict[str, str] | None, list[int]]:
    if not 1 <= args.count <= MAX_COUNT:
        raise _Usage(f"--count must be an integer from 1 through {MAX_COUNT}. Got {args.count}.")
    at = _decision_instant(args)
    if args.record is not None:
        try:
            record = decode_any_record(_load_record_arg(args.record))
        except ScheduleError as exc:
            raise _Usage(f"--record: {exc.message}", exc.code) from None
    else:
        record = _rule_from_flags(args, at)
    try:
        decision = decision_json(record, at) if at >= record.scheduled_at else None
        upcoming = upcoming_targets(record, at, args.count)
    except ScheduleError as exc:  # an --at no target can follow (time_out_of_range)
        flag = "--after" if args.after is not None else "--at"
        raise _Usage(f"{flag}: {exc.message}", exc.code) from None
    return record, at, decision, upcoming


def cmd_next(args: argparse.Namespace) -> int:
    """Exit 0, or 2 for any mistake in the flags (docs/cli.md#exit-status): with --json the
    ``{"error"}`` line on stdout, else ``schedlog rules next: error: …`` on stderr."""
    try:
        record, at, decision, upcoming = _explain(args)
    except _Usage as exc:
        report_error("schedlog rules next", {"code": exc.code, "message": exc.message}, args.json)
        return 2
    if args.json or args.record is not None:
        write_json_line(
            {
                "record": record.to_json(),
                "at": format_instant(at),
                "decision": decision,
                "upcoming": format_instants(upcoming),
            }
        )
        return 0
    described = record.to_json()
    rule = {k: v for k, v in described.items() if k not in ("id", "title", "prompt", "scheduledAt")}
    print(f"rule: {' '.join(f'{k}={v}' for k, v in rule.items())}")
    print(f"next {len(upcoming)} target(s) after {format_instant(at)} (UTC, then local time):")
    for i, target in enumerate(upcoming, 1):
        print(f"  {i:>3}. {local_line(record, target)}")
    return 0


def _wall_clock() -> str:
    return format_instant(int(time.time() * 1000))
