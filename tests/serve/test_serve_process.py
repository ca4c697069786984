"""Acceptance: ``schedlog host serve`` in a subprocess on a free loopback port, on the real clock.

Create a reminder over HTTP with a short ``after_seconds``, see ``schedule/changed`` on
``/v1/events``, see the follow-up in the sessions directory and read it in ``history``; while
it runs, ``host batch`` is refused with ``store-locked`` naming the URL, and ``host catalog`` reads
beside it.
The waits are bounded (30 s) and end as soon as the event arrives.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from schedlog.eventlog.reader import read_log  # noqa: E402
from tests.serve.process import RUNNER, start_serve  # noqa: E402


def read_events(response: httpx.Response, want: int) -> list[dict[str, str]]:
    """Read SSE frames until ``want`` schedule/changed events arrived."""
    out: list[dict[str, str]] = []
    event: dict[str, str] = {}
    for line in response.iter_lines():
        if not line:
            if event.get("event") == "schedule/changed":
                out.append(event)
                if len(out) == want:
                    return out
            event = {}
            continue
        name, _, value = line.partition(": ")
        event[name] = value
    raise AssertionError(f"the stream ended after {out}")


def test_serve_creates_notifies_delivers_and_reports_history(tmp_path: Path) -> None:
    store, sessions = tmp_path / "schedule.db", tmp_path / "sessions"
    server = start_serve(store, ["--sessions", str(sessions)])
    try:
        token_file = Path(f"{store}.token")
        assert server.stdout == [f"schedlog host serve: {server.url}", f"token: {token_file}"]
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        timeout = httpx.Timeout(30.0)
        with httpx.Client(headers=server.headers, timeout=timeout) as client:
            assert client.get(server.url.removesuffix("/v1") + "/readyz").status_code == 200
            with client.stream("GET", f"{server.url}/events") as stream:
                assert stream.status_code == 200
                created = client.post(
                    f"{server.url}/sessions/s-1/tools/schedule_create",
                    json={"prompt": "Stretch", "title": "Stretch", "after_seconds": 1},
                )
                assert created.status_code == 200, created.text
                task_id = created.json()["id"]
                events = read_events(stream, 2)
            data = [json.loads(e["data"]) for e in events]
            assert data == [
                {"id": task_id, "sessionId": "s-1", "kind": "created"},
                {"id": task_id, "sessionId": "s-1", "kind": "delivered"},
            ]
            (followup,) = read_log(sessions / "s-1.jsonl").events
            assert followup.data["reminders"][0]["id"] == task_id
            history = client.get(f"{server.url}/sessions/s-1/tasks/{task_id}/history")
            assert history.status_code == 200
            (record,) = history.json()["records"]
            assert record["messageId"] == followup.data["messageId"]
            # Resume after the first event: the second is sent again.
            with client.stream(
                "GET", f"{server.url}/events", headers={"Last-Event-ID": events[0]["id"]}
            ) as resumed:
                assert read_events(resumed, 1)[0]["id"] == events[1]["id"]
        locked = subprocess.run(
            [
                sys.executable,
                "-c",
                RUNNER,
                "host",
                "batch",
                "--store",
                str(store),
                "--sessions",
                str(sessions),
            ],
            input='{"op":"catalog","now":"2026-05-01T00:00:00Z","args":{}}\n',
            capture_output=True,
            text=True,
            timeout=60,
        )
        error = json.loads(locked.stdout)["error"]
        assert error["code"] == "store-locked" and server.url in error["message"]
        catalog = subprocess.run(
            [sys.executable, "-c", RUNNER, "host", "catalog", "--store", str(store)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        # A read command reads beside the server (docs/decisions.md "Readers beside a writer").
        assert catalog.returncode == 0, catalog.stderr
        assert [json.loads(line)["id"] for line in catalog.stdout.splitlines()] != []
    finally:
        code, stderr = server.stop()
    assert code == 0, stderr
    assert not Path(f"{store}.serve").exists()
