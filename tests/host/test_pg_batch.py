"""Batched claims of the PostgreSQL store (schedlog/host/stores/pg_batch.py) and the batched
claimed delivery over them (schedlog/host/batch_claims.py): whole sessions under their locks,
sessions another host holds skipped, the lease check and its renewal, one all-or-nothing commit,
a tool's edit since the claim, and a pause elsewhere waiting for the batch. Each guard is
checked against a second connection that holds a lock or steals a lease."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg
from tests.host.helpers import T0, MemorySessions, task

psycopg = pg.require_psycopg()

from schedlog.host.service import HostService  # noqa: E402
from schedlog.host.stores.base import StoreWriteError  # noqa: E402
from schedlog.host.stores.pg_batch import CoalescedChecks  # noqa: E402
from schedlog.host.stores.pg_claims import SESSION_SEED  # noqa: E402
from schedlog.host.stores.pg_rows import StoreConflictError  # noqa: E402
from schedlog.host.stores.postgres import PostgresTaskStore  # noqa: E402
from schedlog.runtime.clock import VirtualClock  # noqa: E402

LATER = T0 + 3_600_000


@pytest.fixture
def store(url: str) -> Iterator[PostgresTaskStore]:
    s = pg.pg_store(url)
    yield s
    s.close()


def _fill(store: PostgresTaskStore, sessions: int, per: int) -> None:
    for j in range(per):  # round-robin, as a burst arrives
        for i in range(sessions):
            store.insert(task(f"schedule-{i}-{j}", f"s-{i}", after_seconds=60 + j))


def _locked(url: str) -> int:
    rows = pg.sql(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")
    return int(rows[0][0])


def test_a_batch_takes_whole_sessions_up_to_its_limit_under_their_locks(
    store: PostgresTaskStore,
) -> None:
    _fill(store, sessions=4, per=3)
    batch = store.claim_batch(LATER, limit=7)
    try:
        assert batch.sessions == {"s-0", "s-1"}  # 3 + 3 rows; a third session would be 9
        assert sorted(st.task.id for st in batch.tasks) == sorted(
            f"schedule-{i}-{j}" for i in (0, 1) for j in range(3)
        )
        assert [st.seq for st in batch.tasks] == sorted(st.seq for st in batch.tasks)
        assert _locked(store.url) == 2
        leased = pg.sql(store.url, "SELECT count(*) FROM schedlog_tasks WHERE lease_owner = %s",
                        (store.owner,))  # fmt: skip
        assert leased == [(6,)]
    finally:
        batch.close()
    assert _locked(store.url) == 0
    assert pg.sql(store.url, "SELECT count(*) FROM schedlog_tasks WHERE lease_owner IS NOT NULL") \
        == [(0,)]  # fmt: skip


def test_a_session_another_host_delivers_to_is_left_to_it(store: PostgresTaskStore) -> None:
    _fill(store, sessions=3, per=2)
    with psycopg.connect(store.url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, %s))", ("s-0", SESSION_SEED))
        batch = store.claim_batch(LATER)
        try:
            assert "s-0" not in batch.sessions
            assert {st.task.session_id for st in batch.tasks} == {"s-1", "s-2"}
        finally:
            batch.close()


def test_two_open_batches_take_disjoint_sessions(store: PostgresTaskStore) -> None:
    _fill(store, sessions=4, per=2)
    second = pg.pg_store(store.url)
    first = store.claim_batch(LATER, limit=4)
    try:
        other = second.claim_batch(LATER, limit=4)
        try:
            assert first.sessions and other.sessions
            assert not first.sessions & other.sessions
            assert {st.task.id for st in first.tasks}.isdisjoint(st.task.id for st in other.tasks)
        finally:
            other.close()
    finally:
        first.close()
        second.close()


def _steal(url: str, task_id: str) -> None:
    pg.sql(url, "UPDATE schedlog_tasks SET lease_owner = 'thief:1:x', "
           "lease_until = now() + interval '1 hour' WHERE id = %s", (task_id,))  # fmt: skip


def test_the_commit_is_all_or_nothing_and_only_while_every_lease_holds(
    store: PostgresTaskStore,
) -> None:
    _fill(store, sessions=2, per=2)
    batch = store.claim_batch(LATER)
    try:
        done = [st.task for st in batch.tasks]  # rewritten as they are: a version each
        rows = "SELECT id, version, lease_owner IS NULL FROM schedlog_tasks ORDER BY id"
        _steal(store.url, "schedule-1-1")
        before = pg.sql(store.url, rows)
        assert batch.lost([st.task.id for st in batch.tasks]) == ["schedule-1-1"]
        with pytest.raises(StoreConflictError):
            batch.commit(done)
        assert pg.sql(store.url, rows) == before  # no row was written, not even the others
        pg.sql(store.url, "UPDATE schedlog_tasks SET lease_owner = %s WHERE id = 'schedule-1-1'",
               (store.owner,))  # fmt: skip
        before = pg.sql(store.url, "SELECT max(version) FROM schedlog_tasks")[0][0]
        batch.commit(done)
        after = pg.sql(store.url, "SELECT min(version), count(*) FROM schedlog_tasks "
                       "WHERE lease_owner IS NULL")  # fmt: skip
        assert after == [(before + 1, 4)]
    finally:
        batch.close()


def test_the_lease_check_renews_the_batch_after_a_third_of_a_lease(
    store: PostgresTaskStore,
) -> None:
    _fill(store, sessions=1, per=2)
    store.lease_ms = 3_000
    batch = store.claim_batch(LATER)
    try:
        pg.sql(store.url, "UPDATE schedlog_tasks SET lease_until = now() + interval '0.5 second'")
        assert batch.lost([st.task.id for st in batch.tasks]) == [  # 0.5 s left: below the
            st.task.id
            for st in batch.tasks  # margin (a third of a lease), not renewed yet
        ]
        batch._renewed = time.monotonic() - 1.0  # a third of the lease has passed
        assert batch.lost([st.task.id for st in batch.tasks]) == []
        left = pg.sql(store.url, "SELECT min(extract(epoch FROM lease_until - now())) "
                      "FROM schedlog_tasks")[0][0]  # fmt: skip
        assert float(left) > 2.0
    finally:
        batch.close()


def test_a_tool_edit_after_the_claim_is_not_delivered_from_the_stale_claim(
    store: PostgresTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(store, sessions=1, per=2)
    claim = store.claim_batch
    edited: list[str] = []

    def claim_then_edit(*args: Any, **kwargs: Any) -> Any:
        out = claim(*args, **kwargs)
        if not edited:
            pg.sql(store.url, "UPDATE schedlog_tasks SET version = version + 1 "
                   "WHERE id = 'schedule-0-0'")  # fmt: skip
            edited.append("schedule-0-0")
        return out

    monkeypatch.setattr(store, "claim_batch", claim_then_edit)
    sessions = MemorySessions()
    assert _drive(store, sessions) == ["schedule-0-1"]  # the edited row is left out...
    assert pg.sql(store.url, "SELECT lease_owner FROM schedlog_tasks WHERE id = 'schedule-0-0'") \
        == [(None,)]  # fmt: skip
    again = pg.pg_store(store.url)  # (the service closed the first store)
    assert _drive(again, sessions) == ["schedule-0-0"]  # ...and claimed afresh, sent once


def _drive(store: PostgresTaskStore, sessions: MemorySessions) -> list[str]:
    async def main() -> list[str]:
        svc = HostService(store, sessions, VirtualClock(LATER), auto_drive=False)
        try:
            sent, _ = await svc.drive()
            return [m.id for d in sent for m in d.members]
        finally:
            await svc.aclose()

    return asyncio.run(main())


def test_a_pause_elsewhere_waits_for_the_batch_that_claimed_its_session(
    store: PostgresTaskStore,
) -> None:
    store.insert(task("schedule-1", "s-1", every_seconds=600))
    batch = store.claim_batch(LATER)
    done = threading.Event()
    result: list[Any] = []

    def pause() -> None:
        async def main() -> Any:
            other = pg.pg_store(store.url)
            svc = HostService(other, MemorySessions(), VirtualClock(LATER), auto_drive=False)
            try:
                return await svc.pause("s-1", "schedule-1")
            finally:
                await svc.aclose()

        result.append(asyncio.run(main()))
        done.set()

    worker = threading.Thread(target=pause, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 15
        while not pg.sql(store.url, "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                         "AND NOT granted"):  # fmt: skip
            assert time.monotonic() < deadline, "the pause never waited for the session lock"
            time.sleep(0.02)
        assert not done.is_set()
    finally:
        batch.close()
    assert done.wait(15) and result[0]["changed"] is True


def test_sessions_another_host_holds_are_not_picked_so_free_ones_are(
    store: PostgresTaskStore,
) -> None:
    """The claim's choice of sessions skips those whose lock is held: with room for one
    session, the free one is taken, not the locked one that comes first."""
    _fill(store, sessions=2, per=2)
    with psycopg.connect(store.url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, %s))", ("s-0", SESSION_SEED))
        batch = store.claim_batch(LATER, limit=2)
        try:
            assert batch.sessions == {"s-1"}
            assert len(batch.tasks) == 2
        finally:
            batch.close()


def test_a_session_locked_after_the_choice_is_still_skipped(
    store: PostgresTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is tried, never assumed: a session another host locked between the choice of
    sessions and the claim (here: a choice that ignores the locks) is not claimed."""
    from schedlog.host.stores import pg_queries as q

    blind = q.BATCH_SESSIONS.replace(
        "AND NOT (hashtextextended(session_id, %s) = ANY(",
        "AND NOT (%s::bigint IS NULL AND 0 = ANY(",
    )
    assert blind != q.BATCH_SESSIONS
    monkeypatch.setattr(q, "BATCH_SESSIONS", blind)
    _fill(store, sessions=2, per=2)
    with psycopg.connect(store.url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, %s))", ("s-0", SESSION_SEED))
        batch = store.claim_batch(LATER)
        try:
            assert batch.sessions == {"s-1"}
            assert {st.task.session_id for st in batch.tasks} == {"s-1"}
        finally:
            batch.close()


