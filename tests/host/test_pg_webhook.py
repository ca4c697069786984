"""Webhook delivery on a PostgreSQL store shared by several hosts (docs/decisions.md, "Webhook
delivery with several hosts"): claims end with every outcome, leases are renewed before the POST
and while it runs, a lost lease sends or commits nothing, a failed group's claim is held until
its next attempt, and a host that dies mid-POST leaves work another host takes over with the
same messageId.

The sink is a plain coroutine (no HTTP): what it sees and when it answers is scripted. Hosts
are separate store objects (own pool, lease owner) on one virtual clock; leases run on the
database clock, so the tests move them with SQL instead of waiting.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from schedlog.host.core import Outgoing
from schedlog.host.retry import Backoff
from schedlog.host.service import HostService
from schedlog.runtime.clock import VirtualClock
from tests import pg
from tests.host.helpers import T0, MemorySessions, task
from tests.pg import pg_store, sql

psycopg = pg.require_psycopg()

from schedlog.host.stores.postgres import PostgresTaskStore  # noqa: E402

LATER = T0 + 3_600_000


def lease_left_s(url: str, task_id: str = "schedule-1") -> float | None:
    """Seconds until the task's lease ends on the database clock (None: no lease)."""
    ((left,),) = sql(
        url,
        "SELECT extract(epoch FROM lease_until - now())::float FROM schedlog_tasks WHERE id = %s",
        (task_id,),
    )
    return None if left is None else float(left)


def row(url: str, task_id: str = "schedule-1") -> tuple[Any, ...]:
    ((status, owner),) = sql(
        url, "SELECT status, lease_owner FROM schedlog_tasks WHERE id = %s", (task_id,)
    )
    return status, owner


def steal(url: str, task_id: str = "schedule-1") -> None:
    """Another host's live lease on the task (as after a takeover)."""
    sql(
        url,
        "UPDATE schedlog_tasks SET lease_owner = 'other-host', "
        "lease_until = now() + interval '1 minute' WHERE id = %s",
        (task_id,),
    )


def expire(url: str) -> None:
    sql(url, "UPDATE schedlog_tasks SET lease_until = now() - interval '1 second'")


def seed(url: str, *tasks: Any) -> None:
    s = pg_store(url)
    try:
        for t in tasks:
            s.insert(t)
    finally:
        s.close()


class Sink:
    """A scripted webhook receiver: each call records the messageId, runs ``before`` (a test
    hook inside the POST), then raises the next scripted exception or returns (a 2xx)."""

    def __init__(self, script: list[BaseException | None] | None = None) -> None:
        self.script = list(script or [])
        self.message_ids: list[str] = []
        self.before: Any = None
        self.started = asyncio.Event()
        self.gate: asyncio.Event | None = None
        self.cancelled = False

    async def post(self, outgoing: Outgoing) -> None:
        self.message_ids.append(outgoing.delivered.message_id)
        if self.before is not None:
            self.before()
        self.started.set()
        if self.gate is not None:
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        outcome = self.script.pop(0) if self.script else None
        if outcome is not None:
            raise outcome


def service(
    store: PostgresTaskStore,
    sink: Sink,
    clock: VirtualClock,
    sessions: MemorySessions | None = None,
    backoff: Backoff | None = None,
) -> HostService:
    return HostService(
        store,
        sessions or MemorySessions(),
        clock,
        auto_drive=False,
        post=sink.post,
        backoff=backoff,
    )


def test_a_failed_post_releases_its_claims_at_once(url: str) -> None:
    seed(url, task("schedule-1", after_seconds=60))
    sink = Sink([ConnectionError("refused")])

    async def main() -> tuple[list[Any], list[Any]]:
        svc = service(pg_store(url), sink, VirtualClock(LATER))
        other = service(pg_store(url), Sink(), VirtualClock(LATER))
        try:
            failed = await svc.tick()
            assert row(url) == ("active", None)  # no lease left to expire
            return failed, await other.tick()  # another host may take it at once
        finally:
            await svc.aclose()
            await other.aclose()

    failed, taken = asyncio.run(main())
    assert failed == []
    assert [len(d.members) for d in taken] == [1]
    assert row(url) == ("inactive", None)


