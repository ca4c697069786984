"""The PostgreSQL store's claims: how several hosts share its delivery
(:class:`~schedlog.host.stores.base.ClaimingStore`; docs/decisions.md, "PostgreSQL store:
several hosts").

Due rows are claimed with ``FOR UPDATE SKIP LOCKED`` and a lease on the database clock; a
delivery runs under the session's advisory lock, and its commit checks the lease and the row
version.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import psycopg

from schedlog.host.stores import pg_queries as q
from schedlog.host.stores.base import StoredTask, StoreWriteError
from schedlog.host.stores.pg_conn import PgConnection
from schedlog.host.stores.pg_deadline import bounded, deadline_s
from schedlog.host.stores.pg_listen import Listener
from schedlog.host.stores.pg_rows import Row, StoreConflictError, reason, row_columns, storable
from schedlog.host.task import Task

__all__ = ["CLAIM_LIMIT", "PgClaims"]

#: Rows claimed per query (plus the other due rows of their sessions).
CLAIM_LIMIT: Final = 200
#: Seed of the session advisory-lock hash (``hashtextextended``).
SESSION_SEED: Final = q.SESSION_SEED


class PgClaims(PgConnection):
    """The delivery operations several hosts share a PostgreSQL store through."""

    #: Claims that took a task over from another host's lease (schedlog_lease_takeovers_total).
    lease_takeovers: int = 0
    #: The connection of the open batched claim and the sessions it holds locked
    #: (:mod:`~schedlog.host.stores.pg_batch`), if any.
    _batch_locks: tuple[psycopg.Connection[Any], set[str]] | None = None

    def _excluded(self, excluded: Iterable[str]) -> list[str]:
        return [*self._invalid, *(k for k in excluded if storable(k))]

    def next_wake(self, excluded: Iterable[str] = ()) -> int | None:
        """When this host should look for work next (epoch ms): the earliest ``next_at`` of an
        active task it could claim, or the earliest end of another host's lease (its work is
        taken over then if that host died). Two index scans in one statement, so both read
        one ``now()`` (:data:`~schedlog.host.stores.pg_queries.NEXT_WAKE`); None when there is
        nothing."""
        skip = self._excluded(excluded)

        def run(c: psycopg.Connection[Any]) -> int | None:
            row = c.execute(q.NEXT_WAKE, (self.owner, skip, self.owner)).fetchone()
            found = [int(v) for v in (row or ()) if v is not None]
            return min(found, default=None)

        return self._read(run)

    def claim_due(
        self, now: int, excluded: Iterable[str] = (), limit: int = CLAIM_LIMIT
    ) -> list[StoredTask]:
        """Claim up to ``limit`` due active tasks (``next_at <= now``) that no live lease
        holds, plus the other due recurring tasks of the sessions of the recurring ones claimed
        (one delivery group per session), in storage order. Rows another host is claiming are
        skipped (``SKIP LOCKED``); a row that does not decode is reported and never claimed.
        The lease runs :attr:`lease_ms` on the database clock."""
        skip = self._excluded(excluded)
        taken = [0]  # rows whose lease was another host's (it died, or held them too long)

        def run(c: psycopg.Connection[Any]) -> list[tuple[StoredTask, int]]:
            taken[0] = 0  # a retried transaction counts again
            rows = c.execute(
                q.CLAIM_DUE,
                (now, self.owner, skip, limit),
            ).fetchall()
            out = self._decoded(rows)
            taken[0] = self._lease_with_recurring(c, out, now, skip)
            return out

        claimed = self._write(run)
        self.lease_takeovers += taken[0]
        for st, version in claimed:
            self._claimed[st.task.id] = version
        return sorted((st for st, _ in claimed), key=lambda st: st.seq)

    def _lease_with_recurring(
        self,
        c: psycopg.Connection[Any],
        out: list[tuple[StoredTask, int]],
        now: int,
        skip: list[str],
    ) -> int:
        """Add to ``out`` the other due recurring tasks of the sessions of its recurring ones,
        then lease every row of ``out`` (in the claim's transaction). Returns how many rows
        were another host's lease (taken over)."""
        # Only a recurring task's group takes the session's other due recurring tasks
        # (one batch follow-up); a one-shot is a group of its own. Those are found without
        # a lock first, so that no row this claim does not take is locked by it.
        sessions = sorted({st.task.session_id for st, _ in out if not st.task.record.is_one_shot})
        if sessions:
            picked = [st.seq for st, _ in out]
            candidates = c.execute(
                q.SESSION_DUE_CANDIDATES,
                (now, self.owner, sessions, skip, picked),
            ).fetchall()
            recurring = [
                st.seq for st, _ in self._decoded(candidates) if not st.task.record.is_one_shot
            ]
            if recurring:
                more = c.execute(
                    q.CLAIM_SEQS,
                    (recurring, now, self.owner),
                ).fetchall()
                out.extend(self._decoded(more))
        if not out:
            return 0
        previous = c.execute(
            q.LEASE,
            (self.owner, self.lease_ms / 1000, [st.seq for st, _ in out]),
        ).fetchall()
        return sum(1 for (was,) in previous if was is not None and was != self.owner)

    def _decoded(self, rows: list[Row]) -> list[tuple[StoredTask, int]]:
        """The rows that decode, with their versions; the others are reported and remembered
        as never to be claimed."""
        out: list[tuple[StoredTask, int]] = []
        for row in rows:
            st = self._valid(row)
            if st is None:
                self._invalid.add(row[1])
            else:
                out.append((st, row[5]))
        return out

    def extend_leases(self, ids: Iterable[str]) -> set[str]:
        """Renew this host's live leases on ``ids``; the ids whose lease is still its own.

        Inside :meth:`session_lock` this runs on the lock's own connection, so it also proves
        that the lock is still held: when that connection has dropped (terminated, server
        restart), PostgreSQL has released the lock and another host may be appending to the
        session's log, so this raises :class:`StoreWriteError` and the caller sends nothing.
        """
        keys = [k for k in ids if storable(k)]

        def run(c: psycopg.Connection[Any]) -> set[str]:
            rows = c.execute(
                q.EXTEND_LEASES,
                (self.lease_ms / 1000, keys, self.owner),
            ).fetchall()
            return {str(r[0]) for r in rows}

        conn = self._session_conn
        if conn is None or self._tx is not None:
            return self._write(run)
        try:
            with conn.transaction():
                return run(conn)
        except psycopg.Error as exc:
            raise StoreWriteError(
                f"cannot write {self.path}: the session lock was lost ({reason(exc)})"
            ) from exc

    def commit_claimed(self, task: Task) -> None:
        """Write a claimed task's delivery commit and end the claim: only while the lease is
        still this host's and the row is the version claimed, else :class:`StoreConflictError`
        (another host took the work over, or a tool changed the task meanwhile)."""
        key, session_id, status, next_at, body = row_columns(task)
        version = self._claimed.pop(key, None)
        if version is None:
            raise StoreConflictError(f"task {key!r} is not claimed by this host")

        def run(c: psycopg.Connection[Any]) -> int:
            return c.execute(
                q.COMMIT_CLAIMED,
                (status, next_at, body, key, session_id, version, self.owner),
            ).rowcount

        if self._write(run) != 1:
            raise StoreConflictError(
                f"task {key!r}: the lease expired or the task changed since it was claimed"
            )

    def release(self, ids: Iterable[str]) -> None:
        """End this host's claims on ``ids`` without writing the tasks (best effort: a claim
        that cannot be released ends when its lease does)."""
        keys = [k for k in ids if storable(k)]
        for key in keys:
            self._claimed.pop(key, None)
        with contextlib.suppress(StoreWriteError):
            self._write(
                lambda c: c.execute(
                    q.RELEASE,
                    (keys, self.owner),
                )
            )

    def hold(self, delays: Mapping[str, int]) -> None:
        """Keep this host's claims on the active tasks of ``delays`` for that many ms more on
        the database clock (best effort, like :meth:`release`): a failed webhook delivery keeps
        its tasks until its next attempt, so no other host retries them earlier
        (docs/decisions.md, "Webhook delivery with several hosts")."""
        keys = [k for k in delays if storable(k)]
        for key in keys:
            self._claimed.pop(key, None)
        if not keys:
            return
        with contextlib.suppress(StoreWriteError):
            self._write(
                lambda c: c.execute(
                    q.HOLD,
                    (keys, [max(0, int(delays[k])) for k in keys], self.owner),
                )
            )

    @contextlib.contextmanager
    def session_lock(self, session_id: str) -> Iterator[None]:
        """Hold the session's advisory lock (``pg_advisory_lock`` on the 64-bit hash of its
        id, on a connection of its own) around a delivery, so that two hosts never append to
        one session log at once. Released when the block ends or the connection drops; the
        :meth:`extend_leases` that precedes each send runs on this connection, so a delivery
        whose lock was lost sends nothing. A session the open batched claim holds locked is
        held on that claim's connection already (the FIFO runs one of them at a time)."""
        held = self._batch_locks
        if held is not None and session_id in held[1]:
            self._session_conn = held[0]
            try:
                yield
            finally:
                self._session_conn = None
            return
        with self._pool.connection(timeout=deadline_s()) as conn:
            # Bounded while taking the lock only: the delivery it guards may take long.
            with bounded(conn, "the session lock"):
                key = conn.execute(q.SESSION_LOCK_KEY, (session_id, SESSION_SEED))
                (lock_key,) = key.fetchone() or (0,)
                conn.execute(q.SESSION_LOCK, (lock_key,))
            self._session_conn = conn
            try:
                yield
            finally:
                self._session_conn = None
                with contextlib.suppress(psycopg.Error):
                    conn.execute(q.SESSION_UNLOCK, (lock_key,))

    def listen(self, on_change: Callable[[dict[str, str]], None]) -> None:
        """Call ``on_change(payload)`` from a background thread for each task change another
        writer commits (``LISTEN schedlog_changed``), reconnecting with back-off; an empty
        payload after a reconnect means "something may have changed"."""
        if self._listener is None:
            self._listener = Listener(self.url, self.owner, on_change)

    def active_count(self) -> int:
        row = self._read(lambda c: c.execute(q.ACTIVE_COUNT).fetchone())
        return int(row[0]) if row else 0

    def due_count(self, now: int) -> int:
        row = self._read(lambda c: c.execute(q.DUE_COUNT, (now,)).fetchone())
        return int(row[0]) if row else 0
