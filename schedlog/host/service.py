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
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

import structlog

from schedlog.absent import ABSENT
from schedlog.clock import Clock
from schedlog.errors import ScheduleError
from schedlog.host.batch import (
    BatchDelivery,
    batchable,
)
from schedlog.host.batch_claims import (
    ClaimedBatchDelivery,
    claims_batchable,
)
from schedlog.host.catalog import Catalog, CatalogQuery, Page, StatusOf, effective_status
from schedlog.host.changes import ChangeListener, TaskChange, remote_change
from schedlog.host.config import Retention
from schedlog.host.core import CHANGED, HostCore, Outgoing
from schedlog.host.delivery import Delivered, GroupFailed
from schedlog.host.explain import explain_task, preview_rule
from schedlog.host.fifo import WriteFifo
from schedlog.host.inflight import DEFAULT_LIMIT, SessionChains
from schedlog.host.limits import check_session_id
from schedlog.host.passes import DrivePasses
from schedlog.host.retry import Backoff
from schedlog.host.sessions import SessionController
from schedlog.host.stores.base import TaskStore
from schedlog.host.task import Task, TaskIdSource, new_task, new_task_id
from schedlog.host.webhook_commit import WebhookCommits
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

MSG_STOPPING: Final = "Schedule service is stopping"

_log = structlog.get_logger("schedlog.host")
T = TypeVar("T")


class ServiceStopping(ScheduleError):
    """Every call after disposal started: tools report ``internal_error``."""

    def __init__(self) -> None:
        super().__init__("internal_error", MSG_STOPPING)


class HostService(DrivePasses):
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
        self._batch: BatchDelivery | None = None
        if post is None and batchable(self.core):
            self._batch = BatchDelivery(self.core, clock.now_ms)
        elif post is None and claims_batchable(self.core):  # a shared store (issue 21)
            self._batch = ClaimedBatchDelivery(self.core, clock.now_ms)
        self._stopping = False
        self._closed = False
        #: Writes, delivery groups and archive stop, one at a time in arrival order.
        self._fifo = WriteFifo(self.core, self._check_open)
        #: Acknowledged webhook groups commit in groups on a local store (issue 21).
        self._commits = (
            WebhookCommits(
                self.core,
                clock.now_ms,
                lambda fn: self._fifo.submit(fn, checked=False),
                lambda: 0 if self._posts is None else self._posts.running,
                self._tell_batch,
            )
            if post is not None and batchable(self.core)
            else None
        )
        self._catalog = Catalog(store, self.core)
        self._wake = asyncio.Event()
        self._drive_pending = auto_drive  # overdue tasks found at start-up are driven at once
        self._failed: set[str] = set()
        self._scan_failed = False
        self._delivery_listeners: list[Callable[[Delivered], None]] = []
        self._failure_listeners: list[Callable[[GroupFailed], None]] = []
        #: Webhook deliveries in flight: at most ``post_concurrency`` POSTs at once, each
        #: session's in order (docs/decisions.md, "Concurrent webhook delivery").
        self._posts: SessionChains[tuple[Delivered | None, set[str]]] | None = (
            None if post is None else SessionChains(self._post_group, post_concurrency)
        )
        self._timer: asyncio.Task[None] | None = None
        #: Remote changes (``LISTEN``) not yet taken by the loop, and whether it will take them.
        self._remote: list[dict[str, str]] = []
        self._remote_lock = threading.Lock()
        self._remote_queued = False
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

    async def catalog_page(
        self, query: CatalogQuery, status_of: StatusOf = effective_status
    ) -> Page:
        """One catalog page (``GET /v1/tasks``); ``status_of`` gives a task's status, for
        the ``status`` filter (a delivery sink knows which tasks it is retrying). A page of
        this process's index is cut on the loop (it reads one query's rows); a page the store
        orders (PostgreSQL, by SQL) is read on a worker thread, so the loop goes on serving
        meanwhile (docs/decisions.md "The API during a burst")."""
        self._check_open()
        if self._catalog.by_store:
            return await asyncio.to_thread(self._catalog.page, query, status_of)
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
        """A remote change from the ``LISTEN`` thread, queued for the loop: the changes that
        arrive before the loop takes them are handled in one call (a batch commit of another
        host notifies about a thousand), not one loop wake-up each."""
        with self._remote_lock:
            self._remote.append(change)
            if self._remote_queued:
                return
            self._remote_queued = True
        with contextlib.suppress(RuntimeError):  # the loop closed while a change arrived
            loop.call_soon_threadsafe(self._remote_changes)

    def _remote_changes(self) -> None:
        """Other hosts committed changes (``LISTEN``): report them, and look for work again."""
        with self._remote_lock:
            changes, self._remote = self._remote, []
            self._remote_queued = False
        if self._stopping:
            return
        reported = [c for c in map(remote_change, changes) if c is not None]
        self.core._changed(reported)
        self.request_drive()

    def subscribe_deliveries(self, listener: Callable[[Delivered], None]) -> Callable[[], None]:
        """Call ``listener(message)`` after each follow-up message this service sends and
        commits (recovered members send nothing and are not reported); returns an
        unsubscribe. ``schedlog host run`` prints its delivery lines from here. Called in
        delivery order, on the event loop, or on the batch's report thread for a batched run
        of many messages (docs/decisions.md "Burst path off the event loop"): a listener must
        not touch the loop."""
        self._delivery_listeners.append(listener)
        return lambda: self._delivery_listeners.remove(listener)

    def subscribe_failures(self, listener: Callable[[GroupFailed], None]) -> Callable[[], None]:
        """Call ``listener(failure)`` after each delivery group that failed (metrics)."""
        self._failure_listeners.append(listener)
        return lambda: self._failure_listeners.remove(listener)

    def _forget_edited(self, change: TaskChange) -> None:
        if self.backoff is not None and change.kind != "retrying":
            self.backoff.forget(change.id)

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

    def abandon(self) -> None:
        """Stop at once, without waiting for the work in flight (a stop that timed out): its
        reminders stay due in the store, and a shared store's claims are handed back by
        :meth:`close <schedlog.host.stores.base.TaskStore.close>`. Idempotent."""
        if self._closed:
            return
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
        if self._posts is not None:
            self._posts.cancel()
        self._fifo.abandon()
        self.core.store.close()
        self._closed = True

    async def __aenter__(self) -> HostService:
        """The open service (it starts when constructed, inside the running loop)."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """:meth:`aclose`."""
        await self.aclose()