def test_a_success_commits_and_leaves_no_claim(url: str) -> None:
    seed(url, task("schedule-1", after_seconds=60), task("schedule-2", after_seconds=60))
    sink = Sink()

    async def main() -> list[Any]:
        svc = service(pg_store(url), sink, VirtualClock(LATER))
        try:
            return await svc.tick()
        finally:
            await svc.aclose()

    sent = asyncio.run(main())
    assert len(sent) == 2 and len(set(sink.message_ids)) == 2
    assert sql(url, "SELECT status, lease_owner FROM schedlog_tasks") == [("inactive", None)] * 2


def test_a_failed_group_is_held_until_its_next_attempt(url: str) -> None:
    """With a backoff, the failed task's claim is held (database clock) for the backoff delay,
    so another host does not retry it earlier; this host retries it at its next attempt."""
    seed(url, task("schedule-1", after_seconds=60))
    sink = Sink([ConnectionError("refused"), ConnectionError("refused")])
    clock = VirtualClock(LATER)
    backoff = Backoff(base_ms=20_000, cap_ms=80_000)

    async def main() -> None:
        svc = service(pg_store(url), sink, clock, backoff=backoff)
        other = service(pg_store(url), Sink(), VirtualClock(LATER + 10_000))
        try:
            assert await svc.tick() == []
            left = lease_left_s(url)
            assert left is not None and 15 < left <= 20  # held for the first delay (20 s)
            assert await other.tick() == []  # not retried earlier by another host
            assert row(url)[1] == svc.core.store.owner  # type: ignore[attr-defined]
            clock.advance(20_000)
            assert await svc.tick() == []  # the second attempt: this host, held for 40 s
            left = lease_left_s(url)
            assert left is not None and 35 < left <= 40
            state = backoff.state("schedule-1")
            assert state is not None and state.attempts == 2
            expire(url)  # the holder died: the hold ends, another host takes the task over
            sent = await other.tick()
            assert [len(d.members) for d in sent] == [1]
        finally:
            await svc.aclose()
            await other.aclose()

    asyncio.run(main())
    assert len(set(sink.message_ids)) == 1  # one group, one messageId on every attempt
    assert row(url) == ("inactive", None)


def test_leases_are_renewed_just_before_the_post(url: str) -> None:
    seed(url, task("schedule-1", after_seconds=60))
    sessions = MemorySessions()
    # After the claim, before the POST: the lease is nearly over.
    sessions.on_resolve = lambda _session: sql(
        url, "UPDATE schedlog_tasks SET lease_until = now() + interval '1 second'"
    )
    seen: list[float | None] = []
    sink = Sink()
    sink.before = lambda: seen.append(lease_left_s(url))

    async def main() -> list[Any]:
        svc = service(pg_store(url), sink, VirtualClock(LATER), sessions)
        try:
            return await svc.tick()
        finally:
            await svc.aclose()

    assert len(asyncio.run(main())) == 1
    (left,) = seen
    assert left is not None and left > 25  # renewed to a whole lease (30 s)
    assert row(url) == ("inactive", None)


def test_a_lease_lost_before_the_post_sends_nothing(url: str) -> None:
    seed(url, task("schedule-1", after_seconds=60))
    sessions = MemorySessions()
    sessions.on_resolve = lambda _session: steal(url)
    sink = Sink()

    async def main() -> list[Any]:
        svc = service(pg_store(url), sink, VirtualClock(LATER), sessions)
        try:
            return await svc.tick()
        finally:
            await svc.aclose()

    assert asyncio.run(main()) == []
    assert sink.message_ids == []
    assert row(url) == ("active", "other-host")  # the other host's claim is left alone


