"""Several hosts on one PostgreSQL store: claims, leases, the per-session lock, takeover after a
host dies, compare-and-set updates from several processes and change notifications.

Hosts here are separate store objects (each its own pool, lease owner and ``application_name``)
in threads of one process, over one sessions directory: what separate processes share.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from schedlog.eventlog.reader import read_log
from schedlog.host.config import Retention
from schedlog.host.core import HostCore
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.runtime.clock import VirtualClock
from tests import pg
from tests.host.helpers import T0, MemorySessions, followup_members, task
from tests.pg import pg_store, sql

psycopg = pg.require_psycopg()

from schedlog.host.stores.pg_batch import ClaimBatch  # noqa: E402
from schedlog.host.stores.pg_rows import StoreConflictError  # noqa: E402
from schedlog.host.stores.postgres import PostgresTaskStore  # noqa: E402

LATER = T0 + 3_600_000


def tick_in_thread(url: str, sessions_dir: Path, now: int, results: list[Any]) -> threading.Thread:
    def host() -> None:
        async def main() -> int:
            sessions = SessionsDirectory(sessions_dir)
            svc = HostService(pg_store(url), sessions, VirtualClock(now), auto_drive=False)
            try:
                sent = await svc.tick()
                return sum(len(d.members) for d in sent)
            finally:
                await svc.aclose()
                sessions.close()

        results.append(asyncio.run(main()))

    thread = threading.Thread(target=host)
    thread.start()
    return thread


def test_three_hosts_deliver_every_due_task_once(url: str, tmp_path: Path) -> None:
    s = pg_store(url)
    one_shots = [task(f"schedule-{i}", session=f"s-{i % 7}", after_seconds=60) for i in range(60)]
    recurring = [task(f"schedule-r{i}", session="s-r", every_seconds=600) for i in range(3)]
    for t in one_shots + recurring:
        s.insert(t)
    s.close()
    results: list[Any] = []
    threads = [tick_in_thread(url, tmp_path / "sessions", LATER, results) for _ in range(3)]
    for thread in threads:
        thread.join(60)
    assert len(results) == 3 and sum(results) == 63
    members = followup_members(tmp_path / "sessions")
    assert len(members) == len(set(members)) == 63
    assert sql(url, "SELECT count(*) FROM schedlog_tasks WHERE lease_owner IS NOT NULL") == [(0,)]
    check = pg_store(url)
    try:
        for st in check.tasks():
            assert st.task.last_delivery is not None, st.task.id
    finally:
        check.close()


def test_a_tick_delivers_its_claim_while_another_claim_scan_holds_the_row_locks(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``SKIP LOCKED`` claim scan that reaches a row just leased by another host locks it,
    finds on the recheck that it is no longer free, and keeps the lock until its transaction
    ends. A host that claimed the rows and then claimed them again at that moment found none
    of them, so its tick ended with nothing sent (all three hosts of the test above returned
    0). Here another connection holds those row locks during every claim after the first."""
    setup = pg_store(url)
    for i in range(5):
        setup.insert(task(f"schedule-{i}", session=f"s-{i}", after_seconds=60))
    setup.close()
    host = pg_store(url)
    claim = host.claim_batch  # what a host delivering to session logs claims with
    claims: list[int] = []

    def claim_beside_a_scan(now: int, excluded: Any = ()) -> Any:
        if not claims:
            found = claim(now, excluded)
        else:
            with psycopg.connect(url) as scan:  # a transaction, open until the block ends
                scan.execute("SELECT seq FROM schedlog_tasks FOR UPDATE")
                found = claim(now, excluded)
        claims.append(len(found.tasks))
        return found

    monkeypatch.setattr(host, "claim_batch", claim_beside_a_scan)

    async def main() -> int:
        sessions = SessionsDirectory(tmp_path / "sessions")
        svc = HostService(host, sessions, VirtualClock(LATER), auto_drive=False)
        try:
            return sum(len(d.members) for d in await svc.tick())
        finally:
            await svc.aclose()
            sessions.close()

    assert asyncio.run(main()) == 5
    assert claims[0] == 5  # the first claim took all five, the later ones found nothing left
    assert len(followup_members(tmp_path / "sessions")) == 5
    assert sql(url, "SELECT count(*) FROM schedlog_tasks WHERE status = 'active'") == [(0,)]


