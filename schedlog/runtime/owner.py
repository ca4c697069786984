"""The live owner of one session (docs/concepts.md#live-owner): an asyncio task that delivers due
reminders.

Triggers (start, a re-drive request after a tool call, the agent becoming idle, the timer, an
idle wait completing) only *request* a drive; one driver task runs the drives one at a time,
so several triggers arriving together cost one drive. Each drive:

1. in the serial queue: preflight barrier, fold, one clock sample, decide (:func:`decide_now`);
2. nothing due: arm the single timer for the earliest target and stop;
3. due work: ``claim_maintenance()``; a busy agent is waited for with ``when_idle()`` (or
   disposal), then the owner drives again;
4. inside the claim and the serial queue: :func:`deliver_claimed` (fold, sample and decide
   again, recover, frame, ``followup()``, dispatches); then release the claim;
5. post-dispatch barrier, then drive again.

Failures follow the table of docs/concepts.md#live-owner: a failed preflight, framing or
``followup()`` waits for the next trigger (no retry timer, so no hot loop); a corrupt log or a
failed dispatch append faults the owner for the rest of the live session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Literal

from schedlog.clock import MAX_WAIT_MS, Clock
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE
from schedlog.eventlog.line_events import has_type
from schedlog.fold.incremental import FoldCursor
from schedlog.runtime.delivery import (
    Outcome,
    decide_now,
    deliver_claimed,
    fault,
    next_deadline,
    post_dispatch,
    preflight,
)
from schedlog.runtime.interfaces import Agent, SessionLog
from schedlog.runtime.queue import SerialQueue

__all__ = ["LiveOwner", "OwnerState"]

OwnerState = Literal["new", "running", "faulted", "disposed"]


class LiveOwner:
    """Delivers the due reminders of one live session; see the module docstring.

    ``state`` is ``new`` until :meth:`start`, then ``running``, ``faulted`` after a corrupt
    log or a failed dispatch append, ``disposed`` after :meth:`dispose`. ``last_outcome`` is
    the outcome of the latest decision or delivery step, for embedders that observe the owner.
    """

    def __init__(
        self, log: SessionLog, agent: Agent, clock: Clock, queue: SerialQueue | None = None
    ) -> None:
        self.log = log
        self.agent = agent
        self.clock = clock
        self.queue = queue if queue is not None else SerialQueue()
        self.state: OwnerState = "new"
        self.last_outcome: Outcome | None = None
        self._wake = asyncio.Event()
        self._disposed = asyncio.Event()
        self._driver: asyncio.Task[None] | None = None
        self._timer: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._timer_deadline: int | None = None
        self._has_schedule_events = False
        self._cursor = FoldCursor()  # each drive folds only what was appended since the last

    @property
    def live(self) -> bool:
        """True while the owner runs and is not faulted (docs/protocol.md#session-archive
        activity)."""
        return self.state == "running"

    @property
    def timer_deadline(self) -> int | None:
        """The deadline of the pending timer (epoch ms), if one is armed."""
        return self._timer_deadline if self._timer is not None else None

    def start(self) -> None:
        """Start the driver task (from a running event loop) and drive once."""
        if self.state != "new":
            raise RuntimeError(f"owner is {self.state}")
        self.state = "running"
        self._unsubscribe = self.agent.subscribe_idle(self._on_idle)
        self._driver = asyncio.get_running_loop().create_task(self._run())
        self.request_drive()

    def request_drive(self) -> None:
        """Ask for a drive (coalesced with any drive already requested)."""
        if self.state == "running":
            self._wake.set()

    async def dispose(self) -> None:
        """Cancel the timer, resolve an idle wait, await in-flight work. Durable records are
        untouched."""
        if self.state == "disposed":
            return
        self.state = "disposed"
        self._disposed.set()
        self._wake.set()
        self._cancel_timer()
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._driver is not None:
            await self._driver

    # --- triggers ----------------------------------------------------------------------------

    def _on_idle(self) -> None:
        # Only sessions that ever used schedules are driven on idle; the log is append-only,
        # so once a schedule/change event is seen the answer stays yes.
        if not self._has_schedule_events:
            try:
                events = self.log.events()
                seed = self.log.header.seed_length
                self._has_schedule_events = has_type(events, SCHEDULE_CHANGE_TYPE, seed)
            except Exception:
                self._has_schedule_events = True  # let the drive report what is wrong
        if self._has_schedule_events:
            self.request_drive()

    def _arm(self, deadline: int | None) -> None:
        self._cancel_timer()
        if deadline is None:
            return
        # One bounded wait; the drive it triggers re-reads the clock and decides afresh.
        wait_until = min(deadline, self.clock.now_ms() + MAX_WAIT_MS)
        self._timer_deadline = deadline
        self._timer = asyncio.get_running_loop().create_task(self._sleep(wait_until))

    async def _sleep(self, until: int) -> None:
        await self.clock.sleep_until(until)
        self._timer = None
        self.request_drive()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # --- the driver --------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.state != "running":
                return
            try:
                await self._drive()
            except Exception as exc:
                # Never die silently ("Task exception was never retrieved"): whatever escaped a
                # drive (a SessionLog or Agent breaking its contract) faults the owner, logged.
                self._record(fault(exc))
            if self.state != "running":
                return

    def _record(self, outcome: Outcome) -> Outcome:
        self.last_outcome = outcome
        if outcome.kind == "faulted":
            self.state = "faulted"
            self._cancel_timer()
        return outcome

    async def _drive(self) -> None:
        async with self.queue:
            if not preflight(self.log):
                return
            decided = decide_now(self.log, self.clock, self._cursor)
        if isinstance(decided, Outcome):
            self._record(decided)
            return
        state, selection = decided
        if selection is None:
            self._arm(next_deadline(state.active))
            return

        claim = self.agent.claim_maintenance()
        if claim is None:
            await self._wait_idle()
            return
        try:
            async with self.queue:
                outcome = self._record(
                    deliver_claimed(self.log, self.agent, self.clock, self._cursor)
                )
        finally:
            claim.release()
        if outcome.kind == "idle":
            self._arm(outcome.deadline)
        elif outcome.kind == "delivered":
            async with self.queue:
                if post_dispatch(self.log):
                    self.request_drive()

    async def _wait_idle(self) -> None:
        idle = asyncio.ensure_future(self.agent.when_idle())
        disposed = asyncio.ensure_future(self._disposed.wait())
        try:
            await asyncio.wait({idle, disposed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in (idle, disposed):
                if not future.done():
                    future.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await future
        self.request_drive()
