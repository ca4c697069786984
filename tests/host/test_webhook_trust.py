"""One decode per due task on the webhook path (schedlog/host/webhook_commit.py,
docs/decisions.md "Webhook burst: one decode per task"): the tasks a pass scanned are
trusted for the decision and the commit's re-read until a write reports a change to one.
Against the readable path (every read from the store), on the same schedules of edits,
deletions and pauses while POSTs are in flight: the same POSTs and the same store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlog.host.core import Outgoing
from schedlog.host.service import HostService
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.webhook_commit import WebhookCommits
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0
from tests.host.test_webhook_concurrency import Receiver, run

HOUR = 3_600_000
#: (session, recurring)
_TASK = st.tuples(st.integers(0, 2), st.booleans())
#: (task index, what is done to it while the POSTs are in flight)
_OP = st.tuples(st.integers(0, 5), st.sampled_from(["title", "prompt", "delete", "pause"]))


def _scenario(
    tmp_path: Path, tasks: list[tuple[int, bool]], slow: set[int], ops: list[tuple[int, str]]
) -> Any:
    receiver = Receiver(slow={f"s{i}" for i in slow})
    posts: list[tuple[str, str, list[str], list[str]]] = []

    async def post(outgoing: Outgoing) -> None:
        sent = outgoing.delivered
        posts.append(
            (sent.session_id, sent.message_id, [m.id for m in sent.members], list(outgoing.prompts))
        )
        await receiver.post(outgoing)

    stored: list[Any] = []

    async def body(svc: HostService, clock: VirtualClock) -> None:
        made = []
        for session, recurring in tasks:
            rule: dict[str, Any] = {"every_seconds": 3600} if recurring else {"after_seconds": 3600}
            made.append(await svc.create(f"s{session}", {"prompt": "p", "title": "t", **rule}))
        await clock.run_until(T0 + HOUR)  # due: the fast sessions' POSTs end, the slow wait
        for index, op in ops:
            if index >= len(made):
                continue
            task, session = made[index], f"s{tasks[index][0]}"
            found = svc.find(session, task.id)
            if op == "delete":
                await svc.delete(session, task.id)
            elif op == "pause":
                await svc.pause(session, task.id)
            elif found is not None:
                await svc.update(session, task.id, found.record.to_json(), **{op: f"{op} <b>2"})
        for i in slow:
            receiver.release(f"s{i}")
        await clock.run_until(T0 + 3 * HOUR)
        stored.extend(svc.core.catalog())

    run(tmp_path, receiver, body, post=post, concurrency=2)
    return posts, stored


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(_TASK, min_size=1, max_size=6),
    st.sets(st.integers(0, 2)),
    st.lists(_OP, max_size=4),
)
def test_trusted_reads_post_and_store_what_store_reads_do(
    tmp_path_factory: pytest.TempPathFactory,
    tasks: list[tuple[int, bool]],
    slow: set[int],
    ops: list[tuple[int, str]],
) -> None:
    trusted = _scenario(tmp_path_factory.mktemp("trusted"), tasks, slow, ops)
    with pytest.MonkeyPatch.context() as patch:  # the readable path: no task is trusted
        patch.setattr(WebhookCommits, "trust", lambda self, scanned: None)
        read = _scenario(tmp_path_factory.mktemp("read"), tasks, slow, ops)
    assert trusted == read


def test_a_burst_reads_each_due_task_from_the_store_once(tmp_path: Path) -> None:
    sessions = [f"s{i}" for i in range(4)]
    receiver = Receiver()
    reads: list[str] = []

    async def body(svc: HostService, clock: VirtualClock) -> None:
        store = svc.core.store
        assert isinstance(store, SqliteTaskStore)
        for i in range(12):
            await svc.create(sessions[i % 4], {"prompt": "p", "title": "t", "after_seconds": 60})
        real = store.get

        def get(task_id: str) -> Any:
            reads.append(task_id)
            return real(task_id)

        store.get = get  # type: ignore[method-assign]
        await clock.run_until(T0 + 60_000)
        assert svc._posts is not None
        await asyncio.wait_for(svc._posts.join(), 60)  # a commit may run on a worker thread
        assert len(receiver.ended) == 12
        assert all(svc.find(s, f"schedule-{i}") is not None for i, s in enumerate(sessions))

    run(tmp_path, receiver, body)
    delivered = [f"schedule-{i}" for i in range(12)]
    # the scan's read of each, then the four svc.find of the test; none by plan or commit
    assert sorted(reads[:12]) == sorted(delivered)
    assert reads[12:] == [f"schedule-{i}" for i in range(4)]
