"""Reading a session log one line at a time (SPEC §9.1, §9.3).

The reader never modifies the file. It stops at the first corrupt complete line and reports it
with the file, the 1-based line, the byte offset of the line and the JSON path of the bad
member. Bytes after the last ``\\n`` are a torn tail: kept apart, never decoded, never an error.

A line longer than :data:`MAX_LINE_BYTES` is corruption (a longer torn tail is still only a torn
tail); :func:`read_log` never holds such a line in memory whole.
"""

from __future__ import annotations

import gc
import io
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, Final, NamedTuple

import msgspec

from schedlog.eventlog.changes import Change, decode_change_line
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE, LogEvent, event_from_value
from schedlog.eventlog.header import Header, decode_header
from schedlog.rules.text import JSONSyntaxError, loads_strict

__all__ = [
    "MAX_LINE_BYTES",
    "ChangeAt",
    "LogContents",
    "LogCorruption",
    "parse_lines",
    "parse_log",
    "read_log",
]

#: The longest line of a session log, in bytes without its ``\\n`` (16 MiB). Writers refuse to
#: write a longer one; a reader reports a longer complete line as corruption (``line_too_long``).
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
_MAX_RAW: Final = MAX_LINE_BYTES + 1

_CHANGE_PREFIX: Final = b'{"type":"schedule/change","data":{'
_FOLLOWUP_PREFIX: Final = b'{"type":"message/followup","data":{'


