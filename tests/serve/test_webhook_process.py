"""Acceptance: ``schedlog host serve --deliver-to URL`` in a subprocess. A reminder created over
HTTP reaches a loopback webhook receiver, signed; the receiver's first answer is a 503, so the
delivery is retried (``retrying`` on /v1/events) and committed only after the 2xx, and
``history`` shows the receiver's messageId. Waits are bounded (30 s)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from tests.serve.process import start_serve  # noqa: E402
from tests.serve.receiver import Inbox, start_receiver  # noqa: E402
from tests.serve.test_serve_process import read_events  # noqa: E402

SECRET = "webhook-secret-0123456789"


def test_serve_delivers_to_a_webhook_with_retry(tmp_path: Path) -> None:
    inbox = Inbox(SECRET.encode(), fail_first=1)
    receiver = start_receiver(inbox)
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    store = tmp_path / "schedule.db"
    server = start_serve(
        store,
        ["--deliver-to", hook, "--retry-base-ms", "200"],
        env={"SCHEDLOG_WEBHOOK_SECRET": SECRET},
    )
    try:
        with httpx.Client(headers=server.headers, timeout=httpx.Timeout(30.0)) as client:
            with client.stream("GET", f"{server.url}/events") as stream:
                created = client.post(
                    f"{server.url}/sessions/s-1/tools/schedule_create",
                    json={"prompt": "Stretch", "title": "Stretch", "after_seconds": 1},
                )
                assert created.status_code == 200, created.text
                task_id = created.json()["id"]
                kinds = [json.loads(e["data"])["kind"] for e in read_events(stream, 3)]
            assert kinds == ["created", "retrying", "delivered"]
            assert inbox.wait_for(1, 30)
            assert inbox.calls == 2 and inbox.failures == 1 and inbox.bad_signatures == 0
            (message,) = inbox.by_id.values()
            assert message["sessionId"] == "s-1"
            assert message["reminders"][0]["id"] == task_id
            assert message["reminders"][0]["prompt"] == "Stretch"
            history = client.get(f"{server.url}/sessions/s-1/tasks/{task_id}/history").json()
            assert [r["messageId"] for r in history["records"]] == [message["messageId"]]
            entry = client.get(f"{server.url}/tasks").json()["items"][0]
            assert entry["status"] == "inactive" and "retry" not in entry
    finally:
        code, stderr = server.stop()
        receiver.shutdown()
        receiver.server_close()
    assert code == 0, stderr
