"""``schedlog store copy SRC DST``: move every task from one store to another, of any backends.

The tasks are copied in storage order, each as it decodes (ids, session bindings, status,
receipts and delivery history are members of the task, so they travel with it), into a
destination that must be empty. Then both stores are read back side by side and must hold the
same tasks in the same order. A PostgreSQL source is validated first: its invalid rows would
otherwise be skipped (they read as absent), so the copy is refused with ``invalid-record``.
"""

from __future__ import annotations

import itertools
from typing import Any

from schedlog.errors import ScheduleError, StoreOpenError
from schedlog.host.stores.base import StoreWriteError, TaskStore, require_postgres
from schedlog.host.stores.open import Backend, open_store, select_backend

__all__ = ["CopyError", "copy_store"]


class CopyError(ScheduleError):
    """The copy was refused or did not verify: a stable ``code`` (``destination-not-empty``,
    ``copy-failed``, ``copy-mismatch``) and a message, as every error of the tree."""


def _check_postgres_source(src: str) -> None:
    require_postgres()
    from schedlog.host.stores.pg_admin import validate_postgres

    _, invalid, bad = validate_postgres(src)
    if bad:
        first = invalid[0]
        raise StoreOpenError(
            "invalid-record",
            f"task {first.id!r}: {first.message} ({bad} invalid task(s) in the source; "
            "`schedlog validate --store` lists them)",
        )


def copy_store(
    src: str, dst: str, *, src_backend: Backend | None = None, dst_backend: Backend | None = None
) -> dict[str, Any]:
    """Copy ``src`` into the empty store ``dst``; ``{"source","destination","tasks"}``.

    Raises :class:`StoreOpenError` when either store does not open, and :class:`CopyError`
    (``destination-not-empty``, ``copy-failed``, ``copy-mismatch``) otherwise.
    """
    if select_backend(src, src_backend) == "postgresql":
        _check_postgres_source(src)
    source = open_store(src, src_backend)
    try:
        destination = open_store(dst, dst_backend)
        try:
            return _copy(source, destination)
        finally:
            destination.close()
    finally:
        source.close()


def _copy(source: TaskStore, destination: TaskStore) -> dict[str, Any]:
    where = str(destination.path)
    if destination.count() != 0:
        raise CopyError(
            "destination-not-empty",
            f"destination store {where} holds {destination.count()} task(s); copy needs an "
            "empty one",
        )
    copied = 0
    try:
        for st in source.tasks():
            destination.insert(st.task)
            copied += 1
    except StoreWriteError as exc:
        raise CopyError(
            "copy-failed", f"writing {where} failed after {copied} task(s): {exc}"
        ) from None
    for n, (a, b) in enumerate(itertools.zip_longest(source.tasks(), destination.tasks())):
        if a is None or b is None or a.task != b.task:
            which = a.task.id if a is not None else b.task.id if b is not None else "?"
            raise CopyError(
                "copy-mismatch",
                f"read back, task {n + 1} ({which!r}) of {where} differs from the source",
            )
    return {"source": str(source.path), "destination": where, "tasks": copied}
