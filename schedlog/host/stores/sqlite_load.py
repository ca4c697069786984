"""Reading every task row of an SQLite store in one read transaction, strictly validated: the
row loop of :mod:`schedlog.host.stores.sqlite_validate` (opening a store, ``validate``, the read
commands).

Two paths give one verdict. :func:`decode_row` with :func:`check_row` is the readable
reference: each row through the strict JSON reader and :func:`~schedlog.host.task.decode_task`.
:func:`load_rows` reads the rows a chunk (a range of seqs) at a time, as one query's few
values: the bodies joined into one text, the seqs into another, and a flag for the column
checks, which SQLite makes (:data:`_CHUNK`). It hands each chunk to the bulk fast path
:func:`schedlog.host.task_typed.check_chunk`; a chunk it does not vouch for goes row by row
through the reference, so a bad row is reported with the same code, message and row as
before, and always the first bad row in storage order. ``tests/host/test_task_typed.py`` and
``tests/host/test_sqlite_load.py`` hold the two paths equal (docs/decisions.md, "Start-up on a
large SQLite store: fewer objects per row").

Besides the count, :func:`load_rows` collects the timer-index keys ``(scheduledAt, seq, id)``
of the active, unpaused tasks on request, so that opening a store for a service reads each row
once (:class:`~schedlog.host.due.LocalTimerIndex` is built from them).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from operator import lt
from typing import Final

import msgspec

from schedlog._crashpoints import crashpoint
from schedlog.collector import collector_paused
from schedlog.errors import StoreOpenError
from schedlog.host.stores.base import StoredTask
from schedlog.host.task import InvalidTaskError, decode_task
from schedlog.host.task_built import built_tasks
from schedlog.host.task_typed import Row, TimerKey, check_chunk, check_rows
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = [
    "CHUNK_ROWS",
    "DUE_ROWS",
    "ValidationStopped",
    "check_row",
    "decode_row",
    "decode_rows",
    "due_keys",
    "load_rows",
]

#: Rows read and checked together by the fast path (a chunk it refuses is read row by row).
CHUNK_ROWS: Final = 4096
_ROWS: Final = "SELECT seq, id, session_id, body FROM tasks ORDER BY seq"
_ROWS_AFTER: Final = "SELECT seq, id, session_id, body FROM tasks WHERE seq > ? ORDER BY seq"
_ROWS_BETWEEN: Final = (
    "SELECT seq, id, session_id, body FROM tasks WHERE seq >= ? AND seq <= ? ORDER BY seq"
)
#: One chunk of rows in storage order, the rows with ``? <= seq <= ?``, as a few values: how
#: many, the last seq, the seqs and the bodies each joined by commas, and 1 when every row
#: passes the column checks of :func:`~schedlog.host.task_typed.check_chunk` (else 0 or NULL).
#: ``json_quote`` writes the JSON text of a text column (NUL included, never NULL), and
#: ``instr(...) = 1`` means the body starts with what follows, compared byte for byte.
_CHUNK: Final = """
SELECT count(*), max(seq), group_concat(seq), group_concat(body, ','),
  min(CASE WHEN typeof(id) = 'text' AND typeof(session_id) = 'text' AND typeof(body) = 'text'
    THEN instr(body, '{"sessionId":' || json_quote(session_id) || ',"record":{"id":'
      || json_quote(id)) = 1
    ELSE 0 END)
FROM tasks WHERE seq >= ? AND seq <= ?
"""
#: The first seq from a given one on (None past the last row).
_NEXT_SEQ: Final = "SELECT min(seq) FROM tasks WHERE seq >= ?"
_MAX_SEQ: Final = 2**63 - 1
#: The rows that may be due by a bound (a canonical instant text, the parameter), read before
#: the store is validated so that they can be delivered first (docs/decisions.md, "Start-up:
#: due rows first"): every row whose record ``scheduledAt``, as SQLite's JSON reader finds it,
#: is at most the bound, and every row where it finds none or cannot read the body. The
#: comparison is of texts; canonical instants (fixed width, four-digit years) sort as their
#: instants do, and a row whose value is not one is invalid, refused by the full validation.
#: ``json_extract`` finds a member name only as written (not one spelled with an escape) and
#: the first of duplicate names; the row then reads NULL, or is invalid (the strict reader
#: refuses duplicates), so a valid row never hides a due target here.
DUE_ROWS: Final = """
SELECT seq, id, session_id, body FROM tasks
WHERE NOT ifnull(CASE WHEN typeof(body) = 'text' AND json_valid(body)
  THEN json_extract(body, '$.record.scheduledAt') END > ?, 0)
