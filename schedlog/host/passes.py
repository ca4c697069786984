"""The delivery passes of the host service (docs/protocol.md#host-delivery "Drive"): finding
the due groups, delivering them (one FIFO slot each, batched runs, or webhook POSTs in flight),
reporting and recording failures, the batch ``tick`` and the host timer.

:class:`DrivePasses` is the part of :class:`~schedlog.host.service.HostService` that delivers;
the service's constructor sets the state declared here.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Final, cast

import structlog

from schedlog.clock import MAX_WAIT_MS, Clock
from schedlog.collector import collector_paused
from schedlog.diagnostics import failure_fields
from schedlog.host.batch import (
    REPORT_SLICE,
    BatchDelivery,
    DueSnapshot,
    Outcome,
    Staged,
    burst_summary,
    chunks,
)
from schedlog.host.changes import TaskChange
from schedlog.host.core import HostCore, Outgoing
from schedlog.host.delivery import Delivered, Group, GroupFailed, plan_groups
from schedlog.host.due import LocalTimerIndex
from schedlog.host.fifo import WriteFifo
from schedlog.host.inflight import SessionChains
from schedlog.host.retry import Backoff
from schedlog.host.stores.base import StoredTask
from schedlog.host.webhook_commit import WebhookCommits

__all__ = ["MAX_TIMER_BACKOFF_MS", "TIMER_BACKOFF_MS", "DrivePasses"]

#: Back-off of the timer while a shared store cannot be reached (doubling up to the maximum).
TIMER_BACKOFF_MS: Final = 100
MAX_TIMER_BACKOFF_MS: Final = 5_000

_log = structlog.get_logger("schedlog.host")


def _tell(listeners: Sequence[Callable[[Delivered], None]], sent: Sequence[Delivered]) -> None:
    """The listeners told of ``sent``, in order: the others first, one call per message, then
    those that take a run at once (a ``sent_many`` method: the delivery lines of ``host run``),
    so a line read means that message is counted (metrics) already."""
    many: list[Callable[[Sequence[Delivered]], None]] = []
    each: list[Callable[[Delivered], None]] = []
    for listener in listeners:
        at_once = getattr(listener, "sent_many", None)
        if at_once is not None:
            many.append(at_once)
        else:
            each.append(listener)
    for message in sent:
        for listener in each:
            listener(message)
    for at_once in many:
        at_once(sent)


def _sessions_of(run: Sequence[Group]) -> set[str]:
    return {group.session_id for group in run}


class DrivePasses:
    """Drive passes, the timer and their failure reports, over the state the service sets."""

    core: HostCore
    clock: Clock
    backoff: Backoff | None
    _post: Callable[[Outgoing], Awaitable[None]] | None
    _fifo: WriteFifo
    _batch: BatchDelivery | None
    _posts: SessionChains[tuple[Delivered | None, set[str]]] | None
    _commits: WebhookCommits | None
    _auto: bool
    _stopping: bool
    _wake: asyncio.Event
    _drive_pending: bool
    _failed: set[str]
    _scan_failed: bool
    _delivery_listeners: list[Callable[[Delivered], None]]
    _failure_listeners: list[Callable[[GroupFailed], None]]

    def request_drive(self) -> None:
        """Ask for a drive pass; requests made before the pass starts are coalesced."""
        self._drive_pending = True
        self._wake.set()

    async def _deliver(self, group: Group) -> Delivered | None:
        post = self._post
        if post is None:
            sent = await self._fifo.submit(
                lambda: self.core.deliver_group(group, self.clock.now_ms)
            )
        else:
            backoff = self.backoff
            # The decision and the commit take a FIFO slot each; the POST runs between them,
            # outside the FIFO. The commit slot is unchecked: it finishes a delivery accepted
            # before a stop began.
            sent = await self.core.deliver_group_to(
                group,
                self.clock.now_ms,
                post,
                lambda fn: self._fifo.submit(fn, checked=False),
                sleep_until=self.clock.sleep_until,
                retry_in=None if backoff is None else backoff.next_delay_ms,
                commit=None if self._commits is None else self._commits.commit,
                get=None if self._commits is None else self._commits.get,
            )
            if self._commits is not None:
                return sent  # told with its commit's batch (WebhookCommits.report)
        if sent is not None:
            for listener in list(self._delivery_listeners):
                listener(sent)
        return sent

    def _tell_batch(self, sent: Sequence[Delivered]) -> None:
        """Tell the delivery listeners of a webhook group commit's messages, in order."""
        _tell(list(self._delivery_listeners), sent)

    def _record_failure(self, exc: GroupFailed) -> None:
        if self.backoff is None:
            return
        now = self.clock.now_ms()
        changes: list[TaskChange] = []
        for task_id in exc.ids:
            st = self.core.store.get(task_id)
            if st is None or not st.task.active:
                continue
            self.backoff.failed(task_id, now, str(exc.error) or type(exc.error).__name__)
            changes.append(TaskChange(task_id, st.task.session_id, "retrying"))
        self.core.notify(changes)

    def _in_flight(self) -> set[str]:
        return set() if self._posts is None else set(self._posts.ids)

    def _excluded(self, excluded: Iterable[str]) -> set[str]:
        skip = set(excluded) | self._in_flight()
        if self.backoff is not None:
            skip |= self.backoff.waiting(self.clock.now_ms())
        return skip

    def _unacknowledged(self, exc: GroupFailed) -> None:
        for listener in list(self._failure_listeners):
            listener(exc)
        _log.warning(
            "delivery.unacknowledged",
            ids=list(exc.ids),
            error=str(exc.error),
            message=(
                f"schedule: reminders [{', '.join(exc.ids)}] were not acknowledged: {exc.error}"
            ),
        )

    async def drive(
        self,
        excluded: Iterable[str] = (),
        due: Sequence[StoredTask] | None = None,
        *,
        wait: bool = True,
    ) -> tuple[list[Delivered], set[str]]:
        """:meth:`_drive_pass`; a batched one with the cyclic garbage collector paused
        (:func:`~schedlog.collector.collector_paused`). A pass of many due tasks holds their
        decoded rows, groups and outcomes until it ends, and each run's plans and lines live
        long enough to be promoted to the oldest generation, so the collector traversed the
        whole pass's heap again every few runs: a third of the host's CPU time in a pass of
        100,000 (docs/decisions.md "One directory fsync per batched run")."""
        if self._batch is None:
            return await self._drive_pass(excluded, due, wait=wait)
        with collector_paused():
            return await self._drive_pass(excluded, due, wait=wait)

    async def _drive_pass(
        self,
        excluded: Iterable[str] = (),
        due: Sequence[StoredTask] | None = None,
        *,
        wait: bool = True,
    ) -> tuple[list[Delivered], set[str]]:
        """One drive pass (docs/protocol.md#host-delivery "Drive"): the groups due now, each in its
        own FIFO slot; with a webhook sink, each a POST between two slots, concurrently across
        sessions (:class:`~schedlog.host.inflight.SessionChains`).

        ``due`` is a scan the caller has just made (:meth:`tick`), delivered as it is. On a
        shared store a scan is a claim, and a second claim of rows this host already holds
        can find none of them: another host's ``SKIP LOCKED`` claim scan may be holding their
        row locks (docs/decisions.md, "PostgreSQL store: several hosts").

        Returns the messages sent and the ids whose group failed with their target not after
        the failure time (left out of the timer for the rest of the pass). ``wait`` False (the
        timer, with a backoff) returns once the POSTs are started: each reports its own
        outcome and asks for the next pass when it ends.
        """
        snapshot: DueSnapshot | None = None
        try:
            try:
                if due is None:
                    due = await self._due(excluded)
                if self._batch is not None:
                    # Listening from the scan on: a write that lands while the pass plans
                    # (off the loop, for many) is read again by the runs.
                    snapshot = DueSnapshot(self.core, due)
                groups = await self._plan(due)
            except Exception as exc:
                _log.error("delivery.stopped", **failure_fields("dispatch stopped", exc))
                self._scan_failed = True
                return [], set()
            outcomes: list[tuple[Delivered | None, set[str]]] = []
            if self._posts is None:
                async for outcome in self._outcomes(groups, snapshot):
                    outcomes.append(self._reported(outcome))
        finally:
            if snapshot is not None:
                snapshot.close()
            await self._end_pass()
        if self._posts is not None:
            started = [self._posts.start(group) for group in groups]
            if not wait:
                return [], set()
            outcomes = [await task for task in started]
        sent = [delivered for delivered, _ in outcomes if delivered is not None]
        failed = {task_id for _, ids in outcomes for task_id in ids}
        burst_summary(sent)
        return sent, failed

    async def _due(self, excluded: Iterable[str] = ()) -> list[StoredTask]:
        """The pass's scan, on the loop: the delivery slots of what it claims are queued
        before any write that arrives after it (a pause queued behind a drive waits for it).
        The local timer index's scan of many due tasks reads the rows on the batch pool
        instead (a write meanwhile is read again: :meth:`BatchDelivery.scan`)."""
        now, skip = self.clock.now_ms(), self._excluded(excluded)
        if self._batch is not None and isinstance(self.core.due_tasks, LocalTimerIndex):
            return await self._batch.scan(now, skip)
        due = self.core.due(now, skip)
        if self._commits is not None:  # read just now: decided and committed as read
            self._commits.trust(due)
        return due

    async def _plan(self, due: Sequence[StoredTask]) -> list[Group]:
        """The pass's groups (:func:`plan_groups`); for a batched pass of many tasks due on a
        local store, planned on a worker thread, so the loop goes on serving requests meanwhile
        (docs/decisions.md "The API during a burst"). A write that lands meanwhile is queued
        before the pass's runs, which read its task again (the pass's :class:`DueSnapshot`).
        A shared store's batch holds its sessions' locks, so its runs are queued at once,
        before any pause that would wait for those locks on the loop."""
        batch = self._batch
        local = isinstance(self.core.due_tasks, LocalTimerIndex)
        if batch is None or not local or len(due) < batch.scan_from:
            return plan_groups(due)
        return await asyncio.to_thread(plan_groups, due)

    async def _end_pass(self) -> None:
        """Give back what the pass's batched claim still holds (its claims not committed and
        its session locks; schedlog/host/batch_claims.py)."""
        self.core.due_tasks.end_pass()

    def _reported(self, outcome: Outcome) -> tuple[Delivered | None, set[str]]:
        """A group's outcome; a failure is reported and recorded. Returns the message sent
        and the ids whose group failed with their target not after the failure time."""
        if not isinstance(outcome, GroupFailed):
            return outcome, set()
        self._unacknowledged(outcome)
        self._record_failure(outcome)
        failure_time = self.clock.now_ms()
        failed = set()
        for task_id in outcome.ids:
            st = self.core.store.get(task_id)
            if st is not None and st.task.record.scheduled_at <= failure_time:
                failed.add(task_id)
        return None, failed

    async def _post_group(self, group: Group) -> tuple[Delivered | None, set[str]]:
        """A webhook group in flight; when it ends, the timer looks for work again, unless
        it was delivered and left none of its members active (nothing of it for the timer:
        in a burst, a pass per acknowledged one-shot would scan the due set each time)."""
        outcome: Outcome = None
        try:
            try:
                outcome = await self._deliver(group)
            except GroupFailed as exc:
                outcome = exc
            return self._reported(outcome)
        finally:
            if self._commits is not None:
                self._commits.forget(group.ids)
            if self._auto and not self._stopping and not self._settled(group, outcome):
                self.request_drive()

    def _settled(self, group: Group, outcome: Outcome) -> bool:
        """Whether ``group`` was delivered and its group commit left none of its members
        active, untouched since (:meth:`WebhookCommits.settled`)."""
        commits = self._commits
        settled = commits is not None and commits.settled(group.ids)
        return settled and isinstance(outcome, Delivered)

    async def _outcomes(
        self, groups: Sequence[Group], snapshot: DueSnapshot | None
    ) -> AsyncIterator[Outcome]:
        """Each group's delivery, in order: batched runs (schedlog.host.batch) when this host
        may batch (``snapshot``: the pass's scan), else one group per FIFO slot."""
        if self._batch is None or snapshot is None:
            for group in groups:
                try:
                    yield await self._deliver(group)
                except GroupFailed as exc:
                    yield exc
            return
        batch = self._batch
        outcomes: dict[int, Outcome] = {}
        # Runs packed by session, reported in group order; no more sessions in a run than
        # the sessions directory keeps open.
        max_open = getattr(self.core.sessions, "max_open", None)
        runs = chunks(groups, max_sessions=max_open)
        queued: list[asyncio.Future[list[Outcome]]] = []

        def queue(staged: Staged | None) -> None:
            run = runs[len(queued)]
            deliver = functools.partial(batch.deliver, run, snapshot, staged, appended)
            queued.append(self._fifo.submit_run(cast(Callable[[], list[Outcome]], deliver)))

        def appended() -> None:
            # A run's follow-ups are durable, its commit is next: the run after it is queued
            # now and its sessions start at once, while nothing else waits in the FIFO and
            # the two share no session (a failed commit drops its sessions' logs; the next
            # run's are in use then): docs/decisions.md "Pipelined runs".
            after = len(queued)
            if after == len(runs) or not self._fifo.runs_only():
                return
            if not _sessions_of(runs[after - 1]) & _sessions_of(runs[after]):
                queue(batch.stage(runs[after], snapshot))

        last: list[Outcome] = []
        for done, run in enumerate(runs):
            if done == len(queued):
                # The next run is queued before the last one is reported: its appends run
                # on the pool while the report thread writes the last one's delivery lines.
                queue(None)
            await self._report(last)
            last = await queued[done]
            outcomes.update(zip(map(id, run), last, strict=True))
        await self._report(last)
        for done, group in enumerate(groups):
            if done and done % REPORT_SLICE == 0:  # the pass's outcomes, a slice at a time
                await asyncio.sleep(0)
            yield outcomes.get(id(group))

    async def _report(self, ran: Sequence[Outcome]) -> None:
        """A run's delivery lines and metrics, as it commits (not at the pass's end), in
        order. A run with many messages is reported on the batch's report thread, so the loop
        goes on serving while the lines are written; a few are reported on the loop."""
        sent = [outcome for outcome in ran if isinstance(outcome, Delivered)]
        if not sent:
            return
        listeners = list(self._delivery_listeners)
        if self._batch is not None and len(sent) >= REPORT_SLICE:
            await self._batch.on_reporter(functools.partial(_tell, listeners, sent))
            return
        _tell(listeners, sent)

    async def tick(self) -> list[Delivered]:
        """A batch ``tick`` (docs/protocol.md#batch-host): drive passes until nothing is due except
        tasks whose group failed during this tick."""
        failed: set[str] = set()
        sent: list[Delivered] = []
        while due := await self._due(failed):
            delivered, newly_failed = await self.drive(failed, due)
            sent.extend(delivered)
            if not delivered and not newly_failed:
                break  # nothing sent and nothing failed: another pass would find the same
            failed |= newly_failed
        return sent

    async def _run_timer(self) -> None:
        backoff = TIMER_BACKOFF_MS
        while True:
            if self._drive_pending:
                self._drive_pending = False
                self._wake.clear()
                self._scan_failed = False
                # With a backoff, POSTs run on their own (a failure waits for its next attempt).
                _, self._failed = await self.drive(wait=self.backoff is None)
                if self._scan_failed:
                    # Finding due work failed (a shared store that refuses claims while its
                    # next target still reads): try again after a back-off, never at once.
                    await self.clock.sleep_until(self.clock.now_ms() + backoff)
                    backoff = min(backoff * 2, MAX_TIMER_BACKOFF_MS)
                    self._drive_pending = True
                continue
            now = self.clock.now_ms()
            try:
                busy = self._in_flight()  # a group in flight is not due again meanwhile
                if self.backoff is None:
                    target = self.core.next_target(self._failed | busy)
                else:
                    # With a backoff, a failed task waits for its next attempt instead.
                    target = self.core.next_target(self.backoff.waiting(now) | busy)
                    retry_at = self.backoff.next_attempt_after(now)
                    if retry_at is not None and (target is None or retry_at < target):
                        target = retry_at
            except Exception as exc:  # a shared store that is unreachable: retry with back-off
                _log.error(
                    "delivery.stopped", error=str(exc), message=f"schedule: dispatch stopped: {exc}"
                )
                await self.clock.sleep_until(self.clock.now_ms() + backoff)
                backoff = min(backoff * 2, MAX_TIMER_BACKOFF_MS)
                self._drive_pending = True
                continue
            backoff = TIMER_BACKOFF_MS
            if target is not None and target <= now:
                self._drive_pending = True
                continue
            self._wake.clear()
            if target is None:
                await self._wake.wait()
                continue
            deadline = min(target, now + MAX_WAIT_MS)
            sleeper = asyncio.ensure_future(self.clock.sleep_until(deadline))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                waker.cancel()
