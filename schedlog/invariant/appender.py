"""The session log appender: the concrete JSON Lines log (docs/protocol.md#session-log,
docs/protocol.md#torn-tail, docs/protocol.md#durability).

Opening for append validates the whole log (every complete line, and by default the fold of
its owned suffix), truncates a torn tail (logged), and writes the header of a new log. Lines are
written eagerly; :meth:`LogAppender.flush` is the durability barrier. Every ``schedule/change``
append is judged by the replay invariant first, and nothing is written when it is refused.

The appender judges appends by the replay invariant, so it lives above the fold and the
checker (here, in :mod:`schedlog.invariant`) and imports them like any other module.
:class:`LogAppender` is one implementation of the runtime's
:class:`~schedlog.runtime.interfaces.SessionLog` protocol, through
:class:`~schedlog.runtime.session_file.FileSession`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from schedlog._crashpoints import crashpoint, crashpoints_armed
from schedlog._lazy import LazyLogger
from schedlog.eventlog.changes import Change
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import (
    FOLLOWUP_TYPE,
    SCHEDULE_CHANGE_TYPE,
    LogEvent,
    encode_line,
    event_from_value,
)
from schedlog.eventlog.followups import Member, delivered_members, parse_followup
from schedlog.eventlog.header import Header
from schedlog.eventlog.reader import MAX_LINE_BYTES, LogContents, decode_event_line
from schedlog.files import fsync_directory, write_all
from schedlog.fold.replay import apply_event
from schedlog.fold.state import FoldState
from schedlog.invariant.checker import check
from schedlog.invariant.fastcheck import Split
from schedlog.invariant.fastopen import read_for_open_fd
from schedlog.invariant.log_open import open_log_file
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = ["LogAppender"]

_log = LazyLogger("schedlog.eventlog")


def _truncate_torn_tail(fd: int, name: str, contents: LogContents) -> None:
    """Cut the torn tail off (docs/protocol.md#torn-tail), warning ``torn_tail_truncated``."""
    os.ftruncate(fd, contents.complete_size)
    _log.warning(
        "session_log.torn_tail_truncated",
        path=name,
        bytes=len(contents.torn_tail),
        message=f"schedule: truncated {len(contents.torn_tail)} bytes of torn tail in {name}",
    )


def _add_members(delivered: dict[Member, str], event: LogEvent) -> None:
    """The members of the follow-up ``event``, when well formed, delivered by its message."""
    followup = parse_followup(event.data)
    if followup is not None:
        for member in followup.reminders:
            delivered.setdefault(member, followup.message_id)


def _header_of(fd: int, contents: LogContents, session_id: str | None) -> tuple[Header, int]:
    """The log's header and its complete size; a new log gets its header written first."""
    if contents.header is not None:
        return contents.header, contents.complete_size
    if not session_id:
        raise ValueError("a new session log needs a non-empty session id")
    header = Header(session_id=session_id)
    line = encode_line(header.to_json())
    write_all(fd, line)
    return header, len(line)


class LogAppender:
    """An open session log. Use :meth:`open`; close it (or use ``with``) when done.

    * ``header``: the log's header (written by :meth:`open` for a new log);
    * ``state``: the fold of the owned suffix, kept current by every append (empty, and not
      the log's, when it was opened with ``fold_schedule=False``; see ``schedule_folded``);
    * ``schedule_folded``: False when opened with ``fold_schedule=False``: the schedule state is
      unknown, so ``schedule/change`` appends are refused;
    * ``event_count``: the number of events (the next append gets this index);
    * ``delivered``: members already delivered in the owned suffix -> messageId
    (docs/protocol.md#message-ids), found in the events read at open when first asked for
    (``session batch`` never asks; the host does);
    * ``events_at_open``: the events read when the log was opened (the header excluded).
    """

    def __init__(
        self,
        *,
        path: str,
        fd: int,
        header: Header,
        state: FoldState,
        event_count: int,
        delivered: dict[Member, str] | None,
        size: int,
        created: bool,
        schedule_folded: bool = True,
        events: Sequence[LogEvent] = (),
        dir_fd: int | None = None,
    ) -> None:
        self.path = path
        self._dir_fd = dir_fd
        self.events_at_open = events
        self.header = header
        self.state = state
        self.schedule_folded = schedule_folded
        self.event_count = event_count
        # None until first asked for: then found in ``events`` (the owned suffix). The
        # follow-ups written or read in since (``_later``) are added on each read (most logs a
        # burst creates are never read again).
        self._delivered = delivered
        self._later: list[LogEvent] = []
        self._fd: int | None = fd
        self._size = size
        self._synced_size: int | None = None  # the length the last fsync that succeeded covered
        self._dir_pending = created
        self._broken: str | None = None

    # --- opening ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        fold_schedule: bool = True,
        dir_fd: int | None = None,
        split: Split | None = None,
        entry_durable: bool = True,
    ) -> LogAppender:
        """Open (creating if missing) the log at ``path`` for append.

        ``session_id`` names a new log (0 bytes, missing, or a torn tail only) and is ignored
        when a header exists: the existing header always wins. Raises
        :class:`~schedlog.eventlog.errors.CorruptLogError` (the file is left untouched) when the
        log is corrupt or its owned suffix does not fold, ``ValueError`` when a new log has no
        ``session_id``, and ``OSError`` for I/O failures.

        ``fold_schedule=False`` checks only line-level validity (the header, JSON, event
        envelopes), so a log whose owned ``schedule/change`` events do not fold still opens: the
        host delivering follow-ups into a session with unreadable legacy events
        (docs/protocol.md#legacy-events). A corrupt complete line is still refused
        (docs/protocol.md#torn-tail, docs/concepts.md#delivery-guarantees). Such a log has an empty
        ``state`` and refuses ``schedule/change`` appends, since no invariant can be checked.

        With ``dir_fd`` (a descriptor of the directory holding ``path``), the log is opened by
        its base name under that descriptor with ``O_NOFOLLOW``: a symlink there is refused. A
        log that is not a regular file raises
        :class:`~schedlog.invariant.log_open.UnsafeLogError` (``session_log_not_regular``), and
        the file is left alone.

        ``split`` (the CLI's ``session batch`` only: a library open never forks) checks a long
        log's second half in another process (:func:`schedlog.invariant.fastopen.read_for_open`);
        the open is the same, and returns once the whole log is checked.

        ``entry_durable=False`` says that the log's directory entry is not known to be durable
        (a log this process created whose directory ``fsync`` failed or was never reached): the
        log is then :attr:`directory_pending` as a new one is, and its first barrier fsyncs the
        directory.
        """
        name = os.fspath(path)
        entry = os.path.basename(name) if dir_fd is not None else name
        fd, created = open_log_file(entry, dir_fd=dir_fd)
        try:
            # The read and fold by the fast path when it is sure (schedlog.invariant.fastopen),
            # through the descriptor opened safely above.
            contents, folded = read_for_open_fd(fd, name, fold=fold_schedule, split=split)
            if fold_schedule:
                state = folded
            else:
                if contents.corruption is not None:
                    raise contents.corruption.error()
                state = FoldState()
            if contents.torn_tail:
                _truncate_torn_tail(fd, name, contents)
            header, log_size = _header_of(fd, contents, session_id)
        except BaseException:
            os.close(fd)
            if created:  # leave no trace of a log that never got its header
                os.unlink(entry, dir_fd=dir_fd)
            raise
        return cls(
            path=name,
            fd=fd,
            header=header,
            state=state,
            event_count=len(contents.events),
            delivered=None,  # found in the events when first asked for
            size=log_size,
            created=created or not entry_durable,
            schedule_folded=fold_schedule,
            events=contents.events,
            dir_fd=dir_fd,
        )

    # --- appending --------------------------------------------------------------------------

    @property
    def delivered(self) -> Mapping[Member, str]:
        return self._delivered_now()

    def _delivered_now(self) -> dict[Member, str]:
        """:attr:`delivered`, found now if it was not yet: the owned suffix's follow-ups read
        at open, then those written or read in since, in order."""
        delivered = self._delivered
        if delivered is None:
            seed = self.header.seed_length
            delivered = self._delivered = delivered_members(self.events_at_open, seed_length=seed)
        later, self._later = self._later, []
        for event in later:
            _add_members(delivered, event)
        return delivered

    def _followup_in(self, event: LogEvent) -> None:
        """A follow-up written or read in after the open: its members are delivered."""
        self._later.append(event)  # read into :attr:`delivered` when it is next read

    def append(self, event: Mapping[str, Any]) -> LogEvent:
        """Append one event object as a compact line; returns it as read back.

        A ``schedule/change`` is checked by the invariant first; refused, it raises
        :class:`~schedlog.invariant.InvariantError` and nothing is written. A log opened with
        ``fold_schedule=False`` refuses every ``schedule/change`` with ``ValueError``. The line is
        round-tripped through the reader's decoder before it is written, so a value that would
        read back differently (a duplicate key after encoding, a non-string ``type``) is
        refused with ``ValueError`` instead of corrupting the log, and so is a line longer than
        :data:`~schedlog.eventlog.reader.MAX_LINE_BYTES`. Not durable until :meth:`flush`.
        """
        fd = self._require_open()
        line, logged = self._read_back(event)
        state = self._folded(self.state, logged)
        self._write(fd, line)
        self.state = state
        self._took(logged)
        return logged

    def append_many(self, events: Sequence[Mapping[str, Any]]) -> list[LogEvent]:
        """:meth:`append` of each event in order, the lines written with one ``write``: every
        line is read back and judged as :meth:`append` judges it before any is written, so a
        refused event writes nothing of the others. A failed write leaves none of them (the
        log is cut back, as :meth:`append` does). Not durable until :meth:`flush`.

        While a crash point is armed (the crash matrix) the lines are written one by one, as
        :meth:`append` writes them: a kill inside the N-th leaves the lines before it and half
        of it, which is a prefix of the one ``write`` (docs/protocol.md#torn-tail)."""
        fd = self._require_open()
        lines: list[bytes] = []
        logged_events: list[LogEvent] = []
        state = self.state
        for event in events:
            line, logged = self._read_back(event)
            state = self._folded(state, logged)
            lines.append(line)
            logged_events.append(logged)
        if crashpoints_armed():
            for line in lines:
                self._write(fd, line)
        else:
            self._write(fd, b"".join(lines), torn_point=False)
        self.state = state
        for logged in logged_events:
            self._took(logged)
        return logged_events

    def _read_back(self, event: Mapping[str, Any]) -> tuple[bytes, LogEvent]:
        """The event's line and the event the reader reads from it (see :meth:`append`)."""
        line = encode_line(event)
        if len(line) > MAX_LINE_BYTES + 1:  # readers would take it for corruption
            raise ValueError(f"event line of {len(line) - 1} bytes is over {MAX_LINE_BYTES}")
        try:
            value = loads_strict(line[:-1])
        except JSONSyntaxError as exc:
            raise ValueError(f"event does not encode to valid JSON: {exc}") from None
        try:
            logged = event_from_value(value, raw=line)
        except ValueError as exc:  # CorruptLogError is a ValueError
            raise ValueError(f"not an event: {exc}") from None
        return line, logged

    def _folded(self, state: FoldState, logged: LogEvent) -> FoldState:
        """``state`` after ``logged``: a ``schedule/change`` is judged by the invariant."""
        if logged.type != SCHEDULE_CHANGE_TYPE:
            return state
        if not self.schedule_folded:
            raise ValueError(
                f"session log {self.path} was opened without folding its schedule events;"
                " schedule/change events cannot be appended to it"
            )
        check(state, logged)
        return apply_event(state, logged)

    def _took(self, logged: LogEvent) -> None:
        """Count a written event; a follow-up's members are delivered now (read into
        :attr:`delivered` when it is next read)."""
        self.event_count += 1
        if logged.type == FOLLOWUP_TYPE:
            self._followup_in(logged)

    def catch_up(self) -> list[LogEvent] | None:
        """The events another writer appended since this log last wrote or looked, seen by the
        file's length (a session log only grows); they are folded into ``state`` and counted in
        ``event_count`` and ``delivered``. Empty when there are none; only complete lines are
        taken.

        None when the file at ``path`` is no longer the one open here, or is shorter than what
        this log wrote or saw (replaced or truncated): the caller re-opens the log, which reads
        and folds it from the start. Raises :class:`~schedlog.eventlog.errors.CorruptLogError`
        (located) when an appended line is corrupt or its change does not fold; nothing is
        taken then.
        """
        fd = self._require_open()
        info = os.fstat(fd)
        try:
            if self._dir_fd is None:
                named = os.stat(self.path)
            else:
                base = os.path.basename(self.path)
                named = os.stat(base, dir_fd=self._dir_fd, follow_symlinks=False)
        except OSError:
            return None
        if (named.st_dev, named.st_ino) != (info.st_dev, info.st_ino) or info.st_size < self._size:
            return None
        if info.st_size == self._size:
            return []
        data = os.pread(fd, info.st_size - self._size, self._size)
        end = data.rfind(b"\n") + 1
        state, index, offset = self.state, self.event_count, self._size
        events: list[LogEvent] = []
        for raw in io.BytesIO(data[:end]):
            try:
                if len(raw) > MAX_LINE_BYTES + 1:
                    raise CorruptLogError(
                        f"line is longer than {MAX_LINE_BYTES} bytes", rule="line_too_long"
                    )
                event = decode_event_line(raw)
                if event.type == SCHEDULE_CHANGE_TYPE and self.schedule_folded:
                    state = apply_event(state, event)
            except CorruptLogError as exc:
                exc.index = index
                raise exc.locate(file=self.path, line=index + 2, offset=offset) from None
            events.append(event)
            index += 1
            offset += len(raw)
        self.state, self.event_count, self._size = state, index, offset
        for event in events:
            if event.type == FOLLOWUP_TYPE:
                self._followup_in(event)
        return events

    def append_change(self, change: Change) -> LogEvent:
        """Append ``{"type":"schedule/change","data":CHANGE}`` (invariant-checked)."""
        return self.append({"type": SCHEDULE_CHANGE_TYPE, "data": change.to_json()})

    def _write(self, fd: int, line: bytes, *, torn_point: bool = True) -> None:
        if torn_point:
            crashpoint("eventlog.mid_line", fd, line)
        try:
            write_all(fd, line)
        except OSError:
            # Drop a partial line so the next append does not land after it; if even that
            # fails, the file's state is unknown and further appends are refused.
            try:
                os.ftruncate(fd, self._size)
            except OSError as exc:
                self._broken = f"a failed write could not be rolled back: {exc}"
            self._synced_size = None  # the next barrier makes the rollback durable too
            raise
        self._size += len(line)

    # --- durability -------------------------------------------------------------------------

    def flush(self, *, directory: bool = True) -> bool:
        """The durability barrier: return True once every appended line is ``fsync``ed, and,
        for a log created by :meth:`open`, its directory entry too (one ``fsync`` of the
        directory, at the first barrier).

        ``directory=False`` fsyncs the file only and leaves a new log's entry pending
        (:attr:`directory_pending`): the caller makes the entries of many new logs durable
        with one ``fsync`` of their directory, then calls :meth:`directory_synced` on each,
        and acknowledges nothing written to them before that (the batched delivery of
        schedlog.host.batch; docs/decisions.md "One directory fsync per batched run").

        Returns False when the log is closed. Raises ``OSError`` when ``fsync`` fails; that
        failure is sticky (later barriers fail too), because after a failed ``fsync`` the
        kernel may report later ones as clean without the data being on disk.
        """
        if self._fd is None:
            return False
        if self._broken is not None:
            raise OSError(f"session log {self.path} is not durable: {self._broken}")
        crashpoint("eventlog.before_barrier")
        try:
            os.fsync(self._fd)
            if self._dir_pending and directory:
                fsync_directory(os.path.dirname(self.path))
                self._dir_pending = False
        except OSError as exc:
            self._broken = f"fsync failed: {exc}"
            raise
        self._synced_size = self._size
        return True

    @property
    def directory_pending(self) -> bool:
        """True while this log's directory entry is not known to be durable: it was created
        by :meth:`open` (or re-opened with ``directory_synced=False``) and no barrier has
        fsynced its directory since."""
        return self._dir_pending

    def directory_synced(self) -> None:
        """Record that the log's directory was ``fsync``ed (successfully) after the log was
        created: its entry is durable, so no barrier fsyncs the directory for it again."""
        self._dir_pending = False

    @property
    def synced(self) -> bool:
        """True when the last barrier succeeded and nothing was written or read in since: a
        barrier now would find every appended line ``fsync``ed already."""
        return (
            self._fd is not None
            and self._broken is None
            and not self._dir_pending
            and self._synced_size == self._size
        )

    def _require_open(self) -> int:
        if self._fd is None:
            raise ValueError(f"session log {self.path} is closed")
        if self._broken is not None:
            raise OSError(f"session log {self.path} refuses appends: {self._broken}")
        return self._fd

    def close(self) -> None:
        """Close the file; lines appended since the last :meth:`flush` may not be durable."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def __enter__(self) -> LogAppender:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LogAppender({self.path!r}, session_id={self.header.session_id!r})"
