"""The fast path of ``schedlog validate`` and ``replay``: read and fold a whole log a chunk of
lines at a time.

A documented internal module: :mod:`schedlog.cli._logs` (``validate``, ``replay``, ``repair``)
and the open of a log for append (:mod:`schedlog.invariant.fastopen`) use it; nothing outside
schedlog should. It is the fast path of read + fold, and
:mod:`schedlog.eventlog` and :mod:`schedlog.fold` point here. Its typed shapes are
:mod:`schedlog.eventlog.wire`. The reference is the summary read
(:func:`schedlog.eventlog.reader.read_log` with ``keep_events=False``, whose line decoder is
``reader.reference_line``) followed by :func:`schedlog.invariant.logs.validate_log`. That pair
gives every verdict and every diagnostic. :func:`fast_check` never gives one: it returns the
reference's result for a log it is sure is valid, and None for anything else, after which the
caller runs the reference. ``tests/invariant/test_fastcheck.py`` proves the two equal on random,
mutated and broken logs.

How a chunk of complete lines is taken (``_Chunk.take``), all or nothing:

* the chunk is split at every ``\\n`` and each line is decoded on its own, by one
  ``msgspec`` decoder call per line (all the lines in one ``map``), into an envelope of exactly
  ``type`` and ``data`` (``data`` kept raw); see "Lines" below for why the fast path then sees
  exactly the lines the reference sees;
* the payloads of the ``schedule/change`` lines are decoded in one more call into typed
  changes, and those of the ``message/followup`` lines into the shape writers emit; integer
  ranges and ``version`` 1 are checked by the decoder;
* the checks :mod:`schedlog.eventlog.fastline` makes line by line are made for the whole
  chunk: the chunk is UTF-8, no line nests deeper than 200 levels (the reference refuses
  about 985, docs/protocol.md#limits), no integer has 4300 digits (the reference refuses
  4,301), and no key is given twice (where it matters) nor a member ``null``, by counting
  ``:`` bytes. Outside strings a ``:`` only ever ends a key, so each line has at least the
  count its decoded values account for (2 for the envelope, every member of a typed payload,
  the ``:`` inside typed strings and all of an untyped payload's); when the chunk's total is
  that sum, every line has exactly its count. ``\\u003`` (an escaped ``:``, among others) in a
  typed payload sends the chunk to the line-by-line path;
* the changes are checked (trimmed ids and prompts, titles, canonical instants) and folded.

Lines. The fast path must see the lines the reference sees: the reference splits the log at
every ``\\n`` byte and nowhere else (``\\r`` is only JSON whitespace) and decodes each line
alone, as one JSON text. A chunk once became one JSON array, every ``\\n`` turned into ``,``;
then two events on one line (``{..},{..}``) were two elements and one event over two lines
(``{"a":1`` / ``"b":2}``) one, and both passed (issue 19). No rewriting of the line ends into
JSON separators can be made safe: whatever bytes replace a ``\\n``, a line can hold the same
bytes between two values (a joined line), and the replacement can fall inside a value of a
line broken in two (inside a string, or between the elements of a nested array or object:
``\\n`` -> ``],[`` with one-element arrays still takes ``{..}],[{..}`` as two lines and
``[[1`` / ``2]]`` as one), so one of each in a chunk even keeps the count of values equal to
the count of lines. So each line is decoded alone: ``msgspec`` decodes exactly one JSON value
per call and refuses anything after it but JSON whitespace (space, tab, ``\\r``, ``\\n``: the
same four bytes Python's ``json`` skips), which covers the shapes to review:

* two values on a line, with or without a separator (``,``, ``],[``, a space, a lone
  ``\\r``), and a line in brackets (``[{..}]``, an array, not an envelope): refused;
* a value over two lines, broken anywhere (in a string, an array, an object, at a ``[`` or
  ``]`` at a line edge): each half is an incomplete value, refused;
* an empty or whitespace-only line (``""``, spaces, tabs, a lone ``\\r``): no value, refused;
* a NUL: outside strings not JSON, inside one a control character, refused as the
  reference refuses it (so are a raw ``\\r`` and every other control character in a string);
* a ``\\r`` before the ``\\n`` (CRLF), or spaces around the value: whitespace for both.

The payloads a line decoded into (``msgspec.Raw``, each a whole JSON value the decoder checked)
are then joined with ``,`` into arrays (the changes', the follow-ups'): a whole value ends where
it ends whatever follows it, so such an array has exactly one element per payload.
``tests/invariant/test_fastcheck_lines.py`` holds every shape above and reframes valid logs at
random (line ends turned into separators, lines broken in two, both in one chunk).

A chunk that is not taken is read line by line, as the summary read reads it (``fastline``
first, the reference decoder for the rest), and folded the same way; a chunk whose count of
``:`` does not add up is first unfolded. A corrupt line, a change the fold refuses, a line
over the length limit or a log without a complete header ends the fast path (None).

A long log may be taken in two parts at once (``split``, which the CLI runs in a child process:
:mod:`schedlog.cli._split`). The second part, from the first line end past the middle, is a
*tail*: folded from an empty state, it keeps the deletes and dispatches of records it did not
create, in order, instead of refusing them, and gives up (its result is empty) where it would
read a chunk line by line. :meth:`_Chunk.join` then applies those to the first part's fold and
adds the tail's records and ids after its own, refusing the log as the whole fold would (an id
created in both parts, a change of a record the first part does not hold). When the tail gives
no result, or the first part does not reach ``seedLength``, the first part's fold reads the
rest itself. ``tests/invariant/test_fastcheck_split.py`` proves the result the same wherever
the log is split.
"""

