"""``host serve`` for an operator, in a real subprocess: its log lines in both forms (start,
deliveries with lateness, one access line per request, stop; never the token), ``GET
/metrics`` checked against a scripted run with prometheus-client's own parser, failed
deliveries into a session log retried on the timer and shown as ``retrying``, and a sessions
path that is not a directory refused at start-up (docs/operations.md#serve-logs,
docs/operations.md#metrics, docs/operations.md#retries)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.serve.deps import require_modules

require_modules(("starlette", "uvicorn", "httpx", "prometheus_client"), "serve")

import httpx  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from schedlog.host.sessions import encode_session_id  # noqa: E402
from tests.serve.process import RUNNER, ServeProcess, start_serve  # noqa: E402

#: Hostile session ids: markup, a quote, a non-BMP character. None may reach a metric label.
GOOD = 's-<b>"ok"<b>-\U0001f600'
BROKEN = "broken-<script>"
TOOLS = "/v1/sessions/{sessionId}/tools/{tool}"


def _scrape(client: httpx.Client, server: ServeProcess) -> dict[tuple[str, tuple[Any, ...]], float]:
    """Every sample of ``GET /metrics``, by name and sorted labels."""
    answer = client.get(server.url.removesuffix("/v1") + "/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    out: dict[tuple[str, tuple[Any, ...]], float] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _until(deadline_s: float, check: Any) -> Any:
    """Poll ``check()`` until it returns something truthy, for at most ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        value = check()
        if value or time.monotonic() > end:
            return value
        time.sleep(0.05)


