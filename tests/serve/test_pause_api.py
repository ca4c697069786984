"""Pause and resume over HTTP (docs/http-api.md#pause-and-resume): the tool routes, ``POST
.../tasks/{id}/pause|resume`` with an optional ``expected``, the catalog's ``paused`` status
and its filter, and the ``schedule/changed`` kinds."""

from __future__ import annotations

from typing import Any

import msgspec

from tests.serve.deps import require_serve

require_serve()

from schedlog.host import tool_schemas as host_tool_schemas  # noqa: E402
from schedlog.serve import bodies  # noqa: E402
from schedlog.serve.openapi import openapi  # noqa: E402
from tests.host.helpers import T0  # noqa: E402
from tests.serve.support import Api  # noqa: E402


def conforms(value: Any, tp: Any) -> None:
    msgspec.convert(value, tp, strict=True)


def test_the_tool_routes_answer_the_tool_values(api: Api) -> None:
    view = api.create(every_seconds=3600)
    url = "/v1/sessions/s-1/tools/schedule_pause"
    paused = api.client.post(url, json={"id": view["id"]})
    assert paused.status_code == 200
    conforms(paused.json(), host_tool_schemas.PauseResult)
    assert paused.json()["changed"] is True
    missing = api.client.post(url, json={"id": "<b>nope</b>"})
    assert missing.status_code == 404
    assert missing.json() == {"id": "<b>nope</b>", "changed": False, "code": "schedule_not_found"}
    bad = api.client.post(url, json={"id": " padded"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_rule"
    resumed = api.client.post("/v1/sessions/s-1/tools/schedule_resume", json={"id": view["id"]})
    assert resumed.status_code == 200
    conforms(resumed.json(), host_tool_schemas.ResumeResult)


def test_pause_and_resume_routes_with_and_without_expected(api: Api) -> None:
    view = api.create(every_seconds=3600)
    base = f"/v1/sessions/s-1/tasks/{view['id']}"
    record = api.client.get("/v1/sessions/s-1/tasks").json()[0]
    no_body = api.client.post(f"{base}/pause")
    assert no_body.status_code == 200, no_body.text
    assert no_body.json() == {
        "id": view["id"],
        "paused": True,
        "changed": True,
        "pausedAt": "2026-05-01T06:00:00.000Z",
    }
    again = api.client.post(f"{base}/pause", json={"expected": record})
    assert again.status_code == 200 and again.json()["changed"] is False
    entry = api.client.get(base).json()
    conforms(entry, bodies.CatalogEntry)
    assert entry["status"] == "paused"
    paused = api.client.get("/v1/tasks", params={"status": "paused"}).json()["items"]
    assert [e["id"] for e in paused] == [view["id"]]
    assert api.client.get("/v1/tasks", params={"status": "active"}).json()["items"] == []
    stale = {**record, "title": "<script>old</script>"}
    conflict = api.client.post(f"{base}/resume", json={"expected": stale})
    assert conflict.status_code == 409
    conforms(conflict.json(), bodies.UpdateConflict)
    assert conflict.json()["current"] == record
    bad = api.client.post(
        f"{base}/resume",
        content=b'{"expected": {"kind": "\\ud800"}}',  # a lone surrogate, escaped in JSON
        headers={"content-type": "application/json"},
    )
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_rule"
    for body in ('{"expected": 1}', '{"other": {}}', "[]", "{"):
        refused = api.client.post(
            f"{base}/resume", content=body, headers={"content-type": "application/json"}
        )
        assert refused.status_code == 400, body
        assert refused.json()["error"]["code"] == "invalid_request"
    wrong_type = api.client.post(f"{base}/resume", content="x", headers={"content-type": "text/x"})
    assert wrong_type.status_code == 415
    resumed = api.client.post(f"{base}/resume", json={"expected": record})
    assert resumed.status_code == 200
    assert resumed.json()["paused"] is False and resumed.json()["changed"] is True
    assert api.client.get(base).json()["status"] == "active"
    missing = api.client.post("/v1/sessions/s-2/tasks/" + view["id"] + "/pause")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "schedule_not_found"


def test_pausing_an_ended_task_is_410(api: Api) -> None:
    one_shot = api.create(after_seconds=60)
    api.run_until(T0 + 61_000)
    for op in ("pause", "resume"):
        ended = api.client.post(f"/v1/sessions/s-1/tasks/{one_shot['id']}/{op}")
        assert ended.status_code == 410 and ended.json()["error"]["code"] == "schedule_ended"


def test_the_openapi_document_has_the_routes() -> None:
    paths = openapi()["paths"]
    for op in ("pause", "resume"):
        post = paths[f"/v1/sessions/{{sessionId}}/tasks/{{id}}/{op}"]["post"]
        assert post["requestBody"]["required"] is False
        assert {"200", "404", "409", "410", "422"} <= post["responses"].keys()
    statuses = next(
        p["schema"]["enum"]
        for p in paths["/v1/tasks"]["get"]["parameters"]
        if p["name"] == "status"
    )
    assert "paused" in statuses