from __future__ import annotations

import codecs
import io
import os
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from functools import partial, reduce
from itertools import chain, compress, repeat
from operator import attrgetter, floordiv, is_, is_not, not_, or_, sub
from typing import Any, BinaryIO, Final

import msgspec
from msgspec.structs import replace

from schedlog.eventlog import wire
from schedlog.eventlog.changes import Change
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE, LogEvent
from schedlog.eventlog.fastline import summary_line
from schedlog.eventlog.header import Header
from schedlog.eventlog.reader import MAX_LINE_BYTES, LogContents, reference_line
from schedlog.fold.state import FoldState
from schedlog.fold.steps import FoldError, decode_event_change, plan
from schedlog.rules.instants import MAX_MS, CanonicalInstantParser
from schedlog.rules.record import Record
from schedlog.rules.records import typed_texts_ok
from schedlog.rules.text import MAX_SAFE_INT

__all__ = ["Kept", "fast_check", "fast_check_bytes", "fast_check_fd", "single_line_tag"]

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
_ID = attrgetter("id")
_PROMPT = attrgetter("prompt")
_TITLE = attrgetter("title")


#: A single-pass decoder is built for at most this many event types.
_MAX_KINDS: Final = 32
_TYPED_LINES: Final = frozenset({wire.ChangeLine, wire.FollowupLine})


def _line_decoder(kinds: frozenset[str]) -> Callable[[bytes], Any]:
    """The decoder of one line of the given types, tagged by its ``type``: a change or
    follow-up decoded typed, any other payload kept raw."""
    lines: list[type] = [wire.ChangeLine, wire.FollowupLine]
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
    decode: Callable[[bytes], Any] = msgspec.json.Decoder(union).decode
    return decode


_decode_envelope = msgspec.json.Decoder(wire.Envelope).decode
_decode_changes = msgspec.json.Decoder(list[wire.ChangeData]).decode
_decode_followups = msgspec.json.Decoder(list[wire.FollowupData]).decode
_decode_datetimes = msgspec.json.Decoder(list[datetime]).decode
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND: Final = timedelta(milliseconds=1)


class _Invalid(Exception):
    """The log is not valid, or not surely: the reference decides."""


class _NotTaken(Exception):
    """This chunk goes line by line."""


def _each_line(decode: Callable[[bytes], Any], rows: list[bytes]) -> list[Any]:
    """Every line of a chunk decoded alone, one call each (module docstring, "Lines")."""
    try:
        return list(map(decode, rows))
    except (msgspec.DecodeError, RecursionError):
        raise _NotTaken from None


#: The work of a tail fold, run elsewhere: ``split(work)`` starts ``work`` (in another process)
#: and returns what waits for its result, None when it gave none.
Split = Callable[[Callable[[], bytes]], Callable[[], "bytes | None"]]
#: A log at least this long is folded in two parts when a ``split`` is given.
_MIN_SPLIT: Final = 1 << 23
_SPLIT_LOOK: Final = 1 << 14


