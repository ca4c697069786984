"""Reading a session log one line at a time (docs/protocol.md#session-log,
docs/protocol.md#torn-tail).

The reader never modifies the file. It stops at the first corrupt complete line and reports it
with the file, the 1-based line, the byte offset of the line and the JSON path of the bad
member. Bytes after the last ``\\n`` are a torn tail: kept apart, never decoded, never an error.

A line longer than :data:`MAX_LINE_BYTES` is corruption (a longer torn tail is still only a torn
tail); :func:`read_log` never holds such a line in memory whole.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO, Final, NamedTuple

import msgspec

from schedlog.eventlog.changes import Change
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import (
    FOLLOWUP_TYPE,
    SCHEDULE_CHANGE_TYPE,
    LogEvent,
    event_from_value,
)
from schedlog.eventlog.fastline import summary_line
from schedlog.eventlog.header import Header, decode_header
from schedlog.rules.text import js_dumps
from schedlog.strictjson import DuplicateKeyError, JSONSyntaxError, loads_strict

__all__ = [
    "MAX_LINE_BYTES",
    "ChangeAt",
    "LogContents",
    "LogCorruption",
    "decode_event_line",
    "parse_lines",
    "parse_log",
    "read_log",
    "reference_line",
]

#: The longest line of a session log, in bytes without its ``\\n`` (16 MiB). Writers refuse to
#: write a longer one; a reader reports a longer complete line as corruption (``line_too_long``).
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
_MAX_RAW: Final = MAX_LINE_BYTES + 1

_CHUNK: Final = 1 << 20

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class LogCorruption(msgspec.Struct, frozen=True, kw_only=True):
    """The first corrupt complete line of a log.

    ``offset`` is the byte offset of the line's first byte in the file; ``path`` is the JSON
    path of the bad member within the line; ``rule`` names the broken rule (``json``,
    ``empty_line``, ``event``, ``header``, ``line_too_long``).
    """

    file: str
    line: int
    offset: int
    path: str
    message: str
    rule: str

    def error(self) -> CorruptLogError:
        """The corruption as a raisable error."""
        return CorruptLogError(
            self.message,
            rule=self.rule,
            path=self.path,
            file=self.file,
            line=self.line,
            offset=self.offset,
            index=None if self.line == 1 else self.line - 2,
        )


class ChangeAt(NamedTuple):
    """A ``schedule/change`` event with its event index and the byte offset of its line.

    A summary read decodes the lines writers emit straight into their change (``change``;
    ``event`` is then None); any other line keeps its ``event``, for the fold to decode.
    """

    event_index: int
    offset: int
    event: LogEvent | None
    change: Change | None = None


class LogContents(msgspec.Struct, frozen=True, kw_only=True):
    """What a read found.

    * ``header``: ``None`` for a new log (0 bytes, or a torn tail only) or a corrupt line 1;
    * ``events``: the events before the first corruption, in order (event index = position);
      empty when the read did not keep them (``events_kept`` False, see :func:`read_log`);
    * ``event_count``: the number of events before the first corruption, kept or not;
    * ``events_kept``: False for a summary read (``keep_events=False``);
    * ``changes``: a summary read's ``schedule/change`` events (index, offset, event), in
      order; empty when the events are kept (they are all in ``events`` then);
    * ``torn_tail``: the bytes after the last ``\\n`` (empty when the file ends with ``\\n``);
    * ``complete_size``: the byte length of the complete lines, where the torn tail starts;
    * ``header_size``: the byte length of line 1 (0 for a new log);
    * ``corruption``: the first corrupt complete line, or ``None``.
    """

    file: str
    header: Header | None
    events: Sequence[LogEvent]
    event_count: int
    events_kept: bool = True
    changes: tuple[ChangeAt, ...] = ()
    torn_tail: bytes
    complete_size: int
    header_size: int
    corruption: LogCorruption | None

    @property
    def is_new(self) -> bool:
        """A log with no complete line: a writer starts it by writing the header."""
        return self.complete_size == 0

    @property
    def ok(self) -> bool:
        return self.corruption is None

    def offset_of(self, index: int) -> int:
        """The byte offset of event ``index``'s line (O(index) when the events are kept:
        offsets are not stored; a summary read knows the offsets of its changes)."""
        if not self.events_kept:
            for change in self.changes:
                if change.event_index == index:
                    return change.offset
            raise ValueError(f"event {index} is not a schedule/change of this summary read")
        return self.header_size + sum(len(e.raw) for e in self.events[:index])


def read_log(
    path: str | os.PathLike[str], *, keep_events: bool = True, fast: bool = True
) -> LogContents:
    """Read the session log at ``path`` (read only), in chunks. ``OSError`` propagates.

    Memory for the file's bytes stays proportional to the longest line; the events are kept.
    ``keep_events=False`` is a summary read for checks that only fold (validate, replay):
    every line is checked exactly the same way, but only the ``schedule/change`` events are
    kept (in ``changes``, with their index and offset) and ``events`` stays empty.
    ``fast=False`` reads every line with the reference decoder alone (same result, slower).

    The read leaves the garbage collector alone; a command-line tool that reads a long log
    may pause it around the read (the values built here hold no reference cycles).
    """
    with open(path, "rb") as stream:
        return parse_lines(
            _bounded_lines(stream), file=os.fspath(path), keep_events=keep_events, fast=fast
        )


def read_log_fd(fd: int, name: str, *, keep_events: bool = True) -> LogContents:
    """:func:`read_log` of the open file ``fd`` (named ``name`` in messages), from its start;
    the descriptor stays open. A caller that opened the file safely reads that very file."""
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb", closefd=False) as stream:
        return parse_lines(_bounded_lines(stream), file=name, keep_events=keep_events)


class _Overlong(bytes):
    """Stands for a line longer than :data:`MAX_LINE_BYTES` without holding it: its content is
    only its ``\\n`` (none for a torn tail), its ``len()`` the line's real length."""

    size: int

    def __len__(self) -> int:
        return self.size


