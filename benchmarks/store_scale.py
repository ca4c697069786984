"""Host task store at scale: per-operation cost and peak memory (issue 5,
docs/protocol.md#store-sqlite).

Usage::

    python benchmarks/store_scale.py            # SQLite 1k/100k/1M, JSON 1k/10k/100k (6-9 min)
    python benchmarks/store_scale.py --quick    # SQLite 1k/10k/100k, JSON 1k/10k (~2 min)

For each backend and size:

1. **Pre-populate** a store file with N active tasks (3 of 4 one-shot ``at`` reminders, 1 of 4
   ``every`` reminders; random ``schedule-<uuid4>`` ids, 1000 sessions, a 120-character prompt,
   targets spread over the next year). The ``TaskStore`` API has no bulk insert (each task write
   is one transaction), so SQLite is filled by one ``executemany`` transaction straight into the
   docs/protocol.md#store-sqlite schema of a store that :func:`open_store` initialized (so its
   indexes exist), and the JSON document is written once with ``store_json.dumps_document``. ``ops``
   of the tasks are one-shots already due, for the delivery measurement.
2. In a **fresh worker process**: :func:`open_store` (validates every task), build the service
   core :class:`HostCore` (the timer index over all active tasks), then time ``ops`` operations
   of each kind through the real code path, one call at a time:

   * create  - ``HostCore.insert`` of a new task (the record is built before the clock starts);
   * update  - ``HostCore.update`` with compare-and-set, a title change, on a random task;
   * delete  - ``HostCore.delete`` of a random pre-populated task;
   * deliver - ``HostCore.deliver_group`` of one due one-shot into an in-memory session (the
     follow-up is built, the task is committed inactive with its receipt and history).

   ``ops`` is 200 per kind (``--ops``), except on large JSON documents, where every write
   rewrites the whole file: ``max(5, min(ops, 200000 // N))``, so 20 at 10k and 5 at 100k.
   Afterwards the file is read back outside the store to check every timed write is there.

   Every write is durable when it returns (SQLite: one ``BEGIN IMMEDIATE`` transaction with
   ``synchronous=FULL`` in WAL mode; JSON: temp file, fsync, rename, fsync of the directory),
   so put ``--dir`` on a real disk. Wall time is ``perf_counter``; ``cpu`` is the worker's
   ``process_time`` (the part that is not waiting for the disk).
3. Memory is the worker's peak RSS from ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (the
   whole process, interpreter included, over open + index + all operations), cross-checked
   with ``VmHWM`` of ``/proc/self/status``, and its current RSS (``VmRSS``) right after the
   index was built. Population runs in its own process and the driver stays small, because a
   child inherits ``ru_maxrss`` from its parent across fork and exec.

Nothing is tuned per size: the same code runs every row. The machine may be busy; the load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Final

from schedlog.eventlog.followups import Member
from schedlog.host.config import Retention
from schedlog.host.core import HostCore
from schedlog.host.delivery import Group
from schedlog.host.stores.json import dumps_document
from schedlog.host.stores.open import Backend, open_store
from schedlog.host.task import Task, new_task, new_task_id
from schedlog.rules.instants import format_instant
from schedlog.rules.records import build_host_record
from schedlog.rules.text import js_dumps

SQLITE_SIZES: Final = (1_000, 100_000, 1_000_000)
JSON_SIZES: Final = (1_000, 10_000, 100_000)
QUICK_SQLITE_SIZES: Final = (1_000, 10_000, 100_000)
QUICK_JSON_SIZES: Final = (1_000, 10_000)
KINDS: Final = ("create", "update", "delete", "deliver")
SESSIONS: Final = 1_000
PROMPT: Final = (
    "Check the nightly build dashboard, summarize any failures since the last report, and post "
    "the summary to the team channel."
)
HOUR_MS: Final = 3_600_000
DAY_MS: Final = 24 * HOUR_MS
POPULATE_NOTE: Final = (
    "pre-populated outside the TaskStore API (it has no bulk insert): SQLite by one executemany "
    "transaction into the schema of a store initialized by open_store "
    "(docs/protocol.md#store-sqlite); JSON by one write of the document "
    "(store_json.dumps_document, docs/protocol.md#store-json). "
    "Timed operations go through open_store + HostCore."
)


# --- populating -------------------------------------------------------------------------------


def _due_positions(n: int, ops: int) -> set[int]:
    """Where the ``ops`` due one-shots sit in storage order: spread evenly over the table."""
    step = max(1, n // ops)
    return {i * step for i in range(min(ops, n))}


def task_rows(n: int, ops: int, now: int, seed: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(id, session_id, body)`` for N tasks in storage order (the docs/protocol.md#task-document
    document as body)."""
    rng = random.Random(seed)
    due = _due_positions(n, ops)
    history = {"records": [], "earlierRecordsUnavailable": False}
    for i in range(n):
        task_id = f"schedule-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
        session = f"session-{rng.randrange(SESSIONS):04d}"
        record: dict[str, Any] = {"id": task_id, "kind": "at", "title": f"Reminder {i}"}
        record["prompt"] = PROMPT
        if i in due:
            record["scheduledAt"] = format_instant(now - HOUR_MS - i)
        else:
            if i % 4 == 3:
                record["kind"] = "every"
                record["everySeconds"] = 3600 * (1 + i % 24)
            record["scheduledAt"] = format_instant(now + DAY_MS + rng.randrange(365 * DAY_MS))
        doc = {"sessionId": session, "record": record, "status": "active"}
        doc["deliveryHistory"] = history
        yield task_id, session, doc