def test_a_claim_takes_a_sessions_other_due_tasks_only_for_a_recurring_group(url: str) -> None:
    """A one-shot is a group of its own: claiming it leaves the session's other due tasks to
    any host (before, a claim of 200 one-shots leased every due task of their sessions, 4,000
    of 20,000 for one host). A recurring task brings the session's other due recurring tasks
    (one batch follow-up), not its one-shots."""
    a, b, c = pg_store(url), pg_store(url), pg_store(url)
    try:
        for i in range(3):  # the one-shots are due after the recurring tasks
            a.insert(task(f"schedule-o{i}", session="s-1", after_seconds=900))
        a.insert(task("schedule-r0", session="s-2", every_seconds=600))
        a.insert(task("schedule-o3", session="s-2", after_seconds=900))
        a.insert(task("schedule-r1", session="s-2", every_seconds=600))
        assert [st.task.id for st in a.claim_due(LATER, limit=1)] == ["schedule-r0", "schedule-r1"]
        assert [st.task.id for st in b.claim_due(LATER, limit=1)] == ["schedule-o0"]
        assert [st.task.id for st in c.claim_due(LATER)] == [
            "schedule-o1",
            "schedule-o2",
            "schedule-o3",
        ]
        owners = [row[0] for row in sql(url, "SELECT lease_owner FROM schedlog_tasks ORDER BY seq")]
        assert owners == [b.owner, c.owner, c.owner, a.owner, c.owner, a.owner]
    finally:
        for s in (a, b, c):
            s.close()


def test_claims_skip_live_leases_and_take_over_expired_ones(url: str) -> None:
    a, b = pg_store(url), pg_store(url)
    try:
        a.insert(task("schedule-1", after_seconds=60))
        assert (a.due_count(T0), a.due_count(LATER)) == (0, 1)
        assert [st.task.id for st in a.claim_due(LATER)] == ["schedule-1"]
        assert a.lease_takeovers == 0  # a free row is claimed, not taken over
        assert b.claim_due(LATER) == []  # A's lease is live
        assert b.due_count(LATER) == 1  # claimed or not, it is due
        assert a.next_wake() is not None
        wake = b.next_wake()
        assert wake is not None and wake > LATER  # B waits for the lease, not the target
        sql(url, "UPDATE schedlog_tasks SET lease_until = now() - interval '1 second'")
        assert [st.task.id for st in b.claim_due(LATER)] == ["schedule-1"]
        assert (a.lease_takeovers, b.lease_takeovers) == (0, 1)  # schedlog_lease_takeovers_total
        assert [st.task.id for st in b.claim_due(LATER)] == ["schedule-1"]  # its own again
        assert b.lease_takeovers == 1
        assert a.extend_leases(["schedule-1"]) == set()
        claimed = a.get("schedule-1")
        assert claimed is not None
        done = msgspec.structs.replace(claimed.task, status="inactive")
        with pytest.raises(StoreConflictError):
            a.commit_claimed(done)  # the lease is B's now
        b.commit_claimed(done)
        assert sql(url, "SELECT status, lease_owner FROM schedlog_tasks") == [("inactive", None)]
    finally:
        a.close()
        b.close()


def test_next_wake_has_an_answer_while_a_foreign_lease_ends_during_the_call(url: str) -> None:
    """While another host's lease on an active task ends, ``next_wake`` always answers: the
    lease's end while it is live, the task's target once it has ended. Read at two instants
    (two statements), a lease ending between them looked like neither, and a host whose peer
    died slept with nothing to wake it (seen as a missed takeover in
    tests/serve/test_webhook_hosts.py). Each round sets the lease to end a fraction of a
    millisecond after the call starts, so many rounds straddle that end."""
    a, b = pg_store(url), pg_store(url)
    offsets = random.Random(7)
    try:
        a.insert(task("schedule-1", after_seconds=60))
        assert [st.task.id for st in a.claim_due(LATER)] == ["schedule-1"]
        with psycopg.connect(url, autocommit=True) as conn:
            for _ in range(600):
                conn.execute(
                    "UPDATE schedlog_tasks SET lease_until = clock_timestamp() + "
                    "make_interval(secs => %s)",
                    (offsets.uniform(0.0, 0.003),),
                )
                assert b.next_wake() is not None
    finally:
        a.close()
        b.close()


