"""Task change events: what changed after each durable task write, and where they come from.

The host notifies ``schedule/changed`` after every durable write; a :class:`TaskChange` says
which task, of which session, and what kind of change it was. A :class:`ChangeSource` is
anything that reports them (the host service of this process; a store shared by several hosts
can report the changes the others commit). ``schedlog serve`` streams them as Server-Sent
Events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, Literal, NamedTuple, Protocol

from schedlog.host.task import Task

__all__ = ["ChangeKind", "ChangeListener", "ChangeSource", "TaskChange", "remote_change"]

#: ``created``/``updated``/``deleted`` by a tool or a remote operation (archive stop deletes),
#: ``delivered`` when a delivery was committed, ``retrying`` when a delivery attempt failed and
#: another is planned, ``paused`` and ``resumed`` by a pause or a resume (docs/protocol.md#pause).
ChangeKind = Literal["created", "updated", "deleted", "delivered", "retrying", "paused", "resumed"]


class TaskChange(NamedTuple):
    """One committed change of one task."""

    id: str
    session_id: str
    kind: ChangeKind
    #: The task as committed, when the writer has it at hand (a batched delivery): a listener
    #: may use it instead of reading the task back. None: read it from the store.
    task: Task | None = None


ChangeListener = Callable[[TaskChange], None]


class ChangeSource(Protocol):
    """Reports every committed task change, in commit order, to each subscribed listener."""

    def subscribe_changes(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener(change)`` after each durable task write; returns an unsubscribe."""
        ...


#: The change kinds another host's commit can report (``LISTEN`` payloads).
_REMOTE_KINDS: Final[dict[str, ChangeKind]] = {
    "created": "created",
    "updated": "updated",
    "deleted": "deleted",
    "delivered": "delivered",
    "paused": "paused",
    "resumed": "resumed",
}


def remote_change(payload: Mapping[str, str]) -> TaskChange | None:
    """The change another host committed (a ``LISTEN`` payload), or None when the payload does
    not say which task and how (a change is still reported, without a task)."""
    kind = _REMOTE_KINDS.get(payload.get("kind", ""))
    if kind is None or "id" not in payload or "sessionId" not in payload:
        return None
    return TaskChange(payload["id"], payload["sessionId"], kind)
