"""Group commit of creates (host/fifo.py): consecutive creates share one durable write,
each is answered only after it, storage order is arrival order, and no create is moved ahead of
another kind of slot that arrived before it."""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path
from typing import Any

import pytest

from schedlog.host.service import HostService
from schedlog.host.stores.base import StoreWriteError
from schedlog.host.stores.open import open_store
from schedlog.runtime.clock import VirtualClock
from tests.host.conftest import store_path
from tests.host.helpers import MemorySessions
from tests.host.test_service import args, run

#: The file backends append several tasks in one write; the PostgreSQL store does not (yet), so
#: its creates keep one slot each.
FILE_BACKENDS = pytest.mark.parametrize("backend", ["sqlite", "json"])


def count_writes(svc: HostService, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    store = svc.core.store
    original = store.insert_many  # type: ignore[attr-defined]

    def spy(tasks: Any) -> list[int]:
        sizes.append(len(tasks))
        result: list[int] = original(tasks)
        return result

    monkeypatch.setattr(store, "insert_many", spy)
    return sizes


@FILE_BACKENDS
def test_concurrent_creates_share_one_write_in_arrival_order(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        sizes = count_writes(svc, monkeypatch)
        first = await svc.create("s-1", args("warm", every_seconds=600))
        records = await asyncio.gather(
            *(svc.create("s-1", args(f"t{i}", every_seconds=600)) for i in range(40))
        )
        assert sizes == [1, 40]
        assert [r.title for r in svc.list_records("s-1")] == ["warm", *(f"t{i}" for i in range(40))]
        assert first.title == "warm" and len(records) == 40

    run(tmp_path, backend, body)
    reopened = open_store(store_path(tmp_path, backend))
    try:
        assert reopened.count() == 41  # every answered create is on disk
    finally:
        reopened.close()


@FILE_BACKENDS
def test_a_create_after_another_slot_is_not_moved_before_it(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        sizes = count_writes(svc, monkeypatch)
        before = asyncio.ensure_future(svc.create("s-1", args("before", every_seconds=600)))
        stop = asyncio.ensure_future(svc.archive_stop("s-1"))
        after = asyncio.ensure_future(svc.create("s-1", args("after", every_seconds=600)))
        await asyncio.gather(before, stop, after)
        assert sizes == [1, 1]
        assert [r.title for r in svc.list_records("s-1")] == ["after"]  # stop removed "before"

    run(tmp_path, backend, body)


@FILE_BACKENDS
def test_a_failed_group_write_fails_every_create_in_it(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        def refuse(tasks: Any) -> list[int]:
            raise StoreWriteError("disk full")

        monkeypatch.setattr(svc.core.store, "insert_many", refuse)
        results = await asyncio.gather(
            *(svc.create("s-1", args(f"t{i}", every_seconds=600)) for i in range(5)),
            return_exceptions=True,
        )
        assert all(isinstance(r, StoreWriteError) for r in results)
        assert svc.list_records("s-1") == []

    run(tmp_path, backend, body)


# --- the write off the event loop (SQLite: a writer thread with its own connection) ----------


class HeldCommit:
    """Holds the SQLite group write open inside its transaction, rows inserted but not yet
    committed, until :meth:`release`: the ``sqlite_store.in_transaction`` point, which the
    writer thread reaches."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.threads: list[threading.Thread] = []
        self.held = 0
        import schedlog.host.stores.sqlite as store_sqlite

        real = store_sqlite.crashpoint

        def point(name: str, *rest: Any) -> None:
            if name == "sqlite_store.in_transaction" and self.held == 0:
                self.held += 1
                self.threads.append(threading.current_thread())
                self.entered.set()
                assert self.released.wait(30), "the test never released the held commit"
            real(name, *rest)

        monkeypatch.setattr(store_sqlite, "crashpoint", point)

    async def wait_entered(self) -> None:
        entered = await asyncio.get_running_loop().run_in_executor(None, self.entered.wait, 30)
        assert entered, "the group write never started"

    def release(self) -> None:
        self.released.set()


def sequential_ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"schedule-test-{next(counter)}"


def test_the_group_write_runs_on_a_writer_thread_while_the_loop_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        held = HeldCommit(monkeypatch)
        sizes = count_writes(svc, monkeypatch)
        svc.task_ids = sequential_ids()
        first = asyncio.ensure_future(svc.create("s-1", args("first", every_seconds=600)))
        await held.wait_entered()
        # The first create's rows are inserted, not committed: it is not answered, reads on
        # the loop are (they do not wait for the writer) and do not see it.
        assert held.threads[0] is not threading.main_thread()
        assert not first.done()
        assert svc.list_records("s-1") == []
        assert svc.find("s-1", "schedule-test-1") is None
        # Creates arriving meanwhile fill the next batch, behind the one being committed.
        rest = [
            asyncio.ensure_future(svc.create("s-1", args(f"t{i}", every_seconds=600)))
            for i in range(10)
        ]
        await asyncio.sleep(0)  # every create of ``rest`` reaches its batch (one loop turn)
        assert not any(f.done() for f in rest)
        held.release()
        record = await first
        records = await asyncio.gather(*rest)
        assert record.id == "schedule-test-1"
        assert sizes == [1, 10]
        assert [r.title for r in svc.list_records("s-1")] == [
            "first",
            *(f"t{i}" for i in range(10)),
        ]
        assert [r.id for r in records] == [f"schedule-test-{i}" for i in range(2, 12)]

    run(tmp_path, "sqlite", body)
    reopened = open_store(store_path(tmp_path, "sqlite"))
    try:
        assert reopened.count() == 11
    finally:
        reopened.close()


def test_a_slot_queued_behind_a_committing_batch_runs_after_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The FIFO waits for the batch's commit before its next slot (here a delete of the task
    being created, whose id the test knows beforehand)."""

    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        held = HeldCommit(monkeypatch)
        svc.task_ids = sequential_ids()
        create = asyncio.ensure_future(svc.create("s-1", args("doomed", every_seconds=600)))
        await held.wait_entered()
        delete = asyncio.ensure_future(svc.delete("s-1", "schedule-test-1"))
        after = asyncio.ensure_future(svc.create("s-1", args("after", every_seconds=600)))
        await asyncio.sleep(0)
        assert not delete.done() and not after.done()
        held.release()
        await create
        assert await delete == {"id": "schedule-test-1", "deleted": True}
        assert (await after).title == "after"
        assert [r.title for r in svc.list_records("s-1")] == ["after"]

    run(tmp_path, "sqlite", body)


def test_a_failed_write_on_the_writer_thread_fails_its_creates_and_not_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        store = svc.core.store
        original = store.insert_many  # type: ignore[attr-defined]
        calls: list[threading.Thread] = []

        def once(tasks: Any) -> list[int]:
            calls.append(threading.current_thread())
            if len(calls) == 1:
                raise StoreWriteError("disk full")
            result: list[int] = original(tasks)
            return result

        monkeypatch.setattr(store, "insert_many", once)
        failed = await asyncio.gather(
            *(svc.create("s-1", args(f"t{i}", every_seconds=600)) for i in range(3)),
            return_exceptions=True,
        )
        assert all(isinstance(r, StoreWriteError) for r in failed)
        kept = await svc.create("s-1", args("kept", every_seconds=600))
        assert [r.id for r in svc.list_records("s-1")] == [kept.id]
        assert all(t is not threading.main_thread() for t in calls)

    run(tmp_path, "sqlite", body)
