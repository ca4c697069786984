"""The fast path of ``schedlog validate`` and ``replay``: read and fold a whole log a chunk of
lines at a time.

Private to :mod:`schedlog.cli._logs`. The reference is the summary read
(:func:`schedlog.eventlog.reader.read_log` with ``keep_events=False``, whose line decoder is
``reader._reference_line``) followed by :func:`schedlog.invariant.logs.validate_log`. That pair
gives every verdict and every diagnostic. :func:`fast_check` never gives one: it returns the
reference's result for a log it is sure is valid, and None for anything else, after which the
caller runs the reference. ``tests/invariant/test_fastcheck.py`` proves the two equal on random,
mutated and broken logs.

How a chunk of complete lines is taken (``_Chunk.take``), all or nothing:

* the lines become one JSON array (``\\n`` -> ``,``) decoded in one call into envelopes of
  exactly ``type`` and ``data`` (``data`` kept raw). An empty or blank line, or two values on one
  line, is a syntax error of the array, so each line is exactly one envelope;
* the payloads of the ``schedule/change`` lines are decoded in one more call into typed
  changes, and those of the ``message/followup`` lines into the shape writers emit; integer
  ranges and ``version`` 1 are checked by the decoder;
* the checks :mod:`schedlog.eventlog._fastline` makes line by line are made for the whole
  chunk: the chunk is UTF-8, no line nests deeper than 200 levels, no integer has 4300
  digits, and no key is given twice (where it matters) nor a member ``null``, by counting
  ``:`` bytes. Outside strings a ``:`` only ever ends a key, so each line has at least the
  count its decoded values account for (2 for the envelope, every member of a typed payload,
  the ``:`` inside typed strings and all of an untyped payload's); when the chunk's total is
  that sum, every line has exactly its count. ``\\u003`` (an escaped ``:``, among others) in a
  typed payload sends the chunk to the line-by-line path;
* the changes are checked (trimmed ids and prompts, titles, canonical instants) and folded.

A chunk that is not taken is read line by line, as the summary read reads it (``_fastline``
first, the reference decoder for the rest), and folded the same way; a chunk whose count of
``:`` does not add up is first unfolded. A corrupt line, a change the fold refuses, a line
over the length limit or a log without a complete header ends the fast path (None).
"""

from __future__ import annotations

import codecs
import io
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import reduce
from itertools import chain, compress, repeat
from operator import attrgetter, floordiv, is_, is_not, not_, or_, sub
from typing import Annotated, Any, Final, Literal

import msgspec
from msgspec import Meta
from msgspec.structs import replace

from schedlog.eventlog._fastline import summary_line
from schedlog.eventlog.changes import Change
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE, LogEvent
from schedlog.eventlog.header import Header
from schedlog.eventlog.reader import MAX_LINE_BYTES, LogContents, _reference_line
from schedlog.fold.state import FoldState
from schedlog.fold.steps import FoldError, decode_event_change, plan
from schedlog.rules.decide import MIN_EVERY_SECONDS_SESSION
from schedlog.rules.instants import MAX_MS, CanonicalInstantParser
from schedlog.rules.record import Record
from schedlog.rules.records import MAX_EVERY_SECONDS, TITLE_MAX_UNITS
from schedlog.rules.text import JS_WHITESPACE, MAX_SAFE_INT, utf16_len

__all__ = ["fast_check", "fast_check_bytes"]

