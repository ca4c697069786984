"""The fast check of one small log for ``schedlog validate`` of many logs: what its report needs,
and nothing else.

A documented internal module of :mod:`schedlog.invariant`: :mod:`schedlog.cli._logs`
(``validate``) uses it; nothing outside schedlog should.

``validate DIR`` of thousands of small logs spends most of each log's time in the chunk checks
and the fold (:class:`~schedlog.invariant.chunk_fold.ChunkFold`), but a log also paid for the
general form of :func:`schedlog.invariant.fastcheck.fast_check` around them: a stream over the
bytes, the split and length-limit logic a small log never needs, then the summary
(:class:`~schedlog.eventlog.reader.LogContents`) and the fold's state with a
:class:`~schedlog.rules.record.Record` built for every active reminder, of which the report
only prints the count. :func:`small_summary` takes the bytes of a whole log shorter than a
chunk and gives only what the report prints: the header, the count of events, the torn tail
and the count of active reminders.

It is :func:`~schedlog.invariant.fastcheck.fast_check` of those bytes with the same
:class:`~schedlog.invariant.chunk_fold.ChunkFold` and the same one chunk: the header is line
1 decoded by the reference decoder, the complete lines after it are one chunk, taken by
:meth:`ChunkFold.take <schedlog.invariant.chunk_fold.ChunkFold.take>` (first in one call), the
bytes after the last ``\\n`` the torn tail. A log shorter than a chunk holds no line over the
length limit (16 MiB), so none of the limits apply. Like ``fast_check`` it is never a verdict
of its own: it returns None for anything it is not sure is valid (no complete header, a corrupt
header, a chunk the fold refuses, a ``seedLength`` beyond the log), and the caller then runs
the whole check. ``tests/invariant/test_small_check.py`` proves its result the reference's on
random, mutated and broken logs.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.header import Header
from schedlog.eventlog.reader import reference_line
from schedlog.invariant.chunk_fold import ChunkFold
from schedlog.invariant.chunk_lines import Invalid

__all__ = ["SMALL_LOG", "SmallSummary", "small_summary"]

#: The logs this module checks are shorter than this (the fast check's chunk, 256 KiB).
SMALL_LOG: Final = 1 << 18

#: The event types of the logs checked so far (their first chunk is then tried in one pass,
#: as ``fastcheck`` does: only a guess, which changes no result).
_KINDS_SEEN: Final[list[frozenset[str]]] = [frozenset()]
_MAX_KINDS_SEEN: Final = 32


class SmallSummary(NamedTuple):
    """What the ``validate`` report of a valid log prints."""

    header: Header
    events: int  #: the events after the header (complete lines)
    torn_tail: bytes  #: the bytes after the last ``\\n``
    active: int  #: the active reminders at the end of the fold


def small_summary(data: bytes) -> SmallSummary | None:
    """The summary of the whole log ``data`` (shorter than :data:`SMALL_LOG`) when it is
    valid and the fast check is sure of it, else None (the caller runs the whole check)."""
    if len(data) >= SMALL_LOG:
        return None
    header_size = data.find(b"\n") + 1
    if not header_size:
        return None  # a new log or a torn header: the reference says which
    try:
        header = reference_line(data[:header_size], 1)
    except CorruptLogError:
        return None
    assert type(header) is Header
    fold = ChunkFold(header.seed_length, kinds=_KINDS_SEEN[0])
    fold.whole = True
    complete = data.rfind(b"\n") + 1
    try:
        if complete > header_size:
            fold.take(b"", memoryview(data)[header_size:complete])
    except Invalid:
        return None
    _remember_kinds(fold.kinds)
    if fold.count < fold.start:
        return None  # seedLength beyond the log: the reference reports it
    return SmallSummary(header, fold.count, data[complete:], len(fold.active))


def _remember_kinds(kinds: frozenset[str]) -> None:
    """Add a checked log's event types to :data:`_KINDS_SEEN` (its own alone past the cap)."""
    seen = _KINDS_SEEN[0]
    if not seen.issuperset(kinds):
        union = seen | kinds
        _KINDS_SEEN[0] = union if len(union) <= _MAX_KINDS_SEEN else kinds
