"""``GET /v1/events`` resumes after an event id given as the ``Last-Event-ID`` header or as the
``?lastEventId=`` query parameter (docs/http-api.md#events; EventSource cannot set headers on
a first connection), through the whole application."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.serve.deps import require_serve

require_serve()

from tests.serve.support import TOKEN, Api, running_api  # noqa: E402


async def _first_event_id(app: Any, query: bytes, headers: list[tuple[bytes, bytes]]) -> str:
    """The id of the first event frame the stream sends (a replayed one when resuming)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/v1/events",
        "raw_path": b"/v1/events",
        "root_path": "",
        "query_string": query,
        "headers": [
            (b"host", b"127.0.0.1:8765"),
            (b"authorization", f"Bearer {TOKEN}".encode()),
            *headers,
        ],
        "server": ("127.0.0.1", 8765),
        "client": ("127.0.0.1", 40000),
    }
    frames: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        body = message.get("body", b"")
        if message["type"] == "http.response.body" and body.startswith(b"id: "):
            frames.append(body)
            done.set()

    call = asyncio.ensure_future(app(scope, receive, send))
    try:
        await asyncio.wait_for(done.wait(), 10)  # a failure guard only: replay is immediate
    finally:
        done.set()
        await asyncio.wait_for(call, 10)
    return frames[0].split(b"\n")[0].removeprefix(b"id: ").decode()


@pytest.fixture
def api_with_events(tmp_path: Path) -> Any:
    with running_api(tmp_path) as api:
        api.create("s-1")
        api.create("s-1")
        yield api


def _ids(api: Api) -> tuple[str, str]:
    hub = api.app.state.serve.hub
    return f"{hub.epoch}-1", f"{hub.epoch}-2"


def test_resume_with_the_query_parameter(api_with_events: Api) -> None:
    first, second = _ids(api_with_events)
    got = api_with_events.call(
        _first_event_id, api_with_events.app, f"lastEventId={first}".encode(), []
    )
    assert got == second


def test_resume_with_the_header(api_with_events: Api) -> None:
    first, second = _ids(api_with_events)
    headers = [(b"last-event-id", first.encode())]
    assert api_with_events.call(_first_event_id, api_with_events.app, b"", headers) == second
