"""The summary read's fast path: checks of one event line that skip the reference decoder.

A documented internal module (the summary read of :mod:`schedlog.eventlog.reader` and the
chunk fast path :mod:`schedlog.invariant.fastcheck` use it; nothing outside schedlog should).
:func:`schedlog.eventlog.reader.reference_line` is the readable strict decoder of every line
and gives every verdict and diagnostic. The typed shapes are those of
:mod:`schedlog.eventlog.wire`. :func:`summary_line` only ever
*takes* a line the reference accepts, with the same result; anything it is not sure of it
leaves to the reference (returns None). ``tests/eventlog/test_fastline.py`` proves the two
equal, line by line and log by log.

What the reference accepts after line 1 (docs/decisions.md, "Duplicate keys in event
payloads"): strict JSON (UTF-8, no NaN or Infinity token, nesting and integers Python reads)
holding an object with a non-empty string ``type``, where no key is given twice, except inside
the ``data`` of an event whose type is neither ``schedule/change`` nor ``message/followup``.

The checks count ``:`` bytes to prove that no key is given twice where that matters: outside
strings a ``:`` only ever ends a key, so a line has one for every member of every object, plus
those inside its strings (see :func:`schedlog.eventlog.changes.decode_change_line`).
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

from schedlog.eventlog import wire
from schedlog.eventlog.changes import Change, decode_change_line

__all__ = ["summary_line"]

_CHANGE_PREFIXES: Final = (b'{"type":"schedule/change"', b'{"type": "schedule/change"')
_FOLLOWUP_PREFIXES: Final = (b'{"type":"message/followup"', b'{"type": "message/followup"')
_FOLLOWUP_TYPE: Final = "message/followup"
_CHANGE_TYPE: Final = "schedule/change"

#: Longer lines are checked for what msgspec reads but the reference does not: nesting deeper
#: than Python's recursion limit allows (a line needs two bytes a level) and integers of more
#: digits than ``int()`` converts (4300).
_SHORT: Final = 400
_MAX_OPENERS: Final = 200
_LONG_INT: Final = re.compile(rb"[0-9]{4300}")


_decode_envelope = msgspec.json.Decoder(wire.Envelope).decode
_decode_followup = msgspec.json.Decoder(wire.FollowupLine).decode


def summary_line(raw: bytes) -> Change | Literal[True] | None:
    """What a summary read needs of event line ``raw`` (a complete line after line 1, with its
    ``\\n``), or None when the reference decoder must read it.

    * a :class:`Change`: a ``schedule/change`` event whose payload decodes to it, as
      :func:`schedlog.eventlog.changes.decode_change` of the reference's ``data`` would;
    * True: a valid event of another type, whose envelope is exactly ``type`` and ``data``.
    """
    if raw.startswith(_CHANGE_PREFIXES):
        return decode_change_line(raw)
    if raw.startswith(_FOLLOWUP_PREFIXES):
        return True if _is_followup(raw) else None
    return True if _is_other_event(raw) else None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _is_followup(raw: bytes) -> bool:
    """A ``message/followup`` in the shape writers emit (docs/protocol.md#followup-events), no key
    given twice."""
    try:
        line = _decode_followup(raw)
    except Exception:  # any shape or syntax surprise: the reference decides
        return False
    # msgspec checked the UTF-8 of every string; the keys of known members are ASCII.
    if b"\\u003" in raw:
        return False
    data, source = line.data, line.data.source
    # type, data; the six data members; source's kind (and plugin); two per reminder
    members = 9 + 2 * len(data.reminders)
    text = (
        data.messageId.count(":")
        + data.role.count(":")
        + source.kind.count(":")
        + data.text.count(":")
        + data.createdAt.count(":")
    )
    if source.plugin is not None:
        members += 1
        text += source.plugin.count(":")
    for member in data.reminders:
        text += member.id.count(":") + member.occurrenceAt.count(":")
    return raw.count(b":") == members + text


def _is_other_event(raw: bytes) -> bool:
    """An event of another type: exactly ``type`` (a non-empty string) and ``data`` (any
    JSON; a key given twice inside it is allowed)."""
    try:
        line = _decode_envelope(raw)
    except Exception:  # not JSON, another envelope, an escape msgspec refuses…
        return False
    kind = line.type
    if not kind or kind in (_CHANGE_TYPE, _FOLLOWUP_TYPE):
        return False
    # The two members' ``:`` and those inside data. A ``:`` inside the type only makes the
    # line's count higher, so such a line is not taken.
    if raw.count(b":") != 2 + bytes(line.data).count(b":"):
        return False
    if not raw.isascii() and not _is_utf8(raw):
        return False
    if len(raw) > _SHORT:
        if raw.count(b"[") + raw.count(b"{") > _MAX_OPENERS:
            return False
        if len(raw) > 4300 and _LONG_INT.search(raw) is not None:
            return False
    return True
