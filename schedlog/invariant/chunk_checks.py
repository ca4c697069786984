"""The checks of a chunk's bytes and typed payloads that the fast path of ``validate`` and
``replay`` (:mod:`schedlog.invariant.fastcheck`) makes for a whole chunk at once, where
:mod:`schedlog.eventlog.fastline` makes them line by line; and the typed decode of the
chunk's ``schedule/change`` and ``message/followup`` payloads and of their instants.

A documented internal module of :mod:`schedlog.invariant`: :mod:`schedlog.invariant.chunk_fold`
uses it; nothing outside schedlog should.

The checks :mod:`schedlog.eventlog.fastline` makes line by line are made for the whole
chunk: the chunk is UTF-8, no line nests deeper than 200 levels (the reference refuses
about 985, docs/protocol.md#limits), no integer has 4300 digits (the reference refuses
4,301), and no key is given twice (where it matters) nor a member ``null``, by counting
``:`` bytes. Outside strings a ``:`` only ever ends a key, so each line has at least the
count its decoded values account for (2 for the envelope, every member of a typed payload,
the ``:`` inside typed strings and all of an untyped payload's); when the chunk's total is
that sum, every line has exactly its count. ``\\u003`` (an escaped ``:``, among others) in a
typed payload sends the chunk to the line-by-line path.

Each function raises :class:`~schedlog.invariant.chunk_lines.NotTaken` when the chunk is to go
line by line.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from itertools import chain, compress, repeat
from operator import attrgetter, floordiv, sub
from typing import Any, Final

import msgspec

from schedlog.eventlog import wire
from schedlog.invariant.chunk_lines import NotTaken

__all__ = [
    "check_escapes",
    "check_followups",
    "check_payloads",
    "check_untyped",
    "decode_joined",
    "followup_colons",
    "instants_ms",
    "instants_ok",
    "text_colons",
]

#: The ``[`` and ``{`` of a longer untyped payload are counted: at most 198, so that with its
#: envelope's the line nests at most 199 levels deep (a payload of 380 bytes cannot nest 191).
_SHORT_DATA: Final = 380
_MAX_OPENERS: Final = 198
_LONG_DATA: Final = 4200
_LONG_INT: Final = re.compile(rb"[0-9]{4300}")
_NOT_MARKS: Final = bytes(b for b in range(256) if b not in b"[{:\n")
_NOT_OPENERS: Final = bytes(b for b in range(256) if b not in b"[{\n")
_UTF8_PIECE: Final = 1 << 14
_utf8_decode = codecs.utf_8_decode
_PLUGIN = attrgetter("source.plugin")
_REMINDERS = attrgetter("reminders")
_FOLLOWUP_TEXT = attrgetter("messageId", "role", "text", "createdAt", "source.kind")
_MEMBER_TEXT = attrgetter("id", "occurrenceAt")
_Parse = Callable[[object], "int | None"]
# Digits to "0": a canonical instant then reads exactly as this shape (docs/rules.md#instants).
_ZERO_DIGITS: Final = bytes.maketrans(b"123456789", b"000000000")
_INSTANT_SHAPE: Final = b"0000-00-00T00:00:00.000Z"
_INSTANT_LENGTH: Final = frozenset({len(_INSTANT_SHAPE)})
_decode_followups = msgspec.json.Decoder(list[wire.FollowupData]).decode
_decode_datetimes = msgspec.json.Decoder(list[datetime]).decode
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND: Final = timedelta(milliseconds=1)


def instants_ms(texts: list[str], parse: _Parse) -> list[int | None]:
    """``map(parse, texts)``, all at once when every text has the shape of a canonical instant
    (24 ASCII bytes, digits and separators in place) and is a real date and time: one typed
    decode into datetimes, whose RFC 3339 check is then the one ``parse`` makes (year 0001 on,
    a real day of the month with February 29 in leap years only, hours to 23, minutes and
    seconds to 59), then epoch ms. Anything else is parsed one by one."""
    if not texts:
        return []
    stamps = _stamps(texts)
    if stamps is not None:
        return list(map(floordiv, map(sub, stamps, repeat(_EPOCH)), repeat(_MILLISECOND)))
    return list(map(parse, texts))


def instants_ok(texts: list[str], parse: _Parse) -> bool:
    """Whether ``parse`` takes every one of ``texts`` (:func:`instants_ms` holds no None),
    without converting them: the one decode into datetimes proves it for canonical shapes."""
    if not texts or _stamps(texts) is not None:
        return True
    return None not in map(parse, texts)


def _stamps(texts: list[str]) -> list[datetime] | None:
    """The datetimes of ``texts`` (not empty) when every one has the shape of a canonical
    instant and is a real date and time (:func:`instants_ms`), else None."""
    body = '","'.join(texts)
    if body.isascii() and set(map(len, texts)) == _INSTANT_LENGTH:
        raw = body.encode()
        if raw.translate(_ZERO_DIGITS) == b'","'.join(repeat(_INSTANT_SHAPE, len(texts))):
            try:
                stamps: list[datetime] = _decode_datetimes(b'["' + raw + b'"]')
            except msgspec.DecodeError:
                return None  # not a real date or time: parse says which
            return stamps
    return None


def text_colons(typed: list[wire.ChangeData]) -> int:
    """The ``:`` inside the ids, prompts and titles of typed changes."""
    colons = 0
    for change in typed:
        if type(change) is wire.CreateData:
            record = change.schedule
            colons += record.id.count(":") + record.prompt.count(":")
            if record.title is not None:
                colons += record.title.count(":")
        else:
            colons += change.id.count(":")  # type: ignore[union-attr]
    return colons


def _check_utf8(body: bytes) -> None:
    """The chunk is UTF-8 (decoded in pieces, which is several times faster than at once)."""
    view, size, done = memoryview(body), len(body), 0
    try:
        while done < size:
            done += _utf8_decode(view[done : done + _UTF8_PIECE], "strict", False)[1]
    except UnicodeDecodeError:
        raise NotTaken from None


def check_untyped(payloads: list[msgspec.Raw]) -> int:
    """The ``:`` bytes of payloads the engine does not read, which must be UTF-8 and must not
    hold nesting deeper than 200 levels (Python's decoder may not reach it) or an integer of
    4300 digits (``int()`` refuses it). Typed payloads are UTF-8 and shallow by their type."""
    joined = b"\n".join(payloads)  # one a line: a payload holds no newline
    if not joined.isascii():
        _check_utf8(joined)
    longest = max(map(len, payloads))
    if longest <= _SHORT_DATA:  # none can nest deeper than 190 levels
        return joined.count(b":")
    # Each payload's '[', '{' and ':' in one pass over the bytes; then its '[' and '{'.
    marks = joined.translate(None, _NOT_MARKS)
    colons = marks.count(b":")
    openers = marks.translate(None, b":") if colons else marks
    _check_shape(payloads, openers, longest)
    return colons


def check_payloads(body: bytes, payloads: list[msgspec.Raw]) -> None:
    """:func:`check_untyped` without the ``:`` count, for a chunk whose envelopes are proven
    exact by their bytes (:func:`~schedlog.invariant.chunk_lines.whole_lines`): the chunk
    ``body`` is UTF-8, and its ``payloads`` (each a slice of it; typed ones too, which only
    makes the check stricter) hold no nesting deeper than 200 levels nor an integer of 4300
    digits."""
    if not body.isascii():
        _check_utf8(body)
    long = list(compress(payloads, map(_SHORT_DATA.__lt__, map(len, payloads))))
    if long:  # the others cannot nest deeper than 190 levels
        openers = b"\n".join(long).translate(None, _NOT_OPENERS)
        _check_shape(long, openers, max(map(len, long)))


def _check_shape(payloads: list[msgspec.Raw], openers: bytes, longest: int) -> None:
    """The ``[`` and ``{`` of each of ``payloads`` (``openers``, one ``\\n``-separated run a
    payload) are at most :data:`_MAX_OPENERS`, and none of them holds a run of 4300 digits."""
    if max(map(len, openers.split(b"\n"))) > _MAX_OPENERS:
        raise NotTaken
    if longest > _LONG_DATA:
        for data in payloads:
            if len(data) > _LONG_DATA and _LONG_INT.search(bytes(data)) is not None:
                raise NotTaken


def check_followups(followups: list[msgspec.Raw]) -> int:
    """Follow-up payloads in the shape writers emit, no key given twice nor a member null:
    their ':' bytes, which are their members' and their text's."""
    decoded, counted = decode_joined(_decode_followups, followups)
    colons = followup_colons(decoded)
    if colons != counted:
        raise NotTaken
    return colons


def check_escapes(body: bytes, rows: list[bytes], typed: list[bool]) -> None:
    """No ``\\u003`` (an escaped ``:``, among others) in a typed line (a change or a follow-up):
    typed payloads have no raw bytes of their own whose ``:`` could be counted. Untyped lines
    may hold it: their payloads' ``:`` are counted as raw bytes on both sides. The few typed
    lines of a chat log are looked at one by one, a chunk of mostly typed lines at once."""
    if 4 * typed.count(True) < len(typed):
        found = any(map(bytes.__contains__, compress(rows, typed), repeat(b"\\u003")))
    else:
        found = b"\\u003" in body
    if found:
        raise NotTaken


def decode_joined(
    decode: Callable[[bytes], list[Any]], payloads: Iterable[msgspec.Raw]
) -> tuple[list[Any], int]:
    """Typed payloads (each a whole JSON value) decoded as one array, and the ``:`` bytes of
    their text; ``\\u003`` anywhere (an escaped ``:``, among others) is not taken."""
    joined = b"[" + b",".join(payloads) + b"]"
    if b"\\u003" in joined:
        raise NotTaken
    try:
        return decode(joined), joined.count(b":")
    except (msgspec.DecodeError, RecursionError):
        raise NotTaken from None


def followup_colons(decoded: list[wire.FollowupData]) -> int:
    """The ``:`` bytes of follow-up payloads: their members' and their text's."""
    # The six data members, source's kind (and plugin), two per reminder, and their text.
    plugins = list(map(_PLUGIN, decoded))
    members = list(chain.from_iterable(map(_REMINDERS, decoded)))
    text = "".join(chain.from_iterable(map(_FOLLOWUP_TEXT, decoded)))
    text += "".join(chain.from_iterable(map(_MEMBER_TEXT, members)))
    text += "".join(filter(None, plugins))
    return 8 * len(decoded) - plugins.count(None) + 2 * len(members) + text.count(":")