_CHUNK: Final = 1 << 18
_MAX_EVERY_MS: Final = MAX_SAFE_INT // 1000  # everySeconds whose interval in ms is safe
_MAX_RAW: Final = MAX_LINE_BYTES + 1
_CHANGE: Final = SCHEDULE_CHANGE_TYPE
_FOLLOWUP: Final = "message/followup"
#: The ``[`` and ``{`` of a longer untyped payload are counted: at most 198, so that with its
#: envelope's the line nests at most 199 levels deep (a payload of 380 bytes cannot nest 191).
_SHORT_DATA: Final = 380
_MAX_OPENERS: Final = 198
_LONG_DATA: Final = 4200
_LONG_INT: Final = re.compile(rb"[0-9]{4300}")
#: Ends the array of envelopes (the chunk's last ``\\n`` became a ``,``); dropped after decoding.
_SENTINEL: Final = b'{"type":"","data":0}]'
_SENTINEL_COLONS: Final = _SENTINEL.count(b":")
_NOT_OPENERS: Final = bytes(b for b in range(256) if b not in b"[{\n")
_UTF8_PIECE: Final = 1 << 14
_utf8_decode = codecs.utf_8_decode
_KIND = attrgetter("type")
_TYPED: Final = frozenset({_CHANGE, _FOLLOWUP})
_PLUGIN = attrgetter("source.plugin")
_REMINDERS = attrgetter("reminders")
_FOLLOWUP_TEXT = attrgetter("messageId", "role", "text", "createdAt", "source.kind")
_MEMBER_TEXT = attrgetter("id", "occurrenceAt")
_Parse = Callable[[object], "int | None"]
# Digits to "0": a canonical instant then reads exactly as this shape (docs/rules.md#instants).
_ZERO_DIGITS: Final = bytes.maketrans(b"123456789", b"000000000")
_INSTANT_SHAPE: Final = b"0000-00-00T00:00:00.000Z"
_INSTANT_LENGTH: Final = frozenset({len(_INSTANT_SHAPE)})
_PAYLOAD = attrgetter("data")
_SCHEDULE = attrgetter("schedule")
_ACCEPTED = attrgetter("acceptedAt")
_SCHEDULED_AT = attrgetter("scheduledAt")


class _Envelope(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: str
    data: msgspec.Raw


# --- typed payloads: the shapes writers emit, ranges checked by the decoder ----------------------

_Text = Annotated[str, Meta(min_length=1)]
_Seconds = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT)]
_Every = Annotated[int, Meta(ge=MIN_EVERY_SECONDS_SESSION, le=MAX_EVERY_SECONDS)]


