"""Batched claims of the PostgreSQL store: one claim of up to a batch of due tasks, under the
locks of their sessions, for one batched delivery (schedlog/host/batch_claims.py;
docs/decisions.md, "Batched claimed delivery").

A :class:`ClaimBatch` holds one pool connection from its claim to its :meth:`~ClaimBatch.close`:

1. **Claim** (one transaction): the sessions of the first due rows that no lease and no session
   lock holds; each session's advisory lock *tried* on this connection (a session another
   host is delivering to is left to it, never waited for); the due rows of the sessions locked
   (``FOR UPDATE SKIP LOCKED``, up to the limit, plus the other due recurring rows of their
   sessions, as :meth:`PgClaims.claim_due`), leased for :attr:`lease_ms` in one statement.
   Sessions locked in which nothing was claimed are unlocked at once.
2. **Deliver**: :meth:`~ClaimBatch.fresh` re-reads the claimed rows once (a row a tool changed
   since the claim is left out); :meth:`~ClaimBatch.lost` is the lease check before a
   session's append (a read on this connection, so it also proves the session locks are still
   held), renewing every lease of the batch in one statement once a third of a lease passed.
3. **Commit**: :meth:`~ClaimBatch.commit` writes every delivered row in one ``UPDATE … FROM
   unnest`` at the versions claimed and only while the leases hold: all or nothing.
4. :meth:`~ClaimBatch.close` releases the claims not committed, unlocks every session and
   returns the connection.

The connection is used from the pool threads of the batch (psycopg serialises its use).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import psycopg

from schedlog._crashpoints import crashpoint
from schedlog.host.stores import pg_queries as q
from schedlog.host.stores.base import StoredTask, StoreWriteError
from schedlog.host.stores.pg_claims import PgClaims
from schedlog.host.stores.pg_deadline import bounded, deadline_s
from schedlog.host.stores.pg_rows import StoreConflictError, reason, row_columns, storable
from schedlog.host.task import Task

__all__ = ["BATCH_CLAIM_LIMIT", "ClaimBatch", "CoalescedChecks"]

#: Rows one batched claim takes (plus the other due recurring rows of their sessions).
BATCH_CLAIM_LIMIT: Final = 1_000


class CoalescedChecks:
    """Checks of key sets that share a query when they overlap in time (group commit for
    reads): a caller whose check finds none in flight leads, runs one check for every check
    asked for until then, and hands each its share; one asking while a check is in flight
    waits for it to end and joins the next (so its query is always sent after it asked)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: list[_Asked] = []
        self._running = False

    def check(self, keys: set[str], run: Callable[[set[str]], set[str]]) -> set[str]:
        """The keys of ``keys`` that ``run`` (called with the union of the checks it serves)
        answers; ``run``'s exception is raised in every check it served."""
        asked = _Asked(keys)
        with self._cond:
            self._waiting.append(asked)
            while not asked.done and self._running:
                self._cond.wait()
            if asked.done:
                return asked.answer()
            self._running = True  # the leader of every check waiting now
            served, self._waiting = self._waiting, []
        try:
            union: set[str] = set().union(*(a.keys for a in served))
            found = run(union)
            for a in served:
                a.found = found & a.keys
        except BaseException as exc:
            for a in served:
                a.error = exc
        finally:
            with self._cond:
                for a in served:
                    a.done = True
                self._running = False
                self._cond.notify_all()
        return asked.answer()


class _Asked:
    """One check waiting for its answer."""

    def __init__(self, keys: set[str]) -> None:
        self.keys = keys
        self.found: set[str] = set()
        self.error: BaseException | None = None
        self.done = False

    def answer(self) -> set[str]:
        error = self.error
        if error is None:
            return self.found
        if isinstance(error, StoreWriteError):  # each waiter raises an exception of its own
            raise type(error)(str(error)) from error
        raise error


