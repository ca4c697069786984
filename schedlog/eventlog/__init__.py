"""Session log files (SPEC §9): header, envelopes, strict decoding, reading, forks.

Appending, which the replay invariant guards, is :class:`schedlog.invariant.appender.LogAppender`.

The names below load lazily: importing one submodule (the reader, say) costs only that module.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schedlog.eventlog.changes import (
        Change,
        CreateChange,
        DeleteChange,
        DispatchChange,
        change_to_json,
        decode_change,
    )
    from schedlog.eventlog.errors import CorruptLogError
    from schedlog.eventlog.events import (
        FOLLOWUP_TYPE,
        SCHEDULE_CHANGE_TYPE,
        LogEvent,
        encode_line,
        event_from_value,
    )
    from schedlog.eventlog.followups import (
        Followup,
        Member,
        build_followup,
        delivered_members,
        message_id,
        parse_followup,
    )
    from schedlog.eventlog.fork import fork_log
    from schedlog.eventlog.header import Header, decode_header
    from schedlog.eventlog.reader import LogContents, LogCorruption, parse_log, read_log

__all__ = [
    "FOLLOWUP_TYPE",
    "SCHEDULE_CHANGE_TYPE",
    "Change",
    "CorruptLogError",
    "CreateChange",
    "DeleteChange",
    "DispatchChange",
    "Followup",
    "Header",
    "LogContents",
    "LogCorruption",
    "LogEvent",
    "Member",
    "build_followup",
    "change_to_json",
    "decode_change",
    "decode_header",
    "delivered_members",
    "encode_line",
    "event_from_value",
    "fork_log",
    "message_id",
    "parse_followup",
    "parse_log",
    "read_log",
]

#: name -> its module. Loaded on first use (PEP 562), so reading a log (``eventlog.reader``)
#: does not import the follow-up helpers.
_LAZY: dict[str, str] = {
    "Change": "schedlog.eventlog.changes",
    "CreateChange": "schedlog.eventlog.changes",
    "DeleteChange": "schedlog.eventlog.changes",
    "DispatchChange": "schedlog.eventlog.changes",
    "change_to_json": "schedlog.eventlog.changes",
    "decode_change": "schedlog.eventlog.changes",
    "CorruptLogError": "schedlog.eventlog.errors",
    "FOLLOWUP_TYPE": "schedlog.eventlog.events",
    "SCHEDULE_CHANGE_TYPE": "schedlog.eventlog.events",
    "LogEvent": "schedlog.eventlog.events",
    "encode_line": "schedlog.eventlog.events",
    "event_from_value": "schedlog.eventlog.events",
    "Followup": "schedlog.eventlog.followups",
    "Member": "schedlog.eventlog.followups",
    "build_followup": "schedlog.eventlog.followups",
    "delivered_members": "schedlog.eventlog.followups",
    "message_id": "schedlog.eventlog.followups",
    "parse_followup": "schedlog.eventlog.followups",
    "fork_log": "schedlog.eventlog.fork",
    "Header": "schedlog.eventlog.header",
    "decode_header": "schedlog.eventlog.header",
    "LogContents": "schedlog.eventlog.reader",
    "LogCorruption": "schedlog.eventlog.reader",
    "parse_log": "schedlog.eventlog.reader",
    "read_log": "schedlog.eventlog.reader",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
