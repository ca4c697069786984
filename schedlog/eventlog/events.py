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


class _EventFields(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The stored fields of :class:`LogEvent` (its ``data`` slot may hold the unread text)."""

    type: str
    data: Any = None
    exact: bool = True
    raw: bytes = b""


#: The ``data`` slot itself, under :class:`LogEvent`'s property of the same name.
_DATA_SLOT: Final[Any] = _EventFields.__dict__["data"]


class LogEvent(_EventFields, frozen=True, kw_only=True, gc=False):
    """One event line.

    * ``type``: the envelope type (a non-empty string);
    * ``data``: the decoded ``data`` member (``None`` when absent, see ``exact``);
    * ``exact``: the envelope has exactly the keys ``type`` and ``data``, as a
      ``schedule/change`` envelope must (other types may carry extra keys);
    * ``raw``: the complete line as read, including its ``\\n``, so forks copy it byte for byte
      (empty for events that did not come from a file).

    ``data`` may be read lazily: an event built with ``data=msgspec.Raw(text)`` (the opening
    of a session log builds them so, :mod:`schedlog.invariant.fastopen`; the text must be a
    payload a read proved valid) decodes that text on first use and keeps the value. Equality,
    ``repr`` and hashing see the decoded value, and ``msgspec`` encodes the text as it is, so
    such an event is indistinguishable from one built decoded (docs/decisions.md, "Opening a
    session: event data decoded on first use").
    """

    @property  # type: ignore[misc]  # the field's slot, read through (see above)
    def data(self) -> Any:
        value = _DATA_SLOT.__get__(self)
        if type(value) is msgspec.Raw:
            value = _read_payload(value, self.raw)
            _DATA_SLOT.__set__(self, value)
        return value

    def __eq__(self, other: object) -> bool:
        if type(other) is not LogEvent:
            return NotImplemented
        return (self.type, self.exact, self.raw, self.data) == (
            other.type,
            other.exact,
            other.raw,
            other.data,
        )

    def __hash__(self) -> int:
        return hash((self.type, self.data, self.exact, self.raw))

    def __repr__(self) -> str:
        return (
            f"LogEvent(type={self.type!r}, data={self.data!r}, exact={self.exact!r},"
            f" raw={self.raw!r})"
        )


_decode_payload = msgspec.json.Decoder().decode


def _read_payload(text: msgspec.Raw, line: bytes) -> Any:
    """The value of a ``data`` text a read proved valid, as the reference decoder reads it.
    ``msgspec`` reads every valid text as Python's ``json`` does, except a number beyond the
    float range or a lone surrogate escape, where it raises: then the line is read by ``json``
    (a key given twice in such a payload keeps its last value, as the reference's does)."""
    try:
        return _decode_payload(text)
    except (msgspec.DecodeError, RecursionError):
        import json  # only for the rare payload msgspec refuses

        return json.loads(line)["data"]


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
