"""Task change events: what changed after each durable task write, and where they come from.

The host notifies ``schedule/changed`` after every durable write; a :class:`TaskChange` says
which task, of which session, and what kind of change it was. A :class:`ChangeSource` is
anything that reports them (the host service of this process; a store shared by several hosts
can report the changes the others commit). ``schedlog serve`` streams them as Server-Sent
Events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple, Protocol

__all__ = ["ChangeKind", "ChangeListener", "ChangeSource", "TaskChange"]

#: ``created``/``updated``/``deleted`` by a tool or a remote operation (archive stop deletes),
#: ``delivered`` when a delivery was committed, ``retrying`` when a delivery attempt failed and
#: another is planned, ``paused`` and ``resumed`` by a pause or a resume (docs/protocol.md#pause).
ChangeKind = Literal["created", "updated", "deleted", "delivered", "retrying", "paused", "resumed"]


class TaskChange(NamedTuple):
    """One committed change of one task."""

    id: str
    session_id: str
    kind: ChangeKind


ChangeListener = Callable[[TaskChange], None]


class ChangeSource(Protocol):
    """Reports every committed task change, in commit order, to each subscribed listener."""

    def subscribe_changes(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener(change)`` after each durable task write; returns an unsubscribe."""
        ...