def test_host_that_died_after_the_followup_is_taken_over_without_a_duplicate(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = pg_store(url)
    setup.insert(task("schedule-1", after_seconds=60))
    setup.close()
    sessions_dir = tmp_path / "sessions"

    async def host(store: PostgresTaskStore) -> list[Any]:
        sessions = SessionsDirectory(sessions_dir)
        svc = HostService(store, sessions, VirtualClock(LATER), auto_drive=False)
        try:
            return await svc.tick()
        finally:
            await svc.aclose()
            sessions.close()

    dying = pg_store(url)

    def crash(batch: Any, tasks: Any) -> None:
        raise ConnectionError("host killed after the follow-up")

    def die(batch: Any) -> None:  # a dead host releases nothing: its connection just drops
        batch.closed = True
        batch.conn.close()
        dying._pool.putconn(batch.conn)

    with monkeypatch.context() as patch:
        patch.setattr(ClaimBatch, "commit", crash)
        patch.setattr(ClaimBatch, "close", die)
        patch.setattr(dying, "close", lambda: (dying._pool.close(), dying._lock.close()))
        assert asyncio.run(host(dying)) == []  # the follow-up was appended, not committed
    assert len(followup_members(sessions_dir)) == 1
    owner = sql(url, "SELECT lease_owner FROM schedlog_tasks")[0][0]
    assert owner == dying.owner
    assert asyncio.run(host(pg_store(url))) == []  # nothing is claimed before the lease expires
    sql(url, "UPDATE schedlog_tasks SET lease_until = now() - interval '1 second'")
    assert asyncio.run(host(pg_store(url))) == []  # recovered from the log, not sent again
    members = followup_members(sessions_dir)
    assert len(members) == 1
    check = pg_store(url)
    try:
        st = check.get("schedule-1")
        assert st is not None and st.task.status == "inactive"
        assert st.task.last_delivery is not None
        (event,) = [
            e for e in read_log(sessions_dir / "s-1.jsonl").events if e.type == "message/followup"
        ]
        assert st.task.last_delivery.message_id == event.data["messageId"]
    finally:
        check.close()


def test_concurrent_updates_from_two_hosts_conflict_only_on_a_real_change(url: str) -> None:
    setup = pg_store(url)
    ids = [f"schedule-{i}" for i in range(20)]
    for task_id in ids:
        setup.insert(task(task_id, every_seconds=600))
    setup.close()
    results: dict[str, list[Any]] = {task_id: [] for task_id in ids}
    lock = threading.Lock()

    def host(title: str) -> None:
        async def main() -> None:
            svc = HostService(pg_store(url), MemorySessions(), VirtualClock(T0), auto_drive=False)
            try:
                for task_id in ids:
                    current = svc.find("s-1", task_id)
                    assert current is not None
                    expected = task(task_id, every_seconds=600).record.to_json()
                    result = await svc.update("s-1", task_id, expected, title=title)
                    with lock:
                        results[task_id].append((title, result.updated, result.code))
            finally:
                await svc.aclose()

        asyncio.run(main())

    threads = [threading.Thread(target=host, args=(name,)) for name in ("A", "B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    check = pg_store(url)
    try:
        for task_id, outcome in results.items():
            assert sorted(updated for _, updated, _ in outcome) == [False, True], outcome
            winner = next(title for title, updated, _ in outcome if updated)
            loser = next(code for _, updated, code in outcome if not updated)
            assert loser == "schedule_conflict"
            st = check.get(task_id)
            assert st is not None and st.task.record.title == winner
    finally:
        check.close()


def test_open_is_independent_of_the_task_count(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = pg_store(url)
    s.insert(task("schedule-1"))

    def full_load() -> Any:
        raise AssertionError("a shared store must not be loaded at start-up")

    monkeypatch.setattr(s, "active_targets", full_load)
    monkeypatch.setattr(s, "tasks", full_load)
    try:
        core = HostCore(s, MemorySessions(), Retention())
        assert core.active_count() == 1
        assert core.next_target() == task("schedule-1").record.scheduled_at
    finally:
        s.close()


def test_other_hosts_commits_arrive_as_change_events(url: str) -> None:
    got: list[Any] = []
    arrived = threading.Event()

    async def main() -> None:
        svc = HostService(pg_store(url), MemorySessions(), VirtualClock(T0), auto_drive=True)

        def on_change(change: Any) -> None:
            got.append(change)
            if change.kind == "deleted":
                arrived.set()

        svc.subscribe_changes(on_change)
        other = pg_store(url)
        try:
            other.insert(task("schedule-x", session="s-9"))
            other.delete("schedule-x")
            for _ in range(200):  # each wait hands the loop to the listener's callbacks
                if arrived.is_set():
                    break
                await asyncio.sleep(0.05)
        finally:
            other.close()
            await svc.aclose()

    asyncio.run(main())
    assert [(c.id, c.session_id, c.kind) for c in got] == [
        ("schedule-x", "s-9", "created"),
        ("schedule-x", "s-9", "deleted"),
    ]


def test_a_delivery_whose_session_lock_was_lost_sends_nothing(url: str) -> None:
    """The session lock's connection dies while the host is delivering (``pg_terminate_backend``
    of the multi-host fault run): PostgreSQL has released the lock, so another host may be
    appending to the same log; this host sends nothing and the reminder stays due."""
    setup = pg_store(url)
    setup.insert(task("schedule-1", after_seconds=60))
    setup.close()
    sessions = MemorySessions()

    def lose_lock(session_id: str) -> None:
        sql(
            url,
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid() "
            # only this test's database: other runs on the server hold advisory locks too
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )

    async def main() -> tuple[list[Any], list[Any]]:
        svc = HostService(pg_store(url), sessions, VirtualClock(LATER), auto_drive=False)
        try:
            sessions.on_resolve = lose_lock
            lost = await svc.tick()
            sessions.on_resolve = None
            return lost, await svc.tick()
        finally:
            await svc.aclose()

    lost, later = asyncio.run(main())
    assert lost == []
    assert [len(d.members) for d in later] == [1]
    events = sessions.sessions["s-1"].events
    assert [e["type"] for e in events] == ["message/followup"]
    assert sql(url, "SELECT status, lease_owner FROM schedlog_tasks") == [("inactive", None)]


def test_a_clean_stop_hands_claims_back_after_the_server_dropped_its_connections(
    url: str,
) -> None:
    """``close`` releases this host's leases even when every connection it opened has since
    been dropped (a server restart, ``pg_terminate_backend``): found by the multi-host fault
    run, where a host stopped after the restart left its claims to expire."""
    s = pg_store(url)
    s.insert(task("schedule-1", after_seconds=60))
    assert [st.task.id for st in s.claim_due(LATER)] == ["schedule-1"]
    sql(
        url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        (s.owner,),
    )
    s.close()
    assert sql(url, "SELECT lease_owner, lease_until FROM schedlog_tasks") == [(None, None)]


# --- pause and resume on several hosts (docs/protocol.md#pause) ------------------------------


def pause_in_thread(url: str, task_id: str, results: list[Any]) -> threading.Thread:
    """Another host pauses ``task_id`` of session s-1 (its own store, pool and loop)."""

    def host() -> None:
        async def main() -> Any:
            svc = HostService(
                pg_store(url), MemorySessions(), VirtualClock(LATER), auto_drive=False
            )
            try:
                return await svc.pause("s-1", task_id)
            finally:
                await svc.aclose()

        results.append(asyncio.run(main()))

    thread = threading.Thread(target=host)
    thread.start()
    return thread


def deliver_on(url: str, sessions: MemorySessions, host: Any = None) -> int:
    async def main() -> int:
        svc = HostService(host or pg_store(url), sessions, VirtualClock(LATER), auto_drive=False)
        try:
            return sum(len(d.members) for d in await svc.tick())
        finally:
            await svc.aclose()

    return asyncio.run(main())


def test_a_pause_on_another_host_between_claim_and_delivery_sends_nothing(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host A claims the due task (the one-group claim, without the session's lock); host B
    pauses it before A's delivery takes the session's lock. A's delivery re-reads the row
    under the lock, finds it paused and sends nothing."""
    setup = pg_store(url)
    setup.insert(task("schedule-1", every_seconds=600))
    setup.close()
    host = pg_store(url)
    claim = host.claim_due
    paused: list[Any] = []

    def claim_then_pause_elsewhere(now: int, excluded: Any = ()) -> Any:
        found = claim(now, excluded)
        if found and not paused:
            pause_in_thread(url, "schedule-1", paused).join(60)
        return found

    host.claim_due = claim_then_pause_elsewhere
    # The one-group path (a batched claim holds the session's lock from the claim on, so a
    # pause elsewhere waits for its delivery: tests/host/test_pg_batch.py).
    monkeypatch.setattr("schedlog.host.service.claims_batchable", lambda core: False)
    sessions = MemorySessions()
    assert deliver_on(url, sessions, host) == 0
    assert paused and paused[0]["changed"] is True
    assert sessions.sessions.get("s-1") is None or not sessions.sessions["s-1"].delivered
    assert sql(url, "SELECT status, lease_owner FROM schedlog_tasks") == [("paused", None)]
    assert deliver_on(url, MemorySessions()) == 0  # and no host claims it later


def test_a_pause_on_another_host_waits_for_a_delivery_in_progress(url: str) -> None:
    """Host B's pause arrives while host A is delivering to the session: it waits for A's
    session lock, so A's delivery commits first and the pause applies to the advanced task."""
    setup = pg_store(url)
    setup.insert(task("schedule-1", every_seconds=600))
    setup.close()
    sessions = MemorySessions()
    paused: list[Any] = []
    threads: list[threading.Thread] = []

    def on_resolve(_session: str) -> None:
        if threads:
            return
        threads.append(pause_in_thread(url, "schedule-1", paused))
        deadline = time.monotonic() + 30
        waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        while sql(url, waiting) != [(1,)]:  # B is blocked on A's session lock
            assert time.monotonic() < deadline, "the pause never waited for the session lock"
            assert not paused, "the pause did not wait for the delivery in progress"
            threads[0].join(0.01)

    sessions.on_resolve = on_resolve
    assert deliver_on(url, sessions) == 1
    threads[0].join(60)
    assert paused and paused[0]["changed"] is True
    check = pg_store(url)
    try:
        st = check.get("schedule-1")
        assert st is not None and st.task.paused and st.task.last_delivery is not None
    finally:
        check.close()
    assert deliver_on(url, MemorySessions()) == 0
