"""Security by default (docs/http-api.md#security): tokens, Host allow-list, body limit, CORS,
event-client limit, and sessions isolated from each other, on every route of the document."""

from __future__ import annotations

import asyncio
import hmac
import os
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.serve import auth  # noqa: E402
from schedlog.serve.auth import MAX_BODY_BYTES, Guard, TokenError, load_token  # noqa: E402
from schedlog.serve.openapi import openapi  # noqa: E402
from tests.serve.support import AUTH, TOKEN, Api, Client, running_api  # noqa: E402

OPEN = {"/healthz", "/readyz", "/openapi.json"}


def operations() -> Iterator[tuple[str, str, bool]]:
    """(method, path with parameters filled, secured) of every documented operation."""
    for path, item in openapi()["paths"].items():
        for method, op in item.items():
            filled = path.replace("{sessionId}", "s-1").replace("{id}", "schedule-x")
            yield method.upper(), filled, "security" in op


def test_the_document_lists_every_route() -> None:
    ops = list(operations())
    # with GET .../tasks/{id}, POST /v1/rules/preview and the two sign-in routes (the web page),
    # and the four routes of pause and resume (their two tool routes and POST .../pause|resume)
    assert len(ops) == 21
    assert {p for _, p, secured in ops if not secured} == {"/healthz", "/readyz", "/v1/signin"}
    assert all(p.startswith("/v1/") for _, p, secured in ops if secured)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-0123456789abcd"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": "Bearer"},
    ],
)
def test_every_secured_route_needs_the_token(api: Api, headers: dict[str, str]) -> None:
    client = api.anonymous(headers)
    for method, path, secured in operations():
        if not secured:
            continue
        response = client.request(method, path, json={})
        assert response.status_code == 401, (method, path)
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.headers["www-authenticate"].startswith("Bearer")
    unknown = client.get("/v1/anything-else")
    assert unknown.status_code == 401
    assert client.get("/healthz").status_code == 200
    assert client.get("/openapi.json").status_code == 200


