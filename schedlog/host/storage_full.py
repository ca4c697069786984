"""A write that failed because its storage is full (docs/errors.md#storage-full).

``ENOSPC``/``EDQUOT`` from the operating system, ``SQLITE_FULL`` from SQLite and SQLSTATE
``53100`` (``disk_full``) from PostgreSQL, anywhere in the exception's chain: the tool answers
``storage_full`` instead of ``internal_error``, and nothing was acknowledged.
"""

from __future__ import annotations

import errno
import sqlite3
from typing import Any, Final

__all__ = ["STORAGE_FULL", "STORAGE_FULL_VALUE", "is_storage_full"]

STORAGE_FULL: Final = "storage_full"
STORAGE_FULL_VALUE: Final = {
    "code": STORAGE_FULL,
    "message": "the store or session log has no space left: nothing was saved; retry later",
}
_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT})
_SQLITE_FULL: Final = 13
_PG_DISK_FULL: Final = "53100"


def is_storage_full(exc: BaseException) -> bool:
    """True when ``exc``, its cause or its context says the storage is full."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _says_full(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _says_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in _ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        code: Any = getattr(exc, "sqlite_errorcode", None)
        return (isinstance(code, int) and code & 0xFF == _SQLITE_FULL) or (
            "database or disk is full" in str(exc)
        )
    return getattr(exc, "sqlstate", None) == _PG_DISK_FULL
