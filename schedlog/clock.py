"""The clock both engines are driven by: the :class:`Clock` protocol and :data:`MAX_WAIT_MS`.

A leaf below the session-local runtime and the host (docs/concepts.md#live-owner "Timer"): each
engine takes a ``Clock`` and never reads the wall clock itself. The implementations, the wall
clock and a virtual clock for tests, are in :mod:`schedlog.runtime.clock`.
"""

from __future__ import annotations

from typing import Final, Protocol

__all__ = ["MAX_WAIT_MS", "Clock"]

#: Upper bound of one single wait (docs/concepts.md#live-owner): 2**31 - 1 ms, about 24.8 days.
MAX_WAIT_MS: Final = 2_147_483_647


class Clock(Protocol):
    """The wall clock. ``now_ms()`` is one clock sample in epoch ms (it may jump either way);
    ``sleep_until(deadline_ms)`` returns at or after the deadline, or earlier (the caller
    re-reads the clock after every wake, docs/concepts.md#live-owner)."""

    def now_ms(self) -> int: ...

    async def sleep_until(self, deadline_ms: int) -> None: ...
