"""The host task store contract (docs/protocol.md#store-sqlite, docs/protocol.md#open-failures),
the optional capabilities a store may offer, and the store lock.

A leaf: the backends import it, it imports no backend. Choosing and opening a backend is
:mod:`schedlog.host.stores.open`.

Every store is a :class:`TaskStore`. What else it offers it says by the capability protocols
below, which code outside :mod:`schedlog.host.stores` tests instead of a concrete class:

* :class:`InsertsMany`: several new tasks in one durable write (group commit);
* :class:`WritesFromAnyThread`: writes may run on a writer thread;
* :class:`HoldsPause`: can hold the paused state of a task (docs/protocol.md#pause);
* :class:`CatalogRows`: the catalog's sort and filter fields without decoding a task;
* :class:`OrdersCatalog`: the tasks in the catalog's order, filtered, by the store itself;
* :class:`ClaimingStore`: shared by several hosts, which claim due tasks with a lease;
* :class:`LocalStore`: written by this process only, so an in-memory index of it stays exact.

The file backends validate the whole store when opened and refuse with
:class:`~schedlog.errors.StoreOpenError` (``malformed-medium``, ``version-mismatch``,
``invalid-record``) without modifying any file. An open store holds an exclusive ``flock`` on a
side file ``<store>.lock`` so that two services cannot own one store.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

from schedlog.errors import StoreOpenError
from schedlog.files import FILE_MODE
from schedlog.host.task import Task

__all__ = [
    "CatalogKey",
    "CatalogRow",
    "CatalogRows",
    "ClaimingStore",
    "HoldsPause",
    "InsertsMany",
    "LocalStore",
    "OrdersCatalog",
    "StoreLock",
    "StoreLockedError",
    "StoreUnavailableError",
    "StoreWriteError",
    "StoredTask",
    "TaskStore",
    "WritesFromAnyThread",
    "check_holdable",
    "require_postgres",
    "store_pausable",
]


class StoredTask(NamedTuple):
    """A task with its storage-order key: ascending ``seq`` is storage order."""

    seq: int
    task: Task


class StoreLockedError(StoreOpenError):
    """Another open service holds the store's lock (code ``store-locked``)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__("store-locked", f"schedule store {path} is open in another service")


class StoreWriteError(OSError):
    """A task write did not persist; the store is unchanged as far as readers can tell."""


class StoreUnavailableError(StoreWriteError):
    """The store's server did not answer within its bound (docs/reliability.md#slow-postgresql):
    nothing was acknowledged, and the call may be retried. The service answers
    ``service_unavailable``."""


class TaskStore(Protocol):
    """Durable tasks keyed by record id, in storage order.

    Reads return committed state. Each write is durable when it returns, or raises
    :class:`StoreWriteError` and leaves the committed state as it was.
    """

    @property
    def path(self) -> Path | str:
        """Where the store is: a file, or a PostgreSQL URL without its password."""
        ...

    def tasks(self) -> Iterator[StoredTask]:
        """Every task, in storage order."""
        ...

    def session_tasks(self, session_id: str) -> list[StoredTask]:
        """The tasks bound to ``session_id``, in storage order."""
        ...

    def get(self, task_id: str) -> StoredTask | None: ...

    def active_targets(self) -> Iterator[tuple[int, int, str]]:
        """``(scheduledAt epoch ms, seq, id)`` of every active task (``status`` absent or
        ``"active"``), in storage order: the rows of the host timer index.

        Equal to what decoding every task gives, but without decoding them: the store was
        validated when it opened, so a backend may read these three values straight from its
        storage.
        """
        ...

    def insert(self, task: Task) -> int:
        """Append a new task (its id must be new); returns its ``seq``."""
        ...

    def replace(self, task: Task) -> None:
        """Rewrite an existing task in place (same ``seq``)."""
        ...

    def delete(self, task_id: str) -> bool:
        """Remove a task; False when there was none."""
        ...

    def count(self) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class InsertsMany(Protocol):
    """A store that can append several new tasks in one durable, all-or-nothing write."""

    def insert_many(self, tasks: Sequence[Task]) -> list[int]: ...


@runtime_checkable
class WritesFromAnyThread(Protocol):
    """A store whose writes may run on a thread other than the one that reads, one write at a
    time: they go through a connection of their own, so a read never sees a write before it is
    committed (the SQLite and PostgreSQL stores)."""

    @property
    def writes_from_any_thread(self) -> bool: ...