def _overlong(size: int, end: bytes) -> _Overlong:
    line = _Overlong(end)
    line.size = size
    return line


def _bounded_lines(stream: BinaryIO) -> Iterator[bytes]:
    """The lines of ``stream`` (``\\n`` kept), read in chunks of 1 MiB; a line over the limit
    is dropped as it is read and stood for by an :class:`_Overlong`."""
    read = stream.read
    parts: list[bytes] = []  # the start of a line that goes on in the next chunk
    pending = 0  # the length of that line so far
    skipping = False  # that line is over the limit: only its length is kept
    while chunk := read(_CHUNK):
        start = 0
        if pending:
            newline = chunk.find(b"\n")
            if newline < 0:
                pending += len(chunk)
                if not skipping:
                    parts.append(chunk)
                    if pending > _MAX_RAW:
                        skipping = True
                        parts.clear()
                continue
            start = newline + 1
            pending += start
            if skipping or pending > _MAX_RAW:
                yield _overlong(pending, b"\n")
            else:
                parts.append(chunk[:start])
                yield b"".join(parts)
            parts.clear()
            pending, skipping = 0, False
        last = chunk.rfind(b"\n") + 1
        if last > start:
            yield from io.BytesIO(chunk[start:last] if start else chunk[:last])
            start = last
        if start < len(chunk):
            tail = chunk[start:]
            parts.append(tail)
            pending = len(tail)
    if pending:
        yield _overlong(pending, b"") if skipping else b"".join(parts)


def parse_log(data: bytes, *, file: str = "<bytes>", fast: bool = True) -> LogContents:
    """Like :func:`read_log`, for a log already in memory."""
    return parse_lines(io.BytesIO(data), file=file, fast=fast)


