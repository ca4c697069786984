"""The catalog over a PostgreSQL store, by SQL (issue 20, item 4).

Usage::

    python -m benchmarks.pg_catalog [--url postgresql://postgres@127.0.0.1:5432/postgres]
        [--size 100000] [--runs 10]

One fresh database is created on the server of ``--url``, migrated and filled with ``size``
active one-shot tasks as ``benchmarks/pg_store.py`` fills it (one ``INSERT … SELECT
generate_series``; 1000 sessions; titles ``Title schedule-<n>``), then ``VACUUM ANALYZE``.

Then, in process, ``runs`` times each (median and max printed, ms): the first catalog page of
50 (``Catalog.page`` over the store, which pages by SQL), the same in descending order, the
second page (from the first page's cursor), one session's first page, a title filter that
matches one task (the worst case: every row is read, in growing batches, and filtered here),
and the whole ordered listing (``ordered_tasks``, what ``host catalog`` and the remote
``catalog`` read). Once: the readable reference (``scan_page`` over every decoded task), which
is what each page cost before. The database is dropped afterwards. The machine may be shared;
the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import time
from collections.abc import Callable
from typing import Any

import psycopg

from benchmarks.pg_store import populate, with_db
from schedlog.host.catalog import Catalog, CatalogQuery, ordered_tasks, scan_page
from schedlog.host.changes import ChangeListener
from schedlog.host.stores.open import open_store
from schedlog.host.stores.pg_admin import migrate
from schedlog.host.task import Task


class _NoChanges:
    def subscribe_changes(self, listener: ChangeListener) -> Callable[[], None]:
        return lambda: None


def _status(task: Task) -> str:
    return task.effective_status


def _time(fn: Callable[[], Any], runs: int) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return {"median_ms": round(statistics.median(samples), 1), "max_ms": round(max(samples), 1)}


def measure(url: str, size: int, runs: int) -> dict[str, Any]:
    store = open_store(url)
    catalog = Catalog(store, _NoChanges())
    try:
        first = catalog.page(CatalogQuery(50))
        assert len(first.tasks) == 50 and first.more
        last = first.tasks[-1]
        cursor = (last.record.scheduled_at, last.id)
        rare = catalog.page(CatalogQuery(50, title="title schedule-77777"))
        assert [t.id for t in rare.tasks] == ["schedule-77777"] or size < 77777
        out: dict[str, Any] = {
            "size": size,
            "first_page": _time(lambda: catalog.page(CatalogQuery(50)), runs),
            "first_page_desc": _time(lambda: catalog.page(CatalogQuery(50, None, True)), runs),
            "second_page": _time(lambda: catalog.page(CatalogQuery(50, cursor)), runs),
            "session_page": _time(lambda: catalog.page(CatalogQuery(50, session_id="s-7")), runs),
            "title_one_match": _time(
                lambda: catalog.page(CatalogQuery(50, title="title schedule-77777")), runs
            ),
            "ordered_tasks": _time(lambda: ordered_tasks(store), max(1, runs // 5)),
        }
        t = time.perf_counter()
        reference = scan_page((st.task for st in store.tasks()), CatalogQuery(50), _status)
        out["reference_scan_ms"] = round((time.perf_counter() - t) * 1000, 1)
        assert reference == first
        return out
    finally:
        catalog.close()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    name = f"schedlog_bench_catalog_{secrets.token_hex(4)}"
    with psycopg.connect(args.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = with_db(args.url, name)
    try:
        migrate(url)
        t = time.perf_counter()
        populate(url, args.size, 0)
        print(json.dumps({"populate_s": round(time.perf_counter() - t, 1)}), flush=True)
        print(json.dumps({"loadavg": os.getloadavg()}), flush=True)
        print(json.dumps(measure(url, args.size, args.runs)), flush=True)
        print(json.dumps({"loadavg": os.getloadavg()}), flush=True)
    finally:
        with psycopg.connect(args.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
