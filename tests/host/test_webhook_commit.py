"""Group commit of acknowledged webhook deliveries (schedlog/host/webhook_commit.py, issue 21):
one store transaction for every group acknowledged since the last commit, each group's caller
back only once it is durable; a failed transaction fails the whole batch, which is posted
again under the same ``messageId``; a group whose commit left its members inactive asks the
timer for nothing, any other does. Virtual clock throughout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from schedlog.host.core import Outgoing
from schedlog.host.service import HostService
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.task import Task
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0
from tests.host.test_webhook_concurrency import Receiver, args, run, status


class Commits:
    """Wraps the store's ``replace_many``: records each call's ids, can fail the next calls."""

    def __init__(self, svc: HostService, fail: int = 0) -> None:
        store = svc.core.store
        assert isinstance(store, SqliteTaskStore)
        self.calls: list[list[str]] = []
        self.fail = fail
        real = store.replace_many

        def replace_many(tasks: Sequence[Task]) -> None:
            self.calls.append([t.id for t in tasks])
            if self.fail:
                self.fail -= 1
                raise OSError("disk on fire")
            real(tasks)

        store.replace_many = replace_many  # type: ignore[method-assign]


def test_groups_acknowledged_together_commit_in_one_transaction(tmp_path: Path) -> None:
    sessions = [f"s{i}" for i in range(5)]
    receiver = Receiver(slow=set(sessions))

    async def body(svc: HostService, clock: VirtualClock) -> None:
        commits = Commits(svc)
        for session in sessions:
            await svc.create(session, args(60))
        await clock.run_until(T0 + 60_000)
        assert len(receiver.started) == 5 and commits.calls == []
        for session in sessions:
            receiver.release(session)  # five 2xx before the commit slot starts
        await clock.settle()
        assert commits.calls == [[f"schedule-{i}" for i in range(5)]]
        assert all(status(svc, s, f"schedule-{i}") == "inactive" for i, s in enumerate(sessions))

    run(tmp_path, receiver, body)


def test_a_failed_group_commit_fails_the_batch_which_is_posted_again_once(
    tmp_path: Path,
) -> None:
    receiver = Receiver(slow={"a", "b"})
    ids: dict[str, list[str]] = {}

    async def post(outgoing: Outgoing) -> None:
        ids.setdefault(outgoing.delivered.session_id, []).append(outgoing.delivered.message_id)
        await receiver.post(outgoing)

    async def body(svc: HostService, clock: VirtualClock) -> None:
        commits = Commits(svc, fail=1)
        await svc.create("a", args(60))
        await svc.create("b", args(60))
        await clock.run_until(T0 + 60_000)
        receiver.release("a")
        receiver.release("b")
        await clock.settle()
        assert commits.calls == [["schedule-0", "schedule-1"]]  # one transaction, refused
        assert status(svc, "a", "schedule-0") == "active"
        assert status(svc, "b", "schedule-1") == "active"
        await clock.run_until(T0 + 70_000)  # past the backoff: both posted again, committed
        assert status(svc, "a", "schedule-0") == "inactive"
        assert status(svc, "b", "schedule-1") == "inactive"
        assert len(ids["a"]) == 2 and len(set(ids["a"])) == 1  # the same messageId
        assert len(ids["b"]) == 2 and len(set(ids["b"])) == 1
        await clock.run_until(T0 + 600_000)
        assert len(ids["a"]) == 2 and len(ids["b"]) == 2  # exactly once after the dedupe

    run(tmp_path, receiver, body, post=post)


def test_a_recurring_group_asks_the_timer_for_its_next_occurrence(tmp_path: Path) -> None:
    receiver = Receiver()

    async def body(svc: HostService, clock: VirtualClock) -> None:
        await svc.create("a", {"prompt": "p", "title": "t", "every_seconds": 60})
        await svc.create("b", args(60))
        await clock.run_until(T0 + 60_000)
        assert sorted(receiver.ended) == ["a:schedule-0", "b:schedule-1"]
        await clock.run_until(T0 + 180_000)  # the one-shot settled; the rule goes on
        assert receiver.ended.count("a:schedule-0") == 3

    run(tmp_path, receiver, body)


def test_a_burst_commits_off_the_loop_in_few_transactions(tmp_path: Path) -> None:
    sessions = [f"s{i}" for i in range(40)]
    receiver = Receiver()

    async def body(svc: HostService, clock: VirtualClock) -> None:
        commits = Commits(svc)
        for session in sessions:
            await svc.create(session, args(60))
        assert svc._commits is not None
        svc._commits.threaded_from = 1  # every write on the worker thread
        clock.set(T0 + 60_000)
        svc.request_drive()
        await clock.settle()  # the pass has started every group
        assert svc._posts is not None and svc._posts.running == 40
        await asyncio.wait_for(svc._posts.join(), 60)  # each ends once its commit is durable
        assert all(status(svc, s, f"schedule-{i}") == "inactive" for i, s in enumerate(sessions))
        assert sorted(i for call in commits.calls for i in call) == sorted(
            f"schedule-{i}" for i in range(40)
        )
        assert len(commits.calls) < 40  # grouped: fewer transactions than groups

    run(tmp_path, receiver, body, concurrency=16)


def test_the_cli_default_is_the_service_default() -> None:
    from schedlog.cli.main import build_parser
    from schedlog.host.inflight import DEFAULT_LIMIT

    argv = ["host", "serve", "--store", "x.db", "--deliver-to", "http://127.0.0.1:9/"]
    args = build_parser().parse_args(argv)
    assert args.webhook_concurrency == DEFAULT_LIMIT == 64
