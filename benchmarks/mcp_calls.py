"""The cost of one MCP tool call, round trip, with the SDK's own client (issue 24).

Run from the repository root with the ``test`` extra installed::

    python -m benchmarks.mcp_calls [--tasks 10000] [--calls 200] [--warmup 20]
                                   [--rounds 1] [--baseline DIR]

A SQLite store is pre-populated with ``--tasks`` active tasks (one transaction, as
``benchmarks/store_scale.py`` does). Then, for each transport, one SDK client connects and
times ``--calls`` sequential calls of each tool it measures, after ``--warmup`` untimed ones:

* ``stdio``: ``schedlog mcp --store STORE --sessions DIR --session bench-stdio`` started by
  the client (``StdioServerParameters``), as an MCP client starts a server;
* ``http``: ``schedlog host serve`` in a subprocess, the client on
  ``/mcp/sessions/bench-http`` over loopback with the bearer token.

Measured per transport, each on a session of its own: ``schedule_list`` (the session holds 10
reminders; the store's other tasks belong to other sessions), then ``schedule_create``
(``after_seconds`` one day, each a durable commit). Prints the median and p90 in milliseconds
per call, the target (at most 5 ms median) and the load average, and the CPU time per call of
the client (this process) and of the server (``/proc``): on a loaded machine the CPU times
move much less than the round trips.

With ``--baseline DIR`` (a source tree of another commit: ``git archive COMMIT | tar -x -C DIR``)
each round measures the baseline's servers (their runner puts ``DIR`` first on ``sys.path``:
``PYTHONPATH`` would not do, as ``python -c`` puts the working directory before it), then this
tree's,
each on a fresh copy of the same populated store; ``--rounds N`` repeats that, interleaved.
Everything goes to 127.0.0.1 or a pipe; every loop is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.store_scale import populate_sqlite
from tests.serve.process import RUNNER, start_serve

#: ``(name, runner)`` of a side: the Python program its servers run the CLI with.
Side = tuple[str, str]

TARGET_MS = 5.0
CREATE = {"prompt": "Benchmark <&>", "title": "bench", "after_seconds": 86_400}


def _load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.asynccontextmanager
async def _stdio(store: Path, sessions: Path, runner: str) -> AsyncIterator[Any]:
    from mcp import Client, StdioServerParameters

    args = ["-c", runner, "mcp", "--store", str(store), "--sessions", str(sessions)]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*args, "--session", "bench-stdio"],
        env=dict(os.environ),
    )
    async with Client(params) as client:
        yield client


@contextlib.asynccontextmanager
async def _http(url: str, token: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _cpu_ms(pid: int | None) -> float:
    """CPU time (user + system, all threads) of process ``pid`` so far; 0 when unknown."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _child_pid() -> int | None:
    """The one child process of this process (the stdio server), if Linux says which."""
    children: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            children += [int(pid) for pid in task.read_text().split()]
    return children[0] if len(children) == 1 else None


#: tool -> (round-trip times in ms, client CPU ms per call, server CPU ms per call)
Results = dict[str, tuple[list[float], float, float]]


async def _time(
    client: Any, name: str, args: dict[str, Any], calls: int, warmup: int, server: int | None
) -> tuple[list[float], float, float]:
    for _ in range(warmup):
        await client.call_tool(name, args)
    times: list[float] = []
    cpu, server_cpu = time.process_time(), _cpu_ms(server)
    for _ in range(calls):
        started = time.perf_counter()
        result = await client.call_tool(name, args)
        times.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result
    client_ms = (time.process_time() - cpu) * 1000 / calls
    return times, client_ms, (_cpu_ms(server) - server_cpu) / calls


async def _measure(client: Any, calls: int, warmup: int, server: int | None) -> Results:
    for _ in range(10):  # the session's reminders, listed by every schedule_list
        await client.call_tool("schedule_create", CREATE)
    listed = await _time(client, "schedule_list", {}, calls, warmup, server)
    created = await _time(client, "schedule_create", CREATE, calls, warmup, server)
    return {"schedule_list": listed, "schedule_create": created}


def _report(side: str, transport: str, results: Results) -> bool:
    ok = True
    for name, (times, client_cpu, server_cpu) in results.items():
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        met = median <= TARGET_MS
        ok = ok and met
        print(
            f"{side:8} {transport:5} {name:15} median {median:6.2f} ms  p90 {p90:6.2f} ms  "
            f"CPU/call client {client_cpu:5.2f} server {server_cpu:5.2f} ms  "
            f"({len(times)} calls; target <= {TARGET_MS} ms: {'met' if met else 'NOT met'})",
            flush=True,
        )
    return ok


def _sides(baseline: str | None) -> list[Side]:
    current: Side = ("current", RUNNER)
    if baseline is None:
        return [current]
    tree = Path(baseline).resolve()
    if not (tree / "schedlog").is_dir():
        raise SystemExit(f"--baseline {tree}: no schedlog/ package there")
    return [("baseline", f"import sys\nsys.path.insert(0, {str(tree)!r})\n{RUNNER}"), current]


def _run_side(side: Side, seed: Path, tmp: Path, calls: int, warmup: int) -> bool:
    """Both transports of one side, each on a fresh copy of the populated store ``seed``."""
    name, runner = side
    store, sessions = tmp / f"{name}.sqlite", tmp / f"{name}-sessions"
    shutil.copyfile(seed, store)
    shutil.rmtree(sessions, ignore_errors=True)

    async def stdio() -> Results:
        async with _stdio(store, sessions, runner) as client:
            return await _measure(client, calls, warmup, _child_pid())

    ok = _report(name, "stdio", asyncio.run(stdio()))
    server = start_serve(store, ["--sessions", str(sessions)], runner=runner)
    try:
        url = server.url.removesuffix("/v1") + "/mcp/sessions/bench-http"

        async def http() -> Results:
            async with _http(url, server.token) as client:
                return await _measure(client, calls, warmup, server.proc.pid)

        ok = _report(name, "http", asyncio.run(http())) and ok
    finally:
        server.stop()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", metavar="DIR", help="a source tree of another commit")
    args = parser.parse_args()
    sides = _sides(args.baseline)
    print(f"load average before: {_load_avg()}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp) / "seed.sqlite"
        populate_sqlite(seed, args.tasks, 1, int(time.time() * 1000))
        for round_no in range(1, args.rounds + 1):
            for side in sides:  # interleaved: each side once per round
                print(f"round {round_no}, {side[0]}: load average {_load_avg()}", flush=True)
                met = _run_side(side, seed, Path(tmp), args.calls, args.warmup)
                ok = ok and (met or side[0] == "baseline")
    print(f"load average after: {_load_avg()}; {args.tasks} tasks in the store")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
