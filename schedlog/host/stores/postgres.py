"""The PostgreSQL backend (``--store postgresql://…``), on psycopg 3 and psycopg_pool.

* The schema is versioned (:mod:`schedlog.host.stores.pg_schema`); :func:`~schedlog.host.stores.
  pg_admin.migrate` applies the missing forward migrations and :meth:`PostgresTaskStore.open`
  refuses any other version with ``version-mismatch``. A host never migrates implicitly.
* Every write is one transaction, committed with ``synchronous_commit = on`` before it returns.
  ``replace`` is a compare-and-set on the row version read by the last ``get`` of that task
  under the row lock of ``SELECT … FOR UPDATE`` inside :meth:`PostgresTaskStore.atomic`.
* Every row is strict-decoded when it is read and its engine columns (``session_id``, ``status``,
  ``next_at``) are compared with the decoded body. A row that fails is reported once with
  ``invalid-record`` and its id and then treated as absent: never delivered, never rewritten,
  while the other tasks keep working. The file backends refuse the whole store instead
  (docs/decisions.md, "PostgreSQL store: per-row invalid records").
* Opening takes no full load: the store is ready after a few catalog queries, whatever the
  number of tasks.

The parts: connections (:mod:`~schedlog.host.stores.pg_conn`), claims
(:mod:`~schedlog.host.stores.pg_claims`), admin (:mod:`~schedlog.host.stores.pg_admin`), rows
(:mod:`~schedlog.host.stores.pg_rows`), the ``LISTEN`` thread
(:mod:`~schedlog.host.stores.pg_listen`) and every SQL statement
(:mod:`~schedlog.host.stores.pg_queries`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from schedlog.host.stores import pg_queries as q
from schedlog.host.stores.base import CatalogKey, StoredTask, StoreWriteError
from schedlog.host.stores.pg_admin import check_version
from schedlog.host.stores.pg_batch import BATCH_CLAIM_LIMIT, ClaimBatch
from schedlog.host.stores.pg_claims import PgClaims
from schedlog.host.stores.pg_conn import configure
from schedlog.host.stores.pg_deadline import check_connection
from schedlog.host.stores.pg_rows import (
    CONNECT_TIMEOUT_S,
    Row,
    StoreConflictError,
    connect,
    malformed,
    new_owner,
    row_columns,
    storable,
)
from schedlog.host.task import Task

__all__ = ["PostgresTaskStore"]


class PostgresTaskStore(PgClaims):
    """A :class:`~schedlog.host.stores.base.TaskStore` over one PostgreSQL database.

    Shared: any number of processes may open one database at once. Tools and remote operations
    write in one transaction each; several hosts deliver together through :meth:`claim_due`
    (``FOR UPDATE SKIP LOCKED`` and a lease on the database clock), :meth:`session_lock` and
    :meth:`commit_claimed` (which checks the lease and the row version).
    """

    #: Schema version 4 holds paused tasks (:class:`~schedlog.host.stores.base.HoldsPause`).
    pausable = True
    #: Writes may run on the host's writer thread (:class:`~schedlog.host.stores.base.
    #: WritesFromAnyThread`): each takes a pool connection of its own, and the transaction of
    #: :meth:`atomic` belongs to the thread that opened it.
    writes_from_any_thread = True

    @classmethod
    def open(cls, url: str) -> PostgresTaskStore:
        """Check the schema version, then open the connection pool (no task is read)."""
        owner = new_owner()
        try:
            lock = connect(url, autocommit=True, application_name=owner)
        except psycopg.Error as exc:
            raise malformed(url, exc) from None
        try:
            check_version(lock, url)
            pool: ConnectionPool = ConnectionPool(
                url,
                min_size=1,
                max_size=4,
                kwargs={
                    "autocommit": True,
                    "connect_timeout": CONNECT_TIMEOUT_S,
                    "application_name": owner,
                },
                configure=configure,
                check=check_connection,
                open=False,
            )
            pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            lock.close()
            raise malformed(url, exc) from None
        except BaseException:
            lock.close()
            raise
        return cls(url, pool, lock, owner)

    def claim_batch(
        self, now: int, excluded: Iterable[str] = (), limit: int = BATCH_CLAIM_LIMIT
    ) -> ClaimBatch:
        """Claim up to ``limit`` due tasks under their sessions' locks for one batched
        delivery (:mod:`~schedlog.host.stores.pg_batch`); close the batch when it is done."""
        return ClaimBatch.claim(self, now, self._excluded(excluded), limit)

    def ping(self) -> None:
        """One round trip to the server (``/readyz``), bounded like every query; raises when
        it does not answer (docs/reliability.md#slow-postgresql)."""
        self._read(lambda c: c.execute("SELECT 1").fetchone())

    # --- reads ----------------------------------------------------------------------------

    def tasks(self) -> Iterator[StoredTask]:
        """Every valid task in storage order, streamed through a server-side cursor."""
        with (
            self.connection() as conn,
            conn.transaction(),
            conn.cursor(name="schedlog_tasks") as cur,
        ):
            cur.itersize = 2000
            cur.execute(q.ALL_TASKS)
            for row in cur:
                st = self._valid(row)
                if st is not None:
                    yield st

    def session_tasks(self, session_id: str) -> list[StoredTask]:
        if not storable(session_id):
            return []
        rows = self._read(
            lambda c: c.execute(
                q.SESSION_TASKS,
                (session_id,),
            ).fetchall()
        )
        return [st for st in map(self._valid, rows) if st is not None]

    def get(self, task_id: str) -> StoredTask | None:
        """The task, or None (also for a row that does not decode, which is reported). Inside
        :meth:`atomic` the row is locked and its version kept for :meth:`replace`."""
        if not storable(task_id):
            return None
        query = q.GET_TASK_FOR_UPDATE if self._tx is not None else q.GET_TASK
        row = self._read(lambda c: c.execute(query, (task_id,)).fetchone())
        if row is None:
            return None
        st = self._valid(row)
        if st is not None and self._tx is not None:
            self._versions[task_id] = row[5]
        return st

    def active_targets(self) -> Iterator[tuple[int, int, str]]:
        """``(next_at, seq, id)`` of active rows from the columns, in storage order. A row
        that does not decode may be listed; :meth:`get` then finds nothing for it."""
        with (
            self.connection() as conn,
            conn.transaction(),
            conn.cursor(name="schedlog_targets") as cur,
        ):
            cur.itersize = 10000
            cur.execute(q.ACTIVE_TARGETS)
            for next_at, seq, key in cur:
                yield int(next_at), int(seq), str(key)

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
        """The catalog's order by SQL (:class:`~schedlog.host.stores.base.OrdersCatalog`): the
        first ``batch`` rows (a top-N sort), then, if the caller reads on, the rest streamed
        through a server-side cursor (one sort). A row that does not decode is reported and
        left out, as by :meth:`tasks`. With ``title``, a row whose body has no escape and does
        not contain it, casefolded, is skipped undecoded: its title cannot contain it."""
        if session_id is not None and not storable(session_id):
            return
        exact = after is None or storable(after[1])
        cursor = after
        if after is not None and not exact:  # an id no row can have: widen, then filter here
            cursor = (after[0] + 1, "") if descending else (after[0], "")
        params: dict[str, object] = {
            "session": session_id,
            "active": active,
        }
        params["at"], params["id"] = (None, None) if cursor is None else cursor
        params["limit"] = size = max(1, batch)
        query = q.CATALOG_DESC if descending else q.CATALOG_ASC
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        yield from self._catalog_rows(rows, after, descending, exact, title)
        if len(rows) < size:
            return
        params["at"], params["id"] = int(rows[-1][4]), str(rows[-1][1])
        params["limit"] = None  # LIMIT NULL: all the rest
        with (
            self._pool.connection() as conn,
            conn.transaction(),
            conn.cursor(name="schedlog_catalog") as cur,
        ):
            cur.itersize = 2000
            cur.execute(query, params)
            yield from self._catalog_rows(cur, after, descending, exact, title)

    def _catalog_rows(
        self,
        rows: Iterable[Row],
        after: CatalogKey | None,
        descending: bool,
        exact: bool,
        title: str | None,
    ) -> Iterator[StoredTask]:
        for row in rows:
            body = row[6]
            if title is not None and "\\" not in body and title not in body.casefold():
                continue
            st = self._valid(row)
            if st is None:
                continue
            key = (st.task.record.scheduled_at, st.task.id)
            if exact or after is None or (key < after if descending else key > after):
                yield st

    def earliest_active_target(self) -> int | None:
        """The earliest ``next_at`` among active rows, from the index."""
        row = self._read(lambda c: c.execute(q.EARLIEST_ACTIVE).fetchone())
        return None if row is None or row[0] is None else int(row[0])

    def count(self) -> int:
        row = self._read(lambda c: c.execute(q.COUNT).fetchone())
        return int(row[0]) if row else 0

    # --- writes ---------------------------------------------------------------------------

    def insert(self, task: Task) -> int:
        (seq,) = self.insert_many([task])
        return seq

    def insert_many(self, tasks: Sequence[Task]) -> list[int]:
        """Append new tasks in one transaction (the host's group commit of creates, which it
        runs on its writer thread); their ``seq`` in order. All or none are written."""
        for task in tasks:
            if not (storable(task.id) and storable(task.session_id)):
                raise StoreWriteError(
                    f"cannot write {self.path}: the id or session id has no UTF-8 form"
                )
        rows = [row_columns(task) for task in tasks]

        def run(c: psycopg.Connection[Any]) -> list[int]:
            seqs = []
            for params in rows:
                row = c.execute(q.INSERT, params).fetchone()
                assert row is not None
                seqs.append(int(row[0]))
            return seqs

        return self._write(run)

    def replace(self, task: Task) -> None:
        """Rewrite the task; a compare-and-set on the version read by :meth:`get` inside
        :meth:`atomic` (a :class:`StoreConflictError` when the row changed since)."""
        key, session_id, status, next_at, body = row_columns(task)
        expected = self._versions.pop(key, None)
        query = q.REPLACE if expected is None else q.REPLACE_VERSION
        params: tuple[object, ...] = (status, next_at, body, key, session_id)
        if expected is not None:
            params = (*params, expected)

        def run(c: psycopg.Connection[Any]) -> int:
            return c.execute(query, params).rowcount

        if not storable(key) or self._write(run) != 1:
            if expected is not None:
                raise StoreConflictError(f"task {key!r} changed since it was read")
            raise StoreWriteError(f"task {key!r} does not exist")

    def delete(self, task_id: str) -> bool:
        """Remove a task; a row that does not decode is left untouched (False)."""
        if not storable(task_id):
            return False

        def run(c: psycopg.Connection[Any]) -> bool:
            row = c.execute(q.GET_TASK_FOR_UPDATE, (task_id,)).fetchone()
            if row is None or self._valid(row) is None:
                return False
            c.execute(q.DELETE, (row[0],))
            return True

        return self._write(run)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
        if self._lock is not None:
            # A host that stops cleanly hands its claims back at once (a crashed one's expire).
            # Through the pool, which replaces connections the server dropped (a restart): the
            # connection kept from open never reconnects.
            with contextlib.suppress(StoreWriteError):
                self._write(
                    lambda c: c.execute(
                        q.RELEASE_ALL,
                        (self.owner,),
                    )
                )
            self._pool.close()
            self._lock.close()
            self._lock = None