class ClaimBatch:
    """One batched claim and the connection holding its session locks (see the module)."""

    def __init__(self, store: PgClaims, conn: psycopg.Connection[Any]) -> None:
        self.store = store
        self.conn = conn
        #: The sessions whose advisory lock this batch holds.
        self.sessions: set[str] = set()
        #: The claimed tasks, in storage order, and the version each was claimed at.
        self.tasks: list[StoredTask] = []
        self.versions: dict[str, int] = {}
        self._committed: set[str] = set()
        self._renewed = time.monotonic()
        self._checks = CoalescedChecks()
        self.closed = False

    @classmethod
    def claim(
        cls, store: PgClaims, now: int, excluded: Sequence[str], limit: int = BATCH_CLAIM_LIMIT
    ) -> ClaimBatch:
        """Claim a batch (step 1); an empty batch when nothing is free. Raises
        :class:`StoreWriteError` when the database fails (nothing stays claimed or locked)."""
        try:
            conn = store._pool.getconn(timeout=deadline_s())
        except Exception as exc:
            raise StoreWriteError(f"cannot write {store.path}: {reason(exc)}") from exc
        batch = cls(store, conn)
        try:
            with bounded(conn, "the batched claim"), conn.transaction():
                batch._claim(now, excluded, limit)
        except BaseException as exc:
            batch.close()  # every lock tried: a session lock outlives a rollback
            if isinstance(exc, psycopg.Error):
                raise StoreWriteError(f"cannot write {store.path}: {reason(exc)}") from exc
            raise
        batch._renewed = time.monotonic()
        store._batch_locks = (conn, batch.sessions)
        return batch

    def _claim(self, now: int, excluded: Sequence[str], limit: int) -> None:
        store, c, owner = self.store, self.conn, self.store.owner
        rows = c.execute(q.BATCH_SESSIONS, (now, owner, excluded, q.SESSION_SEED, limit)).fetchall()
        # Whole sessions (one append and one fsync each), about ``limit`` rows in all.
        wanted: list[str] = []
        rows_wanted = 0
        for session_id, count in rows:
            if wanted and rows_wanted + int(count) > limit:
                break
            wanted.append(str(session_id))
            rows_wanted += int(count)
        if not wanted:
            return
        locked = [str(r[0]) for r in c.execute(q.BATCH_TRY_LOCKS, (wanted, q.SESSION_SEED))]
        self.sessions.update(locked)
        if not locked:
            return
        lease_s = store.lease_ms / 1000
        rows = c.execute(
            q.BATCH_CLAIM, (now, owner, excluded, locked, limit, owner, lease_s)
        ).fetchall()
        store.lease_takeovers += sum(1 for r in rows if r[7] is not None and r[7] != owner)
        claimed = store._decoded([r[:7] for r in rows])
        recurring = [pair for pair in claimed if not pair[0].task.record.is_one_shot]
        if recurring:  # the other due recurring tasks of their sessions, leased with them
            more: list[tuple[StoredTask, int]] = list(recurring)
            store.lease_takeovers += store._lease_with_recurring(c, more, now, list(excluded))
            claimed.extend(more[len(recurring) :])
        claimed.sort(key=lambda pair: pair[0].seq)
        self.tasks = [st for st, _ in claimed]
        self.versions = {st.task.id: version for st, version in claimed}
        idle = sorted(self.sessions - {st.task.session_id for st in self.tasks})
        if idle:
            c.execute(q.BATCH_UNLOCK, (q.SESSION_SEED, idle))
            self.sessions.difference_update(idle)

    def fresh(self) -> dict[str, StoredTask]:
        """The claimed rows as stored now (one read): a row that changed since the claim (a
        tool's edit: another version), is gone or no longer decodes is left out, so nothing
        is planned from a stale claim; its claim ends with the batch.

        Only each row's ``seq`` and version are read: every write of a body bumps its version
        (schedlog/host/stores/pg_queries.py), so a row at the version and ``seq`` claimed still
        holds the body decoded at the claim, and is not decoded again."""
        if not self.versions:
            return {}
        with bounded(self.conn, "the batch's read"):
            rows = self.conn.execute(q.BATCH_VERSIONS, (list(self.versions),)).fetchall()
        now = {str(key): (int(seq), int(version)) for key, seq, version in rows}
        return {
            st.task.id: st
            for st in self.tasks
            if now.get(st.task.id) == (st.seq, self.versions[st.task.id])
        }

    def lost(self, ids: Iterable[str]) -> list[str]:
        """The lease check before a session's append: the ids of ``ids`` whose lease is no
        longer this host's with a third of a lease to spare. Renews every lease of the batch
        first once a third of a lease has passed since the last renewal. Raises
        :class:`StoreWriteError` when the connection (and so the session locks) is lost.

        Checks asked for while another is in flight are **coalesced** (one leader, one query
        for all of them, sent after each of them was asked for): each session is still checked
        by a query that ran after it asked and before its append, but the sessions the pool
        appends in parallel share one round trip on the batch's connection instead of queueing
        one each (docs/decisions.md, "Burst on PostgreSQL: coalesced lease checks, one
        watchdog thread")."""
        wanted = list(ids)
        keys = {k for k in wanted if storable(k)}
        mine = self._checks.check(keys, self._check_now)
        return [k for k in wanted if k not in mine]

    def _check_now(self, keys: set[str]) -> set[str]:
        """One lease check of ``keys`` (the union of the coalesced checks), after the renewal
        when it is due: the keys still leased to this host with a third of a lease to spare."""
        third = self.store.lease_ms / 3000
        try:
            if time.monotonic() - self._renewed >= third:
                pending = [k for k in self.versions if k not in self._committed]
                with bounded(self.conn, "the lease renewal"):
                    self.conn.execute(
                        q.EXTEND_LEASES, (self.store.lease_ms / 1000, pending, self.store.owner)
                    )
                self._renewed = time.monotonic()
            with bounded(self.conn, "the lease check"):
                rows = self.conn.execute(
                    q.BATCH_LEASED, (sorted(keys), self.store.owner, third)
                ).fetchall()
        except psycopg.Error as exc:
            raise StoreWriteError(
                f"cannot write {self.store.path}: the session locks were lost ({reason(exc)})"
            ) from exc
        return {str(r[0]) for r in rows}

    def commit(self, tasks: Sequence[Task]) -> None:
        """Every delivered row in one statement and one transaction, each at its claimed
        version and only while this host's lease holds: all or nothing
        (:class:`StoreConflictError` when one row does not match)."""
        if not tasks:
            return
        cols: list[list[Any]] = [[], [], [], [], [], []]
        for task in tasks:
            key, session_id, status, next_at, body = row_columns(task)
            version = self.versions.get(key)
            if version is None or not storable(key):
                raise StoreConflictError(f"task {key!r} is not claimed by this batch")
            for col, value in zip(
                cols, (key, session_id, status, next_at, body, version), strict=True
            ):
                col.append(value)
        try:
            with bounded(self.conn, "the batch's commit"), self.conn.transaction():
                done = self.conn.execute(q.BATCH_COMMIT, (*cols, self.store.owner)).rowcount
                if done != len(tasks):
                    raise StoreConflictError(
                        f"{len(tasks) - done} of {len(tasks)} tasks: the lease expired or the "
                        "task changed since it was claimed"
                    )
                crashpoint("pg_batch.in_commit")
        except psycopg.Error as exc:
            raise StoreWriteError(f"cannot write {self.store.path}: {reason(exc)}") from exc
        self._committed.update(cols[0])

    def close(self) -> None:
        """Release the claims not committed, unlock every session, return the connection
        (best effort: a claim that cannot be released ends with its lease, a lock with the
        connection, which the pool then replaces)."""
        if self.closed:
            return
        self.closed = True
        conn = self.conn
        rest = [k for k in self.versions if k not in self._committed and storable(k)]
        try:
            with bounded(conn, "the batch's release"):
                if rest:
                    conn.execute(q.RELEASE, (rest, self.store.owner))
                conn.execute(q.BATCH_UNLOCK_ALL)
        except Exception:  # the connection is broken: the server dropped its locks with it
            conn.close()
        finally:
            self.sessions.clear()
            if self.store._batch_locks is not None and self.store._batch_locks[0] is conn:
                self.store._batch_locks = None
            self.store._pool.putconn(conn)
