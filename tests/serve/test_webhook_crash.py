"""SIGKILL around the group commit of webhook deliveries (schedlog/host/webhook_commit.py,
issue 21): ``host serve --deliver-to`` dies (``SCHEDLOG_CRASHPOINT``) after the receiver
acknowledged a burst, before or after its one transaction; a restart on the same store gives
every reminder exactly once after the receiver's dedupe by ``messageId``, and none twice once
committed. Waits are bounded (30 s)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from schedlog.host.stores.open import read_tasks  # noqa: E402
from tests.serve.process import start_serve  # noqa: E402
from tests.serve.receiver import Inbox, start_receiver  # noqa: E402

SECRET = "webhook-secret-0123456789"
SESSIONS = ["s-1", "s-2", "s-3"]


@pytest.mark.parametrize("point", ["webhook.before_commit", "webhook.after_commit"])
def test_a_kill_around_the_group_commit_loses_and_doubles_nothing(
    tmp_path: Path, point: str
) -> None:
    inbox = Inbox(SECRET.encode())
    receiver = start_receiver(inbox)
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    store = tmp_path / "schedule.db"
    args = ["--deliver-to", hook, "--retry-base-ms", "200"]
    env = {"SCHEDLOG_WEBHOOK_SECRET": SECRET}
    try:
        server = start_serve(store, args, env={**env, "SCHEDLOG_CRASHPOINT": point})
        ids = []
        with httpx.Client(headers=server.headers, timeout=httpx.Timeout(30.0)) as client:
            for session in SESSIONS:
                created = client.post(
                    f"{server.url}/sessions/{session}/tools/schedule_create",
                    json={"prompt": "Stretch", "title": "Stretch", "after_seconds": 2},
                )
                assert created.status_code == 200, created.text
                ids.append(created.json()["id"])
        server.proc.wait(timeout=30)
        code, _ = server.stop()
        assert code == -signal.SIGKILL
        first = len(inbox.received)
        assert first >= 1
        committed = {t.task.record.id for t in read_tasks(store) if t.task.status == "inactive"}
        if point == "webhook.after_commit":
            assert committed  # the kill came after a commit
        else:
            assert not committed
        again = start_serve(store, args, env=env)
        try:
            assert inbox.wait_for(3, 30)
            with httpx.Client(headers=again.headers, timeout=httpx.Timeout(30.0)) as client:
                for _ in range(300):  # bounded: until every reminder is committed
                    items = client.get(f"{again.url}/tasks").json()["items"]
                    if all(item["status"] == "inactive" for item in items):
                        break
                    inbox.wait_for(4, 0.1)
                assert sorted(item["id"] for item in items) == sorted(ids)
                assert all(item["status"] == "inactive" for item in items)
                for session, task_id in zip(SESSIONS, ids, strict=True):
                    url = f"{again.url}/sessions/{session}/tasks/{task_id}/history"
                    records = client.get(url).json()["records"]
                    assert len(records) == 1  # committed once
                    assert records[0]["messageId"] in inbox.by_id
        finally:
            code, stderr = again.stop()
        assert code == 0, stderr
    finally:
        receiver.shutdown()
        receiver.server_close()
    members = [r["id"] for m in inbox.by_id.values() for r in m["reminders"]]
    assert sorted(members) == sorted(ids)  # exactly once after the dedupe
    if point == "webhook.after_commit":
        # What was committed before the kill is never posted again. A group acknowledged but
        # not yet in that commit (its reminder fell due a moment later) may be posted again.
        for message in inbox.by_id.values():
            posts = sum(m["messageId"] == message["messageId"] for m in inbox.received)
            if any(r["id"] in committed for r in message["reminders"]):
                assert posts == 1
    else:
        assert len(inbox.received) > len(inbox.by_id)  # acknowledged, not committed: again
