"""Concurrent webhook delivery (docs/decisions.md, "Concurrent webhook delivery"; issue 22
item 3): a POST runs outside the write FIFO, so a receiver that takes its time holds neither
the tool calls nor the other sessions' deliveries; at most ``post_concurrency`` POSTs are in
flight, one session's in order; a reminder edited or deleted while its POST is in flight keeps
the edit. All on a virtual clock: a "slow" receiver is one that waits on an event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from schedlog.host.core import Outgoing
from schedlog.host.retry import Backoff
from schedlog.host.service import HostService
from schedlog.host.stores.open import open_store
from schedlog.host.webhook import WebhookSessions
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0


class Receiver:
    """Records each POST as it starts and as it ends; sessions in ``slow`` wait for
    :meth:`release` before they answer."""

    def __init__(self, slow: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.slow = set(slow)
        self.started: list[str] = []
        self.ended: list[str] = []
        self._gates: dict[str, asyncio.Event] = {}

    def release(self, session_id: str) -> None:
        self.slow.discard(session_id)
        gate = self._gates.pop(session_id, None)
        if gate is not None:
            gate.set()

    async def post(self, outgoing: Outgoing) -> None:
        delivered = outgoing.delivered
        label = f"{delivered.session_id}:{','.join(m.id for m in delivered.members)}"
        self.started.append(label)
        if delivered.session_id in self.slow:
            gate = self._gates.setdefault(delivered.session_id, asyncio.Event())
            await gate.wait()
        self.ended.append(label)


def run(
    tmp_path: Path,
    receiver: Receiver,
    body: Callable[[HostService, VirtualClock], Awaitable[None]],
    *,
    concurrency: int = 16,
    post: Callable[[Outgoing], Awaitable[None]] | None = None,
) -> None:
    async def main() -> None:
        clock = VirtualClock(T0)
        ids = iter(f"schedule-{i}" for i in range(1000))
        svc = HostService(
            open_store(tmp_path / "store.db"),
            WebhookSessions(),
            clock,
            task_ids=lambda: next(ids),
            post=receiver.post if post is None else post,
            backoff=Backoff(1_000, 4_000),
            post_concurrency=concurrency,
        )
        try:
            await body(svc, clock)
        finally:
            for session in list(receiver.slow):
                receiver.release(session)
            await svc.aclose()

    asyncio.run(main())


def args(seconds: int, **more: Any) -> dict[str, Any]:
    return {"prompt": "Stretch <b>now</b>", "title": "t", "after_seconds": seconds, **more}


def status(svc: HostService, session: str, task_id: str) -> str:
    found = svc.find(session, task_id)
    assert found is not None
    return found.status


def test_a_tool_call_does_not_wait_for_a_slow_receiver(tmp_path: Path) -> None:
    receiver = Receiver(slow={"a"})

    async def body(svc: HostService, clock: VirtualClock) -> None:
        await svc.create("a", args(60))
        await clock.run_until(T0 + 60_000)
        assert receiver.started == ["a:schedule-0"] and receiver.ended == []
        # Neither write is queued behind the POST: both return while it is still in flight
        # (queued behind it, they would never return and the bound would fail the test).
        created = await asyncio.wait_for(svc.create("b", args(600)), 30)
        deleted = await asyncio.wait_for(svc.delete("a", "schedule-missing"), 30)
        assert created.id == "schedule-1" and deleted["deleted"] is False
        assert receiver.ended == []
        receiver.release("a")
        await clock.settle()
        assert status(svc, "a", "schedule-0") == "inactive"

    run(tmp_path, receiver, body)


def test_other_sessions_are_delivered_while_one_receiver_is_slow(tmp_path: Path) -> None:
    receiver = Receiver(slow={"a"})

    async def body(svc: HostService, clock: VirtualClock) -> None:
        await svc.create("a", args(60))
        await svc.create("b", args(60))
        await svc.create("c", args(120))
        await clock.run_until(T0 + 60_000)
        assert sorted(receiver.started) == ["a:schedule-0", "b:schedule-1"]
        assert status(svc, "b", "schedule-1") == "inactive"
        await clock.run_until(T0 + 120_000)  # due while a's POST is still in flight
        assert receiver.ended == ["b:schedule-1", "c:schedule-2"]
        assert status(svc, "c", "schedule-2") == "inactive"
        assert status(svc, "a", "schedule-0") == "active"  # not committed before its 2xx
        receiver.release("a")
        await clock.settle()
        assert status(svc, "a", "schedule-0") == "inactive"
        assert receiver.started.count("a:schedule-0") == 1  # in flight: never planned twice

    run(tmp_path, receiver, body)


def test_one_sessions_groups_are_posted_one_after_the_other_in_order(tmp_path: Path) -> None:
    receiver = Receiver(slow={"a"})

    async def body(svc: HostService, clock: VirtualClock) -> None:
        for seconds in (60, 61, 62):  # three one-shots: three groups of one session
            await svc.create("a", args(seconds))
        await clock.run_until(T0 + 120_000)
        assert receiver.started == ["a:schedule-0"]  # the others wait behind it
        receiver.release("a")
        await clock.settle()
        assert receiver.started == ["a:schedule-0", "a:schedule-1", "a:schedule-2"]
        assert receiver.ended == receiver.started

    run(tmp_path, receiver, body)


def test_at_most_the_limit_of_posts_are_in_flight(tmp_path: Path) -> None:
    sessions = [f"s{i}" for i in range(5)]
    receiver = Receiver(slow=set(sessions))

    async def body(svc: HostService, clock: VirtualClock) -> None:
        for session in sessions:
            await svc.create(session, args(60))
        await clock.run_until(T0 + 60_000)
        assert len(receiver.started) == 2  # the limit
        first = receiver.started[0].split(":")[0]
        receiver.release(first)
        await clock.settle()
        assert len(receiver.started) == 3 and len(receiver.ended) == 1
        for session in sessions:
            receiver.release(session)
        await clock.settle()
        assert sorted(receiver.ended) == sorted(receiver.started)
        assert len(receiver.started) == 5

    run(tmp_path, receiver, body, concurrency=2)


def test_an_edit_or_a_deletion_during_the_post_stands(tmp_path: Path) -> None:
    receiver = Receiver(slow={"a"})

    async def body(svc: HostService, clock: VirtualClock) -> None:
        hourly = await svc.create("a", {"prompt": "p", "title": "Old", "every_seconds": 3600})
        once = await svc.create("a", args(3600))
        await clock.run_until(T0 + 3_600_000)
        assert receiver.started == ["a:schedule-0"]  # the recurring group; the one-shot waits
        edited = await svc.update("a", hourly.id, hourly.to_json(), title="New \ud800 <i>x</i>")
        assert edited.updated
        deleted = await svc.delete("a", once.id)
        assert deleted["deleted"] is True
        receiver.release("a")
        await clock.settle()
        assert svc.find("a", once.id) is None  # the commit did not bring the deleted one back
        found = svc.find("a", hourly.id)
        assert found is not None and found.record.title == "New \ud800 <i>x</i>"  # the edit stands
        page = svc.history("a", hourly.id, 10)
        assert len(page["records"]) == 1  # delivered once, after the edit, in its own POST

    run(tmp_path, receiver, body)


def test_an_edit_during_a_post_is_not_overwritten_by_its_commit(tmp_path: Path) -> None:
    receiver = Receiver(slow={"a"})

    async def body(svc: HostService, clock: VirtualClock) -> None:
        hourly = await svc.create("a", {"prompt": "p", "title": "Old", "every_seconds": 3600})
        await clock.run_until(T0 + 3_600_000)
        assert receiver.started == ["a:schedule-0"]
        later = {"kind": "every", "every_seconds": 7200}
        edited = await svc.update("a", hourly.id, hourly.to_json(), change=later, title="New")
        assert edited.updated and edited.record is not None
        receiver.release("a")
        await clock.settle()
        found = svc.find("a", hourly.id)
        assert found is not None and found.record == edited.record  # not moved on by the commit
        assert svc.history("a", hourly.id, 10)["records"] == []

    run(tmp_path, receiver, body)


def test_a_pause_while_the_post_is_in_flight_stands(tmp_path: Path) -> None:
    """docs/protocol.md#pause: the pause is not queued behind the POST; the delivery that
    started before it commits nothing, and the paused task is not posted again."""
    receiver = Receiver(slow={"a"})

    async def body(svc: HostService, clock: VirtualClock) -> None:
        await svc.create("a", args(60))
        await clock.run_until(T0 + 60_000)
        assert receiver.started == ["a:schedule-0"] and receiver.ended == []
        paused = await asyncio.wait_for(svc.pause("a", "schedule-0"), 30)
        assert paused["changed"] is True
        receiver.release("a")
        await clock.run_until(T0 + 3_600_000)
        found = svc.find("a", "schedule-0")
        assert found is not None and found.paused and found.active
        assert found.last_delivery is None  # the delivery in flight was not committed
        assert receiver.started == ["a:schedule-0"]  # and nothing was posted again
        resumed = await svc.pause("a", "schedule-0", resume=True)
        assert resumed["state"] == "overdue"
        await clock.run_until(T0 + 3_700_000)
        assert receiver.started == ["a:schedule-0", "a:schedule-0"]
        assert status(svc, "a", "schedule-0") == "inactive"

    run(tmp_path, receiver, body)
