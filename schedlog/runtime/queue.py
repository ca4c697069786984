"""The per-session serial queue (docs/concepts.md#live-owner).

Every tool call, archive stop and piece of due work of the live owner runs through one FIFO per
session, from its preflight barrier through its last post-append barrier, before the next one
starts. The bodies themselves are synchronous (the log is written and fsynced in place), so the
queue only has to order the asynchronous callers; :class:`asyncio.Lock` wakes waiters in FIFO
order, which is exactly the contract.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

__all__ = ["SerialQueue"]

T = TypeVar("T")


class SerialQueue:
    """One FIFO per session. Use ``async with queue:`` or ``await queue.run(fn)``."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()

    async def run(self, body: Callable[[], T]) -> T:
        """Run the synchronous ``body`` when every earlier queued operation has finished."""
        async with self:
            return body()
