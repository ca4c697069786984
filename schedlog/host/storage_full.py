"""A write that failed because its storage is full (docs/errors.md#storage-full).

``ENOSPC``/``EDQUOT`` from the operating system, ``SQLITE_FULL`` from SQLite and SQLSTATE
``53100`` (``disk_full``) from PostgreSQL, anywhere in the exception's chain: the tool answers
``storage_full`` instead of ``internal_error``, and nothing was acknowledged.
"""

from __future__ import annotations

import errno
import sqlite3
from typing import Any, Final

from schedlog.host.stores.base import StoreUnavailableError

__all__ = ["STORAGE_FULL", "STORAGE_FULL_VALUE", "is_storage_full", "store_unavailable"]

STORAGE_FULL: Final = "storage_full"
STORAGE_FULL_VALUE: Final = {
    "code": STORAGE_FULL,
    "message": "the store or session log has no space left: nothing was saved; retry later",
}
_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT})
_SQLITE_FULL: Final = 13
_PG_DISK_FULL: Final = "53100"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc``, then its cause (or context), and so on; each once."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in out):
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def is_storage_full(exc: BaseException) -> bool:
    """True when ``exc``, its cause or its context says the storage is full."""
    return any(_says_full(e) for e in _chain(exc))


def store_unavailable(exc: BaseException) -> StoreUnavailableError | None:
    """The store's server did not answer in time, anywhere in ``exc``'s chain
    (docs/reliability.md#slow-postgresql): answered ``service_unavailable``."""
    for e in _chain(exc):
        if isinstance(e, StoreUnavailableError):
            return e
    return None


def _says_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in _ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        code: Any = getattr(exc, "sqlite_errorcode", None)
        return (isinstance(code, int) and code & 0xFF == _SQLITE_FULL) or (
            "database or disk is full" in str(exc)
        )
    return getattr(exc, "sqlstate", None) == _PG_DISK_FULL
