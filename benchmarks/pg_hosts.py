"""Deliveries per second with 1, 2 and 3 host processes on one PostgreSQL store (issue 14).

Usage::

    python -m benchmarks.pg_hosts [--url postgresql://postgres@127.0.0.1:5432/test]
        [--tasks 20000] [--sessions 1000] [--hosts 1,2,3] [--rounds 1]

Each run gets a fresh database (migrated) and a fresh sessions directory. ``--tasks`` one-shot
tasks, all already due (their target is 2026-05-01T06:01Z), are written by one ``INSERT …
SELECT generate_series`` (valid bodies, spread round-robin over ``--sessions`` sessions), then
``VACUUM ANALYZE``. Then K real ``schedlog host run --store URL --sessions DIR --log-format
json`` processes are started at once, and a separate connection polls whether any task is
still active every 100 ms until none is (every task committed as delivered). Measured:

* **wall**: from starting the processes to the last commit seen by the poll (includes the
  processes' start-up);
* **from ready**: from the first ``host.started`` line on any host's stderr to the same end;
* **deliveries/s** = tasks / wall, and tasks / from-ready.

Then the hosts get SIGTERM, and every session log is read: each ``message/followup`` event's
``messageId`` and members. **duplicates** = messageIds that occur more than once in the logs
plus members ``(id, occurrenceAt)`` delivered more than once; **missing** = tasks with no
follow-up member in any log, plus tasks the store does not show as delivered. Both must be 0.
The split of deliveries between hosts comes from their ``delivery.sent`` lines.

``--rounds R`` repeats the host counts R times, rotating their order each round, and reports
each run and the median per host count. Prints one JSON line per run and one per summary.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

import psycopg

from schedlog.eventlog.reader import read_log
from schedlog.host.stores.pg_admin import migrate
from schedlog.host.task import Task, encode_task
from schedlog.rules.text import js_dumps
from tests.host.helpers import task

ROOT = Path(__file__).resolve().parent.parent
POLL_S = 0.1


def with_db(url: str, name: str) -> str:
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(path=f"/{name}"))


def populate(url: str, n: int, sessions: int, template: Task | None = None) -> None:
    """``n`` copies of ``template`` (by default a task already due), ``@ID@`` in its id and
    ``@S@`` in its session replaced by the row number and the row number modulo ``sessions``."""
    if template is None:
        template = task("schedule-@ID@", session="s-@S@", after_seconds=60)
    body = js_dumps(encode_task(template))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schedlog_tasks (id, session_id, status, next_at, body) "
            "SELECT 'schedule-' || g, 's-' || (g %% %s), 'active', %s, "
            "replace(replace(%s, '@ID@', g::text), '@S@', (g %% %s)::text) "
            "FROM generate_series(1, %s) AS g",
            (sessions, template.record.scheduled_at, body, sessions, n),
        )
        conn.execute("VACUUM ANALYZE schedlog_tasks")


class Poll:
    """The active-task count on a connection of its own, reconnecting when the server restarts
    (the shared development server is restarted by other engineers' fault runs)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: psycopg.Connection[Any] | None = None
        self.lost = 0

    def active(self) -> int | None:
        try:
            if self.conn is None:
                self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=2)
            # One index probe, not a count: a count of 20,000 rows every poll cost the hosts
            # a good part of a core.
            row = self.conn.execute(
                "SELECT EXISTS (SELECT 1 FROM schedlog_tasks WHERE status = 'active')"
            ).fetchone()
            return 1 if row and row[0] else 0
        except psycopg.OperationalError:
            self.lost += 1
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def first_started(logs: list[Path]) -> bool:
    for path in logs:
        try:
            if '"host.started"' in path.read_text():
                return True
        except FileNotFoundError:
            pass
    return False


def count_logs(sessions_dir: Path, n: int) -> dict[str, int]:
    message_ids: collections.Counter[str] = collections.Counter()
    members: collections.Counter[tuple[str, str]] = collections.Counter()
    for log in sessions_dir.glob("*.jsonl"):
        for event in read_log(log).events:
            if event.type == "message/followup":
                message_ids[event.data["messageId"]] += 1
                for r in event.data["reminders"]:
                    members[(r["id"], r["occurrenceAt"])] += 1
    delivered_ids = {key for key, _ in members}
    expected = {f"schedule-{g}" for g in range(1, n + 1)}
    return {
        "followups": sum(message_ids.values()),
        "duplicate_message_ids": sum(c - 1 for c in message_ids.values() if c > 1),
        "duplicate_members": sum(c - 1 for c in members.values() if c > 1),
        "missing_in_logs": len(expected - delivered_ids),
        "unexpected_in_logs": len(delivered_ids - expected),
    }