def test_the_token_is_compared_in_constant_time(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    assert api.anonymous({"Authorization": "Bearer nope"}).get("/v1/tasks").status_code == 401
    assert api.client.get("/v1/tasks").status_code == 200
    assert calls == [(b"nope", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.2:8765", "x"])
def test_a_wrong_host_is_refused_on_every_route(api: Api, host: str) -> None:
    client = api.anonymous({**AUTH, "Host": host})
    for method, path, _secured in [*operations(), ("GET", "/openapi.json", False)]:
        response = client.request(method, path, json={})
        assert response.status_code == 421, (method, path)
        assert response.json()["error"]["code"] == "misdirected_request"


@pytest.mark.parametrize(
    "host", ["localhost.evil.example", "127.0.0.1.nip.io:8765", "127.0.0.1:87650", "localhost:8"]
)
def test_a_host_that_starts_like_an_allowed_one_is_refused(api: Api, host: str) -> None:
    """A match by prefix would let these through (issue 22, tests that would not catch a bug)."""
    answer = api.anonymous({**AUTH, "Host": host}).get("/v1/tasks")
    assert answer.status_code == 421, host
    assert answer.json()["error"]["code"] == "misdirected_request"


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "LOCALHOST", "[::1]:8765"])
def test_loopback_hosts_are_allowed(api: Api, host: str) -> None:
    assert api.anonymous({**AUTH, "Host": host}).get("/v1/tasks").status_code == 200


def test_a_request_without_host_is_refused() -> None:
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the guard let the request through")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    guard = Guard(app, token=TOKEN, hosts=frozenset({"127.0.0.1"}))
    scope = {"type": "http", "path": "/healthz", "headers": [], "method": "GET"}
    asyncio.run(guard(scope, receive, send))
    assert sent[0]["status"] == 400


def body_operations() -> Iterator[tuple[str, str]]:
    """The documented operations that take a body."""
    for path, item in openapi()["paths"].items():
        for method, op in item.items():
            if "requestBody" in op:
                filled = path.replace("{sessionId}", "s-1").replace("{id}", "schedule-x")
                yield method.upper(), filled


def test_an_oversized_body_is_413_on_every_body_route(api: Api) -> None:
    big = b'{"prompt":"' + b"x" * MAX_BODY_BYTES + b'"}'
    ops = list(body_operations())
    assert len(ops) == 11  # with POST /v1/rules/preview, POST /v1/signin and pause | resume
    for method, path in ops:
        declared = api.client.request(method, path, content=big)
        assert declared.status_code == 413, (method, path)
        assert declared.json()["error"]["code"] == "payload_too_large"

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(0, len(big), 65536):
                yield big[i : i + 65536]

        chunked = api.client.request(
            method, path, content=chunks(), headers={"content-type": "application/json"}
        )
        assert chunked.status_code == 413, (method, path)
    # A body of exactly the limit is read (padded with whitespace: a prompt that long is over
    # the prompt limit, docs/http-api.md#limits).
    body = b'{"prompt":"p","title":"t","after_seconds":60}'
    exact = body[:-1] + b" " * (MAX_BODY_BYTES - len(body)) + b"}"
    assert len(exact) == MAX_BODY_BYTES
    accepted = api.client.post("/v1/sessions/s-1/tools/schedule_create", content=exact)
    assert accepted.status_code == 200


def test_no_cors_unless_configured(api: Api, tmp_path: Path) -> None:
    preflight = {
        "Origin": "http://evil.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    response = api.client.request("OPTIONS", "/v1/tasks", headers=preflight)
    assert "access-control-allow-origin" not in response.headers
    plain = api.client.get("/v1/tasks", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in plain.headers
    (tmp_path / "cors").mkdir()
    with running_api(tmp_path / "cors", cors_origins=("http://app.example",)) as configured:
        allowed = configured.client.request(
            "OPTIONS", "/v1/tasks", headers={**preflight, "Origin": "http://app.example"}
        )
        assert allowed.headers["access-control-allow-origin"] == "http://app.example"
        refused = configured.client.get("/v1/tasks", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in refused.headers


def test_event_streams_are_limited(api: Api) -> None:
    hub = api.app.state.serve.hub
    streams = [hub.open(None) for _ in range(hub.max_clients)]
    response = api.client.get("/v1/events")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "too_many_clients"
    for stream in streams:
        api.call(stream.aclose)


def test_cross_session_access_is_schedule_not_found(api: Api) -> None:
    owned = [api.create("s-a", after_seconds=60 * (i + 1)) for i in range(10)]
    record = api.client.get("/v1/sessions/s-a/tasks").json()
    by_id = {r["id"]: r for r in record}
    other: Client = api.client
    checked = 0
    for view in owned:
        task_id = view["id"]
        for session in ("s-b", "s-a ", "S-A", "s"):
            base = f"/v1/sessions/{session}"
            tool_delete = other.post(f"{base}/tools/schedule_delete", json={"id": task_id})
            assert tool_delete.status_code == 404
            assert tool_delete.json()["code"] == "schedule_not_found"
            tool_update = other.post(
                f"{base}/tools/schedule_update", json={"id": task_id, "title": "stolen"}
            )
            assert tool_update.status_code == 404
            assert tool_update.json()["code"] == "schedule_not_found"
            for response in (
                other.get(f"{base}/tasks/{task_id}/history"),
                other.put(f"{base}/tasks/{task_id}", json={"expected": by_id[task_id]}),
                other.put(
                    f"{base}/tasks/{task_id}",
                    json={"expected": by_id[task_id], "title": "stolen"},
                ),
                other.delete(f"{base}/tasks/{task_id}"),
            ):
                assert response.status_code == 404
                assert response.json()["error"]["code"] == "schedule_not_found"
                checked += 1
            assert task_id not in str(other.get(f"{base}/tasks").json())
            assert task_id not in str(other.post(f"{base}/tools/schedule_list", json={}).json())
    assert checked == 10 * 4 * 4
    assert api.client.get("/v1/sessions/s-a/tasks").json() == record  # nothing changed


def test_the_token_file_is_created_0600_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "store.db.token"
    token, where = load_token(path, environ={})
    assert where == path and len(token) >= 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_token(path, environ={}) == (token, path)
    assert load_token(path, environ={"SCHEDLOG_TOKEN": "e" * 20}) == ("e" * 20, None)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_token_file_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "t.token"
    path.write_text("k" * 40)
    path.chmod(mode)
    with pytest.raises(TokenError, match="0600"):
        load_token(path, environ={})


@pytest.mark.parametrize("text", ["", "short", "has a space in it and is long"])
def test_weak_tokens_are_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "t.token"
    path.write_text(text)
    path.chmod(0o600)
    with pytest.raises(TokenError, match="at least 16"):
        load_token(path, environ={})
    if text:  # an empty SCHEDLOG_TOKEN is unset: the file is used
        with pytest.raises(TokenError, match="SCHEDLOG_TOKEN"):
            load_token(tmp_path / "unused", environ={"SCHEDLOG_TOKEN": text})
