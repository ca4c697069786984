"""The host task store interface (docs/protocol.md#store-sqlite, docs/protocol.md#open-failures) and
the store lock.

A leaf: the backends import it, it imports no backend. Choosing and opening a backend is
:mod:`schedlog.host.backends`.

Both backends validate the whole store when opened and refuse with
:class:`~schedlog.errors.StoreOpenError` (``malformed-medium``, ``version-mismatch``,
``invalid-record``) without modifying any file. An open store holds an exclusive ``flock`` on a
side file ``<store>.lock`` so that two services cannot own one store.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple, Protocol

from schedlog.errors import StoreOpenError
from schedlog.files import FILE_MODE
from schedlog.host.task import Task

__all__ = [
    "StoreLock",
    "StoreLockedError",
    "StoreWriteError",
    "StoredTask",
    "TaskStore",
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


class StoreLock:
    """An exclusive, non-blocking ``flock`` on ``<path>.lock``, held until :meth:`release`.

    The lock file is a side file: it never touches the store's own bytes, so a refused store
    stays byte-for-byte unchanged.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(f"{path}.lock")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        except OSError as exc:  # a missing or unwritable directory: no traceback
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
