"""Pipelined runs of a batched pass (schedlog/host/passes.py, schedlog/host/batch.py;
docs/decisions.md "Pipelined runs"): once a run's follow-ups are durable, the next run is
queued and its sessions start while the run commits, but only while nothing else waits in the
FIFO. A write queued before that point is applied before the next run plans (a pause is kept);
a write queued after it waits for the next run's commit (never overwritten by it)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schedlog.host import batch as batch_mod
from schedlog.host import passes
from schedlog.host.service import HostService
from schedlog.rules.instants import format_instant
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0, MemorySessions
from tests.host.test_service import args, run

#: A deadlock guard only (a thread waits for the test): not a timing.
GUARD_S = 30.0
#: Sessions of the burst (one one-shot each) and sessions per run: two threaded runs.
SESSIONS = 2 * batch_mod.PARALLEL_FROM
PER_RUN = batch_mod.PARALLEL_FROM


def _two_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass's runs cut at ``PER_RUN`` members (one session each here)."""

    def small(groups: Any, max_sessions: int | None = None) -> Any:
        return batch_mod.chunks(groups, PER_RUN, max_sessions)

    monkeypatch.setattr(passes, "chunks", small)


async def _burst(svc: HostService, clock: VirtualClock) -> list[str]:
    """One one-shot per session ``p-00``... (run 1 holds the first ``PER_RUN`` sessions),
    all due; the clock is moved past their target."""
    at = format_instant(T0 + 60_000)
    ids = [(await svc.create(f"p-{i:02d}", args(f"r{i}", at=at))).id for i in range(SESSIONS)]
    clock.set(T0 + 120_000)
    return ids


def _held_commits(svc: HostService) -> tuple[threading.Event, threading.Event]:
    """The store's batched commit waits, the first time, until ``go`` is set (``holding``
    says it is held)."""
    holding, go = threading.Event(), threading.Event()
    store: Any = svc.core.store
    real: Callable[[Any], None] = store.replace_many

    def held(tasks: Any) -> None:
        if not holding.is_set():
            holding.set()
            assert go.wait(GUARD_S)
        real(tasks)

    store.replace_many = held
    return holding, go


def _delivered(sessions: MemorySessions) -> list[str]:
    return sorted(m.id for s in sessions.sessions.values() for m in s.delivered)


def test_the_next_runs_sessions_are_appended_while_a_run_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_runs(monkeypatch)

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        ids = await _burst(svc, clock)
        holding, go = _held_commits(svc)
        second = threading.Event()
        sessions.on_resolve = lambda sid: second.set() if sid == f"p-{PER_RUN:02d}" else None
        tick = asyncio.ensure_future(svc.tick())
        try:
            assert await asyncio.to_thread(holding.wait, GUARD_S)  # run 1 commits, held
            # ... and run 2's sessions are resolved (planned, appended) meanwhile.
            assert await asyncio.to_thread(second.wait, GUARD_S)
        finally:
            go.set()
        sent = await asyncio.wait_for(tick, GUARD_S)
        assert sorted(m.id for message in sent for m in message.members) == sorted(ids)
        assert _delivered(sessions) == sorted(ids)
        assert svc.core.due(T0 + 10**9) == []

    run(tmp_path, "sqlite", body)


