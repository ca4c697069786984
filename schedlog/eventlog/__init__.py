"""Session log files (docs/protocol.md#session-log): header, envelopes, strict decoding, reading,
forks.

Appending, which the replay invariant guards, is :class:`schedlog.invariant.appender.LogAppender`.

The typed wire schema of the lines writers emit is :mod:`schedlog.eventlog.wire`; the summary
read's fast path of one line is :mod:`schedlog.eventlog.fastline`. The fast path of a whole read
and fold (``validate``, ``replay``) is :mod:`schedlog.invariant.fastcheck`, beside the check it
shortens; every fast path is proven equal to :func:`schedlog.eventlog.reader.reference_line`.

The names below load lazily: importing one submodule (the reader, say) costs only that module.
"""

from typing import TYPE_CHECKING, Final

from schedlog._lazy import lazy_exports

if TYPE_CHECKING:  # the table below, for type checkers (`X as X` marks a re-export)
    from schedlog.eventlog.changes import Change as Change
    from schedlog.eventlog.changes import CreateChange as CreateChange
    from schedlog.eventlog.changes import DeleteChange as DeleteChange
    from schedlog.eventlog.changes import DispatchChange as DispatchChange
    from schedlog.eventlog.changes import change_to_json as change_to_json
    from schedlog.eventlog.changes import decode_change as decode_change
    from schedlog.eventlog.errors import CorruptLogError as CorruptLogError
    from schedlog.eventlog.events import FOLLOWUP_TYPE as FOLLOWUP_TYPE
    from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE as SCHEDULE_CHANGE_TYPE
    from schedlog.eventlog.events import LogEvent as LogEvent
    from schedlog.eventlog.events import encode_line as encode_line
    from schedlog.eventlog.events import event_from_value as event_from_value
    from schedlog.eventlog.followups import Followup as Followup
    from schedlog.eventlog.followups import Member as Member
    from schedlog.eventlog.followups import build_followup as build_followup
    from schedlog.eventlog.followups import delivered_members as delivered_members
    from schedlog.eventlog.followups import message_id as message_id
    from schedlog.eventlog.followups import parse_followup as parse_followup
    from schedlog.eventlog.fork import fork_log as fork_log
    from schedlog.eventlog.header import Header as Header
    from schedlog.eventlog.header import decode_header as decode_header
    from schedlog.eventlog.reader import LogContents as LogContents
    from schedlog.eventlog.reader import LogCorruption as LogCorruption
    from schedlog.eventlog.reader import parse_log as parse_log
    from schedlog.eventlog.reader import read_log as read_log

#: The public names, each -> its module: the one table (``__all__`` is derived from it). Loaded
#: on first use (PEP 562), so reading a log (``eventlog.reader``) does not import the follow-up
#: helpers.
_LAZY: Final[dict[str, str]] = {
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

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
