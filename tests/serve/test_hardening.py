"""Issue 22 items 7 and 11 (docs/http-api.md#security): ``Cache-Control: no-store`` on every
``/v1`` answer, preflights refused on a foreign ``Host``, 405 answers with ``Allow``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.serve.deps import require_serve

require_serve()

from tests.serve.support import AUTH, Api, running_api  # noqa: E402

PREFLIGHT = {
    "Origin": "http://app.example",
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization",
}


@pytest.mark.parametrize(
    ("method", "path", "auth"),
    [
        ("GET", "/v1/tasks", True),
        ("GET", "/v1/tasks", False),  # the 401 too
        ("GET", "/v1/sessions/s-1/tasks/nope", True),  # the 404 too
        ("POST", "/v1/sessions/s-1/tools/schedule_list", True),
        ("PATCH", "/v1/tasks", True),  # the 405 too
    ],
)
def test_every_v1_answer_is_no_store(api: Api, method: str, path: str, auth: bool) -> None:
    client = api.client if auth else api.anonymous()
    response = client.request(method, path, json={} if method == "POST" else None)
    assert response.headers["cache-control"] == "no-store", response.status_code


def test_a_preflight_with_a_foreign_host_is_refused(tmp_path: Path) -> None:
    with running_api(tmp_path, cors_origins=("http://app.example",)) as configured:
        client = configured.anonymous()
        for host in ("evil.example", "localhost.evil.example", "127.0.0.1.nip.io:8765"):
            refused = client.request("OPTIONS", "/v1/tasks", headers={**PREFLIGHT, "Host": host})
            assert refused.status_code == 421, host
            assert "access-control-allow-origin" not in refused.headers
        allowed = client.request("OPTIONS", "/v1/tasks", headers=PREFLIGHT)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "http://app.example"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PATCH", "/v1/tasks", "GET, HEAD"),
        ("POST", "/v1/sessions/s-1/tasks/t-1", "DELETE, GET, HEAD, PUT"),
        ("GET", "/v1/sessions/s-1/tools/schedule_list", "POST"),
        ("DELETE", "/", "GET, HEAD"),
    ],
)
def test_a_405_names_the_allowed_methods(api: Api, method: str, path: str, allow: str) -> None:
    response = api.anonymous(AUTH).request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.json()["error"]["code"] == "method_not_allowed"