@runtime_checkable
class HoldsPause(Protocol):
    """A store that can hold a paused task (``pausedAt``, docs/protocol.md#pause) when
    ``pausable``: SQLite and PostgreSQL after their schema migration, never the JSON document
    (docs/decisions.md#pause-and-resume). A store without it cannot pause."""

    @property
    def pausable(self) -> bool: ...


def store_pausable(store: object) -> bool:
    """Whether ``store`` can hold the paused state."""
    return isinstance(store, HoldsPause) and store.pausable


def check_holdable(task: Task, pausable: bool, path: Path | str) -> None:
    """Refuse to write a paused task to a store that cannot hold the paused state: the write
    fails (:class:`StoreWriteError`) instead of silently dropping the pause."""
    if task.paused_at is not None and not pausable:
        raise StoreWriteError(
            f"cannot write paused task {task.id!r} to {path}: this store cannot hold a paused "
            "task (docs/protocol.md#pause)"
        )


#: ``(scheduledAt epoch ms, id, sessionId, title or "", active)`` of one task.
CatalogRow = tuple[int, str, str, str, bool]


@runtime_checkable
class CatalogRows(Protocol):
    """A store that reads the catalog fields of every task straight from its storage."""

    def catalog_rows(self) -> list[CatalogRow]: ...


#: ``(scheduledAt epoch ms, id)``: the catalog's order (ids by code point), and a cursor in it.
CatalogKey = tuple[int, str]


@runtime_checkable
class OrdersCatalog(Protocol):
    """A store that lists its tasks in the catalog's order itself (the PostgreSQL store, by
    SQL), so a catalog page decodes only the tasks near its cursor."""

    def catalog_tasks(
        self,
        after: CatalogKey | None = None,
        *,
        descending: bool = False,
        session_id: str | None = None,
        active: bool | None = None,
        title: str | None = None,
        batch: int = 1000,
    ) -> Iterator[StoredTask]:
        """Every task after ``after`` (exclusive; before it when ``descending``) by
        ``(scheduledAt, id)``, of ``session_id`` and with ``active`` when they are given.
        ``title`` (casefolded) lets the store skip tasks whose title cannot contain it; the
        caller still checks the title of those it gets. ``batch`` is how many the caller
        expects to read (a page and one more)."""
        ...


@runtime_checkable
class LocalStore(Protocol):
    """A store only this process writes (it holds the store lock): what it read stays true
    until it writes again, so an in-memory index kept current by change events is exact."""

    @property
    def locked_by_this_process(self) -> bool: ...


@runtime_checkable
class ClaimingStore(Protocol):
    """The delivery operations of a store shared by several hosts (the PostgreSQL backend).

    A host over a claiming store keeps no timer index of its own: it asks the store when to
    look next (:meth:`next_wake`), claims due tasks with a lease (:meth:`claim_due`), delivers
    each group under the session's lock and commits each member only while its claim holds
    (:meth:`commit_claimed`). See docs/decisions.md, "PostgreSQL store: several hosts".
    """

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

    def due_count(self, now: int) -> int:
        """Active tasks whose ``next_at`` is at most ``now``, whoever holds them."""
        ...

    #: Claims that took a task over from another host's lease (since this store opened).
    lease_takeovers: int


def require_postgres() -> None:
    """Return when the PostgreSQL backend's driver (psycopg and its pool) imports; otherwise
    raise ``backend-unavailable`` saying what to install. The one place that says so: call it
    before importing a ``pg_`` module or :mod:`schedlog.host.stores.postgres`."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise StoreOpenError(
            "backend-unavailable",
            f"the PostgreSQL backend needs psycopg ({exc}): pip install 'schedlog[postgres]'",
        ) from None


class StoreLock:
    """An exclusive, non-blocking ``flock`` on ``<path>.lock``, held until :meth:`release`.

    The lock file is a side file: it never touches the store's own bytes, so a refused store
    stays byte-for-byte unchanged.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(f"{path}.lock")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        except FileNotFoundError:
            message = f"the directory of schedule store {path} does not exist"
            raise StoreOpenError("store-not-found", message) from None
        except OSError as exc:  # an unwritable directory: no traceback
            message = f"cannot lock {self.path}: {exc.strerror or exc}"
            raise StoreOpenError("malformed-medium", message) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLockedError(path) from None
        except OSError as exc:
            os.close(fd)
            raise StoreOpenError("malformed-medium", f"cannot lock {self.path}: {exc}") from None
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
