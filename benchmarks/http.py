"""``schedlog host serve`` under load and faults, on loopback only (issue 12).

Run from the repository root with the ``test`` extra installed::

    python -m benchmarks.http load   [--tasks 100000] [--calls 3000] [--concurrency 1 50]
                                     [--rounds N] [--baseline DIR [--baseline-h11]]
                                     [--commit-delay-ms MS]
    python -m benchmarks.http kill   [--tasks 100000] [--seconds 6] [--concurrency 50]
    python -m benchmarks.http webhook [--reminders 300] [--fail-rate 0.3]

* ``load``: a SQLite store pre-populated with ``--tasks`` active tasks (one transaction, as
  ``benchmarks/store_scale.py`` does), then ``serve`` in a subprocess; for each concurrency,
  ``--calls`` ``schedule_create`` calls (``after_seconds`` one day, so nothing is delivered
  meanwhile) from that many concurrent httpx clients in one asyncio process. Prints calls per
  second (answered calls over the wall time of the run), p50/p99 latency and the server's CPU
  time per call. Afterwards the store is opened again and every answered id is looked up: each
  must be there. With ``--baseline DIR`` (a source tree of another commit) every round runs
  that tree's server and then this one's, each on a fresh store, and the medians of both are
  printed at the end. ``--commit-delay-ms`` emulates a slow disk on both.
* ``kill``: the same load with short ``after_seconds`` (1-3 s, so deliveries run meanwhile);
  ``serve`` is killed with SIGKILL after ``--seconds``, restarted on the same store and
  sessions directory, left to deliver everything due, and stopped. Checks: every create answered
  200 before the kill is in the store, and no (task, occurrence) appears in two follow-ups
  across the session logs.
* ``webhook``: a receiver subprocess on loopback that fails ``--fail-rate`` of the calls at
  random (503) and appends every accepted body to a file (fsynced before its 2xx); ``serve
  --deliver-to`` it; ``--reminders`` reminders due over a few seconds; the receiver is killed
  with SIGKILL halfway and restarted two seconds later. Waits (bounded) until every task is
  inactive, then checks that every reminder reached the receiver at least once and exactly once
  after dedupe by ``messageId``.

Every request goes to 127.0.0.1; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

import httpx

from benchmarks.store_scale import populate_sqlite
from schedlog.eventlog.reader import read_log
from schedlog.host.stores.open import open_store
from tests.serve.process import RUNNER, ServeProcess, start_serve

SECRET = "benchmark-webhook-secret-0123456789"
DAY_S = 86_400


def _load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _populate(store: Path, tasks: int) -> float:
    started = time.perf_counter()
    populate_sqlite(store, tasks, 1, int(time.time() * 1000))
    return time.perf_counter() - started


class _Connection:
    """One keep-alive HTTP/1.1 connection to the server (TCP_NODELAY). The load generator is
    written on asyncio streams: httpx's async client tops out near 30 calls per second here,
    far below what the server answers, so it would measure itself."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            await self.open()
        assert self.reader is not None and self.writer is not None
        self.writer.write(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            + body
        )
        status = await self.reader.readline()
        if not status:
            raise ConnectionError("the server closed the connection")
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return int(status.split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def _creates(
    server: ServeProcess,
    calls: int,
    concurrency: int,
    after: tuple[int, int],
    deadline: float,
) -> tuple[list[float], list[str], int]:
    """``calls`` creates from ``concurrency`` connections; returns latencies (s), the ids
    answered 200, and the number of failed calls (errors or non-200)."""
    latencies: list[float] = []
    ids: list[str] = []
    failed = 0
    next_call = 0
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])

    async def worker() -> None:
        nonlocal next_call, failed
        connection = _Connection(port, server.token)
        try:
            while next_call < calls and time.monotonic() < deadline:
                i = next_call
                next_call += 1
                seconds = after[0] + i % (after[1] - after[0] + 1)
                body = json.dumps(
                    {"prompt": f"load {i}", "title": f"Load {i}", "after_seconds": seconds}
                ).encode()
                started = time.perf_counter()
                try:
                    status, data = await asyncio.wait_for(
                        connection.post(f"/v1/sessions/load-{i % 100}/tools/schedule_create", body),
                        30,
                    )
                except (OSError, asyncio.IncompleteReadError, TimeoutError):
                    failed += 1
                    connection.close()
                    if time.monotonic() < deadline:
                        await asyncio.sleep(0.05)
                    continue
                if status != 200:
                    failed += 1
                    continue
                latencies.append(time.perf_counter() - started)
                ids.append(json.loads(data)["id"])
        finally:
            connection.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, ids, failed


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _server_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: Runs the CLI with uvicorn's pure-Python h11 parser: httptools cannot be imported, so
#: uvicorn's ``http="auto"`` falls back to h11 (a baseline from before httptools was a
#: dependency, docs/decisions.md "HTTP API").
_H11_RUNNER: Final = 'import sys\nsys.modules["httptools"] = None\n' + RUNNER


