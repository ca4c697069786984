"""The session-local engine on virtual time, for ``schedlog session batch``
(docs/protocol.md#batch-session).

Every clock sample taken while serving a request equals that request's ``now``; the agent is
always idle; tool calls never deliver (their re-drive requests are dropped) and deliveries
happen only on :meth:`BatchSession.tick`. A fault of the owner lasts for the life of the object.

The delivery step (:mod:`schedlog.runtime.delivery`) is imported by the first tick: a batch's
first answer is often a tool call on a session just opened.
"""

from __future__ import annotations

import os
from typing import Any

from schedlog._lazy import LazyLogger
from schedlog.diagnostics import instant_field
from schedlog.eventlog.followups import Member
from schedlog.fold.incremental import FoldCursor
from schedlog.invariant.fastcheck import Split
from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.interfaces import FollowupMessage
from schedlog.runtime.session_file import FileSession
from schedlog.runtime.tools import SessionTools, ToolValue

__all__ = ["BatchSession", "delivery_json"]

log = LazyLogger("schedlog.runtime")


def delivery_json(message: FollowupMessage) -> dict[str, Any]:
    """One ``delivered`` entry of a tick: ``{"messageId","text","reminders"}``."""
    return {
        "messageId": message.message_id,
        "text": message.text,
        "reminders": [Member.to_json(m) for m in message.members],
    }


class BatchSession:
    """One session log served request by request at virtual time (``split``: see
    :class:`FileSession`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        session_id: str | None = None,
        split: Split | None = None,
    ) -> None:
        self.clock = VirtualClock()
        self.session = FileSession(path, session_id=session_id, split=split)
        self.tools = SessionTools(self.session, self.clock)
        self.faulted = False
        self._cursor = FoldCursor()  # each tick folds only what was appended since the last

    def _at(self, now: int) -> None:
        self.clock.set(now)
        self.session.open()

    def schedule_create(self, now: int, args: object) -> ToolValue:
        self._at(now)
        return self.tools.schedule_create(args)

    def schedule_list(self, now: int, args: object) -> ToolValue:
        self._at(now)
        return self.tools.schedule_list(args)

    def schedule_delete(self, now: int, args: object) -> ToolValue:
        self._at(now)
        return self.tools.schedule_delete(args)

    def tick(self, now: int) -> list[dict[str, Any]]:
        """Drive at ``now`` until nothing is due; the follow-ups sent, in order."""
        from schedlog.runtime.delivery import FAULTED, drive_pass

        self._at(now)
        if self.faulted:
            log.warning(
                "owner.tick_skipped",
                now=instant_field(now),
                message="schedule: live owner is faulted; nothing is delivered",
            )
            return []
        delivered: list[dict[str, Any]] = []
        for outcome in drive_pass(self.session, self.session, self.clock, self._cursor):
            if outcome.message is not None:
                delivered.append(delivery_json(outcome.message))
            if outcome.kind == FAULTED:
                self.faulted = True
        return delivered

    def archive_activity(self, now: int) -> dict[str, Any] | None:
        """docs/protocol.md#session-archive activity: nothing once the owner is faulted."""
        self._at(now)
        if self.faulted:
            return None
        return self.tools.archive_items()

    def archive_stop(self, now: int) -> dict[str, Any]:
        """docs/protocol.md#session-archive stop: ``{"deleted":[ids]}``; raises the error values as
        :class:`~schedlog.errors.ScheduleError`."""
        self._at(now)
        return {"deleted": self.tools.archive_stop()}

    def close(self) -> None:
        self.session.close()