ORDER BY seq
"""
_decode_seqs: Final = msgspec.json.Decoder(list[int]).decode


def decode_row(
    seq: int, key: str, session_id: str, body: str, *, pausable: bool = False
) -> StoredTask:
    """The stored task of one row (the reference decoder); :class:`InvalidTaskError` naming the
    failing member."""
    try:
        value = loads_strict(body.encode("utf-8", "surrogatepass"))
    except JSONSyntaxError as exc:
        raise InvalidTaskError(f"schedule task body is not valid JSON: {exc.message}") from None
    task = decode_task(key, value, pausable=pausable)
    if session_id != task.session_id:
        raise InvalidTaskError(
            f"schedule task session_id {session_id!r} differs from sessionId {task.session_id!r}"
        )
    return StoredTask(seq, task)


def decode_rows(
    rows: Sequence[tuple[int, str, str, str]], *, pausable: bool = False
) -> list[StoredTask]:
    """:func:`decode_row` of each row, in order: built at once by the bulk fast path
    (:func:`~schedlog.host.task_built.built_tasks`) when it vouches for them all, else row by
    row through the reference, which raises for the first bad row as it always did."""
    fast = built_tasks(rows, pausable=pausable)
    if fast is not None:
        return fast
    return [decode_row(*row, pausable=pausable) for row in rows]


def check_row(row: Row, *, pausable: bool) -> StoredTask:
    """One row as the store reads it (any column type), or ``invalid-record`` naming its key."""
    seq, key, session_id, body = row
    try:
        if not (isinstance(key, str) and isinstance(session_id, str) and isinstance(body, str)):
            raise InvalidTaskError("schedule task columns must be text")
        return decode_row(seq, key, session_id, body, pausable=pausable)
    except InvalidTaskError as exc:
        raise StoreOpenError("invalid-record", f"task {key!r}: {exc.message}") from None


class ValidationStopped(Exception):
    """:func:`load_rows` was asked to stop (its ``cancel`` event was set) between two chunks."""


def due_keys(rows: Sequence[Row], *, pausable: bool) -> list[TimerKey] | None:
    """The timer-index keys of the active, unpaused tasks of ``rows`` (in row order), each
    row strictly validated by the same checks as :func:`load_rows` (the bulk fast path, else
    the reference row by row); None when a row is bad (the caller then validates the whole
    store, which reports the first bad row in storage order, as it always did)."""
    keys = check_rows(rows, pausable=pausable)
    if keys is not None:
        return keys
    keys = []
    try:
        _reference(rows, pausable, None, keys)
    except StoreOpenError:
        return None
    return keys


def _reference(
    rows: Iterable[Row],
    pausable: bool,
    tasks: list[StoredTask] | None,
    targets: list[TimerKey] | None,
) -> int:
    """The reference loop: every row decoded, the first bad one refused."""
    count = 0
    for row in rows:
        stored = check_row(row, pausable=pausable)
        if tasks is not None:
            tasks.append(stored)
        task = stored.task
        if targets is not None and task.active and not task.paused:
            targets.append((task.record.scheduled_at, stored.seq, task.id))
        count += 1
    return count


def load_rows(
    conn: sqlite3.Connection,
    *,
    pausable: bool,
    tasks: list[StoredTask] | None = None,
    targets: list[TimerKey] | None = None,
    cancel: threading.Event | None = None,
) -> int:
    """Validate every row of ``conn``'s tasks table in storage order; the number of rows.

    ``tasks``: the decoded tasks are appended (read by the reference, which builds them).
    ``targets``: the timer-index keys of active, unpaused tasks are appended, in storage
    order. An ``sqlite3.Error`` escapes as it would from the reference loop. ``cancel``: when
    it is set, :class:`ValidationStopped` is raised before the next chunk (fast path only).
    """
    if tasks is not None:
        return _reference(conn.execute(_ROWS), pausable, tasks, targets)
    with collector_paused():  # millions of rows and keys, none of them in a cycle
        count, keys = _fast_rows(conn, pausable, cancel)
    if targets is not None:
        targets += keys
    return count


def _fast_rows(
    conn: sqlite3.Connection, pausable: bool, cancel: threading.Event | None = None
) -> tuple[int, list[TimerKey]]:
    """The count and timer keys, a chunk at a time through the fast path: one query per chunk
    of seqs hands over its rows' bodies as one text and their seqs as another, with the column
    checks of :func:`~schedlog.host.task_typed.check_chunk` made by SQLite (:data:`_CHUNK`).
    A range without rows is skipped to the next seq, so sparse seqs cost at most a query more
    per chunk."""
    keys: list[TimerKey] = []
    count = 0
    done: int | None = None  # every row with seq <= done is checked
    low: int | None = -(2**63)
    try:
        while (low := conn.execute(_NEXT_SEQ, (low,)).fetchone()[0]) is not None:
            crashpoint("sqlite_load.between_chunks")
            if cancel is not None and cancel.is_set():
                raise ValidationStopped
            high = min(low + CHUNK_ROWS - 1, _MAX_SEQ)
            rows, top, seq_text, joined, columns_ok = conn.execute(_CHUNK, (low, high)).fetchone()
            vouched = _vouch(rows, low, top, seq_text, joined, columns_ok, pausable)
            if vouched is None:  # the reference reads the chunk again, row by row
                vouched = []
                _reference(conn.execute(_ROWS_BETWEEN, (low, high)), pausable, None, vouched)
            keys += vouched
            count += rows
            done = high
            if high == _MAX_SEQ:
                break
            low = high + 1
    except sqlite3.Error:
        # A row the driver cannot read (text that is not UTF-8): the reference reads on
        # from the last row checked, so an earlier bad row of this chunk is reported first.
        rest = conn.execute(_ROWS, ()) if done is None else conn.execute(_ROWS_AFTER, (done,))
        count += _reference(rest, pausable, None, keys)
    return count, keys


def _vouch(
    rows: int,
    low: int,
    high: int,
    seq_text: object,
    joined: object,
    columns_ok: object,
    pausable: bool,
) -> list[TimerKey] | None:
    """The fast path's keys of one chunk read by :data:`_CHUNK`, or None (not taken)."""
    if columns_ok != 1 or not isinstance(seq_text, str) or not isinstance(joined, str):
        return None
    try:
        seqs = _decode_seqs(("[" + seq_text + "]").encode())
    except msgspec.DecodeError:
        return None
    # In storage order (strictly ascending) and all of them: the bodies came in the same order.
    if len(seqs) != rows or seqs[0] != low or seqs[-1] != high or not all(map(lt, seqs, seqs[1:])):
        return None
    return check_chunk(seqs, joined, pausable=pausable)