def _corruption(file: str, line: int, offset: int, exc: CorruptLogError) -> LogCorruption:
    return LogCorruption(
        file=file, line=line, offset=offset, path=exc.path, message=exc.message, rule=exc.rule
    )


# --- the reference decoder of one line ---------------------------------------------------------


def reference_line(raw: bytes, line_no: int) -> Header | LogEvent:
    """The readable strict decoder of complete line ``line_no`` (``raw`` keeps its ``\\n``):
    the header for line 1, else the event. Raises :class:`CorruptLogError`.

    A documented internal name: the reference of every fast path
    (:mod:`schedlog.eventlog.fastline`, :mod:`schedlog.invariant.fastcheck`), which fall back
    to it for every line they are not sure of.

    The line must be strict JSON (:func:`schedlog.strictjson.loads_strict`: UTF-8, no NaN or
    Infinity token, no key given twice), with one exception: after line 1, a key given twice
    inside the ``data`` of an event whose type is neither ``schedule/change`` nor
    ``message/followup`` is allowed, and the last value counts, as with ``JSON.parse``
    (docs/decisions.md, "Duplicate keys in event payloads").
    """
    # A complete line ends with "\n"; a "\r" before it is JSON whitespace
    # (docs/protocol.md#session-log).
    body = raw[:-1]
    if not body:
        raise CorruptLogError("empty line", rule="empty_line")
    try:
        value = loads_strict(body)
    except DuplicateKeyError as exc:
        if line_no == 1:
            raise _invalid_json(exc) from None
        value = _with_payload_duplicates(body, exc)
    except JSONSyntaxError as exc:  # the only error loads_strict raises for bad input
        raise _invalid_json(exc) from None
    if line_no == 1:
        return decode_header(value)
    return event_from_value(value, raw=raw)


def _invalid_json(exc: JSONSyntaxError) -> CorruptLogError:
    return CorruptLogError(f"invalid JSON: {exc.message}", rule="json")


def _no_constant(token: str) -> Any:
    raise JSONSyntaxError(f"{token} is not valid JSON")


def _with_payload_duplicates(body: bytes, first: DuplicateKeyError) -> object:
    """``body`` (strict JSON but for a key given twice, ``first`` in decoding order) decoded
    with the last value of each repeated key, when every repeated key is inside the ``data``
    of an event of another type. Otherwise the first repeated key outside such a payload is
    the error; and when the rest of the line is not JSON either, ``first`` is."""
    repeated: list[tuple[dict[str, Any], str]] = []  # each object holding a key twice

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        again: str | None = None
        for key, value in items:
            if again is None and key in out:
                again = key
            out[key] = value
        if again is not None:
            repeated.append((out, again))
        return out

    import json  # this rare path only: no stdlib json at start-up

    decoder = json.JSONDecoder(object_pairs_hook=pairs, parse_constant=_no_constant)
    try:
        value = decoder.decode(body.decode("utf-8"))
    except Exception:  # a later syntax error, NaN, nesting…: the first duplicate is the error
        raise _invalid_json(first) from None
    allowed = _payload_objects(value)
    for obj, key in repeated:
        if id(obj) not in allowed:
            raise CorruptLogError(f"invalid JSON: duplicate key {js_dumps(key)}", rule="json")
    return value


def _payload_objects(value: object) -> set[int]:
    """The ids of the objects inside the ``data`` of ``value`` when ``value`` is an event whose
    type is a non-empty string other than ``schedule/change`` and ``message/followup``."""
    if type(value) is not dict:
        return set()
    kind = value.get("type")
    if type(kind) is not str or not kind or kind in (SCHEDULE_CHANGE_TYPE, FOLLOWUP_TYPE):
        return set()
    found: set[int] = set()
    stack = [value.get("data")]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            found.add(id(item))
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return found