class _Typed(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    pass


class _AfterRecord(_Typed, tag_field="kind", tag="after"):
    id: _Text
    prompt: _Text
    afterSeconds: _Seconds
    scheduledAt: str
    title: _Text | None = None


class _AtRecord(_Typed, tag_field="kind", tag="at"):
    id: _Text
    prompt: _Text
    scheduledAt: str
    title: _Text | None = None


class _EveryRecord(_Typed, tag_field="kind", tag="every"):
    id: _Text
    prompt: _Text
    everySeconds: _Every
    scheduledAt: str
    title: _Text | None = None


_TypedRecord = _AfterRecord | _AtRecord | _EveryRecord


class _Create(_Typed, tag_field="operation", tag="create"):
    version: Literal[1]
    schedule: _AfterRecord | _AtRecord | _EveryRecord


class _Delete(_Typed, tag_field="operation", tag="delete"):
    version: Literal[1]
    id: str


class _Dispatch(_Typed, tag_field="operation", tag="dispatch"):
    version: Literal[1]
    id: str
    acceptedAt: str | None = None


class _Source(_Typed):
    kind: str
    plugin: str | None = None


class _Member(_Typed):
    id: str
    occurrenceAt: str


class _Followup(_Typed):
    messageId: str
    role: str
    source: _Source
    text: str
    reminders: list[_Member]
    createdAt: str


class _ChangeLine(
    msgspec.Struct, tag_field="type", tag=_CHANGE, forbid_unknown_fields=True, gc=False
):
    data: _Create | _Delete | _Dispatch


class _FollowupLine(
    msgspec.Struct, tag_field="type", tag=_FOLLOWUP, forbid_unknown_fields=True, gc=False
):
    data: _Followup


class _EndLine(msgspec.Struct, tag_field="type", tag="", forbid_unknown_fields=True, gc=False):
    data: int


#: A single-pass decoder is built for at most this many event types.
_MAX_KINDS: Final = 32
_TYPED_LINES: Final = frozenset({_ChangeLine, _FollowupLine, _EndLine})


def _line_decoder(kinds: frozenset[str]) -> Callable[[bytes], list[Any]]:
    """The decoder of a chunk of lines of the given types, as one JSON array: every line
    tagged by its ``type``, a change or follow-up decoded typed, any other payload kept raw."""
    lines: list[type] = [_ChangeLine, _FollowupLine, _EndLine]
    for number, kind in enumerate(sorted(kinds - _TYPED)):
        lines.append(
            msgspec.defstruct(
                f"_Line{number}",
                [("data", msgspec.Raw)],
                tag_field="type",
                tag=kind,
                forbid_unknown_fields=True,
                gc=False,
            )
        )
    union = reduce(or_, lines)
    decode: Callable[[bytes], list[Any]] = msgspec.json.Decoder(list[union]).decode  # type: ignore[valid-type]
    return decode


_decode_envelopes = msgspec.json.Decoder(list[_Envelope]).decode
_decode_changes = msgspec.json.Decoder(list[_Create | _Delete | _Dispatch]).decode
_decode_followups = msgspec.json.Decoder(list[_Followup]).decode
_decode_datetimes = msgspec.json.Decoder(list[datetime]).decode
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND: Final = timedelta(milliseconds=1)


class _Invalid(Exception):
    """The log is not valid, or not surely: the reference decides."""


class _NotTaken(Exception):
    """This chunk goes line by line."""


def fast_check(path: str | os.PathLike[str]) -> tuple[LogContents, FoldState] | None:
    """The summary read of the log at ``path`` and the fold of its owned suffix, when the log
    is valid and this fast path is sure of it; None otherwise (the reference decides).
    ``OSError`` propagates."""
    with open(path, "rb") as stream:
        return _check(stream.read, os.fspath(path), _CHUNK)


def fast_check_bytes(
    data: bytes, *, file: str = "<bytes>", chunk: int = _CHUNK
) -> tuple[LogContents, FoldState] | None:
    """:func:`fast_check` of a log in memory, read ``chunk`` bytes at a time (for tests)."""
    return _check(io.BytesIO(data).read, file, chunk)


def _check(
    read: Callable[[int], bytes], file: str, size: int
) -> tuple[LogContents, FoldState] | None:
    buf = read(size)
    while (newline := buf.find(b"\n")) < 0:  # the header line goes on in the next chunk
        more = read(size)
        if not more or len(buf) > _MAX_RAW:
            return None  # a new log, only a torn header or an over-long line: the reference
        buf += more
    header_size = newline + 1
    if header_size > _MAX_RAW:
        return None
    try:
        header = _reference_line(buf[:header_size], 1)
    except CorruptLogError:
        return None
    assert type(header) is Header
    fold = _Chunk(header.seed_length)
    carry, data = b"", buf[header_size:]  # the start of a line read before, what was read now
    complete = header_size
    try:
        while True:
            last = data.rfind(b"\n") + 1
            if last:
                if len(carry) + data.find(b"\n") >= _MAX_RAW:  # only this line can be so long
                    return None
                fold.take(carry, memoryview(data)[:last])
                complete += len(carry) + last
                carry = data[last:]
            else:
                carry += data
                if len(carry) > _MAX_RAW:
                    return None
            data = read(size)
            if not data:
                break
    except _Invalid:
        return None
    if fold.count < fold.start:
        return None  # seedLength beyond the log: the reference reports it
    contents = LogContents(
        file=file,
        header=header,
        events=(),
        event_count=fold.count,
        events_kept=False,
        torn_tail=carry,
        complete_size=complete,
        header_size=header_size,
        corruption=None,
    )
    return contents, FoldState.from_index(fold.active, fold.seen)


class _Chunk:
    """The fold so far, and how the next chunk of complete lines is taken."""

    def __init__(self, start: int) -> None:
        self.start = start  # the first owned event index (seedLength)
        self.count = 0  # events so far
        self.active: dict[str, Record] = {}
        self.seen: dict[str, None] = {}
        self.instants = CanonicalInstantParser()
        # the records created in this chunk, typed, with their scheduledAt in epoch ms
        self.created: list[tuple[_TypedRecord, int]] = []
        self.kinds: frozenset[str] = frozenset()  # the event types seen so far
        self.decode_lines: Callable[[bytes], list[Any]] | None = None  # for those types

    def take(self, carry: bytes, lines: memoryview) -> None:
        """Check and fold the complete lines ``carry + lines`` (each ends with ``\\n``): in one
        pass when every type is one seen before, else in two, else line by line."""
        if self.count >= self.start:
            # The lines as one JSON array (the last '\\n' ends the sentinel's line instead).
            array = b"".join((b"[", carry, lines, _SENTINEL)).replace(b"\n", b",")
            for way in (self._single, self._fast):
                try:
                    self.count += way(array)
                    return
                except _NotTaken:
                    pass
        self._lines(carry + lines)

    def _single(self, array: bytes) -> int:
        """:meth:`_fast` in one decoding pass, with the types seen in earlier chunks."""
        decode = self.decode_lines
        if decode is None:
            if not self.kinds or len(self.kinds) > _MAX_KINDS:
                raise _NotTaken
            decode = self.decode_lines = _line_decoder(self.kinds)
        if b"\\u003" in array:  # typed payloads have no raw bytes of their own to look at
            raise _NotTaken
        try:
            lines = decode(array)
        except (msgspec.DecodeError, RecursionError):
            raise _NotTaken from None
        lines.pop()
        count = len(lines)
        classes = list(map(type, lines))
        if _EndLine in classes:  # a line of type ""
            raise _NotTaken
        # What is left after the envelopes' 2 each, the untyped payloads' and the follow-ups'
        # must be the changes' own.
        colons = array.count(b":") - _SENTINEL_COLONS - 2 * count
        others = list(compress(lines, map(not_, map(_TYPED_LINES.__contains__, classes))))
        if others:
            colons -= _check_untyped(list(map(_PAYLOAD, others)))
        if _FollowupLine in classes:
            followups = compress(lines, map(is_, classes, repeat(_FollowupLine)))
            colons -= _followup_colons(list(map(_PAYLOAD, followups)))
        if _ChangeLine not in classes:
            if colons:
                raise _NotTaken
            return count
        typed = list(map(_PAYLOAD, compress(lines, map(is_, classes, repeat(_ChangeLine)))))
        self._fold_chunk(typed, colons, None)
        return count

    # -- the chunk at once ------------------------------------------------------------------

    def _fast(self, array: bytes) -> int:
        try:
            envelopes = _decode_envelopes(array)
        except (msgspec.DecodeError, RecursionError):
            raise _NotTaken from None
        envelopes.pop()
        lines = len(envelopes)
        kinds = list(map(_KIND, envelopes))
        payloads = list(map(_PAYLOAD, envelopes))
        if "" in kinds:
            raise _NotTaken
        if not self.kinds.issuperset(kinds):
            self.kinds, self.decode_lines = self.kinds.union(kinds), None
        # The ':' of the payloads, if every envelope has exactly its two; each part is taken
        # off below, and what is left must be nothing.
        colons = array.count(b":") - _SENTINEL_COLONS - 2 * lines
        changes, followups = _CHANGE in kinds, _FOLLOWUP in kinds
        others = (
            list(compress(payloads, map(not_, map(_TYPED.__contains__, kinds))))
            if changes or followups
            else payloads
        )
        if others:
            colons -= _check_untyped(others)
        if followups:
            colons -= _check_followups(list(compress(payloads, map(_FOLLOWUP.__eq__, kinds))))
        if not changes:
            if colons:
                raise _NotTaken
            return lines
        joined = b"[" + b",".join(compress(payloads, map(_CHANGE.__eq__, kinds))) + b"]"
        if b"\\u003" in joined:
            raise _NotTaken
        try:
            typed = _decode_changes(joined)
        except (msgspec.DecodeError, RecursionError):
            raise _NotTaken from None
        self._fold_chunk(typed, colons, joined.count(b":"))
        return lines

    def _fold_chunk(
        self, typed: list[_Create | _Delete | _Dispatch], colons: int, counted: int | None
    ) -> None:
        """Check and fold a chunk's changes, whose payloads hold ``colons`` ``:`` bytes by the
        count of the chunk, and ``counted`` by the count of their own bytes (None: unknown).
        When that is more than theirs, the fold is undone (the chunk goes line by line)."""
        seen = self.seen
        before = dict(self.active)
        expected = self._fold_typed(typed)
        created = self._settle()
        if (counted is None or colons == counted) and (
            colons == expected or colons == expected + _text_colons(typed)
        ):
            return
        # A key given twice or a null member: unfold, and read the chunk line by line.
        self.active = before
        for record, _ in created:
            del seen[record.id]
        raise _NotTaken

    def _fold_typed(self, typed: list[_Create | _Delete | _Dispatch]) -> int:
        """Check and fold typed changes; the ``:`` bytes of their members (and instants).

        A created record stays typed in ``active``, with its ``scheduledAt`` in epoch ms, until
        :meth:`_settle` (or a dispatch) builds its :class:`Record`. The instants of the chunk's
        creates and ``acceptedAt`` are converted up front, all at once (:func:`_instants_ms`).
        """
        # Records, and the typed records created in this chunk until they are settled.
        active: dict[str, Any] = self.active
        seen = self.seen
        parse = self.instants.parse
        created = self.created.append
        classes = list(map(type, typed))
        creates = map(_SCHEDULE, compress(typed, map(is_, classes, repeat(_Create))))
        scheduled = iter(_instants_ms(list(map(_SCHEDULED_AT, creates)), parse)).__next__
        accepts = list(map(_ACCEPTED, compress(typed, map(is_, classes, repeat(_Dispatch)))))
        accepted_ms = iter(
            _instants_ms(list(compress(accepts, map(is_not, accepts, repeat(None)))), parse)
        ).__next__
        ws = JS_WHITESPACE
        # version, operation and id of every change; the rest is added per kind
        colons = 3 * len(typed)
        for change in typed:
            if type(change) is _Delete:
                target = change.id
                if active.pop(target, None) is None:  # an active id is a trimmed one
                    raise _Invalid
                continue
            if type(change) is _Dispatch:
                target = change.id
                current = active.get(target)
                if current is None:
                    raise _Invalid
                if change.acceptedAt is None:
                    if type(current) is Record:
                        if current.kind != "after" and current.kind != "at":
                            raise _Invalid
                    elif type(current[0]) is _EveryRecord:  # still typed
                        raise _Invalid
                    del active[target]
                    continue
                if type(current) is not Record:
                    current = _record(*current)
                at = accepted_ms()
                if at is None or current.kind != "every":
                    raise _Invalid
                colons += 3  # acceptedAt and an instant's 2
                # decide(current, at).next_scheduled_at of an every record
                # (rules.decide._decide_every), inlined: a canonical instant is representable.
                target_at = current.scheduled_at
                seconds = current.every_seconds
                if at < target_at or type(seconds) is not int or not 0 < seconds <= _MAX_EVERY_MS:
                    raise _Invalid  # decide refuses it: the reference reports it
                interval = seconds * 1000
                following = target_at + (at - target_at) // interval * interval + interval
                if following > MAX_MS:
                    del active[target]
                else:
                    active[target] = replace(current, scheduled_at=following)
                continue
            record = change.schedule  # type: ignore[union-attr]
            record_id, prompt, title = record.id, record.prompt, record.title
            if (
                record_id in seen
                or record_id.strip(ws) is not record_id
                or prompt.strip(ws) is not prompt
            ):
                raise _Invalid
            # schedule; id, kind, prompt, scheduledAt and its 2; the seconds but for at
            colons += 6 if type(record) is _AtRecord else 7
            if title is not None:
                if title.strip(ws) is not title or utf16_len(title) > TITLE_MAX_UNITS:
                    raise _Invalid
                colons += 1
            when = scheduled()
            if when is None:  # not a canonical instant of a real day
                raise _Invalid
            seen[record_id] = None
            entry = (record, when)
            active[record_id] = entry  # settled below
            created(entry)
        return colons

    def _settle(self) -> list[tuple[_TypedRecord, int]]:
        """Build the :class:`Record` of each record created in this chunk that is still
        active, and return them all."""
        active: dict[str, Any] = self.active
        created, self.created = self.created, []
        for entry in created:
            record_id = entry[0].id
            if active.get(record_id) is entry:
                active[record_id] = _record(*entry)
        return created

    # -- line by line -------------------------------------------------------------------------

    def _lines(self, body: bytes) -> None:
        """The chunk as the summary read and the fold take it, one line at a time."""
        start = self.start
        for raw in io.BytesIO(body):
            index = self.count
            self.count += 1
            taken = summary_line(raw)
            if taken is True:
                continue
            change: Change | None = taken
            if change is None:
                try:
                    item = _reference_line(raw, index + 2)
                except CorruptLogError:
                    raise _Invalid from None
                assert type(item) is LogEvent
                if item.type != SCHEDULE_CHANGE_TYPE or index < start:
                    continue
                try:
                    change = decode_event_change(item)
                except FoldError:
                    raise _Invalid from None
            elif index < start:
                continue
            self._apply(change)

    def _apply(self, change: Change) -> None:
        try:
            effect = plan(change, self.active, self.seen)
        except FoldError:
            raise _Invalid from None
        if effect.created:
            self.seen[effect.id] = None
        if effect.record is None:
            del self.active[effect.id]
        else:
            self.active[effect.id] = effect.record


def _instants_ms(texts: list[str], parse: _Parse) -> list[int | None]:
    """``map(parse, texts)``, all at once when every text has the shape of a canonical instant
    (24 ASCII bytes, digits and separators in place) and is a real date and time: one typed
    decode into datetimes, whose RFC 3339 check is then the one ``parse`` makes (year 0001 on,
    a real day of the month with February 29 in leap years only, hours to 23, minutes and
    seconds to 59), then epoch ms. Anything else is parsed one by one."""
    if not texts:
        return []
    body = '","'.join(texts)
    if body.isascii() and set(map(len, texts)) == _INSTANT_LENGTH:
        raw = body.encode()
        if raw.translate(_ZERO_DIGITS) == b'","'.join(repeat(_INSTANT_SHAPE, len(texts))):
            try:
                stamps = _decode_datetimes(b'["' + raw + b'"]')
            except msgspec.DecodeError:
                pass  # not a real date or time: parse says which
            else:
                return list(map(floordiv, map(sub, stamps, repeat(_EPOCH)), repeat(_MILLISECOND)))
    return list(map(parse, texts))


def _record(record: _TypedRecord, when: int) -> Record:
    """The :class:`Record` of a typed record (as ``decode_change_line`` builds it), whose
    ``scheduledAt`` is ``when`` in epoch ms."""
    if type(record) is _AfterRecord:
        return Record(
            id=record.id,
            kind="after",
            prompt=record.prompt,
            scheduled_at=when,
            title=record.title,
            after_seconds=record.afterSeconds,
        )
    if type(record) is _EveryRecord:
        return Record(
            id=record.id,
            kind="every",
            prompt=record.prompt,
            scheduled_at=when,
            title=record.title,
            every_seconds=record.everySeconds,
        )
    return Record(
        id=record.id, kind="at", prompt=record.prompt, scheduled_at=when, title=record.title
    )


def _text_colons(typed: list[_Create | _Delete | _Dispatch]) -> int:
    """The ``:`` inside the ids, prompts and titles of typed changes."""
    colons = 0
    for change in typed:
        if type(change) is _Create:
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
        raise _NotTaken from None


def _check_untyped(payloads: list[msgspec.Raw]) -> int:
    """The ``:`` bytes of payloads the engine does not read, which must be UTF-8 and must not
    hold nesting deeper than 200 levels (Python's decoder may not reach it) or an integer of
    4300 digits (``int()`` refuses it). Typed payloads are UTF-8 and shallow by their type."""
    joined = b"\n".join(payloads)  # one a line: a payload holds no newline
    if not joined.isascii():
        _check_utf8(joined)
    longest = max(map(len, payloads))
    if longest > _SHORT_DATA:  # a shorter one cannot nest deeper than 190 levels
        openers = joined.translate(None, _NOT_OPENERS)  # each payload's '[' and '{'
        if max(map(len, openers.split(b"\n"))) > _MAX_OPENERS:
            raise _NotTaken
        if longest > _LONG_DATA:
            for data in payloads:
                if len(data) > _LONG_DATA and _LONG_INT.search(bytes(data)) is not None:
                    raise _NotTaken
    return joined.count(b":")


def _check_followups(followups: list[msgspec.Raw]) -> int:
    """Follow-up payloads in the shape writers emit, no key given twice nor a member null:
    their ':' bytes, which are their members' and their text's."""
    joined = b"[" + b",".join(followups) + b"]"
    if b"\\u003" in joined:
        raise _NotTaken
    try:
        decoded = _decode_followups(joined)
    except (msgspec.DecodeError, RecursionError):
        raise _NotTaken from None
    colons = _followup_colons(decoded)
    if colons != joined.count(b":"):
        raise _NotTaken
    return colons


def _followup_colons(decoded: list[_Followup]) -> int:
    """The ``:`` bytes of follow-up payloads: their members' and their text's."""
    # The six data members, source's kind (and plugin), two per reminder, and their text.
    plugins = list(map(_PLUGIN, decoded))
    members = list(chain.from_iterable(map(_REMINDERS, decoded)))
    text = "".join(chain.from_iterable(map(_FOLLOWUP_TEXT, decoded)))
    text += "".join(chain.from_iterable(map(_MEMBER_TEXT, members)))
    text += "".join(filter(None, plugins))
    return 8 * len(decoded) - plugins.count(None) + 2 * len(members) + text.count(":")
