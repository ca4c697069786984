"""What an agent runtime supplies to embed the session-local engine (docs/concepts.md#live-owner).

Three capabilities, as structural :class:`typing.Protocol` types so that any object with the
right methods fits:

* :class:`SessionLog`: the session's durable log: its header, its complete events, appends,
  and the durability barrier ``flush`` (docs/protocol.md#durability);
* :class:`Agent`: the agent loop: ``claim_maintenance``, ``when_idle``, ``followup`` and idle
  notifications;
* a :class:`~schedlog.clock.Clock`: the wall clock in epoch milliseconds (UTC) and sleeping
  until a deadline (defined in :mod:`schedlog.clock`, below both engines).

:class:`FollowupMessage` is what the engine hands to ``Agent.followup``. The reference
implementations are :class:`schedlog.runtime.session_file.FileSession` (log and agent over one
JSON Lines file) and the clocks of :mod:`schedlog.runtime.clock`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from schedlog.eventlog.events import LogEvent
from schedlog.eventlog.followups import Member

__all__ = [
    "Agent",
    "FollowupMessage",
    "LogHeader",
    "MaintenanceClaim",
    "SessionLog",
    "SessionLogContractError",
    "check_events",
]


class LogHeader(Protocol):
    """Line 1 of a session log: who the session is and how many events it inherited."""

    @property
    def session_id(self) -> str: ...

    @property
    def seed_length(self) -> int: ...


class SessionLog(Protocol):
    """The session's JSON Lines log as the engine sees it.

    * ``header``: the session header (the owned suffix starts at ``seed_length``).
    * ``events()``: every complete event after the header, in order (event index = position),
      as :class:`~schedlog.eventlog.events.LogEvent` structs (not plain dicts: convert a decoded
      line with :func:`schedlog.eventlog.event_from_value`; :func:`check_events` enforces this).
      Raises :class:`~schedlog.errors.CorruptScheduleError` when the log is corrupt
      (docs/protocol.md#torn-tail) and :class:`OSError` when it cannot be read.
    * ``append(event)``: appends one event object ``{"type": T, "data": D}``. It need not be
      durable when it returns; a ``schedule/change`` append MUST be rejected, with nothing
      written, when the change breaks the invariant (docs/protocol.md#fold). The engine checks the
      invariant itself before appending, so implementations may rely on that.
    * ``flush()``: the durability barrier: returns True only once everything appended so far is
      written and fsynced. False, or an exception, is a failure.
    """

    @property
    def header(self) -> LogHeader: ...

    def events(self) -> Sequence[LogEvent]: ...

    def append(self, event: Mapping[str, Any]) -> None: ...

    def flush(self) -> bool: ...


class SessionLogContractError(TypeError):
    """A :class:`SessionLog` broke its contract: ``events()`` returned something other than a
    sequence of :class:`~schedlog.eventlog.events.LogEvent` structs. A programming error of the
    embedder, raised to the caller (never turned into a tool value); the live owner logs it as
    ``owner.faulted`` and stops delivering."""


def check_events(events: object) -> Sequence[LogEvent]:
    """``events`` when it is a sequence whose first and last items are ``LogEvent`` structs
    (a cheap check at the edge: a wrong implementation returns the same kind of item
    throughout); else :class:`SessionLogContractError`, naming what came back."""
    if not isinstance(events, Sequence) or isinstance(events, str | bytes):
        raise SessionLogContractError(
            f"SessionLog.events() must return a sequence of schedlog.LogEvent, got "
            f"{type(events).__name__}"
        )
    for index in {0, len(events) - 1} if events else ():
        item = events[index]
        if not isinstance(item, LogEvent):
            raise SessionLogContractError(
                f"SessionLog.events() must return schedlog.LogEvent structs, but item {index} "
                f"is a {type(item).__name__}; convert a decoded line with "
                "schedlog.eventlog.event_from_value(value)"
            )
    return events


class MaintenanceClaim(Protocol):
    """Exclusive use of an idle agent for one piece of maintenance work."""

    def release(self) -> None: ...


@dataclass(frozen=True, slots=True)
class FollowupMessage:
    """A user-role follow-up message carrying delivered reminders
    (docs/protocol.md#followup-events).

    ``text`` is the full framing text (docs/protocol.md#framing), ``members`` are in framing order,
    ``message_id`` is their deterministic id (docs/protocol.md#message-ids) and ``created_at`` is
    the decision clock sample (epoch ms). The ``message/followup`` event written for it is
    :func:`schedlog.eventlog.followups.build_followup` of these fields.
    """

    message_id: str
    text: str
    members: tuple[Member, ...]
    created_at: int


class Agent(Protocol):
    """The agent loop the live owner delivers into. It never interrupts a running turn.

    * ``claim_maintenance()``: a claim when the agent is idle, ``None`` at once while a turn or
      another maintenance task is running;
    * ``when_idle()``: completes when the agent is idle (possibly at once);
    * ``followup(message)``: synchronously enqueues the user-role follow-up and writes its
      ``message/followup`` event to the session log; raises when it could not;
    * ``subscribe_idle(callback)``: calls ``callback()`` each time the agent becomes idle;
      returns a function that unsubscribes.
    """

    def claim_maintenance(self) -> MaintenanceClaim | None: ...

    async def when_idle(self) -> None: ...

    def followup(self, message: FollowupMessage) -> None: ...

    def subscribe_idle(self, callback: Callable[[], None]) -> Callable[[], None]: ...