#: An emulated slow disk (``--commit-delay-ms``): every group write of the SQLite store returns
#: that much later, sleeping (so releasing the GIL) where a slow fsync would block, on whichever
#: thread runs the write. Creates are still answered only after it returns.
_SLOW_COMMIT: Final = """import time
import schedlog.host.stores.sqlite as _store
_insert_many = _store.SqliteTaskStore.insert_many
def _slow_insert_many(self, tasks):
    seqs = _insert_many(self, tasks)
    time.sleep({seconds!r})
    return seqs
_store.SqliteTaskStore.insert_many = _slow_insert_many
"""


def _sides(args: argparse.Namespace) -> list[tuple[str, str, dict[str, str]]]:
    """``(name, runner, env)`` of each server under test, in the order of every round."""
    slow = _SLOW_COMMIT.format(seconds=args.commit_delay_ms / 1000) if args.commit_delay_ms else ""
    current: tuple[str, str, dict[str, str]] = ("current", slow + RUNNER, {})
    if args.baseline is None:
        return [current]
    tree = str(Path(args.baseline).resolve())
    path = os.pathsep.join([tree, *filter(None, [os.environ.get("PYTHONPATH")])])
    # With ``python -c`` the working directory comes first on sys.path, ahead of PYTHONPATH:
    # run from a checkout, the baseline would import that checkout. The runner puts the
    # baseline's tree first itself (as benchmarks/burst.py does).
    first = f"import sys\nsys.path.insert(0, {tree!r})\n"
    runner = first + slow + (_H11_RUNNER if args.baseline_h11 else RUNNER)
    return [("baseline", runner, {"PYTHONPATH": path}), current]


