"""Webhook deliveries in flight (docs/decisions.md, "Concurrent webhook delivery"): at most
``limit`` POSTs at once, one session's groups one after the other in the order they were
started, so a slow receiver for one session holds neither the writes (the FIFO) nor the other
sessions' deliveries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, Generic, TypeVar

from schedlog.host.delivery import Group

__all__ = ["DEFAULT_LIMIT", "SessionChains"]

#: POSTs in flight at once unless the host is told otherwise (``--webhook-concurrency``).
DEFAULT_LIMIT: Final = 64
R = TypeVar("R")


class SessionChains(Generic[R]):
    """Runs ``run(group)`` for each started group: concurrently across sessions, at most
    ``limit`` at a time, and in start order within a session."""

    def __init__(self, run: Callable[[Group], Awaitable[R]], limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self._run = run
        self._slots = asyncio.Semaphore(limit)
        self._last: dict[str, asyncio.Task[R]] = {}
        self._tasks: set[asyncio.Task[R]] = set()
        #: The ids of every group started and not finished: never planned a second time.
        self.ids: set[str] = set()

    def start(self, group: Group) -> asyncio.Task[R]:
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