def _create(client: httpx.Client, server: ServeProcess, session: str, prompt: str) -> str:
    answer = client.post(
        f"{server.url}/sessions/{quote(session, safe='')}/tools/schedule_create",
        json={"prompt": prompt, "title": "<i>t</i>", "after_seconds": 1},
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def test_json_logs_and_metrics_follow_a_scripted_run(tmp_path: Path) -> None:
    store, sessions = tmp_path / "schedule.db", tmp_path / "sessions"
    sessions.mkdir()
    # The broken session's log path is a directory: every delivery into it fails.
    (sessions / f"{encode_session_id(BROKEN)}.jsonl").mkdir()
    server = start_serve(
        store, ["--sessions", str(sessions), "--retry-base-ms", "100", "--retry-cap-ms", "200"]
    )
    try:
        with httpx.Client(headers=server.headers, timeout=30) as client:
            good = _create(client, server, GOOD, "Stretch <b>now</b>")
            broken = _create(client, server, BROKEN, "Never </textarea> arrives " * 50)
            assert httpx.get(f"{server.url}/tasks").status_code == 401  # no token
            assert client.get(server.url.removesuffix("/v1") + "/nowhere").status_code == 404

            def settled() -> dict[tuple[str, tuple[Any, ...]], float] | None:
                got = _scrape(client, server)
                sent = got[("schedlog_deliveries_total", (("outcome", "sent"),))]
                failed = got[("schedlog_deliveries_total", (("outcome", "failed"),))]
                return got if sent == 1 and failed >= 3 else None

            # Retried on the timer: three failures without any other request or change.
            metrics = _until(30, settled)
            assert metrics, _scrape(client, server)
            catalog = client.get(f"{server.url}/tasks").json()
        by_id = {entry["id"]: entry for entry in catalog["items"]}
        assert by_id[broken]["status"] == "retrying"
        assert by_id[broken]["retry"]["attempts"] >= 3
        assert by_id[good]["status"] == "inactive"
    finally:
        code, stderr = server.stop()
    assert code == 0, stderr
    _check_metrics(metrics)
    assert server.token not in stderr
    events = [json.loads(line) for line in stderr.splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "serve.started" and names[-1] == "serve.stopped", names
    start = events[0]
    assert start["url"] == server.url and start["backend"] == "sqlite"
    assert start["sessions"] == str(sessions) and start["deliverTo"] is None
    assert start["active"] == 0 and start["nextTarget"] is None
    (sent,) = [e for e in events if e["event"] == "delivery.sent"]
    assert sent["reminders"][0]["id"] == good
    assert isinstance(sent["latenessMs"], int) and 0 <= sent["latenessMs"] < 30_000
    failures = [e for e in events if e["event"] == "delivery.unacknowledged"]
    assert len(failures) >= 3 and all(f["ids"] == [broken] for f in failures)
    access = [e for e in events if e["event"] == "http.request"]
    assert {"method", "route", "status", "ms"} <= access[0].keys()
    assert [(a["method"], a["route"], a["status"]) for a in access[:4]] == [
        ("POST", TOOLS, 200),
        ("POST", TOOLS, 200),
        ("GET", "/v1/tasks", 401),
        ("GET", "unmatched", 404),
    ]
    assert all(GOOD not in json.dumps(a) and BROKEN not in json.dumps(a) for a in access)
    assert events[-1]["requests"] == len(access) and events[-1]["delivered"] == 1


def _check_metrics(m: dict[tuple[str, tuple[Any, ...]], float]) -> None:
    assert m[("schedlog_delivery_lateness_seconds_count", ())] == 1  # one reminder delivered
    assert m[("schedlog_active_tasks", ())] == 1  # the broken one
    assert m[("schedlog_due_tasks", ())] == 1
    assert m[("schedlog_event_stream_clients", ())] == 0
    assert m[("schedlog_lease_takeovers_total", ())] == 0  # a local store has no leases
    requests = {
        labels: value
        for (name, labels), value in m.items()
        if name == "schedlog_http_requests_total"
    }
    assert requests[(("route", TOOLS), ("status", "200"))] == 2
    assert requests[(("route", "/v1/tasks"), ("status", "401"))] == 1
    assert requests[(("route", "unmatched"), ("status", "404"))] == 1
    assert all(
        m[("schedlog_webhook_attempts_total", (("result", r),))] == 0
        for r in ("ok", "refused", "timeout", "unreachable", "error")
    )
    ops = {
        dict(labels)["op"]: value
        for (name, labels), value in m.items()
        if name == "schedlog_store_operation_seconds_count"
    }
    assert ops.get("insert", 0) + ops.get("insert_many", 0) >= 1
    # the one committed delivery: one replace, or one batched replace_many (host/batch.py)
    assert ops.get("replace", 0) + ops.get("replace_many", 0) == 1
    assert all(dict(labels).get("backend") in (None, "sqlite") for _, labels in m)
    # No label holds a session id, a task id or user text.
    values = {str(v) for _, labels in m for _, v in labels}
    assert not any("schedule-" in v or "broken" in v or "s-<" in v for v in values), values


def test_human_lines_and_public_metrics(tmp_path: Path) -> None:
    store, sessions = tmp_path / "schedule.db", tmp_path / "sessions"
    server = start_serve(
        store, ["--sessions", str(sessions), "--log-format", "human", "--metrics-public"]
    )
    try:
        root = server.url.removesuffix("/v1")
        assert httpx.get(root + "/metrics", timeout=30).status_code == 200  # no token needed
        assert httpx.get(f"{server.url}/tasks", timeout=30).status_code == 401
    finally:
        code, stderr = server.stop()
    assert code == 0, stderr
    lines = stderr.splitlines()
    clock = r"\d\d:\d\d:\d\d "
    assert re.fullmatch(
        clock + rf"host serve started at {re.escape(server.url)}: store .*schedule\.db "
        r"\(sqlite\), sessions .*sessions, 0 active tasks, no target",
        lines[0],
    ), lines
    assert re.fullmatch(clock + r"GET /metrics 200 [\d.]+ ms", lines[1]), lines
    assert re.fullmatch(clock + r"GET /v1/tasks 401 [\d.]+ ms", lines[2]), lines
    assert re.fullmatch(clock + "host serve stopped: 0 deliveries, 2 requests", lines[-1]), lines
    assert server.token not in stderr


def test_metrics_need_the_token_by_default(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "s.db", ["--sessions", str(tmp_path / "d")])
    try:
        url = server.url.removesuffix("/v1") + "/metrics"
        assert httpx.get(url, timeout=30).status_code == 401
        assert httpx.get(url, headers=server.headers, timeout=30).status_code == 200
    finally:
        code, _ = server.stop()
    assert code == 0


def test_a_sessions_path_that_is_a_file_is_refused_at_start(tmp_path: Path) -> None:
    not_dir = tmp_path / "sessions"
    not_dir.write_text("x")
    base = [sys.executable, "-c", RUNNER, "host"]
    where = ["--store", str(tmp_path / "s.db"), "--sessions", str(not_dir)]
    for command in (["serve", *where, "--listen", "127.0.0.1:0"], ["run", *where]):
        done = subprocess.run(
            [*base, *command],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        (line,) = done.stderr.splitlines()
        error = json.loads(line)["error"]
        assert error["code"] == "sessions-not-directory", error
        assert str(not_dir) in error["message"] and "regular file" in error["message"]
        assert not (tmp_path / "s.db").exists()  # refused before the store was opened
