"""The asyncio host service (docs/concepts.md#host-service, docs/protocol.md#host-delivery).

:class:`HostService` runs over a :class:`~schedlog.host.core.HostCore`: the operations over the
asyncio FIFO (:class:`~schedlog.host.fifo.WriteFifo`: one worker runs create / update / delete /
archive stop / delivery groups in arrival order, with group commit of consecutive creates), reads
that do not queue (the catalog of :mod:`schedlog.host.catalog`, explain and preview of
:mod:`schedlog.host.explain` among them), cancellation, disposal, and the host timer over an
injected :class:`Clock`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar, cast

import structlog

from schedlog.absent import ABSENT
from schedlog.clock import MAX_WAIT_MS, Clock
from schedlog.diagnostics import failure_fields
from schedlog.errors import ScheduleError
from schedlog.host.batch import (
    BatchDelivery,
    DueSnapshot,
    Outcome,
    batchable,
    burst_summary,
    chunks,
)
from schedlog.host.catalog import Catalog, CatalogQuery, Page, StatusOf, effective_status
from schedlog.host.changes import ChangeListener, TaskChange, remote_change
from schedlog.host.config import Retention
from schedlog.host.core import CHANGED, HostCore, Outgoing
from schedlog.host.delivery import Delivered, Group, GroupFailed, plan_groups
from schedlog.host.explain import explain_task, preview_rule
from schedlog.host.fifo import WriteFifo
from schedlog.host.inflight import DEFAULT_LIMIT, SessionChains
from schedlog.host.limits import check_session_id
from schedlog.host.retry import Backoff
from schedlog.host.sessions import SessionController
from schedlog.host.stores.base import StoredTask, TaskStore
from schedlog.host.task import Task, TaskIdSource, new_task, new_task_id
from schedlog.rules.record import Record
from schedlog.rules.records import build_record, validate_host_create_args
from schedlog.rules.update import UpdateResult

__all__ = [
    "CHANGED",
    "Clock",
    "GroupFailed",
    "HostCore",
    "HostService",
    "Outgoing",
    "ServiceStopping",
]

#: Back-off of the timer while a shared store cannot be reached (doubling up to the maximum).
TIMER_BACKOFF_MS: Final = 100
MAX_TIMER_BACKOFF_MS: Final = 5_000
MSG_STOPPING: Final = "Schedule service is stopping"

_log = structlog.get_logger("schedlog.host")
T = TypeVar("T")


class ServiceStopping(ScheduleError):
    """Every call after disposal started: tools report ``internal_error``."""

    def __init__(self) -> None:
        super().__init__("internal_error", MSG_STOPPING)


class HostService:
    """The asyncio host service over a :class:`HostCore`.

    ``auto_drive`` False (batch mode) disables the timer: deliveries happen only on
    :meth:`tick`. Writes, delivery groups and archive stop run one at a time in arrival order
    on one worker; reads run immediately against committed state.
    """

    def __init__(
        self,
        store: TaskStore,
        sessions: SessionController,
        clock: Clock,
        retention: Retention | None = None,
        *,
        auto_drive: bool = True,
        task_ids: TaskIdSource = new_task_id,
        post: Callable[[Outgoing], Awaitable[None]] | None = None,
        backoff: Backoff | None = None,
        post_concurrency: int = DEFAULT_LIMIT,
    ) -> None:
        self.core = HostCore(store, sessions, retention or Retention())
        self._post = post
        self.backoff = backoff
        if backoff is not None:
            self.core.subscribe_changes(self._forget_edited)
        self.clock = clock
        #: Where new task ids come from: random ``schedule-<uuid4>`` ids unless a caller (a test
        #: wanting deterministic ids) passes its own source.
        self.task_ids = task_ids
        self._auto = auto_drive
        #: Batched delivery to session logs (docs/operations.md#burst-sizing), when allowed.
        self._batch = (
            BatchDelivery(self.core, clock.now_ms)
            if post is None and batchable(self.core)
            else None
        )
        self._stopping = False
        self._closed = False
        #: Writes, delivery groups and archive stop, one at a time in arrival order.
        self._fifo = WriteFifo(self.core, self._check_open)
        self._catalog = Catalog(store, self.core)
        self._wake = asyncio.Event()
        self._drive_pending = auto_drive  # overdue tasks found at start-up are driven at once
        self._failed: set[str] = set()
        self._scan_failed = False
        self._delivery_listeners: list[Callable[[Delivered], None]] = []
        #: Webhook deliveries in flight: at most ``post_concurrency`` POSTs at once, each
        #: session's in order (docs/decisions.md, "Concurrent webhook delivery").
        self._posts: SessionChains[tuple[Delivered | None, set[str]]] | None = (
            None if post is None else SessionChains(self._post_group, post_concurrency)
        )
        self._timer: asyncio.Task[None] | None = None
        if auto_drive:
            self.core.drive_requested = self.request_drive
            self._timer = asyncio.get_running_loop().create_task(self._run_timer())
            loop = asyncio.get_running_loop()
            self.core.due_tasks.listen(lambda change: self._from_thread(loop, change))

    @property
    def retention(self) -> Retention:
        return self.core.retention

    @retention.setter
    def retention(self, value: Retention) -> None:
        """A new configuration: used at the next append, reported at once by ``history``."""
        self.core.retention = value

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        return self.core.subscribe(listener)

    def subscribe_changes(self, listener: ChangeListener) -> Callable[[], None]:
        return self.core.subscribe_changes(listener)

    @property
    def running(self) -> bool:
        """Open and, when it drives itself, with its timer alive (``/readyz``)."""
        if self._stopping or self._fifo.worker.done():
            return False
        return self._timer is None or not self._timer.done()

    # --- the FIFO --------------------------------------------------------------------------

    async def _submit(self, fn: Callable[[], T]) -> T:
        return await self._fifo.submit(fn)

    def _check_open(self) -> None:
        if self._stopping:
            raise ServiceStopping

    # --- operations ------------------------------------------------------------------------

    async def create(self, session_id: str, args: object) -> Record:
        """Create a task (docs/protocol.md#host-tools); raises :class:`ScheduleInputError` for
        invalid input."""
        self._check_open()
        # docs/http-api.md#limits: also keeps a task that would refuse the whole store at the
        # next open (an empty sessionId, docs/protocol.md#task-document) from being written.
        check_session_id(session_id)
        request = validate_host_create_args(args)  # parsed once; built from the typed request
        task_id = self.task_ids()
        now = self.clock.now_ms()  # before queueing: a create may already be due when it lands
        record = build_record(request, id=task_id, now=now)
        task = new_task(session_id, record)
        await self._fifo.insert(task)
        return record

    async def update(
        self,
        session_id: str,
        task_id: object,
        expected: object,
        *,
        change: object = ABSENT,
        title: object = ABSENT,
        prompt: object = ABSENT,
    ) -> UpdateResult:
        """Update with compare-and-set (docs/protocol.md#update); ``now`` is sampled inside the FIFO
        slot."""
        return await self._submit(
            lambda: self.core.update(
                session_id,
                task_id,
                expected,
                self.clock.now_ms,
                change=change,
                title=title,
                prompt=prompt,
            )
        )

    async def delete(self, session_id: str, task_id: object) -> dict[str, Any]:
        return await self._submit(lambda: self.core.delete(session_id, task_id))

    async def pause(
        self, session_id: str, task_id: object, expected: object = ABSENT, *, resume: bool = False
    ) -> dict[str, Any]:
        """Pause (or ``resume``) in the FIFO (docs/protocol.md#pause); ``now`` is sampled in
        its slot. Raises ``invalid_rule`` for an ``expected`` that does not decode."""
        return await self._submit(
            lambda: self.core.pause(session_id, task_id, expected, self.clock.now_ms, resume=resume)
        )

    async def archive_stop(self, session_id: str) -> list[str]:
        return await self._submit(lambda: self.core.archive_stop(session_id))

    def list_records(self, session_id: str) -> list[Record]:
        self._check_open()
        return self.core.list_records(session_id)

    def list_tasks(self, session_id: str) -> list[Task]:
        self._check_open()
        return self.core.list_tasks(session_id)

    def find(self, session_id: str, task_id: object) -> Task | None:
        self._check_open()
        return self.core.find(session_id, task_id)

    def catalog(self) -> list[dict[str, Any]]:
        self._check_open()
        return self.core.catalog()

    def open_catalog(self) -> None:
        """Build the catalog's index now rather than at the first :meth:`catalog_page`."""
        self._check_open()
        self._catalog.open()

    def catalog_page(self, query: CatalogQuery, status_of: StatusOf = effective_status) -> Page:
        """One catalog page (``GET /v1/tasks``); ``status_of`` gives a task's status, for
        the ``status`` filter (a delivery sink knows which tasks it is retrying)."""
        self._check_open()
        return self._catalog.page(query, status_of)

    def explain(self, task_id: str, count: int) -> dict[str, Any] | None:
        """The task's next ``count`` targets from now (docs/http-api.md); None when there is
        no task ``task_id``."""
        self._check_open()
        st = self.core.store.get(task_id)
        return None if st is None else explain_task(st.task, self.clock.now_ms(), count)

    def preview(self, timing: Mapping[str, object], count: int) -> dict[str, Any]:
        """An unsaved rule's record and next ``count`` targets from now
        (docs/http-api.md#rule-preview); raises ``ScheduleInputError`` as ``schedule_create``."""
        self._check_open()
        return preview_rule(timing, self.clock.now_ms(), count)

    def ping_store(self) -> None:
        """Ask the store whether it answers (a store with a server; a file store always does).
        Blocking: ``/readyz`` runs it on a thread, within the store's own bound."""
        ping = getattr(self.core.store, "ping", None)
        if ping is not None:
            ping()

    def history(
        self, session_id: str, task_id: object, limit: object, before: object = ABSENT
    ) -> dict[str, Any]:
        self._check_open()
        return self.core.history(session_id, task_id, limit, before)

    def archive_activity(self, session_id: str) -> dict[str, Any] | None:
        self._check_open()
        return self.core.archive_activity(session_id)

    # --- delivery ----------------------------------------------------------------------------

    def _from_thread(self, loop: asyncio.AbstractEventLoop, change: dict[str, str]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed while a change arrived
            loop.call_soon_threadsafe(self._remote_change, change)

    def _remote_change(self, change: dict[str, str]) -> None:
        """Another host committed a change (``LISTEN``): report it, and look for work again."""
        if self._stopping:
            return
        reported = remote_change(change)
        self.core._changed(() if reported is None else (reported,))
        self.request_drive()

    def request_drive(self) -> None:
        """Ask for a drive pass; requests made before the pass starts are coalesced."""
        self._drive_pending = True
        self._wake.set()

    def subscribe_deliveries(self, listener: Callable[[Delivered], None]) -> Callable[[], None]:
        """Call ``listener(message)`` after each follow-up message this service sends and
        commits (recovered members send nothing and are not reported); returns an
        unsubscribe. ``schedlog host run`` prints its delivery lines from here."""
        self._delivery_listeners.append(listener)
        return lambda: self._delivery_listeners.remove(listener)

    async def _deliver(self, group: Group) -> Delivered | None:
        post = self._post
        if post is None:
            sent = await self._submit(lambda: self.core.deliver_group(group, self.clock.now_ms))
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
            )
        if sent is not None:
            for listener in list(self._delivery_listeners):
                listener(sent)
        return sent

    def _forget_edited(self, change: TaskChange) -> None:
        if self.backoff is not None and change.kind != "retrying":
            self.backoff.forget(change.id)

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
        try:
            if due is None:
                due = self.core.due(self.clock.now_ms(), self._excluded(excluded))
            groups = plan_groups(due)
        except Exception as exc:
            _log.error("delivery.stopped", **failure_fields("dispatch stopped", exc))
            self._scan_failed = True
            return [], set()
        outcomes: list[tuple[Delivered | None, set[str]]] = []
        if self._posts is None:
            async for outcome in self._outcomes(groups, due):
                outcomes.append(self._reported(outcome))
        else:
            started = [self._posts.start(group) for group in groups]
            if not wait:
                return [], set()
            outcomes = [await task for task in started]
        sent = [delivered for delivered, _ in outcomes if delivered is not None]
        failed = {task_id for _, ids in outcomes for task_id in ids}
        burst_summary(sent)
        return sent, failed

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
        """A webhook group in flight; when it ends, the timer looks for work again."""
        try:
            try:
                outcome: Outcome = await self._deliver(group)
            except GroupFailed as exc:
                outcome = exc
            return self._reported(outcome)
        finally:
            if self._auto and not self._stopping:
                self.request_drive()

    async def _outcomes(
        self, groups: Sequence[Group], due: Sequence[StoredTask]
    ) -> AsyncIterator[Outcome]:
        """Each group's delivery, in order: batched runs (schedlog.host.batch) when this host
        may batch, else one group per FIFO slot."""
        if self._batch is None:
            for group in groups:
                try:
                    yield await self._deliver(group)
                except GroupFailed as exc:
                    yield exc
            return
        batch = self._batch
        snapshot = DueSnapshot(self.core, due)
        outcomes: dict[int, Outcome] = {}
        try:
            # Runs packed by session, reported in group order; no more sessions in a run than
            # the sessions directory keeps open.
            max_open = getattr(self.core.sessions, "max_open", None)
            for run in chunks(groups, max_sessions=max_open):
                deliver = functools.partial(batch.deliver, run, snapshot)
                ran = await self._fifo.submit(cast(Callable[[], list[Outcome]], deliver))
                outcomes.update(zip(map(id, run), ran, strict=True))
        finally:
            snapshot.close()
        for group in groups:
            outcome = outcomes.get(id(group))
            if isinstance(outcome, Delivered):
                for listener in list(self._delivery_listeners):
                    listener(outcome)
            yield outcome

    async def tick(self) -> list[Delivered]:
        """A batch ``tick`` (docs/protocol.md#batch-host): drive passes until nothing is due except
        tasks whose group failed during this tick."""
        failed: set[str] = set()
        sent: list[Delivered] = []
        while due := self.core.due(self.clock.now_ms(), self._excluded(failed)):
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

    # --- disposal ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Cancel the timer, finish accepted work, close the store. Idempotent."""
        if self._closed:
            return
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
        if self._posts is not None:  # POSTs in flight end (each within its deadline) and commit
            await self._posts.join()
        await self._fifo.aclose()
        if self._batch is not None:  # idle: the FIFO has drained
            self._batch.close()
        self._catalog.close()
        self.core.store.close()
        self._closed = True

    async def __aenter__(self) -> HostService:
        """The open service (it starts when constructed, inside the running loop)."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """:meth:`aclose`."""
        await self.aclose()
