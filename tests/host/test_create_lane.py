"""The creates' lane (host/fifo.py, docs/decisions.md "Burst path off the event loop"): with a
writer thread, a create is not held behind a batched delivery run queued before it, while it
still lands before any other kind of slot that arrived after it. On both stores with a writer
thread: SQLite and PostgreSQL (the ``pausable_backend`` parameters)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from schedlog.host.service import HostService
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import MemorySessions
from tests.host.test_service import args, run

#: A deadlock guard only (a create held behind the blocked run never ends): not a timing.
GUARD_S = 60.0


def test_a_create_is_not_held_behind_a_delivery_run(tmp_path: Path, pausable_backend: str) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        gate = asyncio.Event()
        order: list[str] = []

        async def blocked_run() -> str:
            await gate.wait()  # a delivery run still appending and committing
            order.append("run")
            return "run done"

        queued = svc._fifo.submit_run(blocked_run)
        created = asyncio.ensure_future(svc.create("s-1", args("new", every_seconds=600)))
        created.add_done_callback(lambda _: (order.append("create"), gate.set()))
        try:
            record = await asyncio.wait_for(asyncio.shield(created), GUARD_S)
        finally:
            gate.set()
        assert await queued == "run done"
        assert order == ["create", "run"]
        assert [r.id for r in svc.list_records("s-1")] == [record.id]

    run(tmp_path, pausable_backend, body)


def test_a_slot_after_a_run_waits_for_the_run_and_creates_after_it_wait_too(
    tmp_path: Path, pausable_backend: str
) -> None:
    """Only runs are overtaken: an archive stop queued behind a run runs after it, and a
    create that arrives after the stop is not moved ahead of it."""

    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        await svc.create("s-1", args("old", every_seconds=600))
        gate = asyncio.Event()
        order: list[str] = []

        async def blocked_run() -> None:
            await gate.wait()
            order.append("run")

        queued = svc._fifo.submit_run(blocked_run)
        stop = asyncio.ensure_future(svc.archive_stop("s-1"))
        after = asyncio.ensure_future(svc.create("s-1", args("after", every_seconds=600)))
        await asyncio.sleep(0)
        assert not stop.done() and not after.done()
        gate.set()
        await asyncio.wait_for(asyncio.gather(queued, stop, after), GUARD_S)
        assert order == ["run"]
        assert [r.title for r in svc.list_records("s-1")] == ["after"]  # "old" was stopped

    run(tmp_path, pausable_backend, body)
