"""Whole-log validation: a readable log whose owned suffix folds (docs/protocol.md#torn-tail,
docs/protocol.md#fold).

Used when a log is opened for append, adopted, validated or replayed. Errors are located:
file, 1-based line, byte offset of that line and the JSON path within it.
"""

from __future__ import annotations

from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.reader import LogContents
from schedlog.fold.replay import fold, fold_changes
from schedlog.fold.state import FoldState
from schedlog.fold.steps import FoldError

__all__ = ["locate_fold_error", "validate_log"]


def validate_log(contents: LogContents) -> FoldState:
    """The fold of ``contents``'s owned suffix, or the first corruption as an error.

    A new log (no complete line) folds to the empty state. Raises :class:`CorruptLogError`:
    the reader's first corrupt line, else the fold's :class:`FoldError` located at the failing
    event's line (line 1, the header, for a bad ``seedLength``).
    """
    if contents.corruption is not None:
        raise contents.corruption.error()
    header = contents.header
    if header is None:
        return FoldState()
    try:
        if not contents.events_kept:  # a summary read: its changes, their indexes, the count
            return fold_changes(
                contents.changes, event_count=contents.event_count, seed_length=header.seed_length
            )
        return fold(contents.events, seed_length=header.seed_length)
    except FoldError as exc:
        raise locate_fold_error(contents, exc) from None


def locate_fold_error(contents: LogContents, exc: FoldError) -> CorruptLogError:
    """Fill in the file, line and byte offset of a fold failure over ``contents.events``."""
    if exc.index is None:
        return exc.locate(file=contents.file, line=1, offset=0)
    return exc.locate(file=contents.file, line=exc.index + 2, offset=contents.offset_of(exc.index))
