"""The web task page of ``schedlog host serve`` (docs/operations.md#web-page): plain HTML, a
little hand-written JavaScript and CSS, shipped in ``schedlog/serve/static/`` and served at
``/`` by the same process as the API. There is no build step and no third-party script.

The page itself holds no data: it reads and writes everything through ``/v1`` with the bearer
token the user signs in with, so these routes are open (like ``/healthz``) while every ``/v1``
route stays behind the token. The ``Host`` allow-list still applies to them. Each answer
carries a Content-Security-Policy that allows only this origin's own scripts, styles and
connections.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["ASSETS", "PAGE_PATHS", "page_url", "web_routes"]

#: The shipped files and their media types; nothing else under ``/static/`` is served.
ASSETS: Final = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "api.js": "text/javascript; charset=utf-8",
    "times.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
#: The paths of the page: no token needed (the page asks for one), the ``Host`` check applies.
PAGE_PATHS: Final = frozenset(
    {"/", *(f"/static/{name}" for name in ASSETS if name != "index.html")}
)

_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS: Final = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _load() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("schedlog.serve").joinpath("static")
    out: dict[str, tuple[bytes, str]] = {}
    for name in ASSETS:
        body = folder.joinpath(name).read_bytes()
        out[name] = (body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    return out


def page_url(base: str, code: str | None) -> str:
    """The URL ``host serve`` prints: the page, with a one-time sign-in code in the fragment
    (never sent to the server); the page exchanges it once for the token over
    ``POST /v1/signin`` (schedlog.serve.signin) and removes it from the address bar."""
    root = base.rstrip("/") + "/"
    return root if code is None else f"{root}#code={code}"


def web_routes() -> list[Route]:
    """``GET /`` and ``GET /static/{name}``: the page and its assets, read once at start."""
    files = _load()

    def serve(name: str, request: Request) -> Response:
        body, etag = files[name]
        headers = {**_HEADERS, "ETag": etag}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=ASSETS[name], headers=headers)

    async def index(request: Request) -> Response:
        return serve("index.html", request)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS or name == "index.html":
            return Response(
                b'{"error":{"code":"not_found","message":"no such page asset"}}',
                status_code=404,
                media_type="application/json",
            )
        return serve(name, request)

    return [
        Route("/", index, methods=["GET", "HEAD"]),
        Route("/static/{name}", asset, methods=["GET", "HEAD"]),
    ]