def _load_side(
    args: argparse.Namespace, tmp: Path, name: str, runner: str, env: dict[str, str], n: int
) -> tuple[list[dict[str, Any]], bool]:
    """One server (a fresh store of ``--tasks`` tasks) under each concurrency in turn; returns
    a result line per concurrency and whether every answered id was in the store after it
    stopped."""
    run_dir = tmp / f"{name}-{n}"
    run_dir.mkdir()
    store, sessions = run_dir / "store.db", run_dir / "sessions"
    _populate(store, args.tasks)
    server = start_serve(store, ["--sessions", str(sessions)], env=env, timeout=300, runner=runner)
    answered: list[str] = []
    lines: list[dict[str, Any]] = []
    try:
        for concurrency in args.concurrency:
            calls = args.calls if concurrency > 1 else max(200, args.calls // 5)
            cpu_before = _server_cpu_s(server.proc.pid)
            started = time.perf_counter()
            latencies, ids, failed = asyncio.run(
                _creates(server, calls, concurrency, (DAY_S, DAY_S), time.monotonic() + 300)
            )
            wall = time.perf_counter() - started
            cpu_after = _server_cpu_s(server.proc.pid)
            answered.extend(ids)
            cpu_us = (
                None
                if cpu_before is None or cpu_after is None or not latencies
                else round((cpu_after - cpu_before) / len(latencies) * 1e6)
            )
            line = {
                "side": name,
                "round": n,
                "concurrency": concurrency,
                "calls": len(latencies),
                "failed": failed,
                "calls_per_s": round(len(latencies) / wall, 1),
                "p50_ms": round(_percentile(latencies, 0.50) * 1000, 2),
                "p99_ms": round(_percentile(latencies, 0.99) * 1000, 2),
                "server_cpu_us_per_call": cpu_us,
                "load_avg": _load_avg(),
            }
            print(json.dumps(line), flush=True)
            lines.append(line)
    finally:
        code, stderr = server.stop()
    if code != 0:
        print(stderr, file=sys.stderr)
        return lines, False
    reopened = open_store(store)
    try:
        missing = [i for i in answered if reopened.get(i) is None]
    finally:
        reopened.close()
    print(
        json.dumps(
            {
                "side": name,
                "round": n,
                "answered": len(answered),
                "missing_after_restart": len(missing),
            }
        ),
        flush=True,
    )
    return lines, not missing


def cmd_load(args: argparse.Namespace) -> int:
    sides = _sides(args)
    print(f"{args.tasks} tasks per store; load average {_load_avg()}", flush=True)
    results: list[dict[str, Any]] = []
    ok = True
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in range(args.rounds):
            for name, runner, env in sides:  # interleaved: every round runs each side once
                lines, durable = _load_side(args, Path(tmp), name, runner, env, n)
                results.extend(lines)
                ok = ok and durable
    for name, _, _ in sides:
        for concurrency in args.concurrency:
            runs = [r for r in results if r["side"] == name and r["concurrency"] == concurrency]
            if not runs:
                continue
            summary = {
                "summary": name,
                "concurrency": concurrency,
                "runs": len(runs),
                "median_calls_per_s": round(statistics.median(r["calls_per_s"] for r in runs), 1),
                "median_p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 2),
                "median_p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 2),
            }
            cpu = [r["server_cpu_us_per_call"] for r in runs if r["server_cpu_us_per_call"]]
            if cpu:
                summary["median_server_cpu_us_per_call"] = round(statistics.median(cpu))
            print(json.dumps(summary), flush=True)
    return 0 if ok else 1


def _delivered_members(sessions: Path) -> Counter[tuple[str, str]]:
    seen: Counter[tuple[str, str]] = Counter()
    for log in sessions.glob("*.jsonl"):
        for event in read_log(log).events:
            if event.type == "message/followup":
                for member in event.data["reminders"]:
                    seen[(member["id"], member["occurrenceAt"])] += 1
    return seen


def _wait_all_inactive(server: ServeProcess, expected: int, timeout: float) -> int:
    """Poll the catalog (at most ``timeout`` s) until ``expected`` tasks are inactive."""
    deadline = time.monotonic() + timeout
    inactive = 0
    with httpx.Client(headers=server.headers, timeout=120) as client:
        while time.monotonic() < deadline:
            inactive = 0
            cursor: str | None = None
            while True:
                params = {"status": "inactive", "limit": "500"}
                if cursor is not None:
                    params["cursor"] = cursor
                page = client.get(f"{server.url}/tasks", params=params).json()
                inactive += len(page["items"])
                cursor = page["nextCursor"]
                if cursor is None:
                    break
            if inactive >= expected:
                return inactive
            time.sleep(0.5)  # bounded by ``timeout``
    return inactive


def cmd_kill(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        store, sessions = Path(tmp) / "store.db", Path(tmp) / "sessions"
        fill = _populate(store, args.tasks)
        print(f"populated {args.tasks} tasks in {fill:.1f} s; load average {_load_avg()}")
        server = start_serve(store, ["--sessions", str(sessions)], timeout=300)
        answered: list[str] = []
        latencies: list[float] = []

        async def load_then_kill() -> int:
            deadline = time.monotonic() + args.seconds
            task = asyncio.ensure_future(
                _creates(server, 10**9, args.concurrency, (1, 3), deadline + 0.5)
            )
            await asyncio.sleep(args.seconds)
            server.proc.send_signal(signal.SIGKILL)  # under load: calls are in flight
            found, ids, failed = await task
            latencies.extend(found)
            answered.extend(ids)
            return failed

        failed = asyncio.run(load_then_kill())
        server.proc.wait(timeout=30)
        print(
            json.dumps(
                {
                    "acknowledged_before_kill": len(answered),
                    "failed_or_cut": failed,
                    "calls_per_s": round(len(answered) / args.seconds, 1),
                    "load_avg": _load_avg(),
                }
            ),
            flush=True,
        )
        restarted = start_serve(store, ["--sessions", str(sessions)], timeout=300)
        try:
            # Everything created by the load is due within 3 s of its creation.
            inactive = _wait_all_inactive(restarted, len(answered) + 1, 120)
        finally:
            code, stderr = restarted.stop()
        reopened = open_store(store)
        try:
            missing = [i for i in answered if reopened.get(i) is None]
            active_load = sum(
                1
                for st in reopened.tasks()
                if st.task.session_id.startswith("load-") and st.task.active
            )
        finally:
            reopened.close()
        members = _delivered_members(sessions)
        twice = [m for m, n in members.items() if n > 1]
        ok_ids = set(answered)
        undelivered = [i for i in ok_ids if not any(m[0] == i for m in members)]
        result = {
            "acknowledged": len(answered),
            "missing_after_restart": len(missing),
            "inactive_after_restart": inactive,
            "load_tasks_still_active": active_load,
            "members_delivered": len(members),
            "delivered_twice": len(twice),
            "acknowledged_not_delivered": len(undelivered),
            "restart_exit": code,
        }
        print(json.dumps(result))
        if code != 0:
            print(stderr, file=sys.stderr)
        return 0 if not missing and not twice and not undelivered and code == 0 else 1


# --- webhook fault run -------------------------------------------------------------------------


def run_receiver(args: argparse.Namespace) -> int:
    """The receiver subprocess: 503 for ``--fail-rate`` of the calls, else fsync the body to
    ``--out`` and answer 204."""
    from tests.serve.receiver import Inbox, start_receiver

    out = open(args.out, "ab")  # noqa: SIM115 - kept open for the process's life
    inbox = Inbox(SECRET.encode(), fail_rate=args.fail_rate, seed=args.seed)

    def keep(value: dict[str, Any]) -> None:
        out.write(json.dumps(value).encode() + b"\n")
        out.flush()
        os.fsync(out.fileno())

    inbox.on_accept = keep
    server = start_receiver(inbox, args.port)
    print(server.server_address[1], flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    return 0


def _start_receiver(out: Path, port: int, fail_rate: float, seed: int) -> tuple[Any, int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.http",
            "receiver",
            "--out",
            str(out),
            "--port",
            str(port),
            "--fail-rate",
            str(fail_rate),
            "--seed",
            str(seed),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("the receiver did not start")
    return proc, int(line)


def cmd_webhook(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        store, out = Path(tmp) / "store.db", Path(tmp) / "received.jsonl"
        receiver, port = _start_receiver(out, 0, args.fail_rate, 1)
        hook = f"http://127.0.0.1:{port}/hook"
        server = start_serve(
            store,
            ["--deliver-to", hook, "--retry-base-ms", "200", "--retry-cap-ms", "2000"],
            env={"SCHEDLOG_WEBHOOK_SECRET": SECRET},
        )
        ids: list[str] = []
        started = time.monotonic()
        try:
            with httpx.Client(headers=server.headers, timeout=30) as client:
                for i in range(args.reminders):
                    body = {"prompt": f"hook {i}", "title": f"Hook {i}"}
                    body["after_seconds"] = 1 + i % 5  # due over five seconds
                    response = client.post(
                        f"{server.url}/sessions/hook-{i % 10}/tools/schedule_create", json=body
                    )
                    response.raise_for_status()
                    ids.append(response.json()["id"])
            time.sleep(2.5)  # bounded: about half of the reminders are due by now
            receiver.send_signal(signal.SIGKILL)
            receiver.wait(timeout=30)
            time.sleep(2.0)  # deliveries fail with refused connections meanwhile
            receiver, _ = _start_receiver(out, port, args.fail_rate, 2)
            inactive = _wait_all_inactive(server, len(ids), 120)
            elapsed = time.monotonic() - started
        finally:
            code, stderr = server.stop()
            receiver.send_signal(signal.SIGTERM)
            receiver.wait(timeout=30)
        bodies = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        per_reminder: Counter[str] = Counter()
        for body in bodies:
            for member in body["reminders"]:
                per_reminder[member["id"]] += 1
        distinct = {body["messageId"]: body for body in bodies}
        after_dedupe: Counter[str] = Counter()
        for body in distinct.values():
            for member in body["reminders"]:
                after_dedupe[member["id"]] += 1
        result = {
            "reminders": len(ids),
            "inactive": inactive,
            "accepted_posts": len(bodies),
            "distinct_message_ids": len(distinct),
            "reached_at_least_once": sum(1 for i in ids if per_reminder[i] >= 1),
            "exactly_once_after_dedupe": sum(1 for i in ids if after_dedupe[i] == 1),
            "repeats_before_dedupe": sum(n - 1 for n in per_reminder.values() if n > 1),
            "seconds": round(elapsed, 1),
            "serve_exit": code,
            "load_avg": _load_avg(),
        }
        print(json.dumps(result))
        if code != 0:
            print(stderr, file=sys.stderr)
        everyone = result["reached_at_least_once"] == result["exactly_once_after_dedupe"]
        return 0 if everyone and result["exactly_once_after_dedupe"] == len(ids) else 1


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http")
    sub = parser.add_subparsers(dest="command", required=True)
    load = sub.add_parser("load")
    load.add_argument("--tasks", type=int, default=100_000)
    load.add_argument("--calls", type=int, default=3_000)
    load.add_argument("--concurrency", type=int, nargs="+", default=[1, 50])
    load.add_argument("--dir", default=None, help="where the store goes (a real disk)")
    load.add_argument("--rounds", type=int, default=1)
    load.add_argument(
        "--baseline",
        default=None,
        help="a source tree of the baseline commit (git archive COMMIT | tar -x -C DIR): each "
        "round runs its serve and then this tree's, on fresh stores",
    )
    load.add_argument(
        "--commit-delay-ms",
        type=float,
        default=0,
        help="emulate a slow disk: each group write of the store returns this much later",
    )
    load.add_argument(
        "--baseline-h11",
        action="store_true",
        help="run the baseline with uvicorn's h11 parser (it did not depend on httptools)",
    )
    load.set_defaults(func=cmd_load)
    kill = sub.add_parser("kill")
    kill.add_argument("--tasks", type=int, default=100_000)
    kill.add_argument("--seconds", type=float, default=6.0)
    kill.add_argument("--concurrency", type=int, default=50)
    kill.add_argument("--dir", default=None)
    kill.set_defaults(func=cmd_kill)
    hook = sub.add_parser("webhook")
    hook.add_argument("--reminders", type=int, default=300)
    hook.add_argument("--fail-rate", type=float, default=0.3)
    hook.add_argument("--dir", default=None)
    hook.set_defaults(func=cmd_webhook)
    receiver = sub.add_parser("receiver")
    receiver.add_argument("--out", required=True)
    receiver.add_argument("--port", type=int, default=0)
    receiver.add_argument("--fail-rate", type=float, default=0.3)
    receiver.add_argument("--seed", type=int, default=1)
    receiver.set_defaults(func=run_receiver)
    args = parser.parse_args()
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