def test_a_batch_commit_notifies_every_change_in_a_few_chunks(store: PostgresTaskStore) -> None:
    """Schema version 5: the commit's one statement notifies each chunk of changes once, under
    PostgreSQL's 8,000-byte payload limit, and another store's listener sees every change, in
    row order, as if each had been notified alone."""
    long = "s-" + "x" * 900  # a few rows fill a chunk
    for i in range(40):
        store.insert(task(f"schedule-{i}", f"{long}-{i}", after_seconds=60))
    seen: list[dict[str, str]] = []
    other = pg.pg_store(store.url)
    try:
        other.listen(seen.append)
        with psycopg.connect(store.url, autocommit=True) as listener:
            listener.execute("LISTEN schedlog_changed")
            batch = store.claim_batch(LATER)
            try:
                assert len(batch.tasks) == 40
                batch.commit([st.task for st in batch.tasks])
            finally:
                batch.close()
            notes = [n.payload for n in listener.notifies(timeout=2, stop_after=10)]
        assert 5 <= len(notes) <= 10 and max(len(n.encode()) for n in notes) <= 7_200
        deadline = time.monotonic() + 15
        while len(seen) < 40 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        other.close()
    owner = store.owner
    assert seen == [
        {"writer": owner, "id": f"schedule-{i}", "sessionId": f"{long}-{i}", "kind": "updated"}
        for i in range(40)
    ]


