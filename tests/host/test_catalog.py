"""The catalog index (schedlog.host.catalog) gives exactly the pages of the
reference scan, after any mix of creates, updates, deletions, deliveries and archive stops,
for every filter, order and cursor, on both file store backends (PostgreSQL pages by SQL:
tests/host/test_catalog_postgres.py); and SQLite's catalog rows equal
the decoded tasks, escapes included."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlog.host.catalog import CatalogIndex, CatalogQuery, index_for, scan_page
from schedlog.host.service import HostService
from schedlog.host.stores.open import open_store
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.task import Task
from schedlog.rules.instants import format_instant
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0, MemorySessions

SESSIONS = ("s-1", "s-2", "s-3")
TITLES = ("Standup", "standup notes", "Ping", 'Say "hi"', "Back\\slash", "Été", "ping ÉTÉ")

op = st.one_of(
    st.tuples(
        st.just("create"),
        st.sampled_from(SESSIONS),
        st.sampled_from(TITLES),
        st.integers(1, 40),  # minutes until due
        st.booleans(),  # recurring
    ),
    st.tuples(st.just("update"), st.integers(0, 60), st.sampled_from(TITLES)),
    st.tuples(st.just("delete"), st.integers(0, 60)),
    st.tuples(st.just("advance"), st.integers(1, 30)),
    st.tuples(st.just("stop"), st.sampled_from(SESSIONS)),
)
query = st.tuples(
    st.integers(1, 7),
    st.booleans(),
    st.sampled_from((None, *SESSIONS)),
    st.sampled_from((None, "active", "inactive", "retrying")),
    st.sampled_from((None, "stand", "ping", "é", '"', "\\", "zzz")),
)


def _status_of(retrying: set[str]) -> Any:
    def status_of(task: Task) -> str:
        if task.active and task.id in retrying:
            return "retrying"
        return task.effective_status

    return status_of


async def _apply(service: HostService, clock: VirtualClock, ops: list[Any]) -> list[str]:
    ids: list[str] = []
    for o in ops:
        if o[0] == "create":
            _, session, title, minutes, recurring = o
            timing: dict[str, Any] = (
                {"every_seconds": minutes * 60}
                if recurring
                else {"at": format_instant(clock.now_ms() + minutes * 60_000)}
            )
            record = await service.create(session, {"title": title, "prompt": "p", **timing})
            ids.append(record.id)
        elif o[0] in ("update", "delete") and ids:
            task_id = ids[o[1] % len(ids)]
            found = service.core.store.get(task_id)
            if found is None:
                continue
            if o[0] == "delete":
                await service.delete(found.task.session_id, task_id)
            elif found.task.active:
                expected = found.task.record.to_json()
                await service.update(found.task.session_id, task_id, expected, title=o[2])
        elif o[0] == "advance":
            await clock.run_until(clock.now_ms() + o[1] * 60_000)
        elif o[0] == "stop":
            await service.archive_stop(o[1])
    return ids


def _pages(index: CatalogIndex, tasks: list[Task], q: Any, status_of: Any) -> None:
    limit, descending, session_id, status, title = q
    cursor = None
    for _ in range(100):
        wanted = CatalogQuery(limit, cursor, descending, session_id, status, title)
        expected = scan_page(tasks, wanted, status_of)
        got = index.page(wanted, status_of)
        assert got == expected, wanted
        if not got.more:
            return
        last = got.tasks[-1]
        cursor = (last.record.scheduled_at, last.id)
    raise AssertionError("paging did not end")


def _all_pages(index: CatalogIndex, tasks: list[Task], queries: list[Any], pick: int) -> None:
    retrying = {t.id for i, t in enumerate(tasks) if pick and i % pick == 0}
    status_of = _status_of(retrying)
    assert len(index) == len(tasks)
    for q in queries:
        _pages(index, tasks, q, status_of)


def _check(backend: str, ops: list[Any], queries: list[Any], retry_pick: int) -> None:
    async def run() -> None:
        with tempfile.TemporaryDirectory() as d:
            store = open_store(Path(d) / ("s.db" if backend == "sqlite" else "s.json"), backend)
            clock = VirtualClock(T0)
            service = HostService(store, MemorySessions(), clock)
            try:
                half = len(ops) // 2
                await _apply(service, clock, ops[:half])
                index = CatalogIndex(store, service)  # built mid-way, then kept current
                # Pages before the rest fill the index's cache of tasks, which the writes after
                # them must keep exact (or evict).
                _all_pages(index, [s.task for s in store.tasks()], queries, retry_pick)
                await _apply(service, clock, ops[half:])
                _all_pages(index, [s.task for s in store.tasks()], queries, retry_pick)
                index.close()
            finally:
                await service.aclose()
                store.close()

    asyncio.run(run())


@settings(max_examples=40)
@given(st.lists(op, max_size=40), st.lists(query, min_size=1, max_size=6), st.integers(0, 3))
def test_index_pages_equal_the_reference_sqlite(
    ops: list[Any], queries: list[Any], pick: int
) -> None:
    _check("sqlite", ops, queries, pick)


@settings(max_examples=15)
@given(st.lists(op, max_size=30), st.lists(query, min_size=1, max_size=4), st.integers(0, 3))
def test_index_pages_equal_the_reference_json(
    ops: list[Any], queries: list[Any], pick: int
) -> None:
    _check("json", ops, queries, pick)


def test_sqlite_catalog_rows_equal_the_decoded_tasks(tmp_path: Path) -> None:
    async def run() -> None:
        store = open_store(tmp_path / "s.db", "sqlite")
        assert isinstance(store, SqliteTaskStore)
        service = HostService(store, MemorySessions(), VirtualClock(T0))
        try:
            for i, title in enumerate(TITLES):
                prompt = "line one\nline two" if i % 2 else "plain"
                await service.create(
                    f"s-{i}", {"title": title, "prompt": prompt, "after_seconds": 60 + i}
                )
            await service.create("s-x", {"title": "x", "prompt": "p", "every_seconds": 600})
            await VirtualClock.run_until(service.clock, T0 + 61_000)  # type: ignore[arg-type]
            decoded = [
                (
                    t.record.scheduled_at,
                    t.id,
                    t.session_id,
                    t.record.title,
                    t.active,
                )
                for t in (s.task for s in store.tasks())
            ]
            assert store.catalog_rows() == decoded
            assert any(not row[4] for row in decoded)  # an ended task is there too
        finally:
            await service.aclose()
            store.close()

    asyncio.run(run())


def test_no_index_over_a_store_other_processes_may_write(tmp_path: Path) -> None:
    class SharedStore:  # e.g. PostgreSQL: changes of other hosts can be missed
        def tasks(self) -> Any:
            raise AssertionError("not read")

    class Source:
        def subscribe_changes(self, listener: Any) -> Any:
            raise AssertionError("not subscribed")

    assert index_for(SharedStore(), Source()) is None  # type: ignore[arg-type]
    store = open_store(tmp_path / "s.db", "sqlite")
    try:
        subscribed: list[Any] = []

        class Recording:
            def subscribe_changes(self, listener: Any) -> Any:
                subscribed.append(listener)
                return lambda: None

        index = index_for(store, Recording())
        assert isinstance(index, CatalogIndex) and len(subscribed) == 1
    finally:
        store.close()


def test_the_tasks_a_page_returned_follow_every_later_write(tmp_path: Path) -> None:
    """The index keeps the tasks its pages returned (schedlog.host.catalog.CACHED_TASKS): a
    batched delivery (its change carries the task), an update and a delete (theirs do not)
    after a page are all in the next page."""

    async def run() -> None:
        store = open_store(tmp_path / "s.db", "sqlite")
        clock = VirtualClock(T0)
        service = HostService(store, MemorySessions(), clock)
        try:
            ids = []
            for i, minutes in enumerate((1, 1, 1, 90, 90)):
                at = format_instant(clock.now_ms() + minutes * 60_000)
                args = {"title": f"<b>{i}</b>", "prompt": "p", "at": at}
                ids.append((await service.create("s-1", args)).id)
            index = CatalogIndex(store, service)
            wanted = CatalogQuery(10)

            def check() -> list[Task]:
                page = index.page(wanted, _status_of(set()))
                assert page == scan_page([s.task for s in store.tasks()], wanted, _status_of(set()))
                return page.tasks

            assert [t.status for t in check()] == ["active"] * 5
            await clock.run_until(clock.now_ms() + 2 * 60_000)  # the first three delivered
            assert [t.status for t in check()] == ["inactive"] * 3 + ["active"] * 2
            found = store.get(ids[3])
            assert found is not None
            expected = found.task.record.to_json()
            await service.update("s-1", ids[3], expected, title="\ud800 changed")
            assert "\ud800 changed" in [t.record.title for t in check()]
            await service.delete("s-1", ids[4])
            assert ids[4] not in [t.id for t in check()]
        finally:
            await service.aclose()
            store.close()

    asyncio.run(run())
