"""The host service's FIFO (docs/concepts.md#host-service): one worker runs the write slots
(create / update / delete / archive stop / delivery groups) in arrival order, and consecutive
creates share one slot and one durable write (group commit, docs/decisions.md "Group commit off
the event loop").

With a writer thread, creates that arrive while only batched delivery runs are ahead of them
take a lane of their own instead of waiting behind the runs (docs/decisions.md "Burst path off
the event loop"): a new task is no member of a run, and the store serializes the two writes.
Any other slot waits until the lane has drained, and creates after it queue behind it.
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


#: A queued slot: its function, its result's future, and whether it is a delivery run.
_Slot = tuple[Callable[[], Any], "asyncio.Future[Any]", bool]


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
        self._queue: asyncio.Queue[_Slot] = asyncio.Queue()
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
        #: Slots queued or running in the main queue other than delivery runs: while there
        #: is none, creates take the lane (with a writer thread only).
        self._plain = 0
        self._lane: asyncio.Queue[_Slot] | None = None if self._writer is None else asyncio.Queue()
        self._lane_batch: _InsertBatch | None = None
        loop = asyncio.get_running_loop()
        self.worker = loop.create_task(self._run(self._queue, main=True))
        self._lane_worker = None if self._lane is None else loop.create_task(self._run(self._lane))

    async def _run(
        self,
        queue: asyncio.Queue[_Slot],
        *,
        main: bool = False,
    ) -> None:
        while True:
            fn, future, run = await queue.get()
            plain = main and not run
            try:
                if future.cancelled():  # cancelled while queued: its slot writes nothing
                    continue
                if plain and self._lane is not None:
                    await self._lane.join()  # the creates that arrived before it land first
                await _settle(fn, future)
            finally:
                if plain:
                    self._plain -= 1
                queue.task_done()

    def _enqueue(
        self, fn: Callable[[], T], *, checked: bool = True, run: bool = False
    ) -> asyncio.Future[T]:
        if checked:
            self._check_open()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        if not run:
            self._plain += 1
            self._lane_batch = None  # a create after this slot must not run before it
        self._queue.put_nowait((fn, future, run))
        return future

    async def submit(self, fn: Callable[[], T], *, checked: bool = True) -> T:
        """Queue ``fn`` and await its result. ``checked`` False is for the service's own slots
        that finish work it accepted before stopping (the commit of a POST in flight)."""
        future = self._enqueue(fn, checked=checked)
        self._open_batch = None  # a create after this slot must not run before it
        return await future

    def submit_run(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """Queue a batched delivery run now: the future of ``fn``'s result (a drive pass
        queues its next run before it reports the last one). Creates do not wait for it."""
        future = self._enqueue(fn, run=True)
        self._open_batch = None  # a create after this slot must not run before it
        return future

    def runs_only(self) -> bool:
        """Whether a delivery run queued now would be next: the FIFO is open and no slot other
        than delivery runs is queued or running (a pass stages its next run only then)."""
        try:
            self._check_open()
        except Exception:
            return False
        return self._plain == 0

    async def insert(self, task: Task) -> None:
        """Queue the insert of a new task. Consecutive creates (nothing else queued between
        them) share one slot and one durable write when the store supports it; each create
        still returns only after that write. A create cancelled before its slot starts
        writes nothing."""
        if not self._inserts_many:
            await self.submit(lambda: self.core.insert(task))
            return
        lane = self._lane is not None and self._plain == 0
        batch = self._lane_batch if lane else self._open_batch
        if batch is None or batch.started or len(batch.tasks) >= MAX_BATCH:
            batch = _InsertBatch()
            # The slot may return an awaitable (the write on the writer thread): the worker
            # awaits it before the next slot.
            slot = cast(Callable[[], None], lambda: self._run_batch(batch))
            if lane:
                assert self._lane is not None
                self._check_open()
                batch.future = asyncio.get_running_loop().create_future()
                self._lane.put_nowait((slot, batch.future, False))
                self._lane_batch = batch
            else:
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
        if self._lane_batch is batch:
            self._lane_batch = None
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
        if self._lane_worker is not None:
            self._lane_worker.cancel()
        if self._writer is not None:
            self._writer.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        """Finish the accepted slots, stop the worker and the writer thread."""
        await self._queue.join()
        if self._lane is not None:
            await self._lane.join()
        workers = [w for w in (self.worker, self._lane_worker) if w is not None]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if self._writer is not None:  # idle: the FIFO has drained
            self._writer.shutdown(wait=True)


async def _settle(fn: Callable[[], Any], future: asyncio.Future[Any]) -> None:
    """Run one slot and give ``future`` its result or its failure."""
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
