"""Failed deliveries into a session log are retried by the host's own timer with capped
backoff (docs/operations.md#retries), counted by the metrics, and a stop that outlasts
``--stop-timeout`` abandons the delivery in flight (docs/operations.md#stopping)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from schedlog.host.delivery import GroupFailed
from schedlog.host.retry import Backoff
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory, encode_session_id
from schedlog.host.stopping import stop_service
from schedlog.host.stores.open import open_store
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0, task

SESSION = "s-<img src=x>"


def test_a_failed_log_delivery_is_retried_on_the_timer_until_it_succeeds(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    blocker = sessions / f"{encode_session_id(SESSION)}.jsonl"
    blocker.mkdir()  # the log path is a directory: every delivery into it fails
    store = open_store(tmp_path / "store.db")
    store.insert(task("schedule-1", session=SESSION, after_seconds=1))
    failures: list[int] = []
    sent: list[int] = []

    async def scenario() -> None:
        clock = VirtualClock(T0)
        directory = SessionsDirectory(sessions)
        backoff = Backoff(1000, 4000)
        service = HostService(store, directory, clock, backoff=backoff)

        def failed(exc: GroupFailed) -> None:
            failures.append(clock.now_ms() - T0)

        service.subscribe_failures(failed)
        service.subscribe_deliveries(lambda message: sent.append(clock.now_ms() - T0))
        await clock.run_until(T0 + 20_500)
        state = backoff.state("schedule-1")
        assert state is not None and state.attempts == len(failures)
        blocker.rmdir()  # repaired: the next attempt on the timer delivers, nothing else moves
        await clock.run_until(T0 + 30_000)
        assert backoff.state("schedule-1") is None  # a success forgets the retry state
        await service.aclose()
        directory.close()

    asyncio.run(scenario())
    # 1 s after the target, then doubling up to the 4 s cap.
    assert failures == [1000, 2000, 4000, 8000, 12000, 16000, 20000]
    assert sent == [24000]


class _Hung:
    """A sink that never answers: a webhook that accepted the connection and went silent."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def post(self, outgoing: object) -> None:
        self.started.set()
        await asyncio.Event().wait()


@pytest.mark.parametrize("timeout_s", [0.2])
def test_a_stop_that_outlasts_the_timeout_abandons_the_slot_and_closes(
    tmp_path: Path, timeout_s: float
) -> None:
    from schedlog.host.webhook import WebhookSessions

    store = open_store(tmp_path / "store.db")
    store.insert(task("schedule-1", after_seconds=1))

    async def scenario() -> tuple[bool, bool]:
        clock = VirtualClock(T0 + 5000)
        sink = _Hung()
        service = HostService(store, WebhookSessions(), clock, post=sink.post, backoff=Backoff())
        await asyncio.wait_for(sink.started.wait(), 30)
        finished = await stop_service(service, timeout_s)
        return finished, service.running

    finished, running = asyncio.run(scenario())
    assert finished is False and running is False
    reopened = open_store(tmp_path / "store.db")  # the lock was released by the close
    try:
        st = reopened.get("schedule-1")
        assert st is not None and st.task.active  # still due: delivered by the next host
    finally:
        reopened.close()


def test_a_stop_in_time_finishes_and_reports_it(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store.db")

    async def scenario() -> bool:
        service = HostService(store, SessionsDirectory(tmp_path / "d"), VirtualClock(T0))
        return await stop_service(service, 5)

    assert asyncio.run(scenario()) is True
