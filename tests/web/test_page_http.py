"""The web page's routes and the API additions it needs, in process (no browser): the page
and its assets, the one-time URL, ``GET /v1/sessions/{s}/tasks/{id}``, ``order=desc`` on the
catalog and ``POST /v1/rules/preview``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.serve import bodies  # noqa: E402
from schedlog.serve.preview import PreviewResult  # noqa: E402
from schedlog.serve.web import ASSETS, PAGE_PATHS, page_url  # noqa: E402
from tests.host.helpers import T0, ms  # noqa: E402
from tests.serve.support import Api, running_api  # noqa: E402


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with running_api(tmp_path) as running:
        yield running


def test_the_page_and_its_assets_need_no_token_but_the_api_does(api: Api) -> None:
    anon = api.anonymous()
    page = anon.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    for name, media in ASSETS.items():
        if name == "index.html":
            continue
        r = anon.get(f"/static/{name}")
        assert r.status_code == 200, name
        assert r.headers["content-type"] == media
    assert anon.get("/v1/tasks").status_code == 401
    # only the listed files are open; any other path needs the token, and is then not found
    for path in ("/static/index.html", "/static/nope.js", "/static/../serve/auth.py"):
        assert anon.get(path).status_code == 401, path
        missing = api.client.get(path)
        assert missing.status_code == 404, path
        assert missing.json()["error"]["code"] == "not_found"
    # the Host allow-list still guards the page (DNS rebinding)
    assert api.anonymous({"Host": "evil.example"}).get("/").status_code == 421


def test_assets_answer_not_modified_to_their_etag(api: Api) -> None:
    anon = api.anonymous()
    first = anon.get("/static/app.js")
    etag = first.headers["etag"]
    again = api.anonymous({"If-None-Match": etag}).get("/static/app.js")
    assert again.status_code == 304 and again.content == b""
    assert api.anonymous({"If-None-Match": '"other"'}).get("/static/app.js").status_code == 200


def test_the_shipped_files_are_exactly_the_served_ones() -> None:
    folder = resources.files("schedlog.serve").joinpath("static")
    shipped = {p.name for p in folder.iterdir() if p.is_file()}
    assert shipped == set(ASSETS)
    html = folder.joinpath("index.html").read_text("utf-8")
    referenced = set(re.findall(r'(?:src|href)="static/([^"]+)"', html))
    modules = set()
    for name in ASSETS:
        if name.endswith(".js"):
            text = folder.joinpath(name).read_text("utf-8")
            modules |= set(re.findall(r'from "\./([^"]+)"', text))
            # no third-party code and nothing fetched from elsewhere
            assert "http://" not in text.replace("http://127.0.0.1", "") or name == "app.js"
            assert "https://" not in text
    assert referenced | modules | {"index.html"} == set(ASSETS)
    assert {f"/static/{n}" for n in referenced | modules} | {"/"} == PAGE_PATHS


def test_the_printed_url_carries_the_token_in_the_fragment() -> None:
    assert page_url("http://127.0.0.1:8765", "c0de") == "http://127.0.0.1:8765/#code=c0de"
    assert page_url("http://127.0.0.1:8765/", None) == "http://127.0.0.1:8765/"


def test_one_task_by_session_and_id(api: Api) -> None:
    view = api.create(title="Ping", after_seconds=60)
    r = api.client.get(f"/v1/sessions/s-1/tasks/{view['id']}")
    assert r.status_code == 200
    entry = r.json()
    msgspec.convert(entry, bodies.CatalogEntry, strict=True)
    assert entry["sessionId"] == "s-1" and entry["status"] == "active"
    assert entry["title"] == "Ping" and "lastDelivery" not in entry
    # the rule in words, made by the rules layer (the page shows this text)
    assert entry["description"] == "once, 1 min after it was set, at 2026-05-01 06:01 Fri UTC"
    # another session's task and an unknown id are not found
    for path in (f"/v1/sessions/s-2/tasks/{view['id']}", "/v1/sessions/s-1/tasks/schedule-x"):
        r = api.client.get(path)
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "schedule_not_found"
    # an ended task is still there, with its receipt
    api.run_until(T0 + 60_000)
    entry = api.client.get(f"/v1/sessions/s-1/tasks/{view['id']}").json()
    assert entry["status"] == "inactive"
    assert entry["lastDelivery"]["scheduledAt"] == "2026-05-01T06:01:00.000Z"
    assert api.client.get(f"/v1/sessions/s-1/tasks/{view['id']}?x=1").status_code == 400


def _pages(api: Api, query: str) -> list[list[str]]:
    out: list[list[str]] = []
    cursor = ""
    while True:
        r = api.client.get(f"/v1/tasks?limit=3{query}{cursor}")
        assert r.status_code == 200, r.text
        page = r.json()
        out.append([e["title"] for e in page["items"]])
        if page["nextCursor"] is None:
            return out
        cursor = f"&cursor={page['nextCursor']}"


def test_catalog_order_desc_pages_through_every_task_once(api: Api) -> None:
    for i in range(8):
        api.create(title=f"T{i}", after_seconds=60 * (i + 1))
    asc = _pages(api, "")
    desc = _pages(api, "&order=desc")
    assert asc == [["T0", "T1", "T2"], ["T3", "T4", "T5"], ["T6", "T7"]]
    assert desc == [["T7", "T6", "T5"], ["T4", "T3", "T2"], ["T1", "T0"]]
    assert _pages(api, "&order=asc") == asc
    r = api.client.get("/v1/tasks?order=newest")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"


def _preview(api: Api, body: Any) -> Any:
    r = api.client.post("/v1/rules/preview", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_preview_gives_the_next_targets_of_an_unsaved_rule(api: Api) -> None:
    value = _preview(api, {"cron": {"expression": "0 9 * * 1,2,3,4,5", "time_zone": "etc/utc"}})
    msgspec.convert(value, PreviewResult, strict=True)
    assert value["record"]["expression"] == "0 9 * * 1-5"
    assert value["record"]["timeZone"] == "UTC"
    assert value["description"] == "every weekday at 09:00 (UTC)"
    assert value["at"] == "2026-05-01T06:00:00.000Z"
    assert [t["scheduledAt"] for t in value["upcoming"]] == [
        "2026-05-01T09:00:00.000Z",
        "2026-05-04T09:00:00.000Z",
        "2026-05-05T09:00:00.000Z",
        "2026-05-06T09:00:00.000Z",
        "2026-05-07T09:00:00.000Z",
    ]
    weekly = {"time": "09:30:00", "time_zone": "Europe/Berlin", "weekdays": [7]}
    assert len(_preview(api, {"weekly": weekly, "count": 2})["upcoming"]) == 2
    assert _preview(api, {"every_seconds": 600, "count": 1})["upcoming"] == [
        {
            "scheduledAt": "2026-05-01T06:10:00.000Z",
            "text": "2026-05-01T06:10:00.000Z",
            "dstChange": False,
        }
    ]
    # a one-shot has one target
    at = _preview(api, {"at": "2026-05-02T10:00:00+02:00"})
    assert [t["scheduledAt"] for t in at["upcoming"]] == ["2026-05-02T08:00:00.000Z"]
    assert api.service.core.store.count() == 0  # nothing was written


def test_preview_marks_dst_days(api: Api) -> None:
    api.run_until(ms("2026-10-29T00:00:00.000Z"))
    value = _preview(api, {"cron": {"expression": "30 1 * * *", "time_zone": "America/New_York"}})
    flags = [(t["scheduledAt"][:10], t["dstChange"]) for t in value["upcoming"]]
    assert flags == [
        ("2026-10-29", False),
        ("2026-10-30", False),
        ("2026-10-31", False),
        ("2026-11-01", True),
        ("2026-11-02", False),
    ]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"cron": {"expression": "61 * * * *", "time_zone": "UTC"}}, "invalid_rule"),
        ({"cron": {"expression": "0 9 * * *", "time_zone": "Mars/Olympus"}}, "invalid_time_zone"),
        ({"daily": {"time": "25:00:00", "time_zone": "UTC"}}, "invalid_rule"),
        ({"every_seconds": 30}, "frequency_too_high"),
        ({"at": "2026-04-01T00:00:00Z"}, "not_future"),
        ({"weekly": {"time": "09:00:00", "time_zone": "UTC", "weekdays": []}}, "invalid_rule"),
    ],
)
def test_preview_answers_rule_errors_with_their_codes(api: Api, body: Any, code: str) -> None:
    value = _preview(api, body)
    assert set(value) == {"error"}
    assert value["error"]["code"] == code, value
    assert value["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        [],
        {},
        {"count": 3},
        {"cron": {"expression": "* * * * *", "time_zone": "UTC"}, "every_seconds": 60},
        {"after_seconds": 60},
        {"cron": {"expression": "* * * * *", "time_zone": "UTC"}, "count": 0},
        {"cron": {"expression": "* * * * *", "time_zone": "UTC"}, "count": 101},
        {"cron": {"expression": "* * * * *", "time_zone": "UTC"}, "count": True},
    ],
)
def test_preview_refuses_malformed_bodies(api: Api, body: Any) -> None:
    r = api.client.post("/v1/rules/preview", json=body)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_request"


def test_preview_needs_the_token(api: Api) -> None:
    r = api.anonymous().post("/v1/rules/preview", json={"every_seconds": 600})
    assert r.status_code == 401
