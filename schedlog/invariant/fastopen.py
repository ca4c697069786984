"""The fast path of opening a session log for append: the whole read (every event kept) and the
fold, when :mod:`schedlog.invariant.fastcheck` is sure the log is valid.

A documented internal module: :meth:`schedlog.invariant.appender.LogAppender.open` uses it. The
reference is :func:`schedlog.eventlog.reader.read_log` (events kept) followed by
:func:`schedlog.invariant.logs.validate_log`. :func:`read_for_open` gives exactly their result:

* :func:`~schedlog.invariant.fastcheck.fast_check` checks every complete line as the reference
  does (strict JSON, the envelope, no key given twice where that matters) and folds the owned
  suffix, or gives up (None);
* it keeps the lines it took and how it decoded each one alone (``keep``): the ``type`` of
  every line, and an envelope of exactly ``type`` and ``data`` (a line of a chunk the check
  read line by line, and a change or follow-up, whose ``data`` the check decoded typed, are
  decoded once more into that envelope here, so that each line surely decodes so); a chunk
  taken in one call is kept as its bytes and its line ends (:class:`KeptRows`): its lines
  are exactly its envelopes, proven by its bytes
  (:func:`~schedlog.invariant.chunk_lines.whole_envelopes`), so none is decoded again;
* the events are built on first use (:class:`~schedlog.eventlog.line_events.LineEvents`, from
  each line kept and its type): the open builds none (the appender finds its delivered
  members when first asked for), and each event keeps the text of its ``data`` (a
  ``msgspec.Raw`` into its own ``raw`` line) and decodes it on first use
  (:class:`~schedlog.eventlog.events.LogEvent`). A line the check proved valid decodes to the
  values the reference's decoder gives (``msgspec`` for the lines it re-encodes exactly,
  Python's ``json`` for the others, which reads every number and string as ``msgspec`` does;
  a number beyond the float range, which ``msgspec`` refuses, is read by ``json``). A lone
  surrogate escape, which ``msgspec`` refuses even in a text it keeps, sends the log to the
  reference.

With a ``split`` (``session batch``: :mod:`schedlog.cli._split`), a long log's second half is
checked in another process as ``replay`` checks it, and its lines are kept there too
(:class:`KeptLines` is the check's :class:`~schedlog.invariant.fastcheck.KeepTail`): the child
sends, with its fold, each of its lines' end and event type (the types as indexes into a table
of the few types seen), and the parent cuts the lines out of the very bytes the child checked,
read before the child started. Nothing is given before both halves are checked and joined.

Any doubt (the check gives up, a line does not decode) and the reference reads the log: the
result is the same, only slower. ``tests/invariant/test_fastopen.py`` compares the two on
random, mutated and broken logs.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, compress, islice
from operator import attrgetter
from typing import Any, overload

import msgspec
from msgspec.structs import replace

from schedlog.eventlog import wire
from schedlog.eventlog.line_events import LineEvents
from schedlog.eventlog.reader import LogContents, read_log_fd
from schedlog.fold.state import FoldState
from schedlog.invariant.fastcheck import Kept, Split, fast_check_fd, single_line_tag
from schedlog.invariant.logs import validate_log

__all__ = ["KeptLines", "KeptRows", "TailLines", "read_for_open", "read_for_open_fd"]


#: One line decoded into ``type`` and the text of ``data``, as an event is built from it
#: (:class:`~schedlog.eventlog.line_events.LineEvents`).
_decode_event = msgspec.json.Decoder(wire.Envelope).decode
_KIND = attrgetter("type")
_TYPED_LINES = frozenset({wire.ChangeLine, wire.FollowupLine})
#: A tail's kept lines as they cross the pipe: the event types seen, each line's type as an
#: index into them (one byte a line), and for each kept chunk its size and where each of its
#: lines ends in it (``array("q")`` bytes).
_Packed = tuple[list[str], bytes, list[int], list[bytes]]
_encode_packed = msgspec.msgpack.Encoder().encode
_decode_packed = msgspec.msgpack.Decoder(_Packed).decode


def read_for_open(
    path: str | os.PathLike[str], *, fold: bool = True, split: Split | None = None
) -> tuple[LogContents, Any]:
    """``read_log(path)`` and, with ``fold``, the fold of its owned suffix
    (``validate_log``, which raises for a corrupt log); without ``fold`` the second item is
    None. ``OSError`` propagates. With ``split``, a long log's second half is checked by
    ``split``'s work (in another process, at the CLI edge); the result is the same."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_for_open_fd(fd, os.fspath(path), fold=fold, split=split)
    finally:
        os.close(fd)


