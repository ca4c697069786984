"""Webhook delivery by several hosts (docs/http-api.md#webhook-delivery, docs/decisions.md
"Webhook delivery with several hosts"): two ``schedlog host serve --deliver-to`` processes on
one fresh PostgreSQL database and one receiver that fails 30% of calls. Every reminder reaches
the receiver, exactly once after dedupe by messageId, and none is committed without a 2xx.
Waits poll with deadlines; nothing sleeps to synchronise.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any

import pytest

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from schedlog.cli.main import main  # noqa: E402
from tests import pg  # noqa: E402
from tests.serve.process import ServeProcess, start_serve  # noqa: E402
from tests.serve.receiver import Inbox, start_receiver  # noqa: E402

psycopg = pg.require_psycopg()

SECRET = "webhook-secret-0123456789"
TOKEN = "hosts-token-0123456789abcdef"
#: Reminders delivered; ``SCHEDLOG_WEBHOOK_HOSTS_N`` raises it for a longer run (at most 500).
N = min(500, int(os.environ.get("SCHEDLOG_WEBHOOK_HOSTS_N", "30")))


def test_deliver_to_on_postgres_needs_a_token_source(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No sessions directory and no file beside a URL: the token must come from somewhere."""
    monkeypatch.delenv("SCHEDLOG_TOKEN", raising=False)
    monkeypatch.setenv("SCHEDLOG_WEBHOOK_SECRET", SECRET)
    args = ["host", "serve", "--store", url, "--deliver-to", "http://127.0.0.1:9/hook"]
    assert main([*args, "--listen", "127.0.0.1:0"]) == 1
    err = capsys.readouterr().err
    assert '"code":"token-file"' in err and "--token-file" in err and "SCHEDLOG_TOKEN" in err


def catalog(client: httpx.Client, server: ServeProcess) -> list[dict[str, Any]]:
    response = client.get(f"{server.url}/tasks", params={"limit": 500})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def test_two_hosts_deliver_every_reminder_once_after_dedupe(url: str) -> None:
    inbox = Inbox(SECRET.encode(), fail_rate=0.3, seed=14)
    receiver = start_receiver(inbox)
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    env = {"SCHEDLOG_WEBHOOK_SECRET": SECRET, "SCHEDLOG_TOKEN": TOKEN}
    args = ["--deliver-to", hook, "--retry-base-ms", "100", "--retry-cap-ms", "800"]
    servers: list[ServeProcess] = []
    try:
        servers = [start_serve(url, args, env=env) for _ in range(2)]
        with httpx.Client(headers=servers[0].headers, timeout=httpx.Timeout(30.0)) as client:
            ids: list[str] = []
            for i in range(N):  # created through both hosts, over five sessions
                server = servers[i % 2]
                created = client.post(
                    f"{server.url}/sessions/s-{i % 5}/tools/schedule_create",
                    json={"prompt": f"Reminder {i}", "title": f"r{i}", "after_seconds": 1},
                )
                assert created.status_code == 200, created.text
                ids.append(created.json()["id"])
            deadline = time.monotonic() + 120
            while True:  # poll until every task is committed (or the deadline)
                items = catalog(client, servers[1])
                if sum(item["status"] == "inactive" for item in items) == N:
                    break
                assert time.monotonic() < deadline, items
                inbox.wait_for(N + 1, 0.2)  # waits on the receiver's condition, bounded
            histories = {}
            for i, task_id in enumerate(ids):
                page = client.get(
                    f"{servers[i % 2].url}/sessions/s-{i % 5}/tasks/{task_id}/history"
                )
                assert page.status_code == 200, page.text
                histories[task_id] = page.json()["records"]
    finally:
        codes = [server.stop() for server in servers]
        receiver.shutdown()
        receiver.server_close()
    assert [code for code, _ in codes] == [0] * len(servers), [err for _, err in codes]
    assert inbox.bad_signatures == 0
    assert inbox.failures > 0  # the receiver did refuse some calls: retries happened
    # Every reminder reached the receiver in a 2xx'd message, exactly once after dedupe.
    per_task = Counter(r["id"] for m in inbox.by_id.values() for r in m["reminders"])
    assert per_task == Counter(ids)
    # Every commit names a message the receiver acknowledged, holding that reminder.
    for task_id, records in histories.items():
        assert len(records) == 1, records
        message = inbox.by_id.get(records[0]["messageId"])
        assert message is not None, (task_id, records)
        assert task_id in {r["id"] for r in message["reminders"]}
    # The hosts stopped cleanly: no claim is left behind.
    with psycopg.connect(url, autocommit=True) as conn:
        left = conn.execute("SELECT count(*) FROM schedlog_tasks WHERE lease_owner IS NOT NULL")
        assert left.fetchone() == (0,)


