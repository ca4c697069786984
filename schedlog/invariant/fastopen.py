"""The fast path of opening a session log for append: the whole read (every event kept) and the
fold, when :mod:`schedlog.invariant.fastcheck` is sure the log is valid.

A documented internal module: :meth:`schedlog.invariant.appender.LogAppender.open` uses it. The
reference is :func:`schedlog.eventlog.reader.read_log` (events kept) followed by
:func:`schedlog.invariant.logs.validate_log`. :func:`read_for_open` gives exactly their result:

* :func:`~schedlog.invariant.fastcheck.fast_check` checks every complete line as the reference
  does (strict JSON, the envelope, no key given twice where that matters) and folds the owned
  suffix, or gives up (None);
* then each event line is decoded alone into its ``type`` and ``data`` (one ``msgspec`` call a
  line, all in one ``map``), refusing an envelope with any other key or without ``data``. A
  line the check proved valid decodes to the values the reference's decoder gives (``msgspec``
  for the lines it re-encodes exactly, Python's ``json`` for the others, which reads every
  number and string as ``msgspec`` does; where ``msgspec`` cannot, a number out of the float
  range or a lone surrogate escape, it raises and the reference reads the log).

Any doubt (the check gives up, a line does not decode) and the reference reads the log: the
result is the same, only slower. ``tests/invariant/test_fastopen.py`` compares the two on
random, mutated and broken logs.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec
from msgspec.structs import replace

from schedlog.eventlog.events import LogEvent
from schedlog.eventlog.reader import LogContents, read_log_fd
from schedlog.fold.state import FoldState
from schedlog.invariant.fastcheck import fast_check_fd
from schedlog.invariant.logs import validate_log

__all__ = ["read_for_open", "read_for_open_fd"]


class _Event(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: str
    data: Any


_decode_event = msgspec.json.Decoder(_Event).decode


def read_for_open(path: str | os.PathLike[str], *, fold: bool = True) -> tuple[LogContents, Any]:
    """``read_log(path)`` and, with ``fold``, the fold of its owned suffix
    (``validate_log``, which raises for a corrupt log); without ``fold`` the second item is
    None. ``OSError`` propagates."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_for_open_fd(fd, os.fspath(path), fold=fold)
    finally:
        os.close(fd)


def read_for_open_fd(fd: int, name: str, *, fold: bool = True) -> tuple[LogContents, Any]:
    """:func:`read_for_open` of the open file ``fd`` (named ``name`` in messages), read from its
    start through that descriptor, so a caller that opened the file safely reads that very file
    (schedlog.invariant.log_open). The descriptor stays open."""
    if fold:
        fast = fast_check_fd(fd, name)
        if fast is not None:
            contents = _with_events(fd, fast[0])
            if contents is not None:
                return contents, fast[1]
    contents = read_log_fd(fd, name)
    state: FoldState | None = validate_log(contents) if fold else None
    return contents, state


def _with_events(fd: int, contents: LogContents) -> LogContents | None:
    """``contents`` (a fast check's, no events kept) with the events of the log's complete
    lines, or None when a line does not decode as the fast path needs."""
    body = _pread_all(fd, contents.complete_size - contents.header_size, contents.header_size)
    if len(body) != contents.complete_size - contents.header_size:
        return None  # the file changed under the read: the reference reads it again
    rows = body.split(b"\n")
    rows.pop()
    if len(rows) != contents.event_count:
        return None
    try:
        decoded = list(map(_decode_event, rows))
    except (msgspec.DecodeError, RecursionError):
        return None
    events = tuple(
        LogEvent(type=event.type, data=event.data, raw=row + b"\n")
        for event, row in zip(decoded, rows, strict=True)
    )
    return replace(contents, events=events, events_kept=True)


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes of ``fd`` from ``offset`` (fewer only at the end of the file)."""
    parts: list[bytes] = []
    while size > 0:
        part = os.pread(fd, size, offset)
        if not part:
            break
        parts.append(part)
        size -= len(part)
        offset += len(part)
    return b"".join(parts)