def read_for_open_fd(
    fd: int, name: str, *, fold: bool = True, split: Split | None = None
) -> tuple[LogContents, Any]:
    """:func:`read_for_open` of the open file ``fd`` (named ``name`` in messages), read from its
    start through that descriptor, so a caller that opened the file safely reads that very file
    (schedlog.invariant.log_open). The descriptor stays open."""
    if fold:
        kept = KeptLines()
        fast = fast_check_fd(fd, name, split=split, keep=kept, keep_tail=kept)
        if fast is not None:
            contents = _with_events(fast[0], kept)
            if contents is not None:
                return contents, fast[1]
    contents = read_log_fd(fd, name)
    state: FoldState | None = validate_log(contents) if fold else None
    return contents, state


class KeptLines(list[Kept]):
    """Where the fast check puts the chunks it took (its ``keep``): each chunk's lines, each
    with its ``\\n``, and their event types are taken as the chunk comes (the check's decoded
    items are let go with the chunk, not kept to the end), in :attr:`rows` and :attr:`kinds`;
    the list itself stays empty. :attr:`failed`: a line did not decode as the open needs
    (:func:`_chunk_kinds`)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = KeptRows()
        self.kinds: list[str] = []
        self.failed = False

    def append(self, chunk: Kept) -> None:
        if self.failed:
            return
        lines, decoded, ends = chunk
        if type(lines) is bytes:  # a chunk taken in one call: its envelopes and line ends
            assert decoded is not None and ends is not None
            self.rows.add_chunk(lines, ends)
            self.kinds += map(_KIND, decoded)
            return
        rows = _with_line_ends(lines)  # type: ignore[arg-type]
        try:
            kinds = _chunk_kinds(rows, decoded)
        except (msgspec.DecodeError, RecursionError):
            self.failed = True
            return
        self.rows.add_rows(rows)
        self.kinds += kinds

    # -- the tail of a split log (fastcheck.KeepTail) ---------------------------------------

    def collect(self) -> TailLines:
        """An empty :class:`TailLines` for the tail's fold."""
        return TailLines()

    def pack(self, kept: list[Kept]) -> bytes | None:
        """The lines ``kept`` (the tail's :class:`TailLines`) as they cross the pipe: the
        types seen, each line's type as an index into them and each chunk's line ends; None
        when a line did not decode as the open needs or there are too many types for a byte."""
        assert type(kept) is TailLines
        if kept.failed:
            return None
        table = list(dict.fromkeys(kept.kinds))
        if len(table) > 256:
            return None
        index = {kind: number for number, kind in enumerate(table)}
        kinds = bytes(map(index.__getitem__, kept.kinds))
        return _encode_packed((table, kinds, kept.sizes, kept.ends))

    def unpack(self, packed: memoryview, tail: bytes) -> bool:
        """Keep the tail's lines :meth:`pack` described, cut out of ``tail`` (its bytes)."""
        try:
            table, kinds, sizes, packed_ends = _decode_packed(packed)
        except msgspec.DecodeError:
            return False
        if len(sizes) != len(packed_ends) or (kinds and max(kinds) >= len(table)):
            return False
        offset = lines = 0
        chunks = []
        for size, data in zip(sizes, packed_ends, strict=True):
            ends = array("q")
            if len(data) % ends.itemsize:
                return False
            ends.frombytes(data)
            if not ends or not 0 < ends[0] <= ends[-1] == size:
                return False
            chunks.append((offset, ends))
            offset += size
            lines += len(ends)
        if offset > len(tail) or lines != len(kinds):
            return False
        for start, ends in chunks:
            self.rows.add_chunk(tail, ends, start)
        self.kinds += map(table.__getitem__, kinds)
        return True


