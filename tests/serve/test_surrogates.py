"""Lone surrogates on every HTTP read path, on every backend, after a restart too (issue 22
item 1; docs/protocol.md#json-output: a lone surrogate is kept and written back as ``\\udxxx``).

Tool arguments come from the model, and JSON input may carry ``\\ud800``-style escapes: a
create must answer 200 (or an error and store nothing), and every later read must answer the
escape exactly as it came in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.host.changes import TaskChange  # noqa: E402
from schedlog.runtime.clock import VirtualClock  # noqa: E402
from schedlog.serve.sse import EventHub  # noqa: E402
from tests import pg  # noqa: E402
from tests.serve.support import Api, running_api  # noqa: E402

TITLE = b'"x\\ud800<&\\"y"'
PROMPT = b'"p\\udc00q\\udbff"'
CREATE = b'{"title":' + TITLE + b',"prompt":' + PROMPT + b',"after_seconds":3600}'
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    yield from pg.fresh_database()


@pytest.fixture(params=["sqlite", "json", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    if request.param == "postgresql":
        url = str(request.getfixturevalue("pg_database"))
        pg.reset(url)
        return url
    return tmp_path / ("store.json" if request.param == "json" else "store.db")


def _create(api: Api) -> str:
    answer = api.client.post("/v1/sessions/a/tools/schedule_create", content=CREATE, headers=JSON)
    assert answer.status_code == 200, answer.text
    assert b'"title":' + TITLE in answer.content and b'"prompt":' + PROMPT in answer.content
    task_id: str = answer.json()["id"]
    return task_id


def _check_reads(api: Api, task_id: str) -> None:
    for method, url, body in [
        ("GET", "/v1/tasks", None),
        ("GET", "/v1/tasks?title=x", None),
        ("GET", "/v1/sessions/a/tasks", None),
        ("GET", f"/v1/sessions/a/tasks/{task_id}", None),
        ("POST", "/v1/sessions/a/tools/schedule_list", b"{}"),
    ]:
        answer = api.client.request(method, url, content=body, headers=JSON)
        assert answer.status_code == 200, (url, answer.text)
        assert b'"title":' + TITLE in answer.content, url
        assert b'"prompt":' + PROMPT in answer.content, url
        assert answer.json() is not None  # the escapes decode back (to lone surrogates)
    explained = api.client.get(f"/v1/tasks/{task_id}/explain")
    assert explained.status_code == 200, explained.text


def _update_title(api: Api, task_id: str) -> None:
    """The record as listed (lone surrogates and all) is the ``expected`` of an update."""
    listed = api.client.get("/v1/sessions/a/tasks")
    record = listed.content[1:-1]  # the one record, as the server wrote it
    body = b'{"expected":' + record + b',"title":"t\\udfff"}'
    answer = api.client.put(f"/v1/sessions/a/tasks/{task_id}", content=body, headers=JSON)
    assert answer.status_code == 200, answer.text
    assert b'"title":"t\\udfff"' in answer.content and b'"prompt":' + PROMPT in answer.content


def test_a_lone_surrogate_round_trips_on_every_read_path(tmp_path: Path, store: Path | str) -> None:
    with running_api(tmp_path, store=store) as api:
        task_id = _create(api)
        _check_reads(api, task_id)
    with running_api(tmp_path, store=store) as api:  # a restart over the same store
        _check_reads(api, task_id)
        _update_title(api, task_id)
    with running_api(tmp_path, store=store) as api:
        listed = api.client.get("/v1/tasks")
        assert listed.status_code == 200 and b'"title":"t\\udfff"' in listed.content


def test_an_error_answer_stores_nothing(tmp_path: Path, store: Path | str) -> None:
    with running_api(tmp_path, store=store) as api:
        bad = b'{"title":"x\\ud800","prompt":"","after_seconds":3600}'
        answer = api.client.post("/v1/sessions/a/tools/schedule_create", content=bad, headers=JSON)
        assert answer.status_code == 422, answer.text
        assert api.client.get("/v1/tasks").json()["items"] == []


def test_sse_frames_carry_a_lone_surrogate_as_an_escape() -> None:
    class Source:
        listener = None

        def subscribe_changes(self, listener):  # type: ignore[no-untyped-def]
            self.listener = listener
            return lambda: None

    async def main() -> bytes:
        source = Source()
        hub = EventHub(source, 7)  # type: ignore[arg-type]
        stream = hub.open(None)
        got = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)
        assert source.listener is not None
        source.listener(TaskChange("schedule-1", "s\ud800", "created"))
        frame = b""
        while not frame.startswith(b"id:"):
            frame = await got
            got = asyncio.ensure_future(anext(stream))
        got.cancel()
        hub.close()
        return frame

    frame = asyncio.run(main())
    assert b'"sessionId":"s\\ud800"' in frame


def test_a_webhook_delivers_a_lone_surrogate_prompt_once(tmp_path: Path, store: Path | str) -> None:
    import httpx

    from schedlog.host.retry import Backoff
    from schedlog.host.webhook import WebhookSink
    from tests.host.helpers import T0

    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200)

    def make(clock: VirtualClock) -> tuple[Any, Backoff]:
        transport = httpx.MockTransport(handler)
        sink = WebhookSink("http://receiver.test/hook", b"s" * 32, clock, transport=transport)
        return sink.post, Backoff(base_ms=1_000, cap_ms=4_000)

    with running_api(tmp_path, store=store, webhook=make) as api:
        _create(api)
        api.run_until(T0 + 3_600_000 + 60_000)
        assert len(seen) == 1, seen
        assert b'"prompt":' + PROMPT in seen[0]
        listed = api.client.get("/v1/tasks?status=inactive").json()["items"]
        assert len(listed) == 1 and listed[0]["status"] == "inactive"


def test_a_session_log_gets_a_lone_surrogate_prompt_once(tmp_path: Path, store: Path | str) -> None:
    from tests.host.helpers import T0

    with running_api(tmp_path, store=store) as api:
        _create(api)
        api.run_until(T0 + 3_600_000 + 60_000)
        api.run_until(T0 + 7_200_000)
        log = (api.sessions / "a.jsonl").read_bytes()
        assert log.count(b'"type":"message/followup"') == 1, log
        # the framing's JSON of the prompt, escaped once more in the line
        assert b"p\\\\udc00q\\\\udbff" in log
        listed = api.client.get("/v1/tasks?status=inactive").json()["items"]
        assert len(listed) == 1
