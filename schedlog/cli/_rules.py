"""The implementation of ``schedlog rules`` (docs/protocol.md#batch-rules, docs/cli.md#rules-next).

:mod:`schedlog.cli.rules_cmd` holds only the argparse wiring and imports this module when one of
its commands runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from schedlog.absent import ABSENT
from schedlog.cli.common import (
    InvalidRequest,
    parse_request_instant,
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
from schedlog.rules.text import is_trimmed
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


def _load_record_arg(text: str) -> object:
    raw = Path(text[1:]).read_bytes() if text.startswith("@") else text.encode("utf-8")
    return loads_strict(raw.rstrip(b"\r\n"))


class _Usage(Exception):
    """A command-line mistake in ``rules next``: usage message, exit status 2."""


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
            raise _Usage("--weekdays takes ISO weekday numbers 1-7 separated by commas, e.g. 1,3,5")
        create["weekly"] = {
            "time": args.weekly,
            "time_zone": zone,
            "weekdays": list(map(int, parts)),
        }
    else:
        create["every_seconds"] = args.every
    return build_host_record(create, id="schedule-explain", now=after)


def cmd_next(args: argparse.Namespace) -> int:
    try:
        at = parse_request_instant(args.at or args.after or _wall_clock(), "--at")
    except InvalidRequest as exc:
        print(f"schedlog rules next: {exc.message}", file=sys.stderr)
        return 2
    try:
        if args.record is not None:
            record = decode_any_record(_load_record_arg(args.record))
        else:
            record = _rule_from_flags(args, at)
        decision = decision_json(record, at) if at >= record.scheduled_at else None
        upcoming = upcoming_targets(record, at, args.count)
    except _Usage as exc:
        print(f"schedlog rules next: {exc}", file=sys.stderr)
        return 2
    except (ScheduleError, JSONSyntaxError, OSError) as exc:
        code = getattr(exc, "code", "invalid_request")
        write_json_line({"error": {"code": code, "message": str(exc)}})
        return 1
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
