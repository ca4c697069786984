"""Clocks for the session-local engine: the wall clock and a virtual clock for tests.

Instants are epoch milliseconds (UTC). A clock never decides anything: the live owner re-reads
``now_ms()`` after every wake and decides afresh (docs/concepts.md#live-owner "Timer"), so a wait
that returns early or late only costs one extra decision.
"""

from __future__ import annotations

import heapq
import itertools
import time
from typing import TYPE_CHECKING

from schedlog.clock import MAX_WAIT_MS

if TYPE_CHECKING:
    import asyncio

__all__ = ["SystemClock", "VirtualClock"]


class SystemClock:
    """The real wall clock. ``sleep_until`` waits at most :data:`MAX_WAIT_MS` per call."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep_until(self, deadline_ms: int) -> None:
        import asyncio  # a running loop has it; a clock made without one never imports it

        delay = min(max(deadline_ms - self.now_ms(), 0), MAX_WAIT_MS)
        await asyncio.sleep(delay / 1000)


class VirtualClock:
    """A clock that only moves when told to, for deterministic tests with no real sleeping.

    ``set(ms)`` moves the wall clock anywhere, backward included (a rollback). Sleepers whose
    deadline has been reached are woken. :meth:`run_until` is the autojump: it lets the event
    loop settle, then jumps to the earliest pending deadline (never beyond ``limit``), wakes
    that sleeper, and repeats, so a test covers hours of timers in microseconds.
    """

    def __init__(self, now_ms: int = 0) -> None:
        self._now = now_ms
        self._order = itertools.count()
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []

    def now_ms(self) -> int:
        return self._now

    def set(self, now_ms: int) -> None:
        """Move the wall clock to ``now_ms`` (forward or backward) and wake due sleepers."""
        self._now = now_ms
        self._wake_due()

    def advance(self, delta_ms: int) -> None:
        self.set(self._now + delta_ms)

    async def sleep_until(self, deadline_ms: int) -> None:
        import asyncio  # a running loop has it: ``session batch`` never sleeps, nor imports it

        if deadline_ms <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (deadline_ms, next(self._order), future))
        await future

    def next_deadline(self) -> int | None:
        """The earliest deadline of a still-waiting sleeper, if any."""
        self._drop_cancelled()
        return self._sleepers[0][0] if self._sleepers else None

    def pending(self) -> list[int]:
        """The deadlines of the sleepers still waiting, earliest first."""
        return sorted(deadline for deadline, _, future in self._sleepers if not future.done())

    async def settle(self) -> None:
        """Let every runnable task and callback run until the event loop has nothing ready."""
        import asyncio

        loop = asyncio.get_running_loop()
        for _ in range(10_000):
            await asyncio.sleep(0)
            ready = getattr(loop, "_ready", None)
            if ready is not None and not ready:
                return
        # Not a CPython selector loop (no ready queue to look at): the bounded loop above
        # has already yielded plenty of times.

    async def run_until(self, limit_ms: int) -> None:
        """Autojump: settle, jump to each pending deadline up to ``limit_ms`` in order, then set
        the clock to ``limit_ms`` (when it is ahead) and settle again."""
        await self.settle()
        while (deadline := self.next_deadline()) is not None and deadline <= limit_ms:
            self.set(max(deadline, self._now))
            await self.settle()
        if limit_ms > self._now:
            self.set(limit_ms)
        await self.settle()

    def _drop_cancelled(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)

    def _wake_due(self) -> None:
        self._drop_cancelled()
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
            self._drop_cancelled()
