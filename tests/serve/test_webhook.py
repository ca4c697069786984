"""Webhook delivery (docs/http-api.md#webhook-delivery) in process, on a virtual clock: the
payload and its signature, commit only after a 2xx, the same messageId on every attempt,
capped exponential backoff, and the ``retrying`` state in the HTTP catalog only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402
import msgspec  # noqa: E402

from schedlog.host.retry import Backoff  # noqa: E402
from schedlog.host.webhook import (  # noqa: E402
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookError,
    WebhookSink,
    sign,
    verify,
)
from schedlog.runtime.clock import VirtualClock  # noqa: E402
from schedlog.serve import bodies  # noqa: E402
from schedlog.serve.webhook import SecretError, check_url, load_secret  # noqa: E402
from tests.host.helpers import T0  # noqa: E402
from tests.serve.support import running_api  # noqa: E402

SECRET = b"s" * 32


class Receiver:
    """An httpx mock receiver answering from a script of statuses (or exceptions)."""

    def __init__(self, script: list[int | type[Exception]]) -> None:
        self.script = script
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        outcome = self.script.pop(0) if self.script else 200
        if isinstance(outcome, type):
            raise outcome("scripted failure")
        return httpx.Response(outcome)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


def webhook(receiver: Receiver) -> Callable[[VirtualClock], tuple[Any, Backoff]]:
    def make(clock: VirtualClock) -> tuple[Any, Backoff]:
        sink = WebhookSink(
            "http://receiver.test/hook",
            SECRET,
            clock,
            transport=httpx.MockTransport(receiver.handler),
        )
        return sink.post, Backoff(base_ms=1_000, cap_ms=4_000)

    return make


def test_a_due_group_is_posted_signed_and_committed_after_2xx(tmp_path: Path) -> None:
    receiver = Receiver([200])
    with running_api(tmp_path, webhook=webhook(receiver)) as api:
        view = api.create(after_seconds=60, prompt="Stretch")
        api.run_until(T0 + 60_000)
        (request,) = receiver.requests
        body = receiver.bodies()[0]
        assert body == {
            "messageId": body["messageId"],
            "sessionId": "s-1",
            "text": body["text"],
            "occurrenceAt": view["scheduledAt"],
            "reminders": [
                {"id": view["id"], "occurrenceAt": view["scheduledAt"], "prompt": "Stretch"}
            ],
            "createdAt": view["scheduledAt"],
        }
        assert body["text"].startswith("[SCHEDULE REMINDER]")
        stamp = int(request.headers[TIMESTAMP_HEADER])
        assert stamp == (T0 + 60_000) // 1000
        assert request.headers[SIGNATURE_HEADER] == sign(SECRET, stamp, request.content)
        assert verify(SECRET, dict(request.headers), request.content, stamp)
        history = api.client.get(f"/v1/sessions/s-1/tasks/{view['id']}/history").json()
        assert [r["messageId"] for r in history["records"]] == [body["messageId"]]
        assert not api.sessions.exists()  # no session log is written


@pytest.mark.parametrize("failure", [500, 404, 302, httpx.ConnectError, httpx.ReadTimeout])
def test_failures_are_retried_with_capped_backoff_then_committed(
    tmp_path: Path, failure: int | type[Exception]
) -> None:
    receiver = Receiver([failure] * 5)
    with running_api(tmp_path, webhook=webhook(receiver)) as api:
        view = api.create(after_seconds=60)
        due = T0 + 60_000
        api.run_until(due)
        assert len(receiver.requests) == 1
        entry = api.client.get("/v1/tasks").json()["items"][0]
        assert entry["status"] == "retrying"
        assert entry["retry"]["attempts"] == 1
        assert entry["retry"]["nextAttemptAt"] == "2026-05-01T06:01:01.000Z"  # due + 1 s
        assert entry["scheduledAt"] == view["scheduledAt"] and "lastDelivery" not in entry
        msgspec.convert(entry, bodies.CatalogEntry, strict=True)
        retrying = api.client.get("/v1/tasks", params={"status": "retrying"}).json()["items"]
        assert [e["id"] for e in retrying] == [view["id"]]
        # The tool and the remote list never show the retry state.
        listed = api.tool("s-1", "schedule_list", {}).json()
        assert listed[0]["state"] == "overdue" and "retry" not in listed[0]
        # Attempts at +1, +2, +4, +4 (capped), then the sixth succeeds at +4 more.
        attempts = [due]
        for delay in (1_000, 2_000, 4_000, 4_000, 4_000):
            api.run_until(attempts[-1] + delay - 1)
            assert len(receiver.requests) == len(attempts)
            api.run_until(attempts[-1] + delay)
            attempts.append(attempts[-1] + delay)
            assert len(receiver.requests) == len(attempts)
        ids = {b["messageId"] for b in receiver.bodies()}
        assert len(ids) == 1  # the idempotency key is the same on every attempt
        entry = api.client.get("/v1/tasks").json()["items"][0]
        assert entry["status"] == "inactive" and "retry" not in entry
        assert entry["lastDelivery"]["messageId"] in ids
        api.run_until(attempts[-1] + 60_000)
        assert len(receiver.requests) == 6  # nothing more once committed


def test_an_edit_or_delete_forgets_the_retry_state(tmp_path: Path) -> None:
    receiver = Receiver([500] * 100)
    with running_api(tmp_path, webhook=webhook(receiver)) as api:
        view = api.create(every_seconds=3600)
        due = T0 + 3_600_000
        api.run_until(due + 1_000)
        assert api.client.get("/v1/tasks").json()["items"][0]["retry"]["attempts"] == 2
        updated = api.tool("s-1", "schedule_update", {"id": view["id"], "title": "Edited"})
        assert updated.status_code == 200
        api.run_until(due + 1_000)  # the edit forgot the state; its drive failed once more
        retry = api.client.get("/v1/tasks").json()["items"][0]["retry"]
        assert retry == {
            "attempts": 1,
            "nextAttemptAt": "2026-05-01T07:00:02.000Z",
            "lastError": "the webhook receiver answered 500",
        }
        assert len(receiver.requests) == 3
        api.client.delete(f"/v1/sessions/s-1/tasks/{view['id']}")
        assert api.service.backoff is not None
        assert api.service.backoff.state(view["id"]) is None
        api.run_until(due + 60_000)
        assert len(receiver.requests) == 3


def test_the_receiver_check_refuses_stale_or_forged_requests() -> None:
    body = b'{"messageId":"m"}'
    good = {TIMESTAMP_HEADER: "1000", SIGNATURE_HEADER: sign(SECRET, 1000, body)}
    assert verify(SECRET, good, body, 1000)
    assert not verify(SECRET, good, body + b" ", 1000)
    assert not verify(b"x" * 32, good, body, 1000)
    assert not verify(SECRET, good, body, 1000 + 301)
    assert not verify(SECRET, {**good, TIMESTAMP_HEADER: "999"}, body, 1000)
    assert not verify(SECRET, {}, body, 1000)


def test_backoff_delays() -> None:
    backoff = Backoff(base_ms=1_000, cap_ms=300_000)
    assert [backoff.delay_ms(n) for n in (1, 2, 3, 9, 10, 100)] == [
        1_000,
        2_000,
        4_000,
        256_000,
        300_000,
        300_000,
    ]
    with pytest.raises(ValueError):
        Backoff(base_ms=0)


def test_secret_and_url_configuration(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("k" * 20 + "\n")
    path.chmod(0o600)
    assert load_secret(str(path), {}) == b"k" * 20
    assert load_secret(None, {"SCHEDLOG_WEBHOOK_SECRET": "e" * 16}) == b"e" * 16
    path.chmod(0o644)
    with pytest.raises(SecretError, match="0600"):
        load_secret(str(path), {})
    with pytest.raises(SecretError, match="needs"):
        load_secret(None, {})
    with pytest.raises(SecretError, match="16"):
        load_secret(None, {"SCHEDLOG_WEBHOOK_SECRET": "short"})
    assert check_url("http://127.0.0.1:9/hook")
    for bad in ("ftp://x/y", "127.0.0.1:9", "http:///nohost"):
        with pytest.raises(SecretError):
            check_url(bad)


def test_webhook_error_names_the_failure() -> None:
    assert "answered 500" in str(WebhookError("the webhook receiver answered 500"))


#: The example of docs/http-api.md#webhook-delivery, computed outside the project (openssl).
KNOWN_SECRET = b"whsec-example-0123456789abcdef"
KNOWN_BODY = b'{"messageId":"schedule-message-1"}'
KNOWN_SIGNATURE = "v1=7a32cd9916dcc3d652fe1a44a9c25f4f3cdaee762121dd9c12aafe5285ca64a3"


def test_the_signature_matches_the_documented_known_answer() -> None:
    assert sign(KNOWN_SECRET, 1777615200, KNOWN_BODY) == KNOWN_SIGNATURE
    headers = {TIMESTAMP_HEADER: "1777615200", SIGNATURE_HEADER: KNOWN_SIGNATURE}
    assert verify(KNOWN_SECRET, headers, KNOWN_BODY, 1777615200)
    page = (Path(__file__).resolve().parents[2] / "docs" / "http-api.md").read_text("utf-8")
    assert KNOWN_SIGNATURE in page and KNOWN_BODY.decode() in page and "1777615200" in page
    assert KNOWN_SECRET.decode() in page