def test_a_long_post_keeps_its_lease_alive(url: str) -> None:
    """A receiver slower than the lease: renewals every third of a lease (host clock) keep the
    claim this host's, and the 2xx is committed."""
    seed(url, task("schedule-1", after_seconds=60))
    clock = VirtualClock(LATER)
    sink = Sink()
    sink.gate = asyncio.Event()

    async def main() -> list[Any]:
        store = pg_store(url)
        svc = service(store, sink, clock)
        try:
            ticking = asyncio.ensure_future(svc.tick())
            await asyncio.wait_for(sink.started.wait(), 30)
            for _ in range(3):  # three lease renewals: 30 s of POST on the host clock
                sql(url, "UPDATE schedlog_tasks SET lease_until = now() + interval '1 second'")
                clock.advance(store.lease_ms // 3)
                await clock.settle()
                left = lease_left_s(url)
                assert left is not None and left > 25, left
            assert sink.gate is not None
            sink.gate.set()
            return await asyncio.wait_for(ticking, 30)
        finally:
            # An assertion failed mid-POST: let the POST end, so closing does not wait on it
            # forever (a broken renewal then fails this test instead of hanging it).
            sink.gate.set()
            await svc.aclose()

    sent = asyncio.run(main())
    assert [len(d.members) for d in sent] == [1]
    assert row(url) == ("inactive", None)


def test_a_lease_lost_during_the_post_cancels_it(url: str) -> None:
    seed(url, task("schedule-1", after_seconds=60))
    clock = VirtualClock(LATER)
    sink = Sink()
    sink.gate = asyncio.Event()

    async def main() -> list[Any]:
        store = pg_store(url)
        svc = service(store, sink, clock)
        try:
            ticking = asyncio.ensure_future(svc.tick())
            await asyncio.wait_for(sink.started.wait(), 30)
            steal(url)  # the lease ran out (a stalled host) and another host took over
            clock.advance(store.lease_ms // 3)
            return await asyncio.wait_for(ticking, 30)
        finally:
            await svc.aclose()

    assert asyncio.run(main()) == []
    assert sink.cancelled
    assert row(url) == ("active", "other-host")


def test_a_lease_lost_after_the_2xx_commits_nothing_and_the_successor_resends_the_same_id(
    url: str,
) -> None:
    """The receiver answered 2xx, but meanwhile the lease became another host's: the commit is
    refused; the successor posts the same messageId (the receiver's dedupe key) and commits."""
    seed(url, task("schedule-1", after_seconds=60))
    sink = Sink()
    sink.before = lambda: steal(url)

    async def main() -> tuple[list[Any], list[Any]]:
        first = service(pg_store(url), sink, VirtualClock(LATER))
        try:
            lost = await first.tick()
        finally:
            await first.aclose()
        assert row(url) == ("active", "other-host")
        expire(url)
        sink.before = None
        second = service(pg_store(url), sink, VirtualClock(LATER + 5_000))
        try:
            return lost, await second.tick()
        finally:
            await second.aclose()

    lost, sent = asyncio.run(main())
    assert lost == []
    assert [len(d.members) for d in sent] == [1]
    assert len(sink.message_ids) == 2 and len(set(sink.message_ids)) == 1
    assert row(url) == ("inactive", None)
    check = pg_store(url)
    try:
        st = check.get("schedule-1")
        assert st is not None and st.task.last_delivery is not None
        assert st.task.last_delivery.message_id == sink.message_ids[0]
    finally:
        check.close()


def test_a_host_that_dies_mid_post_is_taken_over_with_the_same_message_id(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(url, task("schedule-1", after_seconds=60))
    dying = pg_store(url)
    # A dead host renews, releases and holds nothing; its POST never comes back.
    monkeypatch.setattr(dying, "release", lambda ids: None)
    monkeypatch.setattr(dying, "hold", lambda delays: None)
    sink = Sink([ConnectionError("the host died mid-POST")])
    receiver = Sink()

    async def main() -> list[Any]:
        svc = service(dying, sink, VirtualClock(LATER))
        assert await svc.tick() == []
        assert row(url) == ("active", dying.owner)  # its lease outlives it
        successor = service(pg_store(url), receiver, VirtualClock(LATER + 1_000))
        try:
            assert await successor.tick() == []  # not before the lease ends
            expire(url)
            return await successor.tick()
        finally:
            await successor.aclose()
            dying._pool.close()
            assert dying._lock is not None
            dying._lock.close()

    sent = asyncio.run(main())
    assert [len(d.members) for d in sent] == [1]
    assert sink.message_ids == receiver.message_ids  # one messageId: the receiver dedupes it
    assert row(url) == ("inactive", None)