def fast_check(
    path: str | os.PathLike[str], *, split: Split | None = None
) -> tuple[LogContents, FoldState] | None:
    """The summary read of the log at ``path`` and the fold of its owned suffix, when the log
    is valid and this fast path is sure of it; None otherwise (the reference decides).
    ``OSError`` propagates.

    With ``split``, a long log's second half is checked and folded by ``split``'s work (which
    the CLI runs in a child process, on the other core) while this one takes the first half;
    the two folds are then joined (:meth:`_Chunk.join`). Whatever the work gives, or if it gives
    nothing, the result is the same as without it."""
    with open(path, "rb") as stream:
        return _check(stream, os.fspath(path), _CHUNK, split, _MIN_SPLIT)


#: A chunk of event lines the check took, kept for the caller (``keep``): its lines in order
#: (each with its ``\n``, or each without it when the chunk held a ``\r``), and how they were
#: decoded, one item a line: :class:`~schedlog.eventlog.wire.Envelope` items; or the
#: single-pass decoder's, whose class is tagged by the event type
#: (:func:`single_line_tag`) and whose ``data`` is raw unless the line is a
#: :class:`~schedlog.eventlog.wire.ChangeLine` or :class:`~schedlog.eventlog.wire.FollowupLine`;
#: or None, a chunk read line by line.
Kept = tuple[list[bytes], "list[Any] | None"]


def single_line_tag(cls: type) -> str:
    """The event type of a line the single-pass decoder gave as an item of class ``cls``."""
    tag: str = cls.__struct_config__.tag  # type: ignore[attr-defined]
    return tag


def fast_check_fd(
    fd: int, name: str, *, split: Split | None = None, keep: list[Kept] | None = None
) -> tuple[LogContents, FoldState] | None:
    """:func:`fast_check` of the open file ``fd`` (named ``name`` in messages), read from its
    start through that descriptor; the descriptor stays open. With ``keep`` (an empty list),
    the lines are kept there, a :data:`Kept` a chunk, when the result is not None."""
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb", closefd=False) as stream:
        return _check(stream, name, _CHUNK, split, _MIN_SPLIT, keep)


def fast_check_bytes(
    data: bytes,
    *,
    file: str = "<bytes>",
    chunk: int = _CHUNK,
    split: Split | None = None,
    min_split: int = _MIN_SPLIT,
    keep: list[Kept] | None = None,
) -> tuple[LogContents, FoldState] | None:
    """:func:`fast_check` of a log in memory, read ``chunk`` bytes at a time (for tests)."""
    return _check(io.BytesIO(data), file, chunk, split, min_split, keep)


def _check(
    stream: BinaryIO,
    file: str,
    size: int,
    split: Split | None,
    min_split: int,
    keep: list[Kept] | None = None,
) -> tuple[LogContents, FoldState] | None:
    read = stream.read
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
        header = reference_line(buf[:header_size], 1)
    except CorruptLogError:
        return None
    assert type(header) is Header
    fold = _Chunk(header.seed_length)
    fold.kept = keep
    body = buf[header_size:]
    tail: Callable[[], bytes | None] | None = None
    middle = _middle(stream, header_size, min_split) if split is not None else None
    try:
        if middle is not None:
            assert split is not None
            tail = split(partial(_tail_work, _reader_at(stream, middle), size))
            body = body[: middle - header_size]
            stream.seek(header_size + len(body))  # where the first read ended, or the middle
            read = partial(_read_until, stream, middle)
        carry, complete = _fold_stream(fold, read, size, body)
        if tail is not None:
            assert middle is not None and not carry and complete == middle - header_size
            waiting, tail = tail, None
            joined = fold.join(waiting())
            if joined is None:  # no result: fold the second part here
                stream.seek(middle)
                joined = _fold_stream(fold, stream.read, size, b"")
            carry, rest = joined
            complete += rest
    except (_Invalid, _TooLong):
        return None
    finally:
        if tail is not None:
            tail()  # the first part ended the fast path: the second's result is not needed
    if fold.count < fold.start:
        return None  # seedLength beyond the log: the reference reports it
    contents = LogContents(
        file=file,
        header=header,
        events=(),
        event_count=fold.count,
        events_kept=False,
        torn_tail=carry,
        complete_size=header_size + complete,
        header_size=header_size,
        corruption=None,
    )
    return contents, FoldState.from_index(fold.active, chain(fold.seen, fold.later_seen))


