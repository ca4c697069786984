"""One-time sign-in codes for the web page (docs/http-api.md#sign-in).

``host serve`` never prints the bearer token. It prints the page URL with a sign-in code in
the fragment (``#code=...``); the page sends the code once, over ``POST /v1/signin``, and gets
the token back. A code is random (128 bits), lives :data:`CODE_TTL_S` seconds and works once:
a second use, an expired code and an unknown one get the same 401, so the URL left in a
browser's history or session files is worth nothing. ``POST /v1/signin/codes`` (with the
token) issues a fresh code.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from typing import Final

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from schedlog.serve.auth import read_body
from schedlog.serve.errors import HttpError, json_response

__all__ = [
    "CODE_TTL_S",
    "MAX_CODES",
    "SigninCode",
    "SigninCodes",
    "SigninExchange",
    "SigninToken",
    "signin_routes",
]

CODE_TTL_S: Final = 60.0
#: Codes alive at once; issuing one more forgets the oldest.
MAX_CODES: Final = 16


class SigninCodes:
    """The live codes; ``now`` is a monotonic clock in seconds (injected for tests)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._codes: dict[str, float] = {}  # code -> expiry

    def issue(self) -> str:
        self._expire()
        while len(self._codes) >= MAX_CODES:
            del self._codes[next(iter(self._codes))]
        code = secrets.token_urlsafe(16)
        self._codes[code] = self._now() + CODE_TTL_S
        return code

    def redeem(self, code: str) -> bool:
        """True once for a live code; it is spent whatever the answer."""
        self._expire()
        given = code.encode("utf-8", "surrogatepass")
        for live in list(self._codes):
            if hmac.compare_digest(live.encode("ascii"), given):
                del self._codes[live]
                return True
        return False

    def _expire(self) -> None:
        now = self._now()
        for code in [c for c, until in self._codes.items() if until <= now]:
            del self._codes[code]


class SigninExchange(msgspec.Struct, forbid_unknown_fields=True):
    """The body of ``POST /v1/signin``: the one-time code from the URL fragment."""

    code: str


class SigninToken(msgspec.Struct):
    """The answer of ``POST /v1/signin``: the bearer token of every other ``/v1`` route."""

    token: str


class SigninCode(msgspec.Struct, rename="camel"):
    """The answer of ``POST /v1/signin/codes``: a fresh code and its lifetime in seconds."""

    code: str
    expires_in_seconds: int


_REFUSED: Final = HttpError(
    "signin_code_refused", "the sign-in code is unknown, expired or already used", 401
)


def signin_routes(codes: SigninCodes, token: str) -> list[Route]:
    """``POST /v1/signin`` (open: the code is the credential) and ``POST /v1/signin/codes``."""

    async def exchange(request: Request) -> Response:
        try:
            body = msgspec.json.decode(await read_body(request), type=SigninExchange)
        except msgspec.ValidationError as exc:
            raise HttpError("invalid_request", f"the sign-in body: {exc}", 400) from None
        except msgspec.DecodeError:
            raise HttpError("invalid_request", "the sign-in body must be JSON", 400) from None
        if not codes.redeem(body.code):
            raise _REFUSED
        return json_response(SigninToken(token))

    async def issue(request: Request) -> Response:
        return json_response(SigninCode(codes.issue(), int(CODE_TTL_S)))

    return [
        Route("/v1/signin", exchange, methods=["POST"]),
        Route("/v1/signin/codes", issue, methods=["POST"]),
    ]