def test_a_pause_queued_before_a_run_is_durable_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pause queued while run 1 appends waits in the FIFO: run 2 is not staged ahead of it,
    so run 2 plans after the pause and leaves its task paused, undelivered."""
    _two_runs(monkeypatch)

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        ids = await _burst(svc, clock)
        loop = asyncio.get_running_loop()
        queued = threading.Event()
        fifo: Any = svc._fifo
        enqueue = fifo._enqueue

        def enqueue_seen(*a: Any, **k: Any) -> Any:
            future = enqueue(*a, **k)
            if not k.get("run"):
                queued.set()
            return future

        fifo._enqueue = enqueue_seen
        pauses: list[Any] = []

        def pause_once(sid: str) -> None:  # on a pool thread, in run 1's sessions
            if sid == "p-00" and not pauses:
                target = f"p-{PER_RUN:02d}"
                pause = svc.pause(target, ids[PER_RUN])
                pauses.append(asyncio.run_coroutine_threadsafe(pause, loop))
                assert queued.wait(GUARD_S)

        sessions.on_resolve = pause_once
        sent = await asyncio.wait_for(svc.tick(), GUARD_S)
        assert pauses
        assert "code" not in await asyncio.wrap_future(pauses[0])  # paused
        delivered = sorted(m.id for message in sent for m in message.members)
        assert delivered == sorted(set(ids) - {ids[PER_RUN]})
        assert _delivered(sessions) == delivered
        found = svc.core.store.get(ids[PER_RUN])
        assert found is not None and found.task.paused and found.task.active

    run(tmp_path, "sqlite", body)


def test_a_pause_queued_after_the_next_run_is_staged_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pause queued while run 1 commits (run 2 already staged and queued) is applied after
    run 2's commit: run 2's delivery stands, recorded once, and the pause does not undo it."""
    _two_runs(monkeypatch)

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        ids = await _burst(svc, clock)
        holding, go = _held_commits(svc)
        tick = asyncio.ensure_future(svc.tick())
        try:
            assert await asyncio.to_thread(holding.wait, GUARD_S)
            pause = asyncio.ensure_future(svc.pause(f"p-{PER_RUN:02d}", ids[PER_RUN]))
            await asyncio.sleep(0)  # queued behind run 2
        finally:
            go.set()
        sent = await asyncio.wait_for(tick, GUARD_S)
        paused = await asyncio.wait_for(pause, GUARD_S)
        assert sorted(m.id for message in sent for m in message.members) == sorted(ids)
        assert _delivered(sessions) == sorted(ids)
        found = svc.core.store.get(ids[PER_RUN])
        assert found is not None and not found.task.active  # delivered, committed
        assert found.task.last_delivery is not None and not found.task.paused
        assert "code" in paused  # an inactive task: nothing to pause

    run(tmp_path, "sqlite", body)


def test_the_next_run_is_staged_only_once_the_runs_sessions_are_done(tmp_path: Path) -> None:
    """``appended`` (where the pass stages the next run) is called after every session of the
    run returned (its follow-ups durable), never before: a session split between two runs is
    appended by the first run before the second plans it."""
    from concurrent.futures import Future

    from schedlog.host.batch import BatchDelivery, DueSnapshot, Staged

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        batch = BatchDelivery(svc.core, clock.now_ms)
        snapshot = DueSnapshot(svc.core, [])
        done: Future[list[Any]] = Future()
        calls: list[bool] = []
        try:
            deliver = batch.deliver([], snapshot, Staged({}, done), lambda: calls.append(True))
            delivering = asyncio.ensure_future(deliver)
            for _ in range(20):
                await asyncio.sleep(0)
            assert calls == [] and not delivering.done()
            done.set_result([])
            assert await asyncio.wait_for(delivering, GUARD_S) == []
            assert calls == [True]
        finally:
            snapshot.close()
            batch.close()

    run(tmp_path, "sqlite", body)


@pytest.mark.parametrize("split", [False, True])
def test_a_run_sharing_a_session_with_the_last_is_not_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    """A session split between two runs: the second run is not staged while the first
    commits (a failed commit drops the first run's logs, one of them the second run's), and
    every member is still delivered once, in order. Two runs without a shared session are."""
    _two_runs(monkeypatch)
    staged: list[bool] = []
    real = batch_mod.BatchDelivery.stage

    def stage(self: Any, groups: Any, due: Any) -> Any:
        found = real(self, groups, due)
        staged.append(found is not None)
        return found

    monkeypatch.setattr(batch_mod.BatchDelivery, "stage", stage)

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        at = format_instant(T0 + 60_000)
        # Run 1: p-00 ... p-06 and the first of p-07's two; run 2: p-07's second and 7 more
        # (without the split: run 1 ends with p-07's only one, run 2 holds 8 more).
        names = [f"p-{i:02d}" for i in range(PER_RUN - 1)]
        names += [f"p-{PER_RUN - 1:02d}"] * (2 if split else 1)
        names += [f"p-{i:02d}" for i in range(PER_RUN, 2 * PER_RUN - split)]
        ids = [(await svc.create(n, args(f"r{i}", at=at))).id for i, n in enumerate(names)]
        clock.set(T0 + 120_000)
        sent = await asyncio.wait_for(svc.tick(), GUARD_S)
        assert sorted(m.id for message in sent for m in message.members) == sorted(ids)
        shared = sessions.sessions[f"p-{PER_RUN - 1:02d}"]
        assert [m.id for m in shared.delivered] == [
            i for i, n in zip(ids, names, strict=True) if n == names[PER_RUN - 1]
        ]
        assert staged == ([] if split else [True])

    run(tmp_path, "sqlite", body)
