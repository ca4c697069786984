"""The asyncio host service (docs/concepts.md#host-service, docs/protocol.md#host-delivery).

:class:`HostService` runs over a :class:`~schedlog.host.core.HostCore`: the asyncio FIFO (one
worker runs create / update / delete / archive stop / delivery groups in arrival order), group
commit of consecutive creates, reads that do not queue, cancellation, disposal, and the host
timer over an injected :class:`Clock`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar, cast

import structlog

from schedlog.absent import ABSENT
from schedlog.clock import MAX_WAIT_MS, Clock
from schedlog.diagnostics import failure_fields
from schedlog.errors import ScheduleError
from schedlog.host.changes import ChangeKind, ChangeListener, TaskChange
from schedlog.host.config import Retention
from schedlog.host.core import CHANGED, HostCore, Outgoing
from schedlog.host.delivery import Delivered, Group, GroupFailed, plan_groups
from schedlog.host.limits import check_session_id
from schedlog.host.retry import Backoff
from schedlog.host.sessions import SessionController
from schedlog.host.stores.base import (
    InsertsMany,
    StoredTask,
    TaskStore,
    WritesFromAnyThread,
)
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

#: The change kinds another host's commit can report (``LISTEN`` payloads).
_REMOTE_KINDS: Final[dict[str, ChangeKind]] = {
    "created": "created",
    "updated": "updated",
    "deleted": "deleted",
    "delivered": "delivered",
}
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


#: The most creates one group commit takes.
MAX_BATCH: Final = 512


class _InsertBatch:
    """Consecutive creates that share one FIFO slot and one durable write (group commit)."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.waiters: list[asyncio.Task[Any] | None] = []
        self.started = False
        self.future: asyncio.Future[None] | None = None


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
        self._queue: asyncio.Queue[tuple[Callable[[], Any], asyncio.Future[Any]]] = asyncio.Queue()
        self._open_batch: _InsertBatch | None = None
        #: Group commit (docs/decisions.md "Group commit off the event loop"): creates share one
        #: write when the store can append several at once, and that write runs on a writer
        #: thread of its own when the store allows it, so the loop keeps reading requests (and
        #: filling the next batch) while a batch commits.
        self._inserts_many = isinstance(store, InsertsMany)
        self._writer: ThreadPoolExecutor | None = None
        if (
            self._inserts_many
            and isinstance(store, WritesFromAnyThread)
            and store.writes_from_any_thread
        ):
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="schedlog-writer")
        self._stopping = False
        self._closed = False
        self._wake = asyncio.Event()
        self._drive_pending = auto_drive  # overdue tasks found at start-up are driven at once
        self._failed: set[str] = set()
        self._scan_failed = False
        self._delivery_listeners: list[Callable[[Delivered], None]] = []
        self._failure_listeners: list[Callable[[GroupFailed], None]] = []
        self._worker = asyncio.get_running_loop().create_task(self._run_fifo())
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
        if self._stopping or self._worker.done():
            return False
        return self._timer is None or not self._timer.done()

    # --- the FIFO --------------------------------------------------------------------------

    async def _run_fifo(self) -> None:
        while True:
            fn, future = await self._queue.get()
            try:
                if future.cancelled():  # cancelled while queued: its slot writes nothing
                    continue
                try:
                    result = fn()
                    if inspect.isawaitable(result):  # a slot that awaits its sink
                        result = await result
                except BaseException as exc:
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(result)
            finally:
                self._queue.task_done()

    def _enqueue(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        self._check_open()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((fn, future))
        return future

    async def _submit(self, fn: Callable[[], T]) -> T:
        future = self._enqueue(fn)
        self._open_batch = None  # a create after this slot must not run before it
        return await future

    async def _insert(self, task: Task) -> None:
        """Queue the insert of a new task. Consecutive creates (nothing else queued between
        them) share one slot and one durable write when the store supports it; each create
        still returns only after that write. A create cancelled before its slot starts
        writes nothing."""
        if not self._inserts_many:
            await self._submit(lambda: self.core.insert(task))
            return
        batch = self._open_batch
        if batch is None or len(batch.tasks) >= MAX_BATCH:
            batch = _InsertBatch()
            # The slot may return an awaitable (the write on the writer thread): the worker
            # awaits it before the next slot, as for _submit_awaiting.
            slot = cast(Callable[[], None], lambda: self._run_batch(batch))
            batch.future = self._enqueue(slot)
            self._open_batch = batch
        batch.tasks.append(task)
        batch.waiters.append(asyncio.current_task())
        assert batch.future is not None
        await asyncio.shield(batch.future)

    def _run_batch(self, batch: _InsertBatch) -> Awaitable[None] | None:
        """The FIFO slot of a batch: its write, on the writer thread when there is one (the
        slot, and so the FIFO, waits for the commit; the loop does not)."""
        batch.started = True
        if self._open_batch is batch:
            self._open_batch = None
        # A create whose caller was cancelled while the slot was queued writes nothing.
        kept = [
            task
            for task, waiter in zip(batch.tasks, batch.waiters, strict=True)
            if waiter is None or not (waiter.cancelling() or waiter.done())
        ]
        if not kept:
            return None
        if self._writer is None:
            self.core.insert_many(kept)
            return None
        return self._insert_on_writer(kept)

    async def _insert_on_writer(self, tasks: list[Task]) -> None:
        store = self.core.store
        assert isinstance(store, InsertsMany) and self._writer is not None
        loop = asyncio.get_running_loop()
        seqs = await loop.run_in_executor(self._writer, store.insert_many, tasks)
        self.core.inserted(tasks, seqs)

    async def _submit_awaiting(self, fn: Callable[[], Awaitable[T]]) -> T:
        """:meth:`_submit` for a slot that awaits (its sink): the worker awaits what ``fn``
        returns before it takes the next slot, so the slot stays one step of the FIFO."""
        return await self._submit(cast(Callable[[], T], fn))

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
        await self._insert(task)
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

    async def archive_stop(self, session_id: str) -> list[str]:
        return await self._submit(lambda: self.core.archive_stop(session_id))

    def list_records(self, session_id: str) -> list[Record]:
        self._check_open()
        return self.core.list_records(session_id)

    def find(self, session_id: str, task_id: object) -> Task | None:
        self._check_open()
        return self.core.find(session_id, task_id)

    def catalog(self) -> list[dict[str, Any]]:
        self._check_open()
        return self.core.catalog()

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
        kind = _REMOTE_KINDS.get(change.get("kind", ""))
        if kind is not None and "id" in change and "sessionId" in change:
            self.core._changed((TaskChange(change["id"], change["sessionId"], kind),))
        else:
            self.core._changed()
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

    def subscribe_failures(self, listener: Callable[[GroupFailed], None]) -> Callable[[], None]:
        """Call ``listener(failure)`` after each delivery group that failed (metrics)."""
        self._failure_listeners.append(listener)
        return lambda: self._failure_listeners.remove(listener)

    async def _deliver(self, group: Group) -> Delivered | None:
        post = self._post
        if post is None:
            sent = await self._submit(lambda: self.core.deliver_group(group, self.clock.now_ms))
        else:
            backoff = self.backoff
            sent = await self._submit_awaiting(
                lambda: self.core.deliver_group_to(
                    group,
                    self.clock.now_ms,
                    post,
                    sleep_until=self.clock.sleep_until,
                    retry_in=None if backoff is None else backoff.next_delay_ms,
                )
            )
        if sent is not None:
            for listener in list(self._delivery_listeners):
                listener(sent)
        return sent

    def _forget_edited(self, change: TaskChange) -> None:
        if self.backoff is not None and change.kind in ("updated", "deleted", "delivered"):
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

    def _excluded(self, excluded: Iterable[str]) -> set[str]:
        skip = set(excluded)
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
        self, excluded: Iterable[str] = (), due: Sequence[StoredTask] | None = None
    ) -> tuple[list[Delivered], set[str]]:
        """One drive pass (docs/protocol.md#host-delivery "Drive"): the groups due now, each in its
        own FIFO slot.

        ``due`` is a scan the caller has just made (:meth:`tick`), delivered as it is. On a
        shared store a scan is a claim, and a second claim of rows this host already holds
        can find none of them: another host's ``SKIP LOCKED`` claim scan may be holding their
        row locks (docs/decisions.md, "PostgreSQL store: several hosts").

        Returns the messages sent and the ids whose group failed with their target not after
        the failure time (left out of the timer for the rest of the pass).
        """
        try:
            if due is None:
                due = self.core.due(self.clock.now_ms(), self._excluded(excluded))
            groups = plan_groups(due)
        except Exception as exc:
            _log.error("delivery.stopped", **failure_fields("dispatch stopped", exc))
            self._scan_failed = True
            return [], set()
        sent: list[Delivered] = []
        failed: set[str] = set()
        for group in groups:
            try:
                delivered = await self._deliver(group)
            except GroupFailed as exc:
                self._unacknowledged(exc)
                self._record_failure(exc)
                failure_time = self.clock.now_ms()
                for task_id in exc.ids:
                    st = self.core.store.get(task_id)
                    if st is not None and st.task.record.scheduled_at <= failure_time:
                        failed.add(task_id)
                continue
            if delivered is not None:
                sent.append(delivered)
        return sent, failed

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
                _, self._failed = await self.drive()
                if self._scan_failed:
                    # Finding due work failed (a shared store that refuses claims while its
                    # next target still reads): try again after a back-off, never at once.
                    await self.clock.sleep_until(self.clock.now_ms() + backoff)
                    backoff = min(backoff * 2, MAX_TIMER_BACKOFF_MS)
                    self._drive_pending = True
                continue
            now = self.clock.now_ms()
            try:
                if self.backoff is None:
                    target = self.core.next_target(self._failed)
                else:
                    # With a backoff, a failed task waits for its next attempt instead.
                    target = self.core.next_target(self.backoff.waiting(now))
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
        await self._queue.join()
        self._worker.cancel()
        await asyncio.gather(self._worker, return_exceptions=True)
        if self._writer is not None:  # idle: the FIFO has drained
            self._writer.shutdown(wait=True)
        self.core.store.close()
        self._closed = True

    def abandon(self) -> None:
        """Stop at once, without waiting for the slot in flight (a stop that timed out): its
        reminders stay due in the store, and a shared store's claims are handed back by
        :meth:`close <schedlog.host.stores.base.TaskStore.close>`. Idempotent."""
        if self._closed:
            return
        self._stopping = True
        for task in (self._timer, self._worker):
            if task is not None:
                task.cancel()
        if self._writer is not None:
            self._writer.shutdown(wait=False, cancel_futures=True)
        self.core.store.close()
        self._closed = True

    async def __aenter__(self) -> HostService:
        """The open service (it starts when constructed, inside the running loop)."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """:meth:`aclose`."""
        await self.aclose()
