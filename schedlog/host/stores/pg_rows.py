"""The PostgreSQL backend's shared pieces: URLs, connections, and the row format.

A row is ``(seq, id, session_id, status, next_at, version, body)``: the body is the task's exact
JSON text, and the engine columns are derived from it by the writer and compared with it on read
(docs/decisions.md, "PostgreSQL store: per-row invalid records").
"""

from __future__ import annotations

import os
import secrets
import socket
import urllib.parse
from typing import Any, Final, NamedTuple

import psycopg

from schedlog.errors import StoreOpenError
from schedlog.host.stores.base import StoredTask, StoreWriteError
from schedlog.host.task import InvalidTaskError, Task, decode_task, encode_task
from schedlog.rules.text import js_dumps
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = [
    "InvalidRow",
    "Row",
    "StoreConflictError",
    "connect",
    "decode_or_invalid",
    "decode_row",
    "is_postgres_url",
    "malformed",
    "new_owner",
    "reason",
    "redact_url",
    "row_columns",
    "status_column",
    "storable",
]

CONNECT_TIMEOUT_S: Final = 10

Row = tuple[int, str, str, str, int, int, str]


def new_owner() -> str:
    """A lease owner unique to one open store: ``host:pid:random`` (at most 63 bytes, the
    length of a PostgreSQL ``application_name``)."""
    host = socket.gethostname().encode("ascii", "replace")[:40].decode()
    return f"{host}:{os.getpid()}:{secrets.token_hex(4)}"


def is_postgres_url(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """``url`` without its password, for messages and reports."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def malformed(url: str, exc: BaseException) -> StoreOpenError:
    """The open failure of a PostgreSQL store: ``store-unreachable`` when no connection could be
    made or kept (the server refused, did not answer, or rejected the login), else
    ``malformed-medium``."""
    code = "store-unreachable" if isinstance(exc, psycopg.OperationalError) else "malformed-medium"
    return StoreOpenError(code, f"cannot open schedule store {redact_url(url)}: {reason(exc)}")


def reason(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def storable(key: str) -> bool:
    """Whether PostgreSQL text can hold ``key``: no NUL and no lone surrogate (no UTF-8 form).

    A key that cannot be stored was never written, so looking it up finds nothing.
    """
    if "\x00" in key:
        return False
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def connect(url: str, **kwargs: Any) -> psycopg.Connection[Any]:
    return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, **kwargs)


def decode_row(row: Row) -> StoredTask:
    """Strict-decode one row and check its engine columns against the body, or raise
    :class:`InvalidTaskError` naming what failed."""
    seq, key, session_id, status, next_at, _version, body = row
    try:
        value = loads_strict(body)
    except JSONSyntaxError as exc:
        raise InvalidTaskError(f"schedule task body is not valid JSON: {exc.message}") from None
    task = decode_task(key, value, pausable=True)
    if session_id != task.session_id:
        raise InvalidTaskError(
            f"schedule task session_id {session_id!r} differs from sessionId {task.session_id!r}"
        )
    if status != status_column(task):
        raise InvalidTaskError(
            f"schedule task status column {status!r} differs from the body's "
            f"{status_column(task)!r}"
        )
    if next_at != task.record.scheduled_at:
        raise InvalidTaskError(
            f"schedule task next_at {next_at} differs from scheduledAt "
            f"{task.record.scheduled_at} (epoch ms)"
        )
    return StoredTask(seq, task)


def status_column(task: Task) -> str:
    """The ``status`` column: the task's status, or ``paused`` for a paused task (schema
    version 4), which no query of active tasks selects."""
    return "paused" if task.paused else task.effective_status


def row_columns(task: Task) -> tuple[str, str, str, int, str]:
    """``(id, session_id, status, next_at, body)`` as the writer stores them."""
    body = js_dumps(encode_task(task))
    return task.id, task.session_id, status_column(task), task.record.scheduled_at, body


class InvalidRow(NamedTuple):
    """A row that does not decode: its id and what failed."""

    id: str
    message: str


def decode_or_invalid(row: Row) -> StoredTask | InvalidRow:
    try:
        return decode_row(row)
    except InvalidTaskError as exc:
        return InvalidRow(row[1], exc.message)


class StoreConflictError(StoreWriteError):
    """A compare-and-set found the row changed by another writer since it was read."""
