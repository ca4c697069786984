"""Input limits, the same on every store backend (issue 22 item 10; docs/http-api.md#limits):
session ids (empty, NUL, lone surrogate, length), prompt length, and the bounded memory the host
keeps per session id. A refusal writes nothing; no backend answers 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.host.limits import MAX_SESSION_ID_BYTES, SeenSessions  # noqa: E402
from schedlog.rules.records import PROMPT_MAX_UNITS  # noqa: E402
from tests import pg  # noqa: E402
from tests.serve.support import Api, running_api  # noqa: E402

ARGS = {"title": "t", "prompt": "p", "after_seconds": 3600}


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    yield from pg.fresh_database()


@pytest.fixture(params=["sqlite", "json", "postgresql"])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    store: Path | str = tmp_path / ("store.json" if request.param == "json" else "store.db")
    if request.param == "postgresql":
        store = str(request.getfixturevalue("pg_database"))
        pg.reset(store)
    with running_api(tmp_path, store=store) as running:
        yield running


def _create(api: Api, session: str, **args: object) -> tuple[int, dict[str, object]]:
    answer = api.client.post(
        f"/v1/sessions/{quote(session, safe='')}/tools/schedule_create", json={**ARGS, **args}
    )
    value: dict[str, object] = answer.json()
    return answer.status_code, value


@pytest.mark.parametrize(
    "session",
    ["a\x00b", "\x00", "x" * (MAX_SESSION_ID_BYTES + 1), "x" * 7900, "é" * 513],
    ids=["nul", "only-nul", "one-over", "7900", "two-byte-over"],
)
def test_a_session_id_over_the_limit_is_refused_everywhere(api: Api, session: str) -> None:
    status, value = _create(api, session)
    assert (status, value["code"]) == (422, "invalid_session_id"), value
    assert "sessionId" in str(value["message"])
    assert api.client.get("/v1/tasks").json()["items"] == []
    path = f"/v1/sessions/{quote(session, safe='')}"
    assert api.client.get(path + "/tasks").status_code == 200
    listed = api.client.post(path + "/tools/schedule_list", json={})
    assert (listed.status_code, listed.json()) == (200, [])


def test_a_session_id_at_the_limit_is_taken_everywhere(api: Api) -> None:
    for session in ("x" * MAX_SESSION_ID_BYTES, "é" * (MAX_SESSION_ID_BYTES // 2), "<&\"'>"):
        status, value = _create(api, session)
        assert status == 200, value
        listed = api.client.get(f"/v1/sessions/{quote(session, safe='')}/tasks").json()
        assert [t["id"] for t in listed] == [value["id"]]


def test_the_prompt_limit(api: Api) -> None:
    status, _ = _create(api, "s", prompt="p" * PROMPT_MAX_UNITS)
    assert status == 200
    status, _ = _create(api, "s", prompt="  " + "p" * PROMPT_MAX_UNITS + "\n")  # trimmed first
    assert status == 200
    for prompt in ("p" * (PROMPT_MAX_UNITS + 1), "\U0001f600" * (PROMPT_MAX_UNITS // 2 + 1)):
        status, value = _create(api, "s", prompt=prompt)
        assert (status, value["code"]) == (422, "invalid_prompt"), value
        assert "prompt" in str(value["message"])
    assert len(api.client.get("/v1/tasks").json()["items"]) == 2
    record = api.client.get("/v1/sessions/s/tasks").json()[0]
    url = f"/v1/sessions/s/tasks/{record['id']}"
    too_long = {"expected": record, "prompt": "q" * (PROMPT_MAX_UNITS + 1)}
    answer = api.client.put(url, json=too_long)
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid_prompt")


def test_a_catalog_page_of_full_prompts_is_bounded(api: Api) -> None:
    for i in range(40):
        status, _ = _create(api, f"s-{i}", prompt="<&" * (PROMPT_MAX_UNITS // 2))
        assert status == 200
    page = api.client.get("/v1/tasks", params={"limit": "500"})
    assert page.status_code == 200 and len(page.json()["items"]) == 40
    assert len(page.content) < 40 * (PROMPT_MAX_UNITS + 1024)  # 1 MiB prompts made 39 MiB


def test_read_only_calls_under_new_session_ids_use_bounded_memory(api: Api) -> None:
    seen = api.service.core._touched
    assert isinstance(seen, SeenSessions)
    seen.capacity = 50
    for i in range(120):
        listed = api.client.post(f"/v1/sessions/reader-{i}/tools/schedule_list", json={})
        assert listed.status_code == 200
    assert len(seen) == 50


def test_seen_sessions_drops_the_least_recently_seen() -> None:
    seen = SeenSessions(2)
    assert seen.first_sight("a") and seen.first_sight("b")
    assert not seen.first_sight("a")  # a is now the most recent
    assert seen.first_sight("c")  # drops b
    assert not seen.first_sight("a") and seen.first_sight("b") and len(seen) == 2