def test_a_row_deleted_and_written_again_since_the_claim_is_left_out(
    store: PostgresTaskStore,
) -> None:
    _fill(store, sessions=1, per=2)
    batch = store.claim_batch(LATER)
    try:
        pg.sql(store.url, "INSERT INTO schedlog_tasks (id, session_id, status, next_at, body, "
               "version) SELECT id || '-x', session_id, status, next_at, body, version "
               "FROM schedlog_tasks WHERE id = 'schedule-0-0'")  # fmt: skip
        pg.sql(store.url, "DELETE FROM schedlog_tasks WHERE id = 'schedule-0-0'")
        pg.sql(store.url, "UPDATE schedlog_tasks SET id = 'schedule-0-0' "
               "WHERE id = 'schedule-0-0-x'")  # fmt: skip
        # The same id at the same version, in another row: not the row claimed.
        assert sorted(batch.fresh()) == ["schedule-0-1"]
    finally:
        batch.close()


def test_lease_checks_asked_while_one_runs_share_the_next_query_never_the_running_one() -> None:
    checks = CoalescedChecks()
    release = threading.Event()
    queries: list[set[str]] = []

    def run(keys: set[str]) -> set[str]:
        queries.append(set(keys))
        if len(queries) == 1:  # the first query is in flight while two more sessions ask
            assert release.wait(10)
            return {"a", "b", "c"}  # what was leased when it ran: not an answer for b or c
        return {"c"}

    answers: dict[str, set[str]] = {}
    threads = [
        threading.Thread(target=lambda k=k: answers.setdefault(k, checks.check({k}, run)))
        for k in "abc"
    ]
    _ask_while_one_runs(checks, threads, queries, release)
    assert queries == [{"a"}, {"b", "c"}]  # one query for the two that waited
    assert answers == {"a": {"a"}, "b": set(), "c": {"c"}}  # b: lost by the time it was asked


def _ask_while_one_runs(
    checks: CoalescedChecks,
    threads: list[threading.Thread],
    queries: list[set[str]],
    release: threading.Event,
) -> None:
    """Start the first asker; once its query runs, the other two; once both wait, let the
    query end, and wait for every asker."""
    threads[0].start()
    _until(lambda: len(queries) == 1)
    threads[1].start()
    threads[2].start()
    _until(lambda: len(checks._waiting) == 2)
    release.set()
    for thread in threads:
        thread.join(10)


def test_a_failed_coalesced_check_fails_every_check_it_served_with_its_own_error() -> None:
    checks = CoalescedChecks()
    release = threading.Event()
    calls: list[set[str]] = []

    def run(keys: set[str]) -> set[str]:
        calls.append(keys)
        if len(calls) == 1:
            assert release.wait(10)
            return {"a"}
        raise StoreWriteError("cannot write db: the session locks were lost (gone)")

    errors: dict[str, BaseException] = {}

    def ask(key: str) -> None:
        try:
            checks.check({key}, run)
        except StoreWriteError as exc:
            errors[key] = exc

    threads = [threading.Thread(target=ask, args=(k,)) for k in "abc"]
    _ask_while_one_runs(checks, threads, calls, release)
    assert sorted(errors) == ["b", "c"] and errors["b"] is not errors["c"]
    assert all("session locks were lost" in str(e) for e in errors.values())
    assert checks.check({"d"}, lambda keys: keys) == {"d"}  # the next check runs afresh


def _until(condition: Any) -> None:
    """Wait (bounded) for another thread to reach a point the test needs."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline
        threading.Event().wait(0.001)
