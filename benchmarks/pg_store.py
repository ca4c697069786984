"""PostgreSQL task store at scale: start-up and per-operation cost (issue 14).

Usage::

    python benchmarks/pg_store.py [--url postgresql://postgres@127.0.0.1:5432/test]
        [--sizes 1000,100000,1000000] [--ops 200]

For each size N a fresh database is created on the server of ``--url``, migrated, and filled
with N active one-shot tasks in one ``INSERT … SELECT generate_series`` (bodies are valid tasks:
the same record template with the row's own id; 1000 sessions; all due in 2027), plus ``ops``
due one-shots for the delivery measurement. Then, in this process:

* **start-up**: ``open_store`` + ``HostCore`` + the first ``next_target()`` (ready to deliver),
  wall time, and the process's RSS growth over it;
* **create / update / delete**: ``HostCore.insert``, ``HostCore.update`` (a title change with
  compare-and-set, in one transaction with the row lock) and ``HostCore.delete`` of random
  tasks, ``ops`` each, one call at a time, each committed (durable) when it returns;
* **deliver**: claim one due task (``claim_due`` with ``FOR UPDATE SKIP LOCKED`` and a lease)
  and deliver it with ``HostCore.deliver_group`` into an in-memory session (session advisory
  lock, lease renewal, follow-up, lease-checked commit).

Prints one JSON line per size. The database is dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import secrets
import statistics
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from schedlog.host.backends import open_store
from schedlog.host.config import Retention
from schedlog.host.delivery import Group
from schedlog.host.service import HostCore
from schedlog.host.store_postgres import PostgresTaskStore, migrate
from schedlog.host.task import encode_task
from schedlog.rules.text import js_dumps
from tests.host.helpers import T0, MemorySessions, task

FUTURE = "2027-01-01T00:00:00.000Z"


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def with_db(url: str, name: str) -> str:
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(path=f"/{name}"))


def populate(url: str, n: int, ops: int) -> None:
    template = task("schedule-@ID@", session="s-@S@", at=FUTURE)
    body = js_dumps(encode_task(template))
    next_at = template.record.scheduled_at
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schedlog_tasks (id, session_id, status, next_at, body) "
            "SELECT 'schedule-' || g, 's-' || (g %% 1000), 'active', %s, "
            "replace(replace(%s, '@ID@', g::text), '@S@', (g %% 1000)::text) "
            "FROM generate_series(1, %s) AS g",
            (next_at, body, n),
        )
        conn.execute("VACUUM ANALYZE schedlog_tasks")
    s = open_store(url)
    for i in range(ops):
        s.insert(task(f"schedule-due-{i}", session=f"s-due-{i}", after_seconds=60))
    s.close()


def timed(fn: Any, count: int) -> dict[str, float]:
    samples = []
    for i in range(count):
        t = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - t) * 1000)
    return {
        "mean_ms": round(statistics.fmean(samples), 3),
        "p50_ms": round(statistics.median(samples), 3),
    }


def measure(url: str, n: int, ops: int) -> dict[str, Any]:
    rss0 = rss_kb()
    t = time.perf_counter()
    store = open_store(url)
    assert isinstance(store, PostgresTaskStore)
    core = HostCore(store, MemorySessions(), Retention())
    first = core.next_target()
    startup_ms = (time.perf_counter() - t) * 1000
    rss_growth = rss_kb() - rss0
    assert first is not None
    now = T0 + 3_600_000
    rng = random.Random(14)
    ids = rng.sample(range(1, n + 1), 2 * ops)
    upd, dele = ids[:ops], ids[ops:]

    def create(i: int) -> None:
        core.insert(task(f"schedule-new-{i}", session=f"s-{i % 1000}", at=FUTURE))

    def update(i: int) -> None:
        key = f"schedule-{upd[i]}"
        found = core.find(f"s-{upd[i] % 1000}", key)
        assert found is not None
        result = core.update(
            found.session_id, key, found.record.to_json(), lambda: now, title=f"T{i}"
        )
        assert result.updated, result

    def delete(i: int) -> None:
        key = f"schedule-{dele[i]}"
        assert core.delete(f"s-{dele[i] % 1000}", key)["deleted"]

    def deliver(i: int) -> None:
        (st,) = store.claim_due(now, limit=1)
        sent = core.deliver_group(Group(st.task.session_id, True, (st.task.id,)), lambda: now)
        assert sent is not None

    result = {
        "tasks": n,
        "startup_ms": round(startup_ms, 1),
        "startup_rss_growth_kb": rss_growth,
        "create": timed(create, ops),
        "update": timed(update, ops),
        "delete": timed(delete, ops),
        "deliver": timed(deliver, ops),
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    store.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--ops", type=int, default=200)
    args = parser.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        name = f"schedlog_bench_{secrets.token_hex(4)}"
        with psycopg.connect(args.url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        url = with_db(args.url, name)
        try:
            migrate(url)
            t = time.perf_counter()
            populate(url, n, args.ops)
            filled = time.perf_counter() - t
            out = measure(url, n, args.ops)
            out["populate_s"] = round(filled, 1)
            print(json.dumps(out), flush=True)
        finally:
            with psycopg.connect(args.url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
