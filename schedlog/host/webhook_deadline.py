"""The deadlines of the webhook exchanges in flight, on the host's clock, kept by one watcher
(docs/decisions.md, "Webhook burst: one decode per task").

The readable form of ``--webhook-timeout`` (:meth:`~schedlog.host.webhook.WebhookSink.
post_reference`) runs each exchange as a task of its own and waits for it or for a timer task
on the clock, whichever ends first: two tasks and a wait per POST. :class:`Deadlines` keeps
every exchange's deadline in one heap instead, watched by one task that sleeps on the clock
until the earliest; each exchange runs in its caller's task, which the watcher cancels once
the clock has reached its deadline (as :func:`asyncio.timeout` does on the loop's clock), and
:meth:`Deadline.expired` tells that cancellation from any other.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

from schedlog.clock import Clock

__all__ = ["Deadline", "Deadlines"]


class Deadline:
    """One exchange's deadline: armed by :meth:`Deadlines.arm`, ended by :meth:`end`."""

    __slots__ = ("_cancelling", "_task", "at_ms", "ended", "fired")

    def __init__(self, at_ms: int, task: asyncio.Task[object]) -> None:
        self.at_ms = at_ms
        self._task = task
        self._cancelling = task.cancelling()
        #: The watcher cancelled the task at the deadline.
        self.fired = False
        self.ended = False

    def end(self) -> None:
        """The exchange is over: the watcher no longer cancels it."""
        self.ended = True

    def expired(self) -> bool:
        """Whether the :class:`asyncio.CancelledError` being handled is this deadline's (and
        no other cancellation of the task is pending): call it once, in the handler."""
        return self.fired and self._task.uncancel() <= self._cancelling

    def _fire(self) -> None:
        self.fired = True
        self._task.cancel()


class Deadlines:
    """Every armed :class:`Deadline` of one sink, watched on ``clock`` by one task."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._heap: list[tuple[int, int, Deadline]] = []
        self._order = itertools.count()
        self._watcher: asyncio.Task[None] | None = None
        #: The deadline the watcher sleeps until.
        self._waking: int | None = None

    def arm(self, at_ms: int) -> Deadline:
        """A deadline at ``at_ms`` (the host's clock) for the current task."""
        task = asyncio.current_task()
        assert task is not None
        deadline = Deadline(at_ms, task)
        heapq.heappush(self._heap, (at_ms, next(self._order), deadline))
        watcher = self._watcher
        if watcher is None or watcher.done() or (self._waking is not None and at_ms < self._waking):
            if watcher is not None:
                watcher.cancel()  # it sleeps past this deadline
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        return deadline

    async def _watch(self) -> None:
        heap = self._heap
        while True:
            while heap and heap[0][2].ended:
                heapq.heappop(heap)
            if not heap:
                self._waking = None
                return
            self._waking = heap[0][0]
            await self._clock.sleep_until(heap[0][0])  # may wake early: looked at again
            now = self._clock.now_ms()
            while heap and heap[0][0] <= now:
                _, _, deadline = heapq.heappop(heap)
                if not deadline.ended:
                    deadline._fire()

    def close(self) -> None:
        """Stop the watcher (the sink is closed)."""
        if self._watcher is not None:
            self._watcher.cancel()
