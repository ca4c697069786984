"""Issue 22 item 4 end to end: under a 128-descriptor limit, 250 connections that never send
a request neither stop a due delivery nor fill stderr, and the server answers again once
they are gone. The server is a subprocess with ``RLIMIT_NOFILE`` lowered before it starts
(its connection cap becomes 128 - 64 = 64); every wait is bounded."""

from __future__ import annotations

import json
import select
import socket
from pathlib import Path

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from schedlog.eventlog.reader import read_log  # noqa: E402
from tests.serve.process import RUNNER, start_serve  # noqa: E402
from tests.serve.test_connection_limits import address, wait_healthy  # noqa: E402
from tests.serve.test_serve_process import read_events  # noqa: E402

LIMITED = "import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))\n" + RUNNER


def test_a_flood_of_silent_connections_does_not_stop_a_delivery(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    server = start_serve(
        tmp_path / "s.db", ["--sessions", str(sessions), "--header-timeout", "60"], runner=LIMITED
    )
    held: list[socket.socket] = []
    try:
        with (
            httpx.Client(headers=server.headers, timeout=30) as client,
            client.stream("GET", f"{server.url}/events") as stream,
        ):
            created = client.post(
                f"{server.url}/sessions/s-1/tools/schedule_create",
                json={"prompt": 'Stretch <&"', "title": "Stretch", "after_seconds": 2},
            )
            assert created.status_code == 200, created.text
            for _ in range(250):  # more than the cap and than the descriptor limit
                sock = socket.socket()
                sock.settimeout(10)
                try:
                    sock.connect(address(server))
                except OSError:
                    sock.close()
                    continue
                held.append(sock)
            events = read_events(stream, 2)
        kinds = [json.loads(e["data"])["kind"] for e in events]
        assert kinds == ["created", "delivered"]
        (followup,) = read_log(sessions / "s-1.jsonl").events
        assert followup.data["reminders"][0]["id"] == created.json()["id"]
        readable, _, _ = select.select(held, [], [], 5)
        refused = sum(1 for sock in readable if sock.recv(12).startswith(b"HTTP/1.1 503"))
        assert refused >= 100, (refused, len(held))  # over the cap: answered 503 and closed
    finally:
        for sock in held:
            sock.close()
    wait_healthy(server)
    code, stderr = server.stop()
    assert code == 0, stderr
    assert len(stderr) < 64 * 1024, stderr[-2000:]  # repeated lines are rate-limited
