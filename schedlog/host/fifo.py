"""The host service's FIFO (docs/concepts.md#host-service): one worker runs the write slots
(create / update / delete / archive stop / delivery groups) in arrival order, and consecutive
creates share one slot and one durable write (group commit, docs/decisions.md "Group commit off
the event loop").
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar, cast

from schedlog.host.core import HostCore
from schedlog.host.stores.base import InsertsMany, WritesFromAnyThread
from schedlog.host.task import Task

__all__ = ["MAX_BATCH", "WriteFifo"]

#: The most creates one group commit takes.
MAX_BATCH: Final = 512
T = TypeVar("T")


class _InsertBatch:
    """Consecutive creates that share one FIFO slot and one durable write (group commit)."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.waiters: list[asyncio.Task[Any] | None] = []
        self.started = False
        self.future: asyncio.Future[None] | None = None


class WriteFifo:
    """The write slots of one :class:`~schedlog.host.service.HostService`, run one at a time
    in arrival order on one worker task (started here, inside the running loop).

    ``check_open`` is called before each slot is queued: it raises once the service stops.
    """

    def __init__(self, core: HostCore, check_open: Callable[[], None]) -> None:
        self.core = core
        self._check_open = check_open
        self._queue: asyncio.Queue[tuple[Callable[[], Any], asyncio.Future[Any]]] = asyncio.Queue()
        self._open_batch: _InsertBatch | None = None
        #: Group commit (docs/decisions.md "Group commit off the event loop"): creates share one
        #: write when the store can append several at once, and that write runs on a writer
        #: thread of its own when the store allows it, so the loop keeps reading requests (and
        #: filling the next batch) while a batch commits.
        store = core.store
        self._inserts_many = isinstance(store, InsertsMany)
        self._writer: ThreadPoolExecutor | None = None
        if (
            self._inserts_many
            and isinstance(store, WritesFromAnyThread)
            and store.writes_from_any_thread
        ):
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="schedlog-writer")
        self.worker = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            fn, future = await self._queue.get()
            try:
                if future.cancelled():  # cancelled while queued: its slot writes nothing
                    continue
                try:
                    result = fn()
                    if inspect.isawaitable(result):  # a slot that awaits its write
                        result = await result
                except BaseException as exc:
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(result)
            finally:
                self._queue.task_done()

    def _enqueue(self, fn: Callable[[], T], *, checked: bool = True) -> asyncio.Future[T]:
        if checked:
            self._check_open()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((fn, future))
        return future

    async def submit(self, fn: Callable[[], T], *, checked: bool = True) -> T:
        """Queue ``fn`` and await its result. ``checked`` False is for the service's own slots
        that finish work it accepted before stopping (the commit of a POST in flight)."""
        future = self._enqueue(fn, checked=checked)
        self._open_batch = None  # a create after this slot must not run before it
        return await future

    def submit_nowait(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """:meth:`submit`, queued now: the future of ``fn``'s result (a drive pass queues its
        next run before it reports the last one)."""
        future = self._enqueue(fn)
        self._open_batch = None  # a create after this slot must not run before it
        return future

    async def insert(self, task: Task) -> None:
        """Queue the insert of a new task. Consecutive creates (nothing else queued between
        them) share one slot and one durable write when the store supports it; each create
        still returns only after that write. A create cancelled before its slot starts
        writes nothing."""
        if not self._inserts_many:
            await self.submit(lambda: self.core.insert(task))
            return
        batch = self._open_batch
        if batch is None or len(batch.tasks) >= MAX_BATCH:
            batch = _InsertBatch()
            # The slot may return an awaitable (the write on the writer thread): the worker
            # awaits it before the next slot.
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

    def abandon(self) -> None:
        """Stop the worker now, leaving the slot in flight (a stop that timed out)."""
        self.worker.cancel()
        if self._writer is not None:
            self._writer.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        """Finish the accepted slots, stop the worker and the writer thread."""
        await self._queue.join()
        self.worker.cancel()
        await asyncio.gather(self.worker, return_exceptions=True)
        if self._writer is not None:  # idle: the FIFO has drained
            self._writer.shutdown(wait=True)
