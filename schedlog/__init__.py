"""schedlog: durable, exact reminders for the session logs of LLM agents.

The public names are importable from here. They load lazily (PEP 562), so ``import schedlog``
and the command line stay cheap: the host service and the asyncio runtime are imported only
when one of their names is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from schedlog.errors import CorruptScheduleError, ScheduleError, ScheduleInputError, StoreOpenError

if TYPE_CHECKING:
    from schedlog.eventlog import (
        Header,
        LogEvent,
        decode_change,
        fork_log,
        message_id,
        read_log,
    )
    from schedlog.fold import FoldState, fold, next_schedule_id
    from schedlog.framing import batch_framing, single_framing
    from schedlog.host.backends import open_store
    from schedlog.host.service import HostService
    from schedlog.host.sessions import SessionsDirectory
    from schedlog.host.store import TaskStore
    from schedlog.host.tools import HostTools
    from schedlog.invariant import check
    from schedlog.invariant.appender import LogAppender
    from schedlog.rules.at import parse_at
    from schedlog.rules.cron import canonical_cron, parse_cron
    from schedlog.rules.decide import Decision, decide
    from schedlog.rules.instants import format_instant, parse_canonical_instant
    from schedlog.rules.record import Record
    from schedlog.rules.records import (
        build_host_record,
        build_session_record,
        decode_host_record,
        decode_legacy_record,
    )
    from schedlog.rules.update import resolve_update
    from schedlog.rules.zones import canonical_zone_name, check_time_zone
    from schedlog.runtime import (
        Agent,
        Clock,
        FileSession,
        SessionEngine,
        SessionLog,
        SystemClock,
        VirtualClock,
    )

_LAZY: dict[str, str] = {
    "Agent": "schedlog.runtime",
    "Clock": "schedlog.runtime",
    "Decision": "schedlog.rules.decide",
    "FileSession": "schedlog.runtime",
    "FoldState": "schedlog.fold",
    "Header": "schedlog.eventlog",
    "HostService": "schedlog.host.service",
    "HostTools": "schedlog.host.tools",
    "LogAppender": "schedlog.invariant.appender",
    "LogEvent": "schedlog.eventlog",
    "Record": "schedlog.rules.record",
    "SessionEngine": "schedlog.runtime",
    "SessionLog": "schedlog.runtime",
    "SessionsDirectory": "schedlog.host.sessions",
    "SystemClock": "schedlog.runtime",
    "TaskStore": "schedlog.host.store",
    "VirtualClock": "schedlog.runtime",
    "batch_framing": "schedlog.framing",
    "build_host_record": "schedlog.rules.records",
    "build_session_record": "schedlog.rules.records",
    "canonical_cron": "schedlog.rules.cron",
    "canonical_zone_name": "schedlog.rules.zones",
    "check": "schedlog.invariant",
    "check_time_zone": "schedlog.rules.zones",
    "decide": "schedlog.rules.decide",
    "decode_change": "schedlog.eventlog",
    "decode_host_record": "schedlog.rules.records",
    "decode_legacy_record": "schedlog.rules.records",
    "fold": "schedlog.fold",
    "fork_log": "schedlog.eventlog",
    "format_instant": "schedlog.rules.instants",
    "message_id": "schedlog.eventlog",
    "next_schedule_id": "schedlog.fold",
    "open_store": "schedlog.host.backends",
    "parse_at": "schedlog.rules.at",
    "parse_canonical_instant": "schedlog.rules.instants",
    "parse_cron": "schedlog.rules.cron",
    "read_log": "schedlog.eventlog",
    "resolve_update": "schedlog.rules.update",
    "single_framing": "schedlog.framing",
}

__all__ = [
    "Agent",
    "Clock",
    "CorruptScheduleError",
    "Decision",
    "FileSession",
    "FoldState",
    "Header",
    "HostService",
    "HostTools",
    "LogAppender",
    "LogEvent",
    "Record",
    "ScheduleError",
    "ScheduleInputError",
    "SessionEngine",
    "SessionLog",
    "SessionsDirectory",
    "StoreOpenError",
    "SystemClock",
    "TaskStore",
    "VirtualClock",
    "batch_framing",
    "build_host_record",
    "build_session_record",
    "canonical_cron",
    "canonical_zone_name",
    "check",
    "check_time_zone",
    "decide",
    "decode_change",
    "decode_host_record",
    "decode_legacy_record",
    "fold",
    "fork_log",
    "format_instant",
    "message_id",
    "next_schedule_id",
    "open_store",
    "parse_at",
    "parse_canonical_instant",
    "parse_cron",
    "read_log",
    "resolve_update",
    "single_framing",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'schedlog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
