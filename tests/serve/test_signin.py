"""Issue 22 item 6: one-time sign-in codes (docs/http-api.md#sign-in). A code gives the token
once, within a minute; a second use, an expired or unknown code get 401; the answers are
never cached."""

from __future__ import annotations

from typing import Any

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.serve.signin import CODE_TTL_S, MAX_CODES, SigninCodes  # noqa: E402
from tests.serve.support import TOKEN, Api  # noqa: E402

REFUSED = {
    "error": {
        "code": "signin_code_refused",
        "message": "the sign-in code is unknown, expired or already used",
    }
}


def test_a_code_gives_the_token_once(api: Api) -> None:
    code = api.app.state.signin.issue()
    anonymous = api.anonymous()
    first = anonymous.post("/v1/signin", json={"code": code})
    assert first.status_code == 200
    assert first.json() == {"token": TOKEN}
    assert first.headers["cache-control"] == "no-store"
    second = anonymous.post("/v1/signin", json={"code": code})
    assert second.status_code == 401
    assert second.json() == REFUSED


@pytest.mark.parametrize(
    "content",
    [
        b'{"code":"nope"}',
        b'{"code":"<&\\"\\u202e"}',
        b'{"code":""}',
        b'{"code":"' + b"x" * 99_000 + b'"}',
    ],
)
def test_an_unknown_code_is_refused(api: Api, content: bytes) -> None:
    api.app.state.signin.issue()
    response = api.anonymous().post("/v1/signin", content=content)
    assert response.status_code == 401
    assert response.json() == REFUSED


@pytest.mark.parametrize(
    "content", [b"", b"{", b"[]", b'{"code":"\\ud800"}', b'{"code": 1}', b'{"code":"a","x":1}']
)
def test_a_malformed_exchange_is_400(api: Api, content: bytes) -> None:
    response = api.anonymous().post("/v1/signin", content=content)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"


def test_a_fresh_code_needs_the_token(api: Api) -> None:
    assert api.anonymous().post("/v1/signin/codes").status_code == 401
    issued = api.client.post("/v1/signin/codes")
    assert issued.status_code == 200
    assert issued.json()["expiresInSeconds"] == 60
    exchange = api.anonymous().post("/v1/signin", json={"code": issued.json()["code"]})
    assert exchange.json() == {"token": TOKEN}


def test_a_code_expires_within_a_minute() -> None:
    now = [0.0]
    codes = SigninCodes(now=lambda: now[0])
    kept, lost = codes.issue(), codes.issue()
    now[0] = CODE_TTL_S - 0.001
    assert codes.redeem(kept)
    now[0] = CODE_TTL_S
    assert not codes.redeem(lost)


def test_live_codes_are_bounded() -> None:
    codes = SigninCodes(now=lambda: 0.0)
    first = codes.issue()
    later = [codes.issue() for _ in range(MAX_CODES)]
    assert not codes.redeem(first)  # forgotten: the oldest goes first
    assert all(codes.redeem(code) for code in later)


def test_the_signin_routes_are_in_the_document(api: Api) -> None:
    """Both sign-in routes are documented: the exchange open (its code is the credential),
    issuing a code behind the token; the answers conform to the schemas they name."""
    document = api.anonymous().get("/openapi.json").json()
    exchange = document["paths"]["/v1/signin"]["post"]
    issue = document["paths"]["/v1/signin/codes"]["post"]
    assert "security" not in exchange
    assert issue["security"] == [{"bearer": []}]
    schemas = document["components"]["schemas"]

    def schema_of(op: dict[str, Any], status: str) -> dict[str, Any]:
        ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        found: dict[str, Any] = schemas[ref.rsplit("/", 1)[1]]
        return found

    body_ref = exchange["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert schemas[body_ref.rsplit("/", 1)[1]]["required"] == ["code"]
    assert set(exchange["responses"]) >= {"200", "400", "401", "413", "415", "421"}
    assert "signin_code_refused" in exchange["responses"]["401"]["description"]
    issued = api.client.post("/v1/signin/codes").json()
    assert set(issued) == set(schema_of(issue, "200")["properties"])
    token = api.anonymous().post("/v1/signin", json={"code": issued["code"]}).json()
    assert set(token) == set(schema_of(exchange, "200")["properties"])
