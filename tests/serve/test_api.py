"""The /v1 routes in process: tool values, remote operations, paging, errors and statuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from tests.serve.deps import require_serve

require_serve()

from schedlog.host import tool_schemas as host_tool_schemas  # noqa: E402
from schedlog.host.catalog import MAX_CATALOG_PAGE  # noqa: E402
from schedlog.serve import bodies  # noqa: E402
from tests.host.helpers import T0, ms  # noqa: E402
from tests.serve.support import Api, running_api  # noqa: E402


def conforms(value: Any, tp: Any) -> None:
    """The response value converts strictly into its documented type."""
    msgspec.convert(value, tp, strict=True)


def test_tool_values_are_the_host_tool_values(api: Api) -> None:
    view = api.create(title="  Standup  ", prompt=" Stand up ")
    conforms(view, host_tool_schemas.AfterView)
    assert view["title"] == "Standup" and view["prompt"] == "Stand up"
    listed = api.tool("s-1", "schedule_list", {})
    assert listed.status_code == 200
    direct = api.call(api.app.state.serve.tools.call, "schedule_list", "s-1", {})
    assert listed.json() == direct == [view]
    updated = api.tool("s-1", "schedule_update", {"id": view["id"], "title": "New"})
    assert updated.status_code == 200 and updated.json()["title"] == "New"
    deleted = api.tool("s-1", "schedule_delete", {"id": view["id"]})
    assert deleted.status_code == 200 and deleted.json() == {"id": view["id"], "deleted": True}


def test_tool_error_values_get_fitting_statuses(api: Api) -> None:
    bad = api.tool("s-1", "schedule_create", {"prompt": "x", "title": "t", "after_seconds": 0})
    assert bad.status_code == 422
    assert bad.json()["code"] == "invalid_rule" and set(bad.json()) == {"code", "message"}
    missing = api.tool("s-1", "schedule_delete", {"id": "schedule-nope"})
    assert missing.status_code == 404
    assert missing.json() == {"id": "schedule-nope", "deleted": False, "code": "schedule_not_found"}
    gone = api.tool("s-1", "schedule_update", {"id": "schedule-nope", "title": "x"})
    assert gone.status_code == 404 and gone.json()["code"] == "schedule_not_found"
    unknown = api.tool("s-1", "schedule_explode", {})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"


def test_malformed_bodies_are_invalid_request(api: Api) -> None:
    url = "/v1/sessions/s-1/tools/schedule_create"
    for content in (b"{", b"[]", b'{"a":1,"a":2}', b"NaN", b"\xff", b""):
        response = api.client.post(
            url, content=content, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, content
        assert response.json()["error"]["code"] == "invalid_request"
    wrong_type = api.client.post(url, content=b"{}", headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 415
    put = api.client.put("/v1/sessions/s-1/tasks/x", json={"expected": {}, "extra": 1})
    assert put.status_code == 400 and "extra" in put.json()["error"]["message"]
    query = api.client.get("/v1/tasks", params={"limit": "0"})
    assert query.status_code == 400 and "limit" in query.json()["error"]["message"]
    unknown = api.client.get("/v1/tasks", params={"colour": "red"})
    assert unknown.status_code == 400 and "colour" in unknown.json()["error"]["message"]
    cursor = api.client.get("/v1/tasks", params={"cursor": "!!"})
    assert cursor.status_code == 400 and "cursor" in cursor.json()["error"]["message"]


def test_catalog_pages_filters_and_conforms(api: Api) -> None:
    made = [api.create(f"s-{i % 2}", after_seconds=60 * (i + 1), title=f"T{i}") for i in range(7)]
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {"limit": "3"} if cursor is None else {"limit": "3", "cursor": cursor}
        response = api.client.get("/v1/tasks", params=params)
        assert response.status_code == 200
        page = response.json()
        conforms(page, bodies.CatalogPage)
        seen.extend(item["id"] for item in page["items"])
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == [v["id"] for v in made]  # by scheduledAt: creation order here
    s0 = api.client.get("/v1/tasks", params={"sessionId": "s-0"}).json()["items"]
    assert [e["id"] for e in s0] == [v["id"] for v in made[0::2]]
    titled = api.client.get("/v1/tasks", params={"title": "t3"}).json()["items"]
    assert [e["title"] for e in titled] == ["T3"]
    inactive = api.client.get("/v1/tasks", params={"status": "inactive"}).json()["items"]
    assert inactive == []
    too_big = api.client.get("/v1/tasks", params={"limit": str(MAX_CATALOG_PAGE + 1)})
    assert too_big.status_code == 400


def test_delivery_history_and_explain(api: Api) -> None:
    view = api.create(after_seconds=60)
    api.run_until(T0 + 61_000)
    history = api.client.get(f"/v1/sessions/s-1/tasks/{view['id']}/history")
    assert history.status_code == 200, history.text
    page = history.json()
    conforms(page, bodies.HistoryPage)
    assert [r["scheduledAt"] for r in page["records"]] == [view["scheduledAt"]]
    log = (api.sessions / "s-1.jsonl").read_text()
    assert page["records"][0]["messageId"] in log
    entry = api.client.get("/v1/tasks").json()["items"][0]
    assert entry["status"] == "inactive" and entry["lastDelivery"]["messageId"]
    daily = api.create(daily={"time": "01:30:00", "time_zone": "America/New_York"})
    explained = api.client.get(f"/v1/tasks/{daily['id']}/explain", params={"count": "3"})
    assert explained.status_code == 200
    body = explained.json()
    conforms(body, bodies.ExplainResult)
    assert len(body["upcoming"]) == 3 and body["sessionId"] == "s-1"
    assert body["upcoming"][0]["scheduledAt"] == daily["scheduledAt"]
    assert api.client.get("/v1/tasks/schedule-nope/explain").status_code == 404


def test_explain_marks_dst_change_days(api: Api) -> None:
    api.run_until(ms("2026-10-25T00:00:00.000Z"))
    daily = api.create(daily={"time": "01:30:00", "time_zone": "America/New_York"})
    body = api.client.get(f"/v1/tasks/{daily['id']}/explain", params={"count": "14"}).json()
    marked = [u["scheduledAt"] for u in body["upcoming"] if u["dstChange"]]
    assert marked == ["2026-11-01T05:30:00.000Z"]  # the New York fall-back day
    assert body["upcoming"][8]["text"] == ("2026-11-02T06:30:00.000Z  2026-11-02 01:30 Mon -05:00")


def test_remote_update_conflict_ended_and_delete(api: Api) -> None:
    view = api.create(every_seconds=3600)
    listed = api.client.get("/v1/sessions/s-1/tasks").json()
    record = listed[0]
    conforms(record, bodies.RecordBody)
    url = f"/v1/sessions/s-1/tasks/{view['id']}"
    ok = api.client.put(url, json={"expected": record, "title": "Hourly"})
    assert ok.status_code == 200, ok.text
    conforms(ok.json(), bodies.UpdateApplied)
    assert ok.json()["updated"] is True and ok.json()["record"]["title"] == "Hourly"
    stale = api.client.put(url, json={"expected": record, "title": "Again"})
    assert stale.status_code == 409
    conforms(stale.json(), bodies.UpdateConflict)
    assert stale.json()["error"]["code"] == "schedule_conflict"
    assert stale.json()["current"] == ok.json()["record"]
    bad_change = api.client.put(
        url, json={"expected": stale.json()["current"], "change": {"kind": "nope"}}
    )
    assert bad_change.status_code == 422
    assert bad_change.json()["error"]["code"] == "invalid_rule"
    deleted = api.client.delete(url)
    assert deleted.status_code == 200 and deleted.json() == {"id": view["id"], "deleted": True}
    again = api.client.delete(url)
    assert again.status_code == 404 and again.json()["error"]["code"] == "schedule_not_found"
    one_shot = api.create(after_seconds=60)
    before = api.client.get("/v1/sessions/s-1/tasks").json()[0]
    api.run_until(T0 + 61_000)
    ended = api.client.put(
        f"/v1/sessions/s-1/tasks/{one_shot['id']}", json={"expected": before, "title": "x"}
    )
    assert ended.status_code == 410 and ended.json()["error"]["code"] == "schedule_ended"


def test_history_errors(api: Api) -> None:
    view = api.create()
    url = f"/v1/sessions/s-1/tasks/{view['id']}/history"
    assert api.client.get(url, params={"limit": "101"}).status_code == 400
    cursor = api.client.get(url, params={"before": "schedule-message-x"})
    assert cursor.status_code == 404
    assert cursor.json()["error"]["code"] == "delivery_cursor_not_found"
    missing = api.client.get("/v1/sessions/s-1/tasks/schedule-nope/history")
    assert missing.status_code == 404


def test_health_and_stopping(tmp_path: Path) -> None:
    with running_api(tmp_path) as api:
        assert api.client.get("/healthz").json() == {"status": "ok"}
        assert api.client.get("/readyz").json() == {"status": "ready"}
        api.call(api.service.aclose)
        ready = api.client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["error"]["code"] == "service_unavailable"
        assert api.client.get("/v1/tasks").status_code == 503
        create = api.tool(
            "s-1", "schedule_create", {"prompt": "p", "title": "t", "after_seconds": 1}
        )
        assert create.status_code == 503
        assert api.client.get("/healthz").status_code == 200


def test_unknown_route_and_method(api: Api) -> None:
    missing = api.client.get("/v1/nothing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    method = api.client.patch("/v1/tasks")
    assert method.status_code == 405
    assert method.json()["error"]["code"] == "method_not_allowed"
