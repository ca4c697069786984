"""Event envelopes: every line after the header is ``{"type":T,"data":D}``
(docs/protocol.md#session-log).

Only the envelope is checked here. Whether a ``schedule/change`` is a valid change is a
schedule-level question answered by the fold, and only for the owned suffix
(docs/protocol.md#torn-tail), so a fork can inherit a parent's bad schedule events without becoming
corrupt itself.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from schedlog.eventlog.errors import CorruptLogError
from schedlog.rules.text import js_dumps

__all__ = [
    "FOLLOWUP_TYPE",
    "SCHEDULE_CHANGE_TYPE",
    "LogEvent",
    "encode_line",
    "event_from_value",
]

SCHEDULE_CHANGE_TYPE: Final = "schedule/change"
FOLLOWUP_TYPE: Final = "message/followup"


class LogEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One event line.

    * ``type``: the envelope type (a non-empty string);
    * ``data``: the decoded ``data`` member (``None`` when absent, see ``exact``);
    * ``exact``: the envelope has exactly the keys ``type`` and ``data``, as a
      ``schedule/change`` envelope must (other types may carry extra keys);
    * ``raw``: the complete line as read, including its ``\\n``, so forks copy it byte for byte
      (empty for events that did not come from a file).
    """

    type: str
    data: Any = None
    exact: bool = True
    raw: bytes = b""


def event_from_value(value: object, *, raw: bytes = b"") -> LogEvent:
    """The envelope of one decoded event line (or batch ``fold`` element).

    Raises :class:`CorruptLogError` (rule ``event``) when ``value`` is not a JSON object with a
    non-empty string ``type``.
    """
    if type(value) is not dict:
        raise CorruptLogError("event must be a JSON object", rule="event")
    event_type = value.get("type")
    if type(event_type) is not str or not event_type:
        raise CorruptLogError("event type must be a non-empty string", rule="event", path="$.type")
    exact = len(value) == 2 and "data" in value
    return LogEvent(type=event_type, data=value.get("data"), exact=exact, raw=raw)


def encode_line(value: Any) -> bytes:
    """One log line: compact JavaScript-compatible JSON (docs/protocol.md#json-output) plus
    ``\\n``."""
    return (js_dumps(value) + "\n").encode("utf-8")