def _compact_event(raw: bytes) -> LogEvent | None:
    """The event of a line that is its own compact re-encoding (so strict JSON without a key
    given twice), with a non-empty string type; None sends the line to the reference."""
    body = raw[:-1]
    try:
        value = _decode(body)
        if _encode(value) != body:
            return None
    except Exception:  # invalid UTF-8, deep nesting…: the reference decides
        return None
    if type(value) is not dict:
        return None
    kind = value.get("type")
    if type(kind) is not str or not kind:
        return None
    exact = len(value) == 2 and "data" in value
    return LogEvent(type=kind, data=value.get("data"), exact=exact, raw=raw)


def decode_event_line(raw: bytes) -> LogEvent:
    """The event of one complete line after the header (``raw`` keeps its ``\\n``), checked
    as a read checks it. Raises :class:`CorruptLogError` (no file location)."""
    event = _compact_event(raw)
    if event is not None:
        return event
    item = reference_line(raw, 2)
    assert type(item) is LogEvent
    return item


# --- the read loop --------------------------------------------------------------------------


def _line_too_long(file: str, line: int, offset: int) -> LogCorruption:
    return LogCorruption(
        file=file,
        line=line,
        offset=offset,
        path="$",
        message=f"line is longer than {MAX_LINE_BYTES} bytes",
        rule="line_too_long",
    )


def _measure_rest(numbered: Iterator[tuple[int, bytes]], offset: int) -> tuple[int, bytes]:
    """The offset where the torn tail starts, and the torn tail, after the first corruption
    (at ``offset``): the rest of the lines are measured, not decoded."""
    for _, raw in numbered:
        if raw[-1:] != b"\n":
            return offset, raw
        offset += len(raw)
    return offset, b""


def parse_lines(
    lines: Iterable[bytes], *, file: str, keep_events: bool = True, fast: bool = True
) -> LogContents:
    """Parse a log given as lines that keep their ``\\n`` (a binary file object will do); a
    last line without ``\\n`` is the torn tail. ``keep_events`` and ``fast`` as in
    :func:`read_log`.

    After the first corruption the remaining lines are only measured, not decoded, so the
    torn tail and the size of the complete part are still reported.
    """
    header: Header | None = None
    events: list[LogEvent] = []
    changes: list[ChangeAt] = []
    count = 0  # events so far: the next event's index
    offset = header_size = 0
    torn = b""
    corruption: LogCorruption | None = None
    append, add_change = events.append, changes.append
    # The fast paths take the lines they are sure of; every other line, and every line that
    # is not, goes to the reference decoder, which gives the verdict.
    summary = summary_line if fast and not keep_events else None
    compact = _compact_event if fast and keep_events else None

    numbered = enumerate(lines, start=1)
    for line_no, raw in numbered:
        if raw[-1:] != b"\n":
            torn = raw
            break
        size = len(raw)
        if size > _MAX_RAW:
            corruption = _line_too_long(file, line_no, offset)
            offset += size
            break
        if line_no > 1:
            if summary is not None:
                taken = summary(raw)
                if taken is not None:
                    if taken is not True:
                        add_change(ChangeAt(count, offset, None, taken))
                    count += 1
                    offset += size
                    continue
            elif compact is not None:
                event = compact(raw)
                if event is not None:
                    append(event)
                    count += 1
                    offset += size
                    continue
        try:
            item = reference_line(raw, line_no)
        except CorruptLogError as exc:
            corruption = _corruption(file, line_no, offset, exc)
            offset += size
            break
        if type(item) is Header:
            header_size = size
            header = item
        else:
            assert type(item) is LogEvent
            if keep_events:
                append(item)
            elif item.type == SCHEDULE_CHANGE_TYPE:
                add_change(ChangeAt(count, offset, item))
            count += 1
        offset += size
    if corruption is not None:  # the remaining lines are only measured
        offset, torn = _measure_rest(numbered, offset)
    return LogContents(
        file=file,
        header=header,
        events=tuple(events),
        event_count=count,
        events_kept=keep_events,
        changes=tuple(changes),
        torn_tail=torn,
        complete_size=offset,
        header_size=header_size,
        corruption=corruption,
    )