def undelivered_in_store(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM schedlog_tasks WHERE status <> 'inactive' "
            "OR (body::jsonb -> 'lastDelivery') IS NULL OR lease_owner IS NOT NULL"
        ).fetchone()
    return int(row[0]) if row else 0


def sent_per_host(logs: list[Path]) -> list[int]:
    out = []
    for path in logs:
        lines = path.read_text().splitlines()
        out.append(sum(1 for line in lines if '"delivery.sent"' in line))
    return out


def errors_in(logs: list[Path]) -> list[str]:
    bad = []
    for path in logs:
        for line in path.read_text().splitlines():
            if '"level": "error"' in line or '"level":"error"' in line or "Traceback" in line:
                bad.append(line[:300])
    return bad


def run(admin_url: str, hosts: int, n: int, sessions: int, timeout_s: float) -> dict[str, Any]:
    name = f"schedlog_hosts_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = with_db(admin_url, name)
    work = Path(tempfile.mkdtemp(prefix="schedlog-pg-hosts-"))
    sessions_dir = work / "sessions"
    sessions_dir.mkdir()
    procs: list[subprocess.Popen[bytes]] = []
    logs = [work / f"host-{i}.log" for i in range(hosts)]
    try:
        migrate(url)
        t = time.perf_counter()
        populate(url, n, sessions)
        populate_s = time.perf_counter() - t
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "schedlog.cli.main", "host", "run", "--store", url]
        cmd += ["--sessions", str(sessions_dir), "--log-format", "json"]
        poll = Poll(url)
        start = time.perf_counter()
        for path in logs:
            with path.open("wb") as err:
                procs.append(
                    subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        env=env,
                        cwd=ROOT,
                    )
                )
        ready: float | None = None
        try:
            while True:
                now = time.perf_counter()
                if ready is None and first_started(logs):
                    ready = now
                if poll.active() == 0:
                    end = now
                    break
                if now - start > timeout_s:
                    raise RuntimeError(f"{hosts} hosts: not all delivered after {timeout_s} s")
                for p in procs:
                    if p.poll() is not None:
                        raise RuntimeError(f"a host exited early ({p.returncode}): {logs}")
                time.sleep(POLL_S)
        finally:
            poll.close()
        for p in procs:
            p.send_signal(signal.SIGTERM)
        codes = [p.wait(timeout=60) for p in procs]
        wall = end - start
        from_ready = end - (ready if ready is not None else start)
        counted = count_logs(sessions_dir, n)
        result: dict[str, Any] = {
            "hosts": hosts,
            "tasks": n,
            "sessions": sessions,
            "populate_s": round(populate_s, 1),
            "wall_s": round(wall, 2),
            "from_ready_s": round(from_ready, 2),
            "deliveries_per_s": round(n / wall, 1),
            "deliveries_per_s_from_ready": round(n / from_ready, 1),
            **counted,
            "undelivered_in_store": undelivered_in_store(url),
            "sent_per_host": sent_per_host(logs),
            "exit_codes": codes,
            "errors": errors_in(logs)[:5],
            "server_unreachable_polls": poll.lost,
        }
        return result
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        subprocess.run(["rm", "-rf", str(work)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--hosts", default="1,2,3")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    counts = [int(x) for x in args.hosts.split(",")]
    runs: dict[int, list[dict[str, Any]]] = {k: [] for k in counts}
    for r in range(args.rounds):
        order = counts[r % len(counts) :] + counts[: r % len(counts)]
        for k in order:
            out = run(args.url, k, args.tasks, args.sessions, args.timeout)
            out["round"] = r + 1
            runs[k].append(out)
            print(json.dumps(out), flush=True)
    for k, results in runs.items():
        summary = {
            "summary_hosts": k,
            "runs": len(results),
            "median_wall_s": round(statistics.median(x["wall_s"] for x in results), 2),
            "median_deliveries_per_s": round(
                statistics.median(x["deliveries_per_s"] for x in results), 1
            ),
            "median_deliveries_per_s_from_ready": round(
                statistics.median(x["deliveries_per_s_from_ready"] for x in results), 1
            ),
            "duplicates": sum(x["duplicate_message_ids"] + x["duplicate_members"] for x in results),
            "missing": sum(x["missing_in_logs"] + x["undelivered_in_store"] for x in results),
        }
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
