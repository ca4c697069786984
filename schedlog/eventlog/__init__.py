"""Session log files (SPEC §9): header, envelopes, strict decoding, reading, appending, forks."""

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
from schedlog.eventlog.session_log import SessionLog

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
    "SessionLog",
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