class _TooLong(Exception):
    """A line over the length limit: the reference reports it."""


def _fold_stream(
    fold: _Chunk, read: Callable[[int], bytes], size: int, data: bytes
) -> tuple[bytes, int]:
    """Take every complete line of ``data`` and what ``read`` gives after it into ``fold``:
    the torn tail, and the size of the complete lines."""
    carry = b""  # the start of a line read before
    complete = 0
    while True:
        last = data.rfind(b"\n") + 1
        if last:
            if len(carry) + data.find(b"\n") >= _MAX_RAW:  # only this line can be so long
                raise _TooLong
            fold.take(carry, memoryview(data)[:last])
            complete += len(carry) + last
            carry = data[last:]
        else:
            carry += data
            if len(carry) > _MAX_RAW:
                raise _TooLong
        data = read(size)
        if not data:
            return carry, complete


def _middle(stream: BinaryIO, start: int, min_split: int) -> int | None:
    """Where a log whose events start at ``start`` is split in two: just after the first line
    end past the middle of its events; None for a short log or a long line there. The stream's
    position is left as it was."""
    position = stream.tell()
    try:
        end = stream.seek(0, os.SEEK_END)
        if end - start < max(min_split, 2):
            return None
        middle = stream.seek(start + (end - start) // 2)
        while (piece := stream.read(_SPLIT_LOOK)) and (newline := piece.find(b"\n")) < 0:
            middle += len(piece)
            if middle - start - (end - start) // 2 > _MAX_RAW:
                return None
        if not piece or middle + newline + 1 >= end:
            return None
        return middle + newline + 1
    finally:
        stream.seek(position)


def _read_until(stream: BinaryIO, end: int, size: int) -> bytes:
    """``stream.read(size)``, up to ``end``."""
    return stream.read(min(size, end - stream.tell()))


def _reader_at(stream: BinaryIO, offset: int) -> Callable[[int], bytes]:
    """A reader of ``stream`` from ``offset`` on that leaves the stream's position alone: a
    child process shares it with its parent."""
    if isinstance(stream, io.BytesIO):
        copy = io.BytesIO(stream.getvalue())
        copy.seek(offset)
        return copy.read
    fd = stream.fileno()
    position = offset

    def read(size: int) -> bytes:
        nonlocal position
        data = os.pread(fd, size, position)
        position += len(data)
        return data

    return read


#: What a tail fold gives: events, size of its complete lines, torn tail, created ids, the
#: records still active, the changes of records it did not create (:attr:`_Chunk.foreign`).
_TailResult = tuple[int, int, bytes, list[str], list[Record], list[tuple[int, str, int]]]
_encode_tail = msgspec.msgpack.Encoder().encode
_decode_tail = msgspec.msgpack.Decoder(_TailResult).decode


def _tail_work(read: Callable[[int], bytes], size: int) -> bytes:
    """Check and fold what ``read`` gives, the second part of a log, as a tail (all of it
    owned, the changes of records it did not create left to :meth:`_Chunk.join`): the encoded
    result, or nothing when it is not sure."""
    fold = _Chunk(0, tail=True)
    try:
        carry, complete = _fold_stream(fold, read, size, b"")
    except (_Invalid, _TooLong):
        return b""
    assert fold.foreign is not None
    return _encode_tail(
        (fold.count, complete, carry, list(fold.seen), list(fold.active.values()), fold.foreign)
    )


class _Chunk:
    """The fold so far, and how the next chunk of complete lines is taken."""

    def __init__(self, start: int, *, tail: bool = False) -> None:
        self.start = start  # the first owned event index (seedLength)
        # A tail (the second part of a split log) keeps the deletes and dispatches of records
        # it did not create, in order: (_DELETE, id, 0), (_ONE_SHOT, id, 0), (_EVERY, id, ms).
        self.foreign: list[tuple[int, str, int]] | None = [] if tail else None
        self.later_seen: dict[str, None] = {}  # the ids a joined tail created, after ``seen``
        self.count = 0  # events so far
        self.active: dict[str, Record] = {}
        self.seen: dict[str, None] = {}
        self.instants = CanonicalInstantParser()
        self.kinds: frozenset[str] = frozenset()  # the event types seen so far
        self.decode_line: Callable[[bytes], Any] | None = None  # for those types
        #: With ``keep``: every chunk taken, as (its lines, how they were decoded), see
        #: :data:`Kept`.
        self.kept: list[Kept] | None = None
        self._decoded: list[Any] = []  # the lines of the chunk just taken, decoded

    def take(self, carry: bytes, lines: memoryview) -> None:
        """Check and fold the complete lines ``carry + lines`` (each ends with ``\\n``): in one
        pass when every type is one seen before, else in two, else line by line."""
        body = b"".join((carry, lines))
        kept = self.kept
        if self.count >= self.start:
            # Each line apart, as the reference reads it: split at every "\n" and nowhere else
            # (without a "\r", splitlines splits there too, and keeps the "\n" a kept line needs).
            if kept is not None and b"\r" not in body:
                rows = body.splitlines(keepends=True)
            else:
                rows = body.split(b"\n")
                rows.pop()  # after the last "\n"
            for way in (self._single, self._fast):
                try:
                    self.count += way(body, rows)
                except _NotTaken:
                    continue
                if kept is not None:
                    kept.append((rows, self._decoded))
                return
        if self.foreign is not None:
            raise _Invalid  # a tail knows too little to fold line by line: the head does it
        self._lines(body)
        if kept is not None:
            kept.append((body.split(b"\n")[:-1], None))

    def _single(self, body: bytes, rows: list[bytes]) -> int:
        """:meth:`_fast` in one decoding pass, with the types seen in earlier chunks."""
        decode = self.decode_line
        if decode is None:
            if not self.kinds or len(self.kinds) > _MAX_KINDS:
                raise _NotTaken
            decode = self.decode_line = _line_decoder(self.kinds)
        lines = self._decoded = _each_line(decode, rows)
        count = len(lines)
        classes = list(map(type, lines))
        _check_escapes(body, rows, list(map(_TYPED_LINES.__contains__, classes)))
        # What is left after the envelopes' 2 each, the untyped payloads' and the follow-ups'
        # must be the changes' own.
        colons = body.count(b":") - 2 * count
        others = list(compress(lines, map(not_, map(_TYPED_LINES.__contains__, classes))))
        if others:
            colons -= _check_untyped(list(map(_PAYLOAD, others)))
        if wire.FollowupLine in classes:
            followups = compress(lines, map(is_, classes, repeat(wire.FollowupLine)))
            colons -= _followup_colons(list(map(_PAYLOAD, followups)))
        if wire.ChangeLine not in classes:
            if colons:
                raise _NotTaken
            return count
        typed = list(map(_PAYLOAD, compress(lines, map(is_, classes, repeat(wire.ChangeLine)))))
        self._fold_chunk(typed, colons, None)
        return count

    # -- the chunk at once ------------------------------------------------------------------

    def _fast(self, body: bytes, rows: list[bytes]) -> int:
        envelopes = self._decoded = _each_line(_decode_envelope, rows)
        lines = len(envelopes)
        kinds = list(map(_KIND, envelopes))
        payloads = list(map(_PAYLOAD, envelopes))
        if "" in kinds:
            raise _NotTaken
        if not self.kinds.issuperset(kinds):
            self.kinds, self.decode_line = self.kinds.union(kinds), None
        # The ':' of the payloads, if every envelope has exactly its two; each part is taken
        # off below, and what is left must be nothing.
        colons = body.count(b":") - 2 * lines
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
        changed = compress(payloads, map(_CHANGE.__eq__, kinds))
        typed, counted = _decode_joined(_decode_changes, changed)
        self._fold_chunk(typed, colons, counted)
        return lines

    def _fold_chunk(self, typed: list[wire.ChangeData], colons: int, counted: int | None) -> None:
        """Check and fold a chunk's changes, whose payloads hold ``colons`` ``:`` bytes by the
        count of the chunk, and ``counted`` by the count of their own bytes (None: unknown).
        When that is more than theirs, the fold is undone (the chunk goes line by line)."""
        before = dict(self.active)
        foreign = self.foreign
        mark = len(foreign) if foreign is not None else 0
        classes = list(map(type, typed))
        records = list(map(_SCHEDULE, compress(typed, map(is_, classes, repeat(wire.CreateData)))))
        ids = list(map(_ID, records))
        expected = 3 * len(typed)  # version, operation and id of every change
        entries: list[tuple[wire.WireRecord, int]] = []
        if records:
            expected += self._check_creates(records, ids)
            entries = list(zip(records, self._create_instants(records), strict=True))
        expected += self._fold_typed(typed, classes, iter(zip(ids, entries, strict=True)).__next__)
        self._settle(ids, entries)
        if (counted is None or colons == counted) and (
            colons == expected or colons == expected + _text_colons(typed)
        ):
            return
        # A key given twice or a null member: unfold, and read the chunk line by line.
        self.active = before
        seen = self.seen
        for record_id in ids:
            del seen[record_id]
        if foreign is not None:
            del foreign[mark:]
        raise _NotTaken

    def _check_creates(self, records: list[wire.WireRecord], ids: list[str]) -> int:
        """Check the records a chunk creates, all at once: ids never created before (in the
        log or the chunk), ids, prompts and titles trimmed, titles not too long; the ids are
        then seen. The ``:`` bytes of their members (and of their instants)."""
        seen = self.seen
        fresh = dict.fromkeys(ids)
        if len(fresh) != len(ids) or not seen.keys().isdisjoint(fresh):
            raise _Invalid
        titles = list(filter(None, map(_TITLE, records)))  # a title is never empty
        if not typed_texts_ok(ids, list(map(_PROMPT, records)), titles):
            raise _Invalid
        seen.update(fresh)
        # schedule; id, kind, prompt, scheduledAt and its 2; the seconds but for at; title
        ats = list(map(type, records)).count(wire.AtRecord)
        return 7 * len(records) - ats + len(titles)

    def _create_instants(self, records: list[wire.WireRecord]) -> list[int]:
        """The ``scheduledAt`` of the records in epoch ms, each a canonical instant."""
        whens = _instants_ms(list(map(_SCHEDULED_AT, records)), self.instants.parse)
        if None in whens:  # not a canonical instant of a real day
            raise _Invalid
        return whens  # type: ignore[return-value]

    def _fold_typed(
        self,
        typed: list[wire.ChangeData],
        classes: list[type],
        next_create: Callable[[], tuple[str, tuple[wire.WireRecord, int]]],
    ) -> int:
        """Fold typed changes in order, whose creates :meth:`_check_creates` checked (each
        ``next_create()`` is the next one's id and entry); the ``:`` bytes of the dispatches'
        ``acceptedAt``.

        A created record stays an entry (the typed record and its ``scheduledAt`` in epoch ms)
        in ``active`` until :meth:`_settle` (or a dispatch) builds its :class:`Record`. The
        ``acceptedAt`` instants are converted up front, all at once (:func:`_instants_ms`).
        """
        # Records, and the entries created in this chunk until they are settled.
        active: dict[str, Any] = self.active
        pop = active.pop
        accepts = list(
            map(_ACCEPTED, compress(typed, map(is_, classes, repeat(wire.DispatchData))))
        )
        stamps = list(compress(accepts, map(is_not, accepts, repeat(None))))
        accepted_ms = iter(_instants_ms(stamps, self.instants.parse)).__next__
        for change, kind in zip(typed, classes, strict=True):
            if kind is wire.DeleteData:
                if pop(change.id, None) is None:  # type: ignore[union-attr]
                    self._foreign(_DELETE, change.id, 0)  # type: ignore[union-attr]
            elif kind is wire.CreateData:
                record_id, entry = next_create()
                active[record_id] = entry  # settled below
            else:
                target = change.id  # type: ignore[union-attr]
                current = active.get(target)
                if current is None:
                    if change.acceptedAt is None:  # type: ignore[union-attr]
                        self._foreign(_ONE_SHOT, target, 0)
                    elif (at := accepted_ms()) is None:
                        raise _Invalid
                    else:
                        self._foreign(_EVERY, target, at)
                    continue
                if change.acceptedAt is None:  # type: ignore[union-attr]
                    if type(current) is Record:
                        if current.kind != "after" and current.kind != "at":
                            raise _Invalid
                    elif type(current[0]) is wire.EveryRecord:  # still typed
                        raise _Invalid
                    del active[target]
                    continue
                if type(current) is not Record:
                    current = wire.record_of(*current)
                at = accepted_ms()
                if at is None:
                    raise _Invalid
                _dispatch_every(active, target, current, at)
        return 3 * len(stamps)  # acceptedAt and an instant's 2

    def _foreign(self, code: int, target: str, at: int) -> None:
        """A delete or dispatch of ``target``, which is not active: in a tail, of a record
        the head may hold (not one created in this tail); the log is invalid otherwise."""
        if self.foreign is None or target in self.seen:
            raise _Invalid
        self.foreign.append((code, target, at))

    def join(self, result: bytes | None) -> tuple[bytes, int] | None:
        """Fold a tail's result (what :func:`_tail_work` gave for the rest of the log) into
        this fold of all lines before it: the tail's torn tail and size of complete lines, or
        None when there is no result to join (the caller folds the rest itself)."""
        if not result or self.count < self.start:  # or the tail's lines are not all owned
            return None
        try:
            count, complete, carry, seen_ids, records, foreign = _decode_tail(result)
        except msgspec.DecodeError:
            return None
        active: dict[str, Any] = self.active
        later = dict.fromkeys(seen_ids)
        if not self.seen.keys().isdisjoint(later):
            raise _Invalid
        for code, target, at in foreign:
            current = active.get(target)
            if current is None or (code == _ONE_SHOT and not current.is_one_shot):
                raise _Invalid
            if code == _EVERY:
                _dispatch_every(active, target, current, at)
            else:
                del active[target]
        self.later_seen = later
        active.update(zip(map(_ID, records), records, strict=True))
        self.count += count
        return carry, complete

    def _settle(self, ids: list[str], entries: list[tuple[wire.WireRecord, int]]) -> None:
        """Build the :class:`Record` of each entry created in this chunk that is still
        active."""
        active: dict[str, Any] = self.active
        still = map(is_, map(active.get, ids), entries)
        for record_id, entry in compress(zip(ids, entries, strict=True), still):
            active[record_id] = wire.record_of(*entry)

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
                    item = reference_line(raw, index + 2)
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


_DELETE: Final = 0
_ONE_SHOT: Final = 1
_EVERY: Final = 2


def _dispatch_every(active: dict[str, Any], target: str, current: Record, at: int) -> None:
    """Fold the dispatch of the every record ``current`` accepted at ``at`` (epoch ms)."""
    if current.kind != "every":
        raise _Invalid
    # decide(current, at).next_scheduled_at of an every record (rules.decide._decide_every),
    # inlined: a canonical instant is representable.
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


def _text_colons(typed: list[wire.ChangeData]) -> int:
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
    decoded, counted = _decode_joined(_decode_followups, followups)
    colons = _followup_colons(decoded)
    if colons != counted:
        raise _NotTaken
    return colons


def _check_escapes(body: bytes, rows: list[bytes], typed: list[bool]) -> None:
    """No ``\\u003`` (an escaped ``:``, among others) in a typed line (a change or a follow-up):
    typed payloads have no raw bytes of their own whose ``:`` could be counted. Untyped lines
    may hold it: their payloads' ``:`` are counted as raw bytes on both sides. The few typed
    lines of a chat log are looked at one by one, a chunk of mostly typed lines at once."""
    if 4 * typed.count(True) < len(typed):
        found = any(map(bytes.__contains__, compress(rows, typed), repeat(b"\\u003")))
    else:
        found = b"\\u003" in body
    if found:
        raise _NotTaken


def _decode_joined(
    decode: Callable[[bytes], list[Any]], payloads: Iterable[msgspec.Raw]
) -> tuple[list[Any], int]:
    """Typed payloads (each a whole JSON value) decoded as one array, and the ``:`` bytes of
    their text; ``\\u003`` anywhere (an escaped ``:``, among others) is not taken."""
    joined = b"[" + b",".join(payloads) + b"]"
    if b"\\u003" in joined:
        raise _NotTaken
    try:
        return decode(joined), joined.count(b":")
    except (msgspec.DecodeError, RecursionError):
        raise _NotTaken from None


def _followup_colons(decoded: list[wire.FollowupData]) -> int:
    """The ``:`` bytes of follow-up payloads: their members' and their text's."""
    # The six data members, source's kind (and plugin), two per reminder, and their text.
    plugins = list(map(_PLUGIN, decoded))
    members = list(chain.from_iterable(map(_REMINDERS, decoded)))
    text = "".join(chain.from_iterable(map(_FOLLOWUP_TEXT, decoded)))
    text += "".join(chain.from_iterable(map(_MEMBER_TEXT, members)))
    text += "".join(filter(None, plugins))
    return 8 * len(decoded) - plugins.count(None) + 2 * len(members) + text.count(":")
