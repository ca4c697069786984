"""The PostgreSQL catalog by SQL (``OrdersCatalog``, schedlog.host.catalog.ordered_page) gives
exactly the pages of the reference scan for every filter, order and cursor, ids ordered by code
point (not by UTF-16 unit or by a locale), hostile ids, sessions and titles included; and
``ordered_tasks`` is the reference order. Skips without a server outside ``CI=true``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from schedlog.host.catalog import (
    Catalog,
    CatalogQuery,
    Page,
    ordered_page,
    ordered_tasks,
    scan_page,
)
from schedlog.host.stores.base import OrdersCatalog
from schedlog.host.task import Task
from tests import pg
from tests.host.helpers import task

pg.require_psycopg()

SESSIONS = ("s-1", "s-2", "<b>s3</b>")
#: Ids whose code point order differs from UTF-16 order (U+FF5E vs U+1F600) and from a
#: locale's ("Z" before "a", "é" after "z"), with markup and quotes.
IDS = ("a", "Z", "é", "z", "\uff5e", "\U0001f600", "<i>x</i>", 'q"uote', "a b", "schedule-1")
TITLES = (
    "Standup",
    "standup NOTES",
    "Tab\there \u202e",
    "Été",
    '<script>"hi"</script>',
    "Back\\slash",
)


@pytest.fixture
def store(database: str) -> Iterator[Any]:
    pg.reset(database)
    # A column in a locale's order ("a" < "Z"), where the server has ICU: the catalog must not
    # depend on the database's collation.
    if pg.sql(database, "SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'"):
        pg.sql(database, 'ALTER TABLE schedlog_tasks ALTER COLUMN id TYPE text COLLATE "und-x-icu"')
    opened = pg.pg_store(database)
    try:
        yield opened
    finally:
        opened.close()


def _fill(store: Any) -> list[Task]:
    made: list[Task] = []
    for i, task_id in enumerate(IDS):
        # Three tasks share each target, so the id decides their order.
        t = task(task_id, SESSIONS[i % 3], title=TITLES[i % 6], after_seconds=60 * (1 + i // 3))
        if i % 4 == 3:
            t = msgspec.structs.replace(t, status="inactive")
        store.insert(t)
        made.append(t)
    return made


def _status_of(task: Task) -> str:
    if task.active and task.id in ("é", "a b"):
        return "retrying"
    return task.effective_status


def _pages(store: OrdersCatalog, tasks: list[Task], wanted: CatalogQuery) -> int:
    cursor = wanted.cursor
    for n in itertools.count(1):
        q = wanted._replace(cursor=cursor)
        expected = scan_page(tasks, q, _status_of)
        got = ordered_page(store, q, _status_of)
        assert got == expected, q
        if not got.more:
            return n
        last = got.tasks[-1]
        cursor = (last.record.scheduled_at, last.id)
    raise AssertionError("unreachable")


def test_sql_pages_equal_the_reference(store: Any) -> None:
    tasks = _fill(store)
    assert isinstance(store, OrdersCatalog)
    assert ordered_tasks(store) == sorted(tasks, key=lambda t: (t.record.scheduled_at, t.id))
    assert [t.id for t in ordered_tasks(store)][:3] == ["Z", "a", "é"]
    paged = 0
    for limit, descending, session, status, title in itertools.product(
        (1, 2, 7, 500),
        (False, True),
        (None, *SESSIONS, "no-such-session"),
        (None, "active", "inactive", "retrying"),
        # '"hi"' and a tab are escaped in the stored JSON: found only by decoding
        (None, "stand", "été", "<script>", '"hi"', "b\th", "\\", "zzz"),
    ):
        paged += _pages(store, tasks, CatalogQuery(limit, None, descending, session, status, title))
    assert paged > 1000  # many queries took more than one page


def test_sql_pages_from_a_cursor_no_row_can_have(store: Any) -> None:
    tasks = _fill(store)
    at = tasks[4].record.scheduled_at
    for odd in ("\ud800", "a\x00", "", "\U0010ffff"):
        for descending in (False, True):
            for limit in (1, 3, 500):
                _pages(store, tasks, CatalogQuery(limit, (at, odd), descending))
    for session in ("\ud800", "s\x00"):  # a session no row can have: an empty page
        assert ordered_page(store, CatalogQuery(5, None, False, session), _status_of) == Page(
            [], False
        )


def test_the_catalog_engine_pages_a_postgres_store_by_sql(store: Any) -> None:
    tasks = _fill(store)

    class NoChanges:
        def subscribe_changes(self, listener: Any) -> Any:
            raise AssertionError("a shared store keeps no index")

    catalog = Catalog(store, NoChanges())  # type: ignore[arg-type]
    read_all = store.tasks
    store.tasks = lambda: (_ for _ in ()).throw(AssertionError("no full scan"))
    try:
        page = catalog.page(CatalogQuery(3, None, True, None, "active", None))
    finally:
        store.tasks = read_all
        catalog.close()
    assert page == scan_page(tasks, CatalogQuery(3, None, True, None, "active", None), _effective)


def _effective(task: Task) -> str:
    return task.effective_status