def test_a_host_killed_mid_post_is_taken_over_with_the_same_message_id(url: str) -> None:
    """The receiver holds the first POST; the host making it is killed with SIGKILL; the other
    host takes the reminder over once the dead host's lease ends (30 s on the database clock)
    and posts the same messageId, which it commits."""
    release, reached = threading.Event(), threading.Event()
    held: list[str] = []

    def hold_first(message: dict[str, Any]) -> None:
        if not held:  # the first accepted call waits until its host is dead
            held.append(message["messageId"])
            reached.set()
            release.wait(60)

    inbox = Inbox(SECRET.encode(), on_accept=hold_first)
    receiver = start_receiver(inbox)
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    env = {"SCHEDLOG_WEBHOOK_SECRET": SECRET, "SCHEDLOG_TOKEN": TOKEN}
    servers: list[ServeProcess] = []
    try:
        servers = [start_serve(url, ["--deliver-to", hook], env=env) for _ in range(2)]
        with httpx.Client(headers=servers[0].headers, timeout=httpx.Timeout(30.0)) as client:
            created = client.post(
                f"{servers[0].url}/sessions/s-1/tools/schedule_create",
                json={"prompt": "Stretch", "title": "Stretch", "after_seconds": 1},
            )
            assert created.status_code == 200, created.text
            task_id = created.json()["id"]
            assert reached.wait(30)  # the POST has reached the receiver, which holds it
            with psycopg.connect(url, autocommit=True) as conn:
                (owner,) = conn.execute(
                    "SELECT lease_owner FROM schedlog_tasks WHERE id = %s", (task_id,)
                ).fetchone() or (None,)
            assert owner is not None
            pid = int(owner.split(":")[-2])
            (victim,) = [s for s in servers if s.proc.pid == pid]
            (survivor,) = [s for s in servers if s is not victim]
            victim.proc.kill()
            victim.proc.wait(30)
            release.set()  # the receiver answers a host that is no longer there
            deadline = time.monotonic() + 90  # the dead host's lease (30 s), then a delivery
            while True:
                page = client.get(f"{survivor.url}/sessions/s-1/tasks/{task_id}/history")
                assert page.status_code == 200, page.text
                records = page.json()["records"]
                if records:
                    break
                if time.monotonic() >= deadline:  # say where the task stands, for the report
                    with psycopg.connect(url, autocommit=True) as conn:
                        row = conn.execute(
                            "SELECT status, next_at, lease_owner, lease_until, now() "
                            "FROM schedlog_tasks WHERE id = %s",
                            (task_id,),
                        ).fetchone()
                    _, err = survivor.stop()
                    pytest.fail(
                        f"no delivery by the survivor (pid {survivor.proc.pid}) within 90 s: "
                        f"{row}, receiver calls {inbox.calls}; its stderr:\n{err[-4000:]}"
                    )
                inbox.wait_for(2, 0.2)
    finally:
        release.set()
        codes = [server.stop() for server in servers]
        receiver.shutdown()
        receiver.server_close()
    assert codes[servers.index(survivor)][0] == 0, codes
    assert [m["messageId"] for m in inbox.received] == held * 2  # sent twice, one messageId
    assert [r["messageId"] for r in records] == held
