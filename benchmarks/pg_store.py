"""PostgreSQL task store at scale: start-up and per-operation cost (issue 14).

Usage::

    python -m benchmarks.pg_store [--url postgresql://postgres@127.0.0.1:5432/test]
        [--sizes 1000,100000,1000000] [--ops 50] [--rounds 8]

One fresh database per size N is created on the server of ``--url``, migrated, and filled
once with N active one-shot tasks in one ``INSERT … SELECT generate_series`` (bodies are valid
tasks: the same record template with the row's own id; 1000 sessions; all due in 2027), plus
``ops * rounds`` due one-shots for the delivery measurement; then ``VACUUM ANALYZE`` and a
``CHECKPOINT``, so that no bulk-load work is left to run during the measurement.

Then the sizes are measured **interleaved**: each of ``rounds`` rounds visits every size (the
order rotates from round to round) and runs, against that size's open store:

* **start-up**: a second ``open_store`` + ``HostCore`` + the first ``next_target()`` (ready to
  deliver), wall time, and the process's RSS growth over it; that store is closed again;
* **create / update / delete**: ``ops`` calls each of ``HostCore.insert``, ``HostCore.update``
  (a title change with compare-and-set, in one transaction with the row lock) and
  ``HostCore.delete`` of random tasks, one call at a time, each committed (durable) when it
  returns;
* **deliver**: ``ops`` times, claim one due task (``claim_due`` with ``FOR UPDATE SKIP
  LOCKED`` and a lease) and deliver it with ``HostCore.deliver_group`` into an in-memory session
  (session advisory lock, lease renewal, follow-up, lease-checked commit).

Prints one JSON line per size and round, then one summary line per size: the median and p90
over every sample of every round, and each operation's median at this size over its median at
the smallest size (the 1.5x target). The databases are dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import secrets
import statistics
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from schedlog.host.config import Retention
from schedlog.host.core import HostCore
from schedlog.host.delivery import Group
from schedlog.host.stores.open import open_store
from schedlog.host.stores.pg_admin import migrate
from schedlog.host.stores.postgres import PostgresTaskStore
from schedlog.host.task import encode_task
from schedlog.rules.text import js_dumps
from tests.host.helpers import T0, MemorySessions, task

FUTURE = "2027-01-01T00:00:00.000Z"
OPS = ("create", "update", "delete", "deliver")
NOW = T0 + 3_600_000


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def with_db(url: str, name: str) -> str:
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(path=f"/{name}"))


def populate(url: str, n: int, due: int) -> None:
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
    s = open_store(url)
    for i in range(due):
        s.insert(task(f"schedule-due-{i}", session=f"s-due-{i}", after_seconds=60))
    s.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE schedlog_tasks")
        conn.execute("CHECKPOINT")


@dataclass
class Size:
    """One size's database, its open store and what the rounds have used of it."""

    n: int
    url: str
    store: PostgresTaskStore
    core: HostCore
    updates: list[int]
    deletes: list[int]
    created: int = 0
    samples: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPS})
    startup_ms: list[float] = field(default_factory=list)
    startup_rss_kb: list[int] = field(default_factory=list)


def prepare(admin_url: str, n: int, ops: int, rounds: int) -> Size:
    name = f"schedlog_bench_{n}_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = with_db(admin_url, name)
    migrate(url)
    t = time.perf_counter()
    populate(url, n, ops * rounds)
    print(json.dumps({"prepared": n, "populate_s": round(time.perf_counter() - t, 1)}), flush=True)
    store = open_store(url)
    assert isinstance(store, PostgresTaskStore)
    ids = random.Random(14).sample(range(1, n + 1), 2 * ops * rounds)
    half = ops * rounds
    core = HostCore(store, MemorySessions(), Retention())
    return Size(n, url, store, core, ids[:half], ids[half:])


def timed(fn: Any, count: int, into: list[float]) -> float:
    samples = []
    for i in range(count):
        t = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - t) * 1000)
    into.extend(samples)
    return statistics.median(samples)


def round_of(size: Size, ops: int, r: int) -> dict[str, Any]:
    rss0 = rss_kb()
    t = time.perf_counter()
    other = open_store(size.url)
    first = HostCore(other, MemorySessions(), Retention()).next_target()
    startup = (time.perf_counter() - t) * 1000
    size.startup_rss_kb.append(rss_kb() - rss0)
    other.close()
    assert first is not None
    size.startup_ms.append(startup)
    core, store, base = size.core, size.store, r * ops

    def create(i: int) -> None:
        size.created += 1
        core.insert(task(f"schedule-new-{size.created}", session=f"s-{i % 1000}", at=FUTURE))

    def update(i: int) -> None:
        g = size.updates[base + i]
        found = core.find(f"s-{g % 1000}", f"schedule-{g}")
        assert found is not None
        result = core.update(
            found.session_id, found.id, found.record.to_json(), lambda: NOW, title=f"T{r}.{i}"
        )
        assert result.updated, result

    def delete(i: int) -> None:
        g = size.deletes[base + i]
        assert core.delete(f"s-{g % 1000}", f"schedule-{g}")["deleted"]

    def deliver(i: int) -> None:
        (st,) = store.claim_due(NOW, limit=1)
        sent = core.deliver_group(Group(st.task.session_id, True, (st.task.id,)), lambda: NOW)
        assert sent is not None

    out: dict[str, Any] = {"tasks": size.n, "round": r + 1, "startup_ms": round(startup, 1)}
    for name, fn in (("create", create), ("update", update), ("delete", delete)):
        out[f"{name}_p50_ms"] = round(timed(fn, ops, size.samples[name]), 3)
    out["deliver_p50_ms"] = round(timed(deliver, ops, size.samples["deliver"]), 3)
    return out


def p90(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=10)[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--ops", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    sizes: list[Size] = []
    try:
        for n in (int(x) for x in args.sizes.split(",")):
            sizes.append(prepare(args.url, n, args.ops, args.rounds))
        for r in range(args.rounds):
            k = r % len(sizes)
            for size in sizes[k:] + sizes[:k]:
                print(json.dumps(round_of(size, args.ops, r)), flush=True)
        base = sizes[0]
        for size in sizes:
            summary: dict[str, Any] = {
                "summary_tasks": size.n,
                "startup_ms_median": round(statistics.median(size.startup_ms), 1),
                "startup_ms_max": round(max(size.startup_ms), 1),
                "startup_rss_growth_kb_max": max(size.startup_rss_kb),
            }
            for op in OPS:
                med = statistics.median(size.samples[op])
                summary[f"{op}_p50_ms"] = round(med, 3)
                summary[f"{op}_p90_ms"] = round(p90(size.samples[op]), 3)
                summary[f"{op}_vs_{base.n}"] = round(med / statistics.median(base.samples[op]), 2)
            summary["peak_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(json.dumps(summary), flush=True)
    finally:
        for size in sizes:
            size.store.close()
            name = size.url.rsplit("/", 1)[1]
            with psycopg.connect(args.url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
