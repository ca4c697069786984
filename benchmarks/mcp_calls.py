"""The cost of one MCP tool call, round trip, with the SDK's own client (issue 24).

Run from the repository root with the ``test`` extra installed::

    python -m benchmarks.mcp_calls [--tasks 10000] [--calls 200] [--warmup 20]

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
per call, the target (at most 5 ms median) and the load average.
Everything goes to 127.0.0.1 or a pipe; every loop is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.store_scale import populate_sqlite
from tests.serve.process import RUNNER, start_serve

TARGET_MS = 5.0
CREATE = {"prompt": "Benchmark <&>", "title": "bench", "after_seconds": 86_400}


def _load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.asynccontextmanager
async def _stdio(store: Path, sessions: Path) -> AsyncIterator[Any]:
    from mcp import Client, StdioServerParameters

    args = ["-c", RUNNER, "mcp", "--store", str(store), "--sessions", str(sessions)]
    params = StdioServerParameters(
        command=sys.executable, args=[*args, "--session", "bench-stdio"], env=dict(os.environ)
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


async def _time(
    client: Any, name: str, args: dict[str, Any], calls: int, warmup: int
) -> list[float]:
    for _ in range(warmup):
        await client.call_tool(name, args)
    times: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        result = await client.call_tool(name, args)
        times.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result
    return times


async def _measure(client: Any, calls: int, warmup: int) -> dict[str, list[float]]:
    for _ in range(10):  # the session's reminders, listed by every schedule_list
        await client.call_tool("schedule_create", CREATE)
    listed = await _time(client, "schedule_list", {}, calls, warmup)
    created = await _time(client, "schedule_create", CREATE, calls, warmup)
    return {"schedule_list": listed, "schedule_create": created}


def _report(transport: str, results: dict[str, list[float]]) -> bool:
    ok = True
    for name, times in results.items():
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        met = median <= TARGET_MS
        ok = ok and met
        print(
            f"{transport:5} {name:15} median {median:6.2f} ms  p90 {p90:6.2f} ms  "
            f"({len(times)} calls; target <= {TARGET_MS} ms: {'met' if met else 'NOT met'})"
        )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    print(f"load average before: {_load_avg()}")
    with tempfile.TemporaryDirectory() as tmp:
        store, sessions = Path(tmp) / "tasks.sqlite", Path(tmp) / "sessions"
        populate_sqlite(store, args.tasks, 1, int(time.time() * 1000))

        async def stdio() -> dict[str, list[float]]:
            async with _stdio(store, sessions) as client:
                return await _measure(client, args.calls, args.warmup)

        ok = _report("stdio", asyncio.run(stdio()))
        server = start_serve(store, ["--sessions", str(sessions)])
        try:
            url = server.url.removesuffix("/v1") + "/mcp/sessions/bench-http"

            async def http() -> dict[str, list[float]]:
                async with _http(url, server.token) as client:
                    return await _measure(client, args.calls, args.warmup)

            ok = _report("http", asyncio.run(http())) and ok
        finally:
            server.stop()
    print(f"load average after: {_load_avg()}; {args.tasks} tasks in the store")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
