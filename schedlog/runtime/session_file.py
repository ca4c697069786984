"""The reference embedding: one session over one JSON Lines log file (docs/protocol.md#session-log,
docs/concepts.md#live-owner).

:class:`FileSession` is both capabilities the engine needs from a session: the
:class:`~schedlog.runtime.interfaces.SessionLog` (backed by
:class:`schedlog.invariant.appender.LogAppender`, the appender that truncates a torn tail on
open and checks the invariant on every schedule append) and the
:class:`~schedlog.runtime.interfaces.Agent` (turns, maintenance claims, idle notifications and a
follow-up outbox). Its ``followup`` writes the ``message/followup`` event
(docs/protocol.md#followup-events) before the message is queued, so a follow-up that is in the
outbox is always in the log.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from schedlog.collector import collector_paused
from schedlog.errors import CorruptScheduleError
from schedlog.eventlog import build_followup
from schedlog.eventlog.events import LogEvent
from schedlog.eventlog.header import Header
from schedlog.eventlog.line_events import LineEvents
from schedlog.fold.incremental import FoldCursor
from schedlog.fold.state import FoldState
from schedlog.invariant.appender import LogAppender
from schedlog.invariant.fastcheck import Split
from schedlog.runtime.interfaces import FollowupMessage

if TYPE_CHECKING:
    import asyncio

__all__ = ["FileSession", "default_session_id"]


def default_session_id(path: str | os.PathLike[str]) -> str:
    """The file name without its ``.jsonl`` suffix (docs/protocol.md#batch-session)."""
    name = os.path.basename(os.fspath(path))
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name


class _Claim:
    def __init__(self, session: FileSession) -> None:
        self._session = session
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._session._end_claim()


class FileSession:
    """A live session over the log at ``path``.

    The log is opened for append lazily, at the first operation, and re-tried on later
    operations while opening fails: an unreadable log makes the durability barrier fail
    (``persistence_uncertain``), a corrupt one makes ``events()`` raise
    :class:`~schedlog.errors.CorruptScheduleError` (``corrupt_schedule_log``). A new log gets
    the header ``sessionId = session_id`` (default: the file name without ``.jsonl``).

    Turns are marked by the embedder with :meth:`begin_turn` / :meth:`end_turn`; the end of a
    turn is the idle notification. Follow-ups go to :attr:`outbox` (and to ``on_followup``).

    ``split`` is for a command-line edge that may fork (``session batch``): each open checks a
    long log's second half in a child process (:meth:`LogAppender.open`); an embedder gives
    none.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        on_followup: Callable[[FollowupMessage], None] | None = None,
        split: Split | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self._split = split
        self._new_session_id = session_id or default_session_id(path)
        self._log: LogAppender | None = None
        self._events: list[LogEvent] | LineEvents = []
        # The list read at open, how many events it held then, and their fold.
        self._opened: tuple[Sequence[LogEvent], int, FoldState] | None = None
        self._open_error: BaseException | None = None
        self.outbox: list[FollowupMessage] = []
        self._on_followup = on_followup
        self._turn = False
        self._claimed = False
        # Set while the agent is idle; made by the first ``when_idle`` (``session batch`` never
        # waits, and never imports asyncio).
        self._idle: asyncio.Event | None = None
        self._subscribers: list[Callable[[], None]] = []

    # --- the session log ---------------------------------------------------------------------

    def open(self) -> bool:
        """Open the log for append if it is not open yet; True when it is open."""
        if self._log is not None:
            return True
        # The open builds one acyclic value per event, all of which survive: the cyclic
        # collector is paused meanwhile, or it would traverse them again and again (a third of
        # the open of a 200,000-event log; docs/decisions.md, "Opening a session").
        try:
            with collector_paused():
                log = LogAppender.open(
                    self.path, session_id=self._new_session_id, split=self._split
                )
        except (OSError, CorruptScheduleError, ValueError) as exc:
            self._open_error = exc
            return False
        self._log, self._open_error = log, None
        # The open read them: no second read. The events an open's fast path read are built
        # on first use (docs/decisions.md, "Opening a session: events built on first use").
        read = log.events_at_open
        self._events = read.copy() if type(read) is LineEvents else list(read)
        self._opened = (self._events, len(self._events), log.state) if log.schedule_folded else None
        return True

    def resume_fold(self, cursor: FoldCursor) -> None:
        """Give ``cursor``, when it holds no fold yet, the fold the open made of the events it
        read (:meth:`FoldCursor.resume`), so that the first fold after the open folds only
        what was appended since, not the whole log again."""
        opened = self._opened
        if cursor.folded or self._log is None or opened is None:
            return
        events, count, state = opened
        cursor.resume(events, count, seed_length=self._log.header.seed_length, state=state)

    def _require(self) -> LogAppender:
        if not self.open():
            error = self._open_error
            if isinstance(error, CorruptScheduleError | OSError):
                raise error
            raise OSError(f"session log {self.path} cannot be opened: {error}")
        assert self._log is not None
        return self._log

    @property
    def header(self) -> Header:
        return self._require().header

    def events(self) -> Sequence[LogEvent]:
        """The log's events: those read at open, this session's appends, and those another
        writer appended since, seen by the file's length. A log that was replaced or
        truncated is opened again and read from the start (a new list)."""
        appended = self._require().catch_up()
        if appended is None:
            self.close()
            self._require()
        elif appended:
            self._events.extend(appended)
        return self._events

    def append(self, event: Mapping[str, Any]) -> None:
        self._events.append(self._require().append(event))

    def flush(self) -> bool:
        """The durability barrier. A corrupt log has nothing pending and reports True, so that
        the fold that follows reports the corruption; an unopenable log reports False.

        When nothing was appended or read in since the last barrier succeeded, every line is
        ``fsync``ed already and no ``fsync`` is run (the engine runs a barrier before every read,
        so a run of reads would otherwise ``fsync`` an unchanged file each time)."""
        if not self.open():
            return isinstance(self._open_error, CorruptScheduleError)
        assert self._log is not None
        if self._log.synced:
            return True
        return self._log.flush()

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    # --- the agent ---------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._turn or self._claimed

    def begin_turn(self) -> None:
        """The agent starts a turn (a user message, or a queued follow-up being answered)."""
        if self.busy:
            raise RuntimeError("the agent is already busy")
        self._turn = True
        if self._idle is not None:
            self._idle.clear()

    def end_turn(self) -> None:
        """The turn ended: the agent is idle, and idle subscribers are notified."""
        self._turn = False
        self._update_idle()
        for callback in list(self._subscribers):
            callback()

    def claim_maintenance(self) -> _Claim | None:
        if self.busy:
            return None
        self._claimed = True
        if self._idle is not None:
            self._idle.clear()
        return _Claim(self)

    def _end_claim(self) -> None:
        # Releasing a maintenance claim is not an idle notification: the owner re-drives on
        # its own, and treating its own release as a trigger would retry failures in a loop.
        self._claimed = False
        self._update_idle()

    def _update_idle(self) -> None:
        if not self.busy and self._idle is not None:
            self._idle.set()

    async def when_idle(self) -> None:
        if self._idle is None:
            import asyncio  # the loop running this has it

            self._idle = asyncio.Event()
            if not self.busy:
                self._idle.set()
        while self.busy:
            await self._idle.wait()

    def subscribe_idle(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def followup(self, message: FollowupMessage) -> None:
        """Write the ``message/followup`` event, then queue the message. Raises when the event
        could not be appended (nothing is queued then)."""
        log = self._require()
        event = build_followup(
            log.header.session_id, message.members, message.text, message.created_at
        )
        if event["data"]["messageId"] != message.message_id:
            raise ValueError("follow-up message id does not match its members")
        self.append(event)
        self.outbox.append(message)
        if self._on_followup is not None:
            self._on_followup(message)
