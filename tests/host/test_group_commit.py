"""Group commit of creates (HostService._insert): consecutive creates share one durable write,
each is answered only after it, storage order is arrival order, and no create is moved ahead of
another kind of slot that arrived before it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from schedlog.host.backends import open_store
from schedlog.host.service import HostService
from schedlog.host.store import StoreWriteError
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