def plan(n: int, ops: int, seed: int) -> dict[str, list[int]]:
    """Storage positions of the tasks to update and to delete: random, none of them due."""
    rng = random.Random(seed + 1)
    due = _due_positions(n, ops)
    picked: list[int] = []
    chosen: set[int] = set()
    while len(picked) < 2 * ops:
        i = rng.randrange(n)
        if i not in due and i not in chosen:
            chosen.add(i)
            picked.append(i)
    return {"update": picked[:ops], "delete": picked[ops:]}


def _rows_and_plan(
    n: int, ops: int, now: int, ids: dict[str, list[str]]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The rows, recording the ids at the planned positions into ``ids``."""
    positions = plan(n, ops, seed=n)
    where = {i: kind for kind, found in positions.items() for i in found}
    order = {kind: {i: k for k, i in enumerate(found)} for kind, found in positions.items()}
    for kind, found in positions.items():
        ids[kind] = [""] * len(found)
    for i, row in enumerate(task_rows(n, ops, now, seed=n)):
        planned = where.get(i)
        if planned is not None:
            ids[planned][order[planned][i]] = row[0]
        yield row


def populate_sqlite(path: Path, n: int, ops: int, now: int) -> dict[str, list[str]]:
    # the schema (docs/protocol.md#store-sqlite), WAL and the store's own indexes
    store = open_store(path, "sqlite")
    store.close()
    ids: dict[str, list[str]] = {}
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")  # 256 MiB, for the bulk load only
        conn.execute("BEGIN")
        rows = ((i, s, js_dumps(d)) for i, s, d in _rows_and_plan(n, ops, now, ids))
        conn.executemany("INSERT INTO tasks (id, session_id, body) VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return ids


def populate_json(path: Path, n: int, ops: int, now: int) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    tasks = {i: d for i, _s, d in _rows_and_plan(n, ops, now, ids)}
    path.write_bytes(dumps_document(tasks))
    return ids


# --- the worker (one fresh process per store) -------------------------------------------------


class _Session:
    """An in-memory session: nothing delivered before, appends dropped, the barrier succeeds."""

    delivered: Mapping[Member, str] = {}

    def append(self, event: Mapping[str, Any]) -> object:
        return event

    def flush(self) -> bool:
        return True


class _Sessions:
    def __init__(self) -> None:
        self._session = _Session()

    def resolve(self, session_id: str) -> _Session:
        return self._session

    def discard(self, session_id: str) -> None:
        pass

    def legacy_reminders(self, session_id: str) -> int:
        return 0


def _status_kib(field: str) -> int:
    """``VmRSS`` (current) or ``VmHWM`` (peak) of this process, from ``/proc/self/status``."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    raise LookupError(field)


def _time_each(calls: list[Callable[[], bool]]) -> dict[str, Any]:
    wall: list[int] = []
    cpu: list[int] = []
    for call in calls:
        c0 = time.process_time_ns()
        t0 = time.perf_counter_ns()
        result = call()
        wall.append(time.perf_counter_ns() - t0)
        cpu.append(time.process_time_ns() - c0)
        if not result:
            raise AssertionError("a timed operation did not do its work")
    return {
        "n": len(wall),
        "mean_ms": statistics.fmean(wall) / 1e6,
        "p50_ms": statistics.median(wall) / 1e6,
        "p95_ms": sorted(wall)[int(0.95 * (len(wall) - 1))] / 1e6,
        "cpu_mean_ms": statistics.fmean(cpu) / 1e6,
        "total_ms": sum(wall) / 1e6,
    }


def check_on_disk(
    backend: Backend,
    path: Path,
    created: list[Task],
    updated: list[Task],
    deleted: list[Task],
    delivered: list[str],
) -> None:
    """Read the file back outside the store: every timed write really is on disk."""
    bodies: dict[str, Any] = {}
    wanted = [t.id for t in created + updated + deleted] + delivered
    if backend == "json":
        tasks = json.loads(path.read_bytes())["tables"]["tasks"]
        bodies = {i: tasks[i] for i in wanted if i in tasks}
    else:
        conn = sqlite3.connect(path)
        try:
            for i in wanted:
                row = conn.execute("SELECT body FROM tasks WHERE id = ?", (i,)).fetchone()
                if row is not None:
                    bodies[i] = json.loads(row[0])
        finally:
            conn.close()
    assert all(t.id in bodies for t in created), "a created task is missing"
    assert all(bodies[t.id]["record"]["title"].startswith("Renamed") for t in updated)
    assert not any(t.id in bodies for t in deleted), "a deleted task is still there"
    assert all(bodies[i]["status"] == "inactive" for i in delivered)
    assert all(len(bodies[i]["deliveryHistory"]["records"]) == 1 for i in delivered)


def worker(backend: Backend, path: Path, ops: int, ids: dict[str, list[str]]) -> dict[str, Any]:
    t0 = time.perf_counter()
    store = open_store(path, backend)
    t1 = time.perf_counter()
    core = HostCore(store, _Sessions(), Retention())
    t2 = time.perf_counter()
    rss_indexed = _status_kib("VmRSS")
    n = store.count()
    assert core.active_count() == n, (core.active_count(), n)

    def clock() -> int:
        return int(time.time() * 1000)

    now = clock()
    due = core.due(now)
    assert len(due) == ops, f"{len(due)} due tasks, expected {ops}"

    def fetch(task_id: str) -> Task:
        st = store.get(task_id)
        assert st is not None, task_id
        return st.task

    to_update = [fetch(i) for i in ids["update"]]
    to_delete = [fetch(i) for i in ids["delete"]]
    created = [
        new_task(
            f"session-{k % SESSIONS:04d}",
            build_host_record(
                {"prompt": PROMPT, "title": f"New {k}", "after_seconds": 3600 + k},
                id=new_task_id(),
                now=now,
            ),
        )
        for k in range(ops)
    ]

    def create(task: Task) -> bool:
        core.insert(task)
        return True

    def update(task: Task, title: str) -> bool:
        result = core.update(task.session_id, task.id, task.record.to_json(), clock, title=title)
        return result.updated

    def delete(task: Task) -> bool:
        return bool(core.delete(task.session_id, task.id)["deleted"])

    def deliver(group: Group) -> bool:
        return core.deliver_group(group, clock) is not None

    groups = [Group(st.task.session_id, True, (st.task.id,)) for st in due]
    results = {
        "create": _time_each([partial(create, t) for t in created]),
        "update": _time_each([partial(update, t, f"Renamed {k}") for k, t in enumerate(to_update)]),
        "delete": _time_each([partial(delete, t) for t in to_delete]),
        "deliver": _time_each([partial(deliver, g) for g in groups]),
    }
    final = store.count()
    assert final == n and core.active_count() == n - ops, (final, core.active_count(), n)
    store.close()
    check_on_disk(backend, path, created, to_update, to_delete, [g.ids[0] for g in groups])
    return {
        "backend": backend,
        "tasks": n,
        "ops": ops,
        "open_s": t1 - t0,
        "index_s": t2 - t1,
        "rss_indexed_mib": rss_indexed / 1024,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_hwm_mib": _status_kib("VmHWM") / 1024,
        "file_mib": path.stat().st_size / 2**20,
        "kinds": results,
        "mean_ms": sum(r["total_ms"] for r in results.values())
        / sum(r["n"] for r in results.values()),
        "cpu_mean_ms": sum(r["cpu_mean_ms"] * r["n"] for r in results.values())
        / sum(r["n"] for r in results.values()),
    }


# --- the driver -------------------------------------------------------------------------------


def json_ops(size: int, ops: int) -> int:
    """Fewer operations on large JSON documents: every write rewrites the whole file."""
    return max(5, min(ops, 200_000 // size))


def _child(*argv: str) -> str:
    proc = subprocess.run(
        [sys.executable, __file__, *argv], check=True, stdout=subprocess.PIPE, text=True
    )
    return proc.stdout.splitlines()[-1]


def run_one(backend: Backend, size: int, ops: int, workdir: Path) -> dict[str, Any]:
    """Populate in one process, measure in another: the driver itself stays small, so a
    worker's ``ru_maxrss`` (which a child inherits from its parent across fork and exec) is the
    worker's own."""
    path = workdir / (f"store-{size}.json" if backend == "json" else f"store-{size}.db")
    plan_path = workdir / f"plan-{backend}-{size}.json"
    populate_s = float(
        _child("--populate", backend, str(path), str(size), str(ops), str(plan_path))
    )
    print(f"  {backend} {size:>9,}: populated in {populate_s:.1f}s, measuring…", file=sys.stderr)
    result: dict[str, Any] = json.loads(
        _child("--worker", backend, str(path), str(ops), str(plan_path))
    )
    result["populate_s"] = populate_s
    for p in workdir.iterdir():
        if p.name.startswith(path.name) or p == plan_path:
            p.unlink()
    print(
        f"  {backend} {size:>9,}: {result['mean_ms']:.3f} ms/op, peak RSS "
        f"{result['peak_rss_mib']:.0f} MiB",
        file=sys.stderr,
    )
    return result


def populate(backend: Backend, path: Path, size: int, ops: int, plan_path: Path) -> float:
    t0 = time.perf_counter()
    now = int(time.time() * 1000)
    ids = (populate_json if backend == "json" else populate_sqlite)(path, size, ops, now)
    plan_path.write_text(json.dumps(ids))
    return time.perf_counter() - t0


def _fmt(ms: float) -> str:
    return f"{ms:.3f}" if ms < 100 else f"{ms:.0f}"


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| backend | tasks | ops/kind | create | update | delete | deliver | all ops | cpu/op "
        "| populate s | open+validate s | index s | RSS after index MiB | peak RSS MiB | file MiB |"
    )
    lines = [head, "|" + "---|" * 15]
    for r in results:
        k = r["kinds"]
        lines.append(
            f"| {r['backend']} | {r['tasks']:,} | {r['ops']} | "
            + " | ".join(_fmt(k[kind]["mean_ms"]) for kind in KINDS)
            + f" | {_fmt(r['mean_ms'])} | {_fmt(r['cpu_mean_ms'])} | {r['populate_s']:.1f} | "
            f"{r['open_s']:.1f} | "
            f"{r['index_s']:.1f} | {r['rss_indexed_mib']:.0f} | {r['peak_rss_mib']:.0f} | "
            f"{r['file_mib']:.0f} |"
        )
    return "\n".join(lines)


def p50_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | tasks | create p50 / p95 | update p50 / p95 | delete p50 / p95 "
        "| deliver p50 / p95 |",
        "|" + "---|" * 6,
    ]
    for r in results:
        k = r["kinds"]
        cells = [f"{_fmt(k[kind]['p50_ms'])} / {_fmt(k[kind]['p95_ms'])}" for kind in KINDS]
        lines.append(f"| {r['backend']} | {r['tasks']:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(results: list[dict[str, Any]]) -> list[str]:
    by = {(r["backend"], r["tasks"]): r for r in results}
    sq = sorted(t for b, t in by if b == "sqlite")
    js = sorted(t for b, t in by if b == "json")
    out = []
    if len(sq) >= 2:
        small, large = by[("sqlite", sq[0])], by[("sqlite", sq[-1])]
        ratio = large["mean_ms"] / small["mean_ms"]
        cpu_ratio = large["cpu_mean_ms"] / small["cpu_mean_ms"]
        verdict = "met" if ratio <= 1.5 else "NOT met"
        out.append(
            f"- SQLite per-op cost at {sq[-1]:,} / at {sq[0]:,}: {ratio:.2f}x wall "
            f"(target <= 1.5x: {verdict}); CPU only: {cpu_ratio:.2f}x"
        )
    common = sorted(set(sq) & set(js))
    if common:
        size = common[-1]
        ratio = by[("json", size)]["mean_ms"] / by[("sqlite", size)]["mean_ms"]
        verdict = "met" if ratio >= 100 else "NOT met"
        out.append(
            f"- JSON / SQLite per-op cost at {size:,}: {ratio:.0f}x (target >= 100x: {verdict})"
        )
        if sq[-1] > size and js:
            ratio = by[("json", js[-1])]["mean_ms"] / by[("sqlite", sq[-1])]["mean_ms"]
            out.append(f"- JSON at {js[-1]:,} / SQLite at {sq[-1]:,}: {ratio:.0f}x")
    if sq:
        big = by[("sqlite", sq[-1])]
        verdict = "met" if big["peak_rss_mib"] < 1024 else "NOT met"
        out.append(
            f"- peak RSS with {sq[-1]:,} active tasks in SQLite: {big['peak_rss_mib']:.0f} MiB "
            f"(target < 1024 MiB: {verdict}); {big['rss_indexed_mib']:.0f} MiB after the index; "
            f"VmHWM {big['peak_hwm_mib']:.0f} MiB"
        )
    return out


def _source_state() -> str:
    """The commit measured, and any uncommitted change to the code under test."""
    repo = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "schedlog"],
            cwd=repo,
            capture_output=True,
            text=True,
        ).stdout.split("\n")
    except OSError:
        return "source: unknown (no git)"
    changed = [line[3:] for line in dirty if line.strip()]
    return f"source: commit {head}" + (
        f", uncommitted changes in {', '.join(changed)}" if changed else ", clean"
    )


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(x.replace("_", "")) for x in text.split(",") if x)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="SQLite 1k/10k/100k, JSON 1k/10k")
    parser.add_argument("--ops", type=int, default=200, help="timed operations per kind")
    parser.add_argument("--sqlite-sizes", type=_sizes, help="comma list ('' for none)")
    parser.add_argument("--json-sizes", type=_sizes, help="comma list ('' for none)")
    parser.add_argument("--dir", type=Path, help="work folder on a real disk (default: temp)")
    parser.add_argument("--json", type=Path, dest="json_out", help="also write raw results")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--populate", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.populate:
        backend, path, size, ops, plan_path = args.populate
        print(populate(backend, Path(path), int(size), int(ops), Path(plan_path)))
        return 0
    if args.worker:
        backend, path, ops, plan_path = args.worker
        ids = json.loads(Path(plan_path).read_text())
        print(json.dumps(worker(backend, Path(path), int(ops), ids)))
        return 0
    sqlite_sizes = args.sqlite_sizes
    if sqlite_sizes is None:
        sqlite_sizes = QUICK_SQLITE_SIZES if args.quick else SQLITE_SIZES
    json_sizes = args.json_sizes
    if json_sizes is None:
        json_sizes = QUICK_JSON_SIZES if args.quick else JSON_SIZES
    ops = min(args.ops, 100) if args.quick else args.ops
    workdir = Path(tempfile.mkdtemp(prefix="schedlog-bench-", dir=args.dir))
    started = time.perf_counter()
    load_before = os.getloadavg()
    source = _source_state()
    results = []
    try:
        for size in sqlite_sizes:
            results.append(run_one("sqlite", size, ops, workdir))
        for size in json_sizes:
            results.append(run_one("json", size, json_ops(size, ops), workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()
    elapsed = time.perf_counter() - started
    python = sys.version.split()[0]
    print(f"schedlog host store scale, SQLite {sqlite3.sqlite_version}, Python {python}")
    load = f"load average {load_before[0]:.2f} before / {load_after[0]:.2f} after"
    print(f"{os.cpu_count()} CPUs, {load}")
    print(source)
    print(f"work folder {workdir.parent} (removed); whole run {elapsed:.0f}s")
    print(f"Note: {POPULATE_NOTE}")
    print()
    print("Mean wall ms per operation (cpu/op: worker CPU ms per operation, all kinds):")
    print(table(results))
    print()
    print("Median / 95th percentile wall ms:")
    print(p50_table(results))
    print()
    print("Targets (issue 5):")
    for line in targets(results):
        print(line)
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
