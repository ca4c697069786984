"""Capped exponential backoff for deliveries to a sink that can refuse (webhook delivery).

Pure bookkeeping: every method takes the clock sample it needs. A task whose delivery failed
waits ``min(cap, base * 2**(attempts-1))`` before its next attempt; a success, an edit or a
deletion forgets it. The state lives in memory: after a restart every due task is tried at once,
which is safe because the receiver dedupes by ``messageId`` (docs/http-api.md#webhook-delivery).
On a store shared by several hosts the failed tasks' claims are held until the next attempt, so
no other host tries them earlier; the attempt count stays with the host that made the attempts.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["BASE_MS", "CAP_MS", "Backoff", "BackoffState"]

BASE_MS: Final = 1_000
CAP_MS: Final = 300_000


class BackoffState(NamedTuple):
    """How often a task's delivery failed in a row, when the next attempt is (epoch ms), and
    why the last one failed: the :class:`Backoff`'s own view. The HTTP API's view of it, with
    the instant formatted, is :class:`schedlog.serve.bodies.RetryState`."""

    attempts: int
    next_attempt_at: int
    last_error: str


class Backoff:
    """The retry state of every task whose last delivery attempt failed."""

    def __init__(self, base_ms: int = BASE_MS, cap_ms: int = CAP_MS) -> None:
        if not 0 < base_ms <= cap_ms:
            raise ValueError("backoff needs 0 < base_ms <= cap_ms")
        self.base_ms = base_ms
        self.cap_ms = cap_ms
        self._states: dict[str, BackoffState] = {}

    def delay_ms(self, attempts: int) -> int:
        """The wait after the ``attempts``-th failure in a row (1-based)."""
        if attempts >= 63:
            return self.cap_ms
        return min(self.cap_ms, self.base_ms << (attempts - 1))

    def _attempts_after_failure(self, task_id: str) -> int:
        previous = self._states.get(task_id)
        return 1 if previous is None else previous.attempts + 1

    def next_delay_ms(self, task_id: str) -> int:
        """The wait that :meth:`failed` will give ``task_id`` if its attempt now fails (a
        shared store holds the task's claim that long: docs/decisions.md, "Webhook delivery
        with several hosts")."""
        return self.delay_ms(self._attempts_after_failure(task_id))

    def failed(self, task_id: str, now: int, error: str) -> BackoffState:
        attempts = self._attempts_after_failure(task_id)
        state = BackoffState(attempts, now + self.delay_ms(attempts), error)
        self._states[task_id] = state
        return state

    def forget(self, task_id: str) -> None:
        self._states.pop(task_id, None)

    def state(self, task_id: str) -> BackoffState | None:
        return self._states.get(task_id)

    def waiting(self, now: int) -> set[str]:
        """Tasks whose next attempt is still ahead of ``now``."""
        return {i for i, s in self._states.items() if s.next_attempt_at > now}

    def next_attempt_after(self, now: int) -> int | None:
        """The earliest next attempt still ahead of ``now``, if any."""
        return min(
            (s.next_attempt_at for s in self._states.values() if s.next_attempt_at > now),
            default=None,
        )
