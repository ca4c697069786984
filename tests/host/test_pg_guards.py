"""The PostgreSQL store's guards between hosts, each checked directly with a second connection
that holds locks or steals leases (docs/decisions.md "PostgreSQL store: several hosts"):
``SKIP LOCKED`` in the claim, leases in milliseconds, the lease check before a session append
and commit, the blocking per-session advisory lock, and the "may have changed" signal after a
``LISTEN`` reconnect. Waits poll with deadlines; nothing sleeps to synchronise."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests import pg
from tests.host.helpers import T0, MemorySessions, task

psycopg = pg.require_psycopg()

from schedlog.host.service import HostService  # noqa: E402
from schedlog.host.stores.base import StoreWriteError  # noqa: E402
from schedlog.host.stores.pg_claims import SESSION_SEED  # noqa: E402
from schedlog.host.stores.postgres import PostgresTaskStore  # noqa: E402
from schedlog.runtime.clock import VirtualClock  # noqa: E402

LATER = T0 + 3_600_000


@pytest.fixture
def store(url: str) -> Iterator[PostgresTaskStore]:
    s = pg.pg_store(url)
    yield s
    s.close()


def _until(check: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _due(store: PostgresTaskStore, *ids: str, session: str = "s-1") -> None:
    for i in ids:
        store.insert(task(i, session, after_seconds=60))


def test_a_claim_skips_rows_another_host_has_locked(store: PostgresTaskStore) -> None:
    _due(store, "schedule-1", "schedule-2")
    with psycopg.connect(store.url) as other:  # a transaction holding one row's lock
        other.execute("SELECT 1 FROM schedlog_tasks WHERE id = 'schedule-1' FOR UPDATE")
        got: list[list[str]] = []
        claim = threading.Thread(
            target=lambda: got.append([st.task.id for st in store.claim_due(LATER)]),
            daemon=True,
        )
        claim.start()
        claim.join(timeout=10)
        blocked = claim.is_alive()
        other.rollback()
    claim.join(timeout=10)
    assert not blocked, "the claim waited for the other host's row lock (no SKIP LOCKED)"
    assert got == [["schedule-2"]]


def test_the_lease_is_written_in_milliseconds(store: PostgresTaskStore) -> None:
    _due(store, "schedule-1")
    before = time.monotonic()
    assert len(store.claim_due(LATER)) == 1
    (row,) = pg.sql(
        store.url,
        "SELECT extract(epoch FROM lease_until - now()) * 1000, lease_owner "
        "FROM schedlog_tasks WHERE id = 'schedule-1'",
    )
    left_ms, owner = float(row[0]), row[1]
    slack_ms = (time.monotonic() - before) * 1000 + 2_000
    assert owner == store.owner
    assert store.lease_ms - slack_ms <= left_ms <= store.lease_ms + 1_000, left_ms


def _steal(url: str, task_id: str) -> None:
    pg.sql(
        url,
        "UPDATE schedlog_tasks SET lease_owner = 'thief:1:x', "
        "lease_until = now() + interval '1 hour' WHERE id = %s",
        (task_id,),
    )


def test_a_stolen_lease_is_neither_extended_nor_committed(store: PostgresTaskStore) -> None:
    _due(store, "schedule-1")
    (claimed,) = store.claim_due(LATER)
    assert store.extend_leases(["schedule-1"]) == {"schedule-1"}
    _steal(store.url, "schedule-1")
    assert store.extend_leases(["schedule-1"]) == set()
    with pytest.raises(StoreWriteError):
        store.commit_claimed(claimed.task)


def test_a_host_whose_lease_was_taken_appends_nothing(
    store: PostgresTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease is stolen between the batched claim and the send: the session gets
    nothing (the lease check before a session's append, schedlog/host/batch_claims.py)."""
    _due(store, "schedule-1")
    claim = store.claim_batch

    def claim_then_lose(*args: Any, **kwargs: Any) -> Any:
        out = claim(*args, **kwargs)
        for st in out.tasks:
            _steal(store.url, st.task.id)
        return out

    monkeypatch.setattr(store, "claim_batch", claim_then_lose)
    sessions = MemorySessions()

    async def main() -> None:
        svc = HostService(store, sessions, VirtualClock(LATER), auto_drive=False)
        try:
            await svc.tick()
        finally:
            await svc.aclose()

    asyncio.run(main())
    assert all(not s.events for s in sessions.sessions.values())
    (row,) = pg.sql(store.url, "SELECT status, lease_owner FROM schedlog_tasks")
    assert row == ("active", "thief:1:x")


def test_the_session_lock_waits_for_another_holder(store: PostgresTaskStore) -> None:
    entered = threading.Event()
    with psycopg.connect(store.url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, %s))", ("s-1", SESSION_SEED))

        def deliver() -> None:
            with store.session_lock("s-1"):
                entered.set()

        worker = threading.Thread(target=deliver, daemon=True)
        worker.start()

        def waiting() -> bool:
            rows = pg.sql(
                store.url,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
            )
            return entered.is_set() or rows[0][0] > 0

        _until(waiting, "the store's connection to wait for the advisory lock")
        assert not entered.is_set(), "the session lock was entered while another host held it"
        other.execute("SELECT pg_advisory_unlock(hashtextextended(%s, %s))", ("s-1", SESSION_SEED))
        worker.join(timeout=10)
    assert entered.is_set()


def test_a_listen_reconnect_signals_that_anything_may_have_changed(
    store: PostgresTaskStore,
) -> None:
    seen: list[dict[str, str]] = []
    store.listen(seen.append)

    def listening() -> list[tuple[Any, ...]]:
        return pg.sql(
            store.url,
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND query LIKE 'LISTEN %%' AND pid <> pg_backend_pid()",
        )

    _until(lambda: bool(listening()), "the LISTEN connection")
    assert seen == []
    for (pid,) in listening():
        pg.sql(store.url, "SELECT pg_terminate_backend(%s)", (pid,))
    _until(lambda: {} in seen, "the 'may have changed' signal after the reconnect")
