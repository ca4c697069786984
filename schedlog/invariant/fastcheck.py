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

The work is in three modules beside this one: :mod:`schedlog.invariant.chunk_lines` (each
line decoded alone, and the argument that the fast path sees exactly the lines the reference
sees), :mod:`schedlog.invariant.chunk_checks` (the checks of a chunk's bytes and the typed
decode of its payloads) and :mod:`schedlog.invariant.chunk_fold` (how a chunk is taken and
folded, or read line by line). This module reads the log a chunk of complete lines at a time
(``_fold_stream``): a line over the length limit or a log without a complete header ends the
fast path (None).

A long log may be taken in two parts at once (``split``, which the CLI runs in a child process:
:mod:`schedlog.cli._split`). The second part, from the first line end past the middle, is a
*tail* (:mod:`schedlog.invariant.chunk_fold` says how it is folded and joined to the first
part's fold). When the tail gives no result, or the first part does not reach
``seedLength``, the first part's fold reads the rest itself.
``tests/invariant/test_fastcheck_split.py`` proves the result the same wherever the log is
split.

The session open keeps every line it checked (``keep``); with a ``split`` it also gives a
:class:`KeepTail`, which keeps the tail's lines in the child and hands them to the parent with
the tail's fold. The tail's bytes are read by the parent before the child starts, so the lines
the parent keeps are the very bytes the child checked (docs/decisions.md, "The session open:
the second half in a child process").
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable
from functools import partial
from typing import BinaryIO, Final, Protocol

from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.header import Header
from schedlog.eventlog.reader import MAX_LINE_BYTES, LogContents, reference_line
from schedlog.fold.state import FoldState
from schedlog.invariant.chunk_fold import ChunkFold
from schedlog.invariant.chunk_lines import Invalid, Kept, single_line_tag

__all__ = [
    "KeepTail",
    "Kept",
    "Split",
    "fast_check",
    "fast_check_bytes",
    "fast_check_fd",
    "single_line_tag",
]

_CHUNK: Final = 1 << 18
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_MAX_RAW: Final = MAX_LINE_BYTES + 1

#: The work of a tail fold, run elsewhere: ``split(work)`` starts ``work`` (in another process)
#: and returns what waits for its result, None when it gave none.
Split = Callable[[Callable[[], bytes]], Callable[[], "bytes | None"]]
#: A log at least this long is folded in two parts when a ``split`` is given.
_MIN_SPLIT: Final = 1 << 23
_SPLIT_LOOK: Final = 1 << 14
#: A kept tail's fold result travels as its length (this many bytes, little-endian), the
#: result, then the tail's kept lines as :meth:`KeepTail.pack` gave them.
_FRAME: Final = 8
#: The event types of the logs this process checked so far (a process checking many small
#: logs, ``validate DIR``, then takes each log's first chunk in one pass: docs/decisions.md,
#: "Many small logs: the first chunk in one pass"). Only a guess: a line of another type sends
#: its chunk to the two-pass check, and the result is the same either way.
_KINDS_SEEN: Final[list[frozenset[str]]] = [frozenset()]
_MAX_KINDS_SEEN: Final = 32


class KeepTail(Protocol):
    """How the lines of a split log's second part (the tail) are kept, for a ``keep`` that
    must hold every line (the session open's
    :class:`~schedlog.invariant.fastopen.KeptLines`): the tail's work keeps them in the list
    :meth:`collect` gives and sends :meth:`pack` of it with its fold; once the tail is joined,
    :meth:`unpack` keeps them from the tail's bytes (the same bytes the tail checked)."""

    def collect(self) -> list[Kept]:
        """An empty ``keep`` for the tail's fold (in the tail's process)."""
        ...

    def pack(self, kept: list[Kept]) -> bytes | None:
        """What the parent needs of the tail's kept lines, or None when the tail gives no
        result (the parent then folds the tail itself, keeping as it goes)."""
        ...

    def unpack(self, packed: memoryview, tail: bytes) -> bool:
        """Keep the lines ``packed`` describes, cut out of ``tail`` (the bytes from the
        split on); False when ``packed`` is not what :meth:`pack` gives."""
        ...


def _remember_kinds(kinds: frozenset[str]) -> None:
    """Add a checked log's event types to :data:`_KINDS_SEEN` (its own alone past the cap)."""
    seen = _KINDS_SEEN[0]
    if not seen.issuperset(kinds):
        union = seen | kinds
        _KINDS_SEEN[0] = union if len(union) <= _MAX_KINDS_SEEN else kinds


def fast_check(
    path: str | os.PathLike[str],
    *,
    split: Split | None = None,
    rendered: list[bytes] | None = None,
) -> tuple[LogContents, FoldState] | None:
    """The summary read of the log at ``path`` and the fold of its owned suffix, when the log
    is valid and this fast path is sure of it; None otherwise (the reference decides).
    ``OSError`` propagates.

    With ``split``, a long log's second half is checked and folded by ``split``'s work (which
    the CLI runs in a child process, on the other core) while this one takes the first half;
    the two folds are then joined (:meth:`ChunkFold.join`). Whatever the work gives, or if it gives
    nothing, the result is the same as without it.

    With ``rendered`` (an empty list), the JSON text of the active records' list is put there
    when the result is not None: exactly ``json_bytes([r.to_json() for r in state.active])``
    (:meth:`ChunkFold.rendered`, which takes the targets the log wrote as it wrote them;
    ``replay`` prints it). The state's records are built only when asked for
    (:meth:`ChunkFold.state`).

    A log shorter than a chunk (``validate DIR`` of many small logs) is read whole, in one
    ``os.read`` of its size: the buffered reads of a chunk each cost more than the read itself
    (docs/decisions.md, "Validating many logs: the walk, one read a log"). Every chunk of every
    log, both parts of a split one, is first tried in one decoding call (``ChunkFold.whole``;
    docs/decisions.md, "Validating many logs: one call a small log, the first run in this
    process" and "Every compact chunk in one call")."""
    name = os.fspath(path)
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        data = _small_log(fd)
        if data is not None:
            small = io.BytesIO(data)
            return _check(small, name, _CHUNK, split, _MIN_SPLIT, rendered=rendered, whole=True)
    finally:
        os.close(fd)
    with open(path, "rb") as stream:  # a long log, or not a regular file: as it always was
        return _check(stream, name, _CHUNK, split, _MIN_SPLIT, rendered=rendered, whole=True)


def _small_log(fd: int) -> bytes | None:
    """All of the regular file ``fd`` when it is shorter than a chunk, else None."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size >= _CHUNK:
        return None
    room = info.st_size + 1  # one byte more than it holds: the first read ends at its end
    data = os.read(fd, room)
    if data:
        more = [data]
        while part := os.read(fd, room):  # it grew meanwhile
            more.append(part)
        if len(more) > 1:
            data = b"".join(more)
    return data


def fast_check_fd(
    fd: int,
    name: str,
    *,
    split: Split | None = None,
    keep: list[Kept] | None = None,
    keep_tail: KeepTail | None = None,
) -> tuple[LogContents, FoldState] | None:
    """:func:`fast_check` of the open file ``fd`` (named ``name`` in messages), read from its
    start through that descriptor; the descriptor stays open. With ``keep`` (an empty list),
    the lines are kept there, a :data:`Kept` a chunk, when the result is not None; a log is
    then split only with ``keep_tail``, which keeps the tail's lines."""
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb", closefd=False) as stream:
        return _check(
            stream, name, _CHUNK, split, _MIN_SPLIT, keep, whole=True, keep_tail=keep_tail
        )


def fast_check_bytes(
    data: bytes,
    *,
    file: str = "<bytes>",
    chunk: int = _CHUNK,
    split: Split | None = None,
    min_split: int = _MIN_SPLIT,
    keep: list[Kept] | None = None,
    rendered: list[bytes] | None = None,
    whole: bool = True,
    keep_tail: KeepTail | None = None,
) -> tuple[LogContents, FoldState] | None:
    """:func:`fast_check` of a log in memory, read ``chunk`` bytes at a time (for tests); its
    chunks are first tried in one call (``ChunkFold.whole``) unless ``whole`` is false, as
    :func:`fast_check` and :func:`fast_check_fd` do."""
    stream = io.BytesIO(data)
    return _check(stream, file, chunk, split, min_split, keep, rendered, whole, keep_tail)


def _check(
    stream: BinaryIO,
    file: str,
    size: int,
    split: Split | None,
    min_split: int,
    keep: list[Kept] | None = None,
    rendered: list[bytes] | None = None,
    whole: bool = False,
    keep_tail: KeepTail | None = None,
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
    fold = ChunkFold(header.seed_length, kinds=_KINDS_SEEN[0])
    fold.kept = keep
    fold.whole = whole
    body = buf[header_size:]
    tail: _Tail | None = None
    middle = None  # a split log with every line kept: only with ``keep_tail``
    if split is not None and (keep is None or keep_tail is not None):
        middle = _middle(stream, header_size, min_split)
    try:
        if middle is not None:
            assert split is not None
            tail = _Tail(stream, middle, size, whole, split, keep_tail)
            body = body[: middle - header_size]
            stream.seek(header_size + len(body))  # where the first read ended, or the middle
            read = partial(_read_until, stream, middle)
        carry, complete = _fold_stream(fold, read, size, body)
        if tail is not None:
            assert middle is not None and not carry and complete == middle - header_size
            waiting, tail = tail, None
            joined = waiting.join(fold)
            if joined is None:  # no result: fold the second part here
                stream.seek(middle)
                joined = _fold_stream(fold, stream.read, size, b"")
            carry, rest = joined
            complete += rest
    except (Invalid, _TooLong):
        return None
    finally:
        if tail is not None:
            tail.wait()  # the first part ended the fast path: the second's result is not needed
    _remember_kinds(fold.kinds)
    if fold.count < fold.start:
        return None  # seedLength beyond the log: the reference reports it
    if rendered is not None:
        rendered.append(fold.rendered())
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
    return contents, fold.state()


class _Tail:
    """The second part of a split log, checked and folded by ``split``'s work from
    ``middle`` on; with ``keep_tail``, its bytes read here first (the work checks those very
    bytes) and its lines kept with its result."""

    def __init__(
        self,
        stream: BinaryIO,
        middle: int,
        size: int,
        whole: bool,
        split: Split,
        keep_tail: KeepTail | None,
    ) -> None:
        self.keep_tail = keep_tail
        self.rest = b""
        if keep_tail is None:
            work = partial(_tail_work, _reader_at(stream, middle), size, whole)
        else:
            self.rest = _rest_of(stream, middle)
            work = partial(_tail_work, io.BytesIO(self.rest).read, size, whole, keep_tail)
        self.wait = split(work)

    def join(self, fold: ChunkFold) -> tuple[bytes, int] | None:
        """Join the tail's result to ``fold`` (:meth:`ChunkFold.join`), keeping its lines
        with ``keep_tail``; None when there is no result (the caller folds the rest)."""
        result = self.wait()
        keep_tail = self.keep_tail
        if keep_tail is None:
            return fold.join(result)
        if not result or len(result) < _FRAME:
            return None
        end = _FRAME + int.from_bytes(result[:_FRAME], "little")
        joined = fold.join(result[_FRAME:end] if end <= len(result) else None)
        if joined is not None and not keep_tail.unpack(memoryview(result)[end:], self.rest):
            raise Invalid  # folded, but its lines are not kept: the reference reads the log
        return joined


def _rest_of(stream: BinaryIO, start: int) -> bytes:
    """The bytes of ``stream`` from ``start`` to its end, its position left alone."""
    if isinstance(stream, io.BytesIO):
        return stream.getvalue()[start:]
    fd = stream.fileno()
    parts = []
    offset = start
    room = max(os.fstat(fd).st_size - start, 0) + 1  # one more: the first read ends at its end
    while part := os.pread(fd, room, offset):
        parts.append(part)
        offset += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _TooLong(Exception):
    """A line over the length limit: the reference reports it."""


def _fold_stream(
    fold: ChunkFold, read: Callable[[int], bytes], size: int, data: bytes
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


def _tail_work(
    read: Callable[[int], bytes],
    size: int,
    whole: bool = False,
    keep_tail: KeepTail | None = None,
) -> bytes:
    """Check and fold what ``read`` gives, the second part of a log, as a tail (all of it
    owned, the changes of records it did not create left to :meth:`ChunkFold.join`): the encoded
    result, or nothing when it is not sure. With ``keep_tail``, the lines are kept, and the
    result is framed (its length first) and followed by the kept lines packed."""
    fold = ChunkFold(0, tail=True, kinds=_KINDS_SEEN[0])
    fold.whole = whole
    kept = fold.kept = None if keep_tail is None else keep_tail.collect()
    try:
        carry, complete = _fold_stream(fold, read, size, b"")
    except (Invalid, _TooLong):
        return b""
    encoded = fold.tail_result(complete, carry)
    if not encoded or keep_tail is None or kept is None:
        return encoded  # no result, or nothing kept
    packed = keep_tail.pack(kept)
    if packed is None:
        return b""
    return b"".join((len(encoded).to_bytes(_FRAME, "little"), encoded, packed))
