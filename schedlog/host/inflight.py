"""Webhook deliveries in flight (docs/decisions.md, "Concurrent webhook delivery"): at most
``limit`` POSTs at once, one session's groups one after the other in the order they were
started, so a slow receiver for one session holds neither the writes (the FIFO) nor the other
sessions' deliveries.

Two forms with one contract: :class:`ReferenceChains`, the readable one (a task per group,
each waiting for its session's previous group), and :class:`SessionChains`, the one the
service runs (docs/decisions.md, "Webhook burst: one decode per task"): one worker task per
session with groups waiting, which runs them in order, so a burst of 10,000 groups costs 500
tasks and no wait per group. ``tests/host/test_inflight.py`` runs both on the same schedules
and finds the same starts, ends and results.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final, Generic, TypeVar

from schedlog.host.delivery import Group

__all__ = ["DEFAULT_LIMIT", "ReferenceChains", "SessionChains"]

#: POSTs in flight at once unless the host is told otherwise (``--webhook-concurrency``).
DEFAULT_LIMIT: Final = 64
R = TypeVar("R")


class ReferenceChains(Generic[R]):
    """Runs ``run(group)`` for each started group: concurrently across sessions, at most
    ``limit`` at a time, and in start order within a session (the readable form)."""

    def __init__(self, run: Callable[[Group], Awaitable[R]], limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._run = run
        self._slots = asyncio.Semaphore(limit)
        self._last: dict[str, asyncio.Task[R]] = {}
        self._tasks: set[asyncio.Task[R]] = set()
        #: The ids of every group started and not finished: never planned a second time.
        self.ids: set[str] = set()

    def start(self, group: Group) -> asyncio.Future[R]:
        """Start ``group`` behind the session's previous group, if one is still running."""
        previous = self._last.get(group.session_id)
        self.ids.update(group.ids)

        async def chain() -> R:
            try:
                if previous is not None:  # asyncio.wait: cancelling this chain spares it
                    await asyncio.wait({previous})
                async with self._slots:
                    return await self._run(group)
            finally:
                self.ids.difference_update(group.ids)
                if self._last.get(group.session_id) is task:
                    del self._last[group.session_id]

        task = asyncio.get_running_loop().create_task(chain())
        self._last[group.session_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def running(self) -> int:
        """Groups started and not finished."""
        return len(self._tasks)

    def cancel(self) -> None:
        """Cancel every group still running (a stop that timed out)."""
        for task in list(self._tasks):
            task.cancel()

    async def join(self) -> None:
        """Wait until every group started so far (and any started meanwhile) has finished."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))


class SessionChains(Generic[R]):
    """:class:`ReferenceChains` with one worker task per session that has groups waiting:
    the worker runs its session's groups one after the other, each under one of the
    ``limit`` slots, and gives each group's future its result. A group's future that is
    cancelled before the group starts skips it; once started, only :meth:`cancel` stops it."""

    def __init__(self, run: Callable[[Group], Awaitable[R]], limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._run = run
        self._slots = asyncio.Semaphore(limit)
        #: Per session with a worker: its groups not finished, the running one first.
        self._queues: dict[str, deque[tuple[Group, asyncio.Future[R]]]] = {}
        self._workers: set[asyncio.Task[None]] = set()
        self._running = 0
        #: The ids of every group started and not finished: never planned a second time.
        self.ids: set[str] = set()

    def start(self, group: Group) -> asyncio.Future[R]:
        """Start ``group`` behind the session's previous group, if one is still running."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self.ids.update(group.ids)
        self._running += 1
        queue = self._queues.get(group.session_id)
        if queue is not None:  # the session's worker takes it after the groups before it
            queue.append((group, future))
            return future
        queue = self._queues[group.session_id] = deque([(group, future)])
        worker = loop.create_task(self._work(group.session_id, queue))
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)
        return future

    async def _work(self, session_id: str, queue: deque[tuple[Group, asyncio.Future[R]]]) -> None:
        worker = asyncio.current_task()
        assert worker is not None
        try:
            while queue:
                group, future = queue[0]
                try:
                    if not future.done():  # a future cancelled while it waited: skipped
                        async with self._slots:
                            result = await self._run(group)
                        if not future.done():
                            future.set_result(result)
                except asyncio.CancelledError:
                    future.cancel()
                    if worker.cancelling():  # cancel(): the worker stops here
                        raise
                except Exception as exc:  # the group's own failure, for its awaiter
                    if not future.done():
                        future.set_exception(exc)
                finally:
                    queue.popleft()
                    self._finished(group)
        finally:  # cancelled (cancel()): every group still queued ends cancelled
            while queue:
                group, future = queue.popleft()
                future.cancel()
                self._finished(group)
            if self._queues.get(session_id) is queue:
                del self._queues[session_id]

    def _finished(self, group: Group) -> None:
        self.ids.difference_update(group.ids)
        self._running -= 1

    @property
    def running(self) -> int:
        """Groups started and not finished."""
        return self._running

    def cancel(self) -> None:
        """Cancel every group still running or waiting (a stop that timed out)."""
        for worker in list(self._workers):
            worker.cancel()

    async def join(self) -> None:
        """Wait until every group started so far (and any started meanwhile) has finished."""
        while self._workers:
            await asyncio.wait(set(self._workers))