class TailLines(list[Kept]):
    """The ``keep`` of a split log's tail, in the tail's process: of each chunk taken, its
    lines' event types (:attr:`kinds`), its size (:attr:`sizes`) and where each of its lines
    ends in it (:attr:`ends`, ``array("q")`` bytes), not its bytes (the parent has them); the
    list itself stays empty. :attr:`failed`: a line did not decode as the open needs."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[str] = []
        self.sizes: list[int] = []
        self.ends: list[bytes] = []
        self.failed = False

    def append(self, chunk: Kept) -> None:
        if self.failed:
            return
        lines, decoded, line_ends = chunk
        if type(lines) is bytes:  # a chunk taken in one call: its envelopes and line ends
            assert decoded is not None and line_ends is not None
            self.kinds += map(_KIND, decoded)
            ends = array("q", line_ends)
        else:
            rows = _with_line_ends(lines)  # type: ignore[arg-type]
            try:
                self.kinds += _chunk_kinds(rows, decoded)
            except (msgspec.DecodeError, RecursionError):
                self.failed = True
                return
            ends = array("q", islice(accumulate(map(len, rows), initial=0), 1, None))
        if ends:
            self.sizes.append(ends[-1])
            self.ends.append(ends.tobytes())


class KeptRows(Sequence[bytes]):
    """The lines the open kept, each with its ``\\n``: the lines of a chunk read apart, or
    the bytes of a chunk taken in one call (each of its lines exactly one envelope,
    :func:`~schedlog.invariant.chunk_lines.whole_envelopes`) and where each of its lines
    ends, a line cut out of it when it is asked for."""

    __slots__ = ("_chunks", "_count", "_ends", "_firsts", "_starts")

    def __init__(self) -> None:
        self._firsts: list[int] = []  # the index of each chunk's first line
        self._chunks: list[bytes | list[bytes]] = []
        # a chunk's line ends ([] for a list of lines), from where its first line starts
        self._ends: list[list[int] | array[int]] = []
        self._starts: list[int] = []  # where a chunk's first line starts in its bytes
        self._count = 0

    def add_rows(self, rows: list[bytes]) -> None:
        """Keep the lines ``rows`` (each with its ``\\n``)."""
        if rows:
            self._firsts.append(self._count)
            self._chunks.append(rows)
            self._ends.append([])
            self._starts.append(0)
            self._count += len(rows)

    def add_chunk(self, body: bytes, ends: list[int] | array[int], start: int = 0) -> None:
        """Keep lines of ``body``: the first starts at ``start``, and each ends at the next of
        ``ends`` (counted from ``start``); the bytes around them are none of them."""
        self._firsts.append(self._count)
        self._chunks.append(body)
        self._ends.append(ends)
        self._starts.append(start)
        self._count += len(ends)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return list(map(self._at, range(*index.indices(self._count))))
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("line index out of range")
        return self._at(index)

    def _at(self, index: int) -> bytes:
        number = bisect_right(self._firsts, index) - 1
        chunk = self._chunks[number]
        line = index - self._firsts[number]
        if isinstance(chunk, bytes):
            ends = self._ends[number]
            start = self._starts[number]
            return chunk[start + ends[line - 1] if line else start : start + ends[line]]
        return chunk[line]


def _with_events(contents: LogContents, kept: KeptLines) -> LogContents | None:
    """``contents`` (a fast check's, no events kept) with the events of the lines the check
    kept, each built on first use (:class:`~schedlog.eventlog.line_events.LineEvents`), or
    None when a line does not decode as the fast path needs."""
    if kept.failed or len(kept.rows) != contents.event_count:
        return None
    return replace(contents, events=LineEvents(kept.rows, kept.kinds), events_kept=True)


def _with_line_ends(rows: list[bytes]) -> list[bytes]:
    """The rows of a kept chunk, each with its ``\\n`` (a chunk split at ``\\n`` lost them)."""
    if rows and rows[0][-1:] != b"\n":
        return [row + b"\n" for row in rows]
    return rows


def _chunk_kinds(rows: list[bytes], decoded: list[Any] | None) -> list[str]:
    """The event type of each line of one kept chunk, from the fast check's own decoding where
    it kept it, else from one more decode of each line. Every line whose ``data`` the check did
    not keep as text (a change or a follow-up, decoded typed, and each line of a chunk read
    line by line) is decoded once more into ``type`` and the text of ``data`` here, so that the
    event built from it on first use is sure to decode: a ``DecodeError`` sends the open to the
    reference."""
    if decoded is None:
        decoded = list(map(_decode_event, rows))
    if not decoded or type(decoded[0]) is wire.Envelope:
        return list(map(_KIND, decoded))
    # the single-pass decoder's: the type is the class's tag, typed payloads decoded
    classes = list(map(type, decoded))
    tags = {cls: single_line_tag(cls) for cls in set(classes)}
    for index in compress(range(len(classes)), map(_TYPED_LINES.__contains__, classes)):
        _decode_event(rows[index])
    return list(map(tags.__getitem__, classes))
