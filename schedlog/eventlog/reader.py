"""Reading a session log one line at a time (SPEC §9.1, §9.3).

The reader never modifies the file. It stops at the first corrupt complete line and reports it
with the file, the 1-based line, the byte offset of the line and the JSON path of the bad
member. Bytes after the last ``\\n`` are a torn tail: kept apart, never decoded, never an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import IO, Final

import msgspec

from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import LogEvent, event_from_value
from schedlog.eventlog.header import Header, decode_header
from schedlog.rules.text import JSONSyntaxError, loads_strict

__all__ = ["LogContents", "LogCorruption", "iter_lines", "parse_log", "read_log"]

_CHUNK: Final = 1 << 20


class LogCorruption(msgspec.Struct, frozen=True, kw_only=True):
    """The first corrupt complete line of a log.

    ``offset`` is the byte offset of the line's first byte in the file; ``path`` is the JSON
    path of the bad member within the line; ``rule`` names the broken rule (``json``,
    ``empty_line``, ``event``, ``header``).
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


class LogContents(msgspec.Struct, frozen=True, kw_only=True):
    """What a read found.

    * ``header``: ``None`` for a new log (0 bytes, or a torn tail only) or a corrupt line 1;
    * ``events``: the events before the first corruption, in order (event index = position);
    * ``torn_tail``: the bytes after the last ``\\n`` (empty when the file ends with ``\\n``);
    * ``complete_size``: the byte length of the complete lines, where the torn tail starts;
    * ``header_size``: the byte length of line 1 (0 for a new log);
    * ``corruption``: the first corrupt complete line, or ``None``.
    """

    file: str
    header: Header | None
    events: tuple[LogEvent, ...]
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
        """The byte offset of event ``index``'s line (O(index): offsets are not stored)."""
        return self.header_size + sum(len(e.raw) for e in self.events[:index])


def iter_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Split a byte stream into lines, each ending with ``\\n`` except possibly the last.

    Memory stays proportional to the longest line, whatever the file size.
    """
    pending = b""
    for chunk in chunks:
        if not chunk:
            continue
        data = pending + chunk if pending else chunk
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            yield data[start : end + 1]
            start = end + 1
        pending = data[start:]
    if pending:
        yield pending


def _read_chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


def read_log(path: str | os.PathLike[str]) -> LogContents:
    """Read the session log at ``path`` (read only). ``OSError`` propagates."""
    with open(path, "rb") as stream:
        return parse_lines(iter_lines(_read_chunks(stream)), file=os.fspath(path))


def parse_log(data: bytes, *, file: str = "<bytes>") -> LogContents:
    """Like :func:`read_log`, for a log already in memory."""
    return parse_lines(iter_lines((data,)), file=file)


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
    except JSONSyntaxError as exc:
        raise CorruptLogError(f"invalid JSON: {exc.message}", rule="json") from None
    except UnicodeDecodeError as exc:
        # msgspec's fast path can raise this for invalid UTF-8 inside a string.
        raise CorruptLogError(
            f"invalid JSON: invalid UTF-8 at byte {exc.start}", rule="json"
        ) from None


def parse_lines(lines: Iterable[bytes], *, file: str) -> LogContents:
    """Parse lines as produced by :func:`iter_lines` (each complete line keeps its ``\\n``).

    After the first corruption the remaining lines are only measured, not decoded, so the
    torn tail and the size of the complete part are still reported.
    """
    header: Header | None = None
    events: list[LogEvent] = []
    append = events.append
    offset = 0
    torn = b""
    corruption: LogCorruption | None = None
    header_size = 0
    for line_no, raw in enumerate(lines, start=1):
        if raw[-1:] != b"\n":
            torn = raw
            break
        if corruption is None:
            try:
                value = _decode_json(raw)
                if line_no == 1:
                    header_size = len(raw)
                    header = decode_header(value)
                else:
                    append(event_from_value(value, raw=raw))
            except CorruptLogError as exc:
                corruption = _corruption(file, line_no, offset, exc)
        offset += len(raw)
    return LogContents(
        file=file,
        header=header,
        events=tuple(events),
        torn_tail=torn,
        complete_size=offset,
        header_size=header_size,
        corruption=corruption,
    )