# The shape of the follow-ups writers append (SPEC §9.5), for the summary read to check such a
# line without building its dicts: decoding into Structs and re-encoding to the line itself
# proves it strict JSON (no duplicate key) with a non-empty string type. Anything else, however
# valid, takes the ordinary path.
class _Source(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    kind: str
    plugin: str | None = None


class _Member(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    occurrenceAt: str


class _FollowupData(msgspec.Struct, forbid_unknown_fields=True):
    messageId: str
    role: str
    source: _Source
    text: str
    reminders: list[_Member]
    createdAt: str


class _FollowupLine(msgspec.Struct, forbid_unknown_fields=True):
    type: str
    data: _FollowupData


_decode_followup = msgspec.json.Decoder(_FollowupLine).decode


def _is_plain_followup(body: bytes) -> bool:
    try:
        return _encode(_decode_followup(body)) == body
    except Exception:  # any surprise: the ordinary path decides
        return False


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
    events: tuple[LogEvent, ...]
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


def read_log(path: str | os.PathLike[str], *, keep_events: bool = True) -> LogContents:
    """Read the session log at ``path`` (read only), one line at a time. ``OSError`` propagates.

    Memory for the file's bytes stays proportional to the longest line; the events are kept.
    ``keep_events=False`` is a summary read for checks that only fold (validate, replay):
    every line is checked exactly the same way, but only the ``schedule/change`` events are
    kept (in ``changes``, with their index and offset) and ``events`` stays empty.
    """
    with open(path, "rb") as stream, _bulk_load():
        return parse_lines(_bounded_lines(stream), file=os.fspath(path), keep_events=keep_events)


class _Overlong(bytes):
    """Stands for a line longer than :data:`MAX_LINE_BYTES` without holding it: its content is
    only its ``\\n`` (none for a torn tail), its ``len()`` the line's real length."""

    size: int

    def __len__(self) -> int:
        return self.size


def _bounded_lines(stream: BinaryIO) -> Iterator[bytes]:
    """The lines of ``stream`` (``\\n`` kept); a line over the limit is read in chunks, dropped,
    and stood for by an :class:`_Overlong`."""
    readline = stream.readline
    while True:
        line = readline(_MAX_RAW)
        if len(line) < _MAX_RAW or line[-1:] == b"\n":
            if not line:
                return
            yield line
            continue
        size, end = len(line), b""
        while chunk := readline(1 << 20):
            size += len(chunk)
            if chunk[-1:] == b"\n":
                end = b"\n"
                break
        overlong = _Overlong(end)
        overlong.size = size
        yield overlong


def parse_log(data: bytes, *, file: str = "<bytes>") -> LogContents:
    """Like :func:`read_log`, for a log already in memory."""
    with _bulk_load():
        return parse_lines(io.BytesIO(data), file=file)


@contextmanager
def _bulk_load() -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding.

    A long log is hundreds of thousands of freshly decoded dicts that all survive; the
    collector would traverse them again and again, which more than doubled read time in
    measurements. Decoding creates no reference cycles, so nothing is lost by waiting.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _corruption(file: str, line: int, offset: int, exc: CorruptLogError) -> LogCorruption:
    return LogCorruption(
        file=file, line=line, offset=offset, path=exc.path, message=exc.message, rule=exc.rule
    )


def _decode_json(raw: bytes) -> object:
    # A complete line ends with "\n"; a "\r" before it is JSON whitespace (SPEC §9.1).
    body = raw[:-1]
    if not body:
        raise CorruptLogError("empty line", rule="empty_line")
    try:
        return loads_strict(body)
    except JSONSyntaxError as exc:  # the only error loads_strict raises for bad input
        raise CorruptLogError(f"invalid JSON: {exc.message}", rule="json") from None


def parse_lines(lines: Iterable[bytes], *, file: str, keep_events: bool = True) -> LogContents:
    """Parse a log given as lines that keep their ``\\n`` (a binary file object will do); a
    last line without ``\\n`` is the torn tail. ``keep_events`` as in :func:`read_log`.

    After the first corruption the remaining lines are only measured, not decoded, so the
    torn tail and the size of the complete part are still reported.
    """
    header: Header | None = None
    events: list[LogEvent] = []
    changes: list[ChangeAt] = []
    count = 0  # events so far: the next event's index
    offset = 0
    torn = b""
    corruption: LogCorruption | None = None
    header_size = 0
    decode, encode, event = _decode, _encode, LogEvent
    change_type = SCHEDULE_CHANGE_TYPE
    append, add_change = events.append, changes.append
    change_prefix, change_line = _CHANGE_PREFIX, decode_change_line
    followup_prefix, plain_followup = _FOLLOWUP_PREFIX, _is_plain_followup

    for line_no, raw in enumerate(lines, start=1):
        if raw[-1:] != b"\n":
            torn = raw
            break
        size = len(raw)
        if corruption is not None:  # after the first corruption lines are only measured
            offset += size
            continue
        if size > _MAX_RAW:
            corruption = LogCorruption(
                file=file,
                line=line_no,
                offset=offset,
                path="$",
                message=f"line is longer than {MAX_LINE_BYTES} bytes",
                rule="line_too_long",
            )
        else:
            if line_no > 1:
                # Fast path for the lines our writers emit: a JSON object whose compact
                # re-encoding is the line itself has no duplicate key and no NaN token.
                body = raw[:-1]
                if not keep_events:  # typed checks of the common lines, else as below
                    if body.startswith(change_prefix):
                        decoded = change_line(body)  # straight to the change, or None
                        if decoded is not None:
                            add_change(ChangeAt(count, offset, None, decoded))
                            count += 1
                            offset += size
                            continue
                    elif body.startswith(followup_prefix) and plain_followup(body):
                        count += 1
                        offset += size
                        continue
                try:
                    value = decode(body)
                    same = encode(value) == body
                except Exception:  # invalid UTF-8, deep nesting…: the strict path decides
                    same = False
                if same and type(value) is dict:
                    kind = value.get("type")
                    if type(kind) is str and kind:
                        if keep_events:
                            exact = len(value) == 2 and "data" in value
                            append(event(type=kind, data=value.get("data"), exact=exact, raw=raw))
                        elif kind == change_type:
                            exact = len(value) == 2 and "data" in value
                            item = event(type=kind, data=value.get("data"), exact=exact, raw=raw)
                            add_change(ChangeAt(count, offset, item))
                        count += 1
                        offset += size
                        continue
            # Everything else gets the exact verdict (and message) of the strict path.
            try:
                value = _decode_json(raw)
                if line_no == 1:
                    header_size = size
                    header = decode_header(value)
                else:
                    item = event_from_value(value, raw=raw)
                    if keep_events:
                        append(item)
                    elif item.type == change_type:
                        add_change(ChangeAt(count, offset, item))
                    count += 1
            except CorruptLogError as exc:
                corruption = _corruption(file, line_no, offset, exc)
        offset += size
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
