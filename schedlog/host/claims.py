"""What a store shared by several hosts offers their delivery (the PostgreSQL backend).

A host over a :class:`ClaimingStore` keeps no timer index of its own: it asks the store when to
look next (:meth:`~ClaimingStore.next_wake`), claims due tasks with a lease
(:meth:`~ClaimingStore.claim_due`), delivers each group under the session's lock and commits
each member only while its claim holds (:meth:`~ClaimingStore.commit_claimed`). See
docs/decisions.md, "PostgreSQL store: several hosts".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from schedlog.host.store import StoredTask
from schedlog.host.task import Task

__all__ = ["ClaimingStore"]


@runtime_checkable
class ClaimingStore(Protocol):
    """The delivery operations of a shared store (on top of :class:`TaskStore`)."""

    owner: str
    #: How long a claim lasts on the database clock unless extended (ms).
    lease_ms: int

    def atomic(self) -> AbstractContextManager[None]:
        """One transaction: reads inside lock their rows, ``replace`` compares-and-sets."""
        ...

    def next_wake(self, excluded: Iterable[str] = ()) -> int | None: ...

    def claim_due(self, now: int, excluded: Iterable[str] = ()) -> list[StoredTask]: ...

    def extend_leases(self, ids: Iterable[str]) -> set[str]: ...

    def commit_claimed(self, task: Task) -> None: ...

    def release(self, ids: Iterable[str]) -> None: ...

    def hold(self, delays: Mapping[str, int]) -> None: ...

    def session_lock(self, session_id: str) -> AbstractContextManager[None]: ...

    def listen(self, on_change: Callable[[dict[str, str]], None]) -> None: ...

    def active_count(self) -> int: ...
